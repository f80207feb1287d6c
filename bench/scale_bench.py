"""Scale: a cluster of 3 brokers holding many partitions (RF 3), through creation, failures and restarts.

Each run starts a fresh cluster (ZooKeeper with tickTime 500 and 3 brokers on 127.0.0.1, in a temporary
directory, zookeeper.session.timeout.ms 6000), creates one topic of --big-topic partitions and topics of
--topic-size partitions up to --partitions in all, runs an acks=all producer on a few partitions throughout, and
measures:

- creation: the total time of the `topic create` calls (each returns once its partitions are online);
- memory and descriptors: each broker's and ZooKeeper's RSS, each broker's open descriptors;
- kill -9 of a broker that is not the controller: from the expiry of its session (its /brokers/ids znode is
  deleted; watched here) until no partition names it as leader in the brokers' metadata;
- restart of that broker: from the start until it is in the ISR of every partition;
- controlled shutdown (SIGTERM) of a broker that leads a third of the partitions: until its process has exited,
  and until no partition names it as leader;
- kill -9 of the controller: from the expiry of its session until another broker is controller and every
  partition has a leader that is alive;
- at the end: every record the producer had acknowledged is read back, no broker exited on its own, no periodic
  task failed, and every broker's checkpoint files were written during the run.

    python -m bench.scale_bench --runs 3                  # 10,000 partitions
    python -m bench.scale_bench --partitions 1000 --big-topic 500 --topic-size 500
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop

from client.admin import Admin, AdminError, NewTopic
from client.cluster import (
    ClusterError,
    ClusterState,
    broker_running,
    cluster_down,
    cluster_up,
    exit_status,
    kill_broker,
    load_cluster,
    start_broker,
)
from client.consumer import Consumer, ConsumerError
from client.producer import Producer, ProducerError
from client.progress import Progress
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import KafkaError
from transport.connection import BrokerConnection, KafkaConnectionError
from zk.client import ZkClient

SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.high.watermark.checkpoint.interval.ms": "2000",
}
PRODUCED_PARTITIONS = 3
PRODUCE_INTERVAL_S = 0.02
POLL_S = 0.05
DEADLINE_S = 300.0
CHECKPOINTS = ("replication-offset-checkpoint",)


class BenchError(RuntimeError):
    """A run could not be measured, or the cluster broke a guarantee; the message says which."""


# ------------------------------------------------------------------------------------------------ observing


async def metadata(cluster: ClusterState, alive: set[int]) -> MetadataResponse:
    """All topics' metadata from the first live broker that answers."""
    for broker in cluster.brokers:
        if broker.id not in alive:
            continue
        connection = BrokerConnection(broker.host, broker.port, client_id="scale-bench", request_timeout_ms=30_000)
        try:
            await connection.connect()
            response = await connection.request(MetadataRequest(topics=None))
            assert isinstance(response, MetadataResponse)
            return response
        except (KafkaConnectionError, KafkaError, OSError):
            continue
        finally:
            await connection.close()
    raise BenchError(f"no live broker of {sorted(alive)} answered Metadata")


def partitions_of(response: MetadataResponse) -> list[tuple[str, int, int, list[int]]]:
    """(topic, partition, leader, isr) of every partition."""
    return [(t.name, p.partition, p.leader, list(p.isr)) for t in response.topics for p in t.partitions]


async def wait_for(condition: Callable[[], Awaitable[bool]], what: str) -> float:
    """Poll until the condition holds; returns the time.monotonic() at which it was seen to hold."""
    deadline = time.monotonic() + DEADLINE_S
    while not await condition():
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {DEADLINE_S:.0f} s waiting for {what}")
        await asyncio.sleep(POLL_S)
    return time.monotonic()


async def watch_registration_gone(cluster: ClusterState, broker_id: int) -> tuple[ZkClient, asyncio.Future[float]]:
    """A future of the time.monotonic() at which /brokers/ids/<id> was deleted (the session expired)."""
    zk = ZkClient(cluster.zookeeper.connect, chroot=cluster.chroot)
    await zk.start()
    gone: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    path = f"/brokers/ids/{broker_id}"

    async def poll() -> None:
        while not gone.done():
            if not await zk.exists(path):
                gone.set_result(time.monotonic())
                return
            await asyncio.sleep(0.01)

    asyncio.get_running_loop().create_task(poll())
    return zk, gone


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# ------------------------------------------------------------------------------------------------ the producer


