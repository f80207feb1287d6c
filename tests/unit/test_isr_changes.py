"""The pure rules of a leader's ISR writes: what a refused conditional write means, and ISR change notifications
cut to fit in a request."""

from __future__ import annotations

import pytest

from broker.isr_changes import Conflict, conflict, notification_payloads
from zk import znodes
from zk.ops import CreateOp, multi_bytes
from zk.znodes import LeaderIsrAndControllerEpoch

WANTED = LeaderIsrAndControllerEpoch(leader=1, leader_epoch=4, isr=(1, 2, 3), controller_epoch=2, zk_version=7)


def stored(version: int, *, leader: int = 1, leader_epoch: int = 4, isr: tuple[int, ...] = (1, 2, 3),
           controller_epoch: int = 2) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(leader=leader, leader_epoch=leader_epoch, isr=isr,
                                       controller_epoch=controller_epoch, zk_version=version)


def test_a_write_only_rolled_back_with_its_transaction_is_retried():
    assert conflict(WANTED, stored(7, isr=(1, 2))) is Conflict.RETRY


def test_a_stored_state_equal_to_the_wanted_one_at_a_newer_version_is_an_earlier_attempts_lost_answer():
    assert conflict(WANTED, stored(8)) is Conflict.WRITTEN
    # the controller epoch is not compared, as in Kafka's checkLeaderAndIsrZkData
    assert conflict(WANTED, stored(9, controller_epoch=3)) is Conflict.WRITTEN


@pytest.mark.parametrize("changed", [{"isr": (1, 2)}, {"leader_epoch": 5}, {"leader": 2}])
def test_a_state_changed_by_someone_else_makes_the_leaders_view_stale(changed):
    assert conflict(WANTED, stored(8, **changed)) is Conflict.STALE


def test_no_change_needs_no_notification():
    assert notification_payloads([], 1000) == []


def test_ten_thousand_partitions_fit_in_one_notification_under_the_default_budget():
    partitions = [(f"topic-{p % 6}", p) for p in range(10_000)]
    [(data, named)] = notification_payloads(partitions, 0xFFFFF // 2, "/minikafka")
    assert named == partitions
    assert znodes.decode_isr_change(data) == partitions


def test_notifications_are_split_until_each_fits_in_a_request_and_name_every_partition_once():
    partitions = [("events", p) for p in range(1000)]
    budget = 4000
    payloads = notification_payloads(partitions, budget, "/chroot")
    assert len(payloads) > 1
    named = [tp for _, part in payloads for tp in part]
    assert named == partitions
    for data, part in payloads:
        assert znodes.decode_isr_change(data) == list(part)
        assert multi_bytes([CreateOp(znodes.isr_change_sequence_path(), data)], "/chroot") <= budget


def test_a_partition_whose_notification_alone_is_over_the_budget_is_refused():
    with pytest.raises(ValueError, match="alone"):
        notification_payloads([("t" * 500, 0)], 300)
