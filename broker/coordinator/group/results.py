"""What the group coordinator answers: one small dataclass per answer, free of any wire format."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

NO_GENERATION = -1
NO_LEADER = ""
NO_OFFSET = -1


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """A member as the leader's JoinGroup answer lists it: its metadata for the chosen protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = NO_LEADER
    skip_assignment: bool = False
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class LeftMember:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveResult:
    error: ErrorCode
    members: tuple[LeftMember, ...] = ()


@dataclass(frozen=True, slots=True)
class CommitResult:
    """OffsetCommit's answer: an error for each partition of the request."""

    errors: dict[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    offset: int = NO_OFFSET
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    error: ErrorCode
    partitions: dict[TopicPartition, FetchedOffset] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """DescribeGroups' answer for one group; `state` is Kafka's state name ("" when the group could not be read)."""

    group_id: str
    error: ErrorCode
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class ListGroupsResult:
    error: ErrorCode
    groups: tuple[GroupListing, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteOffsetsResult:
    """OffsetDelete's answer: a group error, or an error for each partition."""

    error: ErrorCode
    partitions: dict[TopicPartition, ErrorCode] = field(default_factory=dict)
