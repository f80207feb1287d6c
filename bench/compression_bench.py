"""Produce throughput with each codec, from Kafka's C client (librdkafka, through confluent-kafka) and minikafka's
producer, against uncompressed in the same run, and what the brokers spend on it.

A 3-broker cluster (started here unless --cluster-dir is given); per run, client and codec (none, gzip, snappy,
lz4, zstd) a topic of its own of 3 partitions with replication factor 3, written with acks=all as fast as the
client takes records for --seconds. Values are about 200 bytes of JSON-like text, which compresses as logs and
events do (a few times over). Both clients batch alike: linger.ms 5, batch.size 1 MB. Each line reports MB/s of
values (10^6 bytes, before compression), the stored bytes per value byte (the leader's segments), the CPU the
brokers used per MB of values (their three processes together, from /proc: the leader validates and decompresses
what it appends, the followers copy the bytes) and the client's CPU as a share of one core. The last lines are the
medians over --runs runs.

    python -m bench.compression_bench --runs 3
"""

from __future__ import annotations

import argparse
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import uvloop

from bench.kafka_client_bench import (
    CLIENTS,
    LIBRDKAFKA,
    MINIKAFKA,
    CpuMeter,
    bench_arguments,
    librdkafka_produce,
    measure_async,
    on_cluster,
    repeated_runs,
)
from bench.produce_bench import PARTITIONS, REPLICATION_FACTOR, VALUE_CYCLE, create_topics
from bench.produce_bench import produce as minikafka_produce
from client.cluster import ClusterState

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_WORDS = ("login", "logout", "purchase", "view", "search", "click", "checkout", "refund", "signup", "share")


def event_values(rng: random.Random) -> list[bytes]:
    """VALUE_CYCLE values of JSON-like events, about 200 bytes each."""
    return [(f'{{"user": "user-{rng.randrange(100_000):05d}", "event": "{rng.choice(_WORDS)}", '
             f'"ts": {1_700_000_000_000 + rng.randrange(10**9)}, "session": "{rng.randbytes(8).hex()}", '
             f'"tags": ["{rng.choice(_WORDS)}", "{rng.choice(_WORDS)}"], "amount": {rng.randrange(10**6) / 100}, '
             f'"path": "/shop/{rng.choice(_WORDS)}/{rng.randrange(1000)}"}}').encode()
            for _ in range(VALUE_CYCLE)]


def stored_bytes(state: ClusterState, topic: str) -> int:
    """Bytes of the topic's segments on the first broker (every broker holds every replica: RF 3 of 3 brokers)."""
    return sum(path.stat().st_size for path in Path(state.brokers[0].log_dir).glob(f"{topic}-*/*.log"))


async def one_run(state: ClusterState, meter: CpuMeter, values: list[bytes], seconds: float) -> dict[str, float]:
    """Every client with every codec; figures by name."""
    bootstrap = state.bootstrap_servers
    figures: dict[str, float] = {}
    for client in CLIENTS:
        for codec in CODECS:
            topic = f"compression-bench-{client}-{codec}-{uuid.uuid4().hex[:8]}"
            await create_topics(bootstrap, [topic])
            if client == "librdkafka":
                settings = {**LIBRDKAFKA, "compression.type": codec}
                phase = meter.measure(lambda t=topic, s=settings: librdkafka_produce(bootstrap, t, "all", values,
                                                                                     seconds, s))
            else:
                options = {**MINIKAFKA, "compression_type": codec}
                phase = await measure_async(meter, minikafka_produce(bootstrap, topic, "all", values, seconds, 2**62,
                                                                     options))
            megabytes = phase.value_bytes / 1e6
            broker_cpu_s = sum(share for who, share in phase.cpu_share.items() if who != "client") * phase.seconds
            prefix = f"{client}.{codec}"
            figures[f"{prefix}.mb_per_s"] = megabytes / phase.seconds
            figures[f"{prefix}.stored_ratio"] = stored_bytes(state, topic) / phase.value_bytes
            figures[f"{prefix}.broker_cpu_ms_per_mb"] = broker_cpu_s * 1000 / megabytes
            figures[f"{prefix}.client_cpu"] = phase.cpu_share["client"]
    return figures


def describe(figures: dict[str, float]) -> Iterator[str]:
    for client in CLIENTS:
        for codec in CODECS:
            prefix = f"{client}.{codec}"
            yield (f"  {client:<10} {codec:<6} {figures[f'{prefix}.mb_per_s']:6.1f} MB/s  "
                   f"stored {figures[f'{prefix}.stored_ratio']:4.2f} bytes/byte  "
                   f"broker CPU {figures[f'{prefix}.broker_cpu_ms_per_mb']:6.1f} ms/MB  "
                   f"client CPU {figures[f'{prefix}.client_cpu'] * 100:3.0f}%")


async def run(args: argparse.Namespace) -> None:
    values = event_values(random.Random(0))
    print(f"librdkafka: {LIBRDKAFKA}; minikafka: {MINIKAFKA}; values: {VALUE_CYCLE} events of "
          f"{sum(map(len, values)) / len(values):.0f} bytes on average", flush=True)

    async def runs(state: ClusterState) -> None:
        meter = CpuMeter({f"broker-{b.id}": b.pid for b in state.brokers})
        await repeated_runs(args, lambda seconds: one_run(state, meter, values, seconds), describe, 0.5,
                            f"({PARTITIONS} partitions, RF {REPLICATION_FACTOR}, acks=all; MB of values before "
                            "compression; broker CPU of all three brokers)")

    await on_cluster(args, runs)


def main() -> None:
    uvloop.run(run(bench_arguments(__doc__, 5.0)))


if __name__ == "__main__":
    main()
