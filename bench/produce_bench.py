"""Produce and consume throughput of a 3-broker cluster, with acknowledgement latency.

Each run creates two fresh topics (3 partitions, replication factor 3), produces 100-byte values (or, with
``--value-size MIN-MAX``, values of sizes spread uniformly between two) to one with acks=all (idempotent, the
producer's default) and to the other with acks=1 (not idempotent: acks=1 turns the default off, as in Kafka's
producer), then reads both back from the beginning with one consumer. For each
produce it prints records/s, MB/s (value bytes, 10^6 bytes) and the p50/p99 acknowledgement latency: the time
from calling send() to its future resolving, sampled on every 100th record. The producer is driven as fast as it
takes records (as Kafka's producer-perf-test at full speed), so the latency includes the time a record waits for
its batch to fill or linger, and for buffer space when the buffer is full. The consume reads everything produced
in the run and checks the count. Each phase also shows the CPU time the benchmark's own process (the client) spent per
record: the client is what saturates a core here, and on a shared machine that figure moves less than the rates.
The last lines give the median of every figure over ``--runs`` runs.

Without ``--bootstrap-server`` the benchmark starts its own cluster (ZooKeeper and 3 brokers on 127.0.0.1, in
a temporary directory) and stops it afterwards. Each produce is bounded by ``--seconds`` (default 10) or by
``--records``; a consume fails once 30 s pass without a record.

    python -m bench.produce_bench --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import uvloop

from client.admin import Admin, NewTopic
from client.cluster import ClusterState, cluster_down, cluster_up
from client.consumer import Consumer
from client.producer import Producer
from client.progress import Progress

PARTITIONS = 3
REPLICATION_FACTOR = 3
BROKERS = 3
VALUE_SIZE = 100  # bytes; --value-size MIN-MAX sends values of sizes spread between two instead
VALUE_CYCLE = 1000  # values of spread sizes sent in turn
ACKS = ("all", "1")
MODES = {"all": "idempotent", "1": "not idempotent"}  # the producer's default with each acks setting
CONSUME_STALL_S = 30.0  # a consume fails once this long passes without a record (not on its total time)
# Latency is sampled (and the clock read) once per this many records: a done callback on every record's future
# would cost the client about as much CPU as the producer's own work per record (asyncio schedules each
# callback), and slow down what is measured.
LATENCY_SAMPLE_EVERY = 100


@dataclass(slots=True)
class PhaseResult:
    """One produce or consume phase: records and value bytes moved, the time it took, and the CPU time the
    benchmark's own process (the client) used meanwhile."""

    records: int
    value_bytes: int
    seconds: float
    cpu_seconds: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / 1e6 / self.seconds

    @property
    def cpu_us_per_record(self) -> float:
        """Client CPU per record: what limits a run when the client has a core to itself, and steadier than the
        rates on a shared machine."""
        return self.cpu_seconds / self.records * 1e6


@dataclass(slots=True)
class ProduceResult(PhaseResult):
    """A produce phase, with the sampled acknowledgement latencies in seconds."""

    latencies: list[float] = field(default_factory=list)

    def latency_ms(self, quantile: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] * 1000


@dataclass(slots=True)
class RunResult:
    """One run: a produce per acks setting, then the consume of everything produced."""

    produce: dict[str, ProduceResult]
    consume: PhaseResult

    def figures(self) -> dict[str, float]:
        """Every reported figure by name (what the medians are taken over)."""
        figures: dict[str, float] = {}
        for phase, result in [*self.produce.items(), ("consume", self.consume)]:
            figures |= {
                f"{phase}.records_per_s": result.records_per_s,
                f"{phase}.mb_per_s": result.mb_per_s,
                f"{phase}.cpu_us": result.cpu_us_per_record,
            }
        for acks, result in self.produce.items():
            figures |= {f"{acks}.p50_ms": result.latency_ms(0.50), f"{acks}.p99_ms": result.latency_ms(0.99)}
        return figures


class _AckRecorder:
    """Collects acknowledgement latencies from the futures' done callbacks; remembers the first failure."""

    __slots__ = ("error", "latencies")

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.error: BaseException | None = None

    def acked(self, sent_at: float, future: asyncio.Future[Any]) -> None:
        if future.exception() is not None:
            self.error = self.error or future.exception()
        else:
            self.latencies.append(time.perf_counter() - sent_at)


