"""Counters of the network layer, for tests and operators."""

from dataclasses import dataclass


@dataclass(slots=True)
class NetworkStats:
    """Counts since start; connections_open is the current number of open connections."""

    connections_accepted: int = 0
    connections_open: int = 0
    connections_closed_idle: int = 0
    requests_received: int = 0  # frames with a readable header, answered or not
    responses_sent: int = 0
    frames_too_large: int = 0  # length prefix above socket.request.max.bytes: connection closed
    malformed_requests: int = 0  # non-positive length, not msgpack, or bad header: connection closed
    invalid_requests: int = 0  # unknown api, unsupported version or invalid body: error response
    handler_errors: int = 0  # handler raised or gave something that is not a response
    tls_handshakes_failed: int = 0  # on a TLS listener: failed or timed out, connection closed
