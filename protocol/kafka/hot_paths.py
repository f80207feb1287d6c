"""The Produce and Fetch paths by hand: request decoding straight into the broker's request objects and response
encoding straight from its response objects, with record batches passed through as bytes (a produce request's
batches are memoryviews of the frame; a fetch response's batches are written as their own buffers, never copied
into the message). Field for field what codec.py does from the specs (tests check the two against each other)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

from protocol.kafka.codec import INT16, INT32, Buffer, KafkaDecodeError, array_count, read_string
from protocol.messages import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    ProducePartition,
    ProduceRequest,
    ProduceResponse,
    Topic,
)

_PRODUCE_HEAD = struct.Struct(">hi")  # acks, timeout_ms
_PRODUCE_RESULT = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_INT64 = struct.Struct(">q")
_FETCH_HEAD = struct.Struct(">iiiib")  # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level
_TWO_INT32 = struct.Struct(">ii")  # session_id and session_epoch; a partition index and a length
_FETCH_PARTITION_V9 = struct.Struct(">iiqqi")  # partition, current_leader_epoch, fetch_offset, log_start, max_bytes
_FETCH_PARTITION_V5 = struct.Struct(">iqqi")  # partition, fetch_offset, log_start_offset, partition_max_bytes
_FETCH_PARTITION_V4 = struct.Struct(">iqi")  # partition, fetch_offset, partition_max_bytes
_FETCH_RESULT = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable_offset
_NULL_ARRAY = b"\xff\xff\xff\xff"
_EMPTY_ARRAY = b"\x00\x00\x00\x00"
_NULL_STRING = b"\xff\xff"
P = TypeVar("P")


def _guarded(decode: Callable[[memoryview, int, int], Any], what: str) -> Callable[[Buffer, int, int], Any]:
    def guarded(buf: Buffer, pos: int, version: int) -> Any:
        try:
            return decode(memoryview(buf), pos, version)
        except struct.error:
            raise KafkaDecodeError(f"{what} v{version}: the message ends early") from None

    return guarded


def _read_topics(buf: memoryview, pos: int, read_partition: Callable[[int], tuple[P, int]]
                 ) -> tuple[list[Topic[P]], int]:
    """An array of topics, each a name and an array of partitions read by `read_partition`."""
    topic_count, pos = array_count(buf, pos)
    topics = []
    for _ in range(topic_count):
        name, pos = read_string(buf, pos)
        partition_count, pos = array_count(buf, pos)
        partitions = []
        for _ in range(partition_count):
            partition, pos = read_partition(pos)
            partitions.append(partition)
        topics.append(Topic(name=name, partitions=partitions))
    return topics, pos


# ------------------------------------------------------------------------------------------------ Produce


def _decode_produce_request(buf: memoryview, pos: int, version: int) -> ProduceRequest:
    """ProduceRequest v3-8: transactional_id, acks, timeout_ms, topic_data[name, partition_data[index, records]]."""
    _transactional_id, pos = read_string(buf, pos, nullable=True)
    acks, timeout_ms = _PRODUCE_HEAD.unpack_from(buf, pos)
    pos += 6

    def read_partition(pos: int) -> tuple[ProducePartition, int]:
        index, size = _TWO_INT32.unpack_from(buf, pos)  # the index and the records' length
        pos += 8
        if size < -1 or size > len(buf) - pos:
            raise KafkaDecodeError(f"invalid records length {size}")
        return ProducePartition(partition=index, records=buf[pos:pos + size] if size > 0 else b""), pos + max(size, 0)

    topics, pos = _read_topics(buf, pos, read_partition)
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=topics)


decode_produce_request = _guarded(_decode_produce_request, "ProduceRequest")


def _write_topic_head(out: bytearray, topic: Topic[Any]) -> None:
    """A response topic's name and its partition count."""
    encoded_name = topic.name.encode()
    out += INT16.pack(len(encoded_name))
    out += encoded_name
    out += INT32.pack(len(topic.partitions))


def encode_produce_response(response: ProduceResponse, version: int) -> list[Buffer]:
    """ProduceResponse v3-8 from the handler's response."""
    out = bytearray(INT32.pack(len(response.topics)))
    for topic in response.topics:
        _write_topic_head(out, topic)
        for p in topic.partitions:
            out += _PRODUCE_RESULT.pack(p.partition, p.error_code, p.base_offset, p.log_append_time_ms)
            if version >= 5:
                out += _INT64.pack(p.log_start_offset)
            if version >= 8:
                out += _EMPTY_ARRAY  # record_errors
                if p.error_message is None or p.error_code == 0:
                    out += _NULL_STRING
                else:
                    message = p.error_message.encode()[:32767]
                    out += INT16.pack(len(message))
                    out += message
    out += INT32.pack(response.throttle_time_ms)
    return [out]


# ------------------------------------------------------------------------------------------------ Fetch


def _decode_fetch_request(buf: memoryview, pos: int, version: int) -> FetchRequest:
    """FetchRequest v4-11, with its fetch session (v7+: session id and epoch, forgotten topics)."""
    replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = _FETCH_HEAD.unpack_from(buf, pos)
    pos += 17
    session_id, session_epoch = 0, -1
    if version >= 7:
        session_id, session_epoch = _TWO_INT32.unpack_from(buf, pos)
        pos += 8
    if version >= 9:
        layout, fields = _FETCH_PARTITION_V9, 5
    elif version >= 5:
        layout, fields = _FETCH_PARTITION_V5, 4
    else:
        layout, fields = _FETCH_PARTITION_V4, 3
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

    topics, pos = _read_topics(buf, pos, read_partition)
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


decode_fetch_request = _guarded(_decode_fetch_request, "FetchRequest")


def encode_fetch_response(response: FetchResponse, version: int, read_committed: bool) -> list[Buffer]:
    """FetchResponse v4-11 as buffers: the message around each partition's records, and the records themselves.
    No aborted transactions: null for read_uncommitted, empty for read_committed (as Kafka answers)."""
    parts: list[Buffer] = []
    out = bytearray(INT32.pack(0))  # throttle_time_ms
    if version >= 7:
        out += INT16.pack(response.error_code)
        out += INT32.pack(response.session_id)
    out += INT32.pack(len(response.topics))
    aborted = _EMPTY_ARRAY if read_committed else _NULL_ARRAY
    for topic in response.topics:
        _write_topic_head(out, topic)
        for p in topic.partitions:
            out += _FETCH_RESULT.pack(p.partition, p.error_code, p.high_watermark, p.last_stable_offset)
            if version >= 5:
                out += _INT64.pack(p.log_start_offset)
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
