"""The broker's SASL settings, with Kafka's property names. Pure: no I/O.

- `sasl.enabled.mechanisms` (per listener: `listener.name.<listener>.sasl.enabled.mechanisms`): the mechanisms a
  SASL listener accepts. Kafka's default is GSSAPI (Kerberos), which minikafka does not serve: the default here is
  PLAIN,SCRAM-SHA-256,SCRAM-SHA-512, and GSSAPI (or any other mechanism) is refused at start-up.
- `listener.name.<listener>.plain.sasl.jaas.config`: PlainLoginModule's ``user_<name>="<password>"`` options are
  the PLAIN users of that listener (PLAIN is enabled on a listener only with such users). SCRAM credentials live in
  ZooKeeper (zk/user_scram.py).
- `sasl.mechanism.inter.broker.protocol` (default PLAIN; Kafka's is GSSAPI): when `inter.broker.listener.name` is
  a SASL listener, brokers authenticate to each other with this mechanism and the ``username``/``password`` of
  `listener.name.<inter-broker listener>.<mechanism>.sasl.jaas.config`.
- `connections.max.reauth.ms` (KIP-368): re-authentication is not served; a value above 0 is refused at start-up,
  and SaslAuthenticate answers a session lifetime of 0 (unbounded), as Kafka does with the setting at 0.
- `sasl.server.authentication.timeout.ms` (minikafka's own, default 10000): a connection that has not completed
  its authentication this long after it was accepted is closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.listeners import ListenerConfig
from protocol.endpoint import SASL_PROTOCOLS
from protocol.sasl import GSSAPI, MECHANISMS, PLAIN, SaslCredentials
from protocol.sasl.jaas import JaasConfig, parse_jaas_config

DEFAULT_MECHANISMS = ",".join(MECHANISMS)
DEFAULT_AUTHENTICATION_TIMEOUT_MS = 10000


class SaslConfigError(ValueError):
    """A SASL setting minikafka cannot serve. Its message never holds a password."""


@dataclass(frozen=True, slots=True)
class ListenerSasl:
    """One SASL listener's mechanisms and PLAIN users."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """The SASL listeners by name, the broker's own credentials to other brokers (None unless the inter-broker
    listener is a SASL one) and the authentication timeout."""

    listeners: Mapping[str, ListenerSasl] = field(default_factory=dict)
    inter_broker: SaslCredentials | None = None
    authentication_timeout_ms: int = DEFAULT_AUTHENTICATION_TIMEOUT_MS

    @classmethod
    def from_properties(cls, props: Mapping[str, str], listeners: ListenerConfig) -> SaslConfig:
        reauth = props.get("connections.max.reauth.ms", "0").strip()
        if reauth not in ("", "0"):
            raise SaslConfigError(f"connections.max.reauth.ms={reauth}: re-authentication (KIP-368) is not "
                                  "supported; leave it at 0")
        timeout_text = props.get("sasl.server.authentication.timeout.ms", str(DEFAULT_AUTHENTICATION_TIMEOUT_MS))
        if not timeout_text.strip().isdigit() or int(timeout_text) < 1:
            raise SaslConfigError(f"sasl.server.authentication.timeout.ms must be a positive integer, got "
                                  f"{timeout_text!r}")
        sasl_listeners = {}
        for endpoint in listeners.listeners:
            if endpoint.security_protocol in SASL_PROTOCOLS:
                sasl_listeners[endpoint.listener_name] = _listener_sasl(props, endpoint.listener_name.lower())
        inter_broker = None
        name = listeners.inter_broker_listener_name
        if name in sasl_listeners:
            mechanism = props.get("sasl.mechanism.inter.broker.protocol", PLAIN).strip().upper()
            if mechanism not in sasl_listeners[name].mechanisms:
                raise SaslConfigError(f"sasl.mechanism.inter.broker.protocol={mechanism} is not enabled on the "
                                      f"inter-broker listener {name}")
            key = f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
            options = _jaas(props, key).options
            if not options.get("username") or not options.get("password"):
                raise SaslConfigError(f"{key} must give the broker's username and password (the inter-broker "
                                      f"listener {name} is a SASL listener)")
            inter_broker = SaslCredentials(mechanism, options["username"], options["password"])
        return cls(sasl_listeners, inter_broker, int(timeout_text))


def _listener_sasl(props: Mapping[str, str], prefix_name: str) -> ListenerSasl:
    text = props.get(f"listener.name.{prefix_name}.sasl.enabled.mechanisms",
                     props.get("sasl.enabled.mechanisms", DEFAULT_MECHANISMS))
    mechanisms = tuple(dict.fromkeys(m.strip().upper() for m in text.split(",") if m.strip()))
    if GSSAPI in mechanisms:
        raise SaslConfigError("sasl.enabled.mechanisms: GSSAPI (Kerberos) is not supported by minikafka; enable "
                              f"some of {', '.join(MECHANISMS)}")
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown or not mechanisms:
        raise SaslConfigError(f"sasl.enabled.mechanisms: {', '.join(unknown) or 'none'} given; minikafka serves "
                              f"{', '.join(MECHANISMS)}")
    return ListenerSasl(mechanisms, _jaas(props, f"listener.name.{prefix_name}.plain.sasl.jaas.config").users)


def _jaas(props: Mapping[str, str], key: str) -> JaasConfig:
    text = props.get(key, "").strip()
    if not text:
        return JaasConfig("", {})
    try:
        return parse_jaas_config(text)
    except ValueError as e:
        raise SaslConfigError(f"{key}: {e}") from None
