"""`ControllerContext`: the active controller's view of the cluster (Kafka's ControllerContext).

Read from ZooKeeper when a broker becomes the controller and kept up to date by the controller's rooms, each
on the controller's single event task. A broker has one context, shared by every room: a new term, and a
resignation, reset it in place (Kafka's resetContext).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from protocol.topic_partition import TopicPartition
from zk.znodes import BrokerInfo, LeaderIsrAndControllerEpoch, PendingDeletion


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """A reassignment in progress: the original replicas (ORS) and the target ones (TRS). While it runs the
    partition is assigned RS = TRS + ORS (target first, so the target's head is the preferred replica)."""

    original: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def replicas(self) -> list[int]:
        return list(dict.fromkeys(self.target + self.original))

    @property
    def adding(self) -> list[int]:
        return [r for r in self.target if r not in self.original]

    @property
    def removing(self) -> list[int]:
        return [r for r in self.original if r not in self.target]


@dataclass
class ControllerContext:
    """The active controller's view of the cluster, read from ZooKeeper at election and kept up to date."""

    epoch: int = 0
    epoch_zk_version: int = 0
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)  # brokers in controlled shutdown
    topic_ids: dict[str, str] = field(default_factory=dict)
    reassignments: dict[TopicPartition, PartitionReassignment] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)  # queued for deletion, not yet gone
    #: Replicas that brokers which were down must delete when they come back, by broker id.
    pending_deletions: dict[int, set[PendingDeletion]] = field(default_factory=dict)

    def reset(self, *, epoch: int = 0, epoch_zk_version: int = 0) -> None:
        """Forget everything: a new term (with its epoch and the version of /controller_epoch it was elected
        with) starts from nothing, and so does a broker that resigned (Kafka's resetContext)."""
        fresh = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        for each in fields(self):
            setattr(self, each.name, getattr(fresh, each.name))

    def partitions(self, topics: Iterable[str] | None = None) -> list[TopicPartition]:
        names = sorted(self.assignments) if topics is None else topics
        return [TopicPartition(t, p) for t in names for p in sorted(self.assignments.get(t, {}))]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.assignments[topic][partition]

    def live_replicas(self, topic: str, partition: int) -> list[int]:
        return [r for r in self.replicas(topic, partition) if r in self.live_brokers]

    def electable(self) -> set[int]:
        """Brokers that may become leader: live and not shutting down (Kafka's liveBrokerIds)."""
        return set(self.live_brokers) - self.shutting_down

    def serving_partitions(self) -> list[TopicPartition]:
        """The partitions of topics that are not being deleted: the ones leaders are elected and kept for."""
        return self.partitions(t for t in sorted(self.assignments) if t not in self.topics_to_delete)

    def offline_partitions(self, topics: Iterable[str] | None = None) -> list[TopicPartition]:
        """Partitions without a live leader (NO_LEADER, or a leader that is not registered), but those of topics
        being deleted."""
        return [tp for tp in self.partitions(topics) if tp in self.states and self.states[tp].leader not in
                self.live_brokers and tp.topic not in self.topics_to_delete]

    def partition_infos(
        self, partitions: Iterable[TopicPartition]
    ) -> list[tuple[str, int, LeaderIsrAndControllerEpoch, list[int]]]:
        """(topic, partition, state, replicas) of the partitions that have a state, for UpdateMetadata."""
        return [(*tp, self.states[tp], self.replicas(*tp)) for tp in partitions if tp in self.states]
