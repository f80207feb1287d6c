"""KafkaController under failures, against a real ZooKeeper: leader election when a broker dies (clean, offline,
unclean by topic config, and at run time through a config change notification), an offline partition coming
back, ISR change notifications, bounced brokers, controller session suspension and expiry (a TCP proxy between a
controller and ZooKeeper cuts its connection), epoch fencing of a zombie controller, and controlled shutdown.
Brokers are stood in for by the recording fake network of tests.integration.controllerutil."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from broker.log.config import LogConfig
from controller.partition_state_machine import STATE_UPDATE_ATTEMPTS
from protocol.apis.replica_control import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from protocol.apis.topics import CreateTopicsRequest
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from tests.integration.controllerutil import Cluster, assigned, create, endpoints, no_children, until
from zk import znodes
from zk.client import CreateOp, DeleteOp
from zk.topic_config import (
    BROKER_ENTITY,
    DEFAULT_BROKER,
    alter_entity_config,
    alter_topic_config,
    decode_config_change,
)

if TYPE_CHECKING:
    from tests.integration.conftest import ZkSessionFactory


def state_changes(caplog: pytest.LogCaptureFixture, topic: str) -> list[dict[str, Any]]:
    """The controller's state-change log lines for a topic."""
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "state.change"]
    return [line for line in lines if line["source"] == "controller" and line["topic"] == topic]


@pytest.fixture(autouse=True)
def _capture_state_changes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="state.change")
    caplog.set_level(logging.INFO, logger="controller")


# ---------------------------------------------------------------------------------------------


async def test_broker_death_elects_from_the_isr_and_removes_it_from_isrs(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1)
        active = await cluster.active_controller()
        await cluster.start(2, 3)
        await cluster.active_controller()
        await create(active, assigned("t", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, min_insync_replicas="2"))
        before = {p: await cluster.state("t", p) for p in range(3)}
        cluster.network.sent.clear()

        await cluster.stop(2)
        await until(lambda: cluster.network.destinations(LeaderAndIsrRequest) == [1, 1, 3, 3],
                    "two LeaderAndIsr to 1 and 3")

        # p1: broker 2 led; 3 is the first live ISR member in assignment order. p0, p2: 2 leaves the ISR.
        # Every change bumps the leader epoch (also the ISR shrinks, as Kafka's ReplicaStateMachine does).
        expected = {0: (1, 1, (1, 3)), 1: (3, 1, (3, 1)), 2: (3, 1, (3, 1))}
        for p, (leader, leader_epoch, isr) in expected.items():
            state = await cluster.state("t", p)
            assert (state.leader, state.leader_epoch, state.isr, state.controller_epoch) == (leader, leader_epoch,
                                                                                              isr, 1)
            assert state.zk_version == before[p].zk_version + 1
            for broker in (1, 3):
                assert cluster.leader_and_isr(broker, "t", p) == [(leader, leader_epoch, list(isr), 1)]
        # As in Kafka, the partition that lost its leader is told first, in requests of its own; the ISR changes
        # of the partitions broker 2 only followed come after.
        elected, shrunk = cluster.network.requests(LeaderAndIsrRequest, to=1)
        assert [s.partition for s in elected.partition_states] == [1]
        assert sorted(s.partition for s in shrunk.partition_states) == [0, 2]
        assert elected.broker_epoch == cluster.nodes[1].epoch
        assert sorted(leader.broker_id for leader in elected.live_leaders) == [3]

        await until(lambda: cluster.network.destinations(UpdateMetadataRequest) == [1, 1, 3, 3], "UpdateMetadata")
        for broker in (1, 3):
            first, second = cluster.network.requests(UpdateMetadataRequest, to=broker)
            assert [b.id for b in first.live_brokers] == [b.id for b in second.live_brokers] == [1, 3]
            assert [(s.partition, s.leader, s.offline_replicas) for s in first.partition_states] == [(1, 3, [2])]
            assert sorted((s.partition, s.leader, s.offline_replicas) for s in second.partition_states) == [
                (0, 1, [2]), (2, 3, [2])
            ]
        order = [type(r).__name__ for dest, r in cluster.network.sent if dest == 1]
        assert order == ["LeaderAndIsrRequest", "UpdateMetadataRequest"] * 2
        assert cluster.network.requests(LeaderAndIsrRequest, to=2) == []

        changes = {line["partition"]: line for line in state_changes(caplog, "t")[-3:]}
        assert "broker failure of [2]" in changes[1]["reason"] and "elected" in changes[1]["reason"]
        assert (changes[1]["leader"], changes[1]["previous_leader"], changes[1]["unclean"]) == (3, 2, False)
        assert "removed from the ISR" in changes[0]["reason"]


