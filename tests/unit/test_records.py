"""RecordBatch v2: exact bytes, header patching, builder behaviour and every kind of bad input."""

from __future__ import annotations

import struct
import time

import pytest
from crc32c import crc32c

from protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchBuilder,
    BatchHeader,
    CorruptBatchError,
    Header,
    InvalidBatchLengthError,
    InvalidMagicError,
    InvalidRecordError,
    Record,
    RecordBatchError,
    TruncatedBatchError,
    UnsupportedCompressionError,
    decode_batch,
    decode_records,
    iter_batches,
    read_header,
    set_base_offset,
    set_partition_leader_epoch,
    validate_batch,
)

BASE_TS = 1_600_000_000_000
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")


def sample_batch() -> bytes:
    builder = BatchBuilder(
        base_offset=5,
        partition_leader_epoch=7,
        producer_id=1234,
        producer_epoch=3,
        base_sequence=42,
        base_timestamp=BASE_TS,
    )
    builder.append(b"value", key=b"key", headers=[("h", b"v")], timestamp=BASE_TS + 10)
    builder.append(None, timestamp=BASE_TS + 5)
    return builder.build()


def raw_batch(
    records: bytes,
    count: int,
    *,
    attributes: int = 0,
    base_offset: int = 0,
    last_offset_delta: int | None = None,
    base_timestamp: int = BASE_TS,
    max_timestamp: int = BASE_TS,
    magic: int = MAGIC,
) -> bytes:
    """A batch assembled by hand (independent of BatchBuilder), with a correct CRC."""
    if last_offset_delta is None:
        last_offset_delta = max(count - 1, 0)
    header = bytearray(
        HEADER_STRUCT.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(records),
            0,
            magic,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            -1,
            -1,
            -1,
            count,
        )
    )
    out = header + records
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def with_crc(data: bytes | bytearray) -> bytes:
    out = bytearray(data)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


# One well-formed record: attrs 0, ts delta 0, offset delta 0, null key, value b"x", no headers.
GOOD_RECORD = bytes([0x0E, 0x00, 0x00, 0x00, 0x01, 0x02, ord("x"), 0x00])


# --------------------------------------------------------------------------- exact bytes


def test_constants() -> None:
    assert HEADER_SIZE == 61 == HEADER_STRUCT.size
    assert MAGIC == 2
    assert LOG_OVERHEAD == 12
    assert NO_PRODUCER_ID == NO_PARTITION_LEADER_EPOCH == NO_SEQUENCE == -1


def test_exact_header_bytes() -> None:
    data = sample_batch()
    assert len(data) == 87
    assert data[0:8] == (5).to_bytes(8, "big")  # baseOffset
    assert data[8:12] == (87 - 12).to_bytes(4, "big")  # batchLength
    assert data[12:16] == (7).to_bytes(4, "big")  # partitionLeaderEpoch
    assert data[16] == 2  # magic
    assert data[17:21] == crc32c(data[21:]).to_bytes(4, "big")  # crc
    assert data[21:23] == b"\x00\x00"  # attributes
    assert data[23:27] == (1).to_bytes(4, "big")  # lastOffsetDelta
    assert data[27:35] == BASE_TS.to_bytes(8, "big")  # baseTimestamp
    assert data[35:43] == (BASE_TS + 10).to_bytes(8, "big")  # maxTimestamp
    assert data[43:51] == (1234).to_bytes(8, "big")  # producerId
    assert data[51:53] == (3).to_bytes(2, "big")  # producerEpoch
    assert data[53:57] == (42).to_bytes(4, "big")  # baseSequence
    assert data[57:61] == (2).to_bytes(4, "big")  # record count


def test_exact_record_bytes() -> None:
    data = sample_batch()
    first = (
        bytes([0x24, 0x00, 0x14, 0x00, 0x06])  # length 18, attrs, ts delta 10, offset delta 0, key len 3
        + b"key"
        + bytes([0x0A])  # value len 5
        + b"value"
        + bytes([0x02, 0x02, ord("h"), 0x02, ord("v")])  # 1 header: key len 1, "h", value len 1, "v"
    )
    second = bytes([0x0C, 0x00, 0x0A, 0x02, 0x01, 0x01, 0x00])  # length 6, ts delta 5, delta 1, nulls
    assert data[HEADER_SIZE:] == first + second


