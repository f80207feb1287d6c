"""Failover time: from the loss of a partition's leader to the first acks=all produce the new leader acknowledges.

Each run starts a fresh cluster (ZooKeeper with tickTime 500 and 3 brokers on 127.0.0.1, in a temporary
directory) with the small timeouts below, creates a topic with 2 partitions, replication factor 3 and
min.insync.replicas 2 whose leaders are the two brokers that are not the controller, and measures:

(a) kill -9: SIGKILL to the leader of partition 0, then the time until an acks=all Produce of one record to
    partition 0 is acknowledged (error NONE) by one of the surviving brokers. The controller learns of the death
    when the broker's ZooKeeper session expires (zookeeper.session.timeout.ms), elects a leader from the ISR and
    tells the brokers; the record is acknowledged once the remaining follower has fetched it.
(b) controlled shutdown: the killed broker is restarted and back in the ISR of partition 1; then SIGTERM to the
    leader of partition 1 and the same measurement on partition 1. The broker asks the controller to move its
    leaderships before it exits, so no session has to expire.

The probes are raw Produce requests (acks=all, one record, over connections opened before the signal) sent to
every surviving broker in turn, every PROBE_INTERVAL_S until one acknowledges; a broker that does not lead the
partition answers NOT_LEADER_OR_FOLLOWER at once. The killed leader is never the controller (a controller
failover would add its own election). Each run prints both times, and the last lines their medians.

    python -m bench.failover_bench --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import uvloop

from client.admin import Admin, NewTopic
from client.cluster import (
    ClusterState,
    broker_running,
    cluster_down,
    cluster_up,
    kill_broker,
    load_cluster,
    start_broker,
)
from client.progress import Progress
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.replicas import DescribeReplicasRequest, DescribeReplicasResponse
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder
from transport.connection import BrokerConnection, KafkaConnectionError

SETTINGS = {
    "replica.lag.time.max.ms": "1500",
    "zookeeper.session.timeout.ms": "2000",
    "replica.fetch.wait.max.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "500",
}
TOPIC = "failover-bench"
MIN_INSYNC_REPLICAS = "2"
PROBE_INTERVAL_S = 0.005
PROBE_TIMEOUT_MS = 5000
FAILOVER_DEADLINE_S = 30.0
READY_DEADLINE_S = 30.0
POLL_S = 0.02


class BenchError(RuntimeError):
    """A run could not be measured (the cluster did not reach the state the measurement needs)."""


@dataclass(frozen=True, slots=True)
class Failover:
    """One measurement: seconds to the first acknowledged acks=all produce, the broker that acknowledged it, and
    seconds until the old leader's process had exited (polled every POLL_S)."""

    seconds: float
    new_leader: int
    exited_after: float | None


# ------------------------------------------------------------------------------------------------ requests


async def open_connection(cluster: ClusterState, broker_id: int) -> BrokerConnection:
    broker = cluster.broker(broker_id)
    connection = BrokerConnection(broker.host, broker.port, client_id="failover-bench",
                                  request_timeout_ms=PROBE_TIMEOUT_MS + 5000)
    await connection.connect()
    return connection


async def ask(cluster: ClusterState, broker_id: int, request: object) -> object:
    connection = await open_connection(cluster, broker_id)
    try:
        return await connection.request(request)
    finally:
        await connection.close()


async def produce(connection: BrokerConnection, partition: int, value: bytes) -> ErrorCode:
    """One acks=all Produce of one record; the partition's error code (NETWORK_EXCEPTION if the broker is gone)."""
    builder = BatchBuilder()
    builder.append(value)
    request = ProduceRequest(acks=-1, timeout_ms=PROBE_TIMEOUT_MS, topics=[Topic(
        name=TOPIC, partitions=[ProducePartition(partition=partition, records=builder.build())])])
    try:
        response = await connection.request(request)
    except KafkaConnectionError:
        return ErrorCode.NETWORK_EXCEPTION
    assert isinstance(response, ProduceResponse)
    return ErrorCode.from_code(response.topics[0].partitions[0].error_code)


async def wait_for(condition: Callable[[], Awaitable[bool]], what: str, deadline_s: float = READY_DEADLINE_S) -> None:
    """Poll an async condition until it is true; BenchError after deadline_s."""
    deadline = time.monotonic() + deadline_s
    while not await condition():
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {deadline_s:.0f} s waiting for {what}")
        await asyncio.sleep(POLL_S)


async def controller_id(cluster: ClusterState) -> int:
    ids: set[int] = set()

    async def agreed() -> bool:
        ids.clear()
        for broker in cluster.brokers:
            response = await ask(cluster, broker.id, MetadataRequest(topics=[]))
            assert isinstance(response, MetadataResponse)
            ids.add(response.controller_id)
        return len(ids) == 1 and -1 not in ids

    await wait_for(agreed, "every broker to name the same controller")
    return ids.pop()


