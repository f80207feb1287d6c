"""The broker's lines in the state-change log about a partition's leader and ISR (as it adopted or ignored them)."""

from __future__ import annotations

from protocol.apis.replica_control import LeaderAndIsrPartitionState
from protocol.state_change import record_state_change
from protocol.topic_partition import TopicPartition
from zk.znodes import LeaderIsrAndControllerEpoch


def record_partition_state(broker_id: int, tp: TopicPartition,
                           state: LeaderAndIsrPartitionState | LeaderIsrAndControllerEpoch, reason: str) -> None:
    """Record ``tp``'s leader, leader epoch and ISR in ``state``, and why, from broker ``broker_id``."""
    record_state_change(source="broker", broker_id=broker_id, topic=tp.topic, partition=tp.partition,
                        controller_epoch=state.controller_epoch, leader_epoch=state.leader_epoch,
                        leader=state.leader, isr=state.isr, reason=reason)
