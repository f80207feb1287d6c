"""The leader's check of compressed batches (broker.log.validator, through Log.append_as_leader): what is stored
under each compression.type, what is refused with which error code, and that random or mutated compressed payloads
never crash an append nor reach the log."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.log.config import LogConfig, LogConfigError
from broker.log.log import Log
from broker.replication.error_codes import error_code_of
from protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from protocol.errors import ErrorCode
from protocol.records import (
    HEADER_SIZE,
    BatchBuilder,
    InvalidRecordError,
    RecordBatchError,
    UnsupportedCompressionError,
    decode_batch,
    decode_records,
    iter_batches,
    read_header,
)
from tests.unit.logutil import TP, ManualClock

CODECS = [GZIP, SNAPPY, LZ4, ZSTD]
TS = 1_700_000_000_000


def open_log(directory, compression_type: str = "producer") -> Log:
    config = LogConfig().with_topic_overrides({"compression.type": compression_type})
    return Log(directory / f"{TP.topic}-{TP.partition}", TP, config, clock=ManualClock())


def compressed_batch(codec: int, count: int = 20, *, producer_id: int = -1) -> bytes:
    builder = BatchBuilder(compression=codec, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                           base_sequence=0 if producer_id >= 0 else -1)
    for i in range(count):
        builder.append(b"value %d " % i * 5, key=b"key %d" % i, headers=[("h", b"%d" % i)], timestamp=TS + i)
    return builder.build()


def handmade(codec: int, records: bytes, *, count: int, last_offset_delta: int | None = None,
             max_timestamp: int = TS) -> bytes:
    """A batch of ``codec`` whose payload is ``records`` compressed, its header as given, its CRC right."""
    payload = compress(codec, records) if codec else records
    out = bytearray(HEADER_SIZE) + payload
    struct.pack_into(">qiibIhiqqqhii", out, 0, 0, len(out) - 12, -1, 2, 0, codec,
                     count - 1 if last_offset_delta is None else last_offset_delta, TS, max_timestamp, -1, -1, -1,
                     count)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def records_region(batch: bytes) -> bytes:
    """The uncompressed records of an uncompressed batch."""
    return batch[HEADER_SIZE:]


def stored(log: Log) -> bytes:
    return log.read(0, 1 << 30)


def record_tuples(data: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_records(data)]


@pytest.mark.parametrize("codec", CODECS)
def test_with_compression_type_producer_a_batch_is_stored_as_it_came(tmp_path, codec):
    log = open_log(tmp_path)
    log.append_as_leader(compressed_batch(NONE, 3), leader_epoch=1)
    batch = compressed_batch(codec)
    info = log.append_as_leader(batch, leader_epoch=2)
    assert (info.first_offset, info.last_offset) == (3, 22)
    data = stored(log)
    position, header = list(iter_batches(data))[1]
    assert (header.base_offset, header.partition_leader_epoch, header.compression) == (3, 2, codec)
    assert data[position + 16:] == batch[16:]  # from the magic on, as it came
    assert record_tuples(data)[3:] == [(3 + offset, *rest) for offset, *rest in record_tuples(batch)]


@pytest.mark.parametrize(("topic", "source"), [("gzip", NONE), ("zstd", GZIP), ("uncompressed", LZ4),
                                               ("snappy", ZSTD), ("lz4", SNAPPY)])
def test_a_topic_codec_recompresses(tmp_path, topic, source):
    log = open_log(tmp_path, topic)
    batch = compressed_batch(source, producer_id=7)
    info = log.append_as_leader(batch, leader_epoch=0)
    assert (info.first_offset, info.last_offset, info.batch_count) == (0, 19, 1)
    data = stored(log)
    header = read_header(data)
    assert header.compression == {"gzip": GZIP, "zstd": ZSTD, "uncompressed": NONE, "snappy": SNAPPY,
                                  "lz4": LZ4}[topic]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 0, 0)
    assert (header.base_timestamp, header.max_timestamp) == (TS, TS + 19)
    assert record_tuples(data) == record_tuples(batch)
    again = log.append_as_leader(batch, leader_epoch=0)  # the producer's retry: a duplicate, not written twice
    assert (again.first_offset, again.batch_count, log.log_end_offset) == (0, 0, 20)


def test_uncompressed_batches_of_an_uncompressed_topic_take_the_old_path(tmp_path):
    for compression_type in ("producer", "uncompressed"):
        log = open_log(tmp_path / compression_type, compression_type)
        batch = compressed_batch(NONE)
        log.append_as_leader(batch, leader_epoch=0)
        assert stored(log)[16:] == batch[16:]


def test_the_max_timestamp_is_set_from_the_records_as_kafka_does(tmp_path):
    log = open_log(tmp_path)
    records = records_region(compressed_batch(NONE, 3))
    log.append_as_leader(handmade(GZIP, records, count=3, max_timestamp=5), leader_epoch=0)
    data = stored(log)
    assert read_header(data).max_timestamp == TS + 2
    decode_batch(data)  # its CRC was recomputed


@pytest.mark.parametrize("codec", CODECS)
def test_header_disagreements_are_corrupt_messages_and_nothing_is_appended(tmp_path, codec):
    log = open_log(tmp_path)
    log.append_as_leader(compressed_batch(codec, 2), leader_epoch=0)
    records = records_region(compressed_batch(NONE, 3))
    bad = [
        handmade(codec, records, count=4),  # fewer records than the header says
        handmade(codec, records, count=2),  # more
        handmade(codec, records, count=3, last_offset_delta=5),  # lastOffsetDelta not count - 1
        handmade(codec, records + b"\x00", count=3),  # trailing bytes
        handmade(codec, records[:-1], count=3),  # a record cut short
        handmade(codec, records.replace(b"\x00\x02\x02", b"\x00\x02\x04", 1), count=3),  # offset delta 2 as 1's
        handmade(NONE, records, count=3)[:21] + b"\x00" + bytes([codec]) + handmade(NONE, records, count=3)[23:],
    ]
    bad[-1] = bytearray(bad[-1])
    struct.pack_into(">I", bad[-1], 17, crc32c(bytes(bad[-1][21:])))  # an uncompressed payload, marked compressed
    for batch in bad:
        with pytest.raises(InvalidRecordError) as raised:
            log.append_as_leader(bytes(batch), leader_epoch=0)
        assert error_code_of(raised.value) is ErrorCode.CORRUPT_MESSAGE
    # one good batch and one bad in the same append: neither is written
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(compressed_batch(codec, 2) + bytes(bad[0]), leader_epoch=0)
    assert log.log_end_offset == 2
    assert [r.offset for r in decode_records(stored(log))] == [0, 1]


def test_an_unknown_codec_is_unsupported_compression_type(tmp_path):
    log = open_log(tmp_path)
    batch = handmade(NONE, records_region(compressed_batch(NONE, 3)), count=3)
    batch = bytearray(batch)
    struct.pack_into(">h", batch, 21, 6)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    with pytest.raises(UnsupportedCompressionError) as raised:
        log.append_as_leader(bytes(batch), leader_epoch=0)
    assert error_code_of(raised.value) is ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert log.log_end_offset == 0


def test_followers_append_compressed_batches_as_bytes(tmp_path):
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(compressed_batch(ZSTD), leader_epoch=3)
    follower = open_log(tmp_path / "follower", "gzip")  # a follower never recompresses
    follower.append_as_follower(stored(leader))
    assert stored(follower) == stored(leader)


def test_compressed_batches_survive_recovery_and_timestamp_lookups(tmp_path):
    log = open_log(tmp_path)
    for codec in CODECS:
        log.append_as_leader(compressed_batch(codec), leader_epoch=0)
    before = stored(log)
    log.close()
    recovered = Log(log.dir, TP, log.config, needs_recovery=True, clock=ManualClock())
    assert recovered.bytes_truncated_by_recovery == 0
    assert stored(recovered) == before
    assert recovered.offset_for_timestamp(TS + 5) == (TS + 5, 5)  # inside the first (gzip) batch


def test_compression_type_is_a_topic_and_a_broker_config():
    assert LogConfig().compression_type == "producer"
    assert LogConfig.from_broker_properties({"compression.type": "ZSTD"}).compression_type == "zstd"
    with pytest.raises(LogConfigError, match=r"compression\.type must be one of producer, uncompressed, gzip"):
        LogConfig().with_topic_overrides({"compression.type": "brotli"})


# -- payloads from anywhere ------------------------------------------------------------------

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _append_or_refuse(log: Log, batch: bytes) -> None:
    """Append ``batch``: a RecordBatchError leaves the log as it was, and nothing else may be raised."""
    before = (log.log_end_offset, stored(log))
    try:
        log.append_as_leader(batch, leader_epoch=0)
    except RecordBatchError:
        assert (log.log_end_offset, stored(log)) == before
        return
    decode_batch(stored(log)[len(before[1]):])  # what was appended decodes


@FUZZ
@given(codec=st.sampled_from(CODECS), payload=st.binary(max_size=400), count=st.integers(-2, 30),
       compression_type=st.sampled_from(["producer", "uncompressed", "gzip", "zstd"]))
def test_random_compressed_payloads_never_crash_an_append_nor_reach_the_log(tmp_path_factory, codec, payload, count,
                                                                            compression_type):
    log = open_log(tmp_path_factory.mktemp("log"), compression_type)
    batch = bytearray(handmade(NONE, payload, count=max(count, 1)))
    struct.pack_into(">hi", batch, 21, codec, count - 1)
    struct.pack_into(">i", batch, 57, count)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    _append_or_refuse(log, bytes(batch))


@FUZZ
@given(codec=st.sampled_from(CODECS), count=st.integers(1, 20),
       flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(1, 255)), min_size=1, max_size=3),
       compression_type=st.sampled_from(["producer", "uncompressed", "snappy"]))
def test_mutated_compressed_payloads_never_crash_an_append_nor_reach_the_log(tmp_path_factory, codec, count, flips,
                                                                             compression_type):
    log = open_log(tmp_path_factory.mktemp("log"), compression_type)
    batch = bytearray(compressed_batch(codec, count))
    for position, mask in flips:
        batch[HEADER_SIZE + position % (len(batch) - HEADER_SIZE)] ^= mask
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))  # the payload changed, its CRC is right
    _append_or_refuse(log, bytes(batch))
