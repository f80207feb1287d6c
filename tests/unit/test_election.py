"""Kafka's leader election rules (controller/election.py), a pure module."""

from __future__ import annotations

import pytest

from controller.election import (
    NO_LEADER,
    Election,
    LeaderAndIsr,
    after_broker_failure,
    after_broker_startup,
    controlled_shutdown_election,
    isr_without,
    offline_partition_election,
    preferred_replica_election,
    preferred_replica_ineligibility,
    reassign_partition_election,
)
from tests.unit.test_pure_core import FORBIDDEN, ROOT, imported_roots

ASSIGNMENT = (3, 1, 2)


@pytest.mark.parametrize(("isr", "live", "expected"), [
    ((1, 2, 3), {1, 2, 3}, Election(3, (1, 2, 3))),      # assignment order, not ISR order
    ((1, 2), {1, 2, 3}, Election(1, (1, 2))),            # 3 is live but out of sync
    ((3, 1, 2), {1, 2}, Election(1, (1, 2))),            # the dead leave the new ISR
    ((2, 3), {2}, Election(2, (2,))),
])
def test_offline_election_takes_the_first_live_isr_member_in_assignment_order(isr, live, expected):
    for unclean in (False, True):
        assert offline_partition_election(ASSIGNMENT, isr, live, unclean_leader_election=unclean) == expected


def test_offline_election_without_a_live_isr_member_is_unclean_or_nothing():
    assert offline_partition_election(ASSIGNMENT, (3,), {1, 2}, unclean_leader_election=False) is None
    assert offline_partition_election(ASSIGNMENT, (3,), {2, 1}, unclean_leader_election=True) == \
        Election(1, (1,), unclean=True)
    assert offline_partition_election(ASSIGNMENT, (3,), set(), unclean_leader_election=True) is None


def test_controlled_shutdown_moves_leadership_to_another_live_isr_member_and_drops_the_broker():
    assert controlled_shutdown_election(ASSIGNMENT, (3, 1, 2), {1, 2, 3}, {3}) == Election(1, (1, 2))
    assert controlled_shutdown_election(ASSIGNMENT, (3, 1, 2), {2, 3}, {3}) == Election(2, (1, 2))
    assert controlled_shutdown_election(ASSIGNMENT, (3, 1, 2), {1, 2, 3}, {1, 3}) == Election(2, (2,))
    # Only the shutting-down broker is in sync: leadership cannot move (the broker then stops uncontrolled).
    assert controlled_shutdown_election(ASSIGNMENT, (3,), {1, 2, 3}, {3}) is None


def test_preferred_election_is_the_assignment_head_if_live_and_in_sync():
    assert preferred_replica_election(ASSIGNMENT, (1, 3), {1, 2, 3}) == Election(3, (1, 3))
    assert preferred_replica_election(ASSIGNMENT, (1, 2), {1, 2, 3}) is None
    assert preferred_replica_election(ASSIGNMENT, (1, 3), {1, 2}) is None


def test_a_dead_broker_leaves_the_isr_unless_it_is_the_last_member():
    assert isr_without((1, 2, 3), 2) == (1, 3)
    assert isr_without((1, 2), 4) == (1, 2)
    assert isr_without((2,), 2) == (2,)


def test_the_leaders_death_elects_the_next_isr_member_with_the_next_epoch():
    state = LeaderAndIsr(3, 7, (3, 1, 2))
    new_state, election = after_broker_failure(state, ASSIGNMENT, {1, 2}, 3, unclean_leader_election=False)
    assert new_state == LeaderAndIsr(1, 8, (1, 2)) and election == Election(1, (1, 2))


def test_the_last_isr_members_death_leaves_the_partition_offline_with_that_member_in_the_isr():
    state = LeaderAndIsr(3, 7, (3,))
    assert after_broker_failure(state, ASSIGNMENT, {1, 2}, 3, unclean_leader_election=False) == \
        (LeaderAndIsr(NO_LEADER, 8, (3,)), None)
    new_state, election = after_broker_failure(state, ASSIGNMENT, {1, 2}, 3, unclean_leader_election=True)
    assert new_state == LeaderAndIsr(1, 8, (1,)) and election.unclean


def test_a_dead_follower_leaves_the_isr_with_a_new_epoch_and_an_out_of_sync_one_changes_nothing():
    state = LeaderAndIsr(3, 7, (3, 1))
    assert after_broker_failure(state, ASSIGNMENT, {3, 2}, 1, unclean_leader_election=False) == \
        (LeaderAndIsr(3, 8, (3,)), None)
    assert after_broker_failure(state, ASSIGNMENT, {3, 1}, 2, unclean_leader_election=False) is None
    offline = LeaderAndIsr(NO_LEADER, 8, (3,))
    assert after_broker_failure(offline, ASSIGNMENT, {1}, 2, unclean_leader_election=False) is None


def test_an_offline_partition_comes_back_with_its_isr_member_or_uncleanly_with_any_replica():
    offline = LeaderAndIsr(NO_LEADER, 8, (3,))
    assert after_broker_startup(offline, ASSIGNMENT, {2}, unclean_leader_election=False) is None
    assert after_broker_startup(offline, ASSIGNMENT, {2, 3}, unclean_leader_election=False) == \
        (LeaderAndIsr(3, 9, (3,)), Election(3, (3,)))
    assert after_broker_startup(offline, ASSIGNMENT, {2}, unclean_leader_election=True) == \
        (LeaderAndIsr(2, 9, (2,)), Election(2, (2,), unclean=True))
    assert after_broker_startup(LeaderAndIsr(1, 8, (1,)), ASSIGNMENT, {1, 2}, unclean_leader_election=True) is None


def test_election_module_is_pure():
    assert imported_roots(ROOT / "controller" / "election.py") & FORBIDDEN == set()


def test_why_the_preferred_replica_may_not_lead():
    assert preferred_replica_ineligibility([1, 2, 3], (1, 2), {1, 2, 3}) == ""
    assert preferred_replica_ineligibility([1, 2, 3], (2, 3), {1, 2, 3}) == (
        "preferred replica 1 is not in the ISR [2, 3]")
    assert preferred_replica_ineligibility([1, 2, 3], (1, 2), {2, 3}) == "preferred replica 1 is not live"
    assert preferred_replica_election([1, 2, 3], (2, 3), {1, 2, 3}) is None


def test_a_reassignment_elects_the_first_live_target_replica_in_the_isr():
    assert reassign_partition_election([4, 2, 3], (1, 2, 3, 4), {1, 2, 3, 4}) == Election(4, (1, 2, 3, 4))
    assert reassign_partition_election([4, 2, 3], (1, 2, 3), {1, 2, 3, 4}) == Election(2, (1, 2, 3))
    assert reassign_partition_election([4, 2, 3], (1, 2, 3, 4), {1, 3}) == Election(3, (1, 2, 3, 4))
    assert reassign_partition_election([4, 5], (1, 2), {1, 2, 4, 5}) is None