def test_multibyte_and_negative_varints() -> None:
    builder = BatchBuilder(base_timestamp=1000)
    builder.append(b"a" * 200, timestamp=999)  # ts delta -1, value length 200
    data = builder.build()
    body = data[HEADER_SIZE:]
    # length 1+1+1+1+2+200+1 = 207 -> zigzag 414 = 0x19E -> 9E 03
    # ts delta -1 -> zigzag 1 -> 01; value length 200 -> zigzag 400 = 0x190 -> 90 03
    assert body[:8] == bytes([0x9E, 0x03, 0x00, 0x01, 0x00, 0x01, 0x90, 0x03])
    assert decode_batch(data)[1] == [Record(0, 999, None, b"a" * 200)]


def test_handmade_batch_decodes() -> None:
    header, records = decode_batch(raw_batch(GOOD_RECORD, 1, base_offset=100))
    assert header.record_count == 1
    assert records == [Record(100, BASE_TS, None, b"x")]


# --------------------------------------------------------------------------- header


def test_read_and_validate_header_fields() -> None:
    data = sample_batch()
    expected = BatchHeader(
        base_offset=5,
        batch_length=75,
        partition_leader_epoch=7,
        magic=2,
        crc=crc32c(data[21:]),
        attributes=0,
        last_offset_delta=1,
        base_timestamp=BASE_TS,
        max_timestamp=BASE_TS + 10,
        producer_id=1234,
        producer_epoch=3,
        base_sequence=42,
        record_count=2,
    )
    assert read_header(data) == expected
    assert validate_batch(data) == expected
    assert validate_batch(bytearray(data)) == expected
    assert validate_batch(memoryview(data)) == expected
    assert expected.last_offset == 6
    assert expected.next_offset == 7
    assert expected.size_in_bytes == 87
    assert expected.compression == 0
    assert not expected.is_transactional
    assert not expected.is_control
    assert expected.timestamp_type == 0


@pytest.mark.parametrize(
    ("attributes", "transactional", "control", "ts_type"),
    [(0x10, True, False, 0), (0x20, False, True, 0), (0x30, True, True, 0), (0x08, False, False, 1)],
)
def test_attribute_bits(attributes: int, transactional: bool, control: bool, ts_type: int) -> None:
    header = validate_batch(raw_batch(GOOD_RECORD, 1, attributes=attributes))
    assert header.is_transactional is transactional
    assert header.is_control is control
    assert header.timestamp_type == ts_type
    assert header.compression == 0


def test_log_append_time_uses_max_timestamp() -> None:
    data = raw_batch(GOOD_RECORD, 1, attributes=0x08, max_timestamp=BASE_TS + 777)
    assert decode_batch(data)[1][0].timestamp == BASE_TS + 777


def test_header_is_frozen() -> None:
    header = read_header(sample_batch())
    with pytest.raises(AttributeError):
        header.base_offset = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- patching


@pytest.mark.parametrize("wrap", [bytearray, lambda b: memoryview(bytearray(b))])
def test_patch_fields_in_place(wrap) -> None:
    first = sample_batch()
    other = BatchBuilder()
    other.append(b"z", timestamp=BASE_TS)
    joined = first + other.build()
    buf = wrap(joined)
    pos = len(first)
    set_base_offset(buf, pos, 1 << 40)
    set_partition_leader_epoch(buf, pos, 99)
    after = bytes(buf)
    changed = [i for i in range(len(joined)) if joined[i] != after[i]]
    assert changed and all(pos <= i < pos + 16 and not pos + 8 <= i < pos + 12 for i in changed)
    header = validate_batch(buf, pos)
    assert header.base_offset == 1 << 40
    assert header.partition_leader_epoch == 99
    assert validate_batch(buf, 0) == validate_batch(first)
    assert [r.offset for r in decode_records(buf)] == [5, 6, 1 << 40]


def test_patch_requires_writable_buffer() -> None:
    with pytest.raises(TypeError):
        set_base_offset(sample_batch(), 0, 1)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- builder


