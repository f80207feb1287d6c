"""Idempotent producers' state of partitions: DescribeProducers (61), answered by each partition's replica from its
log's producer state (Kafka's `kafka-transactions describe-producers`).

On Kafka's wire: v0, the version Kafka 3.9 serves (flexible)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@message
class DescribeProducersTopic:
    """The partitions of one topic whose producers to describe."""

    name: str
    partition_indexes: list[Int32]


@message
class DescribeProducersRequest:
    """Describe the active producers of partitions hosted by this broker."""

    topics: list[DescribeProducersTopic]


@message
class ProducerState:
    """One producer of a partition: its epoch, the sequence and timestamp of its last batch (no transactions here:
    coordinator epoch and transaction start are -1)."""

    producer_id: Int64
    producer_epoch: Int32
    last_sequence: Int32 = -1
    last_timestamp: Int64 = -1
    coordinator_epoch: Int32 = -1
    current_txn_start_offset: Int64 = -1


@message
class DescribeProducersPartitionResult:
    """The producers of one partition, or why not."""

    partition_index: Int32
    error_code: Int16
    error_message: str | None = None
    active_producers: list[ProducerState] = field(default_factory=list)


@message
class DescribeProducersTopicResult:
    """The outcomes for the partitions of one topic."""

    name: str
    partitions: list[DescribeProducersPartitionResult]


@message
class DescribeProducersResponse:
    """Per-partition results."""

    topics: list[DescribeProducersTopicResult]


def describe_producers_error(request: DescribeProducersRequest, code: ErrorCode, message: str | None
                             ) -> DescribeProducersResponse:
    """The answer to a DescribeProducers that failed as a whole: the error for every partition."""
    return DescribeProducersResponse(topics=[DescribeProducersTopicResult(name=t.name, partitions=[
        DescribeProducersPartitionResult(partition_index=p, error_code=code, error_message=message)
        for p in t.partition_indexes]) for t in request.topics])


def _kafka_request(message: Message, _version: int) -> DescribeProducersRequest:
    return DescribeProducersRequest(topics=[DescribeProducersTopic(
        name=t["name"], partition_indexes=t["partition_indexes"]) for t in message["topics"]])


def _kafka_response(body: DescribeProducersResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [{
        "partition_index": p.partition_index, "error_code": p.error_code, "error_message": p.error_message,
        "active_producers": [{
            "producer_id": s.producer_id, "producer_epoch": s.producer_epoch, "last_sequence": s.last_sequence,
            "last_timestamp": s.last_timestamp, "coordinator_epoch": s.coordinator_epoch,
            "current_txn_start_offset": s.current_txn_start_offset} for s in p.active_producers],
    } for p in t.partitions]} for t in body.topics]}


DESCRIBE_PRODUCERS = Api(ApiKey.DESCRIBE_PRODUCERS, "DescribeProducers", DescribeProducersRequest,
                         DescribeProducersResponse, describe_producers_error,
                         kafka=spec_codec("DescribeProducers", _kafka_request, _kafka_response))
