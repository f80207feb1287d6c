"""Topic deletion on real brokers: `topic delete` queues the topic in /admin/delete_topics, the controller deletes
every live replica (StopReplica with delete) and then the topic's znodes; a broker that was down deletes its
replicas when it comes back, and the topic can be created again meanwhile, with fresh data and a new topic id.
While a topic is being deleted, requests for it get UNKNOWN_TOPIC_OR_PARTITION (a parked acks=all produce too).
Brokers delete only logs of the topic incarnation they are told of. With delete.topic.enable=false, deletion is
refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from client.admin import Admin, AdminError
from client.cluster import start_broker
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.replica_control import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaPartition,
    StopReplicaRequest,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from tests.integration.clusterutil import (
    REQUEST_TIMEOUT_MS,
    build_batch,
    cli,
    cluster_fixture,
    connect,
    consume_all,
    controller_of,
    create_topic,
    describe,
    metadata,
    partition_dirs,
    paused,
    produce,
    produce_values,
    stop_broker,
    topic_znode,
    wait_partition_dirs,
    zookeeper_of,
)
from tests.polling import eventually
from zk import znodes
from zk.znodes import PendingDeletion

# A short backoff lets `cluster down` end quickly (the last broker cannot hand its leaderships to anyone).
QUICK_SHUTDOWN = {"controlled.shutdown.retry.backoff.ms": "200", "auto.leader.rebalance.enable": "false"}
cluster = cluster_fixture(brokers=3, configs=QUICK_SHUTDOWN)
undeletable = cluster_fixture(brokers=1, configs={**QUICK_SHUTDOWN, "delete.topic.enable": "false"})


async def test_a_topic_deleted_while_a_broker_is_down_is_gone_and_that_broker_deletes_its_replicas_when_back(
    cluster,
):
    await create_topic(cluster, "doomed", partitions=2, replication_factor=3)
    old = await topic_znode(cluster, "doomed")
    assert old is not None and old.topic_id
    old_values = await produce_values(cluster, "doomed", [b"old-%d" % i for i in range(200)])
    controller, _ = await controller_of(cluster)
    down = next(b.id for b in cluster.brokers if b.id != controller)
    live = [b.id for b in cluster.brokers if b.id != down]
    await stop_broker(cluster, down, "TERM")

    result = cli("topic", "delete", "doomed", "--dir", str(cluster.directory))
    assert result.stdout.strip() == "Deleted topic doomed."
    async with zookeeper_of(cluster) as zk:
        for path in (znodes.topic_path("doomed"), znodes.topic_config_path("doomed"),
                     znodes.delete_topic_path("doomed")):
            assert await zk.exists(path) is None, path
        pending = znodes.decode_pending_deletions((await zk.get(znodes.pending_replica_deletions_path(down)))[0])
    assert pending == [PendingDeletion("doomed", 0, old.topic_id), PendingDeletion("doomed", 1, old.topic_id)]
    for broker_id in live:
        await wait_partition_dirs(cluster, broker_id, "doomed", [])
    assert partition_dirs(cluster, down, "doomed") == ["doomed-0", "doomed-1"]  # it is down: nothing touched them

    # Created again under the same name while that broker is down: a new incarnation, fresh data.
    await create_topic(cluster, "doomed", partitions=2, replication_factor=2)
    new = await topic_znode(cluster, "doomed")
    assert new is not None and new.topic_id not in (None, old.topic_id)
    new_values = await produce_values(cluster, "doomed", [b"new-%d" % i for i in range(50)])

    await start_broker(cluster.directory, down)
    await wait_partition_dirs(cluster, down, "doomed", [])

    async def pending_cleared() -> bool | None:
        async with zookeeper_of(cluster) as zk:
            return True if await zk.exists(znodes.pending_replica_deletions_path(down)) is None else None

    await eventually(pending_cleared, f"broker {down}'s pending deletions to be cleared")
    assert await consume_all(cluster, "doomed") == new_values
    assert not set(old_values.values()) & set(new_values.values())


async def test_producing_to_a_topic_being_deleted_gets_unknown_topic_or_partition(cluster):
    controller, controller_epoch = await controller_of(cluster)
    leader, stuck = [b.id for b in cluster.brokers if b.id != controller]
    await create_topic(cluster, "going", assignments={0: [leader, stuck, controller]})
    async with connect(cluster.broker(leader)) as connection:
        await produce(connection, "going", 0, [b"before"])
        async with paused(cluster, stuck):
            # An acks=all produce waits for the paused follower, which is in the ISR but does not fetch.
            parked = asyncio.create_task(connection.request(ProduceRequest(acks=-1, timeout_ms=60_000, topics=[
                Topic(name="going", partitions=[ProducePartition(partition=0, records=build_batch([b"x"]))])])))
            # Ask the controller directly: a client bootstrapping from the paused broker would wait for it.
            async with Admin(cluster.broker(controller).address, request_timeout_ms=REQUEST_TIMEOUT_MS) as admin:
                with pytest.raises(AdminError) as marked:
                    await admin.delete_topics(["going"], timeout_ms=1500)
            assert marked.value.code == ErrorCode.REQUEST_TIMED_OUT
            assert "marked for deletion" in marked.value.message

            response = await parked
            assert isinstance(response, ProduceResponse)
            assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            late = await connection.request(ProduceRequest(acks=1, timeout_ms=1000, topics=[
                Topic(name="going", partitions=[ProducePartition(partition=0, records=build_batch([b"y"]))])]))
            assert late.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            [known] = (await metadata(connection, ["going"])).topics
            assert known.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            async with zookeeper_of(cluster) as zk:  # the paused broker's replica is still there: deletion waits
                assert await zk.exists(znodes.topic_path("going")) is not None
                assert await zk.exists(znodes.delete_topic_path("going")) is not None
            assert partition_dirs(cluster, stuck, "going") == ["going-0"]
    async with zookeeper_of(cluster) as zk:
        async def gone() -> bool | None:
            return True if await zk.exists(znodes.topic_path("going")) is None else None

        await eventually(gone, "topic going to be deleted once the paused broker answered")
        assert await zk.exists(znodes.delete_topic_path("going")) is None
    for broker in cluster.brokers:
        await wait_partition_dirs(cluster, broker.id, "going", [])
    assert controller_epoch >= 1


async def test_a_broker_deletes_only_logs_of_the_topic_incarnation_it_is_told_of(cluster):
    """KIP-516's safety: a StopReplica naming another topic id leaves the log alone; a LeaderAndIsr naming
    another topic id replaces the stale log with a fresh one."""
    controller, epoch = await controller_of(cluster)
    target = next(b for b in cluster.brokers if b.id != controller)
    await create_topic(cluster, "incarnations", assignments={0: [target.id]})
    znode = await topic_znode(cluster, "incarnations")
    assert znode is not None and znode.topic_id
    async with connect(target) as connection:
        await produce(connection, "incarnations", 0, [b"a", b"b", b"c"])
        stop = StopReplicaRequest(controller_id=controller, controller_epoch=epoch, broker_epoch=-1, partitions=[
            StopReplicaPartition(topic="incarnations", partition=0, delete_partition=True,
                                 topic_id=znodes.new_topic_id())])
        await connection.request(stop)
        assert (await describe(connection, "incarnations"))[0].log_end_offset == 3
        assert partition_dirs(cluster, target.id, "incarnations") == ["incarnations-0"]

        state = (await describe(connection, "incarnations"))[0]
        other = znodes.new_topic_id()
        response = await connection.request(LeaderAndIsrRequest(
            controller_id=controller, controller_epoch=epoch, broker_epoch=-1, live_leaders=[],
            partition_states=[LeaderAndIsrPartitionState(
                topic="incarnations", partition=0, controller_epoch=epoch, leader=target.id,
                leader_epoch=state.leader_epoch + 1, isr=[target.id], zk_version=0, replicas=[target.id],
                topic_id=other)]))
        assert isinstance(response, LeaderAndIsrResponse)
        assert [e.error_code for e in response.partition_errors] == [ErrorCode.NONE]
        assert (await describe(connection, "incarnations"))[0].log_end_offset == 0
    # The new log's partition.metadata is written in the background after the LeaderAndIsr is answered.
    metadata_file = Path(target.log_dir) / "incarnations-0" / "partition.metadata"

    async def names_the_new_topic_id() -> bool | None:
        with contextlib.suppress(FileNotFoundError):
            if metadata_file.read_text() == f"version: 0\ntopic_id: {other}\n":
                return True
        return None

    await eventually(names_the_new_topic_id, "partition.metadata to name the new topic id")


async def test_deletion_is_refused_when_delete_topic_enable_is_false(undeletable):
    await create_topic(undeletable, "kept", partitions=1, replication_factor=1)
    kept = await produce_values(undeletable, "kept", [b"stays"])
    result = cli("topic", "delete", "kept", "--dir", str(undeletable.directory), check=False)
    assert result.returncode == 1
    assert "TOPIC_DELETION_DISABLED" in result.stderr
    # A tool writing /admin/delete_topics directly: the controller removes the entry and keeps the topic.
    async with zookeeper_of(undeletable) as zk:
        await zk.create(znodes.delete_topic_path("kept"))

        async def dropped() -> bool | None:
            return True if await zk.exists(znodes.delete_topic_path("kept")) is None else None

        await eventually(dropped, "the controller to drop /admin/delete_topics/kept")
        assert await zk.exists(znodes.topic_path("kept")) is not None
    assert await consume_all(undeletable, "kept") == kept
