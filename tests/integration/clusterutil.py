"""Helpers shared by the integration and chaos tests that run real clusters.

Each test module runs real clusters (ZooKeeper and broker processes on 127.0.0.1) started with `minikafka cluster
up` and stopped with `minikafka cluster down`; `cluster_fixture(...)` makes the fixture, and `healthy_fixture(...)`
one that repairs what a test broke. The rest: the command line (and `minikafka consume --group` in a process of its
own), pausing a broker with SIGSTOP/SIGCONT until the kernel reports it stopped, raw requests to one broker over a
BrokerConnection, topics and their records, and watching a cluster through a failure (the controller every broker
names, a partition as each broker's metadata or ZooKeeper shows it, replicas converging). Waits poll a condition
with a deadline (tests.polling).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile
from client.admin import Admin, NewTopic
from client.cluster import (
    BrokerProcess,
    ClusterState,
    broker_running,
    cluster_status,
    kill_broker,
    load_cluster,
    log_tail,
    start_broker,
    wait_until_ready,
)
from client.consumer import Consumer, ConsumerRecord
from client.metadata import PartitionInfo
from client.producer import Producer
from protocol.apis.fetch import CONSUMER_REPLICA_ID, FetchPartition, FetchRequest, FetchResponse
from protocol.apis.metadata import MetadataPartition, MetadataRequest, MetadataResponse
from protocol.apis.offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse
from protocol.apis.produce import ProducePartition, ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.replicas import DescribedReplica, DescribeReplicasRequest, DescribeReplicasResponse
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder, Record, decode_records
from tests.polling import eventually
from tests.processes import process_state
from transport.connection import BrokerConnection
from zk import znodes
from zk.client import ZkClient
from zk.server import zookeeper_available
from zk.znodes import LeaderIsrAndControllerEpoch

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 120
#: Requests to a single broker in these tests answer at once; a hang should fail fast, not after 30 s.
REQUEST_TIMEOUT_MS = 10_000
#: ZkClient's own session timeout, for test sessions that do not ask for another.
ZK_SESSION_TIMEOUT_MS = 18_000

#: The failover tests' clusters fail over fast: a stopped follower leaves the ISR after LAG_MS, a dead broker's
#: session ends after SESSION_MS.
LAG_MS = 1500
SESSION_MS = 2000
FETCH_WAIT_MS = 200
SMALL_TIMEOUTS = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "zookeeper.session.timeout.ms": str(SESSION_MS),
    "replica.fetch.wait.max.ms": str(FETCH_WAIT_MS),
    "controlled.shutdown.retry.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    # The tests assert which broker leads after a failure: the automatic preferred election (every 300 s) would
    # hand a restarted preferred replica its leaderships back whenever a module outlives its first check.
    "auto.leader.rebalance.enable": "false",
}
#: How long a failover (a new leader, a new controller) may take to show.
FAILOVER_WAIT_S = 20.0


# ------------------------------------------------------------------------------------------------ the cluster


def broker_process(config: Path, log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """`minikafka broker --config CONFIG` with `env` added to this process's environment, its output in `log`."""
    with log.open("wb") as output:
        return subprocess.Popen([sys.executable, "-m", "client.cli", "broker", "--config", str(config)],
                                stdout=output, stderr=subprocess.STDOUT, cwd=PROJECT_ROOT, env={**os.environ, **env})