def test_builder_size_len_and_deltas() -> None:
    builder = BatchBuilder()
    assert len(builder) == 0
    assert builder.size_in_bytes() == HEADER_SIZE
    for i in range(20):
        assert builder.append(bytes(i * 10), key=b"k" if i % 2 else None, timestamp=BASE_TS + i) == i
        assert len(builder) == i + 1
        assert builder.size_in_bytes() == len(builder.build())
    header, records = decode_batch(builder.build())
    assert header.last_offset_delta == 19
    assert [r.offset for r in records] == list(range(20))


def test_builder_refuses_empty_batch() -> None:
    with pytest.raises(ValueError, match="empty"):
        BatchBuilder().build()


def test_builder_timestamps() -> None:
    builder = BatchBuilder()
    before = time.time_ns() // 1_000_000
    builder.append(b"now")
    after = time.time_ns() // 1_000_000
    builder.append(b"early", timestamp=before - 5000)
    header, records = decode_batch(builder.build())
    assert before <= header.base_timestamp <= after
    assert header.max_timestamp == header.base_timestamp == records[0].timestamp
    assert records[1].timestamp == before - 5000

    given = BatchBuilder(base_timestamp=10)
    given.append(b"x", timestamp=3)
    given.append(b"y", timestamp=7)
    header, records = decode_batch(given.build())
    assert (header.base_timestamp, header.max_timestamp) == (10, 7)
    assert [r.timestamp for r in records] == [3, 7]


def test_builder_defaults() -> None:
    builder = BatchBuilder()
    builder.append(b"v", timestamp=1)
    header = read_header(builder.build())
    assert header.base_offset == 0
    assert header.partition_leader_epoch == NO_PARTITION_LEADER_EPOCH
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.attributes == 0


def test_builder_headers_and_bytes_like_inputs() -> None:
    builder = BatchBuilder()
    builder.append(
        memoryview(b"val"),
        key=bytearray(b"key"),
        headers=[Header("a", b"1"), ("ü", None), ("c", bytearray(b"3"))],
        timestamp=0,
    )
    _, [record] = decode_batch(builder.build())
    assert record == Record(0, 0, b"key", b"val", (Header("a", b"1"), Header("ü", None), Header("c", b"3")))
    assert type(record.key) is bytes and type(record.value) is bytes


@pytest.mark.parametrize(
    "kwargs",
    [
        {"value": "text"},
        {"value": 5},
        {"value": b"v", "key": "k"},
        {"value": b"v", "headers": [(b"bytes-key", b"v")]},
        {"value": b"v", "headers": [("k", "str-value")]},
    ],
)
def test_builder_type_errors(kwargs: dict) -> None:
    with pytest.raises(TypeError):
        BatchBuilder().append(**kwargs)


def test_builder_timestamp_range() -> None:
    with pytest.raises(ValueError):
        BatchBuilder().append(b"v", timestamp=1 << 63)
    with pytest.raises(ValueError):
        BatchBuilder(base_timestamp=-(1 << 63) - 1)
    builder = BatchBuilder(base_timestamp=-(1 << 62) * 2)
    with pytest.raises(ValueError):
        builder.append(b"v", timestamp=(1 << 63) - 1)


def test_build_is_repeatable_and_builder_continues() -> None:
    builder = BatchBuilder()
    builder.append(b"a", timestamp=1)
    first = builder.build()
    assert builder.build() == first
    builder.append(b"b", timestamp=2)
    assert [r.value for r in decode_batch(builder.build())[1]] == [b"a", b"b"]


# --------------------------------------------------------------------------- iteration


