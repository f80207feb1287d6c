"""The segmented log: appends, reads, indexes, rolling, retention, truncation and flushing."""

from __future__ import annotations

import itertools
import os
import struct

import pytest

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCheckpointFile
from broker.log.config import LogConfig
from broker.log.log import (
    EmptyAppendError,
    Log,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
    flush_epoch_caches,
    parse_log_dir_name,
)
from broker.log.segment import LogSegment
from protocol.records import CorruptBatchError, iter_batches, read_header
from tests.unit.logutil import TP, ManualClock, batch, offsets_of, open_log, values_of


def fill(log: Log, count: int, epoch: int = 0, size: int = 100) -> None:
    for i in range(count):
        log.append_as_leader(batch(f"{i:0{size}d}".encode()), leader_epoch=epoch)


# -- appending -------------------------------------------------------------------------------


def test_leader_append_assigns_offsets_and_stamps_epoch(tmp_path):
    log = open_log(tmp_path)
    first = log.append_as_leader(batch(b"a", b"b", b"c"), leader_epoch=4)
    second = log.append_as_leader(batch(b"d") + batch(b"e", b"f"), leader_epoch=4)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset, second.batch_count) == (3, 5, 2)
    assert log.log_end_offset == 6
    data = log.read(0, 1 << 20)
    assert offsets_of(data) == [0, 1, 2, 3, 4, 5]
    assert values_of(data) == [b"a", b"b", b"c", b"d", b"e", b"f"]
    assert {header.partition_leader_epoch for _pos, header in iter_batches(data)} == {4}
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(4, 0)]


def test_leader_append_ignores_client_offsets_and_epoch(tmp_path):
    log = open_log(tmp_path)
    client = bytearray(batch(b"x"))
    struct.pack_into(">q", client, 0, 999)
    log.append_as_leader(bytes(client), leader_epoch=1)
    header = read_header(log.read(0, 1000))
    assert (header.base_offset, header.partition_leader_epoch) == (0, 1)


def test_leader_append_stamps_a_writable_view_in_place_and_copies_anything_else(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(b"first"), leader_epoch=3)
    frame = bytearray(b"head" + batch(b"x"))
    log.append_as_leader(memoryview(frame)[4:], leader_epoch=3)
    assert read_header(frame, 4)[:3] == (1, len(frame) - 16, 3)  # base offset 1, epoch 3, stamped in the frame
    client = batch(b"y")
    log.append_as_leader(memoryview(client), leader_epoch=3)  # read-only: copied
    assert read_header(client).base_offset == 0
    assert offsets_of(log.read(0, 1 << 20)) == [0, 1, 2]


def test_follower_append_keeps_leader_offsets_and_epochs(tmp_path):
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(batch(b"a", b"b"), leader_epoch=0)
    leader.append_as_leader(batch(b"c"), leader_epoch=2)
    follower = open_log(tmp_path / "follower")
    info = follower.append_as_follower(leader.read(0, 1 << 20))
    assert (info.first_offset, info.last_offset) == (0, 2)
    assert follower.read(0, 1 << 20) == leader.read(0, 1 << 20)
    assert [(e.epoch, e.start_offset) for e in follower.epoch_cache.entries] == [(0, 0), (2, 2)]


