"""Offsets of a partition's log: ListOffsets (2), an offset by timestamp, and OffsetsForLeaderEpoch (23), where a
leader epoch ends (a follower asks before truncating)."""

from __future__ import annotations

from typing import Generic, TypeVar

from protocol.apis.api import Api, ApiKey
from protocol.apis.shapes import Topic
from protocol.codec import Int8, Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec

LATEST_TIMESTAMP = -1  # ListOffsets: the offset after the last consumable record (the high watermark)
EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
MAX_TIMESTAMP = -3  # ListOffsets v7+ (KIP-734): the first record with the largest timestamp
EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsets v8+ (KIP-405): the local log start, the log start here (no tiers)

P = TypeVar("P")


# ------------------------------------------------------------------------------------------------ ListOffsets


@message
class ListOffsetsPartition:
    """timestamp is LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP or a time in
    ms."""

    partition: Int32
    current_leader_epoch: Int32 = -1
    timestamp: Int64


@message
class ListOffsetsRequest:
    """Look up offsets by timestamp."""

    replica_id: Int32
    isolation_level: Int8
    topics: list[Topic[ListOffsetsPartition]]


@message
class ListOffsetsPartitionResponse:
    """The offset found for one partition."""

    partition: Int32
    error_code: Int16
    timestamp: Int64 = -1
    offset: Int64 = -1
    leader_epoch: Int32 = -1


@message
class ListOffsetsResponse:
    """Per-partition offsets."""

    topics: list[Topic[ListOffsetsPartitionResponse]]


def list_offsets_error(request: ListOffsetsRequest, code: ErrorCode, _message: str | None) -> ListOffsetsResponse:
    """The answer to a ListOffsets that failed as a whole: the error for every partition."""
    return ListOffsetsResponse(topics=[Topic(name=t.name, partitions=[
        ListOffsetsPartitionResponse(partition=p.partition, error_code=code) for p in t.partitions])
        for t in request.topics])


def _list_offsets_request(message: Message, _version: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=message["replica_id"], isolation_level=message["isolation_level"],
        topics=[Topic(name=t["name"], partitions=[
            ListOffsetsPartition(partition=p["partition_index"], current_leader_epoch=p["current_leader_epoch"],
                                 timestamp=p["timestamp"]) for p in t["partitions"]]) for t in message["topics"]])


def _list_offsets_response(body: ListOffsetsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [{
        "partition_index": p.partition, "error_code": p.error_code, "timestamp": p.timestamp, "offset": p.offset,
        "leader_epoch": p.leader_epoch} for p in t.partitions]} for t in body.topics]}


LIST_OFFSETS = Api(ApiKey.LIST_OFFSETS, "ListOffsets", ListOffsetsRequest, ListOffsetsResponse, list_offsets_error,
                   kafka=spec_codec("ListOffsets", _list_offsets_request, _list_offsets_response))


# ------------------------------------------------------------------------------------------------ OffsetsForLeaderEpoch


@message
class OffsetForLeaderTopic(Generic[P]):
    """A topic with per-partition entries (OffsetsForLeaderEpoch, both directions)."""

    topic: str
    partitions: list[P]


@message
class OffsetForLeaderPartition:
    """Ask for the end offset of leader_epoch (the largest epoch <= it that the leader knows)."""

    partition: Int32
    current_leader_epoch: Int32 = -1
    leader_epoch: Int32


@message
class OffsetForLeaderPartitionResult:
    """The epoch found and the offset where it ends (the leader's LEO for its current epoch)."""

    error_code: Int16
    partition: Int32
    leader_epoch: Int32 = -1
    end_offset: Int64


@message
class OffsetsForLeaderEpochRequest:
    """Follower to leader, before truncating: where do my epochs end on your log?"""

    replica_id: Int32 = -2
    topics: list[OffsetForLeaderTopic[OffsetForLeaderPartition]]


@message
class OffsetsForLeaderEpochResponse:
    """Per-partition epoch end offsets."""

    topics: list[OffsetForLeaderTopic[OffsetForLeaderPartitionResult]]


def offsets_for_leader_epoch_error(request: OffsetsForLeaderEpochRequest, code: ErrorCode, _message: str | None
                                   ) -> OffsetsForLeaderEpochResponse:
    """The answer to an OffsetsForLeaderEpoch that failed as a whole: the error for every partition."""
    return OffsetsForLeaderEpochResponse(topics=[OffsetForLeaderTopic(topic=t.topic, partitions=[
        OffsetForLeaderPartitionResult(error_code=code, partition=p.partition, end_offset=-1) for p in t.partitions])
        for t in request.topics])


def _offsets_for_leader_epoch_request(message: Message, _version: int) -> OffsetsForLeaderEpochRequest:
    return OffsetsForLeaderEpochRequest(replica_id=message["replica_id"], topics=[OffsetForLeaderTopic(
        topic=t["topic"], partitions=[OffsetForLeaderPartition(
            partition=p["partition"], current_leader_epoch=p["current_leader_epoch"], leader_epoch=p["leader_epoch"])
            for p in t["partitions"]]) for t in message["topics"]])


def _offsets_for_leader_epoch_response(body: OffsetsForLeaderEpochResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "topics": [{"topic": t.topic, "partitions": [{
        "error_code": p.error_code, "partition": p.partition, "leader_epoch": p.leader_epoch,
        "end_offset": p.end_offset} for p in t.partitions]} for t in body.topics]}


OFFSETS_FOR_LEADER_EPOCH = Api(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetsForLeaderEpoch", OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse, offsets_for_leader_epoch_error,
    kafka=spec_codec("OffsetForLeaderEpoch", _offsets_for_leader_epoch_request, _offsets_for_leader_epoch_response))
