"""The replica verification tool's comparison: batches compared in step below each replica's HW (offsets, leader
epochs, CRCs), a batch whose bytes do not match its CRC found, a torn last batch left for later."""

from __future__ import annotations

from client.replica_verification import BatchSummary, Fetched, compare, summarize
from protocol.records import BatchBuilder, set_base_offset, set_partition_leader_epoch


def batches(*specs: tuple[int, int, int]) -> bytes:
    """Whole batches for (base offset, record count, leader epoch) specs."""
    out = bytearray()
    for base, count, epoch in specs:
        builder = BatchBuilder()
        for i in range(count):
            builder.append(f"value-{base + i}".encode())
        batch = bytearray(builder.build())
        set_base_offset(batch, 0, base)
        set_partition_leader_epoch(batch, 0, epoch)
        out += batch
    return bytes(out)


LOG = batches((0, 3, 0), (3, 2, 0), (5, 4, 1))


def test_summaries_of_whole_batches_and_a_torn_tail():
    summaries = summarize(LOG + LOG[:30])
    assert [(s.base_offset, s.last_offset, s.leader_epoch, s.intact) for s in summaries] == [
        (0, 2, 0, True), (3, 4, 0, True), (5, 8, 1, True)]


def test_identical_replicas_are_verified_up_to_the_lowest_high_watermark():
    same = summarize(LOG)
    assert compare("t", 0, {1: Fetched(9, same), 2: Fetched(9, same), 3: Fetched(9, same)}) == (9, [])
    # A follower whose HW is 5 lets only the first two batches be compared this round.
    assert compare("t", 0, {1: Fetched(9, same), 2: Fetched(5, same)}) == (5, [])
    # Nothing below one replica's HW yet: nothing verified.
    assert compare("t", 0, {1: Fetched(9, same), 2: Fetched(0, same)}) == (None, [])
    assert compare("t", 0, {1: Fetched(9, same), 2: Fetched(9, [])}) == (None, [])


def test_a_batch_altered_on_disk_is_found_by_its_crc():
    altered = bytearray(LOG)
    at = LOG.index(b"value-4")
    altered[at + 6] ^= 0x01  # one bit of a record of the second batch
    offset, problems = compare("t", 0, {1: Fetched(9, summarize(LOG)), 3: Fetched(9, summarize(bytes(altered)))})
    assert offset == 3  # the first batch agrees
    assert problems == ["partition t-0: replica 3's batch at offset 3 does not match its CRC "
                        f"{summarize(LOG)[1].crc:#010x}"]


def test_different_checksums_epochs_and_offsets_are_reported():
    good = summarize(LOG)
    other_crc = [good[0], BatchSummary(3, 4, 0, good[1].crc ^ 1, True), good[2]]
    offset, problems = compare("t", 0, {1: Fetched(9, good), 2: Fetched(9, other_crc)})
    assert offset == 3 and problems == [
        f"partition t-0 has unmatched checksum at offset 4; replica 1's checksum {good[1].crc}; replica 2's "
        f"checksum {good[1].crc ^ 1}"]
    other_epoch = [good[0], good[1], BatchSummary(5, 8, 2, good[2].crc, True)]
    assert compare("t", 0, {1: Fetched(9, good), 2: Fetched(9, other_epoch)})[1] == [
        "partition t-0 has unmatched leader epoch at offset 8; replica 1's 1; replica 2's 2"]
    out_of_step = [good[0], BatchSummary(3, 5, 0, good[1].crc, True)]
    assert compare("t", 0, {1: Fetched(9, good), 2: Fetched(9, out_of_step)}) == (3, [
        "partition t-0: replica 1's offsets 3..4 don't match replica 2's 3..5"])
