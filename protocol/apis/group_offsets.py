"""A group's committed offsets: OffsetCommit (8), OffsetFetch (9) and OffsetDelete (47), shaped as the group
coordinator's requests and answers.

On Kafka's wire: OffsetCommit v1-9 (a commit timestamp per partition in v1, a retention in v2-4, leader epochs from
v6, group.instance.id from v7), OffsetFetch v1-9 (every partition of the group for null topics from v2, a group
error from v2, require_stable from v7, several groups from v8), OffsetDelete v0. Version 0 of OffsetCommit and
OffsetFetch kept offsets in ZooKeeper, not in the group coordinator, and is not spoken.
"""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey, error_only
from protocol.apis.groups import NO_GENERATION, NO_MEMBER_ID
from protocol.apis.shapes import Topic
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec

NO_OFFSET = -1
NO_LEADER_EPOCH = -1
NO_TIMESTAMP = -1  # OffsetCommit: a commit timestamp of "now", a retention of the broker's
_FIRST_GROUP_ERROR = 2  # OffsetFetch
_FIRST_BATCHED_OFFSET_FETCH = 8


@message
class PartitionResult:
    """The outcome for one partition (OffsetCommit, OffsetDelete)."""

    partition: Int32
    error_code: Int16


def _partition_results(topics: list[Topic[PartitionResult]]) -> list[Message]:
    return [{"name": t.name, "partitions": [{"partition_index": p.partition, "error_code": p.error_code}
                                            for p in t.partitions]} for t in topics]


def _named_partitions(topics: list[Message]) -> list[Topic[int]]:
    return [Topic(name=t["name"], partitions=t["partition_indexes"]) for t in topics]


# ------------------------------------------------------------------------------------------------ OffsetCommit


@message
class OffsetCommitPartition:
    """An offset to commit; a null metadata is ""."""

    partition: Int32
    offset: Int64
    leader_epoch: Int32 = NO_LEADER_EPOCH
    commit_timestamp: Int64 = NO_TIMESTAMP
    metadata: str | None = ""


@message
class OffsetCommitRequest:
    """Commit offsets for a group: a member with its generation, or anyone outside group management (or an admin)
    without either."""

    group_id: str
    generation_id: Int32 = NO_GENERATION
    member_id: str = NO_MEMBER_ID
    group_instance_id: str | None = None
    retention_time_ms: Int64 = NO_TIMESTAMP
    topics: list[Topic[OffsetCommitPartition]]


@message
class OffsetCommitResponse:
    """An outcome for each partition of the request."""

    topics: list[Topic[PartitionResult]]


def offset_commit_error(request: OffsetCommitRequest, code: ErrorCode, _message: str | None) -> OffsetCommitResponse:
    """The answer to an OffsetCommit that failed as a whole: the error for every partition."""
    return OffsetCommitResponse(topics=[Topic(name=t.name, partitions=[
        PartitionResult(partition=p.partition, error_code=code) for p in t.partitions]) for t in request.topics])


def _offset_commit_request(message: Message, _version: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=message["group_id"], generation_id=message["generation_id_or_member_epoch"],
        member_id=message["member_id"], group_instance_id=message["group_instance_id"],
        retention_time_ms=message["retention_time_ms"],
        topics=[Topic(name=t["name"], partitions=[OffsetCommitPartition(
            partition=p["partition_index"], offset=p["committed_offset"], leader_epoch=p["committed_leader_epoch"],
            commit_timestamp=p["commit_timestamp"], metadata=p["committed_metadata"]) for p in t["partitions"]])
            for t in message["topics"]])


OFFSET_COMMIT = Api(ApiKey.OFFSET_COMMIT, "OffsetCommit", OffsetCommitRequest, OffsetCommitResponse,
                    offset_commit_error,
                    kafka=spec_codec("OffsetCommit", _offset_commit_request,
                                     lambda body, _version: {"throttle_time_ms": 0,
                                                             "topics": _partition_results(body.topics)}))


# ------------------------------------------------------------------------------------------------ OffsetFetch


@message
class OffsetFetchGroup:
    """A group whose offsets are asked for: of the partitions named, or of every partition it has (None)."""

    group_id: str
    topics: list[Topic[Int32]] | None = None


@message
class OffsetFetchRequest:
    """Fetch the committed offsets of one group or more; with require_stable, a partition with a commit still
    being written answers UNSTABLE_OFFSET_COMMIT."""

    groups: list[OffsetFetchGroup]
    require_stable: bool = False


