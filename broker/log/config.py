"""Per-log configuration with Kafka's property names and defaults."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

NEVER = 2**63 - 1  # Kafka's Long.MAX_VALUE: "no limit"
COMPACT = "compact"
DELETE = "delete"
CLEANUP_POLICIES = (COMPACT, DELETE)

#: compression.type's values: keep the producer's codec, store uncompressed, or recompress with a codec.
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


class LogConfigError(ValueError):
    """A log property with a bad name or value."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one partition log.

    Built from broker properties (``log.segment.bytes``...) and overridden per topic by the
    topic-level names (``segment.bytes``...), exactly as Kafka does.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    flush_messages: int = NEVER
    flush_ms: int = NEVER
    max_message_bytes: int = 1024 * 1024 + 12
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    #: cleanup.policy: ``delete`` (retention), ``compact`` (the log cleaner), both, or neither (an empty list).
    cleanup_policy: tuple[str, ...] = (DELETE,)
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = NEVER
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    #: leader/follower.replication.throttled.replicas: the replicas Kafka's reassignment tool throttles
    #: ("partition:broker" items, or "*"); kept and described, not enforced (minikafka has no replication quotas).
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()

    @property
    def compact(self) -> bool:
        """Whether the log cleaner compacts this log (cleanup.policy includes compact)."""
        return COMPACT in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Whether retention.ms and retention.bytes delete old segments (cleanup.policy includes delete)."""
        return DELETE in self.cleanup_policy
    compression_type: str = "producer"

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """Defaults from a server.properties mapping (``log.*`` names); unrelated keys are ignored."""
        values: dict[str, str] = {}
        for key, field_name in BROKER_NAMES.items():
            if key in props:
                values[field_name] = props[key]
        # Kafka: log.roll.hours is the coarse form; log.roll.ms wins when both are set.
        if "log.roll.ms" not in props and "log.roll.hours" in props:
            values["segment_ms"] = str(int(props["log.roll.hours"]) * 3_600_000)
        if "log.retention.ms" not in props:
            if "log.retention.minutes" in props:
                values["retention_ms"] = str(int(props["log.retention.minutes"]) * 60_000)
            elif "log.retention.hours" in props:
                values["retention_ms"] = str(int(props["log.retention.hours"]) * 3_600_000)
        return cls()._with(values, source="broker")

    def with_topic_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """A copy with topic-level properties (``segment.bytes``, ``retention.ms``...) applied.

        Unknown topic properties are refused, as Kafka's CreateTopics does (INVALID_CONFIG).
        """
        unknown = sorted(set(overrides) - set(TOPIC_NAMES))
        if unknown:
            raise LogConfigError(f"unknown topic config {', '.join(unknown)}")
        return self._with({TOPIC_NAMES[k]: v for k, v in overrides.items()}, source="topic")

    def _with(self, raw: Mapping[str, str], source: str) -> LogConfig:
        parsed: dict[str, object] = {}
        for name, text in raw.items():
            parsed[name] = _parse(name, str(text), source)
        config = dataclasses.replace(self, **parsed)
        config._check()
        return config

    def _check(self) -> None:
        if self.segment_bytes < 14 + 61:
            raise LogConfigError(f"segment.bytes must be at least 75, got {self.segment_bytes}")
        if self.segment_index_bytes < 8 or self.index_interval_bytes < 0:
            raise LogConfigError("segment.index.bytes must be >= 8 and index.interval.bytes >= 0")
        if self.segment_ms < 1 or self.flush_messages < 1 or self.flush_ms < 0:
            raise LogConfigError("segment.ms and flush.messages must be >= 1, flush.ms >= 0")
        if self.min_insync_replicas < 1:
            raise LogConfigError(f"min.insync.replicas must be >= 1, got {self.min_insync_replicas}")
        ratio, min_lag, max_lag = self.min_cleanable_dirty_ratio, self.min_compaction_lag_ms, self.max_compaction_lag_ms
        if not 0 <= ratio <= 1:
            raise LogConfigError(f"min.cleanable.dirty.ratio must be between 0 and 1, got {ratio}")
        if min_lag < 0 or max_lag < 1 or self.delete_retention_ms < 0:
            raise LogConfigError("min.compaction.lag.ms and delete.retention.ms must be >= 0, "
                                 "max.compaction.lag.ms >= 1")
        if min_lag > max_lag:
            raise LogConfigError(f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
                                 f"max.compaction.lag.ms ({max_lag})")


def _parse(name: str, text: str, source: str) -> object:
    if name == "cleanup_policy":
        return _parse_policy(text, source)
    if name in THROTTLED_REPLICAS:
        return _parse_throttled_replicas(name, text, source)
    if name == "min_cleanable_dirty_ratio":
        try:
            return float(text.strip())
        except ValueError:
            raise LogConfigError(f"{_display(name, source)} must be a number, got {text!r}") from None
    if name == "compression_type":
        lowered = text.strip().lower()
        if lowered not in COMPRESSION_TYPES:
            raise LogConfigError(f"{_display(name, source)} must be one of {', '.join(COMPRESSION_TYPES)}, "
                                 f"got {text!r}")
        return lowered
    if name == "unclean_leader_election_enable":
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise LogConfigError(f"{_display(name, source)} must be true or false, got {text!r}")
        return lowered == "true"
    try:
        return int(text.strip())
    except ValueError:
        raise LogConfigError(f"{_display(name, source)} must be an integer, got {text!r}") from None


#: The fields of the throttled replicas lists.
THROTTLED_REPLICAS = ("leader_replication_throttled_replicas", "follower_replication_throttled_replicas")
_THROTTLED_REPLICA = re.compile(r"\s*\d+\s*:\s*\d+\s*")


def _parse_throttled_replicas(name: str, text: str, source: str) -> tuple[str, ...]:
    """Kafka's ThrottledReplicaListValidator: "*", or a list of "partition:broker" items."""
    items = tuple(item.strip() for item in text.split(",")) if text.strip() else ()
    if items != ("*",) and not all(_THROTTLED_REPLICA.fullmatch(item) for item in items):
        raise LogConfigError(f"{_display(name, source)} must be the literal '*' or a list of replicas in the "
                             f"following format: [partitionId]:[brokerId],..., got {text!r}")
    return items


