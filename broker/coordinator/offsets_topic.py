"""Where a group's coordinator is (FindCoordinator): the leader of the group's partition of __consumer_offsets,
reached on the listener the request came in on. The topic is created on first use, as Kafka's
AutoTopicCreationManager does: offsets.topic.num.partitions partitions of offsets.topic.replication.factor
replicas, refused (logged) while fewer brokers are alive; until it has a leader the answer is
COORDINATOR_NOT_AVAILABLE, and clients ask again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from broker.controller_client import ControllerUnreachableError
from broker.coordinator.config import GroupCoordinatorConfig
from broker.log.config import TOPIC_NAMES
from protocol.apis.replica_control import UpdateMetadataPartitionState
from protocol.apis.topics import CreatableTopic, CreateTopicsRequest, CreateTopicsResponse
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

NO_NODE = -1
TopicCreator = Callable[[CreateTopicsRequest], Awaitable[CreateTopicsResponse]]


class ClusterView(Protocol):
    """What FindCoordinator reads of the broker's metadata cache."""

    @property
    def live_broker_count(self) -> int: ...

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
    """Kafka's topic configs of __consumer_offsets (GroupCoordinator.offsetsTopicConfigs), those minikafka's logs
    have (cleanup.policy and compression.type are topic configs once its logs compact and compress)."""
    kafkas = {"cleanup.policy": "compact", "segment.bytes": str(config.offsets_topic_segment_bytes),
              "compression.type": "producer"}
    return {name: value for name, value in kafkas.items() if name in TOPIC_NAMES}


class OffsetsTopic:
    """Finds groups' coordinators, creating __consumer_offsets when it does not exist yet."""

    def __init__(self, config: GroupCoordinatorConfig, cluster: ClusterView, create_topics: TopicCreator,
                 partition_for: Callable[[str], int]) -> None:
        self._config = config
        self._cluster = cluster
        self._create_topics = create_topics
        self._partition_for = partition_for
        self._creation: asyncio.Task[None] | None = None

    def coordinator(self, group_id: str, listener_name: str) -> CoordinatorNode:
        """The coordinator of `group_id` on `listener_name` (Kafka's KafkaApis.getCoordinator for a group key)."""
        if not self._cluster.has_topic(OFFSETS_TOPIC):
            self._create()
            return NOT_AVAILABLE
        state = self._cluster.partition_state(TopicPartition(OFFSETS_TOPIC, self._partition_for(group_id)))
        endpoint = None if state is None else self._cluster.endpoint(state.leader, listener_name)
        if state is None or endpoint is None:
            return NOT_AVAILABLE
        return CoordinatorNode(ErrorCode.NONE, state.leader, *endpoint)

    def _create(self) -> None:
        """Ask the controller to create the topic, unless a creation is in flight or too few brokers are alive."""
        alive, replicas = self._cluster.live_broker_count, self._config.offsets_topic_replication_factor
        if alive < replicas:
            log.error("Number of alive brokers '%d' does not meet the required replication factor '%d' for auto "
                      "creation of topic '%s' which is configured by offsets.topic.replication.factor. This error "
                      "can be ignored if the cluster is starting up and not all brokers are up yet.", alive,
                      replicas, OFFSETS_TOPIC)
            return
        if self._creation is None or self._creation.done():
            self._creation = asyncio.get_running_loop().create_task(self._send_creation(), name="create offsets")

    async def _send_creation(self) -> None:
        request = CreateTopicsRequest(topics=[CreatableTopic(
            name=OFFSETS_TOPIC, num_partitions=self._config.offsets_topic_partitions,
            replication_factor=self._config.offsets_topic_replication_factor,
            configs=offsets_topic_configs(self._config))], timeout_ms=0)
        try:
            [result] = (await self._create_topics(request)).topics
        except ControllerUnreachableError as e:  # the next FindCoordinator asks again
            log.info("could not ask the controller to create %s: %s", OFFSETS_TOPIC, e)
            return
        error = ErrorCode.from_code(result.error_code)
        if error in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.REQUEST_TIMED_OUT):
            log.info("sent the creation of %s to the controller (%s)", OFFSETS_TOPIC, error.name)
        else:
            log.warning("the controller did not create %s: %s %s", OFFSETS_TOPIC, error.name,
                        result.error_message or "")
