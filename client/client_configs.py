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
from client.assignors import assignors
from client.producer import parse_acks
from protocol.compression import CODECS

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


def _map(properties: Mapping[str, str], known: Mapping[str, tuple[str, Callable[[str], Any]]],
         kind: str) -> ClientConfig:
    kwargs: dict[str, Any] = {}
    warnings: list[str] = []
    for name, text in properties.items():
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
