"""Committing, fetching, deleting and expiring a group's offsets, driven through the pure coordinator with a fake
clock (tests/unit/group_harness.py)."""

from __future__ import annotations

import pytest

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.requests import LeavingMember, OffsetToCommit
from broker.coordinator.group.results import CommitResult, DeleteOffsetsResult, FetchedOffset, OffsetFetchResult
from broker.coordinator.group.states import GroupState
from protocol.consumer_offsets import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
    partition_for,
)
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition as TP
from tests.unit.group_harness import GROUP, NO_DELAY, FakeShell, form_group

NONE = ErrorCode.NONE
ORDERS_0, ORDERS_1, AUDIT_0 = TP("orders", 0), TP("orders", 1), TP("audit", 0)


def fetch(shell: FakeShell, *partitions: TP, require_stable: bool = False, group: str = GROUP):
    return shell.coordinator.fetch_offsets(group, list(partitions) or None, require_stable)


def test_a_simple_consumer_commits_to_a_group_without_members():
    shell = FakeShell()
    ticket = shell.commit({ORDERS_0: OffsetToCommit(42, leader_epoch=3, metadata="m")})
    assert shell.answer(ticket) is None  # until written, acks=all
    assert fetch(shell, ORDERS_0) == OffsetFetchResult(NONE, {ORDERS_0: FetchedOffset()})  # not visible yet
    [append] = shell.pending_appends
    assert append.partition == partition_for(GROUP, NO_DELAY.offsets_topic_partitions)
    [(key, value)] = shell.complete_appends()
    assert decode_key(key) == OffsetCommitKey(GROUP, "orders", 0)
    assert decode_offset_commit_value(value) == OffsetCommitValue(42, "m", shell.now, leader_epoch=3)
    assert shell.answer(ticket) == CommitResult({ORDERS_0: NONE})
    assert fetch(shell, ORDERS_0, ORDERS_1) == OffsetFetchResult(NONE, {ORDERS_0: FetchedOffset(42, 3, "m"),
                                                                        ORDERS_1: FetchedOffset()})
    assert fetch(shell) == OffsetFetchResult(NONE, {ORDERS_0: FetchedOffset(42, 3, "m")})  # all of them
    assert shell.coordinator.group(GROUP).state is GroupState.EMPTY


def test_a_fetch_that_requires_stable_offsets_waits_for_commits_being_written():
    shell = FakeShell()
    shell.complete_appends()
    shell.commit({ORDERS_0: 1})
    shell.complete_appends()
    shell.commit({ORDERS_0: 2})
    assert fetch(shell, ORDERS_0, require_stable=True).partitions[ORDERS_0].error is ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert fetch(shell, ORDERS_0).partitions[ORDERS_0] == FetchedOffset(1, -1, "")
    shell.complete_appends()
    assert fetch(shell, ORDERS_0, require_stable=True).partitions[ORDERS_0] == FetchedOffset(2, -1, "")


def test_members_commit_with_their_generation():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    ok = shell.commit({ORDERS_0: 5}, generation=generation, member_id=b)
    stale = shell.commit({ORDERS_0: 6}, generation=generation - 1, member_id=b)
    stranger = shell.commit({ORDERS_0: 7}, generation=generation, member_id="ghost")
    anonymous = shell.commit({ORDERS_0: 8})  # generation -1, no member: not to a group with members
    fenced = shell.commit({ORDERS_0: 9}, generation=generation, member_id=a, instance="i-1")
    shell.complete_appends()
    assert shell.answer(ok) == CommitResult({ORDERS_0: NONE})
    assert shell.answer(stale) == CommitResult({ORDERS_0: ErrorCode.ILLEGAL_GENERATION})
    assert shell.answer(stranger) == CommitResult({ORDERS_0: ErrorCode.UNKNOWN_MEMBER_ID})
    assert shell.answer(anonymous) == CommitResult({ORDERS_0: ErrorCode.UNKNOWN_MEMBER_ID})
    assert shell.answer(fenced) == CommitResult({ORDERS_0: ErrorCode.UNKNOWN_MEMBER_ID})
    assert fetch(shell, ORDERS_0).partitions[ORDERS_0].offset == 5


