"""Who may join, sync, heartbeat and leave a classic group, and the errors the others get, driven through the pure
coordinator with a fake clock (tests/unit/group_harness.py)."""

from __future__ import annotations

import pytest

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.requests import LeavingMember
from broker.coordinator.group.results import JoinResult, LeaveResult, LeftMember, SyncResult
from broker.coordinator.group.states import GroupState
from protocol.consumer_offsets import decode_group_metadata_value, partition_for
from protocol.errors import ErrorCode
from tests.unit.group_harness import GROUP, NO_DELAY, RANGE, SESSION_MS, FakeShell, form_group

NONE = ErrorCode.NONE


# ------------------------------------------------------------------------------------------------ joining


def test_a_dynamic_member_of_join_v4_or_later_is_given_its_id_first():
    shell = FakeShell()
    first = shell.join(client_id="consumer-1", version=4)
    assert shell.answer(first) == JoinResult(ErrorCode.MEMBER_ID_REQUIRED, "consumer-1-uuid1")
    second = shell.join("consumer-1-uuid1", client_id="consumer-1", version=4)
    shell.advance(0)
    assert shell.answer(second).error is NONE


def test_a_dynamic_member_of_join_v3_joins_at_once():
    shell = FakeShell()
    ticket = shell.join(client_id="old", version=3)
    shell.advance(0)
    assert shell.answer(ticket).member_id == "old-uuid1"
    assert shell.answer(ticket).error is NONE


def test_a_member_id_the_coordinator_does_not_know_is_refused():
    shell = FakeShell()
    assert shell.answer(shell.join("made-up")) == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "made-up")
    assert shell.coordinator.group(GROUP) is None  # no group is made for it
    form_group(shell, "a")
    assert shell.answer(shell.join("made-up")) == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "made-up")


@pytest.mark.parametrize(("session_ms", "error"), [
    (5999, ErrorCode.INVALID_SESSION_TIMEOUT),
    (6000, ErrorCode.MEMBER_ID_REQUIRED),
    (1_800_000, ErrorCode.MEMBER_ID_REQUIRED),
    (1_800_001, ErrorCode.INVALID_SESSION_TIMEOUT),
])
def test_session_timeouts_must_be_within_the_brokers_bounds(session_ms, error):
    shell = FakeShell()
    assert shell.answer(shell.join(session_ms=session_ms)).error is error


def test_session_timeout_bounds_are_settings():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=100,
                                  max_session_timeout_ms=200))
    assert shell.answer(shell.join(session_ms=99)).error is ErrorCode.INVALID_SESSION_TIMEOUT
    assert shell.answer(shell.join(session_ms=150)).error is ErrorCode.MEMBER_ID_REQUIRED


@pytest.mark.parametrize(("protocol_type", "protocols"), [("", RANGE), ("consumer", ())])
def test_a_first_member_needs_a_protocol_type_and_protocols(protocol_type, protocols):
    shell = FakeShell()
    ticket = shell.join(protocol_type=protocol_type, protocols=protocols)
    assert shell.answer(ticket) == JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")


@pytest.mark.parametrize(("protocol_type", "protocols"), [
    ("connect", RANGE),  # another protocol type
    ("consumer", (("roundrobin", b""),)),  # no protocol in common
])
def test_later_members_must_share_the_protocol_type_and_a_protocol(protocol_type, protocols):
    shell = FakeShell()
    form_group(shell, "a")
    ticket = shell.join(protocol_type=protocol_type, protocols=protocols)
    assert shell.answer(ticket) == JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    assert shell.answer(shell.join(protocols=(("roundrobin", b""), ("range", b"")))).error is \
        ErrorCode.MEMBER_ID_REQUIRED


def test_group_max_size():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, max_size=2))
    (_, b), _ = form_group(shell, "a", "b")
    refused = shell.join(client_id="c")
    assert shell.answer(refused) == JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    assert shell.coordinator.group(GROUP).size == 2
    assert shell.answer(shell.join(b, client_id="b")).error is NONE  # known members still may


