"""The admin client's group calls (client/admin.py) against a stand-in broker (tests/unit/fake_group_broker.py):
list, describe (members' assignments read as the consumer protocol's) and delete groups, read, alter and delete
their committed offsets, and offsets by time; a coordinator that moves or is loading is found again and asked
again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from client.admin import Admin, AdminError
from client.group.offsets import OffsetAndMetadata
from protocol.apis.group_admin import (
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from protocol.apis.group_offsets import OffsetCommitRequest, OffsetDeleteRequest, OffsetDeleteResponse, PartitionResult
from protocol.apis.groups import FindCoordinatorRequest
from protocol.apis.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from protocol.apis.shapes import Topic
from protocol.consumer_protocol import Assignment, encode_assignment
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition as TP
from tests.unit.fake_group_broker import BOOTSTRAP, Committed, FakeGroupBroker, use_fake_broker


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGroupBroker]:
    fake = FakeGroupBroker(topics={"t": 2})
    use_fake_broker(monkeypatch, "client.admin", fake)
    yield fake


def admin() -> Admin:
    return Admin(BOOTSTRAP, retry_backoff_ms=10)


def stable_group(request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    member = DescribedGroupMember(member_id="m-1", client_id="app", client_host="/127.0.0.1",
                                  assignment=encode_assignment(Assignment((TP("t", 0), TP("t", 1)))))
    return DescribeGroupsResponse(groups=[
        DescribedGroup(group_id=g, error_code=ErrorCode.NONE, state="Stable", protocol_type="consumer",
                       protocol="range", members=[member]) if g == "g" else
        DescribedGroup(group_id=g, error_code=ErrorCode.NONE, state="Dead") for g in request.groups])


async def test_describe_reads_members_assignments_and_asks_again_while_the_coordinator_loads(broker):
    broker.script(DescribeGroupsRequest, lambda r: DescribeGroupsResponse(groups=[
        DescribedGroup(group_id=g, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) for g in r.groups]),
        stable_group)
    async with admin() as a:
        described = await a.describe_groups(["g", "gone"])
    assert described["g"].state == "Stable" and described["g"].protocol == "range"
    [m] = described["g"].members
    assert (m.member_id, m.client_id, m.host, m.assignment) == ("m-1", "app", "/127.0.0.1", (TP("t", 0), TP("t", 1)))
    assert described["gone"].state == "Dead" and described["gone"].members == ()
    assert described["g"].coordinator.node_id == 1
    assert len(broker.sent(FindCoordinatorRequest)) == 2


async def test_a_coordinator_not_found_yet_is_looked_for_again(broker):
    broker.script(FindCoordinatorRequest, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    broker.script(DescribeGroupsRequest, stable_group)
    async with admin() as a:
        assert (await a.describe_groups(["g"]))["g"].state == "Stable"
    broker.script(FindCoordinatorRequest, *[ErrorCode.COORDINATOR_NOT_AVAILABLE] * 100)
    async with admin() as a:
        with pytest.raises(AdminError, match="REQUEST_TIMED_OUT"):
            await a.describe_groups(["g"], timeout_ms=100)


async def test_list_groups_asks_every_broker_with_the_states_filter(broker):
    broker.script(ListGroupsRequest, lambda r: ListGroupsResponse(error_code=ErrorCode.NONE, groups=[
        ListedGroup(group_id="b", protocol_type="consumer", state="Empty"),
        ListedGroup(group_id="a", protocol_type="consumer", state="Stable")]))
    async with admin() as a:
        listed = await a.list_groups(["stable"])
    assert [(g.group_id, g.state, g.coordinator_id) for g in listed] == [("a", "Stable", 1), ("b", "Empty", 1)]
    assert broker.sent(ListGroupsRequest)[0].states == ["stable"]


async def test_offsets_are_read_altered_from_outside_the_group_and_deleted(broker):
    broker.committed[("g", TP("t", 0))] = Committed(3, 1, "m")
    async with admin() as a:
        assert await a.list_group_offsets("g") == {TP("t", 0): OffsetAndMetadata(3, 1, "m")}
        assert await a.list_group_offsets("g", [("t", 1)]) == {}
        await a.alter_group_offsets("g", {("t", 1): 5})
        [commit] = broker.sent(OffsetCommitRequest)
        assert (commit.generation_id, commit.member_id) == (-1, "")
        assert broker.committed[("g", TP("t", 1))].offset == 5
        broker.script(OffsetCommitRequest, ErrorCode.UNKNOWN_MEMBER_ID)
        with pytest.raises(AdminError, match="UNKNOWN_MEMBER_ID"):
            await a.alter_group_offsets("g", {("t", 1): 6})
        subscribed = PartitionResult(partition=0, error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
        broker.script(OffsetDeleteRequest, lambda r: OffsetDeleteResponse(
            error_code=ErrorCode.NONE, topics=[Topic(name="t", partitions=[subscribed])]))
        assert await a.delete_group_offsets("g", [("t", 0)]) == (
            ErrorCode.NONE, {TP("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC})


async def test_delete_groups_gives_each_groups_outcome(broker):
    broker.script(DeleteGroupsRequest, lambda r: DeleteGroupsResponse(results=[
        DeletedGroup(group_id="a", error_code=ErrorCode.NONE),
        DeletedGroup(group_id="b", error_code=ErrorCode.NON_EMPTY_GROUP)]))
    async with admin() as a:
        assert await a.delete_groups(["a", "b"]) == {"a": ErrorCode.NONE, "b": ErrorCode.NON_EMPTY_GROUP}


async def test_offsets_by_time_leave_out_partitions_that_do_not_exist(broker):
    broker.append(TP("t", 1), b"x", b"y")
    async with admin() as a:
        assert await a.list_offsets([("t", 0), ("t", 1), ("t", 7), ("nope", 0)], LATEST_TIMESTAMP) == {
            TP("t", 0): 0, TP("t", 1): 2}
        assert await a.list_offsets([("t", 1)], EARLIEST_TIMESTAMP) == {TP("t", 1): 0}
