"""Rebalances of a classic group (join, sync, the initial delay, timeouts), driven through the pure coordinator with
a fake clock (tests/unit/group_harness.py)."""

from __future__ import annotations

from broker.coordinator.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig
from broker.coordinator.group.requests import LeavingMember
from broker.coordinator.group.results import JoinedMember, JoinResult, SyncResult
from broker.coordinator.group.states import GroupState
from protocol.consumer_offsets import decode_group_metadata_value, decode_key
from protocol.errors import ErrorCode
from tests.unit.group_harness import GROUP, RANGE, REBALANCE_MS, SESSION_MS, FakeShell, form_group, subscription

NONE = ErrorCode.NONE


def state(shell: FakeShell) -> GroupState:
    group = shell.coordinator.group(GROUP)
    assert group is not None
    return group.state


def test_three_members_form_a_group():
    shell = FakeShell()
    ids = [shell.join_new(client) for client in ("a", "b", "c")]
    assert ids == ["a-uuid1", "b-uuid2", "c-uuid3"]  # client id, "-", a UUID
    shell.advance(0)  # the initial delay (0 here) passes
    joins = [shell.answer(t) for t in _joins(shell)]
    assert state(shell) is GroupState.COMPLETING_REBALANCE
    leader = joins[0]
    assert leader == JoinResult(NONE, "a-uuid1", 1, "consumer", "range", "a-uuid1", False,
                                tuple(JoinedMember(m, None, RANGE[0][1]) for m in ids))
    for follower, member_id in zip(joins[1:], ids[1:], strict=True):
        assert follower == JoinResult(NONE, member_id, 1, "consumer", "range", "a-uuid1")

    follower_sync = shell.sync("b-uuid2", 1)
    assert shell.answer(follower_sync) is None  # followers wait for the leader's assignment
    leader_sync = shell.sync("a-uuid1", 1, assignments={"a-uuid1": b"A", "b-uuid2": b"B"})  # c left out
    assert shell.answer(leader_sync) is None  # until the group is written
    [(key, value)] = shell.complete_appends()
    assert decode_key(key).group == GROUP
    written = decode_group_metadata_value(value)
    assert (written.generation, written.protocol, written.leader) == (1, "range", "a-uuid1")
    assert [(m.member_id, m.assignment) for m in written.members] == [("a-uuid1", b"A"), ("b-uuid2", b"B"),
                                                                      ("c-uuid3", b"")]
    assert shell.answer(leader_sync) == SyncResult(NONE, "consumer", "range", b"A")
    assert shell.answer(follower_sync) == SyncResult(NONE, "consumer", "range", b"B")
    assert state(shell) is GroupState.STABLE
    # a member syncing once the group is Stable gets its assignment at once
    assert shell.answer(shell.sync("c-uuid3", 1)) == SyncResult(NONE, "consumer", "range", b"")


def _joins(shell: FakeShell):
    return [t for t in shell.answers if t.name.startswith("join:") and shell.answer(t).error is NONE]


