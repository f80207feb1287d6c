"""ListOffsets, OffsetsForLeaderEpoch and DeleteRecords, answered by the leader from its partitions' logs."""

from __future__ import annotations

from broker.replication.hosted import HostedPartitions
from protocol.apis.fetch import CONSUMER_REPLICA_ID
from protocol.apis.offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.records_deletion import (
    HIGH_WATERMARK,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from protocol.apis.shapes import Topic
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition


def list_offsets(hosted: HostedPartitions, request: ListOffsetsRequest) -> ListOffsetsResponse:
    """Earliest (log start), latest (HW for consumers, LEO for replicas) or by timestamp, on the leader
    (Partition.list_offset)."""
    topics = []
    for topic in request.topics:
        parts = []
        for asked in topic.partitions:
            tp = TopicPartition(topic.name, asked.partition)
            response = ListOffsetsPartitionResponse(partition=asked.partition, error_code=ErrorCode.NONE)
            parts.append(response)
            try:
                partition = hosted.leader_partition(tp, asked.current_leader_epoch)
                response.timestamp, response.offset = partition.list_offset(
                    asked.timestamp, for_consumer=request.replica_id == CONSUMER_REPLICA_ID)
            except KafkaError as e:
                response.error_code = e.code
                continue
            response.leader_epoch = partition.leader_epoch
        topics.append(Topic(name=topic.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)


def offsets_for_leader_epoch(hosted: HostedPartitions,
                             request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
    """Where each asked epoch ends on the leader's log (the largest epoch <= the one asked)."""
    topics = []
    for topic in request.topics:
        parts = []
        for asked in topic.partitions:
            tp = TopicPartition(topic.topic, asked.partition)
            try:
                partition = hosted.leader_partition(tp, asked.current_leader_epoch)
            except KafkaError as e:
                parts.append(OffsetForLeaderPartitionResult(error_code=e.code, partition=asked.partition,
                                                            end_offset=-1))
                continue
            epoch, end_offset = partition.log.end_offset_for_epoch(asked.leader_epoch)
            parts.append(OffsetForLeaderPartitionResult(error_code=ErrorCode.NONE, partition=asked.partition,
                                                        leader_epoch=epoch, end_offset=end_offset))
        topics.append(OffsetForLeaderTopic(topic=topic.topic, partitions=parts))
    return OffsetsForLeaderEpochResponse(topics=topics)


def delete_records(hosted: HostedPartitions, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    """Move each partition's log start offset up to the offset asked for, on the leader (Kafka's
    ReplicaManager.deleteRecords): HIGH_WATERMARK means the high watermark, an offset above it or below 0 is
    OFFSET_OUT_OF_RANGE, internal topics are refused. The low watermark answered is the leader's log start offset;
    followers move theirs as they next fetch."""
    topics = []
    for topic in request.topics:
        results = []
        for asked in topic.partitions:
            result = DeleteRecordsPartitionResult(partition_index=asked.partition_index, low_watermark=-1,
                                                  error_code=ErrorCode.NONE)
            results.append(result)
            try:
                if topic.name == OFFSETS_TOPIC:
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{topic.name} is internal")
                log = hosted.leader_partition(TopicPartition(topic.name, asked.partition_index), -1).log
                offset = log.high_watermark if asked.offset == HIGH_WATERMARK else asked.offset
                if not 0 <= offset <= log.high_watermark:
                    raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"offset {offset} is not in [0, HW]")
                log.delete_records(offset)
                result.low_watermark = log.log_start_offset
            except KafkaError as e:
                result.error_code = e.code
        topics.append(DeleteRecordsTopicResult(name=topic.name, partitions=results))
    return DeleteRecordsResponse(topics=topics)
