"""Fetch (1): reads from partition logs, by consumers and by followers. Its Kafka-wire codec is written by hand: a
response's record batches are written as buffers of their own, never copied into the message. On Kafka's wire v4-17:
v12 is flexible and names the last fetched epoch (a diverging epoch answers it), v13 names topics by id (the handler
resolves them), v15 moves the replica id into a tagged replica state, v17 adds a tagged directory id (ignored); v16's
tagged node endpoints are left out."""

from __future__ import annotations

import struct
from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.apis.shapes import Topic
from protocol.codec import Int8, Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import hand_written
from protocol.kafka.hot_paths import EMPTY_ARRAY, NULL_ARRAY, guarded, read_topics, write_count, write_topic_head
from protocol.kafka.primitives import (
    INT16,
    INT32,
    INT64,
    UUID,
    ZERO_UUID,
    Buffer,
    array_count,
    compact_array_count,
    read_compact_string,
    read_string,
    read_tagged_fields,
    skip_tagged_fields,
    write_compact_string,
    write_tagged_fields,
    write_uvarint,
)

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
    #: From v13 on Kafka's wire: each topic's id (16 bytes), in the order of `topics` and of `forgotten_topics`,
    #: whose names the handler fills in
    topic_ids: list[bytes] = field(default_factory=list)
    forgotten_topic_ids: list[bytes] = field(default_factory=list)


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
    #: From v13 on Kafka's wire: each topic's id, in the order of `topics`
    topic_ids: list[bytes] = field(default_factory=list)


def fetch_error(request: FetchRequest, code: ErrorCode, _message: str | None) -> FetchResponse:
    """The answer to a fetch that failed as a whole: the error at the top and for every partition."""
    return FetchResponse(error_code=code, topics=[Topic(name=t.name, partitions=[
        FetchPartitionResponse(partition=p.partition, error_code=code, high_watermark=-1, records=b"")
        for p in t.partitions]) for t in request.topics], topic_ids=list(request.topic_ids))


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


#: The first flexible version, the first naming topics by id, the first with the replica id in a tagged field.
FIRST_FLEXIBLE_FETCH = 12
FIRST_FETCH_BY_TOPIC_ID = 13
FIRST_FETCH_REPLICA_STATE = 15
_HEAD_V15 = struct.Struct(">iiib")  # max_wait_ms, min_bytes, max_bytes, isolation_level
_PARTITION_V12 = struct.Struct(">iiqiqi")  # partition, leader epoch, fetch offset, last fetched epoch, log start, max
_REPLICA_STATE = struct.Struct(">iq")  # replica_id, replica_epoch
_REPLICA_STATE_TAG = 1


def _read_topic_key(buf: memoryview, pos: int, by_id: bool) -> tuple[str, bytes | None, int]:
    """A flexible topic's name, or its id (the name left empty)."""
    if by_id:
        return "", bytes(buf[pos:pos + UUID.size]), pos + UUID.size
    name, pos = read_compact_string(buf, pos)
    assert name is not None
    return name, None, pos


def _decode_flexible_request(buf: memoryview, pos: int, version: int) -> FetchRequest:
    """FetchRequest v12-17: compact forms, tagged fields, topics by id from v13, the replica state from v15."""
    by_id = version >= FIRST_FETCH_BY_TOPIC_ID
    replica_id = -1
    if version >= FIRST_FETCH_REPLICA_STATE:
        max_wait_ms, min_bytes, max_bytes, isolation_level = _HEAD_V15.unpack_from(buf, pos)
        pos += _HEAD_V15.size
    else:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = _HEAD.unpack_from(buf, pos)
        pos += _HEAD.size
    session_id, session_epoch = _SESSION.unpack_from(buf, pos)
    pos += _SESSION.size
    topics, topic_ids = [], []
    count, pos = compact_array_count(buf, pos)
    for _ in range(count):
        name, topic_id, pos = _read_topic_key(buf, pos, by_id)
        partition_count, pos = compact_array_count(buf, pos)
        partitions = []
        for _ in range(partition_count):
            partition, epoch, offset, last_fetched_epoch, log_start, limit = _PARTITION_V12.unpack_from(buf, pos)
            pos = skip_tagged_fields(buf, pos + _PARTITION_V12.size)
            partitions.append(FetchPartition(partition=partition, current_leader_epoch=epoch, fetch_offset=offset,
                                             last_fetched_epoch=last_fetched_epoch, log_start_offset=log_start,
                                             partition_max_bytes=limit))
        pos = skip_tagged_fields(buf, pos)
        topics.append(Topic(name=name, partitions=partitions))
        if topic_id is not None:
            topic_ids.append(topic_id)
    forgotten, forgotten_ids = [], []
    count, pos = compact_array_count(buf, pos)
    for _ in range(count):
        name, topic_id, pos = _read_topic_key(buf, pos, by_id)
        partition_count, pos = compact_array_count(buf, pos)
        forgotten.append(Topic(name=name, partitions=list(struct.unpack_from(f">{partition_count}i", buf, pos))))
        pos = skip_tagged_fields(buf, pos + 4 * partition_count)
        if topic_id is not None:
            forgotten_ids.append(topic_id)
    _rack_id, pos = read_compact_string(buf, pos)
    tagged, pos = read_tagged_fields(buf, pos)
    state = tagged.get(_REPLICA_STATE_TAG)
    if state is not None and version >= FIRST_FETCH_REPLICA_STATE:
        replica_id, _replica_epoch = _REPLICA_STATE.unpack_from(state)
    return FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                        isolation_level=isolation_level, topics=topics, session_id=session_id,
                        session_epoch=session_epoch, forgotten_topics=forgotten, topic_ids=topic_ids,
                        forgotten_topic_ids=forgotten_ids)


