"""Produce (0): record batches appended to partition logs. Its Kafka-wire codec is written by hand: a request's
batches stay memoryviews of the frame. On Kafka's wire v3-11: v9 is flexible; v10's tagged current leader and node
endpoints (KIP-951) are left out (a client refreshes its metadata instead, as before v10); v11 only allows an error of
transactions, which minikafka never answers."""

from __future__ import annotations

import struct

from protocol.apis.api import Api, ApiKey
from protocol.apis.shapes import Topic
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import hand_written
from protocol.kafka.hot_paths import NULL_STRING, guarded, read_topics, write_count, write_topic_head
from protocol.kafka.primitives import (
    INT16,
    INT32,
    INT64,
    Buffer,
    KafkaDecodeError,
    read_compact_string,
    read_string,
    read_uvarint,
    skip_tagged_fields,
    write_compact_string,
)


@message
class ProducePartition:
    """A record batch (RecordBatch v2 bytes) for one partition."""

    partition: Int32
    records: bytes
    current_leader_epoch: Int32 = -1


@message
class ProduceRequest:
    """Append record batches; acks is 0, 1 or -1 (all)."""

    acks: Int16
    timeout_ms: Int32
    topics: list[Topic[ProducePartition]]


@message
class ProducePartitionResponse:
    """Where a partition's batch was appended, or why not."""

    partition: Int32
    error_code: Int16
    error_message: str | None = None
    base_offset: Int64
    log_append_time_ms: Int64 = -1
    log_start_offset: Int64 = -1


@message
class ProduceResponse:
    """Per-partition produce results."""

    topics: list[Topic[ProducePartitionResponse]]
    throttle_time_ms: Int32 = 0


def produce_error(request: ProduceRequest, code: ErrorCode, message: str | None) -> ProduceResponse:
    """The answer to a produce request that failed as a whole: the error for every partition."""
    return ProduceResponse(topics=[Topic(name=t.name, partitions=[
        ProducePartitionResponse(partition=p.partition, error_code=code, error_message=message, base_offset=-1)
        for p in t.partitions]) for t in request.topics])


# ------------------------------------------------------------------------------------------------ Kafka's wire

_HEAD = struct.Struct(">hi")  # acks, timeout_ms
_PARTITION_HEAD = struct.Struct(">ii")  # the partition index and the records' length
_RESULT = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
#: The first flexible version: compact strings, arrays and records, tagged fields ending each struct.
FIRST_FLEXIBLE_PRODUCE = 9


def _decode_request(buf: memoryview, pos: int, version: int) -> ProduceRequest:
    """ProduceRequest v3-11: transactional_id, acks, timeout_ms, topic_data[name, partition_data[index, records]]."""
    flexible = version >= FIRST_FLEXIBLE_PRODUCE
    _transactional_id, pos = (read_compact_string if flexible else read_string)(buf, pos, nullable=True)
    acks, timeout_ms = _HEAD.unpack_from(buf, pos)
    pos += 6

    def read_partition(pos: int) -> tuple[ProducePartition, int]:
        if flexible:
            index = INT32.unpack_from(buf, pos)[0]
            size, pos = read_uvarint(buf, pos + 4)
            size -= 1  # a compact length: 0 is null
        else:
            index, size = _PARTITION_HEAD.unpack_from(buf, pos)
            pos += 8
        if size < -1 or size > len(buf) - pos:
            raise KafkaDecodeError(f"invalid records length {size}")
        records = buf[pos:pos + size] if size > 0 else b""
        pos += max(size, 0)
        if flexible:
            pos = skip_tagged_fields(buf, pos)
        return ProducePartition(partition=index, records=records), pos

    topics, pos = read_topics(buf, pos, read_partition, Topic, flexible)
    if flexible:
        skip_tagged_fields(buf, pos)
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=topics)


decode_produce_request = guarded(_decode_request, "ProduceRequest")


def _write_error_message(out: bytearray, p: ProducePartitionResponse, flexible: bool) -> None:
    message = None if p.error_code == 0 or p.error_message is None else p.error_message
    if flexible:
        write_compact_string(out, message)
    elif message is None:
        out += NULL_STRING
    else:
        encoded = message.encode()[:32767]
        out += INT16.pack(len(encoded))
        out += encoded


def encode_produce_response(response: ProduceResponse, version: int) -> list[Buffer]:
    """ProduceResponse v3-11 from the handler's response (no record errors, no tagged fields)."""
    flexible = version >= FIRST_FLEXIBLE_PRODUCE
    out = bytearray()
    write_count(out, len(response.topics), flexible)
    for topic in response.topics:
        write_topic_head(out, topic.name, len(topic.partitions), flexible)
        for p in topic.partitions:
            out += _RESULT.pack(p.partition, p.error_code, p.base_offset, p.log_append_time_ms)
            if version >= 5:
                out += INT64.pack(p.log_start_offset)
            if version >= 8:
                write_count(out, 0, flexible)  # record_errors
                _write_error_message(out, p, flexible)
            if flexible:
                out.append(0)  # the partition's tagged fields
        if flexible:
            out.append(0)  # the topic's
    out += INT32.pack(response.throttle_time_ms)
    if flexible:
        out.append(0)
    return [out]


PRODUCE = Api(ApiKey.PRODUCE, "Produce", ProduceRequest, ProduceResponse, produce_error,
              kafka=hand_written("Produce", decode_produce_request,
                                 lambda response, version, _request: encode_produce_response(response, version)))