def _parse_policy(text: str, source: str) -> tuple[str, ...]:
    """A comma-separated list of cleanup policies, as Kafka's ValidList reads it (an empty list is allowed)."""
    policies = tuple(item.strip() for item in text.split(",")) if text.strip() else ()
    wrong = [item for item in policies if item not in CLEANUP_POLICIES]
    if wrong:
        raise LogConfigError(f"{_display('cleanup_policy', source)}: invalid value {wrong[0]!r}, "
                             f"expected a list of {' and '.join(CLEANUP_POLICIES)}")
    return policies


def _display(field_name: str, source: str) -> str:
    names = BROKER_NAMES if source == "broker" else TOPIC_NAMES
    return next((k for k, v in names.items() if v == field_name), field_name)


# Topic-level property -> field (Kafka's TopicConfig names).
TOPIC_NAMES: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.bytes": "retention_bytes",
    "retention.ms": "retention_ms",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "max.message.bytes": "max_message_bytes",
    "min.insync.replicas": "min_insync_replicas",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
    "cleanup.policy": "cleanup_policy",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "delete.retention.ms": "delete_retention_ms",
    "compression.type": "compression_type",
    "leader.replication.throttled.replicas": "leader_replication_throttled_replicas",
    "follower.replication.throttled.replicas": "follower_replication_throttled_replicas",
}

# Broker-level property -> field (the server.properties names that give the defaults).
BROKER_NAMES: dict[str, str] = {
    "log.segment.bytes": "segment_bytes",
    "log.roll.ms": "segment_ms",
    "log.index.size.max.bytes": "segment_index_bytes",
    "log.index.interval.bytes": "index_interval_bytes",
    "log.retention.bytes": "retention_bytes",
    "log.retention.ms": "retention_ms",
    "log.flush.interval.messages": "flush_messages",
    "log.flush.interval.ms": "flush_ms",
    "message.max.bytes": "max_message_bytes",
    "min.insync.replicas": "min_insync_replicas",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
    "log.cleanup.policy": "cleanup_policy",
    "log.cleaner.min.cleanable.ratio": "min_cleanable_dirty_ratio",
    "log.cleaner.min.compaction.lag.ms": "min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "max_compaction_lag_ms",
    "log.cleaner.delete.retention.ms": "delete_retention_ms",
    "compression.type": "compression_type",
}