def terminate(processes: Sequence[subprocess.Popen[bytes]], timeout_s: float = 30) -> None:
    """SIGTERM each process (a clean shutdown), then wait for them, killing one that does not exit in time."""
    for process in processes:
        with suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cli(*args: str, check: bool = True, input: str | None = None, env: Mapping[str, str] | None = None,
        timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run `minikafka ARGS` as a separate process, with `input` on its stdin (with ``env`` added to this process's
    environment); with check, fail the test unless it exits 0."""
    result = subprocess.run(
        [sys.executable, "-m", "client.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=PROJECT_ROOT,
        env={**os.environ, **(env or {})},
    )
    if check:
        assert result.returncode == 0, f"minikafka {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def consume_in_group(cluster: ClusterState, topic: str, group: str, properties: Mapping[str, object]
                     ) -> subprocess.Popen[str]:
    """`minikafka consume TOPIC --group GROUP --from-beginning --json` in a process of its own, with these consumer
    properties (Kafka's names); stdout (a JSON object a record) and stderr piped. SIGTERM makes it leave the group."""
    return subprocess.Popen(
        [sys.executable, "-m", "client.cli", "consume", topic, "--group", group, "--from-beginning", "--json",
         "--bootstrap-server", cluster.bootstrap_servers,
         *(item for key, value in properties.items() for item in ("--consumer-property", f"{key}={value}"))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT)


def status_json(directory: Path) -> dict[str, Any]:
    """What `minikafka cluster status --json` says of the cluster in `directory`."""
    return json.loads(cli("cluster", "status", "--json", "--dir", str(directory)).stdout)


def cluster_fixture(*, brokers: int = 3, configs: Mapping[str, str] | None = None,
                    zookeeper_jvm_flags: Sequence[str] = (), scope: str = "module", security: str = "plaintext") -> Any:
    """A fixture (of `scope`): `cluster up` with `brokers` brokers, `--config KEY=VALUE` for each of `configs`,
    `--zookeeper-jvm-flag` for each of `zookeeper_jvm_flags` and `--security`, yielding the ClusterState of
    cluster.json; `cluster down` when the scope ends."""

    @pytest.fixture(scope=scope)
    def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
        if not zookeeper_available():
            pytest.fail("ZooKeeper (or java) is not installed: run make setup")
        directory = tmp_path_factory.mktemp("cluster")
        options = [item for key, value in (configs or {}).items() for item in ("--config", f"{key}={value}")]
        options += [f"--zookeeper-jvm-flag={flag}" for flag in zookeeper_jvm_flags]
        cli("cluster", "up", "--brokers", str(brokers), "--dir", str(directory), "--security", security, *options)
        try:
            yield load_cluster(directory)
        finally:
            cli("cluster", "down", "--dir", str(directory), check=False)

    return cluster


async def restore(directory: Path, *, heal: bool = False) -> ClusterState:
    """Make the cluster whole: with heal, remove its network cuts first (`cluster heal`, root only); continue
    stopped brokers, start dead ones (as `cluster start` does), and wait until every broker lists all brokers and
    a controller. Returns the cluster with its current pids."""
    if heal:
        cli("cluster", "heal", "--dir", str(directory))
    state = load_cluster(directory)
    for broker in state.brokers:
        if broker_running(broker) and process_state(broker.pid) == "T":
            await resume(state, broker.id)
    for broker in state.brokers:
        if not broker_running(broker):
            await start_broker(directory, broker.id)
    state = load_cluster(directory)
    await wait_until_ready(list(state.brokers), {b.id for b in state.brokers}, timeout_s=60)
    return state


def healthy_fixture(cluster_fixture_name: str = "cluster", *, heal: bool = False) -> Any:
    """A function-scoped fixture: the cluster of the fixture named `cluster_fixture_name` made whole (`restore`)
    before the test, and again after it, whatever the test broke."""

    @pytest_asyncio.fixture(loop_scope="function")
    async def healthy(request: pytest.FixtureRequest) -> AsyncIterator[ClusterState]:
        cluster: ClusterState = request.getfixturevalue(cluster_fixture_name)
        yield await restore(cluster.directory, heal=heal)
        await restore(cluster.directory, heal=heal)

    return healthy


async def controller_of(cluster: ClusterState) -> tuple[int, int]:
    """(controller id, controller epoch) as `cluster status` reports them."""
    status = await cluster_status(cluster.directory)
    assert status["controller"] is not None and status["controller_epoch"] is not None, status
    return status["controller"], status["controller_epoch"]


# ------------------------------------------------------------------------------------------------ processes


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


async def wait_gone(broker: BrokerProcess, timeout_s: float = 10) -> None:
    """Wait until the broker's process has exited (gone, or a zombie its parent has not reaped yet)."""

    async def gone() -> bool | None:
        return None if broker_running(broker) else True

    await eventually(gone, lambda: f"broker {broker.id} (pid {broker.pid}) to exit, state "
                                   f"{process_state(broker.pid)!r}", timeout_s=timeout_s)


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


async def produce_answer(connection: BrokerConnection, topic: str, partition: int, values: Sequence[bytes], *,
                         acks: int = -1, timeout_ms: int = 5000,
                         request_timeout_ms: int | None = None) -> ProducePartitionResponse:
    """One Produce request of one batch of `values`; the partition's answer, error or not. The request waits
    request_timeout_ms for it (by default, as long as the connection's requests do)."""
    request = ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=[Topic(
        name=topic, partitions=[ProducePartition(partition=partition, records=build_batch(values))])])
    response = await connection.request(request, timeout_ms=request_timeout_ms)
    assert isinstance(response, ProduceResponse)
    [answer] = response.topics[0].partitions
    return answer


async def produce(connection: BrokerConnection, topic: str, partition: int, values: Sequence[bytes], *,
                  acks: int = -1, timeout_ms: int = 5000, request_timeout_ms: int | None = None) -> int:
    """Produce one batch of `values` to a partition led by the connected broker; returns its base offset."""
    answer = await produce_answer(connection, topic, partition, values, acks=acks, timeout_ms=timeout_ms,
                                  request_timeout_ms=request_timeout_ms)
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
                       assignments: dict[int, list[int]] | None = None, configs: Mapping[str, str] | None = None,
                       in_sync: bool = False, request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
    """Create a topic through the controller and wait until every broker knows its leaders; with in_sync (and
    `assignments`), also until each partition's first replica leads and every replica is in its ISR, as the
    metadata of each of its replicas shows."""
    async with Admin(cluster.bootstrap_servers, request_timeout_ms=request_timeout_ms) as admin:
        await admin.create_topics([NewTopic(name, partitions, replication_factor, dict(configs or {}),
                                            dict(assignments or {}))])
    if in_sync:
        assert assignments, "in_sync needs the assignments"
        for partition, replicas in assignments.items():
            await wait_metadata([cluster.broker(b) for b in replicas], name, partition,
                                lambda s, r=replicas: s.leader == r[0] and set(s.isr) == set(r),
                                "the new partition to have its first replica as leader and a full ISR", timeout_s=30)


async def metadata_leaders(cluster: ClusterState, topic: str) -> dict[int, int]:
    """Partition -> leader, as the first broker's metadata has them."""
    async with connect(cluster.brokers[0]) as connection:
        [found] = (await metadata(connection, [topic])).topics
    return {p.partition: p.leader for p in found.partitions}


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
    return {(record.partition, record.offset): record.value or b"" for record in await consume_records(cluster, topic)}


async def consume_records(cluster: ClusterState, topic: str) -> list[ConsumerRecord]:
    """Every record below the high watermark of every partition, in offset order per partition."""
    partitions = sorted(await describe_topic(cluster, topic))
    tps = [(topic, p) for p in partitions]
    found: list[ConsumerRecord] = []
    async with Consumer(cluster.bootstrap_servers, request_timeout_ms=REQUEST_TIMEOUT_MS) as consumer:
        consumer.assign(tps)
        await consumer.seek_to_end(tps)
        ends = {p: await consumer.position((topic, p)) for p in partitions}
        await consumer.seek_to_beginning(tps)

        async def read_to_the_ends() -> bool:
            behind = [p for p in partitions if await consumer.position((topic, p)) < ends[p]]
            if behind:
                found.extend(await consumer.poll(timeout_ms=500))
            return not behind

        await eventually(read_to_the_ends, f"{topic} read up to {ends}", interval_s=0)
    return found


@asynccontextmanager
async def zookeeper_of(cluster: ClusterState, *,
                       session_timeout_ms: int = ZK_SESSION_TIMEOUT_MS) -> AsyncIterator[ZkClient]:
    """A ZooKeeper session of the test's own, under the cluster's chroot."""
    zk = ZkClient(cluster.zookeeper.connect, chroot=cluster.chroot, session_timeout_ms=session_timeout_ms)
    await zk.start()
    try:
        yield zk
    finally:
        await zk.close()


async def cluster_id_in_zookeeper(cluster: ClusterState) -> str:
    """The cluster's id, as /cluster/id holds it."""
    async with zookeeper_of(cluster) as zk:
        data, _stat = await zk.get(znodes.CLUSTER_ID_PATH)
    return znodes.decode_cluster_id(data)


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


# ------------------------------------------------------------------------------------------------ through a failure


async def agreed_controller(cluster: ClusterState, brokers: Sequence[int] | None = None) -> int:
    """The controller id once every one of `brokers` (default: all) names the same one."""
    ids = [b.id for b in cluster.brokers] if brokers is None else list(brokers)
    seen: list[set[int]] = []

    async def probe() -> int | None:
        named = set()
        for broker_id in ids:
            async with connect(cluster.broker(broker_id)) as connection:
                named.add((await metadata(connection, [])).controller_id)
        seen.append(named)
        return named.pop() if len(named) == 1 and -1 not in named else None

    return await eventually(probe, lambda: f"brokers {ids} to name one controller (saw {seen[-3:]})")


async def partition_metadata(connection: BrokerConnection, topic: str, partition: int) -> MetadataPartition | None:
    """The partition as the connected broker's metadata cache describes it (None if unknown)."""
    response = await metadata(connection, [topic])
    for each in response.topics:
        if each.name == topic:
            for state in each.partitions:
                if state.partition == partition:
                    return state
    return None


async def wait_metadata(brokers: Sequence[BrokerProcess], topic: str, partition: int,
                        condition: Callable[[MetadataPartition], bool], what: str,
                        timeout_s: float = FAILOVER_WAIT_S) -> MetadataPartition:
    """Poll Metadata on each of `brokers` until all of them describe the partition satisfying `condition`;
    returns the last broker's view."""
    seen: dict[int, MetadataPartition | None] = {}

    async def probe() -> MetadataPartition | None:
        for broker in brokers:
            async with connect(broker) as connection:
                seen[broker.id] = await partition_metadata(connection, topic, partition)
        states = list(seen.values())
        return states[-1] if all(s is not None and condition(s) for s in states) else None

    def describe_seen() -> str:
        return f"{what} for {topic}-{partition}; last seen {_short(seen)}"

    return await eventually(probe, describe_seen, timeout_s=timeout_s)


def _short(seen: Mapping[int, MetadataPartition | None]) -> str:
    def one(s: MetadataPartition | None) -> str:
        if s is None:
            return "unknown"
        return f"leader {s.leader} epoch {s.leader_epoch} isr {s.isr} error {ErrorCode.from_code(s.error_code).name}"

    return "; ".join(f"broker {b}: {one(s)}" for b, s in seen.items())


async def registration(zk: ZkClient, broker_id: int) -> int | None:
    """The broker epoch (czxid) of the broker's registration, None while it is not registered."""
    stat = await zk.exists(znodes.broker_path(broker_id))
    return stat.czxid if stat is not None else None


async def zk_state(zk: ZkClient, topic: str, partition: int) -> LeaderIsrAndControllerEpoch:
    """The partition's state znode (leader, leader epoch, ISR, controller epoch, version)."""
    data, stat = await zk.get(znodes.partition_state_path(topic, partition))
    return znodes.decode_partition_state(data, stat.version)


async def wait_zk_state(zk: ZkClient, topic: str, partition: int,
                        condition: Callable[[LeaderIsrAndControllerEpoch], bool], what: str,
                        timeout_s: float = FAILOVER_WAIT_S) -> LeaderIsrAndControllerEpoch:
    seen: list[LeaderIsrAndControllerEpoch] = []

    async def probe() -> LeaderIsrAndControllerEpoch | None:
        state = await zk_state(zk, topic, partition)
        seen.append(state)
        return state if condition(state) else None

    return await eventually(probe, lambda: f"{what} (state znode of {topic}-{partition}: {seen[-1:]})",
                            timeout_s=timeout_s)


async def replica_states(cluster: ClusterState, brokers: Sequence[int], topic: str,
                         partition: int) -> dict[int, DescribedReplica | None]:
    states: dict[int, DescribedReplica | None] = {}
    for broker_id in brokers:
        async with connect(cluster.broker(broker_id)) as connection:
            states[broker_id] = (await describe(connection, topic)).get(partition)
    return states


async def wait_converged(cluster: ClusterState, topic: str, partitions: Sequence[int],
                         brokers: Sequence[int]) -> dict[int, int]:
    """Wait until, for each partition, every replica on `brokers` has the same LEO, HW = LEO, one of them leads
    and its ISR is all of them; returns each partition's LEO."""
    seen: dict[int, Any] = {}

    async def probe() -> dict[int, int] | None:
        ends = {}
        for partition in partitions:
            states = await replica_states(cluster, brokers, topic, partition)
            seen[partition] = {b: None if s is None else (s.role, s.leader_epoch, s.log_end_offset, s.high_watermark,
                                                          s.isr) for b, s in states.items()}
            rows = list(states.values())
            if any(s is None for s in rows):
                return None
            leaders = [s for s in rows if s is not None and s.role == "leader"]
            ends_seen = {s.log_end_offset for s in rows if s is not None}
            hws = {s.high_watermark for s in rows if s is not None}
            if len(leaders) != 1 or len(ends_seen) != 1 or hws != ends_seen or set(leaders[0].isr) != set(brokers):
                return None
            ends[partition] = ends_seen.pop()
        return ends

    return await eventually(probe, lambda: f"replicas of {topic} on {list(brokers)} to converge "
                                           f"(role, epoch, LEO, HW, ISR): {seen}", timeout_s=30)
