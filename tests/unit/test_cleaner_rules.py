"""The log cleaner's rules, each on its own: the dirty range, the cleanable bytes, the compaction lags, the choice of
log, the grouping of segments, and what of a batch survives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.log.cleaner import rules
from broker.log.cleaner.offset_map import ENTRY_OVERHEAD_BYTES, NO_OFFSET, OffsetMap
from broker.log.cleaner.rules import Candidate, DirtyRange, LogState, SegmentInfo
from broker.log.config import NEVER
from protocol.records import BatchBuilder, BatchHeader, validate_batch

NOW = 1_700_000_000_000
HOUR = 3_600_000


def segment(base: int, size: int = 100, max_timestamp: int = NOW - 10 * HOUR, first: int | None = NOW - 10 * HOUR,
            index: int = 0, time_index: int = 0) -> SegmentInfo:
    return SegmentInfo(base, size, max_timestamp, first, index, time_index)


def log(*segments: SegmentInfo, start: int = 0, end: int = 500, hw: int = 500, ratio: float = 0.5,
        min_lag: int = 0, max_lag: int = NEVER) -> LogState:
    return LogState(tuple(segments), start, end, hw, ratio, min_lag, max_lag)


# Segments [0, 100) [100, 200) [200, 300) [300, 400) and the active one from 400.
FIVE = (segment(0), segment(100), segment(200), segment(300), segment(400, max_timestamp=NOW))


@pytest.mark.parametrize(("checkpoint", "expected"), [
    (None, (10, False)), (150, (150, False)), (5, (10, True)), (600, (10, True)), (500, (500, False)),
])
def test_the_first_dirty_offset_is_the_checkpoint_unless_it_is_outside_the_log(checkpoint, expected):
    assert rules.first_dirty_offset(checkpoint, 10, 500) == expected


def test_cleaning_stops_before_the_active_segment():
    assert rules.first_uncleanable_offset(log(*FIVE), 0, NOW) == 400


def test_cleaning_stops_at_the_high_watermark():
    assert rules.first_uncleanable_offset(log(*FIVE, hw=250), 0, NOW) == 250


def test_cleaning_stops_at_the_first_dirty_segment_within_the_minimum_compaction_lag():
    recent = (segment(0), segment(100), segment(200, max_timestamp=NOW - 1000), segment(300), segment(400))
    assert rules.first_uncleanable_offset(log(*recent, min_lag=60_000), 0, NOW) == 200
    assert rules.first_uncleanable_offset(log(*recent, min_lag=500), 0, NOW) == 400  # old enough
    assert rules.first_uncleanable_offset(log(*recent, min_lag=60_000), 300, NOW) == 400  # before the dirty part


def test_the_first_uncleanable_offset_is_never_below_the_first_dirty_one():
    assert rules.first_uncleanable_offset(log(*FIVE, hw=150), 300, NOW) == 300
    assert rules.cleanable_range(log(*FIVE, hw=150), 300, NOW) == DirtyRange(300, 300, False)


def test_cleaning_covers_whole_segments_up_to_the_one_holding_the_first_uncleanable_offset():
    assert rules.cleanable_bytes(FIVE, 100, 250) == (200, 100)  # only [100, 200): the HW's segment waits
    assert rules.cleanable_bytes(FIVE, 0, 400) == (400, 400)
    assert rules.cleanable_bytes(FIVE, 0, 450) == (400, 400)  # never the active segment
    assert rules.cleanable_bytes(FIVE, 300, 300) == (300, 0)


def test_the_compaction_delay_counts_from_the_oldest_dirty_first_batch_past_the_maximum_lag():
    segments = (segment(0, first=NOW - 5 * HOUR), segment(100, first=NOW - 3 * HOUR), segment(200, first=0),
                segment(300, first=None), segment(400, first=NOW - 9 * HOUR))
    assert rules.compaction_delay(log(*segments, max_lag=HOUR), 0, NOW) == 4 * HOUR
    assert rules.compaction_delay(log(*segments, max_lag=HOUR), 100, NOW) == 2 * HOUR  # the clean part does not count
    assert rules.compaction_delay(log(*segments, max_lag=6 * HOUR), 0, NOW) == 0  # the active segment does not count
    assert rules.compaction_delay(log(*segments), 0, NOW) == 0  # no maximum lag


def test_a_candidate_weighs_the_clean_part_against_the_cleanable_one():
    found = rules.candidate(log(*FIVE), DirtyRange(200, 400, False), NOW)
    assert found == Candidate(200, 400, 200, 200, 0)
    assert found.dirty_ratio == 0.5 and found.total_bytes == 400


@pytest.mark.parametrize(("found", "ratio", "cleanable"), [
    (Candidate(0, 400, 100, 300, 0), 0.5, True),  # 0.75 > 0.5
    (Candidate(0, 400, 300, 100, 0), 0.5, False),  # 0.25
    (Candidate(0, 400, 200, 200, 0), 0.5, False),  # the ratio must be over the threshold
    (Candidate(0, 400, 300, 100, 5), 0.5, True),  # max.compaction.lag.ms passed, and there is something to clean
    (Candidate(0, 400, 300, 0, 5), 0.0, False),  # passed, but nothing is cleanable: 0 is not over 0
    (Candidate(0, 0, 0, 0, 5), 0.0, False),  # an empty log
])
def test_a_log_is_cleaned_over_its_dirty_ratio_or_past_its_maximum_compaction_lag(found, ratio, cleanable):
    assert rules.is_cleanable(found, ratio) is cleanable


def test_the_dirtiest_cleanable_log_is_cleaned_first():
    candidates = {"a": (Candidate(0, 4, 100, 300, 0), 0.5), "b": (Candidate(0, 4, 10, 390, 0), 0.99),
                  "c": (Candidate(0, 4, 50, 350, 0), 0.5), "d": (Candidate(0, 4, 200, 200, 9), 0.9)}
    assert rules.dirtiest(candidates) == "c"  # b (0.975) is under its own threshold
    assert rules.dirtiest({"d": candidates["d"]}) == "d"
    assert rules.dirtiest({"b": candidates["b"]}) is None


def test_segments_are_grouped_under_the_segment_size_and_index_size():
    segments = [segment(0, 40, index=2, time_index=1), segment(100, 40, index=2, time_index=1),
                segment(200, 40, index=2, time_index=1), segment(300, 10, index=9, time_index=1),
                segment(400, 0)]
    assert rules.group_segments(segments, 100, 1000, 500) == [range(0, 2), range(2, 5)]
    assert rules.group_segments(segments, 1000, 1000, 500) == [range(0, 5)]
    assert rules.group_segments(segments, 1000, 100, 500) == [range(0, 3), range(3, 5)]  # 15 index entries > 100 B
    # A segment whose index alone is over the limit is a group of its own (Kafka counts the first one too).
    assert rules.group_segments(segments, 1000, 47, 500) == [range(0, 2), range(2, 3), range(3, 4), range(4, 5)]
    assert rules.group_segments(segments, 10, 1000, 500) == [range(0, 1), range(1, 2), range(2, 3), range(3, 5)]


def test_a_group_never_spans_more_offsets_than_one_index_can_address():
    far = rules.MAX_RELATIVE_OFFSET + 1
    # The second segment's last offset (bounded by the third's base) is too far from the first's base; the third's
    # is not from the second's; the empty last one is not checked.
    segments = [segment(0), segment(10), segment(far + 5), segment(far + 10, size=0)]
    assert rules.group_segments(segments, 10**9, 10**9, far + 20) == [range(0, 1), range(1, 4)]


def header_of(*records: tuple[bytes | None, bytes | None], producer_id: int = -1,
              base_offset: int = 10) -> BatchHeader:
    builder = BatchBuilder(base_offset=base_offset, producer_id=producer_id, producer_epoch=0,
                           base_sequence=0 if producer_id >= 0 else -1)
    for key, value in records:
        builder.append(value, key=key, timestamp=NOW)
    return validate_batch(builder.build())


def test_a_record_survives_if_its_key_has_no_later_record_and_it_is_no_expired_tombstone():
    latest = {b"a": 13, b"b": 11, b"c": 12, b"z": 16}
    offsets = [10, 11, 12, 13, 14, 15]
    keys = [b"a", b"b", b"c", b"a", None, b"z"]
    tombstones = [False, False, True, False, False, False]
    assert rules.retained_records(offsets, keys, tombstones, latest, 15, True) == [1, 2, 3]
    assert rules.retained_records(offsets, keys, tombstones, latest, 15, False) == [1, 3]
    # Past the map's last offset everything is kept, keyless or not: the map says nothing of those records.
    assert rules.retained_records(offsets, keys, tombstones, latest, 11, False) == [1, 2, 3, 4, 5]
    # The usual batch (all keyed, no tombstone, within the map) is decided the same way.
    assert rules.retained_records(offsets[:4], keys[:4], [False] * 4, latest, 15, False) == [1, 2, 3]


def test_tombstones_are_kept_until_their_delete_horizon():
    plain = header_of((b"k", None))
    horizon = plain._replace(attributes=plain.attributes | 0x40, base_timestamp=NOW + 100)
    assert rules.keeps_tombstones(plain, NOW + 10**9)
    assert rules.keeps_tombstones(horizon, NOW + 99) and not rules.keeps_tombstones(horizon, NOW + 100)


def test_the_first_cleaning_to_keep_a_tombstone_sets_its_batchs_delete_horizon():
    plain = header_of((b"k", None))
    assert rules.delete_horizon(plain, [False, True], NOW, 5000) == NOW + 5000
    assert rules.delete_horizon(plain, [False], NOW, 5000) is None
    horizon = plain._replace(attributes=plain.attributes | 0x40, base_timestamp=NOW - 7)
    assert rules.delete_horizon(horizon, [False], NOW, 5000) == NOW - 7  # kept, never moved


def test_an_emptied_batch_is_kept_for_its_producer_or_as_the_last_of_the_round():
    idempotent = header_of((b"k", b"v"), (b"k", b"w"), producer_id=7)  # offsets 10, 11
    assert rules.keeps_empty_batch(idempotent, {7: 11}, 100)
    assert not rules.keeps_empty_batch(idempotent, {7: 50}, 100)
    plain = header_of((b"k", b"v"))
    assert not rules.keeps_empty_batch(plain, {-1: 10}, 100)
    assert rules.keeps_empty_batch(plain, {}, 11)


def test_the_offset_map_holds_each_keys_latest_offset_within_its_memory():
    entry = ENTRY_OVERHEAD_BYTES + 2
    offset_map = OffsetMap(capacity_bytes=3 * entry)
    assert offset_map.get(b"k1") == NO_OFFSET
    assert offset_map.put_all([b"k1", b"k2", b"k1"], [0, 1, 2]) == 3
    assert (offset_map.get(b"k1"), offset_map.get(b"k2"), len(offset_map)) == (2, 1, 2)
    assert offset_map.put_all([b"k2", b"k3"], [3, 4]) == 2  # one new key: it fits
    assert offset_map.put_all([b"k4", b"k1"], [5, 6]) == 0  # a fourth key does not: the batch is left out whole
    assert (offset_map.get(b"k1"), offset_map.get(b"k4")) == (2, NO_OFFSET)
    assert offset_map.utilization == 1.0


def test_an_empty_offset_map_takes_the_part_of_a_batch_that_fits():
    offset_map = OffsetMap(capacity_bytes=2 * (ENTRY_OVERHEAD_BYTES + 2))
    assert offset_map.put_all([b"k1", b"k2", b"k1", b"k3"], [0, 1, 2, 3]) == 3
    assert (offset_map.get(b"k1"), offset_map.get(b"k3")) == (2, NO_OFFSET)
    offset_map.update_latest_offset(2)
    offset_map.clear()
    assert (len(offset_map), offset_map.latest_offset, offset_map.used_bytes) == (0, NO_OFFSET, 0)




@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", None]), st.booleans()), min_size=1, max_size=60),
       st.integers(1, 59), st.booleans())
def test_a_batch_the_offset_map_covers_keeps_the_same_records_by_its_latest_offsets_as_by_its_keys(
        records: list[tuple[bytes | None, bool]], split: int, keep_tombstones: bool):
    # The map is built from every record at offset 100 on; the batch is a consecutive run of them.
    offset_map = OffsetMap(capacity_bytes=1 << 20)
    keyed = [(key, 100 + i) for i, (key, _) in enumerate(records) if key is not None]
    offset_map.put_all([k for k, _ in keyed], [o for _, o in keyed])
    offset_map.update_latest_offset(100 + len(records) - 1)
    start, stop = min(split, len(records) - 1), len(records)
    offsets = list(range(100 + start, 100 + stop))
    keys = [key for key, _ in records[start:stop]]
    tombstones = [tombstone for _, tombstone in records[start:stop]]
    latest = offset_map.latest_offsets_between(offsets[0], offsets[-1])
    by_keys = rules.retained_records(offsets, keys, tombstones, offset_map.offsets, offset_map.latest_offset,
                                     keep_tombstones)
    assert rules.retained_of_mapped_batch(offsets, latest, tombstones, keep_tombstones) == by_keys


def test_a_batch_with_gaps_in_its_offsets_is_decided_by_its_keys():
    assert rules.retained_of_mapped_batch([10, 12, 13], [12], [False] * 3, True) is None
    assert rules.retained_of_mapped_batch([10, 11, 12], [12], [False] * 3, True) == [2]
