"""DescribeProducers, answered by a partition's replica (leader or follower, as Kafka's Partition.activeProducerState)
from its log's idempotent producer state."""

from __future__ import annotations

from broker.replication.hosted import HostedPartitions
from protocol.apis.producers import (
    DescribeProducersPartitionResult,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersTopicResult,
    ProducerState,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition

NO_LEADER_EPOCH = -1  # a request with no leader epoch of its own: any is current


def describe_producers(hosted: HostedPartitions, request: DescribeProducersRequest) -> DescribeProducersResponse:
    """Each asked partition's producers: id, epoch, last sequence and timestamp; UNKNOWN_TOPIC_OR_PARTITION for a
    partition not hosted here."""
    topics = []
    for topic in request.topics:
        results = []
        for index in topic.partition_indexes:
            result = DescribeProducersPartitionResult(partition_index=index, error_code=ErrorCode.NONE)
            results.append(result)
            try:
                partition = hosted.leader_partition(TopicPartition(topic.name, index), NO_LEADER_EPOCH,
                                                    require_leader=False)
            except KafkaError as e:
                result.error_code, result.error_message = e.code, e.message
                continue
            producers = partition.log.producer_state().producers
            result.active_producers = [
                ProducerState(producer_id=producer_id, producer_epoch=entry.epoch,
                              last_sequence=-1 if entry.last_sequence is None else entry.last_sequence,
                              last_timestamp=entry.last_timestamp)
                for producer_id, entry in sorted(producers.items())]
        topics.append(DescribeProducersTopicResult(name=topic.name, partitions=results))
    return DescribeProducersResponse(topics=topics)
