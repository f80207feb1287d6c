"""The batch scanner and the split planner on segment bytes (no Spark): every byte of a range is accounted for,
damage is found, a torn tail is told apart from corruption, large segments split only at checked batch starts, and
splits are dealt into tasks of about equal bytes."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records import BatchBuilder, set_base_offset, set_partition_leader_epoch
from tests.verifierutil import log_dir, write_replica
from verifier import scanner
from verifier.layout import read_layout
from verifier.scanner import CRC, OK, TORN, UNREADABLE, scan_buffer, scan_file
from verifier.splits import Split, group_splits, plan_splits


def _segment(batches: int = 4, records: int = 3, compression: int = 0) -> bytes:
    """Batches of `records` records each, offsets from 0, leader epoch = batch number."""
    out = bytearray()
    for number in range(batches):
        builder = BatchBuilder(compression=compression)
        for i in range(records):
            builder.append(f"value-{number}-{i}".encode(), key=b"k", timestamp=1_700_000_000_000 + i)
        batch = bytearray(builder.build())
        set_base_offset(batch, 0, number * records)
        set_partition_leader_epoch(batch, 0, number)
        out += batch
    return bytes(out)


SEGMENT = _segment()
SIZE = len(SEGMENT) // 4


def test_whole_batches_are_ok_with_their_header_fields():
    rows = list(scan_buffer(SEGMENT))
    assert [(r.position, r.size, r.base_offset, r.last_offset, r.leader_epoch, r.records, r.status) for r in rows] == [
        (n * SIZE, SIZE, 3 * n, 3 * n + 2, n, 3, OK) for n in range(4)]


def test_a_flipped_byte_under_the_crc_marks_that_batch_only():
    data = bytearray(SEGMENT)
    data[SIZE + 70] ^= 0x01
    rows = list(scan_buffer(bytes(data)))
    assert [r.status for r in rows] == [OK, CRC, OK, OK]
    assert "stored crc" in rows[1].detail


def test_records_of_compressed_batches_are_read_and_a_flipped_byte_in_one_is_a_crc_violation(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    for codec in (1, 2, 3, 4):
        segment = bytearray(_segment(compression=codec))
        path.write_bytes(segment)
        assert [(r.offset, r.value) for r in scanner.scan_records(str(path), 0, len(segment))] == [
            (3 * number + i, f"value-{number}-{i}".encode()) for number in range(4) for i in range(3)]
        first = next(scan_buffer(segment)).size
        segment[first + 70] ^= 0x01  # inside the second batch's compressed records
        assert [r.status for r in scan_buffer(bytes(segment))] == [OK, CRC, OK, OK]


def test_an_incomplete_last_batch_is_a_torn_tail_at_the_end_of_the_log_and_unreadable_elsewhere():
    cut = SEGMENT[: 3 * SIZE + 30]
    assert [r.status for r in scan_buffer(cut, tail_may_tear=True)] == [OK, OK, OK, TORN]
    rows = list(scan_buffer(cut, tail_may_tear=False))
    assert [r.status for r in rows] == [OK, OK, OK, UNREADABLE]
    assert rows[-1].size == 30


def test_a_bad_length_or_magic_stops_the_range():
    data = bytearray(SEGMENT)
    data[SIZE + 16] = 1  # magic
    assert [r.status for r in scan_buffer(bytes(data))] == [OK, UNREADABLE]
    data = bytearray(SEGMENT)
    data[SIZE + 8: SIZE + 12] = b"\x00\x00\x00\x05"  # batch length
    rows = list(scan_buffer(bytes(data)))
    assert [r.status for r in rows] == [OK, UNREADABLE] and "below the minimum" in rows[1].detail


def test_a_file_is_read_in_chunks_with_the_same_rows(tmp_path):
    path = tmp_path / "segment.log"
    path.write_bytes(SEGMENT[: 3 * SIZE + 30])
    rows = list(scan_file(str(path), 0, 3 * SIZE + 30, tail_may_tear=True, chunk_bytes=SIZE // 2))
    assert rows == list(scan_buffer(SEGMENT[: 3 * SIZE + 30]))
    middle = list(scan_file(str(path), SIZE, 3 * SIZE, tail_may_tear=False, chunk_bytes=100))
    assert [(r.position, r.status) for r in middle] == [(SIZE, OK), (2 * SIZE, OK)]


def test_scans_of_small_and_large_ranges_share_one_kept_read_buffer(tmp_path):
    path = tmp_path / "segment.log"
    path.write_bytes(SEGMENT)
    scanner._spare_buffers.clear()
    list(scan_file(str(path), 0, SIZE, tail_may_tear=False, chunk_bytes=100))
    [kept] = scanner._spare_buffers
    assert len(kept) == scanner.CHUNK_BYTES
    # A scan in progress holds the kept buffer; one started meanwhile gets a buffer of its own, and both come back.
    first, second = scan_file(str(path), 0, len(SEGMENT), tail_may_tear=True), \
        scan_file(str(path), 0, len(SEGMENT), tail_may_tear=True)
    assert next(first).position == next(second).position == 0
    assert scanner._spare_buffers == []
    assert list(first) == list(second) == list(scan_buffer(SEGMENT))[1:]
    assert len(scanner._spare_buffers) == 2 and any(b is kept for b in scanner._spare_buffers)


def _fields(rows: list) -> list[tuple]:
    return [(r.position, r.size, r.base_offset, r.last_offset, r.leader_epoch, r.crc, r.status) for r in rows]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_bytes_never_crash_and_are_always_noticed(data):
    """Any damage (bytes flipped, replaced, cut or inserted) gives rows that tile the bytes exactly, and either a
    row that is not ok (crc, unreadable, torn) or different header fields outside the CRC (base offset, leader
    epoch: the job's continuity and epoch checks report those)."""
    damaged = bytearray(SEGMENT)
    for _ in range(data.draw(st.integers(1, 3))):
        if not damaged:
            break
        at = data.draw(st.integers(0, len(damaged) - 1))
        how = data.draw(st.sampled_from(["flip", "replace", "cut", "insert"]))
        if how == "flip":
            damaged[at] ^= data.draw(st.integers(1, 255))
        elif how == "replace":
            damaged[at:at + 8] = data.draw(st.binary(min_size=1, max_size=8))
        elif how == "cut":
            del damaged[at:]
        else:
            damaged[at:at] = data.draw(st.binary(min_size=1, max_size=70))
    damaged_bytes = bytes(damaged)
    rows = list(scan_buffer(damaged_bytes, tail_may_tear=True))
    assert sum(r.size for r in rows) == len(damaged_bytes)
    assert all(a.position + a.size == b.position for a, b in itertools.pairwise(rows))
    if damaged_bytes != SEGMENT:
        assert any(r.status != OK for r in rows) or _fields(rows) != _fields(list(scan_buffer(SEGMENT)))


def test_large_segments_split_only_at_batch_starts_the_index_vouches_for(tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    write_replica(directory, "t", 0, [(0, [bytes(300) for _ in range(10)]) for _ in range(40)],
                  segment_bytes=64 * 1024)
    layout = read_layout([directory])
    [replica] = layout.replicas
    assert len(replica.segments) >= 2
    splits = plan_splits(layout.replicas, split_bytes=16 * 1024)
    assert len(splits) > len(replica.segments)
    for segment in replica.segments:
        ranges = [(s.start, s.end) for s in splits if s.segment == segment.base_offset]
        assert ranges[0][0] == 0 and ranges[-1][1] == segment.size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        data = Path(segment.path).read_bytes()
        starts = {r.position for r in scan_buffer(data)}
        assert {start for start, _ in ranges} <= starts
        # Reading the ranges one by one gives the rows of the whole file.
        pieces = [row for s in splits if s.segment == segment.base_offset
                  for row in scan_file(s.path, s.start, s.end, tail_may_tear=s.tail_may_tear)]
        assert pieces == list(scan_buffer(data))
    assert [s.tail_may_tear for s in splits].count(True) == 1


def test_a_zero_filled_or_damaged_index_only_costs_splits(tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    write_replica(directory, "t", 0, [(0, [bytes(300) for _ in range(10)]) for _ in range(40)])
    [replica] = read_layout([directory]).replicas
    index = Path(replica.segments[0].index_path)
    entries = index.read_bytes()
    index.write_bytes(entries + bytes(10 * 1024 * 1024 - len(entries)))  # Kafka preallocates the active index
    [replica] = read_layout([directory]).replicas
    good = plan_splits([replica], split_bytes=16 * 1024)
    assert len(good) > 1
    damaged = bytearray(entries)
    damaged[len(damaged) // 2 + 4: len(damaged) // 2 + 8] = (123).to_bytes(4, "big")  # a position mid-batch
    index.write_bytes(bytes(damaged))
    [replica] = read_layout([directory]).replicas
    for split in plan_splits([replica], split_bytes=16 * 1024):
        rows = list(scan_file(split.path, split.start, split.end, tail_may_tear=split.tail_may_tear))
        assert all(r.status == OK for r in rows)


def _split(number: int, size: int) -> Split:
    return Split(number, 1, "t", number, 0, f"/{number}.log", 0, size, True)


@given(st.lists(st.integers(min_value=1, max_value=10**9), max_size=40), st.integers(min_value=1, max_value=8))
def test_splits_are_dealt_into_tasks_of_about_equal_bytes(sizes: list[int], groups: int):
    splits = [_split(number, size) for number, size in enumerate(sizes)]
    dealt = group_splits(splits, groups)
    assert sorted(s.replica_id for group in dealt for s in group) == list(range(len(sizes)))  # each split once
    assert len(dealt) == min(groups, len(sizes)) and all(dealt)
    loads = [sum(s.end - s.start for s in group) for group in dealt]
    if loads:  # largest first, each to the lightest group: no group is heavier than another by more than a split
        assert max(loads) - min(loads) <= max(sizes)
