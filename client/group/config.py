"""A group member's settings, with Kafka's defaults (the consumer configs of the same names)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """group.id, group.instance.id (a static member when set), session.timeout.ms, heartbeat.interval.ms,
    max.poll.interval.ms (also the rebalance timeout given in JoinGroup), retry.backoff.ms and .max.ms,
    request.timeout.ms, enable.auto.commit, auto.commit.interval.ms, metadata.max.age.ms (how often the leader
    looks for partitions added to the group's topics) and default.api.timeout.ms (the default limit of a
    synchronous commit or offset lookup)."""

    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    request_timeout_ms: int = 30000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    metadata_max_age_ms: int = 300000
    default_api_timeout_ms: int = 60000
    leave_group_on_close: bool = True

    def __post_init__(self) -> None:
        if not self.group_id:
            raise ValueError("group.id must not be empty to subscribe")
        if self.group_instance_id == "":
            raise ValueError("group.instance.id must not be empty when given")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be lower than session.timeout.ms")

    @property
    def rebalance_timeout_ms(self) -> int:
        """How long the coordinator waits for members to rejoin in a rebalance: max.poll.interval.ms, as Kafka's
        consumer gives it."""
        return self.max_poll_interval_ms