def test_commits_during_a_rebalance():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    shell.join(a, client_id="a", protocols=(("range", b"v2"),))  # PreparingRebalance
    preparing = shell.commit({ORDERS_0: 1}, generation=generation, member_id=b)  # the old generation may commit
    shell.join(b, client_id="b")  # CompletingRebalance, generation + 1
    completing = shell.commit({ORDERS_0: 2}, generation=generation + 1, member_id=b)
    shell.complete_appends()
    assert shell.answer(preparing) == CommitResult({ORDERS_0: NONE})
    assert shell.answer(completing) == CommitResult({ORDERS_0: ErrorCode.REBALANCE_IN_PROGRESS})


def test_a_commit_counts_as_a_heartbeat():
    shell = FakeShell()
    (a, b), generation = form_group(shell, "a", "b")
    for _ in range(4):
        shell.advance(8000)
        shell.heartbeat(a, generation)
        shell.commit({ORDERS_0: 1}, generation=generation, member_id=b)
        shell.complete_appends()
    assert shell.heartbeat(b, generation) is NONE


def test_a_commit_with_a_generation_to_a_group_the_coordinator_does_not_know_is_illegal():
    shell = FakeShell()
    ticket = shell.commit({ORDERS_0: 1}, generation=3, member_id="m")
    assert shell.answer(ticket) == CommitResult({ORDERS_0: ErrorCode.ILLEGAL_GENERATION})
    assert shell.coordinator.group(GROUP) is None


def test_metadata_longer_than_the_limit_is_refused_per_partition():
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, offset_metadata_max_bytes=4))
    ticket = shell.commit({ORDERS_0: OffsetToCommit(1, metadata="four"), ORDERS_1: OffsetToCommit(1, metadata="five!"),
                           AUDIT_0: OffsetToCommit(1, metadata="\N{THUMBS UP SIGN}" * 3)})
    [(key, _)] = shell.complete_appends()
    assert decode_key(key).topic == "orders"
    # the thumbs up are 3 characters, 6 UTF-16 units
    assert shell.answer(ticket) == CommitResult({ORDERS_0: NONE, ORDERS_1: ErrorCode.OFFSET_METADATA_TOO_LARGE,
                                                 AUDIT_0: ErrorCode.OFFSET_METADATA_TOO_LARGE})
    only_too_large = shell.commit({ORDERS_1: OffsetToCommit(1, metadata="toolong")})
    assert shell.answer(only_too_large) == CommitResult({ORDERS_1: ErrorCode.OFFSET_METADATA_TOO_LARGE})
    assert not shell.pending_appends


@pytest.mark.parametrize(("append_error", "answer"), [
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT),
])
def test_a_failed_write_is_answered_with_kafkas_commit_error(append_error, answer):
    shell = FakeShell()
    ticket = shell.commit({ORDERS_0: 1})
    shell.complete_appends(append_error)
    assert shell.answer(ticket) == CommitResult({ORDERS_0: answer})
    assert fetch(shell, ORDERS_0, require_stable=True).partitions[ORDERS_0] == FetchedOffset()


def test_a_commit_with_a_retention_expires_on_its_own_and_is_written_as_v1():
    shell = FakeShell()
    shell.commit({ORDERS_0: OffsetToCommit(1, retention_ms=60_000, commit_timestamp=5)})
    [(_, value)] = shell.complete_appends()
    assert value[:2] == b"\x00\x01"
    assert decode_offset_commit_value(value) == OffsetCommitValue(1, "", 5, expire_timestamp=shell.now + 60_000)
    shell.advance(59_999)
    shell.apply(shell.coordinator.expire_offsets())
    assert fetch(shell, ORDERS_0).partitions[ORDERS_0].offset == 1
    shell.advance(1)
    shell.apply(shell.coordinator.expire_offsets())
    assert fetch(shell, ORDERS_0).partitions[ORDERS_0].offset == -1


def test_offsets_of_an_empty_group_expire_after_the_retention():
    retention = 60_000
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_ms=retention))
    (a,), generation = form_group(shell, "a")
    shell.commit({ORDERS_0: 1}, generation=generation, member_id=a)
    shell.complete_appends()
    shell.leave(LeavingMember(a))  # the group is Empty from now
    shell.complete_appends()
    shell.advance(retention - 1)
    shell.apply(shell.coordinator.expire_offsets())
    assert shell.coordinator.group(GROUP) is not None
    shell.advance(1)
    shell.apply(shell.coordinator.expire_offsets())
    assert shell.coordinator.group(GROUP) is None  # no offsets left: Dead and forgotten
    records = shell.complete_appends()
    assert [(decode_key(k), v) for k, v in records] == [(OffsetCommitKey(GROUP, "orders", 0), None),
                                                        (decode_key(records[1][0]), None)]
    assert decode_key(records[1][0]).group == GROUP  # the group's tombstone


