"""The log cleaner on real log directories: cleaning keeps each key's latest record and every offset, tombstones go
after delete.retention.ms, producers' last batches stay, segments are replaced through Kafka's files whatever moment
a crash comes at, and a replacement is refused once the log changed under it."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.log.checkpoint import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from broker.log.cleaner.cleaner import Cleaner, CleaningAbortedError, CleaningJob, no_step
from broker.log.cleaner.manager import LogCleanerManager
from broker.log.cleaner.offset_map import OffsetMap
from broker.log.config import LogConfig
from broker.log.log import Log
from protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchBuilder
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import TP, ManualClock, clean_log
from tests.unit.logutil import every_record as records

KEYS = 20
DAY = 86_400_000
COMPACTED = {"cleanup_policy": ("compact",), "segment_bytes": 2048, "delete_retention_ms": DAY}


def keyed_batch(pairs: list[tuple[bytes | None, bytes | None]], producer: tuple[int, int, int] | None = None,
                compression: int = NONE) -> bytes:
    builder = BatchBuilder(compression=compression)
    if producer is not None:
        builder.set_producer(*producer)
    for key, value in pairs:
        builder.append(value, key=key, timestamp=1_700_000_000_000)
    return builder.build()


def compacted_log(directory: Path, clock: ManualClock, **config: object) -> Log:
    return Log(directory / f"{TP.topic}-{TP.partition}", TP, LogConfig(**{**COMPACTED, **config}), clock=clock)


def write_rounds(log: Log, rounds: int, start: int = 0) -> dict[bytes, bytes]:
    """``rounds`` values of each of KEYS keys, two keys a batch; returns each key's latest value."""
    latest = {}
    for round_number in range(start, start + rounds):
        for i in range(0, KEYS, 2):
            pairs = [(f"key-{j}".encode(), f"value-{j}-{round_number}".encode() * 4) for j in (i, i + 1)]
            log.append_as_leader(keyed_batch(pairs), leader_epoch=round_number % 3)
            latest.update(pairs)
    log.update_high_watermark(log.log_end_offset)
    return latest


def latest_values(log: Log) -> dict[bytes, bytes | None]:
    return {r.key: r.value for r in records(log)}


def run_cleaner(log: Log, clock: ManualClock, manager: LogCleanerManager | None = None,
                step: Callable[[str], None] = no_step, capacity: int = 1 << 20) -> int | None:
    """One cleaner pass (logutil.clean_log), its checkpoint written."""
    manager = manager or LogCleanerManager([log.dir.parent], {log.tp: log})
    end = clean_log(log, clock, manager, step, capacity)
    manager.write_checkpoints()
    return end


