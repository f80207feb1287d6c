"""kafka-reassign-partitions' files and plans: parsing with Kafka's refusals, a proposal by seed 001's rule that
keeps the replication factor, and each partition's status."""

from __future__ import annotations

import json

import pytest

from client.reassignment import (
    ReassignmentError,
    ReassignmentStatus,
    current_plan,
    parse_plan,
    parse_topics_to_move,
    plan_json,
    propose,
    status_lines,
    statuses,
)
from zk.znodes import TopicAssignment

ASSIGNMENTS = {
    "topic1": TopicAssignment({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}),
    "moving": TopicAssignment({0: [4, 1, 2], 1: [2, 3]}, adding={0: [4]}, removing={0: [1]}),
}


def test_topics_to_move():
    assert parse_topics_to_move('{"topics": [{"topic": "foo"}, {"topic": "bar"}], "version": 1}') == ["foo", "bar"]
    for bad in ('{"topics": []}', "[]", '{"topics": [{"name": "foo"}]}', '{"topics": [{"topic": "a"}, '
                '{"topic": "a"}]}', "not json"):
        with pytest.raises(ReassignmentError):
            parse_topics_to_move(bad)


def test_plans_are_parsed_and_refused_as_kafka_does():
    text = '{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[4,5],"log_dirs":["any","any"]}]}'
    assert parse_plan(text) == {("foo", 1): [4, 5]}
    for bad, message in [
        ('{"version":1,"partitions":[]}', "cannot be empty"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}',
         "duplicate topic partitions"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[]}]}', "replica list cannot be empty"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}', "duplicate entries"),
        ('{"partitions":[{"topic":"a","partition":"0","replicas":[1]}]}', "needs a topic and a partition"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":["1"]}]}', "list of broker ids"),
    ]:
        with pytest.raises(ReassignmentError, match=message):
            parse_plan(bad)


def test_the_proposal_spreads_each_topic_over_the_brokers_by_seed_001_keeping_its_replication_factor():
    # Seed 001's walk-through moves topic1 onto brokers 4..7.
    assert propose(ASSIGNMENTS, ["topic1"], [7, 4, 6, 5]) == {
        ("topic1", 0): [4, 5, 6], ("topic1", 1): [5, 6, 7], ("topic1", 2): [6, 7, 4]}
    with pytest.raises(ReassignmentError, match="topic topic1: Replication factor: 3 larger than available brokers: 2"):
        propose(ASSIGNMENTS, ["topic1"], [1, 2])


def test_the_current_plan_of_a_partition_being_reassigned_is_its_original_replicas():
    assert current_plan(ASSIGNMENTS, [("moving", 0), ("moving", 1)]) == {("moving", 0): [1, 2], ("moving", 1): [2, 3]}


def test_plans_print_in_kafkas_format():
    printed = json.loads(plan_json({("b", 0): [1, 2], ("a", 1): [3]}))
    assert printed == {"version": 1, "partitions": [
        {"topic": "a", "partition": 1, "replicas": [3], "log_dirs": ["any"]},
        {"topic": "b", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}]}


def test_statuses_complete_in_progress_and_failed():
    plan = {("topic1", 0): [1, 2, 3], ("topic1", 1): [4, 5], ("topic1", 2): [3, 1, 2], ("moving", 0): [4, 2],
            ("gone", 0): [1]}
    result = statuses(plan, ASSIGNMENTS, in_progress=[("topic1", 2)])
    assert result == {
        ("topic1", 0): ReassignmentStatus.COMPLETE,
        ("topic1", 1): ReassignmentStatus.FAILED,
        ("topic1", 2): ReassignmentStatus.IN_PROGRESS,  # still in /admin/reassign_partitions
        ("moving", 0): ReassignmentStatus.IN_PROGRESS,  # the topic znode still adds and removes replicas
        ("gone", 0): ReassignmentStatus.FAILED,
    }
    two = {("topic1", 0): ReassignmentStatus.COMPLETE, ("moving", 0): ReassignmentStatus.IN_PROGRESS}
    assert status_lines(two) == [
        "Status of partition reassignment:",
        "Reassignment of partition moving-0 is still in progress",
        "Reassignment of partition topic1-0 completed successfully",
    ]
