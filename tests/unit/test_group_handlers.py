"""The group apis' handlers over stand-ins for the coordinator and the metadata cache: what KafkaApis answers
before and around the coordinator (transaction keys, unknown key types, topics that do not exist, a group that
cannot be read, the authorized operations asked for)."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable
from dataclasses import replace

from broker.apis import group_admin, group_offsets, groups
from broker.coordinator.group.requests import CommitRequest
from broker.coordinator.group.results import (
    CommitResult,
    DeleteOffsetsResult,
    FetchedOffset,
    GroupDescription,
    OffsetFetchResult,
)
from broker.coordinator.offsets_topic import CoordinatorNode
from broker.network import Request, Response
from protocol.apis.group_admin import DescribeGroupsRequest
from protocol.apis.group_offsets import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchGroup,
    OffsetFetchRequest,
    offset_fetch_group_error,
)
from protocol.apis.groups import CoordinatorType, FindCoordinatorRequest
from protocol.apis.metadata import AUTHORIZED_OPERATIONS_OMITTED
from protocol.apis.shapes import Topic
from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

REQUEST = Request(RequestHeader(api_key=0, api_version=0, correlation_id=1, client_id="c"), None, "10.1.2.3:4567-8",
                  10, "EXTERNAL")
KNOWN = TopicPartition("orders", 0)


class Locator:
    def coordinator(self, group_id: str, listener_name: str) -> CoordinatorNode:
        return CoordinatorNode(ErrorCode.NONE, 2, f"{listener_name}-host", 9092)


class Coordinator:
    """Answers as a coordinator would; remembers what it was asked."""

    def __init__(self) -> None:
        self.commits: list[CommitRequest] = []
        self.deletions: list[list[TopicPartition]] = []

    def commit(self, request: CommitRequest) -> asyncio.Future[CommitResult]:
        self.commits.append(request)
        answer: asyncio.Future[CommitResult] = asyncio.get_running_loop().create_future()
        answer.set_result(CommitResult(dict.fromkeys(request.offsets, ErrorCode.NONE)))
        return answer

    def fetch_offsets(self, group_id: str, partitions: Collection[TopicPartition] | None,
                      require_stable: bool) -> OffsetFetchResult:
        if group_id == "loading":
            return OffsetFetchResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return OffsetFetchResult(ErrorCode.NONE, {KNOWN: FetchedOffset(7, 1, "m")})

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> DeleteOffsetsResult:
        self.deletions.append(list(partitions))
        return DeleteOffsetsResult(ErrorCode.NONE, {KNOWN: ErrorCode.NONE})

    def describe(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        return [GroupDescription(group_id, ErrorCode.NONE, "Empty", "consumer") for group_id in group_ids]


class Partitions:
    def contains(self, tp: TopicPartition) -> bool:
        return tp == KNOWN


async def answer(handled: object) -> object:
    if isinstance(handled, asyncio.Future):
        handled = await handled
    assert isinstance(handled, Response)
    return handled.body


async def test_find_coordinator_answers_group_keys_and_refuses_transaction_keys_and_unknown_types():
    found = await answer(await groups.handle_find_coordinator(Locator(), FindCoordinatorRequest(keys=["a", "b"]),
                                                              REQUEST))
    assert [(c.key, c.node_id, c.host, c.error_code) for c in found.coordinators] == [
        ("a", 2, "EXTERNAL-host", ErrorCode.NONE), ("b", 2, "EXTERNAL-host", ErrorCode.NONE)]
    transactional = await answer(await groups.handle_find_coordinator(
        Locator(), FindCoordinatorRequest(key_type=CoordinatorType.TRANSACTION, keys=["t"]), REQUEST))
    assert [(c.node_id, c.error_code) for c in transactional.coordinators] == [
        (-1, ErrorCode.COORDINATOR_NOT_AVAILABLE)]
    unknown = await answer(await groups.handle_find_coordinator(
        Locator(), FindCoordinatorRequest(key_type=7, keys=["x"]), REQUEST))
    assert [c.error_code for c in unknown.coordinators] == [ErrorCode.INVALID_REQUEST]


async def test_find_coordinator_answers_a_share_group_key_only_from_v6_and_without_a_coordinator():
    share = FindCoordinatorRequest(key_type=CoordinatorType.SHARE, keys=["s"])
    before = replace(REQUEST, header=replace(REQUEST.header, api_version=5))
    at_v6 = replace(REQUEST, header=replace(REQUEST.header, api_version=6))
    refused = await answer(await groups.handle_find_coordinator(Locator(), share, before))
    assert [c.error_code for c in refused.coordinators] == [ErrorCode.INVALID_REQUEST]
    found = await answer(await groups.handle_find_coordinator(Locator(), share, at_v6))
    assert [(c.key, c.node_id, c.error_code) for c in found.coordinators] == [
        ("s", -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)]


async def test_commits_to_topics_that_do_not_exist_never_reach_the_coordinator():
    coordinator = Coordinator()
    request = OffsetCommitRequest(group_id="g", topics=[
        Topic(name="orders", partitions=[OffsetCommitPartition(partition=0, offset=5),
                                         OffsetCommitPartition(partition=9, offset=5)]),
        Topic(name="missing", partitions=[OffsetCommitPartition(partition=0, offset=5)])])
    response = await answer(await group_offsets.handle_offset_commit(coordinator, Partitions(), request, REQUEST))
    assert [(t.name, [(p.partition, p.error_code) for p in t.partitions]) for t in response.topics] == [
        ("orders", [(0, ErrorCode.NONE), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("missing", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
    assert [list(c.offsets) for c in coordinator.commits] == [[KNOWN]]
    only_unknown = OffsetCommitRequest(group_id="g", topics=[
        Topic(name="missing", partitions=[OffsetCommitPartition(partition=0, offset=5)])])
    await group_offsets.handle_offset_commit(coordinator, Partitions(), only_unknown, REQUEST)
    assert len(coordinator.commits) == 1


async def test_offset_fetch_answers_each_group_and_a_group_that_cannot_be_read_with_its_error():
    request = OffsetFetchRequest(groups=[OffsetFetchGroup(group_id="g", topics=[Topic(name="orders", partitions=[0])]),
                                         OffsetFetchGroup(group_id="loading",
                                                          topics=[Topic(name="orders", partitions=[0])])])
    response = await answer(await group_offsets.handle_offset_fetch(Coordinator(), request, REQUEST))
    fetched, loading = response.groups
    assert [(p.partition, p.offset, p.leader_epoch, p.metadata) for p in fetched.topics[0].partitions] == [
        (0, 7, 1, "m")]
    assert loading == offset_fetch_group_error(request.groups[1], ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


async def test_offset_delete_refuses_topics_that_do_not_exist():
    coordinator = Coordinator()
    request = OffsetDeleteRequest(group_id="g", topics=[Topic(name="orders", partitions=[0]),
                                                        Topic(name="missing", partitions=[1])])
    response = await answer(await group_offsets.handle_offset_delete(coordinator, Partitions(), request, REQUEST))
    assert [(t.name, [(p.partition, p.error_code) for p in t.partitions]) for t in response.topics] == [
        ("orders", [(0, ErrorCode.NONE)]), ("missing", [(1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
    assert coordinator.deletions == [[KNOWN]]


async def test_describe_groups_gives_every_operation_on_a_group_only_when_asked():
    asked = await answer(await group_admin.handle_describe_groups(
        Coordinator(), DescribeGroupsRequest(groups=["g"], include_authorized_operations=True), REQUEST))
    not_asked = await answer(await group_admin.handle_describe_groups(
        Coordinator(), DescribeGroupsRequest(groups=["g"]), REQUEST))
    assert asked.groups[0].authorized_operations == 0b1_0100_1000  # READ (3), DELETE (6), DESCRIBE (8)
    assert not_asked.groups[0].authorized_operations == AUTHORIZED_OPERATIONS_OMITTED


def test_a_clients_host_is_its_address_as_kafka_writes_it():
    assert REQUEST.client_host == "/10.1.2.3"
