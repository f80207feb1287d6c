"""Batches in the layout producers write (protocol.fixed_records): read without a step per record, exactly as the
one-regex-pass decoder reads them, and never taken for a batch that has another layout or is damaged."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from protocol.fixed_records import decode_fixed_keys, decode_fixed_spans
from protocol.records import HEADER_SIZE, decode_batch_columns, read_header, read_record_keys, read_stored_records
from protocol.uniform_records import Shape, decode_uniform_keys, decode_uniform_spans
from tests.unit.test_records import BASE_TS
from tests.unit.test_records_uniform import PROPERTY, SHAPES, batch, corrupt, encode_record, uniform_records

#: Timestamp spreads whose deltas are all one-byte varints (-64 .. 63), and some that are not.
TIMESTAMP_SPREADS = [0, 1, 63, 64, 8191, 1 << 20]


def region(data: bytes) -> tuple[bytes, int, int]:
    return data, HEADER_SIZE, read_header(data).size_in_bytes


def both_ways(data: bytes, count: int, shape: Shape, base_offset: int, log_append_time: bool) -> tuple:
    """(fixed keys, uniform keys, fixed spans, uniform spans) of the batch ``data``."""
    header = read_header(data)
    timestamp = header.max_timestamp if log_append_time else header.base_timestamp
    where = (*region(data), count, shape, base_offset)
    spans = (*where, timestamp, log_append_time)
    return (decode_fixed_keys(*where), decode_uniform_keys(*where),
            decode_fixed_spans(*spans), decode_uniform_spans(*spans))


def same_keys(fixed: tuple | None, uniform: tuple | None) -> bool:
    return fixed is not None and uniform is not None and list(fixed[0]) == list(uniform[0]) and fixed[1] == uniform[1]


@PROPERTY
@given(
    seed=st.integers(0, 1 << 32),
    count=st.one_of(st.integers(1, 200), st.sampled_from([63, 64, 65, 8191, 8192, 8193])),
    shape=SHAPES,
    timestamp_spread=st.sampled_from(TIMESTAMP_SPREADS),
    offset_deltas=st.sampled_from(["sequential", "shuffled", "random"]),
    log_append_time=st.booleans(),
    base_offset=st.integers(0, 1 << 62),
)
def test_a_batch_in_the_producers_layout_reads_as_the_regex_pass_reads_it(
        seed: int, count: int, shape: Shape, timestamp_spread: int, offset_deltas: str, log_append_time: bool,
        base_offset: int) -> None:
    rng = random.Random(seed)
    records, _ = uniform_records(rng, count, shape, timestamp_spread, offset_deltas, False)
    data = batch(records, log_append_time=log_append_time, base_offset=base_offset)
    fixed_keys, uniform_keys, fixed_spans, uniform_spans = both_ways(data, count, shape, base_offset, log_append_time)
    columns = decode_batch_columns(batch(records))[1]
    in_layout = (count <= 8192 and columns.offsets == list(range(count))
                 and all(-64 <= timestamp - BASE_TS < 64 for timestamp in columns.timestamps))
    assert (fixed_keys is not None) == (fixed_spans is not None) == in_layout
    if in_layout:
        assert same_keys(fixed_keys, uniform_keys)
        assert fixed_spans == uniform_spans


@PROPERTY
@given(
    seed=st.integers(0, 1 << 32),
    count=st.integers(1, 150),
    shape=st.builds(Shape, st.none() | st.integers(0, 20), st.none() | st.integers(0, 200)),
    corruptions=st.integers(1, 3),
)
def test_a_damaged_batch_is_never_read_otherwise_than_the_regex_pass_reads_it(
        seed: int, count: int, shape: Shape, corruptions: int) -> None:
    rng = random.Random(seed)
    records, _ = uniform_records(rng, count, shape, 50, "sequential", False)
    data = batch(records)
    for _ in range(corruptions):
        data = corrupt(rng, data)
    fixed_keys, uniform_keys, fixed_spans, uniform_spans = both_ways(data, count, shape, 0, False)
    assert fixed_keys is None or same_keys(fixed_keys, uniform_keys)
    assert fixed_spans is None or fixed_spans == uniform_spans


def test_padded_deltas_and_a_misplaced_offset_delta_are_not_the_layout() -> None:
    def varint_padded(value: int) -> bytes:
        return bytes((value << 1 | 0x80, 0))

    padded = [encode_record(0, i, b"k", b"v", delta_varint=varint_padded) for i in range(10)]
    swapped = [encode_record(0, i, b"k", b"v") for i in (0, 1, 3, 2, 4)]
    for records in (padded, swapped):
        data = batch(records)
        assert decode_fixed_keys(*region(data), len(records), Shape(1, 1), 0) is None


def test_the_cleaners_readers_take_the_fixed_layout_and_may_leave_its_keys_unread() -> None:
    records = [encode_record(i % 7, i, b"key-%03d" % i, b"value") for i in range(100)]
    data = batch(records, base_offset=500)
    header, offsets, keys = read_record_keys(data)
    assert list(offsets) == list(range(500, 600)) and keys == [b"key-%03d" % i for i in range(100)]
    _, stored = read_stored_records(data)
    assert stored.keys == keys and stored.timestamps == [BASE_TS + i % 7 for i in range(100)]
    assert stored.starts[0] == HEADER_SIZE and stored.starts[-1] == header.size_in_bytes
    _, without_keys = read_stored_records(data, with_keys=False)
    assert without_keys.keys is None and without_keys._replace(keys=keys) == stored
