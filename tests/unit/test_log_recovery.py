"""Crash recovery: torn and corrupt segment tails, damaged indexes, the recovery point and the
clean-shutdown marker. Every valid batch before the damage survives; nothing after it is served."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT
from broker.log.config import LogConfig
from broker.log.log import Log
from protocol.records import iter_batches
from tests.unit.logutil import TP, ManualClock, batch, offsets_of


def write_log(directory: Path, batches: int = 12, segment_bytes: int = 1 << 30, **config: int) -> Log:
    """A log of ``batches`` batches of varying sizes and epochs, flushed and closed."""
    log = Log(directory, TP, LogConfig(segment_bytes=segment_bytes, **config), clock=ManualClock())
    rng = random.Random(7)
    for i in range(batches):
        values = [bytes([65 + i % 26]) * rng.randrange(1, 300) for _ in range(rng.randrange(1, 4))]
        log.append_as_leader(batch(*values, timestamp=1000 + i), leader_epoch=i // 4)
    log.flush()
    log.close()
    return log


def reopen(directory: Path, *, recover: bool, recovery_point: int = 0, **config: int) -> Log:
    return Log(directory, TP, LogConfig(**config), recovery_point=recovery_point, needs_recovery=recover,
               clock=ManualClock())


def boundaries(data: bytes) -> list[tuple[int, int, int]]:
    """(start position, end position, next offset) of every batch in a segment's bytes."""
    return [(pos, pos + h.size_in_bytes, h.next_offset) for pos, h in iter_batches(data)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, bytes, bytes]:
    directory = tmp_path_factory.mktemp("pristine") / "events-0"
    log = write_log(directory)
    segment = log.segments[0]
    return directory, segment.log_path.read_bytes(), segment.offset_index.path.read_bytes()


def fresh_copy(pristine: tuple[Path, bytes, bytes], tmp_path: Path) -> tuple[Path, Path]:
    source, _data, _index = pristine
    target = tmp_path / "events-0"
    shutil.copytree(source, target)
    return target, target / f"{0:020d}.log"


def read_all(log: Log) -> bytes:
    return log.read(0, 1 << 30) if log.log_end_offset > log.log_start_offset else b""


def test_torn_tail_is_cut_at_every_position(pristine, tmp_path):
    _source, original, _index = pristine
    spans = boundaries(original)
    for cut in range(0, len(original), 7):
        directory, log_file = fresh_copy(pristine, tmp_path / str(cut))
        log_file.write_bytes(original[:cut])
        log = reopen(directory, recover=True)
        whole = [s for s in spans if s[1] <= cut]
        valid_end = whole[-1][1] if whole else 0
        assert log.log_end_offset == (whole[-1][2] if whole else 0), cut
        assert log.bytes_truncated_by_recovery == cut - valid_end
        assert log_file.stat().st_size == valid_end
        assert read_all(log) == original[:valid_end]
        log.close()


def test_corrupt_bytes_are_cut_with_everything_after_them(pristine, tmp_path):
    _source, original, _index = pristine
    spans = boundaries(original)
    for position in range(0, len(original), 11):
        start, _end, _next = next(s for s in spans if s[0] <= position < s[1])
        if position - start < 21 and position - start not in range(8, 12):
            continue  # baseOffset and partitionLeaderEpoch sit outside the CRC
        directory, log_file = fresh_copy(pristine, tmp_path / str(position))
        damaged = bytearray(original)
        damaged[position] ^= 0x5A
        log_file.write_bytes(bytes(damaged))
        log = reopen(directory, recover=True)
        assert read_all(log) == original[:start], position
        assert log.log_end_offset == max([s[2] for s in spans if s[1] <= start], default=0)
        log.close()


def test_garbage_after_the_last_batch_is_cut(pristine, tmp_path):
    _source, original, _index = pristine
    directory, log_file = fresh_copy(pristine, tmp_path)
    log_file.write_bytes(original + b"\x00" * 100 + bytes(range(256)))
    log = reopen(directory, recover=True)
    assert read_all(log) == original
    assert log.bytes_truncated_by_recovery == 356


def test_the_clean_shutdown_path_skips_recovery(pristine, tmp_path):
    _source, original, _index = pristine
    spans = boundaries(original)
    directory, log_file = fresh_copy(pristine, tmp_path)
    damaged = bytearray(original)
    damaged[spans[3][0] + 40] ^= 0xFF  # inside the CRC of the fourth batch
    log_file.write_bytes(bytes(damaged))
    trusting = reopen(directory, recover=False)
    assert trusting.log_end_offset == spans[-1][2]  # not scanned, so not noticed
    trusting.close()
    recovering = reopen(directory, recover=True)
    assert recovering.log_end_offset == spans[2][2]


@pytest.mark.parametrize("damage", ["cut", "garbage", "beyond"])
def test_damaged_offset_index_is_rebuilt(tmp_path, damage):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=60, index_interval_bytes=256)
    expected = written.segments[0].offset_index.entries()
    assert len(expected) > 5
    index_file = directory / f"{0:020d}.index"
    raw = index_file.read_bytes()
    if damage == "cut":
        index_file.write_bytes(raw[: len(raw) - 3])
    elif damage == "garbage":
        index_file.write_bytes(raw[:8] + b"\xff" * 8 + raw[16:])
    else:
        index_file.write_bytes(raw + (len(expected) + 1_000_000).to_bytes(4, "big") + (10**8).to_bytes(4, "big"))
    log = reopen(directory, recover=False, index_interval_bytes=256)
    assert log.segments[0].offset_index.entries() == expected
    assert offsets_of(log.read(expected[-1][0], 1))[-1] == expected[-1][0]


