"""Network partitions on real processes: a real ZooKeeper and three real brokers (`minikafka cluster up`), each
member on its own loopback address, cut apart with `minikafka cluster partition` (nftables drop rules on lo) and
joined again with `minikafka cluster heal`.

- a follower cut off from its leader leaves the ISR, acks=all goes on, and it rejoins after the heal;
- a leader cut off from its followers and ZooKeeper cannot shrink the ISR, so acks=all to it never succeeds; the
  controller elects a new leader once its session expires, and after the heal it truncates and follows;
- the same with min.insync.replicas=1 and unclean election: it acknowledges alone, and those records are lost;
- a broker cut off from ZooKeeper only loses its registration and comes back with a new broker epoch;
- a controller cut off from ZooKeeper stops acting when its session is suspended, before another is elected.

The verifier judges the data afterwards from the brokers' directories and the producers' history. Every wait
polls a condition with a deadline; each test leaves the cluster healed and whole (`healthy`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import verifier
from broker.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from client.chaos.workload import HistoryProducers
from client.cluster import ClusterState
from client.producer import Producer
from protocol.apis.replica_control import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.apis.topics import CreatableTopic, CreateTopicsRequest
from protocol.errors import ErrorCode
from protocol.history import HistoryWriter
from protocol.topic_partition import TopicPartition
from tests.chaos.chaosutil import (
    Load,
    check_no_loss,
    logged_at_ms,
    produce_raw,
    read_all,
    state_changes,
    wait_acks,
    zk_observer,
)
from tests.integration.clusterutil import (
    PROJECT_ROOT,
    agreed_controller,
    cli,
    cluster_fixture,
    connect,
    create_topic,
    healthy_fixture,
    registration,
    replica_states,
    server_log,
    status_json,
    wait_converged,
    wait_zk_state,
    zk_state,
)
from tests.polling import eventually
from zk import znodes
from zk.client import ZkClient

LAG_MS = 1500
SESSION_MS = 3000
TIMEOUTS = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "zookeeper.session.timeout.ms": str(SESSION_MS),
    "replica.fetch.wait.max.ms": "200",
    "replica.socket.timeout.ms": "3000",
    "controller.socket.timeout.ms": "3000",
    "controlled.shutdown.retry.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "log.flush.offset.checkpoint.interval.ms": "500",
}


cluster = cluster_fixture(configs=TIMEOUTS)
#: The cluster without cuts and with every broker running, before and after the test.
healthy = healthy_fixture("cluster", heal=True)


def partition(cluster: ClusterState, side_a: str, side_b: str) -> None:
    cli("cluster", "partition", side_a, side_b, "--dir", str(cluster.directory))


def heal(cluster: ClusterState) -> None:
    cli("cluster", "heal", "--dir", str(cluster.directory))


async def leader_epoch_start(cluster: ClusterState, broker_id: int, topic: str, epoch: int) -> int:
    """The start offset of `epoch` in the broker's leader-epoch-checkpoint (written when it became leader)."""
    path = Path(cluster.broker(broker_id).log_dir) / f"{topic}-0" / LEADER_EPOCH_CHECKPOINT

    async def written() -> int | None:
        lines = path.read_text().splitlines()[2:] if path.exists() else []
        starts = {int(e): int(o) for e, o in (line.split() for line in lines)}
        return starts.get(epoch)

    return await eventually(written, f"epoch {epoch} in {path}")


async def verify(cluster: ClusterState, topic: str, end: int, history: Path, spark: SparkSession) -> dict:
    """The verifier's JSON report on every broker's log directory, with the history, once every broker's
    checkpoints show the topic converged at `end` (the brokers keep running: their files are read as they are)."""
    seen: dict[int, tuple[int | None, int | None]] = {}

    async def checkpointed() -> bool | None:
        tp = TopicPartition(topic, 0)
        for broker in cluster.brokers:
            data = Path(broker.log_dir)
            seen[broker.id] = (OffsetCheckpointFile(data / REPLICATION_OFFSET_CHECKPOINT).read().get(tp),
                               OffsetCheckpointFile(data / RECOVERY_POINT_CHECKPOINT).read().get(tp))
        return True if all(hw == end and recovery is not None for hw, recovery in seen.values()) else None

    await eventually(checkpointed, lambda: f"checkpoints (HW, recovery point) of {topic}-0 at {end}: {seen}")
    return verifier.verify([Path(b.log_dir) for b in cluster.brokers], history, spark=spark).to_json()


# ------------------------------------------------------------------------------------------------ the tool


def test_partitioning_needs_root_and_changes_nothing_without_it(cluster: ClusterState):
    result = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-m", "client.cli",
         "cluster", "partition", "1", "zk", "--dir", str(cluster.directory)],
        capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)
    assert result.returncode == 1 and "root" in result.stderr, result
    assert status_json(cluster.directory)["cuts"] == []


