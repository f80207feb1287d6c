"""Produce (0): record batches appended to partition logs. Its Kafka-wire codec is written by hand: a request's
batches stay memoryviews of the frame."""

from __future__ import annotations

import struct

from protocol.apis.api import Api, ApiKey
from protocol.apis.shapes import Topic
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import hand_written
from protocol.kafka.hot_paths import EMPTY_ARRAY, NULL_STRING, guarded, read_topics, write_topic_head
from protocol.kafka.primitives import INT16, INT32, INT64, Buffer, KafkaDecodeError, read_string


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


def _decode_request(buf: memoryview, pos: int, _version: int) -> ProduceRequest:
    """ProduceRequest v3-8: transactional_id, acks, timeout_ms, topic_data[name, partition_data[index, records]]."""
    _transactional_id, pos = read_string(buf, pos, nullable=True)
    acks, timeout_ms = _HEAD.unpack_from(buf, pos)
    pos += 6

    def read_partition(pos: int) -> tuple[ProducePartition, int]:
        index, size = _PARTITION_HEAD.unpack_from(buf, pos)
        pos += 8
        if size < -1 or size > len(buf) - pos:
            raise KafkaDecodeError(f"invalid records length {size}")
        return ProducePartition(partition=index, records=buf[pos:pos + size] if size > 0 else b""), pos + max(size, 0)

    topics, pos = read_topics(buf, pos, read_partition, Topic)
    return ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=topics)


decode_produce_request = guarded(_decode_request, "ProduceRequest")


def encode_produce_response(response: ProduceResponse, version: int) -> list[Buffer]:
    """ProduceResponse v3-8 from the handler's response."""
    out = bytearray(INT32.pack(len(response.topics)))
    for topic in response.topics:
        write_topic_head(out, topic.name, len(topic.partitions))
        for p in topic.partitions:
            out += _RESULT.pack(p.partition, p.error_code, p.base_offset, p.log_append_time_ms)
            if version >= 5:
                out += INT64.pack(p.log_start_offset)
            if version >= 8:
                out += EMPTY_ARRAY  # record_errors
                if p.error_message is None or p.error_code == 0:
                    out += NULL_STRING
                else:
                    message = p.error_message.encode()[:32767]
                    out += INT16.pack(len(message))
                    out += message
    out += INT32.pack(response.throttle_time_ms)
    return [out]


PRODUCE = Api(ApiKey.PRODUCE, "Produce", ProduceRequest, ProduceResponse, produce_error,
              kafka=hand_written("Produce", decode_produce_request,
                                 lambda response, version, _request: encode_produce_response(response, version)))
