"""Committed offsets as the clients hold them, and the OffsetCommit and OffsetFetch requests and answers that carry
them (for a group member and for the admin client alike)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.apis.group_offsets import (
    NO_LEADER_EPOCH,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResult,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from protocol.apis.groups import NO_GENERATION, NO_MEMBER_ID
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset as Kafka's: the offset of the next record to read, the leader epoch of the last record
    read (None if unknown) and the application's metadata."""

    offset: int
    leader_epoch: int | None = None
    metadata: str = ""


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition numbers grouped by topic, topics and partitions in order."""
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def offset_commit_request(group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], *,
                          generation_id: int = NO_GENERATION, member_id: str = NO_MEMBER_ID,
                          group_instance_id: str | None = None) -> OffsetCommitRequest:
    """Commit `offsets` for a group: as a member of `generation_id`, or (the defaults) from outside the group."""
    for tp, committed in offsets.items():
        if committed.offset < 0:
            raise ValueError(f"invalid offset {committed.offset} for {tp}")
    return OffsetCommitRequest(
        group_id=group_id, generation_id=generation_id, member_id=member_id, group_instance_id=group_instance_id,
        topics=[Topic(name=topic, partitions=[OffsetCommitPartition(
            partition=p, offset=offsets[TopicPartition(topic, p)].offset,
            leader_epoch=_wire_epoch(offsets[TopicPartition(topic, p)].leader_epoch),
            metadata=offsets[TopicPartition(topic, p)].metadata) for p in partitions])
            for topic, partitions in by_topic(offsets).items()])


def commit_errors(response: OffsetCommitResponse) -> dict[TopicPartition, ErrorCode]:
    """The outcome of each partition of an OffsetCommit."""
    return {TopicPartition(t.name, p.partition): ErrorCode.from_code(p.error_code)
            for t in response.topics for p in t.partitions}


def offset_fetch_request(group_id: str, partitions: Iterable[TopicPartition] | None, *,
                         require_stable: bool = False) -> OffsetFetchRequest:
    """The committed offsets of a group: of `partitions`, or of every partition it has (None)."""
    topics = None if partitions is None else [Topic(name=topic, partitions=numbers)
                                              for topic, numbers in by_topic(partitions).items()]
    return OffsetFetchRequest(groups=[OffsetFetchGroup(group_id=group_id, topics=topics)],
                              require_stable=require_stable)


def fetched_group(response: OffsetFetchResponse, group_id: str) -> OffsetFetchGroupResult:
    """The answer for one group; KafkaError with its error if it has one."""
    for group in response.groups:
        if group.group_id == group_id:
            error = ErrorCode.from_code(group.error_code)
            if error != ErrorCode.NONE:
                raise KafkaError(error, f"cannot fetch the offsets of group {group_id!r}")
            return group
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"the OffsetFetch answer has no group {group_id!r}")


def fetched_offsets(group: OffsetFetchGroupResult) -> tuple[dict[TopicPartition, OffsetAndMetadata | None],
                                                            dict[TopicPartition, ErrorCode]]:
    """A group's committed offsets (None: no offset committed) and the errors of the partitions that have one."""
    offsets: dict[TopicPartition, OffsetAndMetadata | None] = {}
    errors: dict[TopicPartition, ErrorCode] = {}
    for topic in group.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition)
            error = ErrorCode.from_code(p.error_code)
            if error != ErrorCode.NONE:
                errors[tp] = error
            elif p.offset < 0:
                offsets[tp] = None
            else:
                epoch = None if p.leader_epoch == NO_LEADER_EPOCH else p.leader_epoch
                offsets[tp] = OffsetAndMetadata(p.offset, epoch, p.metadata or "")
    return offsets, errors


def _wire_epoch(leader_epoch: int | None) -> int:
    return NO_LEADER_EPOCH if leader_epoch is None else leader_epoch