# ------------------------------------------------------------------------------------------------ scenarios


async def test_a_follower_cut_off_from_its_leader_leaves_the_isr_and_rejoins_after_the_heal(healthy: ClusterState):
    cluster = healthy
    topic = "cut-follower"
    controller = await agreed_controller(cluster)
    leader_id, follower_id = [b.id for b in cluster.brokers if b.id != controller]
    replicas = [leader_id, follower_id, controller]
    await create_topic(cluster, topic, assignments={0: replicas}, configs={"min.insync.replicas": "2"}, in_sync=True)
    async with zk_observer(cluster) as zk, Producer(cluster.bootstrap_servers, acks="all", linger_ms=0,
                                                    request_timeout_ms=10_000, retry_backoff_ms=50) as producer:
        load = Load(producer, topic, (0,), "cut-follower", rate=200)
        task = asyncio.create_task(load.run())
        try:
            await wait_acks(load, 0, 100)
            partition(cluster, str(follower_id), str(leader_id))
            assert status_json(cluster.directory)["cuts"] == [f"{follower_id} <-> {leader_id}"]
            shrunk = await wait_zk_state(zk, topic, 0, lambda s: follower_id not in s.isr,
                                         f"broker {follower_id} to leave the ISR")
            assert (shrunk.leader, set(shrunk.isr)) == (leader_id, {leader_id, controller}), shrunk
            shrunk_at = time.monotonic()
            await wait_acks(load, 0, 100, after=shrunk_at)  # acks=all goes on with the ISR it has
            # The follower kept its ZooKeeper session: only the leader's lag check took it out.
            assert await registration(zk, follower_id) is not None
            heal(cluster)
            assert status_json(cluster.directory)["cuts"] == []
            rejoined = await wait_zk_state(zk, topic, 0, lambda s: set(s.isr) == set(replicas),
                                           f"broker {follower_id} to rejoin the ISR")
            assert rejoined.leader == leader_id and rejoined.leader_epoch == shrunk.leader_epoch
            await wait_acks(load, 0, 50, after=time.monotonic())
        finally:
            load.stop()
            await asyncio.wait_for(task, 60)
    assert not load.failures, f"{len(load.failures)} acks=all sends failed, e.g. {load.failures[:3]}"
    ends = await wait_converged(cluster, topic, [0], replicas)
    check_no_loss(load, await read_all(cluster, topic, ends))
    reasons = [c["reason"] for c in state_changes(cluster, leader_id, topic, 0)]
    assert any(r.startswith("shrink") for r in reasons) and any(r.startswith("expand") for r in reasons), reasons


@pytest.fixture
def history(tmp_path: Path) -> Iterator[HistoryWriter]:
    writer = HistoryWriter(tmp_path / "history.jsonl")
    yield writer
    writer.close()


async def _topic_under_load(cluster: ClusterState, topic: str, configs: dict[str, str],
                            history: HistoryWriter) -> tuple[list[int], HistoryProducers, asyncio.Task]:
    """A one-partition topic on [leader, follower, controller] (the leader is not the controller) and an acks=all
    load on it that writes `history`; returns the replicas, the load and its task."""
    controller = await agreed_controller(cluster)
    leader_id, first_id = [b.id for b in cluster.brokers if b.id != controller]
    replicas = [leader_id, first_id, controller]
    await create_topic(cluster, topic, assignments={0: replicas}, configs=configs, in_sync=True)
    load = HistoryProducers(cluster.bootstrap_servers, topic, 1, history, label=topic, count=1, rate=200)
    return replicas, load, asyncio.create_task(load.run())