def _decode_any_request(buf: memoryview, pos: int, version: int) -> FetchRequest:
    return (_decode_flexible_request if version >= FIRST_FLEXIBLE_FETCH else _decode_request)(buf, pos, version)


decode_fetch_request = guarded(_decode_any_request, "FetchRequest")


def _add_records(parts: list[Buffer], out: bytearray, records: Buffer) -> bytearray:
    """A partition's records after their length: copied into `out` when small, else a buffer of their own after it
    in `parts`; the bytearray to write on in."""
    if len(records) <= 4096:
        out += records
        return out
    parts.append(out)
    parts.append(records)
    return bytearray()


def _partition_tags(p: FetchPartitionResponse) -> list[tuple[int, bytes]]:
    """A flexible partition's tagged fields: its diverging epoch (tag 0) and current leader (tag 1), where set."""
    tags = []
    if p.diverging_epoch is not None:
        tags.append((0, struct.pack(">iqb", p.diverging_epoch.epoch, p.diverging_epoch.end_offset, 0)))
    if p.current_leader is not None:
        tags.append((1, struct.pack(">iib", p.current_leader.leader_id, p.current_leader.leader_epoch, 0)))
    return tags


def _encode_flexible_response(response: FetchResponse, version: int, read_committed: bool) -> list[Buffer]:
    """FetchResponse v12-17, as encode_fetch_response."""
    parts: list[Buffer] = []
    out = bytearray(struct.pack(">ihi", 0, response.error_code, response.session_id))
    write_count(out, len(response.topics), flexible=True)
    ids = response.topic_ids
    for index, topic in enumerate(response.topics):
        if version >= FIRST_FETCH_BY_TOPIC_ID:
            out += ids[index] if index < len(ids) else ZERO_UUID
        else:
            write_compact_string(out, topic.name)
        write_count(out, len(topic.partitions), flexible=True)
        for p in topic.partitions:
            out += _RESULT.pack(p.partition, p.error_code, p.high_watermark, p.last_stable_offset)
            out += INT64.pack(p.log_start_offset)
            out.append(1 if read_committed else 0)  # aborted transactions: none (an empty array), or null
            out += b"\xff\xff\xff\xff"  # preferred_read_replica -1
            write_uvarint(out, len(p.records) + 1)
            out = _add_records(parts, out, p.records)
            write_tagged_fields(out, _partition_tags(p))
        out.append(0)  # the topic's tagged fields
    out.append(0)
    parts.append(out)
    return parts


def encode_fetch_response(response: FetchResponse, version: int, read_committed: bool) -> list[Buffer]:
    """FetchResponse v4-17 as buffers: the message around each partition's records, and the records themselves.
    No aborted transactions: null for read_uncommitted, empty for read_committed (as Kafka answers)."""
    if version >= FIRST_FLEXIBLE_FETCH:
        return _encode_flexible_response(response, version, read_committed)
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
            out += INT32.pack(len(p.records))
            out = _add_records(parts, out, p.records)
    parts.append(out)
    return parts


FETCH = Api(ApiKey.FETCH, "Fetch", FetchRequest, FetchResponse, fetch_error,
            kafka=hand_written("Fetch", decode_fetch_request,
                               lambda response, version, request: encode_fetch_response(
                                   response, version, read_committed=request.isolation_level == 1)))
