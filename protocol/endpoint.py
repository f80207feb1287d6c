"""A listener's endpoint, ``NAME://host:port``, as Kafka writes it in `listeners`, `advertised.listeners` and a
broker's registration in ZooKeeper (its `endpoints`). Pure: no sockets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SUPPORTED_PROTOCOL = "PLAINTEXT"
#: The security protocols whose connections are TLS (a SASL_SSL connection authenticates inside TLS).
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
#: The security protocols whose connections authenticate with SASL before any other request.
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})

# Kafka's own pattern (kafka.utils.CoreUtils / EndPoint): NAME://host:port, host optionally in [brackets].
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


class ListenerConfigError(ValueError):
    """A listener setting that Kafka would refuse, or that minikafka cannot serve."""


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener: its name (upper case, as Kafka normalises it), host, port and security protocol."""

    listener_name: str
    host: str
    port: int
    security_protocol: str = SUPPORTED_PROTOCOL

    @property
    def is_tls(self) -> bool:
        """Whether the listener's connections are TLS."""
        return self.security_protocol in TLS_PROTOCOLS

    def __str__(self) -> str:
        """``NAME://host:port`` (IPv6 hosts in brackets), the form of a registration's `endpoints`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


def parse_endpoint(text: str, protocol_map: Mapping[str, str]) -> EndPoint:
    """``NAME://host:port`` -> EndPoint; the security protocol is the name's in the map, else the name itself
    (registrations before listener names existed)."""
    match = _ENDPOINT.match(text.strip())
    if match is None:
        raise ListenerConfigError(f"expected NAME://host:port, got {text!r}")
    name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
    if not name or not 0 <= port <= 65535:
        raise ListenerConfigError(f"expected NAME://host:port with a port in 0..65535, got {text!r}")
    return EndPoint(name, host, port, protocol_map.get(name, name))
