"""Replica assignment (Kafka's, whose first round is seed 001's) and topic-creation rules; the controller's pure
modules import no I/O framework."""

from collections import Counter
from pathlib import Path

import pytest

from controller.assignment import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    assign_replicas,
    topics_collide,
    validate_assignment,
    validate_topic_name,
)
from protocol.errors import ErrorCode
from tests.unit.test_pure_core import FORBIDDEN, ROOT, imported_roots


def test_seed_001_example_eight_brokers_eight_partitions_rf3():
    # Seed 001: topic1 with 8 partitions and replication factor 3 on brokers 1..8; partition 0 is led
    # by broker 1, partition 1 by broker 2, partition 2 by broker 3, partition 3 by broker 4.
    assignment = assign_replicas(range(1, 9), num_partitions=8, replication_factor=3)
    assert assignment == {
        0: [1, 2, 3],
        1: [2, 3, 4],
        2: [3, 4, 5],
        3: [4, 5, 6],
        4: [5, 6, 7],
        5: [6, 7, 8],
        6: [7, 8, 1],
        7: [8, 1, 2],
    }


def test_brokers_are_sorted_first_and_ids_need_not_be_contiguous():
    assert assign_replicas([30, 10, 20], 4, 2) == {0: [10, 20], 1: [20, 30], 2: [30, 10], 3: [10, 30]}


def test_followers_shift_every_round_as_kafka_assigns_them():
    # Kafka's AdminUtils from start index 0 on brokers 1..3: the second round's followers are shifted by one.
    assert assign_replicas([1, 2, 3], 9, 3) == {
        0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2],
        3: [1, 3, 2], 4: [2, 1, 3], 5: [3, 2, 1],
        6: [1, 2, 3], 7: [2, 3, 1], 8: [3, 1, 2],
    }


@pytest.mark.parametrize(("brokers", "rf"), [(3, 3), (3, 2), (5, 3), (8, 3)])
def test_a_failed_brokers_leaderships_have_every_other_broker_as_first_follower(brokers: int, rf: int):
    # What the shift is for: whoever fails, its partitions' next preferred replicas are spread over the others.
    assignment = assign_replicas(range(1, brokers + 1), brokers * (brokers - 1) * 10, rf)
    for failed in range(1, brokers + 1):
        successors = Counter(replicas[1] for replicas in assignment.values() if replicas[0] == failed)
        assert set(successors) == set(range(1, brokers + 1)) - {failed}
        assert max(successors.values()) - min(successors.values()) <= 1


@pytest.mark.parametrize(("brokers", "partitions", "rf"), [(3, 6, 3), (4, 8, 2), (5, 10, 1), (3, 300, 2)])
def test_leaders_and_replicas_are_spread_evenly(brokers: int, partitions: int, rf: int):
    assignment = assign_replicas(range(brokers), partitions, rf)
    assert sorted(assignment) == list(range(partitions))
    leaders = Counter(replicas[0] for replicas in assignment.values())
    hosted = Counter(r for replicas in assignment.values() for r in replicas)
    assert max(leaders.values()) - min(leaders.values()) <= 1
    assert max(hosted.values()) - min(hosted.values()) <= 1
    assert set(hosted) == set(range(brokers))
    assert all(len(set(replicas)) == rf for replicas in assignment.values())


def test_replication_factor_above_the_live_brokers_is_refused():
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 2") as e:
        assign_replicas([1, 2], 1, 3)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([], 1, 1)


@pytest.mark.parametrize(
    ("partitions", "rf", "error"), [(0, 1, InvalidPartitionsError), (1, 0, InvalidReplicationFactorError)]
)
def test_counts_below_one_are_refused(partitions: int, rf: int, error: type[Exception]):
    with pytest.raises(error, match="must be larger than 0"):
        assign_replicas([1, 2, 3], partitions, rf)


@pytest.mark.parametrize("name", ["events", "a.b_c-D9", "x" * 249, "..."])
def test_legal_topic_names(name: str):
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "empty"),
        (".", '"." or ".."'),
        ("..", '"." or ".."'),
        ("x" * 250, "longer than 249"),
        ("a/b", "character other than"),
        ("é", "character other than"),
        ("a b", "character other than"),
    ],
)
def test_illegal_topic_names(name: str, problem: str):
    with pytest.raises(InvalidTopicError, match=problem) as e:
        validate_topic_name(name)
    assert e.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_topics_collide_when_dots_and_underscores_are_swapped():
    assert topics_collide("a.b", "a_b")
    assert not topics_collide("a.b", "a.b")
    assert not topics_collide("a.b", "a-b")


def test_explicit_assignment_is_kept_in_partition_order():
    assert validate_assignment([(1, [2, 3]), (0, [3, 1])], {1, 2, 3}) == {0: [3, 1], 1: [2, 3]}


@pytest.mark.parametrize(
    ("assignment", "problem"),
    [
        ([], "empty"),
        ([(0, [1]), (0, [2])], "more than once"),
        ([(0, [])], "no replicas"),
        ([(0, [1, 1])], "Duplicate replica"),
        ([(0, [1, 9])], "not live: \\[9\\]"),
        ([(0, [1]), (2, [2])], "consecutive 0-based"),
        ([(-1, [1])], "consecutive 0-based"),
        ([(0, [1, 2]), (1, [3])], "same number of replicas"),
    ],
)
def test_bad_explicit_assignments(assignment: list[tuple[int, list[int]]], problem: str):
    with pytest.raises(InvalidReplicaAssignmentError, match=problem) as e:
        validate_assignment(assignment, {1, 2, 3})
    assert e.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


@pytest.mark.parametrize("module", ["controller/assignment.py", "zk/znodes.py"])
def test_pure_controller_modules_import_no_io_framework(module: str):
    assert imported_roots(ROOT / Path(module)) & FORBIDDEN == set()


def test_added_partitions_continue_the_assignment():
    # topic1 of seed 001 grown from 8 to 10 partitions on the same 8 brokers: placed as in a topic created with 10,
    # partition i on broker i mod 8 and its followers in the second round's shift.
    assert assign_replicas(range(1, 9), 2, 3, first_partition=8) == {8: [1, 3, 4], 9: [2, 4, 5]}
    assert assign_replicas([1, 2, 3], 6, 2) == {**assign_replicas([1, 2, 3], 4, 2),
                                                **assign_replicas([1, 2, 3], 2, 2, first_partition=4)}
