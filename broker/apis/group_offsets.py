"""A group's committed offsets: OffsetCommit, OffsetFetch and OffsetDelete, handed to the group coordinator. As
Kafka's KafkaApis does, partitions of topics that do not exist are UNKNOWN_TOPIC_OR_PARTITION before the coordinator
sees a commit or a deletion; a commit is answered once its offsets are written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Protocol, TypeVar

from broker.apis.handler import Handled, respond
from broker.coordinator.group.requests import CommitRequest, OffsetToCommit
from broker.coordinator.group.results import CommitResult, DeleteOffsetsResult, OffsetFetchResult
from broker.network import Request, Response
from protocol.apis.group_offsets import (
    FetchedOffset,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResult,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    offset_fetch_group_error,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

P = TypeVar("P")


class GroupOffsets(Protocol):
    """The group coordinator's part in committed offsets."""

    def commit(self, request: CommitRequest) -> asyncio.Future[CommitResult]: ...

    def fetch_offsets(self, group_id: str, partitions: Collection[TopicPartition] | None,
                      require_stable: bool) -> OffsetFetchResult: ...

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> DeleteOffsetsResult: ...


class Partitions(Protocol):
    """Which partitions exist (the metadata cache)."""

    def contains(self, tp: TopicPartition) -> bool: ...


def _by_topic(tps: Iterable[TopicPartition], entry: Callable[[TopicPartition], P]) -> list[Topic[P]]:
    """One entry per partition, grouped by topic in the order topics first appear."""
    topics: dict[str, list[P]] = {}
    for tp in tps:
        topics.setdefault(tp.topic, []).append(entry(tp))
    return [Topic(name=name, partitions=entries) for name, entries in topics.items()]


def _partition_results(tps: Iterable[TopicPartition], errors: Mapping[TopicPartition, ErrorCode]
                       ) -> list[Topic[PartitionResult]]:
    return _by_topic(tps, lambda tp: PartitionResult(partition=tp.partition, error_code=errors[tp]))


async def handle_offset_commit(coordinator: GroupOffsets, partitions: Partitions, body: OffsetCommitRequest,
                               _request: Request) -> Handled:
    asked = [TopicPartition(t.name, p.partition) for t in body.topics for p in t.partitions]
    unknown = dict.fromkeys((tp for tp in asked if not partitions.contains(tp)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    offsets = {TopicPartition(t.name, p.partition): OffsetToCommit(
        offset=p.offset, leader_epoch=p.leader_epoch, metadata=p.metadata, commit_timestamp=p.commit_timestamp,
        retention_ms=body.retention_time_ms) for t in body.topics for p in t.partitions}
    known = {tp: offset for tp, offset in offsets.items() if tp not in unknown}

    def answer(result: CommitResult) -> OffsetCommitResponse:
        return OffsetCommitResponse(topics=_partition_results(asked, {**result.errors, **unknown}))

    if not known:
        return Response(answer(CommitResult({})))
    return respond(coordinator.commit(CommitRequest(
        group_id=body.group_id, offsets=known, generation_id=body.generation_id, member_id=body.member_id,
        group_instance_id=body.group_instance_id)), answer)


def _fetched(group: OffsetFetchGroup, result: OffsetFetchResult) -> OffsetFetchGroupResult:
    if result.error is not ErrorCode.NONE:
        return offset_fetch_group_error(group, result.error)

    def entry(tp: TopicPartition) -> FetchedOffset:
        fetched = result.partitions[tp]
        return FetchedOffset(partition=tp.partition, offset=fetched.offset, leader_epoch=fetched.leader_epoch,
                             metadata=fetched.metadata, error_code=fetched.error)

    return OffsetFetchGroupResult(group_id=group.group_id, topics=_by_topic(result.partitions, entry))


async def handle_offset_fetch(coordinator: GroupOffsets, body: OffsetFetchRequest, _request: Request) -> Handled:
    """Each group's committed offsets: of the partitions named, or of all it has (null topics)."""
    groups = []
    for group in body.groups:
        asked = None if group.topics is None else [TopicPartition(t.name, p) for t in group.topics
                                                   for p in t.partitions]
        groups.append(_fetched(group, coordinator.fetch_offsets(group.group_id, asked, body.require_stable)))
    return Response(OffsetFetchResponse(groups=groups))


async def handle_offset_delete(coordinator: GroupOffsets, partitions: Partitions, body: OffsetDeleteRequest,
                               _request: Request) -> Handled:
    asked = [TopicPartition(t.name, p) for t in body.topics for p in t.partitions]
    errors = dict.fromkeys((tp for tp in asked if not partitions.contains(tp)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    result = coordinator.delete_offsets(body.group_id, [tp for tp in asked if tp not in errors])
    if result.error is not ErrorCode.NONE:
        return Response(OffsetDeleteResponse(error_code=result.error))
    return Response(OffsetDeleteResponse(error_code=ErrorCode.NONE,
                                         topics=_partition_results(asked, {**result.partitions, **errors})))