def test_iter_batches_and_decode_records() -> None:
    batches = []
    for n in range(1, 4):
        builder = BatchBuilder(base_offset=n * 100)
        for i in range(n):
            builder.append(b"%d-%d" % (n, i), timestamp=i)
        batches.append(builder.build())
    buf = b"".join(batches)
    positions = [pos for pos, _ in iter_batches(buf)]
    assert positions == [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    assert [h.base_offset for _, h in iter_batches(memoryview(buf))] == [100, 200, 300]
    assert [r.offset for r in decode_records(bytearray(buf))] == [100, 200, 201, 300, 301, 302]
    assert list(iter_batches(b"")) == []
    assert list(decode_records(b"")) == []


def test_iter_batches_rejects_trailing_partial_batch() -> None:
    data = sample_batch()
    with pytest.raises(TruncatedBatchError):
        list(iter_batches(data + data[:30]))
    with pytest.raises(TruncatedBatchError):
        list(decode_records(data + data[:-1]))


def test_decode_batch_at_position() -> None:
    data = sample_batch()
    header, records = decode_batch(b"\xff" * 13 + data, 13)
    assert header.base_offset == 5
    assert [r.offset for r in records] == [5, 6]


# --------------------------------------------------------------------------- bad input: batch level


def test_truncated_at_every_position() -> None:
    data = sample_batch()
    for cut in range(len(data)):
        for func in (read_header, validate_batch, decode_batch):
            with pytest.raises(TruncatedBatchError):
                func(data[:cut])
        if cut:
            with pytest.raises(TruncatedBatchError):
                list(iter_batches(data[:cut]))


def test_header_alone_with_require_body_false() -> None:
    data = sample_batch()
    assert read_header(data[:HEADER_SIZE], require_body=False) == read_header(data)
    with pytest.raises(TruncatedBatchError):
        read_header(data[: HEADER_SIZE - 1], require_body=False)
    bad = bytearray(data[:HEADER_SIZE])
    bad[16] = 1
    with pytest.raises(InvalidMagicError):
        read_header(bad, require_body=False)
    struct.pack_into(">i", bad, 8, -5)
    with pytest.raises(InvalidBatchLengthError):
        read_header(bad, require_body=False)


def test_position_past_the_end_is_truncated() -> None:
    with pytest.raises(TruncatedBatchError):
        read_header(sample_batch(), 1000)


def test_negative_position_rejected() -> None:
    with pytest.raises(ValueError, match="negative"):
        read_header(sample_batch(), -61)


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_wrong_magic(magic: int) -> None:
    data = bytearray(sample_batch())
    struct.pack_into(">b", data, 16, magic)
    for func in (read_header, validate_batch, decode_batch):
        with pytest.raises(InvalidMagicError):
            func(data)


def test_crc_covers_attributes_to_end() -> None:
    data = sample_batch()
    for i in range(17, len(data)):  # the CRC itself and everything after it
        damaged = bytearray(data)
        damaged[i] ^= 0x01
        with pytest.raises(CorruptBatchError):
            validate_batch(damaged)
        with pytest.raises(CorruptBatchError):
            decode_batch(damaged)
    for i in [*range(0, 8), *range(12, 16)]:  # baseOffset and partitionLeaderEpoch are not covered
        patched = bytearray(data)
        patched[i] ^= 0xFF
        validate_batch(patched)


def test_batch_length_beyond_buffer_is_truncated() -> None:
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 8, len(data))  # claims 12 bytes more than there are
    with pytest.raises(TruncatedBatchError):
        validate_batch(data)


@pytest.mark.parametrize("length", [-1, -(1 << 31), 0, HEADER_SIZE - LOG_OVERHEAD - 1])
def test_impossible_batch_length(length: int) -> None:
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 8, length)
    for func in (read_header, validate_batch):
        with pytest.raises(InvalidBatchLengthError):
            func(data)


def test_shorter_batch_length_reads_a_prefix() -> None:
    # A batchLength smaller than the buffer makes the CRC cover fewer bytes: a mismatch, not an overrun.
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 8, len(data) - LOG_OVERHEAD - 1)
    with pytest.raises(CorruptBatchError):
        validate_batch(data)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codecs_refused(codec: int) -> None:
    data = bytearray(sample_batch())
    struct.pack_into(">h", data, 21, codec)
    data = with_crc(data)
    assert read_header(data).compression == codec
    with pytest.raises(UnsupportedCompressionError, match=f"compression codec {codec}, which is unknown"):
        validate_batch(data)
    with pytest.raises(UnsupportedCompressionError):
        decode_batch(data)


