"""Log cleaner throughput: one cleaner thread's pass over a dirty compacted log.

Writes ``--size-mb`` of 16 KiB batches of keyed records (14-byte keys, ``--value-bytes`` values) to a compacted
log, each key drawn at random from ``--distinct`` percent as many keys as there are records, in segments of
``--segment-mb`` and one small active segment; then, ``--runs`` times, cleans a copy of it as a cleaner thread does
(the offset map of the dirty part, each group of segments copied into a cleaned segment, flushed and put in place)
and prints MB of dirty log cleaned per second (wall clock and CPU time: the cleaner runs on one core), the records
kept and the log's size before and after; the last line gives the medians.

    python -m bench.cleaner_bench --size-mb 1024 --runs 3
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from broker.log.cleaner.cleaner import Cleaner
from broker.log.cleaner.config import CleanerConfig
from broker.log.cleaner.manager import LogCleanerManager
from broker.log.cleaner.offset_map import OffsetMap
from broker.log.config import LogConfig
from broker.log.log import Log
from protocol.records import BatchBuilder
from protocol.topic_partition import TopicPartition

TP = TopicPartition("bench", 0)
BATCH_BYTES = 16 * 1024
TIMESTAMP = 1_700_000_000_000


def config(segment_bytes: int) -> LogConfig:
    return LogConfig(cleanup_policy=("compact",), segment_bytes=segment_bytes, min_cleanable_dirty_ratio=0.0)


def write_dirty_log(directory: Path, size_mb: int, distinct_percent: float, value_bytes: int,
                    segment_mb: int) -> tuple[int, int]:
    """Write the log; returns (records, bytes) of its dirty part (every segment but the small active one)."""
    random_keys = random.Random(42)
    record_bytes = 14 + value_bytes + 8
    records = size_mb * 1024 * 1024 // record_bytes
    distinct = max(1, int(records * distinct_percent / 100))
    value = b"v" * value_bytes
    log = Log(directory / f"{TP.topic}-{TP.partition}", TP, config(segment_mb * 1024 * 1024))
    written = 0
    while log.size_in_bytes < size_mb * 1024 * 1024:
        builder = BatchBuilder()
        while builder.size_in_bytes() + record_bytes <= BATCH_BYTES:
            builder.append(value, key=b"key-%010d" % random_keys.randrange(distinct), timestamp=TIMESTAMP)
        log.append_as_leader(builder.build(), leader_epoch=0)
        written += builder.record_count
    log.config = config(log.active_segment.size)  # the next batch rolls: the whole log but it is dirty
    tail = BatchBuilder()
    tail.append(value, key=b"tail", timestamp=TIMESTAMP)
    log.append_as_leader(tail.build(), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    dirty = log.active_segment.base_offset
    size = log.size_in_bytes - log.active_segment.size
    log.flush()
    log.close()
    assert dirty == written
    return written, size


def clean(directory: Path, offset_map_bytes: int) -> dict[str, float]:
    """Clean the log in ``directory`` until nothing is left to clean; seconds (wall and CPU), records kept, size."""
    log = Log(directory / f"{TP.topic}-{TP.partition}", TP, config(1024 * 1024 * 1024))
    log.update_high_watermark(log.log_end_offset)
    manager = LogCleanerManager([directory], {TP: log})
    cleaner = Cleaner(OffsetMap(offset_map_bytes), lambda work: work(), lambda _job: None,
                      lambda: int(time.time() * 1000))
    wall, cpu = time.perf_counter(), time.process_time()
    passes = 0
    while (job := manager.grab_dirtiest(int(time.time() * 1000))) is not None:
        end, _stats = cleaner.clean(job)
        manager.done_cleaning(job, end)
        passes += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    kept = sum(h.record_count for s in log.segments[:-1] for h in s.headers())
    result = {"wall": wall, "cpu": cpu, "kept": kept, "size": log.size_in_bytes - log.active_segment.size,
              "passes": passes}
    log.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024, help="dirty log to clean (MiB)")
    parser.add_argument("--distinct", type=float, default=10.0, help="distinct keys, in percent of the records")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--segment-mb", type=int, default=128, help="segment.bytes (MiB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="minikafka-cleaner-bench-", dir=args.dir))
    offset_map_bytes = CleanerConfig().offset_map_bytes
    results = []
    try:
        started = time.perf_counter()
        records, size = write_dirty_log(work / "dirty", args.size_mb, args.distinct, args.value_bytes,
                                        args.segment_mb)
        mb = size / 1e6
        print(f"dirty log: {records} records ({args.distinct:g}% distinct keys, {args.value_bytes}-byte values), "
              f"{mb:.0f} MB in segments of {args.segment_mb} MiB (written in {time.perf_counter() - started:.1f} s)",
              flush=True)
        for run in range(1, args.runs + 1):
            copy = work / f"run-{run}"
            shutil.copytree(work / "dirty", copy)
            os.sync()  # the copy's writeback is not the cleaner's: it would throttle the cleaned segments' writes
            result = clean(copy, offset_map_bytes)
            shutil.rmtree(copy)
            results.append({"wall": mb / result["wall"], "cpu": mb / result["cpu"]})
            print(f"run {run}: {mb:.0f} MB cleaned in {result['wall']:.1f} s ({result['passes']:.0f} passes): "
                  f"{results[-1]['wall']:.1f} MB/s, {results[-1]['cpu']:.1f} MB/s of CPU time; "
                  f"{records} records to {result['kept']:.0f}, {mb:.0f} MB to {result['size'] / 1e6:.1f} MB",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(r[name] for r in results) for name in results[0]}
    print(f"median of {len(results)} runs ({mb:.0f} MB, {args.distinct:g}% distinct keys): cleaner "
          f"{median['wall']:.1f} MB/s, {median['cpu']:.1f} MB/s of CPU time (one core)")


if __name__ == "__main__":
    main()
