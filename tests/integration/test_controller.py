"""KafkaController against a real ZooKeeper: election and failover, topic creation (znodes in Kafka's formats,
seed 001's assignment, one LeaderAndIsr per broker), refusals, epoch fencing and broker/topic changes. Brokers
are stood in for by a small fake network that answers and records the controller's requests."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import TYPE_CHECKING, Any

import pytest

from controller.channel import BrokerRemovedError, ControllerChannelManager
from controller.controller import KafkaController
from protocol.apis.replica_control import LeaderAndIsrRequest, UpdateMetadataRequest, UpdateMetadataResponse
from protocol.apis.topics import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from protocol.errors import ErrorCode
from tests.integration.controllerutil import PORT_BASE, TIMEOUT, Cluster, FakeNetwork, until
from zk import znodes

if TYPE_CHECKING:
    from tests.integration.conftest import ZkSessionFactory


def topic(name: str, partitions: int = 1, rf: int = 1, **kwargs: Any) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf, **kwargs)


async def create(controller: KafkaController, *topics: CreatableTopic, **kwargs: Any) -> list[tuple[str, int, str]]:
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=kwargs.pop("timeout_ms", 5000), **kwargs)
    response = await controller.create_topics(request)
    return [(r.name, r.error_code, r.error_message or "") for r in response.topics]


# ---------------------------------------------------------------------------------------------


async def test_one_of_three_is_elected_and_a_successor_takes_over_with_the_next_epoch(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        first = await cluster.active_controller()
        assert first.controller.epoch == 1
        assert await cluster.znode("/controller_epoch") == b"1"
        assert znodes.decode_controller(await cluster.znode("/controller")) == first.id
        await until(
            lambda: all(b.controller.controller_id == first.id for b in cluster.nodes.values()),
            "every broker to know the controller",
        )
        assert {r.controller_id for r in cluster.network.requests(UpdateMetadataRequest)} == {first.id}

        await cluster.stop(first.id)
        second = await cluster.active_controller()
        assert second.id != first.id and second.controller.epoch == 2
        assert await cluster.znode("/controller_epoch") == b"2"
        assert znodes.decode_controller(await cluster.znode("/controller")) == second.id


async def test_create_topics_writes_kafka_znodes_and_one_leader_and_isr_per_broker(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        cluster.network.sent.clear()
        results = await create(active.controller, topic("events", 6, 2, configs={"min.insync.replicas": "2"}))
        assert results == [("events", ErrorCode.NONE, "")]

        # Kafka's assignment over the sorted brokers [1, 2, 3]: partition i on broker i mod 3, as in seed 001; the
        # followers of the second round of 3 are shifted by one.
        expected = {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3], 4: [2, 1], 5: [3, 2]}
        # Kafka 2.8+'s version 3, with a topic id (KIP-516): 16 random bytes in URL-safe base64.
        znode = await cluster.znode("/brokers/topics/events")
        topic_id = json.loads(znode)["topic_id"]
        assert len(base64.urlsafe_b64decode(topic_id + "==")) == 16
        assert znode == (
            b'{"version":3,"topic_id":"' + topic_id.encode() + b'",'
            b'"partitions":{"0":[1,2],"1":[2,3],"2":[3,1],"3":[1,3],"4":[2,1],"5":[3,2]},'
            b'"adding_replicas":{},"removing_replicas":{}}'
        )
        assert await cluster.znode("/config/topics/events") == b'{"version":1,"config":{"min.insync.replicas":"2"}}'
        for p, replicas in expected.items():
            state = await cluster.znode(f"/brokers/topics/events/partitions/{p}/state")
            leader, follower = replicas
            assert (
                state
                == (
                    f'{{"controller_epoch":1,"leader":{leader},"version":1,"leader_epoch":0,"isr":[{leader},{follower}]}}'
                ).encode()
            )

        # Answered after the LeaderAndIsr requests were acknowledged: one per broker, with its partitions.
        assert cluster.network.destinations(LeaderAndIsrRequest) == [1, 2, 3]
        for broker in cluster.nodes.values():
            (request,) = cluster.network.requests(LeaderAndIsrRequest, to=broker.id)
            assert (request.controller_id, request.controller_epoch, request.broker_epoch) == (
                active.id,
                1,
                broker.epoch,
            )
            states = {s.partition: s for s in request.partition_states}
            assert sorted(states) == [p for p, replicas in expected.items() if broker.id in replicas]
            for p, s in states.items():
                assert (s.topic, s.controller_epoch, s.leader, s.leader_epoch) == ("events", 1, expected[p][0], 0)
                assert (s.isr, s.replicas, s.zk_version, s.is_new) == (expected[p], expected[p], 0, True)
            assert sorted(leader.broker_id for leader in request.live_leaders) == sorted(
                {s.leader for s in states.values()}
            )
        await until(lambda: cluster.network.destinations(UpdateMetadataRequest) == [1, 2, 3], "UpdateMetadata")
        for request in cluster.network.requests(UpdateMetadataRequest):
            assert sorted(s.partition for s in request.partition_states) == list(expected)
            assert all(s.offline_replicas == [] for s in request.partition_states)


async def test_create_topics_answers_request_timed_out_while_a_replica_is_unreachable(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2)
        active = await cluster.active_controller()
        other = 3 - active.id
        cluster.network.unreachable.add(other)
        results = await create(active.controller, topic("slow", 2, 2), timeout_ms=300)
        assert results[0][:2] == ("slow", ErrorCode.REQUEST_TIMED_OUT)
        assert await cluster.znode("/brokers/topics/slow") is not None
        cluster.network.unreachable.clear()  # the channel keeps retrying until the broker answers
        await until(lambda: cluster.network.requests(LeaderAndIsrRequest, to=other), "the retried LeaderAndIsr")
        (request,) = cluster.network.requests(LeaderAndIsrRequest, to=other)
        assert sorted(s.partition for s in request.partition_states) == [0, 1]


async def test_create_topics_refusals_write_nothing(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        created = await create(active.controller, topic("events"), topic("metrics.cpu"))
        assert [code for _, code, _ in created] == [ErrorCode.NONE, ErrorCode.NONE]
        cluster.network.sent.clear()
        assignment = [CreatableReplicaAssignment(partition=0, broker_ids=[1, 7])]
        results = await create(
            active.controller,
            topic("too-many-replicas", 1, 4),
            topic("bad/name"),
            topic("events"),
            topic("metrics_cpu"),
            topic("no-partitions", 0, 1),
            topic("bad-config", configs={"segment.bytes": "big"}),
            topic("unknown-config", configs={"no.such.config": "1"}),
            topic("dead-replica", -1, -1, assignments=assignment),
            topic("both", 1, -1, assignments=[CreatableReplicaAssignment(partition=0, broker_ids=[1])]),
            topic("twice"),
            topic("twice"),
        )
        codes = {name: (code, message) for name, code, message in results}
        assert codes["too-many-replicas"] == (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor: 4 larger than available brokers: 3.",
        )
        assert codes["bad/name"][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert codes["events"] == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'events' already exists.")
        assert codes["metrics_cpu"] == (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            "Topic 'metrics_cpu' collides with existing topic: metrics.cpu",
        )
        assert codes["no-partitions"][0] == ErrorCode.INVALID_PARTITIONS
        assert codes["bad-config"][0] == ErrorCode.INVALID_CONFIG and "segment.bytes" in codes["bad-config"][1]
        assert codes["unknown-config"][0] == ErrorCode.INVALID_CONFIG and "no.such.config" in codes["unknown-config"][1]
        assert codes["dead-replica"][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert codes["both"][0] == ErrorCode.INVALID_REQUEST
        assert [code for name, code, _ in results if name == "twice"] == [ErrorCode.INVALID_REQUEST] * 2

        ok = topic("valid")
        assert await create(active.controller, ok, validate_only=True) == [("valid", ErrorCode.NONE, "")]
        follower = next(b for b in cluster.nodes.values() if not b.controller.is_active)
        not_controller = await create(follower.controller, ok)
        assert [code for _, code, _ in not_controller] == [ErrorCode.NOT_CONTROLLER]

        assert await cluster.observer.get_children("/brokers/topics") == ["events", "metrics.cpu"]
        assert await cluster.observer.get_children("/config/topics") == ["events", "metrics.cpu"]
        assert cluster.network.requests(LeaderAndIsrRequest) == []


async def test_concurrent_requests_are_handled_one_at_a_time(zk_session: ZkSessionFactory):
    """The controller's state has one writer: requests arriving together become events handled in turn, so
    of five CreateTopics for one name, one creates it and the others find it there."""
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        cluster.network.sent.clear()
        results = await asyncio.gather(*(create(active.controller, topic("raced", 2, 3)) for _ in range(5)))
        codes = sorted(code for [(_, code, _)] in results)
        assert codes == [ErrorCode.NONE] + [ErrorCode.TOPIC_ALREADY_EXISTS] * 4
        assert sorted(await cluster.observer.get_children("/brokers/topics/raced/partitions")) == ["0", "1"]
        # One LeaderAndIsr per broker: the topic's partitions were set up once.
        assert cluster.network.destinations(LeaderAndIsrRequest) == [1, 2, 3]


async def test_explicit_assignment_and_default_counts(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        explicit = [CreatableReplicaAssignment(partition=p, broker_ids=ids) for p, ids in ((1, [1, 2]), (0, [3, 1]))]
        results = await create(
            active.controller, topic("explicit", -1, -1, assignments=explicit), topic("defaults", -1, -1)
        )
        assert [code for _, code, _ in results] == [ErrorCode.NONE, ErrorCode.NONE]
        assert znodes.decode_topic_assignment(await cluster.znode("/brokers/topics/explicit")) == {0: [3, 1], 1: [1, 2]}
        assert znodes.decode_topic_assignment(await cluster.znode("/brokers/topics/defaults")) == {0: [1]}
        state = znodes.decode_partition_state(await cluster.znode("/brokers/topics/explicit/partitions/0/state"), 0)
        assert (state.leader, state.isr) == (3, (3, 1))


async def test_a_deposed_controller_is_fenced_by_the_epoch_znode_version(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        deposed = await cluster.active_controller()
        await cluster.observer.set("/controller_epoch", b"7")  # another controller's election, behind its back
        cluster.network.sent.clear()
        results = await create(deposed.controller, topic("fenced", 3, 3), topic("fenced-too"))
        assert [code for _, code, _ in results] == [ErrorCode.NOT_CONTROLLER] * 2
        assert await cluster.observer.exists("/brokers/topics/fenced") is None
        assert await cluster.observer.exists("/config/topics/fenced") is None
        assert await cluster.observer.get_children("/brokers/topics") == []
        assert cluster.network.requests(LeaderAndIsrRequest) == []
        # The deposed controller stepped down; whoever wins next takes the epoch after the bumped one.
        successor = await cluster.active_controller()
        assert successor.controller.epoch == 8
        assert await create(successor.controller, topic("after")) == [("after", ErrorCode.NONE, "")]


async def test_topics_from_other_tools_and_brokers_coming_and_going(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1)
        active = await cluster.active_controller()
        await cluster.start(2)
        assert await cluster.active_controller() is active
        cluster.network.sent.clear()

        # A topic znode written by another tool: the controller creates its partition states (broker 3 is
        # not live yet, so partition 1 starts with the live replicas only).
        await cluster.observer.create("/brokers/topics/tool", znodes.encode_topic_assignment({0: [2, 1], 1: [3, 1]}))
        await until(lambda: len(cluster.network.requests(LeaderAndIsrRequest)) == 2, "LeaderAndIsr for tool")
        state0 = znodes.decode_partition_state(await cluster.znode("/brokers/topics/tool/partitions/0/state"), 0)
        state1 = znodes.decode_partition_state(await cluster.znode("/brokers/topics/tool/partitions/1/state"), 0)
        assert (state0.leader, state0.isr, state1.leader, state1.isr) == (2, (2, 1), 1, (1,))
        (to_2,) = cluster.network.requests(LeaderAndIsrRequest, to=2)
        assert [(s.partition, s.is_new) for s in to_2.partition_states] == [(0, True)]

        # Broker 3 starts: the others learn it is alive, it gets the full metadata and its replicas.
        cluster.network.sent.clear()
        await cluster.start(3)
        await until(lambda: cluster.network.requests(LeaderAndIsrRequest, to=3), "LeaderAndIsr to broker 3")
        (to_3,) = cluster.network.requests(LeaderAndIsrRequest, to=3)
        assert [(s.topic, s.partition, s.leader, s.isr, s.replicas) for s in to_3.partition_states] == [
            ("tool", 1, 1, [1], [3, 1])
        ]
        assert to_3.broker_epoch == cluster.nodes[3].epoch
        full = [r for r in cluster.network.requests(UpdateMetadataRequest, to=3) if len(r.partition_states) == 2]
        assert full and [b.id for b in full[0].live_brokers] == [1, 2, 3]

        # Broker 2 goes: the others learn it is gone and which replicas are offline.
        cluster.network.sent.clear()
        await cluster.stop(2)
        await until(lambda: cluster.network.destinations(UpdateMetadataRequest) == [1, 3], "UpdateMetadata")
        for request in cluster.network.requests(UpdateMetadataRequest):
            assert [b.id for b in request.live_brokers] == [1, 3]
            assert [(s.partition, s.offline_replicas) for s in request.partition_states] == [(0, [2])]


async def test_channel_retries_until_answered_and_a_stuck_broker_delays_no_one():
    network = FakeNetwork()
    network.unreachable.add(2)
    network.stalled.add(3)
    channel = ControllerChannelManager(1, network.connect, backoff_ms=5, max_backoff_ms=20)
    for broker_id in (1, 2, 3):
        channel.add_broker(broker_id, "127.0.0.1", PORT_BASE + broker_id)
    request = UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, broker_epoch=0, partition_states=[], live_brokers=[]
    )
    to_1, to_2, to_3 = (channel.send(b, request) for b in (1, 2, 3))
    assert isinstance(await asyncio.wait_for(to_1, TIMEOUT), UpdateMetadataResponse)
    assert not to_2.done() and not to_3.done()
    network.unreachable.clear()
    assert isinstance(await asyncio.wait_for(to_2, TIMEOUT), UpdateMetadataResponse)
    await channel.remove_broker(3)
    with pytest.raises(BrokerRemovedError):
        await to_3
    with pytest.raises(BrokerRemovedError):
        channel.send(3, request)
    assert channel.broker_ids == [1, 2]
    await channel.shutdown()
    assert channel.broker_ids == []
    assert network.destinations(UpdateMetadataRequest) == [1, 2]


async def test_a_removed_broker_is_let_go_even_when_its_connection_attempt_swallows_the_cancellation():
    # Python 3.11's asyncio.wait_for returns the awaited outcome instead of raising CancelledError when both
    # arrive together: a connection attempt that fails just as the sender is cancelled looks like one more
    # failed attempt. The sender must end anyway, or removing the broker (a controller event) waits for ever.
    attempts, swallowing = 0, True

    class SwallowingConnection:
        async def connect(self) -> None:
            nonlocal attempts
            attempts += 1
            try:
                await asyncio.sleep(0.005)
            except asyncio.CancelledError:
                if not swallowing:
                    raise
            raise OSError("connection refused")  # what the race does: the attempt's failure, not the cancellation

        async def request(self, body: object) -> object:
            raise AssertionError("never connected")

        async def close(self) -> None:
            pass

    channel = ControllerChannelManager(1, lambda host, port: SwallowingConnection(), backoff_ms=1, max_backoff_ms=1)
    channel.add_broker(2, "127.0.0.1", PORT_BASE + 2)
    pending = channel.send(2, UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=0,
                                                    partition_states=[], live_brokers=[]))
    try:
        await until(lambda: attempts >= 3, "a few connection attempts")
        removing = asyncio.get_running_loop().create_task(channel.remove_broker(2))
        await until(removing.done, "the broker's sender to end")
        with pytest.raises(BrokerRemovedError):
            await pending
    finally:
        swallowing = False  # a sender left running ends with the test's loop


async def test_removing_a_broker_can_itself_be_cancelled():
    # The controller's event task may be stopped while it removes a broker whose sender takes a while to end: the
    # cancellation must reach the event task, not be taken for the sender's own.
    answering = asyncio.Event()

    class SlowToStopConnection:
        async def connect(self) -> None:
            pass

        async def request(self, body: object) -> object:
            answering.set()
            try:
                await asyncio.Future()
            except asyncio.CancelledError:
                await asyncio.sleep(0.2)  # cleaning up
                raise

        async def close(self) -> None:
            pass

    channel = ControllerChannelManager(1, lambda host, port: SlowToStopConnection())
    channel.add_broker(2, "127.0.0.1", PORT_BASE + 2)
    channel.send(2, UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=0, partition_states=[],
                                          live_brokers=[]))
    await asyncio.wait_for(answering.wait(), TIMEOUT)
    removing = asyncio.get_running_loop().create_task(channel.remove_broker(2))
    await until(lambda: channel.broker_ids == [], "the removal to wait for the sender to end")
    assert not removing.done()
    removing.cancel()
    await asyncio.gather(removing, return_exceptions=True)
    assert removing.cancelled()
