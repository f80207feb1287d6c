"""Interop with kafka-python 3.0.12's magic-2 implementation, in both directions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from kafka.record.util import decode_varint, encode_varint

from protocol import varint
from protocol.records import (
    BatchBuilder,
    Header,
    Record,
    _read_varlong,
    decode_batch,
    decode_records,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
    validate_batch,
)

NULLABLE_BYTES = st.none() | st.binary(max_size=200)
HEADERS = st.lists(st.tuples(st.text(max_size=15), NULLABLE_BYTES), max_size=5)
TIMESTAMPS = st.integers(0, 1 << 45)
RECORD_INPUTS = st.lists(
    st.tuples(NULLABLE_BYTES, NULLABLE_BYTES, HEADERS, TIMESTAMPS), min_size=1, max_size=20
)
INTEROP = settings(max_examples=40, deadline=None)


def kafka_python_records(batch: DefaultRecordBatch) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


def kafka_python_build(inputs: list[tuple], **producer_state: int) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 30, **producer_state)
    for value, key, headers, timestamp in inputs:
        assert builder.append(timestamp, key, value, headers) is not None
    builder.close()
    return bytes(builder.buffer())


@INTEROP
@given(inputs=RECORD_INPUTS, base_offset=st.integers(0, 1 << 50), epoch=st.integers(0, 1 << 20))
def test_kafka_python_reads_our_batches(inputs: list[tuple], base_offset: int, epoch: int) -> None:
    builder = BatchBuilder(producer_id=77, producer_epoch=4, base_sequence=900)
    for value, key, headers, timestamp in inputs:
        builder.append(value, key=key, headers=headers, timestamp=timestamp)
    buf = bytearray(builder.build())
    set_base_offset(buf, 0, base_offset)
    set_partition_leader_epoch(buf, 0, epoch)

    theirs = DefaultRecordBatch(bytes(buf))
    assert theirs.validate_crc()
    assert theirs.magic == 2
    assert theirs.base_offset == base_offset
    assert theirs.leader_epoch == epoch
    assert theirs.records_count == len(inputs)
    assert theirs.next_offset == base_offset + len(inputs)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (77, 4, 900)
    assert theirs.max_timestamp == max(ts for *_, ts in inputs)
    assert kafka_python_records(theirs) == [
        (base_offset + i, ts, key, value, headers) for i, (value, key, headers, ts) in enumerate(inputs)
    ]


def test_kafka_python_iterates_our_batches_back_to_back() -> None:
    buf = bytearray()
    for n in range(3):
        builder = BatchBuilder(base_offset=10 * n)
        for i in range(n + 1):
            builder.append(b"v%d" % i, key=b"k", headers=[Header("h", b"x")], timestamp=1000 + i)
        buf += builder.build()
    batches = list(MemoryRecords(bytes(buf)))
    assert [b.base_offset for b in batches] == [0, 10, 20]
    assert all(b.validate_crc() for b in batches)
    assert [r.offset for b in batches for r in b] == [0, 10, 11, 20, 21, 22]


@INTEROP
@given(inputs=RECORD_INPUTS, producer_id=st.integers(0, 1 << 40), epoch=st.integers(0, 1000))
def test_we_read_kafka_python_batches(inputs: list[tuple], producer_id: int, epoch: int) -> None:
    data = kafka_python_build(inputs, producer_id=producer_id, producer_epoch=epoch, base_sequence=5)
    header = validate_batch(data)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (producer_id, epoch, 5)
    assert header.base_timestamp == inputs[0][3]
    _, records = decode_batch(data)
    assert records == [
        Record(i, ts, key, value, tuple(Header(k, v) for k, v in headers))
        for i, (value, key, headers, ts) in enumerate(inputs)
    ]
    assert list(decode_records(data + data)) == records + records
    assert [pos for pos, _ in iter_batches(data + data)] == [0, len(data)]


@INTEROP
@given(inputs=RECORD_INPUTS)
def test_identical_bytes_to_kafka_python(inputs: list[tuple]) -> None:
    # kafka-python writes baseOffset 0 and partitionLeaderEpoch 0 and takes the first record's timestamp
    # as the base timestamp; with the same inputs both builders must agree byte for byte.
    ours = BatchBuilder(partition_leader_epoch=0, producer_id=3, producer_epoch=1, base_sequence=8)
    theirs = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=3,
        producer_epoch=1,
        base_sequence=8,
        batch_size=1 << 30,
    )
    for offset, (value, key, headers, timestamp) in enumerate(inputs):
        ours.append(value, key=key, headers=headers, timestamp=timestamp)
        theirs.append(offset, timestamp, key, value, headers)
    assert ours.build() == bytes(theirs.build())


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_kafka_python_compressed_batches_read_both_ways(codec: int) -> None:
    # kafka-python writes gzip, xerial-framed snappy, lz4 frames and zstd as the Java client does.
    values = [b"compressible " * (i % 30) + str(i).encode() for i in range(200)]
    builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(1_600_000_000_000 + i, str(i).encode(), value, [("h", b"v")])
    builder.close()
    theirs = bytes(builder.buffer())
    header = validate_batch(theirs)
    assert header.compression == codec
    assert [(r.offset, r.key, r.value) for r in decode_batch(theirs)[1]] == [
        (i, str(i).encode(), value) for i, value in enumerate(values)]

    ours = BatchBuilder(compression=codec)
    for i, value in enumerate(values):
        ours.append(value, key=str(i).encode(), headers=[("h", b"v")], timestamp=1_600_000_000_000 + i)
    batch = DefaultRecordBatch(ours.build())
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert [(r.offset, r.key, r.value) for r in batch] == [(i, str(i).encode(), v) for i, v in enumerate(values)]


@settings(max_examples=300, deadline=None)
@given(value=st.integers(-(1 << 63), (1 << 63) - 1))
def test_varint_encoding_matches_kafka_python(value: int) -> None:
    theirs = bytearray()
    encode_varint(value, theirs.append)
    assert varint.encode_varint(value) == bytes(theirs)
    assert _read_varlong(bytes(theirs), 0, len(theirs)) == (value, len(theirs))
    assert decode_varint(bytearray(varint.encode_varint(value)), 0) == (value, len(theirs))