def offsets_strictly_increase(log: Log) -> None:
    offsets = [r.offset for r in records(log)]
    assert offsets == sorted(set(offsets))
    batches = [h for segment in log.segments for h in segment.headers()]
    assert all(a.last_offset < b.base_offset for a, b in itertools.pairwise(batches))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def test_cleaning_keeps_each_keys_latest_value_and_every_offset(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path, clock)
    latest = write_rounds(log, 12)
    leo, hw, size, segments = log.log_end_offset, log.high_watermark, log.size_in_bytes, len(log.segments)
    assert segments > 5
    end = run_cleaner(log, clock)
    assert end == log.active_segment.base_offset  # everything but the active segment
    assert (log.log_end_offset, log.high_watermark) == (leo, hw)
    assert log.size_in_bytes < size / 3 and len(log.segments) == segments  # each segment was a group of its own
    assert latest_values(log) == latest
    before_active = [r for r in records(log) if r.offset < end]
    assert len({r.key for r in before_active}) == len(before_active)  # one record per key in the cleaned part
    offsets_strictly_increase(log)
    assert not [p.name for p in log.dir.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
    assert OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read() == {TP: end}
    # The epochs of the batches kept are still theirs, and a reopened log reads the same.
    log.close()
    reopened = compacted_log(tmp_path, clock)
    assert latest_values(reopened) == latest and reopened.log_end_offset == leo


def test_a_second_cleaning_starts_at_the_checkpoint_and_cleans_the_clean_part_again(tmp_path: Path,
                                                                                    clock: ManualClock):
    log = compacted_log(tmp_path, clock)
    write_rounds(log, 10)
    manager = LogCleanerManager([tmp_path], {TP: log})
    first = run_cleaner(log, clock, manager)
    assert run_cleaner(log, clock, manager) is None  # nothing dirty enough
    latest = write_rounds(log, 10, start=10)
    second = run_cleaner(log, clock, manager)
    assert second > first
    assert latest_values(log) == latest
    assert len([r for r in records(log) if r.offset < second]) == KEYS


def test_tombstones_are_kept_with_a_horizon_then_removed_once_it_passed(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path, clock, min_cleanable_dirty_ratio=0.01)
    latest = write_rounds(log, 10)
    log.append_as_leader(keyed_batch([(b"key-3", None), (b"key-4", None)]), leader_epoch=0)
    del latest[b"key-3"], latest[b"key-4"]

    def other_keys(tag: bytes) -> None:  # later records, so that the tombstones leave the active segment
        for i in range(10):
            log.append_as_leader(keyed_batch([(f"other-{i}".encode(), tag * 200)]), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)

    other_keys(b"a")
    run_cleaner(log, clock)
    tombstones = [r for r in records(log) if r.value is None]
    assert [r.key for r in tombstones] == [b"key-3", b"key-4"]
    horizons = {h.delete_horizon_ms for s in log.segments for h in s.headers() if h.delete_horizon_ms is not None}
    assert horizons == {clock() + DAY}
    clock.advance(DAY - 1)
    other_keys(b"b")
    assert run_cleaner(log, clock) is not None
    assert [r.key for r in records(log) if r.value is None] == [b"key-3", b"key-4"]  # not yet
    clock.advance(1)
    other_keys(b"c")
    assert run_cleaner(log, clock) is not None
    assert [r for r in records(log) if r.value is None] == []
    assert {k: v for k, v in latest_values(log).items() if k.startswith(b"key-")} == latest


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batches_keep_their_surviving_records_compressed_with_their_codec(tmp_path: Path,
                                                                                    clock: ManualClock, codec: int):
    log = compacted_log(tmp_path, clock)
    latest: dict[bytes, bytes | None] = {}
    for round_number in range(40):  # all four keys in even rounds, keys 1 and 3 in odd ones: batches kept in part
        pairs = [(b"key-%d" % j, b"value-%d-%d " % (j, round_number) * 8) for j in range(4) if round_number % 2 == 0
                 or j % 2]
        log.append_as_leader(keyed_batch(pairs, compression=codec), leader_epoch=round_number % 3)
        latest.update(pairs)
    log.append_as_leader(keyed_batch([(b"key-1", None)], compression=codec), leader_epoch=0)
    latest[b"key-1"] = None
    log.append_as_leader(keyed_batch([(b"filler", b"f" * 2100)]), leader_epoch=0)  # the rest leaves the active one
    log.update_high_watermark(log.log_end_offset)
    leo, count = log.log_end_offset, len(records(log))
    end = run_cleaner(log, clock)
    assert end == log.active_segment.base_offset and log.log_end_offset == leo
    assert {k: v for k, v in latest_values(log).items() if k != b"filler"} == latest
    cleaned = [h for s in log.segments[:-1] for h in s.headers()]
    assert sum(h.record_count for h in cleaned) == 4 < count  # each key's latest record, the tombstone with them
    assert {h.compression for h in cleaned if h.record_count} == {codec}
    assert any(h.delete_horizon_ms == clock() + DAY for h in cleaned)  # the tombstone's batch written again
    offsets_strictly_increase(log)


def test_an_idempotent_producers_last_batch_stays_even_emptied(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path, clock)
    log.append_as_leader(keyed_batch([(b"key-0", b"old")], producer=(42, 0, 0)), leader_epoch=0)
    log.append_as_leader(keyed_batch([(b"key-1", b"old")], producer=(42, 0, 1)), leader_epoch=0)
    write_rounds(log, 10)
    run_cleaner(log, clock)
    kept = [h for s in log.segments for h in s.headers() if h.producer_id == 42]
    assert [(h.base_offset, h.record_count, h.base_sequence) for h in kept] == [(1, 0, 1)]
    # The producer's state read back from the log is where it was: its next sequence is 2.
    log.close()
    reopened = compacted_log(tmp_path, clock)
    assert reopened.producer_state().producers[42].last_sequence == 1
    reopened.append_as_leader(keyed_batch([(b"key-0", b"new")], producer=(42, 0, 2)), leader_epoch=0)


def test_a_compacted_log_refuses_records_without_a_key(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path, clock)
    with pytest.raises(KafkaError) as raised:
        log.append_as_leader(keyed_batch([(b"k", b"v"), (None, b"v")]), leader_epoch=0)
    assert raised.value.code == ErrorCode.INVALID_RECORD and "record 1" in str(raised.value)
    assert log.log_end_offset == 0
    log.append_as_follower(keyed_batch([(None, b"from the leader")]))  # followers take what the leader wrote


def test_retention_applies_only_where_the_policy_includes_delete(tmp_path: Path, clock: ManualClock):
    compact_only = compacted_log(tmp_path / "a", clock, retention_ms=1)
    both = compacted_log(tmp_path / "b", clock, retention_ms=1, cleanup_policy=("compact", "delete"))
    for each in (compact_only, both):
        write_rounds(each, 4)
    clock.advance(DAY * 365 * 30)
    assert compact_only.delete_retained_segments() == 0
    assert both.delete_retained_segments() > 0


def test_a_small_offset_map_cleans_in_several_passes(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path, clock)
    latest = write_rounds(log, 12)
    manager = LogCleanerManager([tmp_path], {TP: log})
    first = run_cleaner(log, clock, manager, capacity=8 * 120)  # eight keys of twenty
    assert first < log.active_segment.base_offset and latest_values(log) == latest
    while (end := run_cleaner(log, clock, manager, capacity=8 * 120)) is not None:
        assert latest_values(log) == latest and end <= log.active_segment.base_offset
    assert latest_values(log) == latest
    offsets_strictly_increase(log)


# ------------------------------------------------------------------------------------------------ crashes


def copies_at_each_step(tmp_path: Path, directory: Path) -> tuple[Callable[[str], None], dict[str, Path]]:
    """A step hook that copies the partition directory as it is at each step (what a crash there leaves)."""
    copies: dict[str, Path] = {}

    def copy(step: str) -> None:
        copies[step] = tmp_path / f"crash-at-{step}" / directory.name
        shutil.copytree(directory, copies[step])

    return copy, copies


def test_a_crash_at_any_step_of_a_replacement_recovers_a_readable_correct_log(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path / "live", clock)
    latest = write_rounds(log, 12)
    log.flush()
    log.config = LogConfig(**{**COMPACTED, "segment_bytes": 100_000})  # every segment in one group: one replacement
    leo, size = log.log_end_offset, log.size_in_bytes
    copy, copies = copies_at_each_step(tmp_path, log.dir)
    run_cleaner(log, clock, step=copy)
    assert set(copies) == {"cleaned", "swap", "deleted", "replaced"}
    suffixes = {step: sorted({p.name.split(".", 1)[1] for p in path.iterdir() if p.name[0].isdigit()})
                for step, path in copies.items()}
    assert "log.cleaned" in suffixes["cleaned"] and "log.swap" in suffixes["swap"]
    assert "log.deleted" in suffixes["deleted"] and "log.swap" in suffixes["deleted"]
    assert "log.deleted" in suffixes["replaced"]
    for step, path in copies.items():
        recovered = Log(path, TP, LogConfig(**COMPACTED), clock=clock, needs_recovery=True, high_watermark=leo)
        assert latest_values(recovered) == latest, step
        assert recovered.log_end_offset == leo, step
        offsets_strictly_increase(recovered)
        left = [p.name for p in path.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
        assert left == [], (step, left)
        # Before every cleaned file is a .swap the old segments stay; from there on, the swap is completed.
        assert recovered.size_in_bytes == (size if step == "cleaned" else log.size_in_bytes), step


def test_an_interrupted_swap_of_several_segments_is_rolled_back_until_every_file_is_a_swap(tmp_path: Path,
                                                                                           clock: ManualClock):
    log = compacted_log(tmp_path / "live", clock)
    latest = write_rounds(log, 12)
    log.flush()
    leo = log.log_end_offset
    directory = log.dir
    log.close()
    # A cleaned segment at the second segment's base whose index is still .cleaned: its .log.swap goes.
    bases = sorted(int(p.stem) for p in directory.glob("*.log"))
    second = directory / f"{bases[1]:020d}"
    shutil.copy(f"{second}.log", f"{second}.log.swap")
    shutil.copy(f"{second}.index", f"{second}.index.cleaned")
    recovered = Log(directory, TP, LogConfig(**COMPACTED), clock=clock, needs_recovery=True)
    assert latest_values(recovered) == latest and recovered.log_end_offset == leo
    assert not [p for p in directory.iterdir() if p.suffix in (".cleaned", ".swap")]


# ------------------------------------------------------------------------------------------------ refusals


def grabbed(tmp_path: Path, clock: ManualClock) -> tuple[Log, LogCleanerManager, CleaningJob]:
    log = compacted_log(tmp_path, clock)
    write_rounds(log, 12)
    manager = LogCleanerManager([tmp_path], {TP: log})
    job = manager.grab_dirtiest(clock())
    assert job is not None
    return log, manager, job


def clean_refused(log: Log, job: CleaningJob, clock: ManualClock) -> Iterator[str]:
    cleaner = Cleaner(OffsetMap(1 << 20), lambda work: work(), lambda _job: None, clock)
    with pytest.raises(CleaningAbortedError):
        cleaner.clean(job)
    yield from (p.name for p in log.dir.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted"))


def test_a_log_truncated_while_it_is_cleaned_keeps_its_segments(tmp_path: Path, clock: ManualClock):
    log, _manager, job = grabbed(tmp_path, clock)
    before = latest_values(log)
    log.truncate_to(job.first_uncleanable - 5)
    assert list(clean_refused(log, job, clock)) == []
    assert latest_values(log) == {**before, **latest_values(log)}  # nothing cleaned, nothing resurrected
    assert log.log_end_offset <= job.first_uncleanable - 5


def test_segments_deleted_while_they_are_cleaned_are_not_replaced(tmp_path: Path, clock: ManualClock):
    log, _manager, job = grabbed(tmp_path, clock)
    log.delete_records(log.segments[1].base_offset)
    assert list(clean_refused(log, job, clock)) == []
    assert log.log_start_offset == log.segments[0].base_offset


def test_a_closed_log_is_not_cleaned(tmp_path: Path, clock: ManualClock):
    log, manager, job = grabbed(tmp_path, clock)
    manager.forget(TP)
    assert manager.is_aborted(TP)
    log.close()
    assert list(clean_refused(log, job, clock)) == []


def test_a_truncated_logs_checkpoint_is_reset_to_its_start(tmp_path: Path, clock: ManualClock):
    log = compacted_log(tmp_path, clock)
    write_rounds(log, 12)
    manager = LogCleanerManager([tmp_path], {TP: log})
    end = run_cleaner(log, clock, manager)
    log.truncate_to(end - 3)
    write_rounds(log, 12, start=12)
    job = manager.grab_dirtiest(clock())
    assert job is not None and job.first_dirty == log.log_start_offset
    manager.done_cleaning(job, None)
    assert manager.checkpoints() == {TP: log.log_start_offset}


def test_the_manager_never_hands_out_a_log_twice_and_drops_deleted_ones_from_the_checkpoint(tmp_path: Path,
                                                                                           clock: ManualClock):
    _log, manager, job = grabbed(tmp_path, clock)
    assert manager.in_progress(TP) and manager.grab_dirtiest(clock()) is None
    manager.write_checkpoints()
    assert OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read() == {TP: 0}  # before the first swap
    other = TopicPartition("other", 0)
    manager.forget(other)
    manager.done_cleaning(job, 55)
    assert not manager.in_progress(TP) and manager.checkpoints() == {TP: 55}
    manager.forget(TP)
    manager.write_checkpoints()
    assert OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read() == {}