def test_missing_indexes_are_rebuilt(tmp_path):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=60, index_interval_bytes=256)
    expected = (written.segments[0].offset_index.entries(), written.segments[0].time_index.entries())
    (directory / f"{0:020d}.index").unlink()
    (directory / f"{0:020d}.timeindex").unlink()
    reopen(directory, recover=False, index_interval_bytes=256).close()
    log = reopen(directory, recover=False, index_interval_bytes=256)
    assert (log.segments[0].offset_index.entries(), log.segments[0].time_index.entries()) == expected


def test_index_files_are_created_by_the_first_write_that_needs_them(tmp_path):
    directory = tmp_path / "events-0"
    index_files = [directory / f"{0:020d}.index", directory / f"{0:020d}.timeindex"]
    empty = reopen(directory, recover=False)
    empty.flush()
    empty.close()
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith("0")) == [f"{0:020d}.log"]
    assert reopen(directory, recover=False).segments[0].indexes_trusted  # an empty log needs none
    log = reopen(directory, recover=False, index_interval_bytes=256)
    log.append_as_leader(batch(b"a" * 300), leader_epoch=0)
    log.append_as_leader(batch(b"b"), leader_epoch=0)
    assert not any(p.exists() for p in index_files)
    log.flush()
    assert all(p.exists() for p in index_files)
    entries = log.segments[0].offset_index.entries()
    assert len(entries) == 1
    log.close()
    reopened = reopen(directory, recover=False, index_interval_bytes=256)
    assert reopened.segments[0].indexes_trusted and reopened.log_end_offset == 2
    assert reopened.segments[0].offset_index.entries() == entries


def test_only_segments_past_the_recovery_point_are_scanned(tmp_path):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=40, segment_bytes=1500)
    segments = [(s.base_offset, s.next_offset, s.log_path) for s in written.segments]
    assert len(segments) >= 4
    first_path, last_path = segments[0][2], segments[-1][2]
    first = bytearray(first_path.read_bytes())
    first[100] ^= 0xFF  # damage before the recovery point: not scanned
    first_path.write_bytes(bytes(first))
    last = last_path.read_bytes()
    last_path.write_bytes(last[:-5])  # torn tail after it: cut
    log = reopen(directory, recover=True, recovery_point=segments[2][0], segment_bytes=1500)
    assert len(log.segments) == len(segments)
    assert log.log_end_offset < segments[-1][1]
    assert log.bytes_truncated_by_recovery > 0
    assert log.segments[0].log_path.read_bytes() == bytes(first)


def test_damage_in_a_middle_segment_drops_the_later_segments(tmp_path):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=40, segment_bytes=1500)
    segments = [(s.base_offset, s.next_offset, s.log_path) for s in written.segments]
    middle = segments[1][2]
    middle.write_bytes(middle.read_bytes()[:-1])
    log = reopen(directory, recover=True, segment_bytes=1500)
    assert [s.base_offset for s in log.segments] == [segments[0][0], segments[1][0]]
    assert not segments[2][2].exists()
    assert log.log_end_offset < segments[1][1]


def test_epoch_cache_is_rebuilt_from_batches_when_its_checkpoint_is_missing(tmp_path):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=12)
    expected = written.epoch_cache.entries
    assert [e.epoch for e in expected] == [0, 1, 2]
    (directory / LEADER_EPOCH_CHECKPOINT).unlink()
    log = reopen(directory, recover=False)
    assert log.epoch_cache.entries == expected
    assert (directory / LEADER_EPOCH_CHECKPOINT).read_text().splitlines()[:2] == ["0", "3"]


def test_epoch_cache_forgets_epochs_whose_batches_recovery_cut(tmp_path):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=12)
    third_epoch_start = written.epoch_cache.entries[-1].start_offset
    log_file = directory / f"{0:020d}.log"
    data = log_file.read_bytes()
    cut_at = next(pos for pos, h in iter_batches(data) if h.base_offset == third_epoch_start)
    log_file.write_bytes(data[: cut_at + 30])
    log = reopen(directory, recover=True)
    assert log.log_end_offset == third_epoch_start
    assert [e.epoch for e in log.epoch_cache.entries] == [0, 1]


def test_leftover_temporary_files_are_removed(tmp_path):
    directory = tmp_path / "events-0"
    write_log(directory, batches=3)
    for name in ("leader-epoch-checkpoint.tmp", f"{0:020d}.log.deleted", f"{99:020d}.index"):
        (directory / name).write_bytes(b"junk")
    reopen(directory, recover=True)
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [f"{0:020d}.log", f"{0:020d}.index", f"{0:020d}.timeindex", LEADER_EPOCH_CHECKPOINT])


def test_index_cut_at_every_position_still_serves_every_offset(tmp_path):
    directory = tmp_path / "events-0"
    written = write_log(directory, batches=40, index_interval_bytes=256)
    expected_entries = written.segments[0].offset_index.entries()
    expected_data = (directory / f"{0:020d}.log").read_bytes()
    index_file = directory / f"{0:020d}.index"
    raw = index_file.read_bytes()
    for cut in range(len(raw)):
        index_file.write_bytes(raw[:cut])
        log = reopen(directory, recover=False, index_interval_bytes=256)
        entries = log.segments[0].offset_index.entries()
        if cut % 8:
            assert entries == expected_entries, cut  # unreadable: rebuilt from the log
        else:
            assert entries == expected_entries[: cut // 8], cut  # shorter but sound: kept
        assert log.read(0, 1 << 20) == expected_data
        for offset, _position in expected_entries:
            assert offsets_of(log.read(offset, 1))[-1] >= offset
        log.close()
        index_file.write_bytes(raw)
