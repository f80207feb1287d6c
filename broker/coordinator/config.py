"""The group coordinator's broker settings, with Kafka's property names and defaults: the rules' own (GroupConfig)
and those of the shell around them (the __consumer_offsets topic, its appends, loading and offset expiry)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from broker.coordinator.group.config import BROKER_NAMES as GROUP_RULE_NAMES
from broker.coordinator.group.config import GroupConfig


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    """Everything the group coordinator reads from server.properties; ``from_broker_properties`` reads it."""

    group: GroupConfig = field(default_factory=GroupConfig)
    offsets_topic_replication_factor: int = 3  # offsets.topic.replication.factor
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024  # offsets.topic.segment.bytes
    offsets_commit_timeout_ms: int = 5000  # offsets.commit.timeout.ms
    offsets_load_buffer_size: int = 5 * 1024 * 1024  # offsets.load.buffer.size
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms

    @property
    def offsets_topic_partitions(self) -> int:
        return self.group.offsets_topic_partitions

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> GroupCoordinatorConfig:
        """Settings from a server.properties mapping; unrelated keys are ignored, a bad number is a ValueError,
        and so is a value Kafka refuses (below its minimum)."""
        values = {name: int(props[key]) for key, name in SHELL_NAMES.items() if key in props}
        config = replace(cls(GroupConfig.from_broker_properties(props)), **values)
        positive = {"offsets.topic.num.partitions": config.offsets_topic_partitions,
                    "group.max.size": config.group.max_size,
                    **{key: getattr(config, name) for key, name in SHELL_NAMES.items()}}
        for key, value in positive.items():
            if value < 1:  # Kafka's atLeast(1) validators
                raise ValueError(f"{key} must be at least 1, got {value}")
        return config

    def settings(self) -> dict[str, str]:
        """Every setting by its Kafka property name, as the broker runs with it (offsets.retention.minutes in
        minutes)."""
        values = {key: str(getattr(self.group, name)) for key, name in GROUP_RULE_NAMES.items()}
        values["offsets.retention.minutes"] = str(self.group.offsets_retention_ms // 60_000)
        values.update({key: str(getattr(self, name)) for key, name in SHELL_NAMES.items()})
        return dict(sorted(values.items()))


SHELL_NAMES = {
    "offsets.topic.replication.factor": "offsets_topic_replication_factor",
    "offsets.topic.segment.bytes": "offsets_topic_segment_bytes",
    "offsets.commit.timeout.ms": "offsets_commit_timeout_ms",
    "offsets.load.buffer.size": "offsets_load_buffer_size",
    "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
}

