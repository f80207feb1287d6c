"""The brokers driven by Kafka's own C client (librdkafka, through confluent-kafka) and, in the same run, by
minikafka's producer and consumer.

A 3-broker cluster (started here unless --bootstrap-server is given), topics of 3 partitions with replication
factor 3, 100-byte values. Per run and per client: produce with acks=all, then with acks=1, each to a topic of its
own as fast as the client takes records for --seconds; then read everything the client produced back from the
beginning. librdkafka is set as the brief for the figures says: linger.ms 5, batch.size 1 MB, no compression.
Each phase reports records/s, MB/s (value bytes, 10^6), the p50/p99 acknowledgement latency (send to delivery
report, sampled every 100th record) and the CPU each process used as a share of one core: the benchmark's own
process (the client: librdkafka's threads included) and each broker (from /proc). The last lines are the medians
over --runs runs.

The cluster started here has a SASL_SSL listener beside the plaintext one (`cluster up --security sasl_ssl`; the
brokers replicate over the plaintext one): each run also produces with librdkafka and acks=all over SASL_SSL with
SCRAM-SHA-512, reported with its ratio to the plaintext acks=all rate of the same run, and times the opening of
CONNECTS authenticated connections by minikafka's client (TCP, TLS handshake, SaslHandshake and SCRAM's two
SaslAuthenticate round trips), reporting the median.

    python -m bench.kafka_client_bench --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench.produce_bench import (
    ACKS,
    CONSUME_STALL_S,
    LATENCY_SAMPLE_EVERY,
    PARTITIONS,
    REPLICATION_FACTOR,
    VALUE_SIZE,
    create_topics,
    cycled_bytes,
    local_cluster,
)
from bench.produce_bench import consume as minikafka_consume
from bench.produce_bench import produce as minikafka_produce
from broker.config import parse_properties
from client.client_configs import read_config_file, security_config
from client.cluster import ClusterState, load_cluster
from client.cluster_security import CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES
from client.progress import Progress
from transport.connection import BrokerConnection

CLIENTS = ("librdkafka", "minikafka")
LIBRDKAFKA = {"linger.ms": 5, "batch.size": 1_000_000, "compression.type": "none",
              "queue.buffering.max.messages": 1_000_000}
#: Not idempotent, as librdkafka by default (enable.idempotence=false), so that both clients do the same work.
MINIKAFKA = {"linger_ms": 5, "batch_size": 1_000_000, "buffer_memory": 16 * 1024 * 1024, "enable_idempotence": False}
_TICKS = os.sysconf("SC_CLK_TCK")
#: The secured phase's name in the figures, and how many authenticated connections are timed per run.
SECURED = "librdkafka_sasl_ssl"
CONNECTS = 100


# ------------------------------------------------------------------------------------------------ CPU accounting


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(slots=True)
class Phase:
    """One produce or consume: records and value bytes moved, wall time, CPU shares of one core by process
    ("client", "broker-N"), and the sampled acknowledgement latencies in seconds (produce only)."""

    records: int
    value_bytes: int
    seconds: float
    cpu_share: dict[str, float]
    latencies: list[float] = field(default_factory=list)

    def figures(self, prefix: str) -> dict[str, float]:
        figures = {f"{prefix}.records_per_s": self.records / self.seconds,
                   f"{prefix}.mb_per_s": self.value_bytes / 1e6 / self.seconds}
        if self.latencies:
            ordered = sorted(self.latencies)
            for name, quantile in (("p50_ms", 0.5), ("p99_ms", 0.99)):
                figures[f"{prefix}.{name}"] = ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] * 1000
        figures |= {f"{prefix}.cpu.{who}": share for who, share in self.cpu_share.items()}
        return figures


class CpuMeter:
    """CPU shares of the benchmark's process and of every broker over a phase."""

    def __init__(self, brokers: dict[str, int]) -> None:
        self._brokers = brokers

    def measure(self, work: Callable[[], tuple[int, int, list[float]]]) -> Phase:
        """Run `work` (returning records, value bytes, latencies) and account the CPU it and the brokers used."""
        brokers_before = {name: process_cpu_seconds(pid) for name, pid in self._brokers.items()}
        start, client_before = time.perf_counter(), time.process_time()
        records, value_bytes, latencies = work()
        seconds, client = time.perf_counter() - start, time.process_time() - client_before
        shares = {"client": client / seconds}
        shares |= {name: (process_cpu_seconds(pid) - brokers_before[name]) / seconds
                   for name, pid in self._brokers.items()}
        return Phase(records, value_bytes, seconds, shares, latencies)


