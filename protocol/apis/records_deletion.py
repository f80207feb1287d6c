"""Deleting a partition's records below an offset: DeleteRecords (21), answered by each partition's leader, which
moves its log start offset (followers follow it through their fetches).

On Kafka's wire: v0-2, the versions Kafka 3.9 serves (v2 flexible)."""

from __future__ import annotations

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec

#: DeleteRecords' offset meaning "up to the high watermark" (Kafka's DeleteRecordsRequest.HIGH_WATERMARK).
HIGH_WATERMARK = -1


@message
class DeleteRecordsPartition:
    """Delete the partition's records below `offset` (HIGH_WATERMARK: every committed record)."""

    partition_index: Int32
    offset: Int64


@message
class DeleteRecordsTopic:
    """The partitions of one topic."""

    name: str
    partitions: list[DeleteRecordsPartition]


@message
class DeleteRecordsRequest:
    """Delete records of partitions this broker leads."""

    topics: list[DeleteRecordsTopic]
    timeout_ms: Int32


@message
class DeleteRecordsPartitionResult:
    """The partition's new log start offset (low watermark), or why not."""

    partition_index: Int32
    low_watermark: Int64
    error_code: Int16


@message
class DeleteRecordsTopicResult:
    """The outcomes for the partitions of one topic."""

    name: str
    partitions: list[DeleteRecordsPartitionResult]


@message
class DeleteRecordsResponse:
    """Per-partition results."""

    topics: list[DeleteRecordsTopicResult]


def delete_records_error(request: DeleteRecordsRequest, code: ErrorCode, _message: str | None
                         ) -> DeleteRecordsResponse:
    """The answer to a DeleteRecords that failed as a whole: the error for every partition."""
    return DeleteRecordsResponse(topics=[DeleteRecordsTopicResult(name=t.name, partitions=[
        DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=code)
        for p in t.partitions]) for t in request.topics])


def _kafka_request(message: Message, _version: int) -> DeleteRecordsRequest:
    return DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=t["name"], partitions=[
        DeleteRecordsPartition(partition_index=p["partition_index"], offset=p["offset"]) for p in t["partitions"]])
        for t in message["topics"]], timeout_ms=message["timeout_ms"])


def _kafka_response(body: DeleteRecordsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "low_watermark": p.low_watermark, "error_code": p.error_code}
        for p in t.partitions]} for t in body.topics]}


DELETE_RECORDS = Api(ApiKey.DELETE_RECORDS, "DeleteRecords", DeleteRecordsRequest, DeleteRecordsResponse,
                     delete_records_error, kafka=spec_codec("DeleteRecords", _kafka_request, _kafka_response))