async def test_no_live_isr_member_leaves_the_partition_offline_until_an_isr_member_returns(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("quiet", {0: [2, 3]}))
        await cluster.leader_changes_isr("quiet", 0, [2])  # follower 3 fell behind: the leader shrank the ISR
        await until(lambda: (s := cluster.latest_metadata(1, "quiet", 0)) and s.isr == [2], "the ISR change")
        cluster.network.sent.clear()

        await cluster.stop(2)
        await until(lambda: cluster.leader_and_isr(3, "quiet", 0), "LeaderAndIsr to broker 3")
        state = await cluster.state("quiet", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (-1, 1, (2,))  # offline; the ISR is never empty
        assert cluster.leader_and_isr(3, "quiet", 0) == [(-1, 1, [2], 1)]
        await until(lambda: (s := cluster.latest_metadata(1, "quiet", 0)) and s.leader == -1, "metadata: offline")
        assert cluster.latest_metadata(1, "quiet", 0).offline_replicas == [2]
        (line,) = [c for c in state_changes(caplog, "quiet") if c["leader"] == -1]
        assert "partition offline" in line["reason"] and "unclean leader election disabled" in line["reason"]
        assert active.controller.unclean_leader_elections == 0

        # The last ISR member returns: it leads again (the epoch moves on), broker 3 follows it.
        cluster.network.sent.clear()
        await cluster.start(2)
        await until(lambda: cluster.leader_and_isr(3, "quiet", 0), "LeaderAndIsr to broker 3")
        state = await cluster.state("quiet", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (2, 2, (2,))
        assert cluster.leader_and_isr(3, "quiet", 0) == [(2, 2, [2], 1)]
        assert cluster.leader_and_isr(2, "quiet", 0) == [(2, 2, [2], 1)]
        (to_2,) = cluster.network.requests(LeaderAndIsrRequest, to=2)
        assert to_2.broker_epoch == cluster.nodes[2].epoch
        assert "broker 2 started" in state_changes(caplog, "quiet")[-1]["reason"]


async def test_unclean_election_by_topic_config_and_when_turned_on_at_run_time(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(
            active,
            assigned("lossy", {0: [2, 3]}, unclean_leader_election_enable="true"),
            assigned("strict", {0: [2, 3]}),
            assigned("flipped", {0: [2, 3]}),
        )
        for name in ("lossy", "strict", "flipped"):
            await cluster.leader_changes_isr(name, 0, [2])
        await until(lambda: (s := cluster.latest_metadata(1, "flipped", 0)) and s.isr == [2], "the ISR changes")

        await cluster.stop(2)
        # unclean.leader.election.enable=true: the first live replica leads, with itself as the only ISR member.
        await until(lambda: (s := cluster.latest_metadata(1, "lossy", 0)) and s.leader == 3, "unclean election")
        state = await cluster.state("lossy", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (3, 1, (3,))
        (line,) = [c for c in state_changes(caplog, "lossy") if c["leader"] == 3]
        assert line["unclean"] is True
        assert line["reason"].startswith("unclean election") and "data loss possible" in line["reason"]
        assert active.controller.unclean_leader_elections == 1
        for name in ("strict", "flipped"):
            state = await cluster.state(name, 0)
            assert (state.leader, state.isr) == (-1, (2,))

        # Turned on at run time: the config znode and a change notification; the controller elects at once.
        merged = await alter_topic_config(
            cluster.observer, "flipped", {"unclean.leader.election.enable": "true"},
            validate=LogConfig().with_topic_overrides,
        )
        assert merged == {"unclean.leader.election.enable": "true"}
        assert await cluster.observer.get("/config/topics/flipped") is not None
        (change,) = await cluster.observer.get_children("/config/changes")
        assert change.startswith("config_change_")
        data, _ = await cluster.observer.get(f"/config/changes/{change}")
        assert data == b'{"version":2,"entity_path":"topics/flipped"}'
        assert decode_config_change(data) == ("topics", "flipped")
        await until(lambda: (s := cluster.latest_metadata(1, "flipped", 0)) and s.leader == 3, "run-time election")
        state = await cluster.state("flipped", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (3, 2, (3,))
        assert cluster.leader_and_isr(3, "flipped", 0)[-1] == (3, 2, [3], 1)
        (line,) = [c for c in state_changes(caplog, "flipped") if c["leader"] == 3]
        assert line["unclean"] is True and "turned on for topic flipped" in line["reason"]
        assert active.controller.unclean_leader_elections == 2
        assert (await cluster.state("strict", 0)).leader == -1  # other topics are not affected

        # Invalid values are refused before anything is written.
        with pytest.raises(Exception, match="unclean"):
            await alter_topic_config(cluster.observer, "strict", {"unclean.leader.election.enable": "maybe"},
                                     validate=LogConfig().with_topic_overrides)
        assert await cluster.observer.get_children("/config/changes") == [change]

        # The old leader returns: it follows the unclean leader (it will truncate); "strict" comes back with it.
        cluster.network.sent.clear()
        await cluster.start(2)
        await until(lambda: cluster.leader_and_isr(2, "strict", 0), "LeaderAndIsr to broker 2")
        assert cluster.leader_and_isr(2, "flipped", 0) == [(3, 2, [3], 1)]
        assert cluster.leader_and_isr(2, "strict", 0) == [(2, 2, [2], 1)]


async def test_unclean_election_turned_on_for_the_brokers_at_run_time_elects_where_topics_allow_it(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("open", {0: [2, 3]}),
                     assigned("kept", {0: [2, 3]}, unclean_leader_election_enable="false"))
        for name in ("open", "kept"):
            await cluster.leader_changes_isr(name, 0, [2])
        await until(lambda: all((s := cluster.latest_metadata(1, name, 0)) and s.isr == [2]
                                for name in ("open", "kept")), "the ISRs change")
        await cluster.stop(2)
        await until(lambda: (s := cluster.latest_metadata(1, "open", 0)) and s.leader == -1, "offline")

        # kafka-configs --entity-type brokers --entity-default: the config znode and a change notification
        await alter_entity_config(cluster.observer, BROKER_ENTITY, DEFAULT_BROKER,
                                  {"unclean.leader.election.enable": "true"})
        await until(lambda: (s := cluster.latest_metadata(1, "open", 0)) and s.leader == 3, "run-time election")
        state = await cluster.state("open", 0)
        assert (state.leader, state.isr) == (3, (3,))
        (line,) = [c for c in state_changes(caplog, "open") if c["leader"] == 3]
        assert line["unclean"] is True and "turned on for the brokers" in line["reason"]
        assert (await cluster.state("kept", 0)).leader == -1  # its own override keeps it off

        # The next controller reads the cluster default as its term starts: its own failure's partitions are
        # elected unclean.
        active = await cluster.active_controller(live=[1, 3])
        first, other = active.id, 4 - active.id
        await create(active, assigned("later", {0: [first, other]}))
        await cluster.leader_changes_isr("later", 0, [first])
        await until(lambda: (s := cluster.latest_metadata(other, "later", 0)) and s.isr == [first], "the ISR changes")
        await cluster.stop(first)
        await until(lambda: (s := cluster.latest_metadata(other, "later", 0)) and s.leader == other,
                    "an unclean election by the next controller")


async def test_isr_change_notifications_update_every_broker_and_are_deleted(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("t", {0: [1, 2, 3], 1: [2, 3, 1]}))
        cluster.network.sent.clear()

        await cluster.leader_changes_isr("t", 0, [1, 2])
        await until(lambda: cluster.network.destinations(UpdateMetadataRequest) == [1, 2, 3], "UpdateMetadata")
        for broker in (1, 2, 3):
            (request,) = cluster.network.requests(UpdateMetadataRequest, to=broker)
            assert [(s.partition, s.leader, s.leader_epoch, s.isr, s.zk_version) for s in request.partition_states] \
                == [(0, 1, 0, [1, 2], 1)]
        assert await until(no_children(cluster.observer, znodes.ISR_CHANGE_NOTIFICATION_PATH),
                           "the notification to be deleted")
        assert active.controller.context.states[("t", 0)].isr == (1, 2)
        assert cluster.network.requests(LeaderAndIsrRequest) == []  # the leader knows its ISR already

        # A leader's ISR write the controller has not heard of yet: its next change starts from ZooKeeper's
        # state (and version), not from its own view.
        await cluster.leader_changes_isr("t", 1, [2, 3], notify=False)
        cluster.network.sent.clear()
        await cluster.stop(3)
        await until(lambda: cluster.leader_and_isr(2, "t", 1), "LeaderAndIsr for t-1")
        state = await cluster.state("t", 1)
        assert (state.leader, state.leader_epoch, state.isr, state.zk_version) == (2, 1, (2,), 2)
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (1, 0, (1, 2))  # 3 was not in its ISR


async def test_a_concurrent_isr_write_by_the_leader_makes_the_controller_decide_again(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("t", {0: [1, 2, 3]}))
        # The leader shrinks the ISR to [1, 3] right after the controller read the state for broker 3's death:
        # the controller's conditional write fails on the version, it re-reads and decides on the new ISR.
        read = active.controller.partition_states.read_partition_states
        raced: list[bool] = []

        async def racing_read(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
            states = await read(partitions)
            if not raced and ("t", 0) in partitions:
                raced.append(True)
                await cluster.leader_changes_isr("t", 0, [1, 3], notify=False)
            return states

        monkeypatch.setattr(active.controller.partition_states, "read_partition_states", racing_read)
        cluster.network.sent.clear()
        await cluster.stop(3)
        await until(lambda: cluster.leader_and_isr(1, "t", 0), "LeaderAndIsr for t-0")
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch, state.isr, state.zk_version) == (1, 1, (1,), 2)
        assert cluster.leader_and_isr(1, "t", 0) == cluster.leader_and_isr(2, "t", 0) == [(1, 1, [1], 1)]
        assert any("changed meanwhile; deciding again" in r.getMessage() for r in caplog.records)
        assert active.controller.is_active


async def test_a_partition_whose_state_keeps_changing_does_not_hold_back_the_others_of_its_transaction(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("t", {p: [1, 2, 3] for p in range(6)}))
        # t-2's leader rewrites its state after every read of the controller: each write of t-2 conflicts, and the
        # others, written in the same transaction, are rolled back with it; they are written all the same, and
        # only t-2's own conflicts count towards giving up on it.
        read = active.controller.partition_states.read_partition_states
        reads: list[list[tuple[str, int]]] = []

        async def racing_read(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
            states = await read(partitions)
            reads.append(partitions)
            if ("t", 2) in partitions:
                await cluster.leader_changes_isr("t", 2, [1, 2, 3], notify=False)
            return states

        monkeypatch.setattr(active.controller.partition_states, "read_partition_states", racing_read)
        await cluster.stop(3)
        await until(lambda: any("gave up" in r.getMessage() for r in caplog.records), "the controller to give up")
        # The first conflict rolled back every partition's write; from then on t-2 was written on its own.
        assert reads[1] == [("t", p) for p in range(6)]
        assert reads[2:] == [[("t", 2)]] * (STATE_UPDATE_ATTEMPTS - 2)
        for partition in (0, 1, 3, 4, 5):
            state = await cluster.state("t", partition)
            assert (state.leader, state.leader_epoch, state.isr, state.zk_version) == (1, 1, (1, 2), 1)
        assert (await cluster.state("t", 2)).isr == (1, 2, 3)
        assert [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()] == [
            f"Controller {active.controller.broker_id} gave up changing the state of t-2 after {STATE_UPDATE_ATTEMPTS} "
            "version conflicts"]
        assert active.controller.is_active


async def test_a_state_that_changes_between_the_failover_read_and_the_election_is_read_again(
    zk_session: ZkSessionFactory, monkeypatch: pytest.MonkeyPatch
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        old = await cluster.active_controller()
        a, b = sorted(n for n in cluster.nodes if n != old.id)
        await create(old, assigned("t", {0: [old.id, a, b]}))
        # The new controller elects t-0's leader on the states it read at failover. Between that read and the
        # election, the dying leader shrinks the ISR to [old, a]: deciding on what was read would take b back
        # into the ISR. The write, conditional on the version read, fails; the state is read again.
        changed: list[bool] = []
        for node in (cluster.nodes[a], cluster.nodes[b]):
            read_queued_topics = node.controller.deletion.read_queued_topics

            async def racing_read(read_queued_topics: Callable[[], Awaitable[None]] = read_queued_topics) -> None:
                await read_queued_topics()
                if not changed:
                    changed.append(True)
                    await cluster.leader_changes_isr("t", 0, [old.id, a], notify=False)

            monkeypatch.setattr(node.controller.deletion, "read_queued_topics", racing_read)
        await cluster.stop(old.id)
        new = await cluster.active_controller()
        await until(lambda: (a, 1, [a], new.controller.epoch) in cluster.leader_and_isr(a, "t", 0),
                    "LeaderAndIsr electing t-0's leader")
        assert changed
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch, state.isr, state.zk_version) == (a, 1, (a,), 2)
        assert [s for s in cluster.leader_and_isr(a, "t", 0) if s[3] == new.controller.epoch] == [
            (a, 1, [a], new.controller.epoch)]


async def test_a_bounced_broker_is_handled_as_a_failure_and_a_start_up(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("t", {0: [3, 1], 1: [1, 3]}))
        cluster.network.sent.clear()

        # Broker 3's session expired and it registered again, all between two looks of the controller: the
        # registration's czxid (the broker epoch) changed, the set of brokers did not.
        node = cluster.nodes[3]
        replacement = await cluster._stack.enter_async_context(cluster.zk_session())
        path = znodes.broker_path(3)
        await replacement.multi([DeleteOp(path), CreateOp(path, znodes.encode_broker(endpoints(3), 0),
                                                          ephemeral=True)])
        new_epoch = (await replacement.exists(path)).czxid
        assert new_epoch != node.epoch

        await until(lambda: cluster.leader_and_isr(3, "t", 0), "LeaderAndIsr to the bounced broker")
        # As a failure: it lost its leadership of t-0 and left the ISR of t-1; then, as a start-up, it gets
        # LeaderAndIsr (as a follower) with its new broker epoch.
        assert (await cluster.state("t", 0)).leader == 1
        assert cluster.leader_and_isr(1, "t", 0) == [(1, 1, [1], 1)]
        assert cluster.leader_and_isr(1, "t", 1) == [(1, 1, [1], 1)]
        assert cluster.leader_and_isr(3, "t", 0) == [(1, 1, [1], 1)]
        assert cluster.leader_and_isr(3, "t", 1) == [(1, 1, [1], 1)]
        (request,) = cluster.network.requests(LeaderAndIsrRequest, to=3)
        assert request.broker_epoch == new_epoch
        assert active.controller.context.live_brokers[3].epoch == new_epoch
        node.epoch = new_epoch


async def test_controlled_shutdown_moves_leaders_and_answers_what_it_still_leads(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("cs", {0: [2, 1, 3], 1: [3, 2, 1]}), assigned("solo", {0: [2]}),
                     assigned("pair", {0: [2, 3]}))
        await cluster.leader_changes_isr("pair", 0, [2])
        await until(lambda: (s := cluster.latest_metadata(1, "pair", 0)) and s.isr == [2], "the ISR change")
        follower = next(n for n in cluster.nodes.values() if not n.controller.is_active)
        assert (await follower.controller.controlled_shutdown(2, cluster.nodes[2].epoch)).error_code == \
            ErrorCode.NOT_CONTROLLER
        stale = await active.controller.controlled_shutdown(2, cluster.nodes[2].epoch - 1)
        assert (stale.error_code, stale.remaining_partitions) == (ErrorCode.STALE_BROKER_EPOCH, [])
        assert (await active.controller.controlled_shutdown(9, 1)).error_code == ErrorCode.BROKER_NOT_AVAILABLE
        cluster.network.sent.clear()

        response = await active.controller.controlled_shutdown(2, cluster.nodes[2].epoch)
        # pair-0 has no other live ISR member: broker 2 still leads it. solo-0 has one replica: nothing to move.
        assert (response.error_code, response.remaining_partitions) == (
            ErrorCode.NONE, [TopicPartition(topic="pair", partition=0)]
        )
        s0, s1, s2, s3 = [await cluster.state(*tp) for tp in (("cs", 0), ("cs", 1), ("solo", 0), ("pair", 0))]
        assert (s0.leader, s0.leader_epoch, s0.isr) == (1, 1, (1, 3))  # moved to the next ISR member
        assert (s1.leader, s1.leader_epoch, s1.isr) == (3, 1, (3, 1))  # the follower left the ISR
        assert (s2.leader, s2.leader_epoch, s2.isr) == (2, 0, (2,))
        assert (s3.leader, s3.leader_epoch, s3.isr) == (2, 0, (2,))
        await until(lambda: cluster.network.requests(StopReplicaRequest, to=2), "StopReplica to broker 2")
        # The moved leadership goes to every live replica, broker 2 included (it becomes a follower); the ISR
        # shrink to the others; broker 2 stops fetching the partition it followed.
        for broker in (1, 2, 3):
            assert cluster.leader_and_isr(broker, "cs", 0) == [(1, 1, [1, 3], 1)]
        assert cluster.leader_and_isr(2, "cs", 1) == []
        assert cluster.leader_and_isr(1, "cs", 1) == cluster.leader_and_isr(3, "cs", 1) == [(3, 1, [3, 1], 1)]
        (stop,) = cluster.network.requests(StopReplicaRequest, to=2)
        assert [(p.topic, p.partition, p.delete_partition, p.leader_epoch) for p in stop.partitions] == [
            ("cs", 1, False, 1)
        ]
        assert (stop.controller_epoch, stop.broker_epoch) == (1, cluster.nodes[2].epoch)
        await until(lambda: all((s := cluster.latest_metadata(b, "cs", 0)) and s.leader == 1 for b in (1, 2, 3)),
                    "UpdateMetadata to every broker")

        # A retry changes nothing more and gets the same answer.
        cluster.network.sent.clear()
        again = await active.controller.controlled_shutdown(2, cluster.nodes[2].epoch)
        assert again.remaining_partitions == [TopicPartition(topic="pair", partition=0)]
        assert cluster.network.requests(LeaderAndIsrRequest) == []
        assert (await cluster.state("cs", 0)).leader_epoch == 1

        # It goes: what it still led is offline now, and it is no longer counted as shutting down.
        await cluster.stop(2)
        await until(lambda: (s := cluster.latest_metadata(1, "pair", 0)) and s.leader == -1, "pair-0 offline")
        assert 2 not in active.controller.context.shutting_down


async def test_shutting_down_broker_is_not_elected_when_another_fails(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("t", {0: [3, 2, 1]}))
        response = await active.controller.controlled_shutdown(2, cluster.nodes[2].epoch)
        assert response.remaining_partitions == []
        assert (await cluster.state("t", 0)).isr == (3, 1)
        await cluster.leader_changes_isr("t", 0, [3, 2, 1])  # broker 2 was fetching still and rejoined
        await until(lambda: (s := cluster.latest_metadata(1, "t", 0)) and s.isr == [3, 2, 1], "the ISR change")
        cluster.network.sent.clear()
        await cluster.stop(3)
        await until(lambda: cluster.leader_and_isr(1, "t", 0), "LeaderAndIsr")
        state = await cluster.state("t", 0)
        # 2 is in the ISR but shutting down: 1 leads, and the new ISR holds only replicas that may lead (Kafka's
        # offline election counts shutting-down brokers as not live).
        assert (state.leader, state.leader_epoch, state.isr) == (1, 2, (1,))


async def test_controller_session_loss_moves_the_controller_and_a_zombie_is_fenced(
    zk_session: ZkSessionFactory, caplog: pytest.LogCaptureFixture
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, proxied=True, session_timeout_ms=2000)
        first = await cluster.active_controller()
        assert first.id == 1
        await cluster.start(2, 3, 4)
        await cluster.active_controller()
        await create(first, assigned("t", {0: [1, 2], 1: [2, 1]}), assigned("away", {0: [4]}),
                     assigned("fence", {0: [3, 2]}))
        await cluster.leader_changes_isr("t", 1, [2])  # the latest ISR, which the successor must send
        await cluster.stop(4)  # "away" goes offline
        await until(lambda: (s := cluster.latest_metadata(2, "away", 0)) and s.leader == -1, "away offline")
        await until(lambda: (s := cluster.latest_metadata(2, "t", 1)) and s.isr == [2], "the ISR change")
        zombie_context = replace(first.controller.context)  # its view of its term (the context is reset later)

        # Cut off from ZooKeeper: the controller stops acting at once and refuses requests.
        first.proxy.cut()
        await until(lambda: not first.controller.is_active, "the suspended controller to stop acting")
        refused = await first.controller.controlled_shutdown(3, cluster.nodes[3].epoch)
        assert refused.error_code == ErrorCode.NOT_CONTROLLER
        response = await first.controller.create_topics(
            CreateTopicsRequest(topics=[assigned("late", {0: [2]})], timeout_ms=1000)
        )
        assert [r.error_code for r in response.topics] == [ErrorCode.NOT_CONTROLLER]

        # Its session expires: another broker is elected with the next epoch, finds broker 1 gone (t-0 moves)
        # and sends everything it read to every live broker: offline partitions and the latest ISRs included.
        cluster.network.sent.clear()
        second = await cluster.active_controller(live=[2, 3], epoch=2)
        assert (await cluster.observer.get(znodes.CONTROLLER_EPOCH_PATH))[0] == b"2"
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch, state.isr, state.controller_epoch) == (2, 1, (2,), 2)
        to_2 = {(s.topic, s.partition): s for r in cluster.network.requests(LeaderAndIsrRequest, to=2)
                for s in r.partition_states}
        to_3 = {(s.topic, s.partition): s for r in cluster.network.requests(LeaderAndIsrRequest, to=3)
                for s in r.partition_states}
        assert sorted(to_2) == [("fence", 0), ("t", 0), ("t", 1)] and sorted(to_3) == [("fence", 0)]
        # the partition it elected is sent first, on its own, then everything else
        elected, rest = cluster.network.requests(LeaderAndIsrRequest, to=2)
        assert [(s.topic, s.partition) for s in elected.partition_states] == [("t", 0)]
        assert sorted((s.topic, s.partition) for s in rest.partition_states) == [("fence", 0), ("t", 1)]
        assert (to_2[("t", 0)].leader, to_2[("t", 0)].leader_epoch, to_2[("t", 0)].controller_epoch) == (2, 1, 2)
        assert (to_2[("t", 1)].leader, to_2[("t", 1)].isr) == (2, [2])
        assert to_3[("fence", 0)].leader == 3
        for broker in (2, 3):
            metadata = cluster.latest_metadata(broker, "away", 0)
            assert (metadata.leader, metadata.isr, metadata.offline_replicas) == (-1, [4], [4])
            assert cluster.latest_metadata(broker, "t", 1).isr == [2]
        assert {r.controller_epoch for r in cluster.network.requests(LeaderAndIsrRequest)} == {2}

        # Reconnected, broker 1 finds a new session: it registers again and is a candidate like any other.
        cluster.network.sent.clear()
        first.proxy.restore()
        await until(lambda: cluster.leader_and_isr(1, "t", 0), "broker 1 back as a follower")
        assert cluster.leader_and_isr(1, "t", 0) == [(2, 1, [2], 2)]
        assert not first.controller.is_active and first.controller.controller_id == second.id
        assert cluster.network.requests(LeaderAndIsrRequest, to=1)[0].broker_epoch == cluster.nodes[1].epoch

        # A zombie: broker 1's controller acting on its old term (as after a long pause). Its write is refused
        # by the /controller_epoch version check, nothing changes, and it does not touch the new /controller.
        fenced_before = await cluster.state("fence", 0)
        vars(first.controller.context).update(vars(zombie_context))
        first.controller.activity.start()
        zombie = await first.controller.controlled_shutdown(3, cluster.nodes[3].epoch)
        assert zombie.error_code == ErrorCode.NOT_CONTROLLER
        assert await cluster.state("fence", 0) == fenced_before
        assert any("is fenced: /controller_epoch changed" in r.getMessage() for r in caplog.records)
        await until(lambda: not first.controller.is_active, "the zombie to step down")
        assert znodes.decode_controller((await cluster.observer.get(znodes.CONTROLLER_PATH))[0]) == second.id
        assert second.controller.is_active


async def test_a_suspended_controller_that_reconnects_in_time_resumes_its_term(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, proxied=True, session_timeout_ms=6000)
        first = await cluster.active_controller()
        await cluster.start(2, 3)
        await cluster.active_controller()
        await create(first, assigned("t", {0: [1, 2], 1: [2, 3]}))
        epoch_version = (await cluster.observer.get(znodes.CONTROLLER_EPOCH_PATH))[1].version

        first.proxy.cut()
        await until(lambda: not first.controller.is_active, "the suspended controller to stop acting")
        cluster.network.sent.clear()
        first.proxy.restore()
        # Same session, /controller still its own, epoch unchanged: it reads everything again and resends it.
        await until(lambda: first.controller.is_active, "the controller to resume")
        await until(lambda: cluster.network.destinations(LeaderAndIsrRequest) == [1, 2, 3], "state resent")
        assert first.controller.epoch == 1
        stat = (await cluster.observer.get(znodes.CONTROLLER_EPOCH_PATH))[1]
        assert stat.version == epoch_version
        assert all(not n.controller.is_active for n in cluster.nodes.values() if n.id != 1)
        assert cluster.leader_and_isr(3, "t", 1) == [(2, 0, [2, 3], 1)]
        # And it acts again: a broker death is handled.
        await cluster.stop(2)
        await until(lambda: (s := cluster.latest_metadata(3, "t", 1)) and s.leader == 3, "t-1 moves to 3")


async def test_a_request_waiting_for_the_controller_is_refused_as_soon_as_its_session_is_suspended(
    zk_session: ZkSessionFactory,
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, proxied=True, session_timeout_ms=6000)
        first = await cluster.active_controller()
        await cluster.start(2, 3)
        await cluster.active_controller()
        await create(first, assigned("t", {0: [2, 3]}))
        # An event ahead of it in the queue holds the controller (as a ZooKeeper write waiting for a connection
        # would, up to zookeeper.connection.timeout.ms); broker 2 asks to shut down meanwhile.
        release = asyncio.Event()
        first.controller.events.put("Held", release.wait)
        shutdown = asyncio.get_running_loop().create_task(
            first.controller.controlled_shutdown(2, cluster.nodes[2].epoch))
        first.proxy.cut()
        # Refused at once, so that broker 2 retries with the next controller instead of timing out.
        await until(shutdown.done, "the waiting ControlledShutdown to be answered")
        assert shutdown.result().error_code == ErrorCode.NOT_CONTROLLER
        release.set()
        first.proxy.restore()
        await until(lambda: first.controller.is_active, "the controller to resume")
        # The refused request was not carried out afterwards: broker 2 still leads.
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (2, 0, (2, 3))
        assert 2 not in first.controller.context.shutting_down
