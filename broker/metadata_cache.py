"""Every broker's view of the cluster, kept from the controller's UpdateMetadata requests."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.apis.metadata import MetadataBroker, MetadataPartition, MetadataResponse, MetadataTopic
from protocol.apis.replica_control import LEADER_DURING_DELETE, UpdateMetadataPartitionState, UpdateMetadataRequest
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

NO_LEADER = -1


@dataclass
class MetadataCache:
    """The cluster id, live brokers with their endpoints per listener, the controller, every topic's id and every
    partition's leader, epoch, replicas and ISR. A topic's answer to Metadata is built once per listener and kept
    until an UpdateMetadata changes the topic or the live brokers: with thousands of partitions, building it for
    every request held the event loop for a quarter of a second each time."""

    broker_id: int
    controller_id: int = -1
    #: the cluster's id (/cluster/id), set when the broker has joined its cluster
    cluster_id: str | None = None
    #: broker id -> listener name -> (host, port), as advertised
    brokers: dict[int, dict[str, tuple[str, int]]] = field(default_factory=dict)
    #: topic -> partition -> its latest state
    topic_partitions: dict[str, dict[int, UpdateMetadataPartitionState]] = field(default_factory=dict)
    #: topic id -> topic, for the topics that have an id
    topic_names: dict[str, str] = field(default_factory=dict)
    _answers: dict[str, dict[str, MetadataTopic]] = field(default_factory=dict, repr=False)  # topic, listener

    def update(self, request: UpdateMetadataRequest) -> None:
        """Apply an UpdateMetadata (the caller has checked its controller epoch). A partition whose leader is
        LEADER_DURING_DELETE belongs to a topic being deleted: it is forgotten, as in Kafka."""
        self.controller_id = request.controller_id
        brokers = {b.id: {e.listener: (e.host, e.port) for e in b.endpoints} for b in request.live_brokers}
        if brokers != self.brokers:
            self._answers.clear()
        self.brokers = brokers
        for state in request.partition_states:
            self._answers.pop(state.topic, None)
            if state.leader == LEADER_DURING_DELETE:
                partitions = self.topic_partitions.get(state.topic, {})
                partitions.pop(state.partition, None)
                if not partitions:
                    self.topic_partitions.pop(state.topic, None)
                    self.topic_names = {i: t for i, t in self.topic_names.items() if t != state.topic}
            else:
                self.topic_partitions.setdefault(state.topic, {})[state.partition] = state
                if state.topic_id:
                    self.topic_names[state.topic_id] = state.topic

    def endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        """Where a live broker is reached on a listener; None if it is not alive or has no such listener."""
        return self.brokers.get(broker_id, {}).get(listener_name)

    def topics(self) -> list[str]:
        return sorted(self.topic_partitions)

    def has_topic(self, topic: str) -> bool:
        return topic in self.topic_partitions

    def topic_id(self, topic: str) -> str:
        """The topic's id ("" if it has none, or is not known)."""
        partitions = self.topic_partitions.get(topic)
        return next(iter(partitions.values())).topic_id if partitions else ""

    def contains(self, tp: TopicPartition) -> bool:
        """Whether the partition exists, as the controller last said."""
        return tp.partition in self.topic_partitions.get(tp.topic, {})

    def partition_state(self, tp: TopicPartition) -> UpdateMetadataPartitionState | None:
        return self.topic_partitions.get(tp.topic, {}).get(tp.partition)

    @property
    def live_broker_count(self) -> int:
        return len(self.brokers)

    def metadata(self, topics: list[str] | None, listener_name: str) -> MetadataResponse:
        """Answer a Metadata request that arrived on `listener_name` (topics None: all of them), whatever codec
        decoded it: brokers are given with their endpoints on that listener, as Kafka does, and brokers without
        it are left out; a partition whose live leader lacks the listener answers LISTENER_NOT_FOUND."""
        names = self.topics() if topics is None else topics
        reachable = {i: listeners[listener_name] for i, listeners in self.brokers.items() if listener_name in listeners}
        return MetadataResponse(
            brokers=[MetadataBroker(node_id=i, host=h, port=p) for i, (h, p) in sorted(reachable.items())],
            controller_id=self.controller_id, topics=[self._topic(name, listener_name) for name in names],
            cluster_id=self.cluster_id)

    def _topic(self, name: str, listener_name: str) -> MetadataTopic:
        """The topic's answer (shared between responses: never changed once built)."""
        answer = self._answers.get(name, {}).get(listener_name)
        if answer is not None:
            return answer
        partitions = self.topic_partitions.get(name)
        if not partitions:
            return MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, partitions=[])
        answer = MetadataTopic(error_code=ErrorCode.NONE, name=name, partitions=[
            self._partition(state, listener_name) for _number, state in sorted(partitions.items())],
            is_internal=name == OFFSETS_TOPIC, topic_id=self.topic_id(name))
        self._answers.setdefault(name, {})[listener_name] = answer
        return answer

    def _partition(self, state: UpdateMetadataPartitionState, listener_name: str) -> MetadataPartition:
        if state.leader not in self.brokers:
            error, leader = ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER
        elif self.endpoint(state.leader, listener_name) is None:
            error, leader = ErrorCode.LISTENER_NOT_FOUND, NO_LEADER
        else:
            error, leader = ErrorCode.NONE, state.leader
        return MetadataPartition(
            error_code=error, partition=state.partition, leader=leader,
            leader_epoch=state.leader_epoch, replicas=list(state.replicas), isr=list(state.isr),
            offline_replicas=[r for r in state.replicas if r not in self.brokers])
