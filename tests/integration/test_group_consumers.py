"""minikafka's own consumers in groups, on a real cluster (3 brokers):

- three consumers of one group share a topic's partitions, and the group rebalances when a fourth joins, when one
  leaves cleanly and when one (a `minikafka consume --group` process) is killed -9: its partitions move within the
  session timeout plus the rebalance, and every record is read by the group at least once;
- a minikafka consumer shares a group with confluent-kafka's (librdkafka), each reading the other's commits;
- `minikafka consume --group` resumes from the offsets its last run committed, and commits by hand (synchronous and
  asynchronous) are read back.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentPartition

from client.admin import Admin
from client.cluster import ClusterState
from client.consumer import Consumer
from client.group.offsets import OffsetAndMetadata
from protocol.apis.offsets import LATEST_TIMESTAMP
from protocol.topic_partition import TopicPartition as TP
from tests.integration.clusterutil import cli, cluster_fixture, consume_in_group, create_topic, produce_values
from tests.polling import eventually, poll_records

cluster = cluster_fixture(brokers=3)
SESSION_MS = 6000  # Kafka's group.min.session.timeout.ms
GROUP_SETTINGS = {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": 500, "auto_offset_reset": "earliest",
                  "auto_commit_interval_ms": 500}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Reader:
    """An in-process consumer of a group, polling in a task of its own and keeping what it read."""

    def __init__(self, cluster: ClusterState, group: str, topic: str, name: str) -> None:
        self.consumer = Consumer(cluster.bootstrap_servers, group_id=group, client_id=name, **GROUP_SETTINGS)
        self.consumer.subscribe([topic])
        self.records: dict[tuple[int, int], bytes | None] = {}
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        while not self._stopping:
            for record in await self.consumer.poll(timeout_ms=200):
                self.records[(record.partition, record.offset)] = record.value

    async def close(self) -> None:
        self._stopping = True
        await self._task
        await self.consumer.close()


async def assignment(cluster: ClusterState, group: str) -> dict[str, list[TP]]:
    """Each member's partitions (by client id), as the coordinator describes the group; {} unless Stable."""
    async with Admin(cluster.bootstrap_servers) as admin:
        described = (await admin.describe_groups([group]))[group]
    if described.state != "Stable":
        return {}
    return {m.client_id: sorted(m.assignment) for m in described.members}


async def shared_by(cluster: ClusterState, group: str, clients: set[str], partitions: int) -> dict[str, list[TP]]:
    """Wait until exactly `clients` hold every partition of the group's topic, each once, evenly."""

    async def settled() -> dict[str, list[TP]] | None:
        members = await assignment(cluster, group)
        held = [tp for tps in members.values() for tp in tps]
        sizes = {len(tps) for tps in members.values()}
        fair = set(members) == clients and len(held) == len(set(held)) == partitions and max(sizes) - min(sizes) <= 1
        return members if fair else None

    return await eventually(settled, lambda: f"the partitions shared by {sorted(clients)}", timeout_s=60)


@pytest.fixture
def topic(cluster: ClusterState) -> Iterator[str]:
    name = unique("grouped")
    asyncio.run(create_topic(cluster, name, partitions=6, replication_factor=3))
    yield name


async def test_three_consumers_rebalance_when_one_joins_leaves_and_is_killed(cluster, topic):
    produced = await produce_values(cluster, topic, [b"v%04d" % i for i in range(300)])
    group = unique("rebalance")
    a, b = Reader(cluster, group, topic, "reader-a"), Reader(cluster, group, topic, "reader-b")
    doomed = consume_in_group(cluster, topic, group, {
        "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500, "client.id": "doomed",
        "auto.commit.interval.ms": 500})
    try:
        await shared_by(cluster, group, {"reader-a", "reader-b", "doomed"}, 6)
        d = Reader(cluster, group, topic, "reader-d")
        await shared_by(cluster, group, {"reader-a", "reader-b", "doomed", "reader-d"}, 6)
        await d.close()
        await shared_by(cluster, group, {"reader-a", "reader-b", "doomed"}, 6)
        doomed.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        await shared_by(cluster, group, {"reader-a", "reader-b"}, 6)
        assert time.monotonic() - killed_at < SESSION_MS / 1000 + 15
        printed, _ = doomed.communicate(timeout=10)
        read = {**a.records, **b.records, **d.records}
        read.update({(r["partition"], r["offset"]): r["value"].encode() for r in map(json.loads, printed.splitlines())})

        async def everything() -> bool:
            return set({**read, **a.records, **b.records}) >= set(produced)

        await eventually(everything, "every record read by the group at least once")
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.communicate()
        await asyncio.gather(a.close(), b.close())