def random_values(sizes: tuple[int, int], rng: random.Random) -> list[bytes]:
    """Random values to send in turn: one of sizes[0] bytes if both sizes are equal, else VALUE_CYCLE values of
    sizes between the two (inclusive), uniformly."""
    low, high = sizes
    count = 1 if low == high else VALUE_CYCLE
    return [rng.randbytes(rng.randint(low, high)) for _ in range(count)]


def cycled_bytes(values: list[bytes], records: int) -> int:
    """Value bytes of the first `records` of `values` sent over and over."""
    return records // len(values) * sum(map(len, values)) + sum(map(len, values[: records % len(values)]))


async def produce(bootstrap: str, topic: str, acks: str, values: list[bytes], seconds: float, max_records: int,
                  options: dict[str, int]) -> ProduceResult:
    """Send `values` in turn to `topic` as fast as the producer takes them, until `seconds` passed or
    `max_records` were sent, then flush. `options` are Producer settings. Raises if any record failed."""
    next_value = itertools.cycle(values).__next__
    recorder = _AckRecorder()
    acked = recorder.acked
    async with Producer(bootstrap, acks=acks, **options) as producer:
        await producer.send(topic, values[0])  # metadata and connections are ready before the clock starts
        await producer.flush()
        clock = time.perf_counter
        start, cpu_start = clock(), time.process_time()
        deadline = start + seconds
        sent = 0
        while sent < max_records and clock() < deadline:
            burst = min(LATENCY_SAMPLE_EVERY, max_records - sent)
            sent_at = clock()
            (await producer.send(topic, next_value())).add_done_callback(partial(acked, sent_at))
            for _ in range(burst - 1):
                await producer.send(topic, next_value())
            sent += burst
        await producer.flush()
        elapsed, cpu = clock() - start, time.process_time() - cpu_start
    if recorder.error is not None:
        raise RuntimeError(f"producing to {topic} with acks={acks} failed: {recorder.error}")
    return ProduceResult(sent, cycled_bytes(values, sent), elapsed, cpu, recorder.latencies)


async def consume(bootstrap: str, topics: list[str], expected: int) -> PhaseResult:
    """Read every partition of `topics` from the beginning until `expected` records arrived."""
    async with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([(topic, p) for topic in topics for p in range(PARTITIONS)])
        await consumer.seek_to_beginning()
        records = value_bytes = 0
        start, cpu_start = time.perf_counter(), time.process_time()
        deadline = start + CONSUME_STALL_S
        while records < expected:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"read {records} of {expected} records, then none for {CONSUME_STALL_S:.0f} s")
            batch = await consumer.poll(timeout_ms=1000)
            if batch:
                deadline = time.perf_counter() + CONSUME_STALL_S
            records += len(batch)
            value_bytes += sum(len(r.value or b"") for r in batch)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if records != expected:
        raise RuntimeError(f"read {records} records, {expected} were produced")
    return PhaseResult(records, value_bytes, elapsed, cpu)


async def create_topics(bootstrap: str, names: list[str]) -> None:
    async with Admin(bootstrap) as admin:
        await admin.create_topics(
            [NewTopic(name, num_partitions=PARTITIONS, replication_factor=REPLICATION_FACTOR) for name in names]
        )


async def one_run(bootstrap: str, values: list[bytes], seconds: float, max_records: int,
                  options: dict[str, int]) -> RunResult:
    prefix = f"produce-bench-{uuid.uuid4().hex[:8]}"
    topics = {acks: f"{prefix}-acks-{acks}" for acks in ACKS}
    await create_topics(bootstrap, list(topics.values()))
    results = {acks: await produce(bootstrap, topic, acks, values, seconds, max_records, options)
               for acks, topic in topics.items()}
    produced = sum(r.records for r in results.values()) + len(results)  # + the record sent before each clock start
    return RunResult(results, await consume(bootstrap, list(topics.values()), produced))


def describe(figures: dict[str, float]) -> Iterator[str]:
    """The lines printed for a run's (or the median's) figures."""
    def rates(phase: str) -> str:
        return (f"{figures[f'{phase}.records_per_s']:>9,.0f} records/s {figures[f'{phase}.mb_per_s']:6.1f} MB/s  "
                f"client CPU {figures[f'{phase}.cpu_us']:4.1f} us/record")

    for acks in ACKS:
        yield (f"  produce acks={acks:<3} {MODES[acks]:<14} {rates(acks)}  "
               f"latency p50 {figures[f'{acks}.p50_ms']:6.1f} ms p99 {figures[f'{acks}.p99_ms']:6.1f} ms")
    yield f"  consume {'':<23} {rates('consume')}"


