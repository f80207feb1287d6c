"""Where a group's coordinator is (FindCoordinator): the leader of the group's partition of __consumer_offsets,
reached on the listener the request came in on. The topic is created on first use (broker/auto_topic_creation.py):
offsets.topic.num.partitions partitions of offsets.topic.replication.factor replicas, refused (logged) while fewer
brokers are alive; until it has a leader the answer is COORDINATOR_NOT_AVAILABLE, and clients ask again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from broker.auto_topic_creation import InternalTopic
from broker.coordinator.config import GroupCoordinatorConfig
from broker.log.config import TOPIC_NAMES
from protocol.apis.replica_control import UpdateMetadataPartitionState
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

NO_NODE = -1


class ClusterView(Protocol):
    """What FindCoordinator reads of the broker's metadata cache."""

    def has_topic(self, topic: str) -> bool: ...

    def partition_state(self, tp: TopicPartition) -> UpdateMetadataPartitionState | None: ...

    def endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None: ...


@dataclass(frozen=True, slots=True)
class CoordinatorNode:
    """A group's coordinator, or COORDINATOR_NOT_AVAILABLE (no node)."""

    error: ErrorCode
    node_id: int = NO_NODE
    host: str = ""
    port: int = -1


NOT_AVAILABLE = CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)


def offsets_topic_configs(config: GroupCoordinatorConfig) -> dict[str, str]:
    """Kafka's topic configs of __consumer_offsets (GroupCoordinator.offsetsTopicConfigs): compacted, so that the
    log cleaner keeps each group's and each committed offset's latest record, stored as its producer compressed it."""
    kafkas = {"cleanup.policy": "compact", "segment.bytes": str(config.offsets_topic_segment_bytes),
              "compression.type": "producer"}
    return {name: value for name, value in kafkas.items() if name in TOPIC_NAMES}


def offsets_topic(config: GroupCoordinatorConfig) -> InternalTopic:
    """How __consumer_offsets is created."""
    return InternalTopic(config.offsets_topic_partitions, config.offsets_topic_replication_factor,
                         offsets_topic_configs(config), "offsets.topic.replication.factor")


class TopicCreation(Protocol):
    """Topics created on first use."""

    def create_in_background(self, name: str) -> None: ...


class OffsetsTopic:
    """Finds groups' coordinators, creating __consumer_offsets when it does not exist yet."""

    def __init__(self, cluster: ClusterView, creation: TopicCreation, partition_for: Callable[[str], int]) -> None:
        self._cluster = cluster
        self._creation = creation
        self._partition_for = partition_for

    def coordinator(self, group_id: str, listener_name: str) -> CoordinatorNode:
        """The coordinator of `group_id` on `listener_name` (Kafka's KafkaApis.getCoordinator for a group key)."""
        if not self._cluster.has_topic(OFFSETS_TOPIC):
            self._creation.create_in_background(OFFSETS_TOPIC)
            return NOT_AVAILABLE
        state = self._cluster.partition_state(TopicPartition(OFFSETS_TOPIC, self._partition_for(group_id)))
        endpoint = None if state is None else self._cluster.endpoint(state.leader, listener_name)
        if state is None or endpoint is None:
            return NOT_AVAILABLE
        return CoordinatorNode(ErrorCode.NONE, state.leader, *endpoint)
