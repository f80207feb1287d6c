"""A consumer group of confluent-kafka members, each in a process of its own (tests/integration/group_member.py),
rebalancing as members come and go: the topic's partitions are dealt among the members when one joins, when one
leaves cleanly (LeaveGroup), and when one is killed -9 (then within its session timeout and a rebalance); every
record is read by the group at least once."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator, Sequence

import pytest
from confluent_kafka import Producer

from client.cluster import ClusterState
from tests.integration.clusterutil import cluster_fixture, create_topic
from tests.integration.group_member import MemberProcess
from tests.polling import wait_for

cluster = cluster_fixture(brokers=3, configs={"offsets.topic.num.partitions": "5",
                                              "group.min.session.timeout.ms": "1000"})
PARTITIONS = 6
RECORDS = 60
SESSION_MS = 3000
#: How long a rebalance may take on top of the session timeout (members learn of it from their next heartbeat,
#: every session / 6, then join and sync again).
REBALANCE_S = 10.0


@pytest.fixture
def topic(cluster: ClusterState) -> Iterator[str]:
    name = f"rebalance-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, name, partitions=PARTITIONS, replication_factor=3))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(name, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    yield name


def wait_dealt(members: Sequence[MemberProcess], what: str, timeout_s: float = 30) -> None:
    """Wait until the members own every partition between them, each a share of it (none twice, none idle)."""
    def dealt() -> bool:
        owned = [m.assignment for m in members]
        return (sorted(p for partitions in owned for p in partitions) == list(range(PARTITIONS))
                and all(len(partitions) == PARTITIONS // len(members) for partitions in owned))

    wait_for(dealt, lambda: f"{what}: the partitions dealt among {len(members)} members "
                            f"(they own {[sorted(m.assignment) for m in members]})", timeout_s=timeout_s)


def test_a_group_of_three_rebalances_when_a_member_joins_leaves_and_is_killed(cluster: ClusterState,
                                                                             topic: str) -> None:
    group = f"rebalance-{uuid.uuid4().hex[:8]}"

    def member() -> MemberProcess:
        return MemberProcess(cluster.bootstrap_servers, group, topic, session_ms=SESSION_MS)

    first = member()
    started = [first]
    try:
        wait_dealt([first], "the first member alone")
        second, third = member(), member()
        started += [second, third]
        wait_dealt([first, second, third], "two members joined")

        second.stop()
        wait_dealt([first, third], "a member left cleanly")
        fourth = member()
        started.append(fourth)
        wait_dealt([first, third, fourth], "a member joined again")

        killed_at = time.monotonic()
        third.kill()
        wait_dealt([first, fourth], "a member killed -9", timeout_s=SESSION_MS / 1000 + REBALANCE_S)
        moved_s = time.monotonic() - killed_at
        assert moved_s >= SESSION_MS / 1000 * 0.5, f"its partitions moved after {moved_s:.1f} s, before its session"

        read = {record for m in started for record in m.records()}
        wait_for(lambda: read.update(r for m in (first, fourth) for r in m.records()) or len(read) == RECORDS,
                 lambda: f"every record read at least once (read {len(read)} of {RECORDS})")
    finally:
        for each in started:
            each.kill()