@message
class FetchedOffset:
    """A partition's committed offset (NO_OFFSET: none), or its error."""

    partition: Int32
    offset: Int64 = NO_OFFSET
    leader_epoch: Int32 = NO_LEADER_EPOCH
    metadata: str | None = ""
    error_code: Int16 = ErrorCode.NONE


@message
class OffsetFetchGroupResult:
    """One group's offsets, or the error that kept them from being read."""

    group_id: str
    error_code: Int16 = ErrorCode.NONE
    topics: list[Topic[FetchedOffset]] = field(default_factory=list)


@message
class OffsetFetchResponse:
    """The offsets of each group asked for."""

    groups: list[OffsetFetchGroupResult]


def offset_fetch_group_error(group: OffsetFetchGroup, code: ErrorCode) -> OffsetFetchGroupResult:
    """A group whose offsets could not be read: the error, and with it each partition named (which is where the
    error goes on Kafka's wire before v2)."""
    return OffsetFetchGroupResult(group_id=group.group_id, error_code=code, topics=[Topic(name=t.name, partitions=[
        FetchedOffset(partition=p, error_code=code) for p in t.partitions]) for t in group.topics or ()])


def offset_fetch_error(request: OffsetFetchRequest, code: ErrorCode, _message: str | None) -> OffsetFetchResponse:
    """The answer to an OffsetFetch that failed as a whole: the error for every group."""
    return OffsetFetchResponse(groups=[offset_fetch_group_error(group, code) for group in request.groups])


def _offset_fetch_request(message: Message, version: int) -> OffsetFetchRequest:
    # v9's member id and epoch are checked for the new consumer protocol's groups only, which minikafka has not
    if version >= _FIRST_BATCHED_OFFSET_FETCH:
        groups = [OffsetFetchGroup(group_id=g["group_id"],
                                   topics=None if g["topics"] is None else _named_partitions(g["topics"]))
                  for g in message["groups"]]
    else:
        topics = message["topics"]
        groups = [OffsetFetchGroup(group_id=message["group_id"],
                                   topics=None if topics is None else _named_partitions(topics))]
    return OffsetFetchRequest(groups=groups, require_stable=message["require_stable"])


def _fetched_topics(group: OffsetFetchGroupResult, version: int) -> list[Message]:
    """A group's offsets by topic; none for a group with an error (from v2, where the group has its error)."""
    if group.error_code != ErrorCode.NONE and version >= _FIRST_GROUP_ERROR:
        return []
    return [{"name": t.name, "partitions": [{
        "partition_index": p.partition, "committed_offset": p.offset, "committed_leader_epoch": p.leader_epoch,
        "metadata": p.metadata, "error_code": p.error_code} for p in t.partitions]} for t in group.topics]


def _offset_fetch_response(body: OffsetFetchResponse, version: int) -> Message:
    if version >= _FIRST_BATCHED_OFFSET_FETCH:
        return {"throttle_time_ms": 0, "groups": [{
            "group_id": g.group_id, "error_code": g.error_code, "topics": _fetched_topics(g, version)}
            for g in body.groups]}
    [group] = body.groups
    return {"throttle_time_ms": 0, "error_code": group.error_code, "topics": _fetched_topics(group, version)}


OFFSET_FETCH = Api(ApiKey.OFFSET_FETCH, "OffsetFetch", OffsetFetchRequest, OffsetFetchResponse, offset_fetch_error,
                   kafka=spec_codec("OffsetFetch", _offset_fetch_request, _offset_fetch_response))


# ------------------------------------------------------------------------------------------------ OffsetDelete


@message
class OffsetDeleteRequest:
    """Delete a group's committed offsets of the partitions named."""

    group_id: str
    topics: list[Topic[Int32]]


@message
class OffsetDeleteResponse:
    """An error for the group, or an outcome for each partition."""

    error_code: Int16
    topics: list[Topic[PartitionResult]] = field(default_factory=list)



OFFSET_DELETE = Api(
    ApiKey.OFFSET_DELETE, "OffsetDelete", OffsetDeleteRequest, OffsetDeleteResponse,
    error_only(OffsetDeleteResponse),
    kafka=spec_codec("OffsetDelete",
                     lambda message, _version: OffsetDeleteRequest(group_id=message["group_id"], topics=[
                         Topic(name=t["name"], partitions=[p["partition_index"] for p in t["partitions"]])
                         for t in message["topics"]]),
                     lambda body, _version: {"throttle_time_ms": 0, "error_code": body.error_code,
                                             "topics": _partition_results(body.topics)}))
