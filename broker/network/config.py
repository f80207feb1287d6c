"""The network layer's settings, named after Kafka's broker properties."""

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from protocol.endpoint import EndPoint


@dataclass(frozen=True, slots=True)
class NetworkConfig:
    """The listeners to bind, num.network.threads, num.io.threads, queued.max.requests,
    socket.request.max.bytes and connections.max.idle.ms, with Kafka's defaults; the TLS context of each TLS
    listener (by name) and how long its handshake may take (ssl.handshake.timeout.ms)."""

    listeners: tuple[EndPoint, ...] = (EndPoint("PLAINTEXT", "127.0.0.1", 9092),)  # port 0 picks a free port
    num_network_threads: int = 3
    num_io_threads: int = 8
    queued_max_requests: int = 500
    socket_request_max_bytes: int = 104857600
    connections_max_idle_ms: int = 600000
    tls: Mapping[str, ssl.SSLContext] = field(default_factory=dict)
    ssl_handshake_timeout_ms: int = 10000

    def __post_init__(self) -> None:
        if not self.listeners:
            raise ValueError("at least one listener is needed")
        for listener in self.listeners:
            if not 0 <= listener.port <= 65535:
                raise ValueError(f"port must be 0..65535, got {listener.port}")
            if (listener.listener_name in self.tls) != listener.is_tls:
                need = "needs a TLS context" if listener.is_tls else "takes no TLS context"
                raise ValueError(f"listener {listener.listener_name} ({listener.security_protocol}) {need}")
        for name in (
            "num_network_threads",
            "num_io_threads",
            "queued_max_requests",
            "socket_request_max_bytes",
            "connections_max_idle_ms",
            "ssl_handshake_timeout_ms",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
