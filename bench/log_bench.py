"""Log append/read throughput against plain sequential file writes of the same bytes.

Appends ``--size-mb`` of 16 KiB batches (100-byte records) to a minikafka log, fsyncs, reads it
all back, and in the same run writes the same bytes to a plain file with ``os.write`` and fsyncs.
A warm-up write comes first; runs alternate which of the two writes goes first.
Each run prints MB/s for raw writes, log appends and log reads, and the ratio append/raw; the
last line gives the medians over ``--runs`` runs.

    python -m bench.log_bench --size-mb 1024 --runs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from broker.log.config import LogConfig
from broker.log.log import Log
from client.progress import Progress
from protocol.records import BatchBuilder, iter_batches
from protocol.topic_partition import TopicPartition

BATCH_BYTES = 16 * 1024
VALUE = b"v" * 100


def make_batch() -> bytes:
    """A batch of 100-byte records just under 16 KiB."""
    builder = BatchBuilder()
    while builder.size_in_bytes() + len(VALUE) + 16 <= BATCH_BYTES:
        builder.append(VALUE, timestamp=1_700_000_000_000)
    return builder.build()


def raw_write(path: Path, data: bytes, count: int) -> tuple[float, float]:
    """Seconds to write ``count`` copies, and seconds including the final fsync."""
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(count):
            os.write(fd, data)
        written = time.perf_counter()
        os.fsync(fd)
    finally:
        os.close(fd)
    return written - start, time.perf_counter() - start


def log_append(directory: Path, data: bytes, count: int) -> tuple[float, float, Log]:
    """Seconds to append ``count`` copies as leader, seconds including the flush, and the log."""
    log = Log(directory, TopicPartition("bench", 0), LogConfig())
    start = time.perf_counter()
    for _ in range(count):
        log.append_as_leader(data, leader_epoch=0)
    appended = time.perf_counter()
    log.flush()
    return appended - start, time.perf_counter() - start, log


def log_read(log: Log) -> tuple[float, int]:
    start = time.perf_counter()
    offset, total = 0, 0
    end = log.log_end_offset
    while offset < end:
        chunk = log.read(offset, 1024 * 1024)
        total += len(chunk)
        offset = _next_offset(chunk)
    return time.perf_counter() - start, total


def _next_offset(chunk: bytes) -> int:
    *_, (_position, last) = iter_batches(chunk)
    return last.next_offset


def one_run(work: Path, data: bytes, count: int, log_first: bool) -> dict[str, float]:
    """MB/s of one run: raw and log, write-only and with the final fsync, and the read-back.
    Runs alternate which of the two writes first, so neither always gets the warmer page cache."""
    megabytes = len(data) * count / 1e6

    def raw() -> tuple[float, float]:
        timings = raw_write(work / "raw.bin", data, count)
        (work / "raw.bin").unlink()
        return timings

    if log_first:
        append_only, append_total, log = log_append(work / "bench-0", data, count)
        raw_only, raw_total = raw()
    else:
        raw_only, raw_total = raw()
        append_only, append_total, log = log_append(work / "bench-0", data, count)
    read_seconds, read_bytes = log_read(log)
    assert read_bytes == len(data) * count
    log.close()
    shutil.rmtree(work / "bench-0")
    rates = {"raw": raw_total, "append": append_total, "raw_nofsync": raw_only, "append_nofsync": append_only,
             "read": read_seconds}
    return {name: megabytes / seconds for name, seconds in rates.items()}


def describe(rates: dict[str, float]) -> str:
    return (f"raw write {rates['raw']:.0f} MB/s, log append {rates['append']:.0f} MB/s (with fsync; "
            f"before it: raw {rates['raw_nofsync']:.0f}, log {rates['append_nofsync']:.0f}), "
            f"log read {rates['read']:.0f} MB/s, append/raw {rates['append'] / rates['raw']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024, help="bytes appended per run (MiB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    data = make_batch()
    count = args.size_mb * 1024 * 1024 // len(data)
    work = Path(tempfile.mkdtemp(prefix="minikafka-bench-", dir=args.dir))
    results: list[dict[str, float]] = []
    try:
        raw_write(work / "warm-up.bin", data, count)  # the first touch of fresh memory is slow on a VM
        (work / "warm-up.bin").unlink()
        progress = Progress()
        for run in range(1, args.runs + 1):
            with progress.ticking(f"bench-log: run {run} of {args.runs}"):
                results.append(one_run(work, data, count, log_first=run % 2 == 0))
            print(f"run {run}: {describe(results[-1])}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(r[name] for r in results) for name in results[0]}
    ratio = statistics.median(r["append"] / r["raw"] for r in results)
    print(f"median of {len(results)} runs ({count} batches of {len(data)} bytes, {len(data) * count / 1e6:.0f} MB): "
          f"{describe(median).rsplit(', append/raw', 1)[0]}, append/raw {ratio:.2f}")


if __name__ == "__main__":
    main()
