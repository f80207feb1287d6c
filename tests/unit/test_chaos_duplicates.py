"""The soak's duplicates check: an acknowledged record the final read holds at two offsets is reported with both;
records read once, records of other partitions with the same value, and duplicates of records that were never
acknowledged are not."""

from __future__ import annotations

from client.chaos.duplicates import duplicated
from client.chaos.workload import Acked, ReadRecord


def read(*values: str) -> dict[int, ReadRecord]:
    return {offset: ReadRecord(f"k-{value}", value) for offset, value in enumerate(values)}


def test_an_acknowledged_record_read_at_two_offsets_is_reported_with_both():
    final = {0: read("a", "b", "a", "c"), 1: read("d")}
    acked = [Acked(0, 0, "k-a", "a"), Acked(0, 1, "k-b", "b"), Acked(1, 0, "k-d", "d")]
    assert duplicated(acked, final) == ["partition 0: 'a' at offsets [0, 2]"]


def test_records_read_once_and_unacknowledged_duplicates_are_not_reported():
    final = {0: read("a", "u", "u"), 1: read("a")}  # "u" was never acknowledged; "a" once in each partition
    acked = [Acked(0, 0, "k-a", "a"), Acked(1, 0, "k-a", "a")]
    assert duplicated(acked, final) == []
