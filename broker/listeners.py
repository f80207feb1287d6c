"""Kafka's listener model: `listeners`, `advertised.listeners`, `listener.security.protocol.map` and
`inter.broker.listener.name` (or `security.inter.broker.protocol`), parsed and checked as Kafka does.

A listener is a named endpoint, ``NAME://host:port``. The broker binds every entry of `listeners` (an empty host
or 0.0.0.0 binds every interface, port 0 a free port), registers the entries of `advertised.listeners` (default:
`listeners`) in ZooKeeper, connects to other brokers on the inter-broker listener, and answers Metadata with the
advertised endpoints of the listener a request arrived on. minikafka serves all four of Kafka's security protocols:
SSL and SASL_SSL connections are TLS (protocol.endpoint.TLS_PROTOCOLS), SASL_PLAINTEXT and SASL_SSL ones authenticate
first (SASL_PROTOCOLS, broker/sasl_config.py). Pure: no sockets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from protocol.endpoint import (
    SUPPORTED_PROTOCOL,
    EndPoint,
    ListenerConfigError,
    parse_endpoint,
)

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}, names upper-cased; every protocol must be one Kafka knows."""
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, colon, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not colon or not name or not protocol:
            raise ListenerConfigError(f"listener.security.protocol.map: expected NAME:PROTOCOL, got {item!r}")
        if protocol not in SECURITY_PROTOCOLS:
            raise ListenerConfigError(f"listener.security.protocol.map: unknown security protocol {protocol!r} "
                                      f"for listener {name} (one of {', '.join(SECURITY_PROTOCOLS)})")
        if name in mapping:
            raise ListenerConfigError(f"listener.security.protocol.map: listener {name} is mapped twice")
        mapping[name] = protocol
    return mapping


def parse_endpoints(setting: str, text: str, protocol_map: Mapping[str, str]) -> tuple[EndPoint, ...]:
    """The endpoints of a `listeners`-style setting; names must be distinct, in the protocol map and served."""
    endpoints: list[EndPoint] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            endpoint = parse_endpoint(item, protocol_map)
        except ListenerConfigError as e:
            raise ListenerConfigError(f"{setting}: {e}") from None
        name = endpoint.listener_name
        if name not in protocol_map:
            raise ListenerConfigError(f"{setting}: no security protocol defined for listener {name} "
                                      "(add it to listener.security.protocol.map)")
        if any(e.listener_name == name for e in endpoints):
            raise ListenerConfigError(f"{setting}: each listener must have a different name, {name} is repeated")
        endpoints.append(endpoint)
    if not endpoints:
        raise ListenerConfigError(f"{setting} names no listener")
    return tuple(endpoints)


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """The broker's listeners (what it binds), the advertised ones (what it registers) and the inter-broker
    listener's name."""

    listeners: tuple[EndPoint, ...]
    advertised_listeners: tuple[EndPoint, ...]
    inter_broker_listener_name: str

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ListenerConfig:
        """Read and check the four settings (and `security.inter.broker.protocol`) with Kafka's rules."""
        protocol_map = parse_protocol_map(props.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP))
        listeners = parse_endpoints("listeners", props.get("listeners", DEFAULT_LISTENERS), protocol_map)
        ports = [e.port for e in listeners if e.port != 0]
        if len(ports) != len(set(ports)):
            raise ListenerConfigError(f"listeners: each listener must have a different port, got "
                                      f"{', '.join(map(str, listeners))}")
        advertised_text = props.get("advertised.listeners", "").strip()
        if advertised_text:
            advertised = parse_endpoints("advertised.listeners", advertised_text, protocol_map)
            bound_names = {e.listener_name for e in listeners}
            unknown = [e.listener_name for e in advertised if e.listener_name not in bound_names]
            if unknown:
                raise ListenerConfigError(f"advertised.listeners: listener names must be equal to or a subset of "
                                          f"those in listeners; {', '.join(unknown)} is not in listeners")
        else:
            advertised = listeners
        if any(e.host == "0.0.0.0" for e in advertised):
            raise ListenerConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0; "
                                      "use a routable address")
        return cls(listeners, advertised, _inter_broker_listener_name(props, advertised))

    def advertised_endpoints(self, bound: Mapping[str, tuple[str, int]], hostname: str) -> tuple[EndPoint, ...]:
        """What the broker registers: the advertised listeners, with port 0 replaced by the port the listener was
        bound to and an empty host by `hostname` (this machine's name), as Kafka does."""
        resolved = []
        for endpoint in self.advertised_listeners:
            host, port = endpoint.host, endpoint.port
            if port == 0:
                port = bound[endpoint.listener_name][1]
            if not host:
                host = hostname
            resolved.append(EndPoint(endpoint.listener_name, host, port, endpoint.security_protocol))
        return tuple(resolved)


def _inter_broker_listener_name(props: Mapping[str, str], advertised: tuple[EndPoint, ...]) -> str:
    name = props.get("inter.broker.listener.name", "").strip().upper()
    protocol = props.get("security.inter.broker.protocol", "").strip().upper()
    if name and protocol:
        raise ListenerConfigError("only one of inter.broker.listener.name and security.inter.broker.protocol "
                                  "should be set")
    if protocol and protocol not in SECURITY_PROTOCOLS:
        raise ListenerConfigError(f"security.inter.broker.protocol: unknown security protocol {protocol!r}")
    name = name or protocol or SUPPORTED_PROTOCOL
    names = [e.listener_name for e in advertised]
    if name not in names:
        raise ListenerConfigError(f"inter.broker.listener.name must be a listener name defined in "
                                  f"advertised.listeners; {name} is not one of {', '.join(names)}")
    return name