def test_group_max_size_while_preparing_counts_the_members_that_rejoined():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, max_size=2))
    (a, b), _ = form_group(shell, "a", "b")
    shell.join(a, client_id="a", protocols=(("range", b"v2"),))
    c = shell.join_new("c")  # one member has rejoined: room for c
    late = shell.join(b, client_id="b")  # two have joined: b, which had not rejoined yet, is dropped
    assert shell.answer(late) == JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    assert list(shell.coordinator.group(GROUP).members) == [a, c]
    assert shell.coordinator.group(GROUP).state is GroupState.COMPLETING_REBALANCE


# ------------------------------------------------------------------------------------------------ static members


def _static_group(shell: FakeShell, version: int = 9) -> tuple[str, str, int]:
    """Static members i-1 (the leader) and i-2 form a Stable group; returns their member ids and the generation."""
    t1 = shell.join(instance="i-1", client_id="c1", version=version)
    t2 = shell.join(instance="i-2", client_id="c2", version=version)
    shell.advance(0)
    m1, m2 = shell.answer(t1).member_id, shell.answer(t2).member_id
    generation = shell.answer(t1).generation_id
    s2 = shell.sync(m2, generation, instance="i-2")
    shell.sync(m1, generation, instance="i-1", assignments={m1: b"one", m2: b"two"})
    shell.complete_appends()
    assert shell.answer(s2) == SyncResult(NONE, "consumer", "range", b"two")
    return m1, m2, generation


def test_a_static_member_joins_without_being_asked_for_its_id():
    shell = FakeShell()
    m1, m2, _ = _static_group(shell)
    assert (m1, m2) == ("i-1-uuid1", "i-2-uuid2")  # group.instance.id, "-", a UUID
    assert shell.coordinator.group(GROUP).static_members == {"i-1": m1, "i-2": m2}


def test_a_static_follower_rejoining_replaces_its_old_member_id_without_a_rebalance():
    shell = FakeShell()
    m1, m2, generation = _static_group(shell)
    rejoin = shell.join(instance="i-2", client_id="c2")
    assert shell.answer(rejoin) is None  # until the group is written with the new id
    [(_, value)] = shell.complete_appends()
    new_id = shell.answer(rejoin).member_id
    assert new_id == "i-2-uuid3"
    assert shell.answer(rejoin) == JoinResult(NONE, new_id, generation, "consumer", "range", m1)
    assert [m.member_id for m in decode_group_metadata_value(value).members] == [m1, new_id]
    group = shell.coordinator.group(GROUP)
    assert group.state is GroupState.STABLE and group.generation_id == generation
    assert group.get(new_id).assignment == b"two"  # it keeps its assignment
    assert shell.heartbeat(m2, generation, instance="i-2") is ErrorCode.FENCED_INSTANCE_ID
    assert shell.heartbeat(new_id, generation, instance="i-2") is NONE
    assert shell.answer(shell.sync(new_id, generation, instance="i-2")).assignment == b"two"


@pytest.mark.parametrize(("version", "leader_id", "skip_assignment"), [(9, "i-1-uuid3", True),
                                                                        (8, "i-1-uuid1", False)])
def test_a_static_leader_rejoining_is_told_whether_to_skip_the_assignment(version, leader_id, skip_assignment):
    shell = FakeShell()
    _, _, _ = _static_group(shell)
    rejoin = shell.join(instance="i-1", client_id="c1", version=version)
    shell.complete_appends()
    result = shell.answer(rejoin)
    assert (result.member_id, result.leader_id, result.skip_assignment) == ("i-1-uuid3", leader_id, skip_assignment)
    assert len(result.members) == (2 if skip_assignment else 0)  # v9: it leads, so it sees the members
    assert shell.coordinator.group(GROUP).leader_id == "i-1-uuid3"