async def test_an_isolated_leader_acknowledges_nothing_and_truncates_after_a_new_leader_is_elected(
    healthy: ClusterState, history: HistoryWriter, spark: SparkSession
):
    cluster = healthy
    topic = "isolated-leader"
    replicas, load, task = await _topic_under_load(
        cluster, topic, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}, history)
    leader_id, first_id, controller = replicas
    refused: list[ErrorCode] = []
    try:
        async with zk_observer(cluster) as zk:
            before = await zk_state(zk, topic, 0)
            await eventually(lambda: _acked(load, 100), "100 acknowledgements")
            partition(cluster, str(leader_id), f"{first_id},{controller},zk")

            async def deposed() -> object | None:
                # Meanwhile acks=all to the isolated leader never succeeds: the ISR it cannot shrink holds the HW.
                async with connect(cluster.broker(leader_id)) as to_leader:
                    answer = await produce_raw(to_leader, topic, 0, [b"to-the-isolated-leader"], acks=-1,
                                               timeout_ms=500)
                refused.append(ErrorCode.from_code(answer.error_code))
                state = await zk_state(zk, topic, 0)
                return state if state.leader != leader_id else None

            after = await eventually(deposed, "the controller to elect another leader")
            assert refused and ErrorCode.NONE not in refused, refused
            assert after.leader in (first_id, controller) and after.leader_epoch > before.leader_epoch, after
            assert set(after.isr) == {first_id, controller}, after  # the old leader's ISR, less the old leader
            [row] = (await replica_states(cluster, [leader_id], topic, 0)).values()
            assert row is not None and (row.role, row.leader_epoch) == ("leader", before.leader_epoch), row
            assert set(row.isr) == set(replicas), f"the isolated leader shrank its ISR without ZooKeeper: {row}"
            new_start = await leader_epoch_start(cluster, after.leader, topic, after.leader_epoch)
            assert row.log_end_offset > new_start, (row, new_start)  # it has records the new leader has not
            heal(cluster)
            # It learns it was deposed, truncates with OffsetsForLeaderEpoch and follows.
            await wait_zk_state(zk, topic, 0, lambda s: set(s.isr) == set(replicas), "the old leader to rejoin")
        [row] = (await replica_states(cluster, [leader_id], topic, 0)).values()
        assert row is not None and (row.role, row.leader, row.leader_epoch) == ("follower", after.leader,
                                                                                after.leader_epoch), row
        assert f"{topic}-0: truncated from" in Path(cluster.broker(leader_id).server_log).read_text(), \
            server_log(cluster.broker(leader_id), lines=25)
    finally:
        load.stop()
        await asyncio.wait_for(task, 60)
    ends = await wait_converged(cluster, topic, [0], replicas)
    records = await read_all(cluster, topic, ends)
    missing = [a for a in load.stats.acked if records[0].get(a.offset) != a.value.encode()]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
    history.close()
    report = await verify(cluster, topic, ends[0], history.path, spark)
    assert report["lost"] == 0 and report["acked"] == len(load.stats.acked), report
    assert not [v for v in report["violations"] if v["kind"] == "divergence"], report["violations"]


