"""Batches as the log cleaner rewrites them: some records kept, the delete horizon set, or none kept."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from protocol.records import (
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    BatchBuilder,
    Header,
    build_empty_batch,
    build_retained_batch,
    decode_batch,
    read_stored_records,
    validate_batch,
)

BASE_TS = 1_700_000_000_000
CODECS = [GZIP, SNAPPY, LZ4, ZSTD]


def idempotent_batch(compression: int = NONE) -> bytes:
    builder = BatchBuilder(base_offset=100, partition_leader_epoch=7, producer_id=42, producer_epoch=3,
                           base_sequence=10, compression=compression)
    for i in range(6):
        builder.append(None if i == 4 else f"v{i}".encode(), key=f"k{i % 3}".encode(), timestamp=BASE_TS + 10 * i,
                       headers=[Header("h", b"x")] if i == 2 else ())
    return builder.build()


def log_append_time(data: bytes, max_timestamp: int) -> bytes:
    """The batch with LOG_APPEND_TIME and maxTimestamp set (as a broker stamps it), its CRC made right."""
    out = bytearray(data)
    struct.pack_into(">h", out, 21, struct.unpack_from(">h", out, 21)[0] | 0x08)
    struct.pack_into(">q", out, 35, max_timestamp)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def test_a_batch_keeps_its_offsets_epoch_and_producer_with_only_the_retained_records():
    header, columns = read_stored_records(idempotent_batch())
    rebuilt = build_retained_batch(header, columns, [1, 2, 5], None)
    new, records = decode_batch(rebuilt)
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (101, b"k1", b"v1", BASE_TS + 10, ()), (102, b"k2", b"v2", BASE_TS + 20, (Header("h", b"x"),)),
        (105, b"k2", b"v5", BASE_TS + 50, ())]
    assert (new.base_offset, new.last_offset, new.partition_leader_epoch) == (100, 105, 7)
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (42, 3, 10)
    # The records are copied as they were: the base timestamp they count from stays.
    assert (new.record_count, new.base_timestamp, new.max_timestamp) == (3, BASE_TS, BASE_TS + 50)
    assert new.delete_horizon_ms is None and header.delete_horizon_ms is None
    assert validate_batch(rebuilt) == new  # the CRC covers the new bytes


def test_the_delete_horizon_is_the_base_timestamp_and_record_timestamps_do_not_change():
    header, columns = read_stored_records(idempotent_batch())
    horizon = BASE_TS + 86_400_000
    rebuilt = build_retained_batch(header, columns, [3, 4], horizon)
    new, records = decode_batch(rebuilt)
    assert new.delete_horizon_ms == new.base_timestamp == horizon
    assert [(r.offset, r.value, r.timestamp) for r in records] == [(103, b"v3", BASE_TS + 30),
                                                                  (104, None, BASE_TS + 40)]
    assert new.max_timestamp == BASE_TS + 40 and new.attributes & 0x40


def test_under_log_append_time_every_record_keeps_the_batchs_max_timestamp():
    stamped = BASE_TS + 999
    header, columns = read_stored_records(log_append_time(idempotent_batch(), stamped))
    assert header.timestamp_type == LOG_APPEND_TIME
    new, records = decode_batch(build_retained_batch(header, columns, [0, 5], None))
    assert new.max_timestamp == stamped and new.timestamp_type == LOG_APPEND_TIME
    assert [r.timestamp for r in records] == [stamped, stamped]


def test_an_empty_batch_keeps_the_offsets_and_producer_state_of_the_batch_it_replaces():
    header = validate_batch(idempotent_batch())
    empty = build_empty_batch(header)
    new, records = decode_batch(empty)
    assert records == [] and new.record_count == 0 and len(empty) == 61
    assert (new.base_offset, new.last_offset, new.partition_leader_epoch) == (100, 105, 7)
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (42, 3, 10)
    assert (new.base_timestamp, new.max_timestamp) == (NO_TIMESTAMP, header.max_timestamp)


def test_records_of_one_shape_are_read_in_one_pass_with_where_each_one_is():
    builder = BatchBuilder(base_offset=7)
    for i in range(20):
        builder.append(None if i % 5 == 0 else b"v" * 30, key=b"key-%02d" % i, timestamp=BASE_TS + i)
    uniform = BatchBuilder(base_offset=7)
    for i in range(20):
        uniform.append(b"v" * 30, key=b"key-%02d" % i, timestamp=BASE_TS + i)
    for data in (builder.build(), uniform.build()):
        header, records = read_stored_records(data)
        assert records.offsets == list(range(7, 27)) and records.keys == [b"key-%02d" % i for i in range(20)]
        assert records.timestamps == [BASE_TS + i for i in range(20)]
        assert len(records.starts) == 21 and records.starts[0] == 61 and records.starts[-1] == len(data)
        assert records.tombstones == [r.value is None for r in decode_batch(data)[1]]
        rebuilt = build_retained_batch(header, records, [1, 19], None)
        assert [(r.offset, r.key) for r in decode_batch(rebuilt)[1]] == [(8, b"key-01"), (26, b"key-19")]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("horizon", [None, BASE_TS + 86_400_000])
def test_a_compressed_batch_keeps_its_codec_with_its_retained_records_compressed_again(codec: int,
                                                                                     horizon: int | None):
    header, columns = read_stored_records(idempotent_batch(codec))
    assert header.compression == codec and columns.keys[0] == b"k0"  # read from its decompressed records
    rebuilt = build_retained_batch(header, columns, [2, 4], horizon)
    new, records = decode_batch(rebuilt)
    assert new.compression == codec and new.delete_horizon_ms == horizon
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (102, b"k2", b"v2", BASE_TS + 20, (Header("h", b"x"),)), (104, b"k1", None, BASE_TS + 40, ())]
    assert (new.base_offset, new.last_offset, new.partition_leader_epoch) == (100, 105, 7)
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (42, 3, 10)
    assert validate_batch(rebuilt) == new