@pytest.mark.parametrize(("codec", "name"), [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_compressed_batches_decode_as_uncompressed_ones(codec: int, name: str) -> None:
    builder = BatchBuilder(base_offset=5, producer_id=1234, producer_epoch=3, base_sequence=42, compression=codec)
    builder.append(b"value", key=b"key", headers=[("h", b"v")], timestamp=BASE_TS + 10)
    builder.append(None, timestamp=BASE_TS + 5)
    data = builder.build()
    header = validate_batch(data)
    assert header.compression == codec
    assert (header.max_timestamp, header.record_count, header.last_offset_delta) == (BASE_TS + 10, 2, 1)
    assert decode_batch(data)[1] == decode_batch(sample_batch())[1]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_a_payload_that_does_not_decompress_is_an_invalid_record(codec: int) -> None:
    # An uncompressed batch marked compressed, its CRC right: the header is valid, its records are not.
    data = bytearray(sample_batch())
    struct.pack_into(">h", data, 21, codec)
    data = with_crc(data)
    validate_batch(data)
    with pytest.raises(InvalidRecordError, match=r"does not decompress|not an LZ4 frame"):
        decode_batch(data)


def test_error_hierarchy() -> None:
    for exc in (
        TruncatedBatchError,
        InvalidMagicError,
        CorruptBatchError,
        InvalidBatchLengthError,
        InvalidRecordError,
        UnsupportedCompressionError,
    ):
        assert issubclass(exc, RecordBatchError)
    assert issubclass(RecordBatchError, ValueError)


# --------------------------------------------------------------------------- bad input: record level


def record(body: bytes) -> bytes:
    """Prefix a record body with its (single byte, zigzag) length."""
    assert len(body) < 64
    return bytes([len(body) << 1]) + body


@pytest.mark.parametrize(
    ("records", "count", "match"),
    [
        (record(b"\x00\x00\x00\x03\x01\x00"), 1, "key length -2"),  # key length -2
        (record(b"\x00\x00\x00\x01\x09\x00"), 1, "value length -5"),  # value length -5
        (record(b"\x00\x00\x00\x04k"), 1, "key of 2 bytes"),  # key runs past record
        (record(b"\x00\x00\x00\x01\x01\x01"), 1, "header count -1"),
        (record(b"\x00\x00\x00\x01\x01\x02"), 1, "header count 1"),  # count > remaining bytes
        (record(b"\x00\x00\x00\x01\x01\x02\x01\x01"), 1, "header key length -1"),
        (record(b"\x00\x00\x00\x01\x01\x02\x02\xff\x01"), 1, "not utf-8"),
        (record(b"\x00\x00\x00\x01\x01\x02\x02k\x03"), 1, "header value length -2"),
        (b"\x80" * 20, 1, "longer than 5 bytes"),  # record length never terminates
        (b"\x80\x80", 1, "past the end"),  # record length runs off the batch
        (record(b"\x00" + b"\xff" * 10 + b"\x00\x00\x01\x01\x00"), 1, "longer than 10 bytes"),  # varlong
        (record(b"\x00\x00\x80\x80\x80\x80\x80\x00\x01\x01\x00"), 1, "longer than 5 bytes"),  # offset delta
        (record(b"\x00\x00\xff\xff\xff\xff\x7f\x01\x01\x00"), 1, "32 bits"),  # varint beyond int32
        (record(b"\x00\x00\x00\x01\x01\x00") * 2, 3, "2 records, its header says 3"),
        (record(b"\x00\x00\x00\x01\x01\x00") * 2, 1, "trailing bytes"),
        (GOOD_RECORD, -1, "negative record count"),
        (b"\x64" + GOOD_RECORD[1:], 1, "record length 50"),  # record overruns the batch
        (b"\x00", 1, "record length 0"),
        (b"\x01", 1, "record length -1"),
        (record(b"\x00\x00\x00\x01\x01\x00\x00"), 1, "end 1 bytes early"),  # padding inside the record
        (record(b"\x00\x00\x00\x01\x01"), 1, "past the end"),  # header count missing
        (b"", 1, "0 records, its header says 1"),
    ],
)
def test_malformed_records(records: bytes, count: int, match: str) -> None:
    data = raw_batch(records, count)
    validate_batch(data)  # the header and CRC are fine: only a full decode finds the damage
    with pytest.raises(InvalidRecordError, match=match):
        decode_batch(data)
    with pytest.raises(InvalidRecordError):
        list(decode_records(data))


def test_varint_limits_accepted() -> None:
    # offset delta int32 max (5 bytes) and a 10-byte varlong timestamp delta (int64 min) decode fine.
    body = b"\x00" + b"\xff" * 9 + b"\x01" + b"\xfe\xff\xff\xff\x0f" + b"\x01\x01\x00"
    _, [rec] = decode_batch(raw_batch(record(body), 1, base_timestamp=0))
    assert rec.offset == (1 << 31) - 1
    assert rec.timestamp == -(1 << 63)
