"""Helpers shared by the integration tests that run real clusters.

Each test module runs one real cluster (ZooKeeper and broker processes on 127.0.0.1) started with
`minikafka cluster up` and stopped with `minikafka cluster down`; `cluster_fixture(...)` makes the module-scoped
fixture. The rest: waits that poll a condition with a deadline (never a bare sleep), pausing a broker with
SIGSTOP/SIGCONT until the kernel reports it stopped, raw requests to one broker over a BrokerConnection, and
reading record batches.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile
from client.admin import Admin, NewTopic
from client.cluster import BrokerProcess, ClusterState, cluster_status, kill_broker, load_cluster, log_tail
from client.consumer import Consumer
from client.metadata import PartitionInfo
from client.producer import Producer
from protocol.apis.fetch import CONSUMER_REPLICA_ID, FetchPartition, FetchRequest, FetchResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.replicas import DescribedReplica, DescribeReplicasRequest, DescribeReplicasResponse
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder, Record, decode_records
from transport.connection import BrokerConnection
from zk import znodes
from zk.client import ZkClient
from zk.server import zookeeper_available

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 120
WAIT_S = 30.0
POLL_S = 0.05
#: Requests to a single broker in these tests answer at once; a hang should fail fast, not after 30 s.
REQUEST_TIMEOUT_MS = 10_000
T = TypeVar("T")


# ------------------------------------------------------------------------------------------------ the cluster


def cli(*args: str, check: bool = True, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `minikafka ARGS` as a separate process (with ``env`` added to this process's environment)."""
    result = subprocess.run(
        [sys.executable, "-m", "client.cli", *args],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        cwd=PROJECT_ROOT,
        env={**os.environ, **(env or {})},
    )
    if check:
        assert result.returncode == 0, f"minikafka {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def cluster_fixture(*, brokers: int = 3, configs: Mapping[str, str] | None = None,
                    zookeeper_jvm_flags: Sequence[str] = ()) -> Any:
    """A module-scoped fixture: `cluster up` with `brokers` brokers, `--config KEY=VALUE` for each of `configs`
    and `--zookeeper-jvm-flag` for each of `zookeeper_jvm_flags`, yielding the ClusterState of cluster.json;
    `cluster down` after the module."""

    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
        if not zookeeper_available():
            pytest.fail("ZooKeeper (or java) is not installed: run make setup")
        directory = tmp_path_factory.mktemp("cluster")
        options = [item for key, value in (configs or {}).items() for item in ("--config", f"{key}={value}")]
        options += [f"--zookeeper-jvm-flag={flag}" for flag in zookeeper_jvm_flags]
        cli("cluster", "up", "--brokers", str(brokers), "--dir", str(directory), *options)
        try:
            yield load_cluster(directory)
        finally:
            cli("cluster", "down", "--dir", str(directory), check=False)

    return cluster


async def controller_of(cluster: ClusterState) -> tuple[int, int]:
    """(controller id, controller epoch) as `cluster status` reports them."""
    status = await cluster_status(cluster.directory)
    assert status["controller"] is not None and status["controller_epoch"] is not None, status
    return status["controller"], status["controller_epoch"]


# ------------------------------------------------------------------------------------------------ waiting


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str | Callable[[], str],
                     timeout_s: float = WAIT_S) -> T:
    """Poll `probe` until it returns something other than None; fail after timeout_s, saying `what` (a string
    or a function giving the last observed state)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = await probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what() if callable(what) else what}")
        await asyncio.sleep(POLL_S)


def process_state(pid: int) -> str:
    """The one-letter state of a process in /proc (R, S, T for stopped...), '' if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return ""


async def wait_process_state(pid: int, wanted: Callable[[str], bool], what: str) -> None:
    async def reached() -> bool | None:
        return True if wanted(process_state(pid)) else None

    await eventually(reached, f"process {pid} to be {what} (state {process_state(pid)!r})", timeout_s=10)


