"""AlterPartitionReassignments' checks in the controller, as Kafka's validateReplicas and its cancel: each partition
refused gets Kafka's error and nothing is started (no ZooKeeper nor broker is touched)."""

from __future__ import annotations

import asyncio

from controller.context import ControllerContext, PartitionReassignment
from controller.reassignment import ReassignmentManager
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from zk.znodes import BrokerInfo


def refusals(targets: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, ErrorCode]:
    context = ControllerContext(live_brokers={b: BrokerInfo(b, "127.0.0.1", 9092) for b in (1, 2, 3)},
                                assignments={"t": {0: [1, 2], 1: [2, 3, 1]}, "gone": {0: [1]}},
                                topics_to_delete={"gone"})
    context.reassignments[TopicPartition("t", 1)] = PartitionReassignment(original=(2, 1), target=(3, 1))
    manager = ReassignmentManager(context, None, None, None, None, None, None, None)  # type: ignore[arg-type]
    outcomes = asyncio.run(manager.alter(targets))
    assert context.assignments["t"] == {0: [1, 2], 1: [2, 3, 1]}  # nothing started
    return {tp: code for tp, (code, _) in outcomes.items()}


def test_targets_kafka_refuses_are_refused_with_its_errors() -> None:
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    for target in ([], [1, 1], [1, -2], [1, 4]):  # empty, twice, negative, a broker that is not live
        assert refusals({t0: target}) == {t0: ErrorCode.INVALID_REPLICA_ASSIGNMENT}, target
    assert refusals({t1: [2, 1, 7]}) == {t1: ErrorCode.INVALID_REPLICA_ASSIGNMENT}  # checked against the original
    assert refusals({TopicPartition("t", 5): [1], TopicPartition("nope", 0): None,
                     TopicPartition("gone", 0): [1]}) == {
        TopicPartition("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        TopicPartition("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        TopicPartition("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_cancelling_a_partition_not_being_reassigned_is_no_reassignment_in_progress() -> None:
    assert refusals({TopicPartition("t", 0): None}) == {
        TopicPartition("t", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
