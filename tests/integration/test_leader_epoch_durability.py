"""A broker made leader at a new epoch has that epoch in the partition's leader-epoch-checkpoint before it answers
LeaderAndIsr, and produce requests that arrive meanwhile are appended after the change, at the new epoch.

The broker writes the checkpoints of one request together on worker threads while its event loop goes on; these
tests send LeaderAndIsr requests straight to a broker (as its controller would) for a topic of many partitions.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCheckpointFile
from broker.log.epoch_cache import LeaderEpochCache
from client.cluster import ClusterState
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.replica_control import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LiveLeader,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.records import iter_batches
from tests.integration.clusterutil import build_batch, cluster_fixture, connect, controller_of, create_topic, describe

cluster = cluster_fixture(brokers=1)

PARTITIONS = 400


async def leader_and_isr(cluster: ClusterState, topic: str, leader_epoch: int) -> LeaderAndIsrRequest:
    """LeaderAndIsr from the current controller: the only broker leads every partition of `topic` at leader_epoch."""
    [broker] = cluster.brokers
    controller, controller_epoch = await controller_of(cluster)
    return LeaderAndIsrRequest(
        controller_id=controller, controller_epoch=controller_epoch, broker_epoch=-1,
        partition_states=[LeaderAndIsrPartitionState(
            topic=topic, partition=p, controller_epoch=controller_epoch, leader=broker.id, leader_epoch=leader_epoch,
            isr=[broker.id], zk_version=0, replicas=[broker.id]) for p in range(PARTITIONS)],
        live_leaders=[LiveLeader(broker_id=broker.id, host=broker.host, port=broker.port)])


def assert_applied(response: object) -> None:
    assert isinstance(response, LeaderAndIsrResponse)
    assert response.error_code == ErrorCode.NONE
    assert {ErrorCode.from_code(e.error_code) for e in response.partition_errors} == {ErrorCode.NONE}


def partition_dir(cluster: ClusterState, topic: str, partition: int) -> Path:
    return Path(cluster.brokers[0].log_dir) / f"{topic}-{partition}"


def checkpointed(cluster: ClusterState, topic: str, partition: int) -> list[EpochEntry]:
    return LeaderEpochCheckpointFile(partition_dir(cluster, topic, partition) / LEADER_EPOCH_CHECKPOINT).read()


async def test_every_new_leader_epoch_is_in_its_checkpoint_when_leader_and_isr_is_answered(cluster):
    topic = "epochs-written"
    await create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=1)
    async with connect(cluster.brokers[0]) as connection:
        for partition in range(0, PARTITIONS, 40):
            await connection.request(ProduceRequest(acks=1, timeout_ms=5000, topics=[Topic(name=topic, partitions=[
                ProducePartition(partition=partition, records=build_batch([b"a", b"b"]))])]))
        assert_applied(await connection.request(await leader_and_isr(cluster, topic, leader_epoch=3)))
        files = {p: checkpointed(cluster, topic, p) for p in range(PARTITIONS)}  # read before anything else
        ends = {p: state.log_end_offset for p, state in (await describe(connection, topic)).items()}
    assert {p: entries[-1] for p, entries in files.items()} == {p: EpochEntry(3, ends[p]) for p in range(PARTITIONS)}
    assert {ends[p] for p in range(0, PARTITIONS, 40)} == {2}


async def test_produce_requests_during_a_leader_change_are_appended_at_the_epoch_their_offsets_are_checkpointed(
        cluster):
    topic = "epochs-appended"
    await create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=1)
    async with connect(cluster.brokers[0]) as controller, connect(cluster.brokers[0]) as producer:

        async def produce(value: bytes) -> None:
            response = await producer.request(ProduceRequest(acks=1, timeout_ms=5000, topics=[Topic(
                name=topic, partitions=[ProducePartition(partition=0, records=build_batch([value]))])]))
            assert isinstance(response, ProduceResponse)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE

        for epoch in (1, 2):
            request = await leader_and_isr(cluster, topic, leader_epoch=epoch)
            change = asyncio.create_task(controller.request(request))
            while not change.done():  # produce requests are in flight all through the change
                await asyncio.gather(*(produce(f"{epoch}".encode()) for _ in range(4)))
            assert_applied(await change)
        await produce(b"last")
    data = b"".join(path.read_bytes() for path in sorted(partition_dir(cluster, topic, 0).glob("*.log")))
    batches = [(header.base_offset, header.partition_leader_epoch) for _position, header in iter_batches(data)]
    epochs = LeaderEpochCache(entries=checkpointed(cluster, topic, 0))
    assert [epoch for _offset, epoch in batches] == sorted(epoch for _offset, epoch in batches)
    assert batches[-1][1] == 2
    assert [(offset, epochs.epoch_for_offset(offset)) for offset, _epoch in batches] == batches