def test_follower_append_refuses_offsets_that_do_not_continue_the_log(tmp_path):
    leader = open_log(tmp_path / "leader")
    fill(leader, 3)
    follower = open_log(tmp_path / "follower")
    follower.append_as_follower(leader.read(0, 1 << 20))
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(leader.read(1, 1 << 20))
    two_batches = leader.read(0, 1 << 20)
    reordered = two_batches[-(len(two_batches) // 3):] + two_batches[: len(two_batches) // 3]
    other = open_log(tmp_path / "other")
    with pytest.raises(UnexpectedAppendOffsetError):
        other.append_as_follower(reordered)
    assert other.log_end_offset == 0 and follower.log_end_offset == 3


def test_bad_appends_leave_the_log_untouched(tmp_path):
    log = open_log(tmp_path, max_message_bytes=500)
    fill(log, 2)
    corrupt = bytearray(batch(b"ok"))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError):
        log.append_as_leader(batch(b"fine") + bytes(corrupt), leader_epoch=0)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(batch(b"x" * 600), leader_epoch=0)
    with pytest.raises(EmptyAppendError):
        log.append_as_leader(b"", leader_epoch=0)
    assert log.log_end_offset == 2
    assert offsets_of(log.read(0, 1 << 20)) == [0, 1]


# -- reading ---------------------------------------------------------------------------------


def test_read_starts_at_the_batch_holding_the_offset(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(b"a", b"b", b"c"), leader_epoch=0)
    log.append_as_leader(batch(b"d", b"e"), leader_epoch=0)
    assert offsets_of(log.read(1, 1 << 20)) == [0, 1, 2, 3, 4]
    assert offsets_of(log.read(3, 1 << 20)) == [3, 4]
    assert offsets_of(log.read(4, 1 << 20)) == [3, 4]
    assert log.read(5, 1 << 20) == b""


def test_read_is_bounded_by_max_bytes_but_returns_at_least_one_batch(tmp_path):
    log = open_log(tmp_path)
    fill(log, 10, size=200)
    one = len(log.read(0, 1))
    assert offsets_of(log.read(0, 1)) == [0]
    assert offsets_of(log.read(0, one * 3 + one // 2)) == [0, 1, 2]
    assert log.read(0, 1, min_one_batch=False) == b""
    assert len(log.read(0, one * 4)) == one * 4


def test_read_stops_before_the_max_offset(tmp_path):
    log = open_log(tmp_path)
    fill(log, 5)
    assert offsets_of(log.read(0, 1 << 20, max_offset=3)) == [0, 1, 2]
    assert log.read(3, 1 << 20, max_offset=3) == b""
    log.append_as_leader(batch(b"x", b"y"), leader_epoch=0)
    assert offsets_of(log.read(0, 1 << 20, max_offset=6)) == [0, 1, 2, 3, 4]


def test_read_outside_the_log_is_out_of_range(tmp_path):
    log = open_log(tmp_path)
    fill(log, 3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_read_crosses_segments(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    fill(log, 30)
    assert len(log.segments) > 3
    assert offsets_of(log.read(0, 1 << 20)) != []
    got: list[int] = []
    offset = 0
    while offset < log.log_end_offset:
        chunk = offsets_of(log.read(offset, 1 << 20))
        got += chunk
        offset = chunk[-1] + 1
    assert got == list(range(30))


def test_offset_index_is_sparse_and_used_for_lookups(tmp_path):
    log = open_log(tmp_path)
    fill(log, 300, size=200)
    log.flush()  # index entries reach the file when the segment is flushed
    segment = log.active_segment
    entries = segment.offset_index.entries()
    assert 0 < len(entries) <= segment.size // 4096 + 1
    # Kafka's layout: 4-byte relative offset, 4-byte position, big-endian.
    raw = segment.offset_index.path.read_bytes()
    assert struct.unpack_from(">ii", raw, 0) == (entries[0][0] - segment.base_offset, entries[0][1])
    # Garbage at the start of the file is never read when the index points past it.
    target_offset, target_position = entries[-1]
    with open(segment.log_path, "r+b") as f:
        f.write(b"\xff" * 4096)
    assert offsets_of(log.read(target_offset, 1))[0] == target_offset
    assert target_position > 4096


def test_offset_for_timestamp_uses_the_time_index(tmp_path):
    log = open_log(tmp_path, segment_bytes=2000)
    for i in range(50):
        log.append_as_leader(batch(b"v" * 100, timestamp=1000 + i * 10), leader_epoch=0)
    assert len(log.segments) > 2
    assert log.offset_for_timestamp(0) == (1000, 0)
    assert log.offset_for_timestamp(1000 + 25 * 10) == (1250, 25)
    assert log.offset_for_timestamp(1000 + 25 * 10 - 3) == (1250, 25)
    assert log.offset_for_timestamp(1000 + 49 * 10) == (1490, 49)
    assert log.offset_for_timestamp(2000) is None
    entries = log.segments[0].time_index.entries()
    assert entries and all(a[0] < b[0] for a, b in itertools.pairwise(entries))


def test_the_largest_timestamp_is_found_at_its_first_record_across_segments_and_after_reopening(tmp_path):
    log = open_log(tmp_path, segment_bytes=2000)
    assert log.max_timestamp_and_offset() is None
    stamps = [1000 + (i * 37) % 50 for i in range(50)]  # out of order; the largest, 1049, first at offset 27
    for stamp in stamps:
        log.append_as_leader(batch(b"v" * 100, timestamp=stamp), leader_epoch=0)
    log.append_as_leader(batch(b"a", b"b", b"c", timestamp=1047), leader_epoch=0)  # 1049 again, at offset 52
    assert len(log.segments) > 2
    assert log.max_timestamp_and_offset() == (1049, stamps.index(1049)) == (1049, 27)
    log.close()
    assert open_log(tmp_path, segment_bytes=2000).max_timestamp_and_offset() == (1049, 27)


# -- rolling ---------------------------------------------------------------------------------


def test_segments_roll_by_size_and_are_named_by_base_offset(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    fill(log, 20)
    assert len(log.segments) >= 3
    log.flush()  # the active segment's index files are created by its first flush
    for segment in log.segments:
        assert segment.size <= 1000
        name = f"{segment.base_offset:020d}"
        assert segment.log_path.name == name + ".log"
        for suffix in (".log", ".index", ".timeindex"):
            assert (log.dir / (name + suffix)).exists()
    bases = [s.base_offset for s in log.segments]
    assert bases[0] == 0 and bases == sorted(bases)
    assert [s.next_offset for s in log.segments[:-1]] == bases[1:]


def test_segments_roll_by_time(tmp_path):
    clock = ManualClock()
    log = open_log(tmp_path, clock, segment_ms=60_000)
    log.append_as_leader(batch(b"a", timestamp=clock.now_ms), leader_epoch=0)
    clock.advance(30_000)
    log.append_as_leader(batch(b"b", timestamp=clock.now_ms), leader_epoch=0)
    assert len(log.segments) == 1
    clock.advance(31_000)
    info = log.append_as_leader(batch(b"c", timestamp=clock.now_ms), leader_epoch=0)
    assert info.rolled and info.flush_needed
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_a_log_loaded_with_the_brokers_defaults_rolls_by_its_topics_config_once_given(tmp_path):
    log = open_log(tmp_path)  # as a broker loads its logs: the broker's defaults, 1 GB segments
    fill(log, 10)
    log.config = LogConfig(segment_bytes=1000)  # then a LeaderAndIsr brings the topic's config
    fill(log, 20)
    assert len(log.segments) >= 3 and all(s.size <= 1000 for s in log.segments[1:])


def test_follower_segments_match_the_leader_byte_for_byte(tmp_path):
    leader = open_log(tmp_path / "leader", segment_bytes=1500)
    for i in range(40):
        leader.append_as_leader(batch(*[bytes([i]) * (i % 7 + 10)] * (i % 3 + 1)), leader_epoch=i // 10)
    follower = open_log(tmp_path / "follower", segment_bytes=1500)
    offset = 0
    while offset < leader.log_end_offset:
        chunk = leader.read(offset, 5000)
        follower.append_as_follower(chunk)
        offset = follower.log_end_offset
    assert [s.base_offset for s in follower.segments] == [s.base_offset for s in leader.segments]
    for mine, theirs in zip(follower.segments, leader.segments, strict=True):
        assert mine.log_path.read_bytes() == theirs.log_path.read_bytes()
    assert follower.epoch_cache.entries == leader.epoch_cache.entries


# -- retention and record deletion ------------------------------------------------------------


def test_retention_by_bytes_deletes_whole_old_segments(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000, retention_bytes=2500)
    fill(log, 40)
    log.update_high_watermark(log.log_end_offset)
    before = len(log.segments)
    deleted = log.delete_retained_segments()
    assert deleted > 0 and len(log.segments) == before - deleted
    assert log.size_in_bytes <= 2500 + 1000
    assert log.log_start_offset == log.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert offsets_of(log.read(log.log_start_offset, 100))[0] == log.log_start_offset


def test_retention_by_time_keeps_segments_above_the_high_watermark(tmp_path):
    clock = ManualClock()
    log = open_log(tmp_path, clock, segment_bytes=1000, retention_ms=60_000)
    for _ in range(20):
        log.append_as_leader(batch(b"v" * 100, timestamp=clock.now_ms), leader_epoch=0)
    clock.advance(120_000)
    assert log.delete_retained_segments() == 0  # HW is still 0: nothing is committed
    log.update_high_watermark(log.log_end_offset)
    deleted = log.delete_retained_segments()
    assert deleted > 0 and len(log.segments) == 1  # all but the active segment
    assert log.log_start_offset == log.active_segment.base_offset


def test_delete_records_advances_log_start_offset(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    fill(log, 30, epoch=0)
    log.append_as_leader(batch(b"x"), leader_epoch=1)
    log.update_high_watermark(20)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(21)
    log.delete_records(15)
    assert log.log_start_offset == 15
    assert log.segments[0].base_offset <= 15 < log.segments[0].next_offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(14, 100)
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(0, 15), (1, 30)]


# -- truncation ------------------------------------------------------------------------------


def test_truncate_to_removes_later_segments_and_cuts_the_containing_one(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    for i in range(30):
        log.append_as_leader(batch(b"%03d" % i + b"v" * 100), leader_epoch=i // 10)
    log.update_high_watermark(30)
    segments_before = [s.base_offset for s in log.segments]
    assert log.truncate_to(17)
    assert log.log_end_offset == 17
    assert log.high_watermark == 17
    assert [s.base_offset for s in log.segments] == [b for b in segments_before if b <= 17]
    remaining: list[int] = []
    offset = 0
    while offset < 17:
        chunk = offsets_of(log.read(offset, 1 << 20))
        remaining += chunk
        offset = chunk[-1] + 1
    assert remaining == list(range(17))
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(0, 0), (1, 10)]
    assert all(pos < log.active_segment.size for _off, pos in log.active_segment.offset_index.entries())
    info = log.append_as_leader(batch(b"new"), leader_epoch=3)
    assert info.first_offset == 17
    assert values_of(log.read(17, 1000)) == [b"new"]
    assert not log.truncate_to(100)


def test_truncate_mid_batch_removes_the_whole_batch(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(b"a", b"b"), leader_epoch=0)
    log.append_as_leader(batch(b"c", b"d", b"e"), leader_epoch=0)
    log.truncate_to(3)
    assert log.log_end_offset == 2


def test_truncate_fully_and_start_at(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    fill(log, 20)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert [s.base_offset for s in log.segments] == [500]
    assert sorted(p.name for p in log.dir.glob("*.log")) == [f"{500:020d}.log"]
    assert log.epoch_cache.entries == []
    leader = open_log(tmp_path / "leader")
    leader.truncate_fully_and_start_at(500)
    leader.append_as_leader(batch(b"z"), leader_epoch=7)
    log.append_as_follower(leader.read(500, 1000))
    assert offsets_of(log.read(500, 1000)) == [500]


def test_truncate_below_the_first_segment_restarts_the_log(tmp_path):
    log = open_log(tmp_path)
    log.truncate_fully_and_start_at(100)
    fill(log, 5)
    assert log.truncate_to(50)
    assert (log.log_start_offset, log.log_end_offset) == (50, 50)


# -- flushing --------------------------------------------------------------------------------


def test_flush_policy_by_messages_and_time(tmp_path):
    clock = ManualClock()
    log = open_log(tmp_path, clock, flush_messages=3, flush_ms=5000)
    assert not log.append_as_leader(batch(b"a"), leader_epoch=0).flush_needed
    assert not log.append_as_leader(batch(b"b"), leader_epoch=0).flush_needed
    assert log.append_as_leader(batch(b"c"), leader_epoch=0).flush_needed
    assert log.flush_due(clock())
    log.flush()
    assert log.recovery_point == 3 and not log.flush_due(clock())
    log.append_as_leader(batch(b"d"), leader_epoch=0)
    assert not log.flush_due(clock())
    clock.advance(5000)
    assert log.flush_due(clock())


def test_default_policy_never_asks_for_a_flush_until_a_roll(tmp_path):
    log = open_log(tmp_path, segment_bytes=500)
    infos = [log.append_as_leader(batch(b"v" * 100), leader_epoch=0) for _ in range(10)]
    assert [i.flush_needed for i in infos] == [i.rolled for i in infos]
    assert any(i.rolled for i in infos) and not all(i.rolled for i in infos)


def test_flush_during_truncation_keeps_recovery_point_at_the_truncation(tmp_path):
    log = open_log(tmp_path)
    fill(log, 10)
    real_flush = LogSegment.flush

    def truncating_flush(segment: LogSegment) -> None:
        real_flush(segment)
        if log.log_end_offset == 10:
            log.truncate_to(4)

    LogSegment.flush = truncating_flush  # type: ignore[method-assign]
    try:
        log.flush()
    finally:
        LogSegment.flush = real_flush  # type: ignore[method-assign]
    assert log.recovery_point <= log.log_end_offset == 4


def test_partition_dir_names():
    assert parse_log_dir_name("my-topic-12") == ("my-topic", 12)
    assert str(TP) == "events-0"
    for bad in ("topic", "topic-", "-1", "topic-x"):
        with pytest.raises(ValueError):
            parse_log_dir_name(bad)


def _open_files_under(directory) -> list[str]:
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the descriptor listdir itself used
            continue
    return [t for t in targets if t.startswith(str(directory))]


def test_only_segment_files_are_held_open_and_none_after_close(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    fill(log, 20)
    held = _open_files_under(tmp_path)
    assert held and all(name.endswith(".log") for name in held)
    log.close()
    assert _open_files_under(tmp_path) == []


def test_epoch_start_offsets_and_end_offsets_for_epochs(tmp_path):
    log = open_log(tmp_path)
    log.assign_epoch_start_offset(0)
    fill(log, 3, epoch=0)
    log.assign_epoch_start_offset(2)
    fill(log, 2, epoch=2)
    log.assign_epoch_start_offset(5)
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(0, 0), (2, 3), (5, 5)]
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)
    assert log.end_offset_for_epoch(2) == (2, 5)
    assert log.end_offset_for_epoch(5) == (5, 5)
    assert log.end_offset_for_epoch(6) == (-1, -1)


def test_epochs_assigned_unflushed_are_written_together(tmp_path):
    logs = [open_log(tmp_path / f"p{i}") for i in range(3)]
    fill(logs[0], 2, epoch=0)
    assert all(each.assign_epoch_start_offset(4, flush=False) for each in logs)
    assert not logs[0].assign_epoch_start_offset(4, flush=False)
    assert not any((each.dir / LEADER_EPOCH_CHECKPOINT).exists() for each in logs[1:])
    assert flush_epoch_caches(logs) == []
    assert [LeaderEpochCheckpointFile(each.dir / LEADER_EPOCH_CHECKPOINT).read() for each in logs] == [
        [EpochEntry(0, 0), EpochEntry(4, 2)], [EpochEntry(4, 0)], [EpochEntry(4, 0)]]


def test_a_truncation_can_leave_its_epoch_checkpoint_to_the_caller(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2, epoch=0)
    fill(log, 2, epoch=1)
    checkpoint = LeaderEpochCheckpointFile(log.dir / LEADER_EPOCH_CHECKPOINT)
    assert log.truncate_to(2, flush_epochs=False)
    assert log.epoch_cache.unflushed
    assert checkpoint.read() == [EpochEntry(0, 0), EpochEntry(1, 2)]  # an entry past the end: dropped at load
    assert flush_epoch_caches([log]) == []
    assert (log.epoch_cache.unflushed, checkpoint.read()) == (False, [EpochEntry(0, 0)])


def test_timestamp_lookup_starts_from_the_time_index(tmp_path):
    log = open_log(tmp_path)
    for i in range(200):
        log.append_as_leader(batch(b"v" * 200, timestamp=10_000 + i), leader_epoch=0)
    log.flush()
    segment = log.active_segment
    indexed_timestamp, indexed_offset = segment.time_index.entries()[-3]
    with open(segment.log_path, "r+b") as f:
        f.write(b"\xff" * 4096)  # never read: the time and offset indexes point past it
    assert log.offset_for_timestamp(indexed_timestamp + 1) == (indexed_timestamp + 1, indexed_offset + 1)


def test_truncating_at_the_leo_drops_an_epoch_that_holds_no_batch(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2, epoch=0)
    log.assign_epoch_start_offset(1)  # became leader in epoch 1, then deposed before writing anything
    assert not log.truncate_to(2)
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(0, 0)]
    leader = open_log(tmp_path / "leader")
    fill(leader, 3, epoch=0)
    log.append_as_follower(leader.read(2, 1000))
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries] == [(0, 0)]
