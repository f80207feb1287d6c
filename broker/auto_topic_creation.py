"""Topics created on first use (Kafka's AutoTopicCreationManager): a Metadata request naming a topic that does not
exist, from a client that allows it (and with auto.create.topics.enable), and the first FindCoordinator, which needs
__consumer_offsets. Either way the broker asks the active controller with a CreateTopics request of its own
(broker/controller_client.py), as any admin client would: the controller creates the topic as it creates every
other. A topic is num.partitions partitions of default.replication.factor replicas; __consumer_offsets has its own
settings and configs. One creation per topic is in flight at a time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from broker.controller_client import ControllerUnreachableError
from protocol.apis.topics import CreatableTopic, CreateTopicsRequest, CreateTopicsResponse
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

TopicCreator = Callable[[CreateTopicsRequest], Awaitable[CreateTopicsResponse]]
#: The controller's answers that mean the topic exists now (timeout 0: it does not wait for the replicas).
CREATED = (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.REQUEST_TIMED_OUT)


class LiveBrokers(Protocol):
    """How many brokers are alive, as the metadata cache knows."""

    @property
    def live_broker_count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """How an internal topic is created: its partitions, replicas and configs, and the setting that names its
    replication factor (for the log line of a cluster with too few brokers)."""

    num_partitions: int
    replication_factor: int
    configs: dict[str, str]
    replication_setting: str


class AutoTopicCreationManager:
    """Creates topics on first use through the controller."""

    def __init__(self, cluster: LiveBrokers, create_topics: TopicCreator, *, auto_create_topics_enable: bool,
                 num_partitions: int, default_replication_factor: int, internal: dict[str, InternalTopic]) -> None:
        #: whether topics named in Metadata are created (internal topics are, whatever it says)
        self.auto_create_topics_enable = auto_create_topics_enable
        self._cluster = cluster
        self._create_topics = create_topics
        self._num_partitions = num_partitions
        self._replication_factor = default_replication_factor
        self._internal = internal
        self._in_flight: dict[str, asyncio.Task[ErrorCode]] = {}

    async def create_topics(self, names: Iterable[str]) -> dict[str, ErrorCode]:
        """Create the topics and say what a Metadata answer tells of each: LEADER_NOT_AVAILABLE once created (its
        partitions have no leader the broker knows of yet), UNKNOWN_TOPIC_OR_PARTITION while the controller cannot
        be asked, or why the controller refused it (INVALID_TOPIC_EXCEPTION, INVALID_REPLICATION_FACTOR, ...)."""
        tasks = {name: self._creation(name) for name in dict.fromkeys(names)}
        return {name: await task for name, task in tasks.items()}

    def create_in_background(self, name: str) -> None:
        """Start creating the topic, unless its creation is in flight; the caller does not wait."""
        self._creation(name)

    def _creation(self, name: str) -> asyncio.Task[ErrorCode]:
        task = self._in_flight.get(name)
        if task is None:
            task = self._in_flight[name] = asyncio.get_running_loop().create_task(self._create(name),
                                                                                 name=f"create {name}")
            task.add_done_callback(lambda _done: self._in_flight.pop(name, None))
        return task

    def _creatable(self, name: str) -> tuple[CreatableTopic, str]:
        internal = self._internal.get(name)
        if internal is None:
            return CreatableTopic(name=name, num_partitions=self._num_partitions,
                                  replication_factor=self._replication_factor), "default.replication.factor"
        return CreatableTopic(name=name, num_partitions=internal.num_partitions,
                              replication_factor=internal.replication_factor,
                              configs=dict(internal.configs)), internal.replication_setting

    async def _create(self, name: str) -> ErrorCode:
        topic, setting = self._creatable(name)
        alive = self._cluster.live_broker_count
        if alive < topic.replication_factor:
            log.error("Number of alive brokers '%d' does not meet the required replication factor '%d' for auto "
                      "creation of topic '%s' which is configured by %s. This error can be ignored if the cluster "
                      "is starting up and not all brokers are up yet.", alive, topic.replication_factor, name,
                      setting)
            return ErrorCode.INVALID_REPLICATION_FACTOR
        try:
            [result] = (await self._create_topics(CreateTopicsRequest(topics=[topic], timeout_ms=0))).topics
        except ControllerUnreachableError as e:  # the client asks again
            log.info("could not ask the controller to create topic %s: %s", name, e)
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        error = ErrorCode.from_code(result.error_code)
        if error in CREATED:
            log.info("topic %s created on first use (%s)", name, error.name)
            return ErrorCode.LEADER_NOT_AVAILABLE
        if error == ErrorCode.NOT_CONTROLLER:  # the controller moved meanwhile
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        log.warning("the controller did not create topic %s: %s %s", name, error.name, result.error_message or "")
        return error