def test_a_stable_group_keeps_the_offsets_of_topics_it_subscribes_to():
    retention = 60_000
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_ms=retention))
    (a,), generation = form_group(shell, "a")  # subscribed to "orders"
    shell.commit({ORDERS_0: 1, AUDIT_0: 1}, generation=generation, member_id=a)
    shell.complete_appends()
    shell.keep_alive([a], generation, retention)
    shell.apply(shell.coordinator.expire_offsets())
    assert set(fetch(shell).partitions) == {ORDERS_0}


def test_offsets_of_a_group_without_members_expire_after_their_commit():
    retention = 60_000
    shell = FakeShell(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_ms=retention))
    shell.commit({ORDERS_0: 1})
    shell.complete_appends()
    shell.advance(30_000)
    shell.commit({ORDERS_1: 1})
    shell.complete_appends()
    shell.advance(30_000)
    shell.apply(shell.coordinator.expire_offsets())
    assert set(fetch(shell).partitions) == {ORDERS_1}
    [(key, value)] = shell.complete_appends()
    assert (decode_key(key), value) == (OffsetCommitKey(GROUP, "orders", 0), None)  # no group tombstone: gen 0


def test_fetching_offsets_of_a_group_the_coordinator_does_not_hold():
    shell = FakeShell()
    assert fetch(shell, ORDERS_0, group="nope") == OffsetFetchResult(NONE, {ORDERS_0: FetchedOffset()})
    assert fetch(shell, group="nope") == OffsetFetchResult(NONE, {})
    assert fetch(shell, group="") == OffsetFetchResult(NONE, {})  # the empty group id is allowed here
    elsewhere = FakeShell(own=False)
    assert fetch(elsewhere, ORDERS_0) == OffsetFetchResult(ErrorCode.NOT_COORDINATOR)
    assert elsewhere.answer(elsewhere.commit({ORDERS_0: 1})) == CommitResult({ORDERS_0: ErrorCode.NOT_COORDINATOR})


# ------------------------------------------------------------------------------------------------ OffsetDelete


def delete(shell: FakeShell, *partitions: TP, group: str = GROUP) -> DeleteOffsetsResult:
    result, fx = shell.coordinator.delete_offsets(group, partitions)
    shell.apply(fx)
    return result


def test_offsets_of_an_empty_group_are_deleted_and_the_group_with_its_last_one():
    shell = FakeShell()
    shell.commit({ORDERS_0: 1, ORDERS_1: 2})
    shell.complete_appends()
    assert delete(shell, ORDERS_0, AUDIT_0) == DeleteOffsetsResult(NONE, {ORDERS_0: NONE, AUDIT_0: NONE})
    [(key, value)] = shell.complete_appends()
    assert (decode_key(key), value) == (OffsetCommitKey(GROUP, "orders", 0), None)
    assert set(fetch(shell).partitions) == {ORDERS_1}
    delete(shell, ORDERS_1)
    assert shell.coordinator.group(GROUP) is None
    assert delete(shell, ORDERS_1) == DeleteOffsetsResult(ErrorCode.GROUP_ID_NOT_FOUND)


def test_a_consumer_group_with_members_keeps_the_offsets_of_topics_it_subscribes_to():
    shell = FakeShell()
    (a,), generation = form_group(shell, "a")  # subscribed to "orders"
    shell.commit({ORDERS_0: 1, AUDIT_0: 1}, generation=generation, member_id=a)
    shell.complete_appends()
    assert delete(shell, ORDERS_0, AUDIT_0) == DeleteOffsetsResult(NONE, {ORDERS_0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
                                                                          AUDIT_0: NONE})
    assert set(fetch(shell).partitions) == {ORDERS_0}


def test_offsets_of_another_kind_of_group_with_members_are_not_deleted():
    shell = FakeShell()
    member = shell.answer(shell.join(protocol_type="connect", protocols=(("default", b""),))).member_id
    shell.join(member, protocol_type="connect", protocols=(("default", b""),))
    assert delete(shell, ORDERS_0) == DeleteOffsetsResult(ErrorCode.NON_EMPTY_GROUP)


def test_offset_delete_needs_a_group_id():
    shell = FakeShell()
    assert delete(shell, ORDERS_0, group="") == DeleteOffsetsResult(ErrorCode.INVALID_GROUP_ID)
