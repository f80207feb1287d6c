"""The partitions this broker hosts, and the lookups every request path makes in them."""

from __future__ import annotations

from broker.log.log import Log
from broker.replication.partition import Partition
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition


class HostedPartitions:
    """This broker's partitions by topic-partition, and those whose log a StopReplica deleted."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.partitions: dict[TopicPartition, Partition[Log]] = {}
        #: Partitions whose log a StopReplica deleted (until they are created again): requests for them are
        #: answered UNKNOWN_TOPIC_OR_PARTITION rather than NOT_LEADER_OR_FOLLOWER.
        self._deleted: set[TopicPartition] = set()

    def get(self, tp: TopicPartition) -> Partition[Log] | None:
        return self.partitions.get(tp)

    def missing_partition_error(self, tp: TopicPartition) -> ErrorCode:
        """What a request for a partition that is no longer hosted here gets: UNKNOWN_TOPIC_OR_PARTITION if its
        log was deleted (its topic is being deleted, or it moved away), else NOT_LEADER_OR_FOLLOWER."""
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in self._deleted else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def leader_partition(self, tp: TopicPartition, current_leader_epoch: int, *, require_leader: bool = True
                         ) -> Partition[Log]:
        """The partition a request names, checked against the leader epoch it believes current (and, with
        ``require_leader``, that this broker leads it); KafkaError if it is not hosted or fails the checks."""
        partition = self.partitions.get(tp)
        if partition is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not hosted on broker {self.broker_id}")
        partition.check_leader_epoch(current_leader_epoch, require_leader=require_leader)
        return partition

    def add(self, tp: TopicPartition, partition: Partition[Log]) -> None:
        self.partitions[tp] = partition
        self._deleted.discard(tp)

    def remove(self, tp: TopicPartition, *, deleted: bool) -> Partition[Log] | None:
        """Forget ``tp``; ``deleted``: its log is being deleted. The partition it was, if hosted."""
        partition = self.partitions.pop(tp, None)
        if deleted:
            self._deleted.add(tp)
        return partition

    def describe(self, topics: list[str] | None) -> list[Partition[Log]]:
        """The partitions of ``topics`` (None: all), in topic-partition order."""
        wanted = None if topics is None else set(topics)
        return [p for tp, p in sorted(self.partitions.items()) if wanted is None or tp.topic in wanted]