async def full_isr(cluster: ClusterState, partition: int, leader: int) -> bool:
    """Whether `leader` leads the partition with every broker in its ISR and every replica at its LEO."""
    response = await ask(cluster, leader, DescribeReplicasRequest(topics=[TOPIC]))
    assert isinstance(response, DescribeReplicasResponse)
    for state in response.partitions:
        if state.partition == partition:
            return (state.role == "leader" and len(state.isr) == len(cluster.brokers)
                    and all(f.log_end_offset == state.log_end_offset for f in state.followers))
    return False


# ------------------------------------------------------------------------------------------------ one run


async def measure(cluster: ClusterState, victim: int, signal_name: str, partition: int) -> Failover:
    """Signal the partition's leader, then probe the other brokers until one acknowledges an acks=all record."""
    survivors = [b.id for b in cluster.brokers if b.id != victim]
    connections = {b: await open_connection(cluster, b) for b in survivors}
    victim_broker = cluster.broker(victim)
    try:
        for connection in connections.values():  # warm the connections (and the brokers' request paths)
            await produce(connection, partition, b"warm-up")
        started = time.monotonic()
        kill_broker(cluster.directory, victim, signal_name)
        exited_after: float | None = None
        deadline = started + FAILOVER_DEADLINE_S
        while True:
            for broker_id, connection in connections.items():
                code = await produce(connection, partition, b"probe")
                now = time.monotonic()
                if exited_after is None and not broker_running(victim_broker):
                    exited_after = now - started
                if code == ErrorCode.NONE:
                    while exited_after is None and time.monotonic() < deadline:  # when did the old leader go?
                        if not broker_running(victim_broker):
                            exited_after = time.monotonic() - started
                        else:
                            await asyncio.sleep(POLL_S)
                    return Failover(now - started, broker_id, exited_after)
                if now > deadline:
                    raise BenchError(f"no acks=all produce to partition {partition} succeeded within "
                                     f"{FAILOVER_DEADLINE_S:.0f} s after SIG{signal_name} (last error {code.name})")
            await asyncio.sleep(PROBE_INTERVAL_S)
    finally:
        for connection in connections.values():
            await connection.close()


async def one_run(directory: Path) -> tuple[Failover, Failover]:
    cluster = await cluster_up(directory, brokers=3, overrides=SETTINGS)
    try:
        controller = await controller_id(cluster)
        first, second = [b.id for b in cluster.brokers if b.id != controller]
        assignments = {0: [first, second, controller], 1: [second, controller, first]}
        async with Admin(cluster.bootstrap_servers, request_timeout_ms=10_000) as admin:
            await admin.create_topics([NewTopic(TOPIC, -1, -1, {"min.insync.replicas": MIN_INSYNC_REPLICAS},
                                                assignments)])
        for partition, replicas in assignments.items():
            await wait_for(lambda p=partition, r=replicas: full_isr(cluster, p, r[0]), f"partition {partition}'s ISR")

        killed = await measure(cluster, first, "KILL", 0)
        await start_broker(directory, first)
        cluster = load_cluster(directory)
        await wait_for(lambda: full_isr(cluster, 1, second), f"broker {first} back in the ISR of partition 1")
        terminated = await measure(cluster, second, "TERM", 1)
        return killed, terminated
    finally:
        await cluster_down(directory, timeout_s=30)


def describe(result: Failover) -> str:
    exited = "?" if result.exited_after is None else f"{result.exited_after * 1000:.0f} ms"
    return f"{result.seconds * 1000:6.0f} ms, on broker {result.new_leader} (old leader's process gone after {exited})"


async def main(runs: int, keep: Path | None) -> int:
    print(f"failover benchmark: {runs} run(s), each on a fresh cluster of 3 brokers on 127.0.0.1 (ZooKeeper tickTime "
          f"500)")
    print("settings: " + ", ".join(f"{k}={v}" for k, v in SETTINGS.items()))
    print(f"topic: 2 partitions, replication factor 3, min.insync.replicas={MIN_INSYNC_REPLICAS}; the leaders are "
          f"not the controller; probes: acks=all, 1 record, every {PROBE_INTERVAL_S * 1000:.0f} ms to each survivor")
    killed: list[float] = []
    terminated: list[float] = []
    progress = Progress()
    for run in range(1, runs + 1):
        base = Path(tempfile.mkdtemp(prefix="failover-bench-", dir=keep))
        try:
            with progress.ticking(f"bench-failover: run {run} of {runs}"):
                kill, term = await one_run(base / "cluster")
        except BenchError as e:
            print(f"run {run}: not measured: {e}", file=sys.stderr)
            return 1
        finally:
            if keep is None:
                shutil.rmtree(base, ignore_errors=True)
        killed.append(kill.seconds)
        terminated.append(term.seconds)
        print(f"run {run}: kill -9 -> first acks=all ack {describe(kill)}")
        print(f"run {run}: SIGTERM -> first acks=all ack {describe(term)}")
    print(f"median of {runs}: kill -9 (leader crash) {statistics.median(killed) * 1000:.0f} ms; "
          f"SIGTERM (controlled shutdown) {statistics.median(terminated) * 1000:.0f} ms")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs, each on a fresh cluster (default 5)")
    parser.add_argument("--keep", type=Path, help="keep each run's cluster directory under this directory")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    sys.exit(uvloop.run(main(arguments.runs, arguments.keep)))