# ------------------------------------------------------------------------------------------------ librdkafka


def librdkafka_produce(bootstrap: str, topic: str, acks: str, values: list[bytes], seconds: float,
                       settings: dict[str, Any] = LIBRDKAFKA) -> tuple[int, int, list]:
    """Produce `values` in turn as fast as librdkafka takes them for `seconds`, then flush; (records, bytes,
    latencies). `settings` are librdkafka's."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, **settings})
    next_value = itertools.cycle(values).__next__
    producer.produce(topic, values[0])  # metadata and connections before the clock starts
    producer.flush(30)
    latencies: list[float] = []
    errors: list[Any] = []

    def sampled(sent_at: float) -> Callable[[Any, Any], None]:
        return lambda error, _message: errors.append(error) if error else latencies.append(
            time.perf_counter() - sent_at)

    produce, poll, clock = producer.produce, producer.poll, time.perf_counter
    deadline = clock() + seconds
    sent = 0
    while clock() < deadline:
        produce(topic, next_value(), on_delivery=sampled(clock()))
        for _ in range(LATENCY_SAMPLE_EVERY - 1):
            value = next_value()
            while True:
                try:
                    produce(topic, value)
                    break
                except BufferError:  # librdkafka's queue is full: serve delivery reports until there is room
                    poll(0.001)
        sent += LATENCY_SAMPLE_EVERY
        poll(0)
    remaining = producer.flush(60)
    if remaining or errors:
        raise RuntimeError(f"librdkafka: {remaining} records not delivered, errors {errors[:3]}")
    return sent, cycled_bytes(values, sent), latencies


def librdkafka_consume(bootstrap: str, topics: list[str], expected: int) -> tuple[int, int, list]:
    """Read every partition of `topics` from the beginning until `expected` records arrived."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for topic in topics for p in range(PARTITIONS)])
    read = librdkafka_read_all(consumer, expected)
    if read.records != expected:
        raise RuntimeError(f"librdkafka read {read.records} records, {expected} were produced")
    return read.records, read.value_bytes, []


@dataclass(slots=True)
class Read:
    """What a consumer read: records, value bytes, and the clock (perf_counter) at the first and the last."""

    records: int = 0
    value_bytes: int = 0
    first: float = 0.0
    last: float = 0.0


def librdkafka_read_all(consumer: Consumer, expected: int) -> Read:
    """Consume until `expected` records arrived (an error if none came for CONSUME_STALL_S), then close."""
    read = Read()
    deadline = time.perf_counter() + CONSUME_STALL_S
    try:
        while read.records < expected:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"librdkafka read {read.records} of {expected} records, then none for "
                                   f"{CONSUME_STALL_S:.0f} s")
            messages = consumer.consume(10_000, 0.5)
            if messages:
                deadline = time.perf_counter() + CONSUME_STALL_S
                read.first = read.first or time.perf_counter()
            for message in messages:
                if message.error() is None:
                    read.records += 1
                    read.value_bytes += len(message.value())
        read.last = time.perf_counter()
    finally:
        consumer.close()
    return read



# ------------------------------------------------------------------------------------------------ runs


@dataclass(frozen=True)
class Secured:
    """A cluster's SASL_SSL listeners and the settings of its directory to reach them."""

    bootstrap: str
    librdkafka: dict[str, str]
    client: dict[str, Any]
    address: tuple[str, int]

    @staticmethod
    def of(state: ClusterState) -> Secured | None:
        """The cluster's, if `cluster up --security sasl_ssl` made it."""
        librdkafka = state.directory / LIBRDKAFKA_PROPERTIES
        if not librdkafka.exists():
            return None
        settings = parse_properties(librdkafka.read_text())
        if settings.get("security.protocol") != "sasl_ssl":
            return None
        broker = state.brokers[0]
        return Secured(state.kafka_bootstrap_servers, settings,
                       security_config(read_config_file(state.directory / CLIENT_PROPERTIES)),
                       (broker.host, broker.secure_port))