async def pause(cluster: ClusterState, broker_id: int) -> BrokerProcess:
    """`minikafka cluster kill ID --signal STOP`, then wait until the kernel reports the process stopped."""
    broker = kill_broker(cluster.directory, broker_id, "STOP")
    await wait_process_state(broker.pid, lambda state: state == "T", "stopped")
    return broker


async def resume(cluster: ClusterState, broker_id: int) -> None:
    """`minikafka cluster kill ID --signal CONT`, then wait until the process runs again."""
    broker = kill_broker(cluster.directory, broker_id, "CONT")
    await wait_process_state(broker.pid, lambda state: state not in ("T", ""), "running")


@asynccontextmanager
async def paused(cluster: ClusterState, broker_id: int) -> AsyncIterator[BrokerProcess]:
    """Keep a broker stopped (SIGSTOP) inside the block; it is always continued afterwards."""
    broker = await pause(cluster, broker_id)
    try:
        yield broker
    finally:
        await resume(cluster, broker_id)


def established_ports(pid: int) -> list[int]:
    """The remote ports of the established TCP connections of process `pid` (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    ports = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[9]) in inodes:  # 01: ESTABLISHED
            ports.append(int(fields[2].rpartition(":")[2], 16))
    return ports


def server_log(broker: BrokerProcess, lines: int = 40) -> str:
    return f"last lines of {broker.server_log}:\n{log_tail(broker.server_log, lines)}"


# ------------------------------------------------------------------------------------------------ raw requests


@asynccontextmanager
async def connect(broker: BrokerProcess, timeout_ms: int = REQUEST_TIMEOUT_MS) -> AsyncIterator[BrokerConnection]:
    """A BrokerConnection to exactly this broker."""
    connection = BrokerConnection(broker.host, broker.port, client_id="integration-test", request_timeout_ms=timeout_ms)
    await connection.connect()
    try:
        yield connection
    finally:
        await connection.close()


async def describe(connection: BrokerConnection, topic: str) -> dict[int, DescribedReplica]:
    """The replicas of `topic` the connected broker hosts, by partition."""
    response = await connection.request(DescribeReplicasRequest(topics=[topic]))
    assert isinstance(response, DescribeReplicasResponse)
    return {state.partition: state for state in response.partitions if state.topic == topic}


async def metadata(connection: BrokerConnection, topics: list[str] | None = None) -> MetadataResponse:
    response = await connection.request(MetadataRequest(topics=topics))
    assert isinstance(response, MetadataResponse)
    return response


def build_batch(values: Sequence[bytes], key: bytes | None = None) -> bytes:
    builder = BatchBuilder()
    for value in values:
        builder.append(value, key=key)
    return builder.build()


async def produce(connection: BrokerConnection, topic: str, partition: int, values: Sequence[bytes],
                  acks: int = -1, timeout_ms: int = 5000) -> int:
    """Produce one batch of `values` to a partition led by the connected broker; returns its base offset."""
    request = ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=[Topic(
        name=topic, partitions=[ProducePartition(partition=partition, records=build_batch(values))])])
    response = await connection.request(request)
    assert isinstance(response, ProduceResponse)
    [answer] = response.topics[0].partitions
    assert answer.error_code == ErrorCode.NONE, (ErrorCode.from_code(answer.error_code), answer.error_message)
    return answer.base_offset


async def fetch(connection: BrokerConnection, topic: str, partition: int, offset: int, *, max_wait_ms: int = 0,
                replica_id: int = CONSUMER_REPLICA_ID, max_bytes: int = 1 << 20) -> Any:
    """One Fetch of one partition; returns that partition's FetchPartitionResponse."""
    request = FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                           topics=[Topic(name=topic, partitions=[FetchPartition(
                               partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)])])
    response = await connection.request(request, timeout_ms=REQUEST_TIMEOUT_MS + max_wait_ms)
    assert isinstance(response, FetchResponse)
    [answer] = response.topics[0].partitions
    return answer


