"""Fetch (1): reads from partition logs, by consumers and by followers. Its Kafka-wire codec is written by hand: a
response's record batches are written as buffers of their own, never copied into the message."""

from __future__ import annotations

import struct
from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.apis.shapes import Topic
from protocol.codec import Int8, Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import hand_written
from protocol.kafka.hot_paths import EMPTY_ARRAY, NULL_ARRAY, guarded, read_topics, write_topic_head
from protocol.kafka.primitives import INT16, INT32, INT64, Buffer, array_count, read_string

# Sentinel values with Kafka's meanings.
CONSUMER_REPLICA_ID = -1  # Fetch/ListOffsets replica_id of a consumer (not a follower)
DEBUGGING_CONSUMER_ID = -2  # Fetch replica_id of a tool reading any replica (leader or follower) up to its HW


@message
class FetchPartition:
    """Where to read one partition from. last_fetched_epoch lets the leader detect divergence."""

    partition: Int32
    current_leader_epoch: Int32 = -1
    fetch_offset: Int64
    last_fetched_epoch: Int32 = -1
    log_start_offset: Int64 = -1
    partition_max_bytes: Int32


@message
class FetchRequest:
    """Read from partition logs; replica_id is -1 for a consumer, else the fetching follower's broker id.

    session_id/session_epoch/forgotten_topics make an incremental fetch session (Kafka's KIP-227): epoch -1
    (the default) is a full fetch outside any session; see broker/replication/fetch_session.py."""

    replica_id: Int32
    replica_epoch: Int64 = -1
    max_wait_ms: Int32
    min_bytes: Int32
    max_bytes: Int32
    isolation_level: Int8 = 0
    topics: list[Topic[FetchPartition]]
    session_id: Int32 = 0
    session_epoch: Int32 = -1
    forgotten_topics: list[Topic[Int32]] = field(default_factory=list)


@message
class EpochEndOffset:
    """A leader epoch and the offset at which it ends."""

    epoch: Int32
    end_offset: Int64


@message
class LeaderIdAndEpoch:
    """The leader a broker currently knows for a partition."""

    leader_id: Int32
    leader_epoch: Int32


@message
class FetchPartitionResponse:
    """Record batches read from one partition, with its offsets. diverging_epoch, when set, tells a
    follower where its log diverges from the leader's."""

    partition: Int32
    error_code: Int16
    high_watermark: Int64
    last_stable_offset: Int64 = -1
    log_start_offset: Int64 = -1
    diverging_epoch: EpochEndOffset | None = None
    current_leader: LeaderIdAndEpoch | None = None
    records: bytes


@message
class FetchResponse:
    """Per-partition fetch results."""

    error_code: Int16
    topics: list[Topic[FetchPartitionResponse]]
    session_id: Int32 = 0


def fetch_error(request: FetchRequest, code: ErrorCode, _message: str | None) -> FetchResponse:
    """The answer to a fetch that failed as a whole: the error at the top and for every partition."""
    return FetchResponse(error_code=code, topics=[Topic(name=t.name, partitions=[
        FetchPartitionResponse(partition=p.partition, error_code=code, high_watermark=-1, records=b"")
        for p in t.partitions]) for t in request.topics])


# ------------------------------------------------------------------------------------------------ Kafka's wire

_HEAD = struct.Struct(">iiiib")  # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level
_SESSION = struct.Struct(">ii")  # session_id, session_epoch
_PARTITION_V9 = struct.Struct(">iiqqi")  # partition, current_leader_epoch, fetch_offset, log_start, max_bytes
_PARTITION_V5 = struct.Struct(">iqqi")  # partition, fetch_offset, log_start_offset, partition_max_bytes
_PARTITION_V4 = struct.Struct(">iqi")  # partition, fetch_offset, partition_max_bytes
_RESULT = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable_offset


def _decode_request(buf: memoryview, pos: int, version: int) -> FetchRequest:
    """FetchRequest v4-11, with its fetch session (v7+: session id and epoch, forgotten topics)."""
    replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = _HEAD.unpack_from(buf, pos)
    pos += 17
    session_id, session_epoch = 0, -1
    if version >= 7:
        session_id, session_epoch = _SESSION.unpack_from(buf, pos)
        pos += 8
    if version >= 9:
        layout, fields = _PARTITION_V9, 5
    elif version >= 5:
        layout, fields = _PARTITION_V5, 4
    else:
        layout, fields = _PARTITION_V4, 3
    unpack, size = layout.unpack_from, layout.size

    def read_partition(pos: int) -> tuple[FetchPartition, int]:
        values = unpack(buf, pos)
        if fields == 5:
            partition, epoch, offset, log_start, limit = values
        elif fields == 4:
            (partition, offset, log_start, limit), epoch = values, -1
        else:
            (partition, offset, limit), epoch, log_start = values, -1, -1
        return FetchPartition(partition=partition, current_leader_epoch=epoch, fetch_offset=offset,
                              log_start_offset=log_start, partition_max_bytes=limit), pos + size

    topics, pos = read_topics(buf, pos, read_partition, Topic)
    forgotten = []
    if version >= 7:
        forgotten_count, pos = array_count(buf, pos)
        for _ in range(forgotten_count):
            name, pos = read_string(buf, pos)
            count, pos = array_count(buf, pos)
            forgotten.append(Topic(name=name, partitions=list(struct.unpack_from(f">{count}i", buf, pos))))
            pos += 4 * count
    if version >= 11:
        _rack_id, pos = read_string(buf, pos)
    return FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                        isolation_level=isolation_level, topics=topics, session_id=session_id,
                        session_epoch=session_epoch, forgotten_topics=forgotten)


decode_fetch_request = guarded(_decode_request, "FetchRequest")


def encode_fetch_response(response: FetchResponse, version: int, read_committed: bool) -> list[Buffer]:
    """FetchResponse v4-11 as buffers: the message around each partition's records, and the records themselves.
    No aborted transactions: null for read_uncommitted, empty for read_committed (as Kafka answers)."""
    parts: list[Buffer] = []
    out = bytearray(INT32.pack(0))  # throttle_time_ms
    if version >= 7:
        out += INT16.pack(response.error_code)
        out += INT32.pack(response.session_id)
    out += INT32.pack(len(response.topics))
    aborted = EMPTY_ARRAY if read_committed else NULL_ARRAY
    for topic in response.topics:
        write_topic_head(out, topic.name, len(topic.partitions))
        for p in topic.partitions:
            out += _RESULT.pack(p.partition, p.error_code, p.high_watermark, p.last_stable_offset)
            if version >= 5:
                out += INT64.pack(p.log_start_offset)
            out += aborted
            if version >= 11:
                out += b"\xff\xff\xff\xff"  # preferred_read_replica -1
            records = p.records
            out += INT32.pack(len(records))
            if len(records) > 4096:
                parts.append(out)
                parts.append(records)
                out = bytearray()
            else:
                out += records
    parts.append(out)
    return parts


FETCH = Api(ApiKey.FETCH, "Fetch", FetchRequest, FetchResponse, fetch_error,
            kafka=hand_written("Fetch", decode_fetch_request,
                               lambda response, version, request: encode_fetch_response(
                                   response, version, read_committed=request.isolation_level == 1)))