@asynccontextmanager
async def local_cluster(parent: Path | None, overrides: dict[str, str] | None = None,
                        security: str = "plaintext") -> AsyncIterator[ClusterState]:
    """Start ZooKeeper and 3 brokers in a temporary directory (under `parent`), with `overrides` in their
    server.properties and a `security` listener beside the plaintext one (`cluster up --security`); yield the
    cluster; stop it and remove the directory after."""
    directory = Path(tempfile.mkdtemp(prefix="minikafka-bench-", dir=parent))
    try:
        state = await cluster_up(directory, brokers=BROKERS, overrides=overrides, security=security)
        try:
            yield state
        finally:
            await cluster_down(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


async def run(args: argparse.Namespace) -> None:
    options = {"batch_size": args.batch_size, "linger_ms": args.linger_ms, "buffer_memory": args.buffer_memory}
    print(f"producer: {', '.join(f'{name} {value}' for name, value in options.items())}", flush=True)
    values = random_values(args.value_size, random.Random(0))
    progress = Progress()

    async def runs(bootstrap: str) -> list[RunResult]:
        with progress.ticking("bench-produce: warm-up"):
            await one_run(bootstrap, values, min(args.seconds, 1.0), min(args.records, 20_000), options)
        results = []
        for number in range(1, args.runs + 1):
            with progress.ticking(f"bench-produce: run {number} of {args.runs}"):
                results.append(await one_run(bootstrap, values, args.seconds, args.records, options))
            print(f"run {number}:", *describe(results[-1].figures()), sep="\n", flush=True)
        return results

    if args.bootstrap_server:
        results = await runs(args.bootstrap_server)
    else:
        async with local_cluster(args.dir) as state:
            print(f"started a local cluster of {BROKERS} brokers at {state.bootstrap_servers}", flush=True)
            results = await runs(state.bootstrap_servers)
    all_figures = [r.figures() for r in results]
    median = {name: statistics.median(f[name] for f in all_figures) for name in all_figures[0]}
    print(f"median of {len(results)} runs ({PARTITIONS} partitions, RF {REPLICATION_FACTOR}, "
          f"{describe_sizes(args.value_size)} values):", *describe(median), sep="\n")


def parse_sizes(text: str) -> tuple[int, int]:
    """"SIZE" or "MIN-MAX" (bytes) as (min, max)."""
    low, _, high = text.partition("-")
    sizes = (int(low), int(high or low))
    if not 0 <= sizes[0] <= sizes[1]:
        raise ValueError(f"value sizes must be SIZE or MIN-MAX with 0 <= MIN <= MAX, got {text!r}")
    return sizes


def describe_sizes(sizes: tuple[int, int]) -> str:
    return f"{sizes[0]}-byte" if sizes[0] == sizes[1] else f"{sizes[0]}-{sizes[1]}-byte"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="an existing cluster (default: start one)")
    parser.add_argument("--runs", type=int, default=3)
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--seconds", type=float, help="duration of each produce (default 10)")
    limit.add_argument("--records", type=int, help="records of each produce (instead of a duration)")
    parser.add_argument("--batch-size", type=int, default=256 * 1024, help="producer batch_size (default 256 KiB)")
    parser.add_argument("--linger-ms", type=int, default=5, help="producer linger_ms (default 5)")
    parser.add_argument("--buffer-memory", type=int, default=4 * 1024 * 1024,
                        help="producer buffer_memory (default 4 MiB)")
    parser.add_argument("--value-size", type=parse_sizes, default=(VALUE_SIZE, VALUE_SIZE), metavar="SIZE|MIN-MAX",
                        help=f"bytes per value, or a range of sizes picked uniformly (default {VALUE_SIZE})")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the local cluster's temporary directory")
    args = parser.parse_args()
    if args.records is None:
        args.seconds, args.records = args.seconds or 10.0, sys.maxsize
    else:
        args.seconds = math.inf
    if args.runs < 1 or args.seconds <= 0 or args.records < 1:
        parser.error("--runs, --seconds and --records must be positive")
    uvloop.run(run(args))


if __name__ == "__main__":
    main()