async def test_with_min_insync_1_and_unclean_election_the_isolated_leader_acks_alone_and_loses_those_records(
    healthy: ClusterState, history: HistoryWriter, spark: SparkSession
):
    cluster = healthy
    topic = "isolated-leader-unsafe"
    replicas, load, task = await _topic_under_load(
        cluster, topic, {"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}, history)
    leader_id, first_id, controller = replicas
    try:
        async with zk_observer(cluster) as zk:
            before = await zk_state(zk, topic, 0)
            await eventually(lambda: _acked(load, 100), "100 acknowledgements")
            # Jepsen's partition: the followers first, until the ISR is the leader alone; then ZooKeeper too.
            partition(cluster, str(leader_id), f"{first_id},{controller}")
            await wait_zk_state(zk, topic, 0, lambda s: s.isr == (leader_id,), "the ISR to shrink to the leader")
            partition(cluster, str(leader_id), "zk")
            alone = len(load.stats.acked)
            await eventually(lambda: _acked(load, alone + 50), "the isolated leader to acknowledge alone")
            after = await wait_zk_state(zk, topic, 0, lambda s: s.leader != leader_id,
                                        "an unclean election once the leader's session expired")
            assert after.leader in (first_id, controller) and after.leader_epoch > before.leader_epoch, after
            new_start = await leader_epoch_start(cluster, after.leader, topic, after.leader_epoch)
            heal(cluster)
            await wait_zk_state(zk, topic, 0, lambda s: set(s.isr) == set(replicas), "the old leader to rejoin")
    finally:
        load.stop()
        await asyncio.wait_for(task, 60)
    ends = await wait_converged(cluster, topic, [0], replicas)
    records = await read_all(cluster, topic, ends)
    lost = [a for a in load.stats.acked if records[0].get(a.offset) != a.value.encode()]
    assert lost, "the old leader acknowledged records alone; the unclean election should have lost them"
    assert all(a.offset >= new_start for a in lost), (new_start, lost[:3])
    history.close()
    report = await verify(cluster, topic, ends[0], history.path, spark)
    assert report["lost"] == len(lost), (len(lost), report)
    others = [v for v in report["violations"] if v["kind"] != "lost"]
    assert not report["consistent"] and not others, [v["detail"] for v in others]


async def test_a_broker_cut_off_from_zookeeper_registers_again_with_a_new_epoch_and_its_old_one_is_fenced(
    healthy: ClusterState,
):
    cluster = healthy
    topic = "cut-from-zookeeper"
    controller = await agreed_controller(cluster)
    victim_id, other_id = [b.id for b in cluster.brokers if b.id != controller]
    replicas = [victim_id, other_id, controller]
    await create_topic(cluster, topic, assignments={0: replicas}, configs={"min.insync.replicas": "2"}, in_sync=True)
    async with zk_observer(cluster) as zk:
        old_epoch = await registration(zk, victim_id)
        assert old_epoch is not None
        partition(cluster, str(victim_id), "zk")
        assert status_json(cluster.directory)["cuts"] == [f"{victim_id} <-> zk"]

        async def unregistered() -> bool | None:
            return True if await registration(zk, victim_id) is None else None

        await eventually(unregistered, f"broker {victim_id}'s session to expire")
        moved = await wait_zk_state(zk, topic, 0, lambda s: s.leader != victim_id and victim_id not in s.isr,
                                    "the controller to move the leadership and shrink the ISR")
        assert moved.leader == other_id, moved
        heal(cluster)

        async def registered_again() -> int | None:
            epoch = await registration(zk, victim_id)
            return epoch if epoch is not None and epoch > old_epoch else None

        new_epoch = await eventually(registered_again, f"broker {victim_id} to register again")
        # Back in the ISR, so the controller has seen the new registration: a request from the broker's old
        # incarnation is fenced. (Asked earlier, it may still answer BROKER_NOT_AVAILABLE.)
        await wait_zk_state(zk, topic, 0, lambda s: set(s.isr) == set(replicas), "it to rejoin the ISR")
        async with connect(cluster.broker(controller)) as to_controller:
            answer: ControlledShutdownResponse = await to_controller.request(
                ControlledShutdownRequest(broker_id=victim_id, broker_epoch=old_epoch))
        assert answer.error_code == ErrorCode.STALE_BROKER_EPOCH, answer
    await wait_converged(cluster, topic, [0], replicas)
    log_text = Path(cluster.broker(victim_id).server_log).read_text()
    assert f"registered again after a ZooKeeper session expiry (broker epoch {new_epoch})" in log_text, \
        server_log(cluster.broker(victim_id), lines=25)


async def test_a_controller_cut_off_from_zookeeper_stops_acting_before_another_is_elected(healthy: ClusterState):
    cluster = healthy
    topic, refused_topic = "controller-cut", "created-by-a-deposed-controller"
    old_controller = await agreed_controller(cluster)
    others = [b.id for b in cluster.brokers if b.id != old_controller]
    await create_topic(cluster, topic, assignments={0: [old_controller, *others]}, in_sync=True)
    async with zk_observer(cluster) as zk:
        old_epoch = znodes.decode_controller_epoch((await zk.get(znodes.CONTROLLER_EPOCH_PATH))[0])
        partition(cluster, str(old_controller), "zk")
        server_log = Path(cluster.broker(old_controller).server_log)

        async def stopped_acting() -> int | None:
            return logged_at_ms(server_log, f"Controller {old_controller}: ZooKeeper session suspended")

        suspended_ms = await eventually(stopped_acting, "the controller to see its session suspended")

        async def new_controller() -> tuple[int, int] | None:
            found = await zk.get_or_none(znodes.CONTROLLER_PATH)
            if found is None or znodes.decode_controller(found[0]) == old_controller:
                return None
            return znodes.decode_controller(found[0]), found[1].ctime_ms

        elected, elected_ms = await eventually(new_controller, "another controller")
        assert elected in others
        assert suspended_ms < elected_ms, "the old controller acted until after another was elected"
        new_epoch = znodes.decode_controller_epoch((await zk.get(znodes.CONTROLLER_EPOCH_PATH))[0])
        assert new_epoch == old_epoch + 1
        # Cut off, it refuses to act: a topic asked of it is not created.
        async with connect(cluster.broker(old_controller)) as to_old:
            response = await to_old.request(CreateTopicsRequest(
                topics=[CreatableTopic(name=refused_topic, num_partitions=1, replication_factor=1)], timeout_ms=1000))
        assert response.topics[0].error_code == ErrorCode.NOT_CONTROLLER, response
        state = await wait_zk_state(zk, topic, 0, lambda s: s.leader in others, "its partition to move")
        assert state.controller_epoch == new_epoch, state
        heal(cluster)
        await eventually(lambda: _registered(zk, old_controller), f"broker {old_controller} to register again")
        assert await agreed_controller(cluster) == elected
        assert await zk.exists(znodes.topic_path(refused_topic)) is None
    # None of its writes after the suspension landed: its state changes as controller stop before it.
    late = [c for c in state_changes(cluster, old_controller, topic, 0)
            if c["source"] == "controller" and c["time_ms"] > suspended_ms]
    assert not late, late


async def _acked(load: HistoryProducers, count: int) -> bool | None:
    return True if len(load.stats.acked) >= count else None


async def _registered(zk: ZkClient, broker_id: int) -> bool | None:
    return True if await registration(zk, broker_id) is not None else None
