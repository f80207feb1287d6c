"""The group coordinator's settings, with Kafka's property names and defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

#: Kafka's NewMemberJoinTimeoutMs: how long a new member's parked JoinGroup may wait before the member is dropped.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The coordinator's rules' settings; ``from_broker_properties`` reads them from server.properties names."""

    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    max_size: int = 2**31 - 1  # group.max.size
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000  # offsets.retention.minutes (10080)
    offsets_topic_partitions: int = 50  # offsets.topic.num.partitions

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> GroupConfig:
        """Settings from a server.properties mapping; unrelated keys are ignored, a bad number is a ValueError."""
        values = {field: int(props[name]) for name, field in BROKER_NAMES.items() if name in props}
        if "offsets.retention.minutes" in props:
            values["offsets_retention_ms"] = int(props["offsets.retention.minutes"]) * 60_000
        return replace(cls(), **values)


BROKER_NAMES = {
    "group.min.session.timeout.ms": "min_session_timeout_ms",
    "group.max.session.timeout.ms": "max_session_timeout_ms",
    "group.max.size": "max_size",
    "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
    "offsets.topic.num.partitions": "offsets_topic_partitions",
}