def test_a_member_joining_a_stable_group_starts_a_rebalance():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    shell.join_new("c")
    c_join = shell.last_join
    assert state(shell) is GroupState.PREPARING_REBALANCE
    assert shell.heartbeat(a, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    assert shell.answer(shell.sync(b, generation)) == SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
    a_join, b_join = shell.join(a, client_id="a"), shell.join(b, client_id="b")
    assert state(shell) is GroupState.COMPLETING_REBALANCE  # every known member rejoined: no need to wait
    assert {shell.answer(t).generation_id for t in (a_join, b_join, c_join)} == {generation + 1}
    assert len(shell.answer(a_join).members) == 3


def test_a_member_leaving_starts_a_rebalance_without_it():
    shell = FakeShell()
    (a, b, c), generation = form_group(shell, "a", "b", "c")
    result = shell.leave(LeavingMember(b))
    assert result.members[0].error is NONE
    assert state(shell) is GroupState.PREPARING_REBALANCE
    a_join, c_join = shell.join(a, client_id="a"), shell.join(c, client_id="c")
    assert [m.member_id for m in shell.answer(a_join).members] == [a, c]
    assert shell.answer(c_join).generation_id == generation + 1


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_removed():
    shell = FakeShell()
    (a, b, c), generation = form_group(shell, "a", "b", "c")
    a_join = shell.join(a, client_id="a", protocols=(("range", subscription("orders", "audit")),))  # a change
    shell.keep_alive([b, c], generation, REBALANCE_MS - 1)  # b and c heartbeat, but do not rejoin
    assert shell.answer(a_join) is None
    assert shell.heartbeat(b, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    shell.advance(1)
    assert shell.answer(a_join).members == (JoinedMember(a, None, subscription("orders", "audit")),)
    assert list(shell.coordinator.group(GROUP).members) == [a]
    assert shell.heartbeat(b, generation) is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_new_leader_is_chosen_among_the_members_that_rejoined():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    b_join = shell.join(b, client_id="b", protocols=(("range", b"changed"),))
    shell.keep_alive([a], generation, REBALANCE_MS)  # the leader a is alive but does not rejoin
    assert shell.answer(b_join).leader_id == b
    assert shell.coordinator.group(GROUP).leader_id == b


def test_a_session_that_expires_removes_the_member():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    shell.advance(SESSION_MS - 1)
    assert shell.heartbeat(a, generation) is NONE
    shell.keep_alive([a], generation, 2 * SESSION_MS)  # b does not heartbeat: it expired after one session
    assert shell.heartbeat(b, generation) is ErrorCode.UNKNOWN_MEMBER_ID
    assert shell.heartbeat(a, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    a_join = shell.join(a, client_id="a")
    assert [m.member_id for m in shell.answer(a_join).members] == [a]


def test_a_member_waiting_in_a_join_is_alive_but_a_new_one_gives_up_after_five_minutes():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    a_join = shell.join(a, client_id="a", protocols=(("range", b"v2"),), rebalance_ms=REBALANCE_MS * 20)
    c = shell.join_new("c", rebalance_ms=REBALANCE_MS * 20)
    c_join = shell.last_join
    # the rebalance timeout is 600 s; b heartbeats but never rejoins; a waits in its join
    shell.keep_alive([b], generation, NEW_MEMBER_JOIN_TIMEOUT_MS - 1)
    assert shell.answer(c_join) is None
    shell.advance(1)
    assert shell.answer(c_join) == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "")  # the new member's join expired
    assert c not in shell.coordinator.group(GROUP).members
    assert shell.answer(a_join) is None and shell.coordinator.group(GROUP).has(a)  # a is alive


def test_a_pending_member_that_never_joins_is_forgotten_after_its_session():
    shell = FakeShell()
    first = shell.answer(shell.join(client_id="a"))
    assert first == JoinResult(ErrorCode.MEMBER_ID_REQUIRED, "a-uuid1")
    assert shell.coordinator.group(GROUP).is_pending_member("a-uuid1")
    shell.advance(SESSION_MS)
    assert not shell.coordinator.group(GROUP).is_pending_member("a-uuid1")
    assert shell.answer(shell.join("a-uuid1", client_id="a")).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_rebalance_waits_for_pending_members():
    shell = FakeShell()
    (a,), generation = form_group(shell, "a")
    pending = shell.answer(shell.join(client_id="b")).member_id
    a_join = shell.join(a, client_id="a", protocols=(("range", b"v2"),))
    assert shell.answer(a_join) is None  # b was given an id and is expected
    b_join = shell.join(pending, client_id="b")
    assert shell.answer(a_join).generation_id == shell.answer(b_join).generation_id == generation + 1


def test_the_initial_delay_waits_while_members_keep_joining_within_the_rebalance_timeout():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=3000))
    shell.join_new("a", rebalance_ms=10_000)
    first = shell.last_join
    assert shell.timers[("initial-join", GROUP)] == shell.now + 3000
    shell.advance(2000)
    shell.join_new("b", rebalance_ms=10_000)
    shell.advance(1000)  # 3 s: b joined meanwhile, wait another 3 s
    assert shell.answer(first) is None and state(shell) is GroupState.PREPARING_REBALANCE
    shell.advance(2999)
    shell.join_new("c", rebalance_ms=10_000)
    shell.advance(1)  # 6 s: c joined, wait once more (7 s of the 10 s timeout are left to be used)
    assert shell.answer(first) is None
    shell.advance(2999)
    assert shell.answer(first) is None
    shell.advance(1)  # 9 s: nobody joined in the last delay
    assert shell.answer(first).generation_id == 1
    assert len(shell.answer(first).members) == 3


def test_the_initial_delay_never_outlasts_the_rebalance_timeout():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=3000))
    shell.join_new("a", rebalance_ms=5000)
    first = shell.last_join
    for client in "bcde":  # a member joins every second
        shell.advance(1000)
        shell.join_new(client, rebalance_ms=5000)
    # 3 s, then min(3 s, the 2 s left of the 5 s rebalance timeout): 5 s after the first join
    assert shell.answer(first) is None
    shell.advance(999)
    assert shell.answer(first) is None
    shell.advance(1)
    assert shell.answer(first).generation_id == 1
    assert len(shell.answer(first).members) == 5


def test_the_initial_delay_does_not_complete_early_when_everyone_joined():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=3000))
    shell.join_new("a")
    shell.advance(2999)
    assert shell.answer(shell.last_join) is None
    shell.advance(1)
    assert shell.answer(shell.last_join).error is NONE