class SteadyProducer:
    """acks=all records to a few partitions, one every PRODUCE_INTERVAL_S, remembering what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer(bootstrap, acks="all", delivery_timeout_ms=120_000, client_id="scale-bench")
        self.acked: dict[tuple[int, int], bytes] = {}
        self.failed = 0
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        pending: list[asyncio.Task[None]] = []
        number = 0
        while not self._stop.is_set():
            value = f"record-{number}".encode()
            future = await self.producer.send(self.topic, value, partition=number % PRODUCED_PARTITIONS)
            pending.append(asyncio.ensure_future(self._settle(future, value)))
            number += 1
            await asyncio.sleep(PRODUCE_INTERVAL_S)
        await asyncio.gather(*pending)

    async def _settle(self, future: Awaitable, value: bytes) -> None:
        try:
            metadata = await future
        except ProducerError:
            self.failed += 1
            return
        self.acked[(metadata.partition, metadata.offset)] = value

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
        await self.producer.close()


async def lost_records(bootstrap: str, producer: SteadyProducer) -> int:
    """How many acknowledged records are not at their offset when read back."""
    found: dict[tuple[int, int], bytes] = {}
    ends = {p: max((o for (q, o) in producer.acked if q == p), default=-1) for p in range(PRODUCED_PARTITIONS)}
    async with Consumer(bootstrap, client_id="scale-bench") as consumer:
        consumer.assign([(producer.topic, p) for p in range(PRODUCED_PARTITIONS)])
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
                (p, ends[p]) not in found for p in ends if ends[p] >= 0):
            for record in await consumer.poll(timeout_ms=500, max_records=10_000):
                found[(record.partition, record.offset)] = record.value
    return sum(1 for key, value in producer.acked.items() if found.get(key) != value)


# ------------------------------------------------------------------------------------------------ one run


def topic_sizes(total: int, big: int, size: int) -> dict[str, int]:
    sizes = {"scale-big": min(big, total)}
    left, number = total - sizes["scale-big"], 0
    while left > 0:
        sizes[f"scale-{number}"] = min(size, left)
        left -= sizes[f"scale-{number}"]
        number += 1
    return sizes


async def one_run(directory: Path, total: int, big: int, size: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    cluster = await cluster_up(directory, brokers=3, overrides=SETTINGS, timeout_s=120)
    started_ms = time.time() * 1000
    alive = {b.id for b in cluster.brokers}
    producer: SteadyProducer | None = None
    try:
        sizes = topic_sizes(total, big, size)
        began = time.monotonic()
        async with Admin(cluster.bootstrap_servers, request_timeout_ms=120_000) as admin:
            for topic, partitions in sizes.items():
                await admin.create_topics([NewTopic(topic, partitions, 3)])
        figures["create_s"] = time.monotonic() - began
        response = await metadata(cluster, alive)
        offline = [p for p in partitions_of(response) if p[2] < 0]
        if len(partitions_of(response)) != total or offline:
            raise BenchError(f"after creation: {len(partitions_of(response))} partitions, {len(offline)} offline")

        producer = SteadyProducer(cluster.bootstrap_servers, "scale-big")
        producer.start()
        figures["zookeeper_rss_mb"] = rss_kb(cluster.zookeeper.pid) / 1024
        figures["broker_rss_mb"] = max(rss_kb(b.pid) for b in cluster.brokers) / 1024
        figures["broker_fds"] = max(descriptors(b.pid) for b in cluster.brokers)

        controller = response.controller_id
        victim = next(b.id for b in cluster.brokers if b.id != controller)

        async def leads_nothing(broker_id: int) -> bool:
            return all(p[2] != broker_id and p[2] >= 0 for p in partitions_of(await metadata(cluster, alive)))

        async def in_every_isr(broker_id: int) -> bool:
            return all(broker_id in p[3] for p in partitions_of(await metadata(cluster, alive)))

        # kill -9 of a broker that is not the controller
        zk, expired = await watch_registration_gone(cluster, victim)
        try:
            kill_broker(directory, victim, "KILL")
            alive.discard(victim)
            moved = await wait_for(lambda: leads_nothing(victim), f"broker {victim}'s leaderships to move")
            figures["kill_leaders_moved_after_expiry_s"] = moved - await expired
        finally:
            await zk.close()
        began = time.monotonic()
        await start_broker(directory, victim, timeout_s=120)
        cluster = load_cluster(directory)
        alive.add(victim)
        figures["restart_back_in_every_isr_s"] = await wait_for(lambda: in_every_isr(victim),
                                                                 f"broker {victim} in every ISR") - began

        # controlled shutdown of a broker leading a third of the partitions
        began = time.monotonic()
        kill_broker(directory, victim, "TERM")
        broker = cluster.broker(victim)

        async def exited() -> bool:
            return not broker_running(broker)

        figures["controlled_shutdown_s"] = await wait_for(exited, f"broker {victim} to exit") - began
        alive.discard(victim)
        await start_broker(directory, victim, timeout_s=120)
        cluster = load_cluster(directory)
        alive.add(victim)
        await wait_for(lambda: in_every_isr(victim), f"broker {victim} in every ISR again")

        # kill -9 of the controller
        zk, expired = await watch_registration_gone(cluster, controller)
        try:
            kill_broker(directory, controller, "KILL")
            alive.discard(controller)

            async def new_controller_and_all_online() -> bool:
                response = await metadata(cluster, alive)
                return response.controller_id not in (-1, controller) and all(
                    p[2] in alive for p in partitions_of(response))

            online = await wait_for(new_controller_and_all_online, "a new controller with every partition online")
            figures["controller_failover_after_expiry_s"] = online - await expired
        finally:
            await zk.close()
        await start_broker(directory, controller, timeout_s=120)
        cluster = load_cluster(directory)
        alive.add(controller)
        await wait_for(lambda: in_every_isr(controller), f"broker {controller} in every ISR")

        await producer.stop()
        figures["acked"] = len(producer.acked)
        figures["lost"] = await lost_records(cluster.bootstrap_servers, producer)
        problems = health_problems(cluster, started_ms)
        if problems or figures["lost"]:
            raise BenchError(f"{figures['lost']} acknowledged records lost; " + "; ".join(problems))
        return figures
    finally:
        if producer is not None and producer._task is not None and not producer._task.done():
            await producer.stop()
        await cluster_down(directory, timeout_s=60)


def health_problems(cluster: ClusterState, started_ms: float) -> list[str]:
    """Brokers that exited on their own, periodic tasks that failed, checkpoints not written during the run."""
    problems = []
    for broker in cluster.brokers:
        if not broker_running(broker):
            problems.append(f"broker {broker.id} is not running (exit status {exit_status(broker)})")
        log = broker.server_log.read_text(errors="replace")
        if "periodic task" in log and "failed" in log:
            problems.append(f"a periodic task failed on broker {broker.id} (see {broker.server_log})")
        for name in CHECKPOINTS:
            path = Path(broker.log_dir) / name
            if not path.exists() or path.stat().st_mtime * 1000 < started_ms:
                problems.append(f"broker {broker.id} did not write {name} during the run")
    return problems


LABELS = {
    "create_s": "creation of all partitions (s)",
    "kill_leaders_moved_after_expiry_s": "kill -9: leaderships moved after session expiry (s)",
    "restart_back_in_every_isr_s": "restart: back in every ISR (s)",
    "controlled_shutdown_s": "controlled shutdown (s)",
    "controller_failover_after_expiry_s": "controller kill -9: all online after session expiry (s)",
    "broker_rss_mb": "broker RSS, largest (MB)",
    "zookeeper_rss_mb": "ZooKeeper RSS (MB)",
    "broker_fds": "broker open descriptors, most",
    "acked": "acks=all records acknowledged",
    "lost": "acknowledged records lost",
}


async def main(runs: int, total: int, big: int, size: int, keep: Path | None) -> int:
    print(f"scale benchmark: {runs} run(s), each on a fresh cluster of 3 brokers on 127.0.0.1 (ZooKeeper tickTime "
          f"500), {total} partitions with replication factor 3 ({big} in one topic, the rest in topics of {size})")
    print("settings: " + ", ".join(f"{k}={v}" for k, v in SETTINGS.items()))
    results: list[dict[str, float]] = []
    # Every run's directory stays until the last run ends. On an ext4 file system without a journal (as on the
    # machine of the published figures), creating an inode skips every inode freed in the last 30 s or more
    # (ext4's recently_deleted, seen with perf): right after the 30,000 files of one run were removed, creating the
    # next run's logs took several times as long, and that is the file system's cost, not the cluster's.
    parent = keep if keep is not None else Path(tempfile.mkdtemp(prefix="scale-bench-"))
    try:
        progress = Progress()
        for run in range(1, runs + 1):
            base = Path(tempfile.mkdtemp(prefix="scale-bench-", dir=parent))
            try:
                with progress.ticking(f"bench-scale: run {run} of {runs}"):
                    figures = await one_run(base / "cluster", total, big, size)
            except (BenchError, AdminError, ClusterError, ConsumerError, ProducerError, KafkaError,
                    KafkaConnectionError) as e:
                print(f"run {run}: failed: {e}", file=sys.stderr)
                return 1
            results.append(figures)
            print(f"run {run}: " + ", ".join(f"{key}={value:.2f}" for key, value in figures.items()))
    finally:
        if keep is None:
            shutil.rmtree(parent, ignore_errors=True)
    print(f"medians of {runs}:")
    for key, label in LABELS.items():
        print(f"  {label}: {statistics.median(r[key] for r in results):.2f}")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs, each on a fresh cluster (default 3)")
    parser.add_argument("--partitions", type=int, default=10_000, help="partitions in all (default 10000)")
    parser.add_argument("--big-topic", type=int, default=5_000, help="partitions of the largest topic (default 5000)")
    parser.add_argument("--topic-size", type=int, default=1_000, help="partitions of the other topics (default 1000)")
    parser.add_argument("--keep", type=Path, help="keep each run's cluster directory under this directory")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.partitions < PRODUCED_PARTITIONS or args.big_topic < PRODUCED_PARTITIONS:
        parser.error("--runs must be at least 1, --partitions and --big-topic at least 3")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    sys.exit(uvloop.run(main(arguments.runs, arguments.partitions, arguments.big_topic, arguments.topic_size,
                             arguments.keep)))