def test_a_static_rejoin_whose_write_fails_restores_the_old_member_id():
    shell = FakeShell()
    m1, m2, generation = _static_group(shell)
    rejoin = shell.join(instance="i-2", client_id="c2", session_ms=20_000)
    shell.complete_appends(ErrorCode.NOT_ENOUGH_REPLICAS)
    assert shell.answer(rejoin) == JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, "", generation, "consumer",
                                              "range", m1)
    group = shell.coordinator.group(GROUP)
    assert group.static_members["i-2"] == m2
    assert group.get(m2).session_timeout_ms == SESSION_MS
    assert shell.heartbeat(m2, generation, instance="i-2") is NONE


def test_a_static_member_rejoining_with_another_protocol_choice_rebalances():
    shell = FakeShell()
    _, _, generation = _static_group(shell)
    both = (("roundrobin", b""), ("range", b""))
    first = shell.join(instance="i-1", client_id="c1", protocols=both)  # range is still the only choice
    assert shell.coordinator.group(GROUP).state is GroupState.STABLE
    second = shell.join(instance="i-2", client_id="c2", protocols=both)  # now roundrobin wins: rebalance
    shell.complete_appends()  # i-1's write completes after the rebalance answered it: no second answer
    assert shell.answer(first).protocol_name == shell.answer(second).protocol_name == "roundrobin"
    assert shell.answer(first).generation_id == generation + 1


def test_a_static_member_rejoining_while_the_leader_assigns_rebalances_and_fences_the_old_id():
    shell = FakeShell()
    t1 = shell.join(instance="i-1", client_id="c1")
    t2 = shell.join(instance="i-2", client_id="c2")
    shell.advance(0)
    m2, generation = shell.answer(t2).member_id, shell.answer(t2).generation_id
    old_sync = shell.sync(m2, generation, instance="i-2")
    shell.join(instance="i-2", client_id="c2")
    assert shell.answer(old_sync) == SyncResult(ErrorCode.FENCED_INSTANCE_ID)
    assert shell.coordinator.group(GROUP).state is GroupState.PREPARING_REBALANCE
    assert shell.answer(t1).error is NONE


def test_a_static_member_with_a_member_id_it_does_not_own_is_fenced():
    shell = FakeShell()
    m1, _, generation = _static_group(shell)
    assert shell.answer(shell.join(m1, instance="i-2")).error is ErrorCode.FENCED_INSTANCE_ID
    assert shell.answer(shell.join(m1, instance="i-9")).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert shell.answer(shell.sync(m1, generation, instance="i-2")) == SyncResult(ErrorCode.FENCED_INSTANCE_ID)


def test_static_members_that_do_not_rejoin_stay_until_their_session_expires():
    shell = FakeShell()
    m1, m2, generation = _static_group(shell)
    shell.join(m1, instance="i-1", client_id="c1", protocols=(("range", b"v2"),))
    shell.keep_alive([m2], generation, 30_000)  # the rebalance timeout passes; i-2 heartbeats but never rejoins
    group = shell.coordinator.group(GROUP)
    assert group.has(m2) and group.generation_id == generation + 1


# ------------------------------------------------------------------------------------------------ sync, heartbeat


def test_sync_errors():
    shell = FakeShell()
    (_, b), generation = form_group(shell, "a", "b")
    assert shell.answer(shell.sync("nobody", generation)) == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
    assert shell.answer(shell.sync(b, generation + 1)) == SyncResult(ErrorCode.ILLEGAL_GENERATION)
    assert shell.answer(shell.sync(b, generation, protocol_type="connect")) == \
        SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    assert shell.answer(shell.sync(b, generation, protocol_name="roundrobin")) == \
        SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    assert shell.answer(shell.sync(b, generation, protocol_type="consumer", protocol_name="range")).error is NONE
    assert shell.answer(shell.sync(b, generation, group="other")) == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)