def test_members_that_never_sync_are_removed_and_the_group_rebalances():
    shell = FakeShell()
    for client in ("a", "b", "c"):
        shell.join_new(client)
    shell.advance(0)
    leader_sync = shell.sync("a-uuid1", 1, assignments={})
    shell.sync("b-uuid2", 1)
    shell.complete_appends()
    assert shell.answer(leader_sync).error is NONE and state(shell) is GroupState.STABLE
    shell.keep_alive(["a-uuid1", "b-uuid2", "c-uuid3"], 1, REBALANCE_MS - 1)  # c heartbeats, never syncs
    assert "c-uuid3" in shell.coordinator.group(GROUP).members
    shell.advance(1)
    assert "c-uuid3" not in shell.coordinator.group(GROUP).members
    assert state(shell) is GroupState.PREPARING_REBALANCE
    assert shell.heartbeat("a-uuid1", 1) is ErrorCode.REBALANCE_IN_PROGRESS


def test_a_failed_write_of_the_assignment_sends_everyone_back_to_join():
    shell = FakeShell()
    for client in ("a", "b"):
        shell.join_new(client)
    shell.advance(0)
    follower_sync = shell.sync("b-uuid2", 1)
    leader_sync = shell.sync("a-uuid1", 1, assignments={"a-uuid1": b"A", "b-uuid2": b"B"})
    shell.complete_appends(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert shell.answer(leader_sync) == shell.answer(follower_sync) == SyncResult(ErrorCode.NOT_COORDINATOR)
    assert state(shell) is GroupState.PREPARING_REBALANCE
    assert shell.coordinator.group(GROUP).get("a-uuid1").assignment == b""


def test_the_write_of_an_assignment_of_an_older_generation_is_ignored():
    shell = FakeShell()
    for client in ("a", "b"):
        shell.join_new(client)
    shell.advance(0)
    leader_sync = shell.sync("a-uuid1", 1, assignments={"a-uuid1": b"A", "b-uuid2": b"B"})
    shell.leave(LeavingMember("b-uuid2"))  # before the write completes: a rebalance
    assert shell.answer(leader_sync) == SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
    shell.complete_appends()
    assert state(shell) is not GroupState.STABLE


def test_the_last_member_leaving_empties_the_group_and_writes_the_empty_generation():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    shell.leave(LeavingMember(a), LeavingMember(b))
    assert state(shell) is GroupState.EMPTY
    [(_, value)] = shell.complete_appends()
    written = decode_group_metadata_value(value)
    assert (written.generation, written.protocol, written.leader, written.members) == (generation + 1, None, None, ())
    assert written.protocol_type == "consumer"


def test_a_follower_that_missed_its_join_answer_gets_the_current_generation_again():
    shell = FakeShell()
    for client in ("a", "b"):
        shell.join_new(client)
    shell.advance(0)
    again = shell.answer(shell.join("b-uuid2", client_id="b"))
    assert again == JoinResult(NONE, "b-uuid2", 1, "consumer", "range", "a-uuid1")
    leader_again = shell.answer(shell.join("a-uuid1", client_id="a"))  # the leader, while completing
    assert len(leader_again.members) == 2 and state(shell) is GroupState.COMPLETING_REBALANCE


def test_in_a_stable_group_a_follower_rejoining_unchanged_gets_the_generation_but_the_leader_rebalances():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    assert shell.answer(shell.join(b, client_id="b")).generation_id == generation
    assert state(shell) is GroupState.STABLE
    shell.join(a, client_id="a")  # the leader may have seen new topics: it rebalances
    assert state(shell) is GroupState.PREPARING_REBALANCE


def test_changed_protocols_start_a_rebalance():
    shell = FakeShell()
    (_, b), _ = form_group(shell, "a", "b")
    shell.join(b, client_id="b", protocols=(("range", subscription("orders", "payments")),))
    assert state(shell) is GroupState.PREPARING_REBALANCE


def test_a_superseded_parked_join_is_told_to_rejoin():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    first = shell.join(b, client_id="b", protocols=(("range", b"v2"),))
    second = shell.join(b, client_id="b", protocols=(("range", b"v2"),))
    assert shell.answer(first) == JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, b)
    shell.join(a, client_id="a")
    assert shell.answer(second).generation_id == generation + 1


def test_a_group_where_nobody_rejoins_waits_for_the_sessions_to_expire():
    shell = FakeShell()
    (_, b), generation = form_group(shell, "a", "b")
    shell.leave(LeavingMember(b))
    shell.advance(REBALANCE_MS)  # a never rejoined: removed; the group is Empty
    assert state(shell) is GroupState.EMPTY
    assert shell.coordinator.group(GROUP).generation_id == generation + 1


def test_timeouts_are_the_longest_of_the_members():
    shell = FakeShell()
    shell.join_new("a", rebalance_ms=1000)
    shell.join_new("b", rebalance_ms=50_000)
    assert shell.coordinator.group(GROUP).rebalance_timeout_ms == 50_000
