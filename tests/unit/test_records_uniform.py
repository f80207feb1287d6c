"""Batches of records of one shape, decoded in one regex pass (protocol.uniform_records): exactly what the general,
record by record decoder gives or raises, for any input."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records import (
    _MIN_UNIFORM_RECORDS,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchBuilder,
    Record,
    RecordBatchError,
    RecordColumns,
    _decode_general_columns,
    _decode_uniform_columns,
    decode_batch,
    decode_batch_columns,
    decode_records,
    read_header,
    read_record_keys,
)
from protocol.uniform_records import Shape, decode_uniform
from protocol.varint import encode_varint
from tests.unit.test_records import BASE_TS, raw_batch, with_crc

LOG_APPEND_TIME_ATTRIBUTE = 0x08
SHORT_VARINT_RANGE = range(-(1 << 13), 1 << 13)  # the values of one- or two-byte varints
POOL = random.Random(0).randbytes(1 << 16)  # keys and values are slices of it

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def padded_varint(value: int) -> bytes:
    """The varint of ``value`` one byte longer than needed (a last byte 0x00): valid, though no encoder writes it."""
    shortest = encode_varint(value)
    return shortest[:-1] + bytes((shortest[-1] | 0x80, 0))


def nullable(data: bytes | None) -> bytes:
    return encode_varint(-1) if data is None else encode_varint(len(data)) + data


def encode_record(
    timestamp_delta: int,
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    *,
    attributes: int = 0,
    headers: bytes = b"\x00",
    delta_varint: Callable[[int], bytes] = encode_varint,
    length_varint: Callable[[int], bytes] = encode_varint,
) -> bytes:
    """One record, by hand."""
    body = b"".join((
        bytes((attributes,)), delta_varint(timestamp_delta), delta_varint(offset_delta), nullable(key), nullable(value),
        headers,
    ))
    return length_varint(len(body)) + body


def general(data: bytes) -> RecordColumns:
    """The records of the batch at data[0:] decoded one by one (the general path only)."""
    header = read_header(data)
    return _decode_general_columns(data, HEADER_SIZE, header.size_in_bytes, header)


def uniform(data: bytes) -> RecordColumns | None:
    header = read_header(data)
    return _decode_uniform_columns(data, HEADER_SIZE, header.size_in_bytes, header)


def outcome(decode: Callable[[bytes], RecordColumns], data: bytes) -> tuple:
    """What decoding gives: ("ok", columns) or ("error", type, message)."""
    try:
        return "ok", decode(data)
    except RecordBatchError as e:
        return "error", type(e), str(e)


def assert_decodes_as_general(data: bytes) -> RecordColumns:
    """Every public decoder gives what the general path gives; returns that."""
    expected = general(data)
    assert decode_batch_columns(data)[1] == expected
    records = [Record(*fields) for fields in zip(*expected, strict=True)]
    assert decode_batch(data)[1] == records
    assert list(decode_records(data + data)) == records + records
    return expected


def pick(rng: random.Random, size: int | None) -> bytes | None:
    if size is None:
        return None
    start = rng.randrange(len(POOL) - size)
    return POOL[start : start + size]


def uniform_records(
    rng: random.Random, count: int, shape: Shape, timestamp_spread: int, offset_deltas: str, padded_deltas: bool
) -> tuple[list[bytes], bool]:
    """``count`` records of ``shape`` and whether all their deltas are one- or two-byte varints. Offset deltas are
    0 .. count - 1 ("sequential"), those shuffled, or random; timestamp deltas are random in +-spread."""
    offsets = list(range(count))
    if offset_deltas == "shuffled":
        rng.shuffle(offsets)
    elif offset_deltas == "random":
        offsets = [rng.choice((rng.randrange(64), rng.randrange(1 << 14), rng.randrange(1 << 31))) for _ in offsets]
    timestamps = [rng.randint(-timestamp_spread, timestamp_spread) for _ in offsets]
    # padded deltas only where all have one-byte encodings: then they are two bytes long
    padded = padded_deltas and all(-64 <= t < 64 and o < 64 for t, o in zip(timestamps, offsets, strict=True))
    records = [
        encode_record(
            t, o, pick(rng, shape.key_size), pick(rng, shape.value_size),
            delta_varint=padded_varint if padded else encode_varint,
        )
        for t, o in zip(timestamps, offsets, strict=True)
    ]
    short = all(t in SHORT_VARINT_RANGE and o in SHORT_VARINT_RANGE for t, o in zip(timestamps, offsets, strict=True))
    return records, short


def batch(records: list[bytes], *, log_append_time: bool = False, base_offset: int = 0) -> bytes:
    return raw_batch(
        b"".join(records),
        len(records),
        attributes=LOG_APPEND_TIME_ATTRIBUTE if log_append_time else 0,
        base_offset=base_offset,
        max_timestamp=BASE_TS + 12345,
    )


SHAPES = st.builds(Shape, st.none() | st.integers(0, 300), st.none() | st.integers(0, 2000))
SHORT_TIMESTAMP_SPREADS = [0, 1, 63, 64, 8191]  # timestamp deltas all of one or two bytes


def batches(timestamp_spreads: list[int], offset_deltas: list[str]) -> st.SearchStrategy[dict]:
    """Keyword arguments of uniform_records, and a seed."""
    return st.fixed_dictionaries({
        "seed": st.integers(0, 1 << 32),
        "count": st.integers(1, 3000),
        "shape": SHAPES,
        "timestamp_spread": st.sampled_from(timestamp_spreads),
        "offset_deltas": st.sampled_from(offset_deltas),
        "padded_deltas": st.booleans(),
    })


# --------------------------------------------------------------------------- properties


@PROPERTY
@given(
    params=batches([*SHORT_TIMESTAMP_SPREADS, 8192, 1 << 20, 1 << 40], ["sequential", "shuffled", "random"]),
    log_append_time=st.booleans(),
    base_offset=st.integers(0, 1 << 62),
)
def test_uniform_batches_decode_as_record_by_record(params: dict, log_append_time: bool, base_offset: int) -> None:
    rng = random.Random(params.pop("seed"))
    records, short = uniform_records(rng, **params)
    data = batch(records, log_append_time=log_append_time, base_offset=base_offset)
    expected = assert_decodes_as_general(data)
    fast = uniform(data)
    assert (fast is not None) == (short and len(records) >= _MIN_UNIFORM_RECORDS)
    assert fast in (None, expected)


def other_size(rng: random.Random, size: int | None) -> int | None:
    return rng.choice([other for other in (None, 0, 7, 300) if other != size])


DIFFERENCES = [
    "value size", "key size", "header", "attributes", "long timestamp delta", "padded length", "padded header count"
]


def different_record(rng: random.Random, shape: Shape, kind: str) -> bytes:
    """A well-formed record that does not have ``shape`` or is not written as the fast path reads records."""
    key, value = pick(rng, shape.key_size), pick(rng, shape.value_size)
    match kind:
        case "value size":
            return encode_record(0, 0, key, pick(rng, other_size(rng, shape.value_size)))
        case "key size":
            return encode_record(0, 0, pick(rng, other_size(rng, shape.key_size)), value)
        case "header":
            return encode_record(0, 0, key, value, headers=b"\x02\x02h\x01")
        case "attributes":
            return encode_record(0, 0, key, value, attributes=rng.randrange(1, 256))
        case "long timestamp delta":
            return encode_record(rng.choice([8192, -8193, 1 << 40]), 0, key, value)
        case "padded length":
            return encode_record(0, 0, key, value, length_varint=padded_varint)
        case "padded header count":
            return encode_record(0, 0, key, value, headers=padded_varint(0))
    raise AssertionError(kind)


@PROPERTY
@given(
    params=batches(SHORT_TIMESTAMP_SPREADS, ["sequential", "shuffled"]),
    kind=st.sampled_from(DIFFERENCES),
    where=st.floats(0, 1),
    log_append_time=st.booleans(),
)
def test_mixed_batches_decode_as_record_by_record(params: dict, kind: str, where: float, log_append_time: bool) -> None:
    rng = random.Random(params.pop("seed"))
    records, short = uniform_records(rng, **params)
    assert short
    assert (uniform(batch(records)) is not None) == (len(records) >= _MIN_UNIFORM_RECORDS)
    records[min(int(where * len(records)), len(records) - 1)] = different_record(rng, params["shape"], kind)
    data = batch(records, log_append_time=log_append_time)
    assert_decodes_as_general(data)
    assert uniform(data) is None


def reseal(data: bytearray) -> bytes:
    """The batch with its batchLength and CRC made to match its bytes."""
    struct.pack_into(">i", data, 8, len(data) - LOG_OVERHEAD)
    return with_crc(data)


def corrupt(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    pos = rng.randrange(HEADER_SIZE, len(out))
    match rng.choice(["flip", "set", "delete", "insert", "truncate", "record count"]):
        case "flip":
            out[pos] ^= 1 << rng.randrange(8)
        case "set":
            out[pos] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        case "delete":
            del out[pos : pos + rng.randint(1, 3)]
        case "insert":
            out[pos:pos] = rng.randbytes(rng.randint(1, 3))
        case "truncate":
            del out[pos:]
        case "record count":
            struct.pack_into(">i", out, 57, struct.unpack_from(">i", out, 57)[0] + rng.choice([-2, -1, 1, 2]))
    return reseal(out)


@PROPERTY
@given(
    seed=st.integers(0, 1 << 32),
    count=st.integers(_MIN_UNIFORM_RECORDS, 200),
    shape=st.builds(Shape, st.none() | st.integers(0, 20), st.none() | st.integers(0, 200)),
    corruptions=st.integers(1, 3),
    log_append_time=st.booleans(),
)
def test_corrupt_uniform_batches_decode_or_fail_as_record_by_record(
    seed: int, count: int, shape: Shape, corruptions: int, log_append_time: bool
) -> None:
    rng = random.Random(seed)
    records, _ = uniform_records(rng, count, shape, 100, "sequential", False)
    data = batch(records, log_append_time=log_append_time)
    assert uniform(data) is not None
    for _ in range(corruptions):
        if len(data) > HEADER_SIZE:
            data = corrupt(rng, data)
    expected = outcome(general, data)
    assert outcome(lambda d: decode_batch_columns(d)[1], data) == expected
    assert uniform(data) in (None, expected[1])


# --------------------------------------------------------------------------- examples


def test_fast_path_applies_to_uniform_batches_only() -> None:
    builder = BatchBuilder(base_offset=1000, base_timestamp=BASE_TS)
    for i in range(2000):
        builder.append(bytes(100), timestamp=BASE_TS + i // 500)
    data = builder.build()
    columns = uniform(data)
    assert columns is not None
    assert columns == general(data) == decode_batch_columns(data)[1]
    assert columns.offsets == list(range(1000, 3000))
    assert columns.timestamps[::500] == [BASE_TS, BASE_TS + 1, BASE_TS + 2, BASE_TS + 3]
    assert columns.keys == [None] * 2000
    assert columns.headers == [()] * 2000

    builder.append(bytes(101), timestamp=BASE_TS)
    assert uniform(builder.build()) is None
    small = BatchBuilder()
    for _ in range(_MIN_UNIFORM_RECORDS - 1):
        small.append(b"v", key=b"k", timestamp=0)
    assert uniform(small.build()) is None


def test_decode_uniform_reports_what_does_not_apply() -> None:
    records = [encode_record(i, i, b"key", b"value") for i in range(10)]
    data = b"".join(records)
    end = len(data)
    assert decode_uniform(data, 0, end, 10, Shape(3, 5), 7, 100, False) == (
        list(range(7, 17)), list(range(100, 110)), [b"key"] * 10, [b"value"] * 10, [()] * 10
    )
    assert decode_uniform(data, 0, end, 10, Shape(3, 5), 7, 100, True)[1] == [100] * 10
    assert decode_uniform(data, 0, end, 10, Shape(None, 5), 7, 100, False) is None  # another shape
    assert decode_uniform(data, 0, end, 9, Shape(3, 5), 7, 100, False) is None  # another count
    assert decode_uniform(data, 0, end - 1, 10, Shape(3, 5), 7, 100, False) is None  # a record cut short
    assert decode_uniform(data + b"\x00", 0, end + 1, 10, Shape(3, 5), 7, 100, False) is None  # trailing byte
    assert decode_uniform(data, 0, 0, 0, Shape(3, 5), 7, 100, False) is None  # no records


@pytest.mark.parametrize("length_change", [-2, -1, 1, 2])
def test_a_record_length_not_matching_its_deltas_is_never_taken(length_change: int) -> None:
    """Record lengths that would be right for deltas of another size fail as in the general path."""
    records = [encode_record(0, i, None, b"v" * 10) for i in range(20)]
    records[5] = encode_record(  # its timestamp delta two bytes, its offset delta one
        200, 5, None, b"v" * 10, length_varint=lambda length: encode_varint(length + length_change)
    )
    data = batch(records)
    assert uniform(data) is None
    with pytest.raises(RecordBatchError) as raised:
        general(data)
    assert outcome(lambda d: decode_batch_columns(d)[1], data) == ("error", raised.type, str(raised.value))


def test_padded_small_deltas_decode_as_record_by_record() -> None:
    records = [encode_record(i % 3 - 1, i, b"", None, delta_varint=padded_varint) for i in range(50)]
    data = batch(records, base_offset=10)
    columns = uniform(data)
    assert columns is not None
    assert columns == general(data)
    assert columns.offsets == list(range(10, 60))
    assert columns.timestamps[:3] == [BASE_TS - 1, BASE_TS, BASE_TS + 1]
    assert columns.keys == [b""] * 50
    assert columns.values == [None] * 50


def test_every_one_byte_change_decodes_or_fails_as_record_by_record() -> None:
    """Every byte of a uniform batch's records set to each of several values, deleted, or preceded by a 0x00, with
    recordCount unchanged, one higher or one lower."""
    timestamp_deltas = [0, 1, -1, 100, 0, -100, 5, 8000, 3, 0]  # one- and two-byte varints
    data = batch([encode_record(delta, i, b"k", b"val") for i, delta in enumerate(timestamp_deltas)])
    assert uniform(data) is not None
    variants = []
    for pos in range(HEADER_SIZE, len(data)):
        for byte in {0x00, 0x01, 0x02, 0x03, 0x7F, 0x80, 0x81, 0xFF, data[pos] ^ 0x01, data[pos] ^ 0x80}:
            variants.append(data[:pos] + bytes((byte,)) + data[pos + 1 :])
        variants += (data[:pos] + data[pos + 1 :], data[:pos] + b"\x00" + data[pos:])
    for variant in variants:
        for count_change in (0, 1, -1):
            changed = bytearray(variant)
            struct.pack_into(">i", changed, 57, len(timestamp_deltas) + count_change)
            changed = reseal(changed)
            expected = outcome(general, changed)
            assert outcome(lambda d: decode_batch_columns(d)[1], changed) == expected
            assert uniform(changed) in (None, expected[1])


def test_the_keys_of_records_without_key_or_value_read_as_record_by_record() -> None:
    """The offset map's reading of null-keyed tombstones (a regex with one group left to capture)."""
    data = batch([encode_record(100 * i, i, None, None) for i in range(10)], base_offset=40)
    expected = general(data)
    _header, offsets, keys = read_record_keys(data)
    assert (list(offsets), keys) == (expected.offsets, expected.keys) == (list(range(40, 50)), [None] * 10)
