"""A consumer's group membership (client/group/) against a stand-in coordinator (tests/unit/fake_group_broker.py):
joining (a member id asked for first), the leader's assignment, following; heartbeats; rejoining on
REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID, finding a moved coordinator; the rebalance
callbacks, under the EAGER protocol and the COOPERATIVE one; commits (synchronous, asynchronous, automatic, before a
rebalance) and their errors; leaving on close (not as a static member), when the application stops polling, and the
session given up when the coordinator goes silent."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from client.assignors import assignors
from client.group.config import GroupConfig
from client.group.consumer_coordinator import CommitFailedError, ConsumerCoordinator
from client.group.member import MemberState
from client.group.offsets import OffsetAndMetadata
from client.group.rebalance_listener import ConsumerRebalanceListener
from protocol.apis.group_offsets import OffsetCommitRequest
from protocol.apis.groups import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition as TP
from tests.polling import eventually
from tests.unit.fake_group_broker import FakeClusterMetadata, FakeGroupBroker

FAST = {"heartbeat_interval_ms": 20, "session_timeout_ms": 400, "retry_backoff_ms": 10, "retry_backoff_max_ms": 50}


class Partitions:
    """The consumer's side, as the coordinator sees it: the assignment, and offsets to commit."""

    def __init__(self) -> None:
        self.held: list[TP] = []
        self.consumed: dict[TP, OffsetAndMetadata] = {}

    def assigned(self) -> list[TP]:
        return list(self.held)

    def assign_from_subscribed(self, partitions: list[TP]) -> None:
        self.held = list(partitions)

    def consumed_offsets(self) -> dict[TP, OffsetAndMetadata]:
        return {tp: o for tp, o in self.consumed.items() if tp in self.held}


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def on_partitions_revoked(self, partitions: list[TP]) -> None:
        self.calls.append(("revoked", [str(tp) for tp in partitions]))

    def on_partitions_assigned(self, partitions: list[TP]) -> None:
        self.calls.append(("assigned", [str(tp) for tp in partitions]))

    def on_partitions_lost(self, partitions: list[TP]) -> None:
        self.calls.append(("lost", [str(tp) for tp in partitions]))


def member(broker: FakeGroupBroker, *, topics: tuple[str, ...] = ("t",), strategy: tuple[str, ...] = ("range",),
           listener: ConsumerRebalanceListener | None = None, **config: Any
           ) -> tuple[ConsumerCoordinator, Partitions]:
    partitions = Partitions()
    group = ConsumerCoordinator(FakeClusterMetadata(broker), GroupConfig("g", **(FAST | config)),
                                assignors(strategy), partitions)
    group.subscribe(topics, listener)
    return group, partitions


async def poll(group: ConsumerCoordinator, ms: float = 2000) -> bool:
    return await group.poll(group._clock() + ms)


async def joined(broker: FakeGroupBroker, **options: Any) -> tuple[ConsumerCoordinator, Partitions, Recorder]:
    """A member that has joined, with a listener recording its callbacks."""
    listener = Recorder()
    group, partitions = member(broker, listener=listener, **options)
    assert await poll(group)
    return group, partitions, listener


async def test_a_first_join_is_asked_for_a_member_id_and_joins_with_it():
    broker = FakeGroupBroker(topics={"t": 3})
    group, partitions = member(broker, strategy=("range", "roundrobin"), max_poll_interval_ms=60000)
    assert await poll(group)
    first, second = broker.sent(JoinGroupRequest)
    assert (first.member_id, second.member_id) == ("", "member-0")
    assert (second.session_timeout_ms, second.rebalance_timeout_ms, second.protocol_type) == (400, 60000, "consumer")
    assert [p.name for p in second.protocols] == ["range", "roundrobin"]
    assert decode_subscription(second.protocols[0].metadata).topics == ("t",)
    assert group.state is MemberState.STABLE and group.generation.member_id == "member-0"
    assert partitions.held == [TP("t", 0), TP("t", 1), TP("t", 2)]
    await group.close()


async def test_the_leader_assigns_every_member_with_the_chosen_assignor():
    other = JoinGroupMember(member_id="other", metadata=encode_subscription(Subscription(("t", "u"))))
    broker = FakeGroupBroker(topics={"t": 4, "u": 2}, other_members=[other])
    group, partitions = member(broker, topics=("t",), strategy=("roundrobin",))
    assert await poll(group)
    [sync] = broker.sent(SyncGroupRequest)
    given = {a.member_id: decode_assignment(a.assignment).partitions for a in sync.assignments}
    assert given == {"member-0": (TP("t", 0), TP("t", 2)),
                     "other": (TP("t", 1), TP("t", 3), TP("u", 0), TP("u", 1))}
    assert partitions.held == [TP("t", 0), TP("t", 2)]
    assert group.is_leader
    await group.close()