async def connect_seconds(secured: Secured, count: int) -> list[float]:
    """The time minikafka's client takes to open each of `count` authenticated connections, one after another."""
    times = []
    for _ in range(count):
        connection = BrokerConnection(*secured.address, **secured.client)
        start = time.perf_counter()
        await connection.connect()
        times.append(time.perf_counter() - start)
        await connection.close()
    return times


async def secured_run(bootstrap: str, secured: Secured, meter: CpuMeter, value: bytes, seconds: float,
                      figures: dict[str, float]) -> dict[str, float]:
    """librdkafka's acks=all over SASL_SSL, its ratio to the plaintext acks=all in `figures`, and the median time
    to open an authenticated connection."""
    topic = f"kafka-bench-sasl-ssl-{uuid.uuid4().hex[:8]}"
    await create_topics(bootstrap, [topic])
    phase = meter.measure(lambda: librdkafka_produce(secured.bootstrap, topic, "all", [value], seconds,
                                                     {**LIBRDKAFKA, **secured.librdkafka}))
    secured_figures = phase.figures(f"{SECURED}.all")
    return {**secured_figures,
            f"{SECURED}.ratio": secured_figures[f"{SECURED}.all.mb_per_s"] / figures["librdkafka.all.mb_per_s"],
            f"{SECURED}.connect_ms": statistics.median(await connect_seconds(secured, CONNECTS)) * 1000}


async def one_run(bootstrap: str, meter: CpuMeter, value: bytes, seconds: float,
                  secured: Secured | None = None) -> dict[str, float]:
    """Both clients, both acks, and their consumes (and the SASL_SSL run where `secured`); every figure by name."""
    figures: dict[str, float] = {}
    for client in CLIENTS:
        topics = {acks: f"kafka-bench-{client}-{acks}-{uuid.uuid4().hex[:8]}" for acks in ACKS}
        await create_topics(bootstrap, list(topics.values()))
        produced = 0
        for acks, topic in topics.items():
            if client == "librdkafka":
                phase = meter.measure(lambda t=topic, a=acks: librdkafka_produce(bootstrap, t, a, [value], seconds))
            else:
                phase = await measure_async(meter, minikafka_produce(bootstrap, topic, acks, [value], seconds,
                                                                     2**62, MINIKAFKA))
            produced += phase.records + 1  # + the record sent before the clock started
            figures |= phase.figures(f"{client}.{acks}")
        if client == "librdkafka":
            names = list(topics.values())
            phase = meter.measure(lambda n=names, e=produced: librdkafka_consume(bootstrap, n, e))
        else:
            phase = await measure_async(meter, minikafka_consume(bootstrap, list(topics.values()), produced))
        figures |= phase.figures(f"{client}.consume")
    if secured is not None:
        figures |= await secured_run(bootstrap, secured, meter, value, seconds, figures)
    return figures


async def measure_async(meter: CpuMeter, work: Any) -> Phase:
    """CpuMeter.measure for minikafka's async clients: the coroutine runs on a loop of its own in this thread."""
    def run() -> tuple[int, int, list[float]]:
        result = uvloop.run(work)
        return result.records, result.value_bytes, getattr(result, "latencies", [])

    return await asyncio.to_thread(meter.measure, run)


def describe(figures: dict[str, float], brokers: list[str]) -> Iterator[str]:
    for client in CLIENTS:
        for phase in (*(f"acks={acks}" for acks in ACKS), "consume"):
            prefix = f"{client}.{phase.removeprefix('acks=')}"
            line = (f"  {client:<10} {phase:<8} {figures[f'{prefix}.records_per_s']:>10,.0f} records/s "
                    f"{figures[f'{prefix}.mb_per_s']:6.1f} MB/s")
            if f"{prefix}.p50_ms" in figures:
                line += f"  latency p50 {figures[f'{prefix}.p50_ms']:6.1f} ms p99 {figures[f'{prefix}.p99_ms']:6.1f} ms"
            yield f"{line}  CPU {_cpu_shares(figures, prefix, brokers)}"
    if f"{SECURED}.ratio" in figures:
        prefix = f"{SECURED}.all"
        yield (f"  librdkafka acks=all over SASL_SSL (SCRAM-SHA-512) {figures[f'{prefix}.records_per_s']:>10,.0f} "
               f"records/s {figures[f'{prefix}.mb_per_s']:6.1f} MB/s  {figures[f'{SECURED}.ratio']:.2f}x plaintext"
               f"  latency p50 {figures[f'{prefix}.p50_ms']:6.1f} ms p99 {figures[f'{prefix}.p99_ms']:6.1f} ms"
               f"  CPU {_cpu_shares(figures, prefix, brokers)}")
        yield (f"  authenticated connection (TCP, TLS, SCRAM-SHA-512) median of {CONNECTS}: "
               f"{figures[f'{SECURED}.connect_ms']:.1f} ms")


