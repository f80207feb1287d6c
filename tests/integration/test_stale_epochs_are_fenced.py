"""Controller and broker epoch fencing on a real broker (seed 001, KIP-380): LeaderAndIsr, UpdateMetadata and
StopReplica sent over a plain connection with controller epoch 0, older than the elected controller's (>= 1, from
/controller_epoch), are refused with STALE_CONTROLLER_EPOCH and change nothing; with the current controller epoch
but the broker epoch of an older registration of the broker (a request the network held back past a session
expiry), they are refused with STALE_BROKER_EPOCH and change nothing; a LeaderAndIsr with the current controller
epoch but a leader epoch that is not newer than the partition's is refused for that partition (Kafka answers
STALE_CONTROLLER_EPOCH there too) and changes nothing either.

Topics of this module are placed on the controller and one other broker (the target) only, so the third broker
hosts no partition at all: it knows the controller epoch from UpdateMetadata alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client.cluster import ClusterState
from protocol.apis.replica_control import (
    UNKNOWN_BROKER_EPOCH,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LiveBroker,
    LiveLeader,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocol.apis.replicas import DescribeReplicasRequest
from protocol.errors import ErrorCode
from tests.integration.clusterutil import (
    cluster_fixture,
    connect,
    controller_of,
    create_topic,
    describe,
    metadata,
    produce,
    registration,
    zookeeper_of,
)
from tests.polling import eventually
from transport.connection import BrokerConnection

cluster = cluster_fixture(brokers=3)

STALE_EPOCH = 0


async def roles(cluster: ClusterState) -> tuple[int, int, int, int]:
    """(controller, its epoch, target: a broker hosting this module's topics, bystander: one hosting none)."""
    controller, epoch = await controller_of(cluster)
    assert epoch >= 1
    target, bystander = [b.id for b in cluster.brokers if b.id != controller]
    return controller, epoch, target, bystander


def stable(states: dict[int, Any]) -> dict[int, tuple[object, ...]]:
    """What a DescribeReplicas says about each partition, without the fetch times that move on their own."""
    return {
        p: (s.role, s.leader, s.leader_epoch, s.log_end_offset, s.high_watermark, s.log_start_offset, tuple(s.isr),
            tuple(sorted((f.broker_id, f.log_end_offset) for f in s.followers)))
        for p, s in states.items()
    }


def leader_and_isr(controller: int, controller_epoch: int, topic: str, partition: int, *, leader: int,
                   leader_epoch: int, replicas: list[int], cluster: ClusterState,
                   broker_epoch: int = UNKNOWN_BROKER_EPOCH) -> LeaderAndIsrRequest:
    broker = cluster.broker(leader)
    return LeaderAndIsrRequest(
        controller_id=controller, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        partition_states=[LeaderAndIsrPartitionState(
            topic=topic, partition=partition, controller_epoch=controller_epoch, leader=leader,
            leader_epoch=leader_epoch, isr=[leader], zk_version=99, replicas=replicas)],
        live_leaders=[LiveLeader(broker_id=leader, host=broker.host, port=broker.port)])


def alone_and_leading(controller: int, controller_epoch: int, topic: str, *, target: int, cluster: ClusterState,
                      broker_epoch: int = UNKNOWN_BROKER_EPOCH) -> UpdateMetadataRequest:
    """An UpdateMetadata that would leave the target alone in the cluster, leading partition 0 of `topic`."""
    return UpdateMetadataRequest(
        controller_id=controller, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        partition_states=[UpdateMetadataPartitionState(
            topic=topic, partition=0, controller_epoch=controller_epoch, leader=target, leader_epoch=7,
            isr=[target], zk_version=99, replicas=[controller, target], offline_replicas=[controller])],
        live_brokers=[LiveBroker(id=target, endpoints=[UpdateMetadataEndpoint(
            listener="PLAINTEXT", host=cluster.broker(target).host, port=cluster.broker(target).port)])])


def stop_and_delete(controller: int, controller_epoch: int, topic: str, *,
                    broker_epoch: int = UNKNOWN_BROKER_EPOCH) -> StopReplicaRequest:
    """A StopReplica that would stop partition 0 of `topic` and delete its log."""
    return StopReplicaRequest(
        controller_id=controller, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        partitions=[StopReplicaPartition(topic=topic, partition=0, delete_partition=True)])


async def wait_replicated(connection: BrokerConnection, topic: str, ends: dict[int, int]) -> None:
    """Until the connected broker's replicas of `topic` have LEO = HW = ends[partition]."""

    async def reached() -> bool | None:
        states = await describe(connection, topic)
        ok = all(p in states and (states[p].log_end_offset, states[p].high_watermark) == (end, end)
                 for p, end in ends.items())
        return True if ok else None

    await eventually(reached, f"{topic} to reach {ends} on broker {connection.port}")


async def test_requests_with_a_stale_controller_epoch_are_refused_and_change_nothing(cluster):
    topic = "fenced"
    controller, _epoch, target, _ = await roles(cluster)
    await create_topic(cluster, topic, assignments={0: [controller, target]})
    async with connect(cluster.broker(controller)) as leader, connect(cluster.broker(target)) as conn:
        assert await produce(leader, topic, 0, [b"a", b"b", b"c", b"d", b"e"]) == 0
        await wait_replicated(conn, topic, {0: 5})
        before = stable(await describe(conn, topic))
        assert before[0][:3] == ("follower", controller, 0)
        metadata_before = await metadata(conn, [topic])
        assert metadata_before.controller_id == controller

        # LeaderAndIsr from a deposed controller: would make the target leader with a newer leader epoch.
        response = await conn.request(leader_and_isr(controller, STALE_EPOCH, topic, 0, leader=target,
                                                     leader_epoch=7, replicas=[controller, target], cluster=cluster))
        assert isinstance(response, LeaderAndIsrResponse)
        assert ErrorCode.from_code(response.error_code) == ErrorCode.STALE_CONTROLLER_EPOCH

        # UpdateMetadata from a deposed controller: would leave the target alone in the cluster, leading.
        response = await conn.request(alone_and_leading(controller, STALE_EPOCH, topic, target=target,
                                                        cluster=cluster))
        assert isinstance(response, UpdateMetadataResponse)
        assert ErrorCode.from_code(response.error_code) == ErrorCode.STALE_CONTROLLER_EPOCH

        # StopReplica from a deposed controller: would stop the replica and delete its log.
        response = await conn.request(stop_and_delete(controller, STALE_EPOCH, topic))
        assert isinstance(response, StopReplicaResponse)
        assert ErrorCode.from_code(response.error_code) == ErrorCode.STALE_CONTROLLER_EPOCH

        assert stable(await describe(conn, topic)) == before
        assert await metadata(conn, [topic]) == metadata_before
        assert (Path(cluster.broker(target).log_dir) / f"{topic}-0").is_dir()

        # The target still follows the real leader.
        assert await produce(leader, topic, 0, [b"f", b"g"]) == 5
        await wait_replicated(conn, topic, {0: 7})


async def test_requests_for_an_older_registration_of_the_broker_are_refused_and_change_nothing(cluster):
    """The current controller epoch, but the broker epoch of the target's registration before its last one: what
    a controller sent to the broker's old incarnation and the network delivered only after the broker registered
    again (its session expired behind a partition) must not undo what the controller has told it since."""
    topic = "broker-epoch-fenced"
    controller, epoch, target, _ = await roles(cluster)
    await create_topic(cluster, topic, assignments={0: [controller, target]})
    async with zookeeper_of(cluster) as zk:
        broker_epoch = await registration(zk, target)
    assert broker_epoch is not None
    old = broker_epoch - 1
    async with connect(cluster.broker(controller)) as leader, connect(cluster.broker(target)) as conn:
        assert await produce(leader, topic, 0, [b"a", b"b", b"c"]) == 0
        await wait_replicated(conn, topic, {0: 3})
        before = stable(await describe(conn, topic))
        metadata_before = await metadata(conn, [topic])

        answers = [await conn.request(request) for request in (
            leader_and_isr(controller, epoch, topic, 0, leader=target, leader_epoch=7,
                           replicas=[controller, target], cluster=cluster, broker_epoch=old),
            alone_and_leading(controller, epoch, topic, target=target, cluster=cluster, broker_epoch=old),
            stop_and_delete(controller, epoch, topic, broker_epoch=old),
        )]
        assert [(type(a), ErrorCode.from_code(a.error_code)) for a in answers] == [
            (LeaderAndIsrResponse, ErrorCode.STALE_BROKER_EPOCH),
            (UpdateMetadataResponse, ErrorCode.STALE_BROKER_EPOCH),
            (StopReplicaResponse, ErrorCode.STALE_BROKER_EPOCH)]

        assert stable(await describe(conn, topic)) == before
        assert await metadata(conn, [topic]) == metadata_before
        assert (Path(cluster.broker(target).log_dir) / f"{topic}-0").is_dir()
        assert await produce(leader, topic, 0, [b"d"]) == 3
        await wait_replicated(conn, topic, {0: 4})


async def test_a_leader_epoch_that_is_not_newer_is_refused_for_that_partition(cluster):
    topic = "epoch-fenced"
    controller, epoch, target, _ = await roles(cluster)
    # Partition 0 led by the controller, partition 1 by the target; each follows the other.
    await create_topic(cluster, topic, assignments={0: [controller, target], 1: [target, controller]})
    async with connect(cluster.broker(controller)) as on_controller, connect(cluster.broker(target)) as conn:
        assert await produce(on_controller, topic, 0, [b"p0-a", b"p0-b"]) == 0
        assert await produce(conn, topic, 1, [b"p1-a", b"p1-b", b"p1-c"]) == 0
        await wait_replicated(conn, topic, {0: 2, 1: 3})
        await wait_replicated(on_controller, topic, {0: 2, 1: 3})
        before = stable(await describe(conn, topic))
        assert [before[p][:3] for p in (0, 1)] == [("follower", controller, 0), ("leader", target, 0)]
        _, current_epoch = await controller_of(cluster)
        assert current_epoch == epoch

        # The current controller epoch, but leader epoch 0 again: the target would swap roles on both partitions.
        request = leader_and_isr(controller, epoch, topic, 0, leader=target, leader_epoch=0,
                                 replicas=[controller, target], cluster=cluster)
        swap = leader_and_isr(controller, epoch, topic, 1, leader=controller, leader_epoch=0,
                              replicas=[target, controller], cluster=cluster)
        request.partition_states += swap.partition_states
        request.live_leaders += swap.live_leaders
        response = await conn.request(request)
        assert isinstance(response, LeaderAndIsrResponse)
        assert ErrorCode.from_code(response.error_code) == ErrorCode.NONE
        assert sorted((e.topic, e.partition, ErrorCode.from_code(e.error_code)) for e in response.partition_errors) \
            == [(topic, 0, ErrorCode.STALE_CONTROLLER_EPOCH), (topic, 1, ErrorCode.STALE_CONTROLLER_EPOCH)]

        assert stable(await describe(conn, topic)) == before
        # Both partitions still replicate as before.
        assert await produce(on_controller, topic, 0, [b"p0-c"]) == 2
        assert await produce(conn, topic, 1, [b"p1-d"]) == 3
        await wait_replicated(conn, topic, {0: 3, 1: 4})
        await wait_replicated(on_controller, topic, {0: 3, 1: 4})


async def test_a_broker_hosting_no_partition_refuses_a_stale_controller_epoch(cluster):
    """The bystander learned the controller epoch from UpdateMetadata only; a deposed controller must not make
    it create and lead a partition."""
    controller, epoch, _, bystander = await roles(cluster)
    async with connect(cluster.broker(bystander)) as conn:
        assert (await conn.request(DescribeReplicasRequest(topics=None))).partitions == []
        assert (await metadata(conn)).controller_id == controller, "it heard from the current controller"

        response = await conn.request(leader_and_isr(controller, STALE_EPOCH, "ghost", 0, leader=bystander,
                                                     leader_epoch=0, replicas=[bystander], cluster=cluster))
        assert isinstance(response, LeaderAndIsrResponse)
        hosted = [(s.topic, s.partition, s.role) for s in
                  (await conn.request(DescribeReplicasRequest(topics=None))).partitions]
        assert (ErrorCode.from_code(response.error_code), hosted) == (ErrorCode.STALE_CONTROLLER_EPOCH, []), (
            f"controller epoch {STALE_EPOCH} is older than the current {epoch}")

        response = await conn.request(stop_and_delete(controller, STALE_EPOCH, "ghost"))
        assert ErrorCode.from_code(response.error_code) == ErrorCode.STALE_CONTROLLER_EPOCH
