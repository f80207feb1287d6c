"""The group coordinator's broker killed -9 while its group consumes and commits: the leadership of the group's
partition of __consumer_offsets moves, the new leader loads the group's offsets, the member goes on committing
there, and after the member too is killed -9 a new member resumes from the last commits: no acknowledged commit
is lost."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from client.cluster import ClusterState
from protocol.consumer_offsets import OFFSETS_TOPIC, partition_for
from tests.integration.clusterutil import (
    SMALL_TIMEOUTS,
    cluster_fixture,
    connect,
    create_topic,
    healthy_fixture,
    partition_metadata,
    stop_broker,
)
from tests.integration.group_member import MemberProcess, committed_offsets
from tests.polling import eventually

OFFSETS_PARTITIONS = 5
cluster = cluster_fixture(brokers=3, configs={**SMALL_TIMEOUTS, "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                                              "group.min.session.timeout.ms": "1000"})
healthy = healthy_fixture()
PARTITIONS = 3
RECORDS = 300
TIMEOUT_S = 60


async def offsets_leader(cluster: ClusterState, partition: int, asking: int) -> int:
    """The leader of a partition of __consumer_offsets, as broker `asking` knows it (-1: none)."""
    async with connect(cluster.broker(asking)) as connection:
        found = await partition_metadata(connection, OFFSETS_TOPIC, partition)
    return -1 if found is None else found.leader


async def test_the_group_resumes_from_its_last_commits_after_its_coordinator_is_killed(healthy: ClusterState) -> None:
    cluster = healthy
    topic, group = f"failover-{uuid.uuid4().hex[:8]}", f"failover-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0

    member = MemberProcess(cluster.bootstrap_servers, group, topic, session_ms=3000, record_delay_ms=30)
    successor = None
    try:
        await eventually(lambda: sum(member.committed().values()) >= 30, "the member's first commits",
                         timeout_s=TIMEOUT_S)
        offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
        coordinator = await offsets_leader(cluster, offsets_partition, cluster.brokers[0].id)
        survivor = next(b.id for b in cluster.brokers if b.id != coordinator)
        await stop_broker(cluster, coordinator, "KILL")
        before = member.committed()

        async def committing_elsewhere() -> int | None:
            leader = await offsets_leader(cluster, offsets_partition, survivor)
            moved_on = sum(member.committed().values()) >= sum(before.values()) + 30
            return leader if moved_on and leader not in (coordinator, -1) else None

        new_coordinator = await eventually(committing_elsewhere, lambda: (
            f"commits acknowledged by a new coordinator (acknowledged {member.committed()}, {before} at the kill)"),
            timeout_s=TIMEOUT_S)
        assert new_coordinator != coordinator
        member.kill()
        acknowledged = member.committed()
        read_up_to = {p: max(o for q, o in member.records() if q == p) for p in acknowledged}
        committed = committed_offsets(cluster.bootstrap_servers, group, topic, PARTITIONS)
        for partition, offset in acknowledged.items():
            assert offset <= committed[partition] <= read_up_to[partition] + 1, (
                f"partition {partition}: acknowledged {offset}, committed {committed[partition]}")

        starts = {p: max(offset, 0) for p, offset in committed.items()}  # no commit (-1001): from the earliest
        successor = MemberProcess(cluster.bootstrap_servers, group, topic, session_ms=3000)
        await eventually(lambda: len(successor.records()) >= RECORDS - sum(starts.values()),
                         lambda: f"the rest of the records read by a new member (read {len(successor.records())}, "
                                 f"committed at its start {committed}; its last events {successor.events[-5:]})",
                         timeout_s=TIMEOUT_S)
        first_read = {}
        for partition, offset in successor.records():
            first_read.setdefault(partition, offset)
        assert first_read == {p: o for p, o in starts.items() if o < RECORDS // PARTITIONS}
    finally:
        member.kill()
        if successor is not None:
            successor.kill()
