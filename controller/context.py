"""`ControllerContext`: the active controller's view of the cluster (Kafka's ControllerContext).

Read from ZooKeeper when a broker becomes the controller and kept up to date by the controller's rooms, each
on the controller's single event task; a new term starts from a fresh context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from controller.zkdata import BrokerInfo, LeaderIsrAndControllerEpoch

TopicPartitionKey = tuple[str, int]


@dataclass
class ControllerContext:
    """The active controller's view of the cluster, read from ZooKeeper at election and kept up to date."""

    epoch: int = 0
    epoch_zk_version: int = 0
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    states: dict[TopicPartitionKey, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)  # brokers in controlled shutdown

    def partitions(self, topics: Iterable[str] | None = None) -> list[TopicPartitionKey]:
        names = sorted(self.assignments) if topics is None else topics
        return [(t, p) for t in names for p in sorted(self.assignments.get(t, {}))]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.assignments[topic][partition]

    def live_replicas(self, topic: str, partition: int) -> list[int]:
        return [r for r in self.replicas(topic, partition) if r in self.live_brokers]

    def electable(self) -> set[int]:
        """Brokers that may become leader: live and not shutting down (Kafka's liveBrokerIds)."""
        return set(self.live_brokers) - self.shutting_down

    def offline_partitions(self, topics: Iterable[str] | None = None) -> list[TopicPartitionKey]:
        """Partitions without a live leader (NO_LEADER, or a leader that is not registered)."""
        return [tp for tp in self.partitions(topics) if tp in self.states and self.states[tp].leader not in
                self.live_brokers]

    def partition_infos(
        self, partitions: Iterable[TopicPartitionKey]
    ) -> list[tuple[str, int, LeaderIsrAndControllerEpoch, list[int]]]:
        """(topic, partition, state, replicas) of the partitions that have a state, for UpdateMetadata."""
        return [(t, p, self.states[(t, p)], self.replicas(t, p)) for t, p in partitions if (t, p) in self.states]
