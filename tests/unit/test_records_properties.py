"""Property tests for RecordBatch v2: round trips, header patching, and robustness against garbage."""

from __future__ import annotations

import contextlib
import random
import struct

from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records import (
    HEADER_SIZE,
    BatchBuilder,
    Header,
    Record,
    RecordBatchError,
    TruncatedBatchError,
    decode_batch,
    decode_records,
    iter_batches,
    read_header,
    set_base_offset,
    set_partition_leader_epoch,
    validate_batch,
)
from tests.unit.test_records import raw_batch

INT16 = st.integers(-(1 << 15), (1 << 15) - 1)
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
TIMESTAMPS = st.integers(-(1 << 40), 1 << 50)
NULLABLE_BYTES = st.none() | st.binary(max_size=300)
HEADERS = st.lists(st.tuples(st.text(max_size=20), NULLABLE_BYTES), max_size=8)
RECORD_INPUTS = st.tuples(NULLABLE_BYTES, NULLABLE_BYTES, HEADERS, TIMESTAMPS)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(inputs: list[tuple], **kwargs: int | None) -> bytes:
    builder = BatchBuilder(**kwargs)
    for value, key, headers, timestamp in inputs:
        builder.append(value, key=key, headers=headers, timestamp=timestamp)
    assert builder.size_in_bytes() == len(builder.build())
    return builder.build()


def expected_records(inputs: list[tuple], base_offset: int) -> list[Record]:
    return [
        Record(base_offset + i, ts, key, value, tuple(Header(k, v) for k, v in headers))
        for i, (value, key, headers, ts) in enumerate(inputs)
    ]


@FAST
@given(
    inputs=st.lists(RECORD_INPUTS, min_size=1, max_size=25),
    base_offset=st.integers(0, 1 << 62),
    epoch=INT32,
    producer_id=INT64,
    producer_epoch=INT16,
    base_sequence=INT32,
    base_timestamp=st.none() | TIMESTAMPS,
)
def test_round_trip(
    inputs: list[tuple],
    base_offset: int,
    epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    base_timestamp: int | None,
) -> None:
    data = build(
        inputs,
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        base_timestamp=base_timestamp,
    )
    header, records = decode_batch(data)
    assert records == expected_records(inputs, base_offset)
    assert list(decode_records(data)) == records
    assert header == read_header(data) == validate_batch(data)
    assert header.size_in_bytes == len(data)
    assert header.crc == crc32c(data[21:])
    assert header.record_count == len(inputs)
    assert header.last_offset == base_offset + len(inputs) - 1
    assert header.base_timestamp == (inputs[0][3] if base_timestamp is None else base_timestamp)
    assert header.max_timestamp == max(ts for *_, ts in inputs)
    assert (header.partition_leader_epoch, header.producer_id) == (epoch, producer_id)
    assert (header.producer_epoch, header.base_sequence) == (producer_epoch, base_sequence)


@settings(max_examples=8, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 1 << 20), min_size=1, max_size=2),
    key_size=st.integers(0, 1 << 16),
    seed=st.integers(0, 1 << 32),
)
def test_large_values(sizes: list[int], key_size: int, seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.randbytes(size) for size in sizes]
    key = rng.randbytes(key_size)
    builder = BatchBuilder()
    for value in values:
        builder.append(value, key=key, timestamp=0)
    data = builder.build()
    assert len(data) == builder.size_in_bytes()
    _, records = decode_batch(data)
    assert [r.value for r in records] == values
    assert all(r.key == key for r in records)


@FAST
@given(headers=st.lists(st.tuples(st.text(), NULLABLE_BYTES), min_size=50, max_size=300))
def test_many_headers(headers: list[tuple[str, bytes | None]]) -> None:
    builder = BatchBuilder()
    builder.append(b"v", headers=headers, timestamp=1)
    _, [record] = decode_batch(builder.build())
    assert record.headers == tuple(Header(k, v) for k, v in headers)


@FAST
@given(
    inputs=st.lists(RECORD_INPUTS, min_size=1, max_size=5),
    prefix=st.binary(max_size=40),
    base_offset=INT64,
    epoch=INT32,
)
def test_patching_keeps_crc_and_changes_only_those_fields(
    inputs: list[tuple], prefix: bytes, base_offset: int, epoch: int
) -> None:
    data = build(inputs)
    buf = bytearray(prefix + data)
    pos = len(prefix)
    set_base_offset(buf, pos, base_offset)
    set_partition_leader_epoch(buf, pos, epoch)
    assert buf[:pos] == prefix
    assert buf[pos + 8 : pos + 12] == data[8:12]
    assert buf[pos + 16 :] == data[16:]
    header, records = decode_batch(buf, pos)
    assert (header.base_offset, header.partition_leader_epoch) == (base_offset, epoch)
    assert records == expected_records(inputs, base_offset)


@FAST
@given(inputs=st.lists(RECORD_INPUTS, min_size=1, max_size=5), data=st.data())
def test_any_truncation_is_detected(inputs: list[tuple], data: st.DataObject) -> None:
    batch = build(inputs)
    cut = data.draw(st.integers(0, len(batch) - 1))
    try:
        validate_batch(batch[:cut])
    except TruncatedBatchError:
        return
    raise AssertionError(f"cut at {cut} not detected")


def decode_everything(buf: bytes) -> None:
    """Run every reader over ``buf``; only RecordBatchError may escape."""
    readers = (
        validate_batch,
        read_header,
        decode_batch,
        lambda b: list(iter_batches(b)),
        lambda b: list(decode_records(b)),
    )
    for read in readers:
        with contextlib.suppress(RecordBatchError):
            read(buf)


@settings(max_examples=200, deadline=None)
@given(buf=st.binary(max_size=200))
def test_random_bytes_only_raise_record_batch_errors(buf: bytes) -> None:
    decode_everything(buf)


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=120),
    count=INT32 | st.integers(-2, 6),
    attributes=st.sampled_from([0, 8, 16, 32]),
)
def test_random_records_behind_a_valid_header(body: bytes, count: int, attributes: int) -> None:
    buf = raw_batch(body, count, attributes=attributes, base_timestamp=0, max_timestamp=0, last_offset_delta=0)
    validate_batch(buf)
    decode_everything(bytes(buf))


@settings(max_examples=300, deadline=None)
@given(inputs=st.lists(RECORD_INPUTS, min_size=1, max_size=4), data=st.data())
def test_mutated_record_bytes_with_fixed_crc(inputs: list[tuple], data: st.DataObject) -> None:
    buf = bytearray(build(inputs))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(HEADER_SIZE, len(buf) - 1))
        buf[index] = data.draw(st.integers(0, 255))
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    decode_everything(bytes(buf))