async def test_a_follower_sends_no_assignment_and_takes_its_own():
    broker = FakeGroupBroker(topics={"t": 2}, leader="the-leader")
    broker.assignments = {"member-0": encode_assignment(Assignment((TP("t", 1),)))}
    group, partitions, _ = await joined(broker)
    [sync] = broker.sent(SyncGroupRequest)
    assert sync.assignments == [] and sync.protocol_name == "range"
    assert partitions.held == [TP("t", 1)] and not group.is_leader
    await group.close()


async def test_heartbeats_keep_going_between_polls():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, _ = await joined(broker)
    await eventually(lambda: len(broker.sent(HeartbeatRequest)) >= 5, "five heartbeats")
    assert {(h.generation_id, h.member_id) for h in broker.sent(HeartbeatRequest)} == {(1, "member-0")}
    await group.close()


async def test_a_rebalance_seen_in_a_heartbeat_revokes_everything_and_rejoins_with_the_member_id():
    broker = FakeGroupBroker(topics={"t": 2})
    group, partitions, listener = await joined(broker)
    broker.script(HeartbeatRequest, ErrorCode.REBALANCE_IN_PROGRESS)
    await eventually(lambda: group.rejoin_needed_or_pending(), "the rebalance noticed")
    assert await poll(group)
    assert broker.sent(JoinGroupRequest)[-1].member_id == "member-0"
    assert listener.calls == [("assigned", ["t-0", "t-1"]), ("revoked", ["t-0", "t-1"]),
                              ("assigned", ["t-0", "t-1"])]
    assert group.generation.generation_id == 2 and partitions.held == [TP("t", 0), TP("t", 1)]
    await group.close()


async def test_an_unknown_member_loses_its_partitions_and_joins_again_without_an_id():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, listener = await joined(broker)
    broker.script(HeartbeatRequest, ErrorCode.UNKNOWN_MEMBER_ID)
    await eventually(lambda: group.state is MemberState.UNJOINED, "the generation reset")
    assert await poll(group)
    assert [j.member_id for j in broker.sent(JoinGroupRequest)] == ["", "member-0", "", "member-1"]
    assert listener.calls == [("assigned", ["t-0"]), ("lost", ["t-0"]), ("assigned", ["t-0"])]
    await group.close()


async def test_an_illegal_generation_from_sync_group_rejoins_keeping_the_member_id():
    broker = FakeGroupBroker(topics={"t": 1})
    broker.script(SyncGroupRequest, ErrorCode.ILLEGAL_GENERATION)
    group, partitions, _ = await joined(broker)
    assert [j.member_id for j in broker.sent(JoinGroupRequest)] == ["", "member-0", "member-0"]
    assert partitions.held == [TP("t", 0)] and group.generation.generation_id == 2
    await group.close()


