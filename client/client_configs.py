"""Kafka's producer and consumer config names (as in producer.properties / consumer.properties, or
``--producer-property KEY=VALUE``) mapped onto the Producer's and Consumer's keyword arguments.

As Kafka's clients do, a name the client does not know is accepted with a warning ("supplied but isn't a known
config"), and a known name with a bad value is an error. Names Kafka knows that minikafka has no use for (the
serializers, for instance) are accepted with a warning that says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.config import ConfigError, parse_properties
from broker.listeners import SECURITY_PROTOCOLS
from client.assignors import assignors
from client.producer import parse_acks
from protocol.compression import CODECS
from protocol.endpoint import SASL_PROTOCOLS, TLS_PROTOCOLS
from protocol.sasl import GSSAPI, MECHANISMS, SaslCredentials
from protocol.sasl.jaas import parse_jaas_config
from transport.tls import TlsConfigError, client_context

_INT32_MAX = 2**31 - 1


def _int(low: int, high: int = 2**63 - 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if not low <= number <= high:
            raise ValueError(f"{number} is not in [{low}, {high}]")
        return number

    return parse


def _acks(text: str) -> str:
    parse_acks(text)
    return text


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"{text!r} is not one of {', '.join(allowed)}")
        return text

    return parse


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(f"{text!r} is not true or false")
    return text.lower() == "true"


def _assignors(text: str) -> list[str]:
    """partition.assignment.strategy: assignors by protocol or Kafka class name, comma-separated."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    assignors(names)
    return names


def _only(value: str, why: str) -> Callable[[str], None]:
    def parse(text: str) -> None:
        if text.strip().lower() != value:
            raise ValueError(f"only {value} is supported ({why})")

    return parse


#: Kafka producer config -> (Producer keyword, parser)
PRODUCER_CONFIGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "acks": ("acks", _acks),
    "linger.ms": ("linger_ms", _int(0)),
    "batch.size": ("batch_size", _int(1, _INT32_MAX)),
    "delivery.timeout.ms": ("delivery_timeout_ms", _int(1, _INT32_MAX)),
    "retries": ("retries", _int(0, _INT32_MAX)),
    "request.timeout.ms": ("request_timeout_ms", _int(1, _INT32_MAX)),
    "retry.backoff.ms": ("retry_backoff_ms", _int(0)),
    "max.in.flight.requests.per.connection": ("max_in_flight", _int(1, _INT32_MAX)),
    "max.request.size": ("max_request_size", _int(1, _INT32_MAX)),
    "buffer.memory": ("buffer_memory", _int(1)),
    "max.block.ms": ("max_block_ms", _int(0)),
    "client.id": ("client_id", str),
    "compression.type": ("compression_type", _choice(*CODECS)),
    "enable.idempotence": ("enable_idempotence", _bool),
}

#: Kafka consumer config -> (Consumer keyword, parser)
CONSUMER_CONFIGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "fetch.min.bytes": ("fetch_min_bytes", _int(0, _INT32_MAX)),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _int(0, _INT32_MAX)),
    "fetch.max.bytes": ("fetch_max_bytes", _int(0, _INT32_MAX)),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _int(0, _INT32_MAX)),
    "request.timeout.ms": ("request_timeout_ms", _int(1, _INT32_MAX)),
    "retry.backoff.ms": ("retry_backoff_ms", _int(0)),
    "auto.offset.reset": ("auto_offset_reset", _choice("earliest", "latest", "none")),
    "client.id": ("client_id", str),
    "isolation.level": ("", _choice("read_uncommitted", "read_committed")),
    "group.id": ("group_id", str),
    "group.instance.id": ("group_instance_id", str),
    "partition.assignment.strategy": ("partition_assignment_strategy", _assignors),
    "session.timeout.ms": ("session_timeout_ms", _int(1, _INT32_MAX)),
    "heartbeat.interval.ms": ("heartbeat_interval_ms", _int(1, _INT32_MAX)),
    "max.poll.interval.ms": ("max_poll_interval_ms", _int(1, _INT32_MAX)),
    "enable.auto.commit": ("enable_auto_commit", _bool),
    "auto.commit.interval.ms": ("auto_commit_interval_ms", _int(0, _INT32_MAX)),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", _int(0)),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int(0)),
    "default.api.timeout.ms": ("default_api_timeout_ms", _int(0, _INT32_MAX)),
}

