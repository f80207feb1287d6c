"""Every broker's view of the cluster, kept from the controller's UpdateMetadata requests."""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.log.checkpoint import TopicPartition
from protocol.errors import ErrorCode
from protocol.messages import (
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
    """Live brokers, the controller and every partition's leader, epoch, replicas and ISR."""

    broker_id: int
    controller_id: int = -1
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: dict[TopicPartition, UpdateMetadataPartitionState] = field(default_factory=dict)

    def update(self, request: UpdateMetadataRequest) -> None:
        """Apply an UpdateMetadata (the caller has checked its controller epoch)."""
        self.controller_id = request.controller_id
        self.brokers = {b.id: (b.host, b.port) for b in request.live_brokers}
        for state in request.partition_states:
            self.partitions[TopicPartition(state.topic, state.partition)] = state

    def topics(self) -> list[str]:
        return sorted({tp.topic for tp in self.partitions})

    def metadata(self, topics: list[str] | None) -> MetadataResponse:
        """Answer a Metadata request (topics None: all of them)."""
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
                                        partitions=[self._partition(state) for state in states]))
        return MetadataResponse(
            brokers=[MetadataBroker(node_id=i, host=h, port=p) for i, (h, p) in sorted(self.brokers.items())],
            controller_id=self.controller_id, topics=answer)

    def _partition(self, state: UpdateMetadataPartitionState) -> MetadataPartition:
        leader_alive = state.leader in self.brokers
        return MetadataPartition(
            error_code=ErrorCode.NONE if leader_alive else ErrorCode.LEADER_NOT_AVAILABLE,
            partition=state.partition, leader=state.leader if leader_alive else NO_LEADER,
            leader_epoch=state.leader_epoch, replicas=list(state.replicas), isr=list(state.isr),
            offline_replicas=[r for r in state.replicas if r not in self.brokers])