async def list_offset(connection: BrokerConnection, topic: str, partition: int, timestamp: int,
                      replica_id: int = CONSUMER_REPLICA_ID) -> int:
    request = ListOffsetsRequest(replica_id=replica_id, isolation_level=0, topics=[Topic(
        name=topic, partitions=[ListOffsetsPartition(partition=partition, timestamp=timestamp)])])
    response = await connection.request(request)
    assert isinstance(response, ListOffsetsResponse)
    [answer] = response.topics[0].partitions
    assert answer.error_code == ErrorCode.NONE, ErrorCode.from_code(answer.error_code)
    return answer.offset


def records_of(data: bytes) -> list[Record]:
    """Every record in a buffer of whole record batches."""
    return list(decode_records(data))


# ------------------------------------------------------------------------------------------------ topics


async def create_topic(cluster: ClusterState, name: str, *, partitions: int = -1, replication_factor: int = -1,
                       assignments: dict[int, list[int]] | None = None,
                       configs: Mapping[str, str] | None = None) -> None:
    """Create a topic through the controller and wait until every broker knows its leaders."""
    async with Admin(cluster.bootstrap_servers, request_timeout_ms=REQUEST_TIMEOUT_MS) as admin:
        await admin.create_topics([NewTopic(name, partitions, replication_factor, dict(configs or {}),
                                            dict(assignments or {}))])


async def describe_topic(cluster: ClusterState, name: str) -> dict[int, PartitionInfo]:
    """The topic's partitions as the cluster reports them (leader, replicas, ISR, leader epoch)."""
    async with Admin(cluster.bootstrap_servers, request_timeout_ms=REQUEST_TIMEOUT_MS) as admin:
        return {p.partition: p for p in await admin.describe_topics([name])}


async def produce_values(cluster: ClusterState, topic: str, values: Sequence[bytes]) -> dict[tuple[int, int], bytes]:
    """Produce with acks=all; {(partition, offset): value} of every acknowledged record."""
    acked: dict[tuple[int, int], bytes] = {}
    async with Producer(cluster.bootstrap_servers, acks="all", linger_ms=2) as producer:
        futures = [(await producer.send(topic, value), value) for value in values]
        await producer.flush()
        for future, value in futures:
            ack = future.result()
            acked[(ack.partition, ack.offset)] = value
    return acked


async def consume_all(cluster: ClusterState, topic: str) -> dict[tuple[int, int], bytes]:
    """Every record below the high watermark of every partition, {(partition, offset): value}."""
    partitions = sorted(await describe_topic(cluster, topic))
    tps = [(topic, p) for p in partitions]
    found: dict[tuple[int, int], bytes] = {}
    async with Consumer(cluster.bootstrap_servers, request_timeout_ms=REQUEST_TIMEOUT_MS) as consumer:
        consumer.assign(tps)
        await consumer.seek_to_end(tps)
        ends = {p: await consumer.position((topic, p)) for p in partitions}
        await consumer.seek_to_beginning(tps)
        deadline = time.monotonic() + WAIT_S
        while [p for p in partitions if await consumer.position((topic, p)) < ends[p]]:
            for record in await consumer.poll(timeout_ms=500):
                found[(record.partition, record.offset)] = record.value or b""
            if time.monotonic() > deadline:
                pytest.fail(f"timed out reading {topic} up to {ends}")
    return found


@asynccontextmanager
async def zookeeper_of(cluster: ClusterState) -> AsyncIterator[ZkClient]:
    """A ZooKeeper session under the cluster's chroot."""
    zk = ZkClient(cluster.zookeeper.connect, chroot=cluster.chroot)
    await zk.start()
    try:
        yield zk
    finally:
        await zk.close()


async def topic_znode(cluster: ClusterState, topic: str) -> znodes.TopicAssignment | None:
    async with zookeeper_of(cluster) as zk:
        got = await zk.get_or_none(znodes.topic_path(topic))
    return znodes.decode_topic_znode(got[0]) if got is not None else None