async def test_a_minikafka_consumer_shares_a_group_with_confluent_kafkas(cluster):
    name = unique("mixed")
    await create_topic(cluster, name, partitions=4, replication_factor=3)
    produced = await produce_values(cluster, name, [b"m%03d" % i for i in range(80)])
    group = unique("mixed")
    stock = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                               "client.id": "librdkafka", "auto.offset.reset": "earliest",
                               "enable.auto.commit": False, "session.timeout.ms": SESSION_MS})
    stock.subscribe([name])
    ours = Reader(cluster, group, name, "minikafka")
    stock_read: dict[tuple[int, int], bytes] = {}
    try:
        async def stock_polls() -> dict[str, list[TP]] | None:
            message = await asyncio.to_thread(stock.poll, 0.2)
            if message is not None and message.error() is None:
                stock_read[(message.partition(), message.offset())] = message.value()
            members = await assignment(cluster, group)
            held = sorted(tp for tps in members.values() for tp in tps)
            return members if set(members) == {"librdkafka", "minikafka"} and len(held) == 4 else None

        members = await eventually(stock_polls, "both consumers in the group", timeout_s=60)
        assert sorted(len(tps) for tps in members.values()) == [2, 2]

        async def all_read() -> bool:
            message = await asyncio.to_thread(stock.poll, 0.2)
            if message is not None and message.error() is None:
                stock_read[(message.partition(), message.offset())] = message.value()
            return set({**stock_read, **ours.records}) >= set(produced)

        await eventually(all_read, "every record read by one of the two")
        ends = {p: sum(1 for partition, _ in produced if partition == p) for p in range(4)}  # sticky: uneven
        theirs = [ConfluentPartition(name, tp.partition, ends[tp.partition]) for tp in members["librdkafka"]]
        await asyncio.to_thread(stock.commit, offsets=theirs, asynchronous=False)
        committed = await ours.consumer.committed([TP(name, p) for p in range(4)])
        assert all(committed[tp] is not None and committed[tp].offset == ends[tp.partition]
                   for tp in members["librdkafka"])
    finally:
        await asyncio.to_thread(stock.close)
        await ours.close()


async def test_consume_with_a_group_resumes_from_its_committed_offsets(cluster):
    name = unique("resumed")
    await create_topic(cluster, name, partitions=1, replication_factor=3)
    await produce_values(cluster, name, [b"r%d" % i for i in range(10)])
    group = unique("resume")
    first = cli("consume", name, "--group", group, "--from-beginning", "--max-messages", "4",
                "--bootstrap-server", cluster.bootstrap_servers)
    assert first.stdout.splitlines() == ["r0", "r1", "r2", "r3"]
    second = cli("consume", name, "--group", group, "--from-beginning", "--timeout-ms", "3000",
                 "--bootstrap-server", cluster.bootstrap_servers)
    assert second.stdout.splitlines() == [f"r{i}" for i in range(4, 10)]
    described = json.loads(cli("consumer-groups", "--describe", "--group", group, "--json",
                               "--bootstrap-server", cluster.bootstrap_servers).stdout)
    assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"]) for r in described] == [(0, 10, 10, 0)]


async def test_commits_by_hand_are_read_back(cluster):
    name = unique("manual")
    await create_topic(cluster, name, partitions=2, replication_factor=3)
    await produce_values(cluster, name, [b"x%d" % i for i in range(20)])
    group = unique("manual")
    async with Consumer(cluster.bootstrap_servers, group_id=group, enable_auto_commit=False,
                        **{k: v for k, v in GROUP_SETTINGS.items() if k != "auto_commit_interval_ms"}) as consumer:
        consumer.subscribe([name])
        await poll_records(consumer, 20)
        await consumer.commit()
        async with Admin(cluster.bootstrap_servers) as admin:
            ends = await admin.list_offsets([(name, 0), (name, 1)], LATEST_TIMESTAMP)
        assert await consumer.committed([(name, 0), (name, 1)]) == {
            tp: OffsetAndMetadata(end, leader_epoch=0 if end else None) for tp, end in ends.items()}  # none read
        outcome: list[Exception | None] = []
        await consumer.commit_async({(name, 0): 3}, lambda offsets, error: outcome.append(error))
        assert outcome == [None]
        assert (await consumer.committed([(name, 0)]))[TP(name, 0)].offset == 3