async def test_a_moved_coordinator_is_looked_for_again():
    broker = FakeGroupBroker(topics={"t": 1})
    broker.script(JoinGroupRequest, ErrorCode.NOT_COORDINATOR)
    broker.script(FindCoordinatorRequest, None, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    group, _, _ = await joined(broker)
    assert len(broker.sent(FindCoordinatorRequest)) == 3
    assert group.state is MemberState.STABLE
    await group.close()


@pytest.mark.parametrize("error", [ErrorCode.INVALID_SESSION_TIMEOUT, ErrorCode.GROUP_MAX_SIZE_REACHED,
                                   ErrorCode.INCONSISTENT_GROUP_PROTOCOL])
async def test_errors_retrying_cannot_cure_reach_the_application(error):
    broker = FakeGroupBroker(topics={"t": 1})
    broker.script(JoinGroupRequest, JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m"), error)
    group, _ = member(broker)
    with pytest.raises(KafkaError) as raised:
        await poll(group)
    assert raised.value.code == error
    await group.close()


async def test_a_poll_gives_up_waiting_for_the_join_at_its_deadline_and_the_next_one_completes_it():
    broker = FakeGroupBroker(topics={"t": 1})
    release = asyncio.Event()

    async def held_join(request: JoinGroupRequest) -> JoinGroupResponse:
        await release.wait()
        return broker._join(request)

    broker.script(JoinGroupRequest, JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m"),
                  lambda request: held_join(request))
    group, partitions = member(broker)
    assert not await poll(group, 100)
    assert group.state is MemberState.PREPARING_REBALANCE
    release.set()
    assert await poll(group)
    assert len(broker.sent(JoinGroupRequest)) == 2 and partitions.held == [TP("t", 0)]
    await group.close()


async def test_commits_carry_the_generation_and_the_offsets_as_given():
    broker = FakeGroupBroker(topics={"t": 2})
    group, _, _ = await joined(broker, enable_auto_commit=False)
    await group.commit_sync({TP("t", 0): OffsetAndMetadata(5, 3, "meta"), TP("t", 1): OffsetAndMetadata(7)},
                            group._clock() + 1000)
    [commit] = broker.sent(OffsetCommitRequest)
    assert (commit.group_id, commit.generation_id, commit.member_id) == ("g", 1, "member-0")
    assert [(p.partition, p.offset, p.leader_epoch, p.metadata) for p in commit.topics[0].partitions] == [
        (0, 5, 3, "meta"), (1, 7, -1, "")]
    assert await group.fetch_committed_offsets([TP("t", 0), TP("t", 1), TP("t", 2)], group._clock() + 1000) == {
        TP("t", 0): OffsetAndMetadata(5, 3, "meta"), TP("t", 1): OffsetAndMetadata(7), TP("t", 2): None}
    await group.close()


async def test_retriable_commit_errors_are_retried_and_the_others_raised():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, _ = await joined(broker, enable_auto_commit=False)
    broker.script(OffsetCommitRequest, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)
    await group.commit_sync({TP("t", 0): OffsetAndMetadata(1)}, group._clock() + 2000)
    assert len(broker.sent(OffsetCommitRequest)) == 3
    broker.script(OffsetCommitRequest, ErrorCode.OFFSET_METADATA_TOO_LARGE)
    with pytest.raises(KafkaError, match="OFFSET_METADATA_TOO_LARGE"):
        await group.commit_sync({TP("t", 0): OffsetAndMetadata(2)}, group._clock() + 2000)
    await group.close()


async def test_a_commit_of_a_member_dropped_from_its_generation_fails_and_rejoins():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, _ = await joined(broker, enable_auto_commit=False)
    broker.script(OffsetCommitRequest, ErrorCode.ILLEGAL_GENERATION)
    with pytest.raises(CommitFailedError):
        await group.commit_sync({TP("t", 0): OffsetAndMetadata(1)}, group._clock() + 1000)
    assert group.state is MemberState.UNJOINED and group.rejoin_needed_or_pending()
    with pytest.raises(CommitFailedError):  # not in a generation any more
        await group.commit_sync({TP("t", 0): OffsetAndMetadata(1)}, group._clock() + 1000)
    await group.close()


async def test_an_asynchronous_commit_calls_back_with_its_outcome():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, _ = await joined(broker, enable_auto_commit=False)
    outcomes: list[tuple[dict, Exception | None]] = []
    broker.script(OffsetCommitRequest, ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    first = group.commit_async({TP("t", 0): OffsetAndMetadata(3)}, lambda o, e: outcomes.append((dict(o), e)))
    second = group.commit_async({TP("t", 0): OffsetAndMetadata(4)}, lambda o, e: outcomes.append((dict(o), e)))
    await asyncio.gather(first, second, return_exceptions=True)
    assert [(o[TP("t", 0)].offset, e and e.code) for o, e in outcomes] == [
        (3, None), (4, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    await group.close()


async def test_consumed_offsets_are_committed_every_interval_and_before_a_rebalance():
    broker = FakeGroupBroker(topics={"t": 1})
    group, partitions, _ = await joined(broker, auto_commit_interval_ms=50)
    partitions.consumed = {TP("t", 0): OffsetAndMetadata(10, 0)}
    await asyncio.sleep(0.06)
    assert await poll(group)
    await eventually(lambda: broker.committed.get(("g", TP("t", 0))), "the automatic commit")
    partitions.consumed = {TP("t", 0): OffsetAndMetadata(12, 0)}
    broker.script(HeartbeatRequest, ErrorCode.REBALANCE_IN_PROGRESS)
    await eventually(lambda: group.rejoin_needed_or_pending(), "the rebalance noticed")
    assert await poll(group)
    kinds = [type(r).__name__ for r in broker.requests if not isinstance(r, HeartbeatRequest)]
    assert kinds[-4:] == ["OffsetCommitRequest", "JoinGroupRequest", "MetadataRequest", "SyncGroupRequest"]
    assert broker.committed[("g", TP("t", 0))].offset == 12
    await group.close()


async def test_close_commits_gives_up_the_partitions_and_leaves():
    broker = FakeGroupBroker(topics={"t": 1})
    group, partitions, listener = await joined(broker)
    partitions.consumed = {TP("t", 0): OffsetAndMetadata(4)}
    await group.close()
    kinds = [type(r).__name__ for r in broker.requests if not isinstance(r, HeartbeatRequest)]
    assert kinds[-2:] == ["OffsetCommitRequest", "LeaveGroupRequest"]
    assert broker.sent(LeaveGroupRequest)[0].members[0].member_id == "member-0"
    assert listener.calls[-1] == ("revoked", ["t-0"]) and partitions.held == []


async def test_a_static_member_joins_with_its_instance_id_and_does_not_leave_on_close():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, _ = await joined(broker, group_instance_id="instance-1")
    assert [(j.member_id, j.group_instance_id) for j in broker.sent(JoinGroupRequest)] == [("", "instance-1")]
    await group.close()
    assert broker.sent(LeaveGroupRequest) == []


async def test_a_member_that_stops_polling_leaves_the_group_and_rejoins_at_its_next_poll():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, listener = await joined(broker, max_poll_interval_ms=150)
    await eventually(lambda: broker.sent(LeaveGroupRequest), "the member leaving")
    assert group.state is MemberState.UNJOINED
    assert await poll(group)
    assert listener.calls == [("assigned", ["t-0"]), ("lost", ["t-0"]), ("assigned", ["t-0"])]
    await group.close()


async def test_a_silent_coordinator_ends_the_session_and_is_looked_for_again():
    broker = FakeGroupBroker(topics={"t": 1})
    group, _, _ = await joined(broker)
    broker.down = True
    await eventually(lambda: group.coordinator is None, "the coordinator given up")
    broker.down = False
    finds = len(broker.sent(FindCoordinatorRequest))
    await eventually(lambda: group.coordinator is not None, "the coordinator found again")
    assert len(broker.sent(FindCoordinatorRequest)) > finds
    await group.close()


async def test_a_failing_callback_is_raised_once_the_assignment_is_applied():
    class Failing(ConsumerRebalanceListener):
        def on_partitions_assigned(self, partitions: list[TP]) -> None:
            raise RuntimeError("application bug")

    broker = FakeGroupBroker(topics={"t": 1})
    group, partitions = member(broker, listener=Failing())
    with pytest.raises(RuntimeError, match="application bug"):
        await poll(group)
    assert partitions.held == [TP("t", 0)] and group.state is MemberState.STABLE
    await group.close()


async def test_the_leader_rejoins_when_its_topics_gain_partitions_and_everyone_when_the_subscription_changes():
    broker = FakeGroupBroker(topics={"t": 2, "u": 1})
    group, partitions, _ = await joined(broker, metadata_max_age_ms=0)
    broker.topics["t"] = 3
    assert await poll(group)
    assert partitions.held == [TP("t", 0), TP("t", 1), TP("t", 2)] and group.generation.generation_id == 2
    group.subscribe(["t", "u"])
    assert await poll(group)
    assert decode_subscription(broker.sent(JoinGroupRequest)[-1].protocols[0].metadata).topics == ("t", "u")
    assert partitions.held == [TP("t", 0), TP("t", 1), TP("t", 2), TP("u", 0)]
    await group.close()


async def test_a_cooperative_member_gives_up_only_the_partitions_moving_away_then_rejoins():
    broker = FakeGroupBroker(topics={"t": 4})
    group, partitions, listener = await joined(broker, strategy=("cooperative-sticky",))
    newcomer = Subscription(("t",), struct.pack(">i", -1))
    broker.other_members = [JoinGroupMember(member_id="newcomer", metadata=encode_subscription(newcomer))]
    broker.script(HeartbeatRequest, ErrorCode.REBALANCE_IN_PROGRESS)
    await eventually(lambda: group.rejoin_needed_or_pending(), "the rebalance noticed")
    assert await poll(group)
    first, second = broker.sent(SyncGroupRequest)[1:]
    owned = decode_subscription(broker.sent(JoinGroupRequest)[2].protocols[0].metadata).owned_partitions
    assert owned == (TP("t", 0), TP("t", 1), TP("t", 2), TP("t", 3))
    assert {a.member_id: decode_assignment(a.assignment).partitions for a in first.assignments} == {
        "member-0": (TP("t", 0), TP("t", 1)), "newcomer": ()}
    assert {a.member_id: decode_assignment(a.assignment).partitions for a in second.assignments} == {
        "member-0": (TP("t", 0), TP("t", 1)), "newcomer": (TP("t", 2), TP("t", 3))}
    assert listener.calls == [("assigned", ["t-0", "t-1", "t-2", "t-3"]), ("revoked", ["t-2", "t-3"]),
                              ("assigned", []), ("assigned", [])]
    assert partitions.held == [TP("t", 0), TP("t", 1)] and group.generation.generation_id == 3
    await group.close()
