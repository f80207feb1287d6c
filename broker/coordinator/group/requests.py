"""What the group coordinator is asked: one small dataclass per request, free of any wire format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.coordinator.group.member import Protocols
from protocol.topic_partition import TopicPartition

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
DEFAULT_TIMESTAMP = -1
DEFAULT_RETENTION = -1
LATEST_JOIN_VERSION = 9


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup; `api_version` decides Kafka's version rules: from v4 a dynamic member without an id is given one
    and asked to join again (KIP-394), from v9 a static leader rejoining a Stable group skips its assignment."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    api_version: int = LATEST_JOIN_VERSION

    @property
    def requires_known_member_id(self) -> bool:
        return self.api_version >= 4 and self.group_instance_id is None

    @property
    def supports_skipping_assignment(self) -> bool:
        return self.api_version >= 9


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroup; the leader's carries the assignment of each member. Protocol type and name are checked when
    given (SyncGroup v5+)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """A member leaving; a static member may be named by its group.instance.id alone (an empty member id)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetToCommit:
    """One partition's commit. A commit timestamp of -1 is "now"; a retention of -1 is the broker's (the offset
    then has no expire timestamp); a null metadata is ""."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = DEFAULT_TIMESTAMP
    retention_ms: int = DEFAULT_RETENTION


@dataclass(frozen=True, slots=True)
class CommitRequest:
    """An OffsetCommit: a simple consumer (or an admin) commits with generation -1 and no member id."""

    group_id: str
    offsets: Mapping[TopicPartition, OffsetToCommit]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