def _cpu_shares(figures: dict[str, float], prefix: str, brokers: list[str]) -> str:
    return " ".join(f"{who} {figures[f'{prefix}.cpu.{who}'] * 100:3.0f}%" for who in ["client", *brokers])


async def run(args: argparse.Namespace) -> None:
    value = random.Random(0).randbytes(VALUE_SIZE)
    print(f"librdkafka: {LIBRDKAFKA}; minikafka: {MINIKAFKA}", flush=True)

    async def runs(state: ClusterState) -> None:
        brokers = {f"broker-{b.id}": b.pid for b in state.brokers}
        meter = CpuMeter(brokers)
        secured = Secured.of(state)
        await repeated_runs(args, lambda seconds: one_run(state.bootstrap_servers, meter, value, seconds, secured),
                            lambda figures: describe(figures, list(brokers)), 1.0,
                            f"({PARTITIONS} partitions, RF {REPLICATION_FACTOR}, {VALUE_SIZE}-byte values; CPU as a "
                            "share of one core)")

    await on_cluster(args, runs, security="sasl_ssl")


# ------------------------------------------------------------------------------------------------ shared by the client
# benchmarks (this one and bench.compression_bench)


async def repeated_runs(args: argparse.Namespace, one_run: Callable[[float], Awaitable[dict[str, float]]],
                        describe_figures: Callable[[dict[str, float]], Iterator[str]], warm_up_seconds: float,
                        heading: str) -> None:
    """A warm-up run (at most ``warm_up_seconds`` a phase), then --runs runs of --seconds, each printed, then the
    median of every figure, under "median of N runs ``heading``:"."""
    progress = Progress()
    with progress.ticking("warm-up"):
        await one_run(min(args.seconds, warm_up_seconds))
    results = []
    for number in range(1, args.runs + 1):
        with progress.ticking(f"run {number} of {args.runs}"):
            results.append(await one_run(args.seconds))
        print(f"run {number}:", *describe_figures(results[-1]), sep="\n", flush=True)
    median = {name: statistics.median(r[name] for r in results) for name in results[0]}
    print(f"median of {len(results)} runs {heading}:", *describe_figures(median), sep="\n")


async def on_cluster(args: argparse.Namespace, runs: Callable[[ClusterState], Awaitable[None]],
                     security: str = "plaintext") -> None:
    """``runs`` on the running cluster of --cluster-dir, or on a local cluster started for it (with a `security`
    listener beside the plaintext one; removed after)."""
    if args.cluster_dir:
        await runs(load_cluster(args.cluster_dir))
    else:
        async with local_cluster(args.dir, security=security) as state:
            print(f"started a local cluster of {len(state.brokers)} brokers at {state.bootstrap_servers}",
                  flush=True)
            await runs(state)


def bench_arguments(doc: str | None, default_seconds: float) -> argparse.Namespace:
    """The command line of a client benchmark: --runs, --seconds (of each produce), --cluster-dir, --dir."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=default_seconds,
                        help=f"duration of each produce (default {default_seconds:g})")
    parser.add_argument("--cluster-dir", type=Path, help="a running `cluster up` directory (default: start one)")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the local cluster's temporary directory")
    args = parser.parse_args()
    if args.runs < 1 or args.seconds <= 0:
        parser.error("--runs and --seconds must be positive")
    return args


def main() -> None:
    uvloop.run(run(bench_arguments(__doc__, 10.0)))


if __name__ == "__main__":
    main()