def test_heartbeat_errors():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    assert shell.heartbeat(b, generation) is NONE
    assert shell.heartbeat("nobody", generation) is ErrorCode.UNKNOWN_MEMBER_ID
    assert shell.heartbeat(b, generation - 1) is ErrorCode.ILLEGAL_GENERATION
    assert shell.heartbeat(b, generation, group="other") is ErrorCode.UNKNOWN_MEMBER_ID
    assert shell.heartbeat(b, generation, instance="i-1") is ErrorCode.UNKNOWN_MEMBER_ID
    shell.leave(LeavingMember(a))
    assert shell.heartbeat(b, generation) is ErrorCode.REBALANCE_IN_PROGRESS


def test_a_member_may_heartbeat_between_its_join_and_its_sync():
    shell = FakeShell()
    for client in ("a", "b"):
        shell.join_new(client)
    shell.advance(0)
    assert shell.heartbeat("b-uuid2", 1) is NONE


# ------------------------------------------------------------------------------------------------ leaving


def test_leave_is_batched_and_answers_each_member():
    shell = FakeShell()
    m1, _, _ = _static_group(shell)
    pending = shell.answer(shell.join(client_id="p")).member_id
    result = shell.leave(LeavingMember("", "i-2"), LeavingMember(pending), LeavingMember("ghost"),
                         LeavingMember("", "i-9"), LeavingMember(m1, "i-2"))
    assert result == LeaveResult(NONE, (
        LeftMember("", "i-2", NONE),
        LeftMember(pending, None, NONE),
        LeftMember("ghost", None, ErrorCode.UNKNOWN_MEMBER_ID),
        LeftMember("", "i-9", ErrorCode.UNKNOWN_MEMBER_ID),
        LeftMember(m1, "i-2", ErrorCode.UNKNOWN_MEMBER_ID),  # i-2 already left
    ))
    group = shell.coordinator.group(GROUP)
    assert list(group.members) == [m1] and not group.pending_members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_leaving_a_group_that_does_not_exist():
    shell = FakeShell()
    assert shell.leave(LeavingMember("x"), group="nope") == LeaveResult(
        NONE, (LeftMember("x", None, ErrorCode.UNKNOWN_MEMBER_ID),))


def test_a_member_leaving_while_its_join_is_parked_gets_an_answer():
    shell = FakeShell()
    (_, b), _ = form_group(shell, "a", "b")
    parked = shell.join(b, client_id="b", protocols=(("range", b"v2"),))
    shell.leave(LeavingMember(b))
    assert shell.answer(parked) == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "")


# ------------------------------------------------------------------------------------------------ coordinator


def test_requests_for_groups_of_partitions_led_elsewhere_are_not_coordinator():
    shell = FakeShell(own=False)
    assert shell.answer(shell.join()).error is ErrorCode.NOT_COORDINATOR
    assert shell.answer(shell.sync("m", 1)) == SyncResult(ErrorCode.NOT_COORDINATOR)
    assert shell.heartbeat("m", 1) is ErrorCode.NOT_COORDINATOR
    assert shell.leave(LeavingMember("m")) == LeaveResult(ErrorCode.NOT_COORDINATOR)


def test_requests_while_the_partition_loads():
    shell = FakeShell(own=False)
    shell.coordinator.begin_loading(partition_for(GROUP, NO_DELAY.offsets_topic_partitions))
    assert shell.answer(shell.join()).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert shell.answer(shell.sync("m", 1)) == SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
    assert shell.heartbeat("m", 1) is NONE
    assert shell.leave(LeavingMember("m")) == LeaveResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


def test_an_empty_group_id_is_invalid():
    shell = FakeShell()
    assert shell.answer(shell.join(group="")).error is ErrorCode.INVALID_GROUP_ID
    assert shell.answer(shell.sync("m", 1, group="")) == SyncResult(ErrorCode.INVALID_GROUP_ID)
    assert shell.heartbeat("m", 1, group="") is ErrorCode.INVALID_GROUP_ID
    assert shell.leave(LeavingMember("m"), group="") == LeaveResult(ErrorCode.INVALID_GROUP_ID)
