"""The verifier's speed on a cluster's worth of segment data, against a plain sequential read of the same files.

It starts a cluster (ZooKeeper and 3 brokers on 127.0.0.1, in a temporary directory), creates a topic (3
partitions, replication factor 3, 128 MiB segments, so large segments are read as several byte ranges) and
produces ``--size-mb`` MB of segment data in all (a third on each broker: 1000-byte values, acks=all), then stops
the cluster. By default 2,040 MB (the target asks for at least 500 MB): on the 2-core VM, every verification costs
about 0.5 s whatever its size (printed apart, below), longer than the plain read of 505 MB (0.25-0.37 s), so at that
size the ratio measured mostly that cost; at 2 GB it measures reading and checking the data. ``--size-mb 510``
measures the smaller case.

It starts a Spark session on local[*] and reports how long that took (start-up, excluded from the rest), then two
figures also excluded from the runs: the first verification of the data (the JVM loading classes
and compiling the generated code of every stage: a warm-up paid once per session), and the median of 3
verifications of 3 log directories without partitions (what every verification costs whatever its size: the Spark
jobs, their planning and their tasks). It then reads the files once from disk (its rate is printed, apart from the
runs'): on the 2-core VM, the first such read after the data was written ran at 580-920 MB/s and the later ones
at 960-2,000 MB/s, so run 1's ratio came out twice the others'. Each run then:

- cold: drops the segment files from the page cache (fsync, then posix_fadvise DONTNEED: these files only),
  reads them all sequentially once (1 MiB reads, nothing else), drops them again and verifies them;
- warm: reads them again, then verifies them again, both from the page cache;

and prints MB/s of the plain read and of the verification (segment bytes / seconds, 10^6 bytes) and their ratio,
for both. The last line gives the median of each figure over ``--runs`` runs. The target is a ratio of at least
0.5, start-up excluded.

    python -m bench.verify_bench --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from broker.log.checkpoint import write_meta_properties
from client.admin import Admin, NewTopic
from client.cluster import ClusterState, cluster_down, cluster_up
from client.producer import Producer
from client.progress import Progress

BROKERS = 3
PARTITIONS = 3
VALUE_SIZE = 1000
SEGMENT_BYTES = 128 * 1024 * 1024
READ_BYTES = 1024 * 1024
TOPIC = "verify-bench"


@dataclass(frozen=True)
class Run:
    cold_read_s: float
    cold_verify_s: float
    warm_read_s: float
    warm_verify_s: float


async def _fill(state: ClusterState, total_bytes: int) -> None:
    """Produce until the topic holds about `total_bytes` of segment data over all replicas."""
    async with Admin(state.bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(TOPIC, PARTITIONS, BROKERS, {"segment.bytes": str(SEGMENT_BYTES)})])
    value = os.urandom(VALUE_SIZE // 2).hex().encode()
    records = total_bytes // BROKERS // (VALUE_SIZE + 20)
    async with Producer(state.bootstrap_servers, acks="all", linger_ms=10, batch_size=256 * 1024) as producer:
        for _ in range(records):
            await producer.send(TOPIC, value)
        await producer.flush()


def segment_files(log_dirs: list[Path]) -> list[Path]:
    return sorted(p for d in log_dirs for p in d.glob(f"{TOPIC}-*/*.log"))


def drop_from_cache(files: list[Path]) -> None:
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def plain_read(files: list[Path]) -> float:
    """Seconds to read every file once, sequentially."""
    buffer = bytearray(READ_BYTES)
    started = time.perf_counter()
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass
    return time.perf_counter() - started


def timed_verify(log_dirs: list[Path], spark: object) -> float:
    from verifier import verify

    started = time.perf_counter()
    report = verify(log_dirs, spark=spark)
    seconds = time.perf_counter() - started
    if not report.consistent:
        raise SystemExit(f"the benchmark's data does not verify: {report.violations[:3]}")
    return seconds


def fixed_cost(root: Path, spark: object, times: int = 3) -> float:
    """The median seconds of verifying 3 log directories that hold no partition."""
    empty = []
    for broker in range(1, BROKERS + 1):
        directory = root / f"empty-{broker}"
        directory.mkdir()
        write_meta_properties(directory, broker)
        empty.append(directory)
    return statistics.median(timed_verify(empty, spark) for _ in range(times))


def one_run(log_dirs: list[Path], files: list[Path], spark: object) -> Run:
    drop_from_cache(files)
    cold_read = plain_read(files)
    drop_from_cache(files)
    cold_verify = timed_verify(log_dirs, spark)
    warm_read = plain_read(files)
    warm_verify = timed_verify(log_dirs, spark)
    return Run(cold_read, cold_verify, warm_read, warm_verify)


def figures(run: Run, size_mb: float) -> dict[str, float]:
    """A run's figures: per cache state, the MB/s of the read and of the verification and their ratio (taken within
    the run)."""
    return {"cold_read": size_mb / run.cold_read_s, "cold_verify": size_mb / run.cold_verify_s,
            "cold_ratio": run.cold_read_s / run.cold_verify_s,
            "warm_read": size_mb / run.warm_read_s, "warm_verify": size_mb / run.warm_verify_s,
            "warm_ratio": run.warm_read_s / run.warm_verify_s}


def _line(name: str, f: dict[str, float]) -> str:
    return (f"{name}: cold read {f['cold_read']:,.0f} MB/s, verify "
            f"{f['cold_verify']:,.1f} MB/s, ratio {f['cold_ratio']:.2f}; warm read {f['warm_read']:,.0f} MB/s, "
            f"verify {f['warm_verify']:,.1f} MB/s, ratio {f['warm_ratio']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=2040, help="segment data over all brokers [2040]")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where the cluster's data goes [a temporary directory]")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="minikafka-verify-bench-", dir=args.dir))
    try:
        directory = root / "cluster"
        started = time.perf_counter()
        state = asyncio.run(cluster_up(directory, brokers=BROKERS))
        try:
            asyncio.run(_fill(state, int(args.size_mb * 1e6)))
        finally:
            asyncio.run(cluster_down(directory))
        log_dirs = [Path(b.log_dir) for b in state.brokers]
        files = segment_files(log_dirs)
        size_mb = sum(p.stat().st_size for p in files) / 1e6
        print(f"data: {BROKERS} brokers, {PARTITIONS} partitions x RF {BROKERS}, {size_mb:,.0f} MB in {len(files)} "
              f"segment files (written in {time.perf_counter() - started:.0f} s)", flush=True)
        from verifier.session import get_session

        spark, startup_s = get_session()
        print(f"Spark session start-up (local[*]): {startup_s:.1f} s", flush=True)
        print(f"first verification (the JVM's warm-up): {timed_verify(log_dirs, spark):.1f} s; every verification's "
              f"fixed cost (3 log directories without partitions): {fixed_cost(root, spark):.2f} s", flush=True)
        drop_from_cache(files)
        first_read_mb_s = size_mb / plain_read(files)
        print(f"first read of the files from disk (before the runs, not counted): {first_read_mb_s:,.0f} MB/s",
              flush=True)
        runs = []
        try:
            progress = Progress()
            for number in range(1, args.runs + 1):
                with progress.ticking(f"bench-verify: run {number} of {args.runs}"):
                    runs.append(figures(one_run(log_dirs, files, spark), size_mb))
                print(_line(f"run {number}", runs[-1]), flush=True)
        finally:
            spark.stop()
        print(_line(f"median of {args.runs} runs", {key: statistics.median(r[key] for r in runs) for key in runs[0]}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