def partition_dirs(cluster: ClusterState, broker_id: int, topic: str) -> list[str]:
    """The names of the broker's log directories of `topic` (not those renamed for deletion)."""
    return sorted(d.name for d in Path(cluster.broker(broker_id).log_dir).iterdir()
                  if d.is_dir() and d.name.rpartition("-")[0] == topic and d.name.rpartition("-")[2].isdigit())


async def wait_partition_dirs(cluster: ClusterState, broker_id: int, topic: str, expected: list[str]) -> None:
    async def matching() -> bool | None:
        return True if partition_dirs(cluster, broker_id, topic) == expected else None

    await eventually(matching, lambda: f"broker {broker_id} to hold {expected} of {topic}, it holds "
                                       f"{partition_dirs(cluster, broker_id, topic)}")


async def wait_registered(cluster: ClusterState, broker_id: int, registered: bool) -> None:
    """Wait until the controller's metadata, as a live broker reports it, lists the broker (or no longer does)."""
    async def listed() -> bool | None:
        for broker in cluster.brokers:
            if broker.id == broker_id and not registered:
                continue
            try:
                async with connect(broker, timeout_ms=2000) as connection:
                    ids = {b.node_id for b in (await metadata(connection)).brokers}
            except Exception:
                continue
            return True if (broker_id in ids) == registered else None
        return None

    await eventually(listed, f"broker {broker_id} to be {'registered' if registered else 'gone'}")


async def wait_identical_replicas(cluster: ClusterState, topic: str, replicas: Mapping[int, Sequence[int]]) -> None:
    """Wait until every replica of each partition (`replicas`: partition -> brokers) reports the same LEO, equal to
    its HW, then check that they hold the same segment files, byte for byte, and the same leader epochs for their
    records (a leader also records the epoch it started at its log end, which followers learn only from records)."""
    last: dict[tuple[int, int], tuple[int, int]] = {}

    async def converged() -> bool | None:
        for partition, brokers in replicas.items():
            for broker_id in brokers:
                async with connect(cluster.broker(broker_id)) as connection:
                    state = (await describe(connection, topic)).get(partition)
                last[(partition, broker_id)] = (-1, -1) if state is None else (state.log_end_offset,
                                                                                 state.high_watermark)
            offsets = {last[(partition, b)] for b in brokers}
            if len(offsets) != 1 or next(iter(offsets))[0] != next(iter(offsets))[1]:
                return None
        return True

    await eventually(converged, lambda: f"the replicas of {topic} to converge, (LEO, HW) by (partition, broker): "
                                        f"{last}")
    for partition, brokers in replicas.items():
        end = last[(partition, brokers[0])][0]
        dirs = {b: Path(cluster.broker(b).log_dir) / f"{topic}-{partition}" for b in brokers}
        files = {b: sorted(p.name for p in d.glob("*.log")) for b, d in dirs.items()}
        assert len({tuple(names) for names in files.values()}) == 1, f"{topic}-{partition}: {files}"
        for name in files[brokers[0]]:
            contents = {b: (d / name).read_bytes() for b, d in dirs.items()}
            assert len(set(contents.values())) == 1, (
                f"{topic}-{partition}/{name} differs: sizes { {b: len(c) for b, c in contents.items()} }")
        epochs = {b: [e for e in LeaderEpochCheckpointFile(d / LEADER_EPOCH_CHECKPOINT).read() if e.start_offset < end]
                  for b, d in dirs.items()}
        assert len({tuple(e) for e in epochs.values()}) == 1, f"{topic}-{partition} leader epochs: {epochs}"


async def stop_broker(cluster: ClusterState, broker_id: int, signal_name: str = "TERM") -> None:
    """`cluster kill ID --signal TERM` (a controlled shutdown) or KILL; return once the process is gone and the
    cluster no longer lists the broker."""
    broker = kill_broker(cluster.directory, broker_id, signal_name)
    await wait_process_state(broker.pid, lambda state: state == "", "gone")
    await wait_registered(cluster, broker_id, registered=False)
