"""The leader-epoch cache: Kafka's assignment, lookup and truncation rules, and persistence."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCheckpointFile
from broker.log.epoch_cache import LeaderEpochCache
from broker.log.results import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
E = EpochEntry


class CountingCheckpoint(LeaderEpochCheckpointFile):
    """A real checkpoint file that also counts writes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes = 0

    def write(self, entries: list[EpochEntry]) -> None:
        self.writes += 1
        super().write(entries)


@pytest.fixture
def checkpoint(tmp_path: Path) -> CountingCheckpoint:
    return CountingCheckpoint(tmp_path / LEADER_EPOCH_CHECKPOINT)


@pytest.fixture
def cache(checkpoint: CountingCheckpoint) -> LeaderEpochCache:
    return LeaderEpochCache(checkpoint)


def cache_with(*entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def entries_of(*entries: tuple[int, int]) -> list[EpochEntry]:
    return [E(epoch, start) for epoch, start in entries]


# ---------------------------------------------------------------- assign


def test_empty_cache() -> None:
    cache = LeaderEpochCache()
    assert len(cache) == 0
    assert cache.entries == []
    assert cache.latest_epoch is None
    assert cache.latest_entry is None
    assert cache.earliest_entry is None
    assert cache.end_offset_for(7, 0) == UNDEFINED
    assert cache.epoch_for_offset(0) is None


def test_assign_first_epoch_and_latest_end_offset() -> None:
    cache = cache_with((2, 10))
    assert cache.latest_epoch == 2
    assert cache.entries == [E(2, 10)]
    assert cache.end_offset_for(2, 11) == (2, 11)


def test_assign_appends_new_epochs() -> None:
    cache = cache_with((0, 0), (1, 3))
    assert cache.assign(2, 5) is True
    assert cache.entries == entries_of((0, 0), (1, 3), (2, 5))
    assert len(cache) == 3
    assert cache.earliest_entry == E(0, 0)
    assert cache.latest_entry == E(2, 5)


def test_reassigning_latest_epoch_at_later_offset_is_a_no_op(
    cache: LeaderEpochCache, checkpoint: CountingCheckpoint
) -> None:
    cache.assign(0, 0)
    cache.assign(1, 3)
    writes = checkpoint.writes
    assert cache.assign(1, 10) is False
    assert cache.assign(1, 3) is False
    assert cache.entries == entries_of((0, 0), (1, 3))
    assert checkpoint.writes == writes


def test_epoch_start_offset_is_never_moved_forward() -> None:
    cache = cache_with((2, 6), (2, 7), (2, 10))
    assert cache.entries == [E(2, 6)]


def test_same_epoch_at_earlier_offset_replaces_it() -> None:
    cache = cache_with((5, 11), (6, 12), (7, 13))
    assert cache.assign(7, 12) is True
    assert cache.entries == entries_of((5, 11), (7, 12))
    assert cache.end_offset_for(5, 0) == (5, 12)
    assert cache.end_offset_for(6, 0) == (5, 12)


def test_new_epoch_at_same_offset_replaces_the_empty_epoch() -> None:
    assert cache_with((2, 9), (3, 9)).entries == [E(3, 9)]


def test_new_epoch_at_earlier_offset_removes_later_entries() -> None:
    cache = cache_with((0, 0), (2, 5))
    assert cache.assign(3, 4) is True
    assert cache.entries == entries_of((0, 0), (3, 4))
    assert cache_with((2, 6), (3, 5)).entries == [E(3, 5)]


def test_older_epoch_removes_newer_epochs() -> None:
    cache = cache_with((1, 5), (2, 6))
    assert cache.assign(1, 7) is True
    assert cache.entries == [E(1, 7)]
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 8) == (1, 8)
    assert cache.end_offset_for(2, 8) == UNDEFINED


@pytest.mark.parametrize(("epoch", "start"), [(-1, 0), (0, -1), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)])
def test_assign_rejects_negative_values(cache: LeaderEpochCache, epoch: int, start: int) -> None:
    with pytest.raises(ValueError, match="invalid leader epoch entry"):
        cache.assign(epoch, start)
    assert cache.entries == []


def test_entries_is_a_copy() -> None:
    cache = cache_with((0, 0))
    cache.entries.append(E(1, 1))
    assert cache.entries == [E(0, 0)]


# ---------------------------------------------------------------- end_offset_for


