"""Every broker's view of the cluster, kept from the controller's UpdateMetadata requests."""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.log.checkpoint import TopicPartition
from protocol.errors import ErrorCode
from protocol.messages import (
    LEADER_DURING_DELETE,
    MetadataBroker,
    MetadataPartition,
    MetadataResponse,
    MetadataTopic,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)

NO_LEADER = -1


@dataclass
class MetadataCache:
    """Live brokers with their endpoints per listener, the controller and every partition's leader, epoch,
    replicas and ISR."""

    broker_id: int
    controller_id: int = -1
    #: broker id -> listener name -> (host, port), as advertised
    brokers: dict[int, dict[str, tuple[str, int]]] = field(default_factory=dict)
    partitions: dict[TopicPartition, UpdateMetadataPartitionState] = field(default_factory=dict)

    def update(self, request: UpdateMetadataRequest) -> None:
        """Apply an UpdateMetadata (the caller has checked its controller epoch). A partition whose leader is
        LEADER_DURING_DELETE belongs to a topic being deleted: it is forgotten, as in Kafka."""
        self.controller_id = request.controller_id
        self.brokers = {b.id: {e.listener: (e.host, e.port) for e in b.endpoints} for b in request.live_brokers}
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            if state.leader == LEADER_DURING_DELETE:
                self.partitions.pop(tp, None)
            else:
                self.partitions[tp] = state

    def endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        """Where a live broker is reached on a listener; None if it is not alive or has no such listener."""
        return self.brokers.get(broker_id, {}).get(listener_name)

    def topics(self) -> list[str]:
        return sorted({tp.topic for tp in self.partitions})

    def metadata(self, topics: list[str] | None, listener_name: str) -> MetadataResponse:
        """Answer a Metadata request that arrived on `listener_name` (topics None: all of them), whatever codec
        decoded it: brokers are given with their endpoints on that listener, as Kafka does, and brokers without
        it are left out; a partition whose live leader lacks the listener answers LISTENER_NOT_FOUND."""
        names = self.topics() if topics is None else topics
        by_topic: dict[str, list[UpdateMetadataPartitionState]] = {}
        for tp, state in sorted(self.partitions.items()):
            by_topic.setdefault(tp.topic, []).append(state)
        answer = []
        for name in names:
            states = by_topic.get(name)
            if not states:
                answer.append(MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, partitions=[]))
                continue
            answer.append(MetadataTopic(error_code=ErrorCode.NONE, name=name,
                                        partitions=[self._partition(state, listener_name) for state in states]))
        reachable = {i: listeners[listener_name] for i, listeners in self.brokers.items() if listener_name in listeners}
        return MetadataResponse(
            brokers=[MetadataBroker(node_id=i, host=h, port=p) for i, (h, p) in sorted(reachable.items())],
            controller_id=self.controller_id, topics=answer)

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