#: Names Kafka's clients know that have no effect here, and why.
_WITHOUT_EFFECT = {
    "bootstrap.servers": "give --bootstrap-server",
    "key.serializer": "keys are the bytes of the input",
    "value.serializer": "values are the bytes of the input",
    "key.deserializer": "keys are printed as bytes",
    "value.deserializer": "values are printed as bytes",
    "partitioner.class": "records are placed by murmur2 of the key, keyless ones sticky, as Kafka's default",
}


#: Kafka's (and librdkafka's) SASL settings, read together into the clients' `sasl` credentials.
SASL_CONFIGS = ("sasl.mechanism", "sasl.username", "sasl.password", "sasl.jaas.config")


def sasl_credentials(properties: Mapping[str, str]) -> SaslCredentials | None:
    """The SASL credentials of `security.protocol` SASL_PLAINTEXT or SASL_SSL with `sasl.mechanism` and either
    librdkafka's `sasl.username`/`sasl.password` or Java's `sasl.jaas.config` (its username and password options);
    None for PLAINTEXT and SSL. ConfigError (naming no secret) for settings minikafka's clients cannot serve."""
    protocol = properties.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SASL_PROTOCOLS:
        return None
    mechanism = properties.get("sasl.mechanism", GSSAPI).strip().upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(f"sasl.mechanism {mechanism} is not supported (one of {', '.join(MECHANISMS)})")
    username, password = properties.get("sasl.username"), properties.get("sasl.password")
    jaas = properties.get("sasl.jaas.config", "").strip()
    if jaas and (username is None or password is None):
        try:
            options = parse_jaas_config(jaas).options
        except ValueError as e:
            raise ConfigError(str(e)) from None
        username, password = options.get("username"), options.get("password")
    if not username or password is None:
        raise ConfigError(f"security.protocol {protocol} needs sasl.username and sasl.password, or a "
                          "sasl.jaas.config with username and password")
    return SaslCredentials(mechanism, username, password)


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Keyword arguments for the client, and the warnings to show (unknown names, names without effect)."""

    kwargs: dict[str, Any]
    warnings: tuple[str, ...]


def read_config_file(path: Path) -> dict[str, str]:
    """A producer.config / consumer.config file (Java properties). ConfigError if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        return parse_properties(text)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def is_security_config(name: str) -> bool:
    """Whether a client config is one of the security settings (`security_config` reads them together)."""
    return (name == "security.protocol" or name.startswith("ssl.") or name == "enable.ssl.certificate.verification"
            or name in SASL_CONFIGS)


def security_config(properties: Mapping[str, str]) -> dict[str, Any]:
    """The client keyword arguments of the security settings: `tls`, a context from the ssl.* settings (Kafka's
    or librdkafka's names) when security.protocol is SSL or SASL_SSL, and `sasl`, the credentials of SASL_PLAINTEXT
    and SASL_SSL. ConfigError for a bad setting."""
    protocol = properties.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(f"invalid value {protocol!r} for config 'security.protocol': one of "
                          f"{', '.join(SECURITY_PROTOCOLS)}")
    settings: dict[str, Any] = {}
    sasl = sasl_credentials(properties)
    if sasl is not None:
        settings["sasl"] = sasl
    if protocol in TLS_PROTOCOLS:
        try:
            settings["tls"] = client_context({k: v for k, v in properties.items() if is_security_config(k)})
        except TlsConfigError as e:
            raise ConfigError(str(e)) from None
    return settings


def _map(properties: Mapping[str, str], known: Mapping[str, tuple[str, Callable[[str], Any]]],
         kind: str) -> ClientConfig:
    kwargs: dict[str, Any] = security_config(properties)
    warnings: list[str] = []
    for name, text in properties.items():
        if is_security_config(name):
            continue
        if name in known:
            keyword, parse = known[name]
            try:
                value = parse(text.strip())
            except ValueError as e:
                raise ConfigError(f"invalid value {text!r} for {kind} config {name!r}: {e}") from None
            if keyword:
                kwargs[keyword] = value
        elif name in _WITHOUT_EFFECT:
            warnings.append(f"the {kind} config {name!r} has no effect here: {_WITHOUT_EFFECT[name]}")
        else:
            warnings.append(f"the {kind} config {name!r} was supplied but isn't a known config")
    return ClientConfig(kwargs, tuple(warnings))


def producer_config(properties: Mapping[str, str]) -> ClientConfig:
    """Producer keyword arguments from Kafka's producer config names; ConfigError for a bad value."""
    return _map(properties, PRODUCER_CONFIGS, "producer")


def consumer_config(properties: Mapping[str, str]) -> ClientConfig:
    """Consumer keyword arguments from Kafka's consumer config names; ConfigError for a bad value."""
    return _map(properties, CONSUMER_CONFIGS, "consumer")
