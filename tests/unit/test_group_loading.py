"""A coordinator taking over a partition of __consumer_offsets from its records, and giving one up
(tests/unit/group_harness.py)."""

from __future__ import annotations

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.effects import heartbeat_timer
from broker.coordinator.group.requests import LeavingMember
from broker.coordinator.group.results import FetchedOffset, JoinResult, SyncResult
from broker.coordinator.group.states import GroupState
from protocol.consumer_offsets import (
    GroupMetadataValue,
    MemberMetadata,
    encode_group_metadata_value,
    group_metadata_record,
    partition_for,
)
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition as TP
from tests.unit.group_harness import GROUP, NO_DELAY, SESSION_MS, FakeShell, form_group

NONE = ErrorCode.NONE
PARTITION = partition_for(GROUP, NO_DELAY.offsets_topic_partitions)


def taken_over(records, config: GroupConfig = NO_DELAY) -> FakeShell:
    """A coordinator that loads GROUP's partition from `records`."""
    shell = FakeShell(config, own=False)
    shell.coordinator.begin_loading(PARTITION)
    assert shell.heartbeat("m", 1) is NONE  # answered blindly while loading
    shell.apply(shell.coordinator.load(PARTITION, records))
    return shell


def test_a_stable_group_and_its_offsets_come_back_from_the_log():
    before = FakeShell()
    (a, b), generation = form_group(before, "a", "b")
    before.commit({TP("orders", 0): 7}, generation=generation, member_id=a)
    before.complete_appends()
    after = taken_over(before.written)
    group = after.coordinator.group(GROUP)
    assert (group.state, group.generation_id, group.protocol_type, group.protocol_name, group.leader_id) == \
        (GroupState.STABLE, generation, "consumer", "range", a)
    assert [(m.member_id, m.assignment) for m in group.members.values()] == [(a, a.encode()), (b, b.encode())]
    assert group.subscribed_topics == {"orders"}
    assert after.coordinator.fetch_offsets(GROUP).partitions == {TP("orders", 0): FetchedOffset(7, -1, "")}
    assert after.timers[heartbeat_timer(GROUP, a)] == after.now + SESSION_MS  # sessions start again
    assert after.heartbeat(a, generation) is NONE
    assert after.answer(after.sync(b, generation)) == SyncResult(NONE, "consumer", "range", b.encode())
    after.keep_alive([a], generation, SESSION_MS)  # b is gone: its session expired
    assert not group.has(b)


def test_deleted_groups_and_offsets_stay_deleted():
    before = FakeShell()
    (a,), generation = form_group(before, "a")
    before.commit({TP("orders", 0): 1, TP("orders", 1): 1}, generation=generation, member_id=a)
    before.leave(LeavingMember(a))
    before.complete_appends()
    before.apply(before.coordinator.delete_offsets(GROUP, [TP("orders", 1)])[1])
    before.complete_appends()
    after = taken_over(before.written)
    group = after.coordinator.group(GROUP)
    assert group.state is GroupState.EMPTY and group.generation_id == generation + 1
    assert set(group.offsets) == {TP("orders", 0)}
    before.apply(before.coordinator.delete_groups([GROUP])[1])
    before.complete_appends()
    assert taken_over(before.written).coordinator.group(GROUP) is None


def test_offsets_without_group_metadata_come_back_in_an_empty_group():
    before = FakeShell()
    before.commit({TP("orders", 0): 3})
    before.complete_appends()
    group = taken_over(before.written).coordinator.group(GROUP)
    assert group.state is GroupState.EMPTY and group.protocol_type is None
    assert group.offsets[TP("orders", 0)].offset == 3


def test_records_of_other_kinds_and_older_versions_are_read_as_kafka_reads_them():
    v0_member = MemberMetadata("m-1", None, "c", "/h", -1, 25_000, b"", b"x")
    v0 = encode_group_metadata_value(GroupMetadataValue("consumer", 4, "range", "m-1", members=(v0_member,)), 0)
    key, _ = group_metadata_record(GROUP, GroupMetadataValue("", 0, None, None))
    unknown_key = bytes.fromhex("0005") + b"whatever"  # a record type this coordinator does not read
    group = taken_over([(unknown_key, b"?"), (key, v0)]).coordinator.group(GROUP)
    member = group.get("m-1")
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (25_000, 25_000)  # v0: the session's
    assert group.state_timestamp is None


def test_a_group_over_capacity_rebalances_once_loaded():
    before = FakeShell()
    form_group(before, "a", "b", "c")
    after = taken_over(before.written, GroupConfig(initial_rebalance_delay_ms=0, max_size=2))
    assert after.coordinator.group(GROUP).state is GroupState.PREPARING_REBALANCE


def test_giving_up_the_partition_answers_parked_requests_and_forgets_the_groups():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    parked_join = shell.join(a, client_id="a", protocols=(("range", b"v2"),))
    shell.join_new("c", group="other")
    shell.advance(0)
    parked_sync = shell.sync("c-uuid3", 1, group="other")  # "other" is CompletingRebalance
    shell.apply(shell.coordinator.unload(PARTITION))
    shell.apply(shell.coordinator.unload(partition_for("other", NO_DELAY.offsets_topic_partitions)))
    assert shell.answer(parked_join) == JoinResult(ErrorCode.NOT_COORDINATOR, a)
    assert shell.answer(parked_sync) == SyncResult(ErrorCode.NOT_COORDINATOR)
    assert shell.coordinator.group(GROUP) is None and shell.coordinator.group("other") is None
    assert not shell.timers
    assert shell.heartbeat(b, generation) is ErrorCode.NOT_COORDINATOR


def test_a_static_rejoin_being_written_when_the_partition_is_given_up_is_answered():
    shell = FakeShell()
    first = shell.join(instance="i-1", client_id="c1")
    shell.advance(0)
    member_id, generation = shell.answer(first).member_id, shell.answer(first).generation_id
    shell.sync(member_id, generation, instance="i-1", assignments={})
    shell.complete_appends()
    rejoin = shell.join(instance="i-1", client_id="c1")  # Stable: the group is written with the new id
    shell.apply(shell.coordinator.unload(PARTITION))
    assert shell.answer(rejoin) == JoinResult(ErrorCode.NOT_COORDINATOR, "i-1-uuid2")
    shell.complete_appends(ErrorCode.NOT_LEADER_OR_FOLLOWER)  # no second answer
    assert shell.answer(rejoin).error is ErrorCode.NOT_COORDINATOR