def test_end_offset_for_latest_epoch_is_log_end_offset() -> None:
    cache = cache_with((2, 11), (2, 12))
    assert cache.end_offset_for(2, 14) == (2, 14)


def test_end_offset_for_undefined_epoch() -> None:
    assert LeaderEpochCache().end_offset_for(UNDEFINED_EPOCH, 73) == UNDEFINED
    assert cache_with((2, 11), (3, 12)).end_offset_for(UNDEFINED_EPOCH, 0) == UNDEFINED


def test_end_offset_for_epoch_above_every_known_one() -> None:
    assert cache_with((2, 100)).end_offset_for(3, 100) == UNDEFINED


def test_end_offset_for_epoch_below_every_known_one() -> None:
    cache = cache_with((5, 11), (6, 12), (7, 13))
    assert cache.end_offset_for(4, 0) == (4, 11)


def test_end_offset_for_is_start_of_next_epoch() -> None:
    cache = cache_with((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert cache.end_offset_for(2, 17) == (2, 15)
    assert cache.end_offset_for(1, 17) == (1, 13)


def test_end_offset_for_unknown_epoch_between_known_ones() -> None:
    cache = cache_with((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, 0) == (0, 13)
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)


def test_epochs_need_not_start_at_zero() -> None:
    cache = cache_with((2, 6))
    assert cache.end_offset_for(2, 7) == (2, 7)
    assert cache.entries == [E(2, 6)]


def test_leader_changes_many_times() -> None:
    cache = cache_with((0, 0), (1, 0))
    assert cache.entries == [E(1, 0)]
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, 0) == (1, 0)
    assert cache.end_offset_for(0, 0) == (0, 0)
    assert cache.end_offset_for(1, 5) == (1, 5)
    assert cache.end_offset_for(0, 5) == (0, 0)
    cache.assign(2, 5)
    assert cache.end_offset_for(2, 10) == (2, 10)
    assert cache.end_offset_for(1, 10) == (1, 5)
    assert cache.end_offset_for(0, 10) == (0, 0)


def test_follower_receives_many_batches() -> None:
    cache = LeaderEpochCache()
    for offset in range(9):
        cache.assign(offset // 3, offset)
        assert cache.end_offset_for(offset // 3, offset + 1) == (offset // 3, offset + 1)
    assert cache.entries == entries_of((0, 0), (1, 3), (2, 6))
    assert cache.end_offset_for(0, 9) == (0, 3)
    assert cache.end_offset_for(1, 9) == (1, 6)


# ---------------------------------------------------------------- epoch_for_offset


def test_epoch_for_offset() -> None:
    cache = cache_with((0, 10), (1, 20), (5, 30))
    assert cache.epoch_for_offset(5) is None
    assert cache.epoch_for_offset(10) == 0
    assert cache.epoch_for_offset(19) == 0
    assert cache.epoch_for_offset(20) == 1
    assert cache.epoch_for_offset(25) == 1
    assert cache.epoch_for_offset(30) == 5
    assert cache.epoch_for_offset(50) == 5


# ---------------------------------------------------------------- truncation


THREE_EPOCHS = ((2, 6), (3, 8), (4, 11))


@pytest.mark.parametrize(
    ("end_offset", "expected"),
    [
        (8, [E(2, 6)]),
        (9, [E(2, 6), E(3, 8)]),
        (11, [E(2, 6), E(3, 8)]),
        (12, [E(2, 6), E(3, 8), E(4, 11)]),
        (6, []),
        (0, []),
        (UNDEFINED_EPOCH_OFFSET, [E(2, 6), E(3, 8), E(4, 11)]),
    ],
)
def test_truncate_from_end(end_offset: int, expected: list[EpochEntry]) -> None:
    cache = cache_with(*THREE_EPOCHS)
    cache.truncate_from_end(end_offset)
    assert cache.entries == expected


def test_truncate_from_end_moves_latest_epoch_back() -> None:
    cache = cache_with((2, 10), (4, 15), (10, 20))
    cache.truncate_from_end(18)
    assert cache.latest_epoch == 4
    cache.truncate_from_end(12)
    assert cache.latest_epoch == 2


@pytest.mark.parametrize(
    ("start_offset", "expected"),
    [
        (1, [E(2, 6), E(3, 8), E(4, 11)]),
        (6, [E(2, 6), E(3, 8), E(4, 11)]),
        (7, [E(2, 7), E(3, 8), E(4, 11)]),
        (8, [E(3, 8), E(4, 11)]),
        (9, [E(3, 9), E(4, 11)]),
        (11, [E(4, 11)]),
        (15, [E(4, 15)]),
        (UNDEFINED_EPOCH_OFFSET, [E(2, 6), E(3, 8), E(4, 11)]),
    ],
)
def test_truncate_from_start(start_offset: int, expected: list[EpochEntry]) -> None:
    cache = cache_with(*THREE_EPOCHS)
    cache.truncate_from_start(start_offset)
    assert cache.entries == expected


def test_truncate_from_start_examples() -> None:
    base = ((0, 0), (1, 5), (2, 10))
    for start, expected in [
        (5, entries_of((1, 5), (2, 10))),
        (7, entries_of((1, 7), (2, 10))),
        (12, entries_of((2, 12))),
    ]:
        cache = cache_with(*base)
        cache.truncate_from_start(start)
        assert cache.entries == expected
    cache = cache_with((0, 0), (1, 7), (2, 10))
    cache.truncate_from_start(5)
    assert cache.entries == entries_of((0, 5), (1, 7), (2, 10))


def test_truncations_of_empty_cache(cache: LeaderEpochCache, checkpoint: CountingCheckpoint) -> None:
    cache.truncate_from_start(7)
    cache.truncate_from_end(7)
    assert cache.entries == []
    assert checkpoint.writes == 0


def test_unchanging_truncations_do_not_write(cache: LeaderEpochCache, checkpoint: CountingCheckpoint) -> None:
    for epoch, start in THREE_EPOCHS:
        cache.assign(epoch, start)
    writes = checkpoint.writes
    cache.truncate_from_start(6)
    cache.truncate_from_start(UNDEFINED_EPOCH_OFFSET)
    cache.truncate_from_end(12)
    cache.truncate_from_end(UNDEFINED_EPOCH_OFFSET)
    assert checkpoint.writes == writes


def test_clear(cache: LeaderEpochCache, checkpoint: CountingCheckpoint) -> None:
    for epoch, start in THREE_EPOCHS:
        cache.assign(epoch, start)
    cache.clear()
    assert cache.entries == []
    assert checkpoint.read() == []


# ---------------------------------------------------------------- persistence


def test_truncations_are_written_to_the_checkpoint(
    cache: LeaderEpochCache, checkpoint: LeaderEpochCheckpointFile
) -> None:
    for epoch, start in THREE_EPOCHS:
        cache.assign(epoch, start)
    cache.truncate_from_end(11)
    cache.truncate_from_start(8)
    assert checkpoint.read() == [E(3, 8)]


MUTATIONS: list[Callable[[LeaderEpochCache], object]] = [
    lambda c: c.assign(0, 0),
    lambda c: c.assign(1, 5),
    lambda c: c.assign(3, 9),
    lambda c: c.assign(2, 7),
    lambda c: c.assign(4, 12),
    lambda c: c.truncate_from_start(6),
    lambda c: c.truncate_from_end(12),
    lambda c: c.assign(5, 20),
    lambda c: c.truncate_from_start(15),
    lambda c: c.clear(),
    lambda c: c.assign(6, 30),
]


def test_every_mutation_is_persisted(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache = LeaderEpochCache(LeaderEpochCheckpointFile(path))
    assert not path.exists()
    for mutate in MUTATIONS:
        mutate(cache)
        assert LeaderEpochCache(LeaderEpochCheckpointFile(path)).entries == cache.entries
    assert cache.entries == [E(6, 30)]


def test_persisted_text(cache: LeaderEpochCache, checkpoint: LeaderEpochCheckpointFile) -> None:
    for epoch in range(3):
        cache.assign(epoch, epoch)
    assert checkpoint.path.read_text() == "0\n3\n0 0\n1 1\n2 2\n"


def test_loading_replays_the_assignment_rule_without_writing(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text("0\n4\n0 0\n2 10\n3 10\n1 12\n")
    checkpoint = CountingCheckpoint(path)
    cache = LeaderEpochCache(checkpoint)
    assert cache.entries == entries_of((0, 0), (1, 12))
    assert checkpoint.writes == 0
    cache.flush()
    assert checkpoint.read() == entries_of((0, 0), (1, 12))


def test_explicit_entries_win_over_the_checkpoint(checkpoint: CountingCheckpoint) -> None:
    checkpoint.write(entries_of((0, 0), (1, 4)))
    cache = LeaderEpochCache(checkpoint, entries=entries_of((0, 0), (1, 4), (2, 9)))
    assert cache.entries == entries_of((0, 0), (1, 4), (2, 9))
    assert checkpoint.read() == entries_of((0, 0), (1, 4))
    assert LeaderEpochCache(checkpoint, entries=[]).entries == []


def test_an_unflushed_assignment_is_in_memory_only_until_flushed(cache: LeaderEpochCache,
                                                                    checkpoint: CountingCheckpoint) -> None:
    cache.assign(0, 0)
    assert cache.assign(1, 5, flush=False)
    assert not cache.assign(1, 7, flush=False)
    assert cache.entries == entries_of((0, 0), (1, 5))
    assert (checkpoint.read(), checkpoint.writes) == (entries_of((0, 0)), 1)
    cache.flush()
    assert checkpoint.read() == entries_of((0, 0), (1, 5))


def test_unflushed_truncations_are_written_by_the_next_flush(cache: LeaderEpochCache,
                                                             checkpoint: CountingCheckpoint) -> None:
    for epoch, start in ((0, 0), (1, 5), (2, 9)):
        cache.assign(epoch, start)
    cache.truncate_from_end(9, flush=False)
    assert (cache.unflushed, checkpoint.read()) == (True, entries_of((0, 0), (1, 5), (2, 9)))
    cache.flush()
    assert (cache.unflushed, checkpoint.read()) == (False, entries_of((0, 0), (1, 5)))
    cache.clear(flush=False)
    assert cache.unflushed and checkpoint.read() == entries_of((0, 0), (1, 5))
    cache.flush()
    assert checkpoint.read() == []


def test_a_closed_cache_writes_nothing_more(cache: LeaderEpochCache, checkpoint: CountingCheckpoint) -> None:
    cache.assign(0, 0)
    cache.close()
    cache.assign(1, 4)
    cache.flush()
    assert (checkpoint.read(), checkpoint.writes) == (entries_of((0, 0)), 1)


def test_cache_without_checkpoint_flushes_nowhere() -> None:
    cache = LeaderEpochCache(entries=entries_of((0, 0)))
    cache.flush()
    cache.clear()
    assert cache.entries == []


# ---------------------------------------------------------------- properties

offsets = st.integers(min_value=-1, max_value=60)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("assign"), st.integers(0, 12), st.integers(0, 60)),
        st.tuples(st.just("truncate_from_end"), offsets),
        st.tuples(st.just("truncate_from_start"), offsets),
    ),
    max_size=40,
)


def apply_and_check(cache: LeaderEpochCache, op: tuple) -> None:
    """Apply one operation and check its postcondition and the cache's invariant."""
    name, *args = op
    before = cache.entries
    if name == "assign":
        epoch, start = args
        changed = cache.assign(epoch, start)
        assert changed == (cache.entries != before)
        if changed:
            assert cache.latest_entry == E(epoch, start)
        else:
            assert before[-1].epoch == epoch and before[-1].start_offset <= start
    elif name == "truncate_from_end":
        (end,) = args
        cache.truncate_from_end(end)
        if end >= 0:
            assert all(e.start_offset < end for e in cache.entries)
        assert cache.entries == before[: len(cache)]
    else:
        (start,) = args
        cache.truncate_from_start(start)
        assert all(e.start_offset >= start for e in cache.entries)
        assert cache.entries[1:] == before[len(before) - len(cache) + 1 :]
    entries = cache.entries
    assert all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in pairwise(entries))


@given(ops=operations)
def test_entries_stay_strictly_increasing(ops: list[tuple]) -> None:
    cache = LeaderEpochCache()
    for op in ops:
        apply_and_check(cache, op)


@settings(max_examples=40, deadline=None)
@given(ops=operations)
def test_checkpoint_always_matches_memory(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        checkpoint = LeaderEpochCheckpointFile(Path(directory) / LEADER_EPOCH_CHECKPOINT)
        cache = LeaderEpochCache(checkpoint)
        for op in ops:
            apply_and_check(cache, op)
            assert checkpoint.read() == (cache.entries if checkpoint.exists() else [])
            assert LeaderEpochCache(checkpoint).entries == cache.entries
