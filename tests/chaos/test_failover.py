"""Failures on real processes: a real ZooKeeper (tickTime 500) and three
real brokers on 127.0.0.1 (`minikafka cluster up`), broken with kill -9, SIGSTOP/SIGCONT and SIGTERM (`minikafka
cluster kill`, or the function behind it) and brought back with `minikafka cluster start`.

- kill -9 of a leader under acks=all load: a new leader from the ISR with a higher epoch, no acknowledged loss,
  identical replicas afterwards;
- unclean leader election off: the partition stays offline and keeps the unreplicated record; on (topic config,
  or turned on at run time): the follower is elected and exactly the unreplicated record is gone;
- controlled shutdown (SIGTERM): leaderships move while the old process still runs, producers see no failure,
  the clean-shutdown marker and the checkpoints are left, and a restart brings the broker back as a follower;
- kill -9 of the controller: another broker is elected, /controller_epoch increments, topics can be created;
- ISR shrink past replica.lag.time.max.ms by the leader itself, expand on catching up, and min.insync.replicas.

The clusters use small timeouts (SMALL_TIMEOUTS). The ISR tests run on a second cluster whose ZooKeeper session
timeout is 6 s instead of 2 s: with 2 s, a follower stopped long enough to leave the ISR (1.5 to 2.25 s) also
loses its ZooKeeper session (its znode goes 1.7 to 2.1 s after it stops), and the controller would take it out of
the ISR whether or not the leader's own shrink works (the unclean-election tests rely on exactly that expiry).
Every wait polls a condition with a deadline; a broken or paused broker is restored before the next test
(`healthy`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.log.checkpoint import CLEAN_SHUTDOWN_MARKER, REPLICATION_OFFSET_CHECKPOINT
from client.cluster import (
    ClusterState,
    broker_running,
    cluster_status,
    kill_broker,
    load_cluster,
)
from client.producer import Producer, ProducerError
from protocol.apis.replicas import DescribedReplica
from protocol.errors import ErrorCode
from protocol.records import decode_records
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
    FAILOVER_WAIT_S,
    LAG_MS,
    SESSION_MS,
    SMALL_TIMEOUTS,
    agreed_controller,
    cli,
    cluster_fixture,
    connect,
    create_topic,
    describe,
    fetch,
    healthy_fixture,
    metadata,
    partition_metadata,
    pause,
    replica_states,
    resume,
    server_log,
    status_json,
    wait_converged,
    wait_gone,
    wait_metadata,
    wait_zk_state,
    zk_state,
)
from tests.polling import eventually
from tests.processes import process_state
from transport.connection import BrokerConnection
from zk import znodes
from zk.client import ZkClient
from zk.topic_config import alter_topic_config

ISR_SESSION_MS = 6000
#: How long UpdateMetadata may take to reach the brokers after a change in ZooKeeper, for the time bounds.
PROPAGATION_S = 1.5
#: How long a partition that must stay offline is watched after everything that could elect it happened.
OFFLINE_WATCH_S = 1.5


# ------------------------------------------------------------------------------------------------ clusters


cluster = cluster_fixture(configs=SMALL_TIMEOUTS)
isr_cluster = cluster_fixture(configs={**SMALL_TIMEOUTS, "zookeeper.session.timeout.ms": str(ISR_SESSION_MS)},
                              scope="class")
#: The module's cluster (or the ISR tests' one) with every broker running; whatever a test broke is repaired after it.
healthy = healthy_fixture("cluster")
healthy_isr = healthy_fixture("isr_cluster")


# ------------------------------------------------------------------------------------------------ records


def records_on_disk(cluster: ClusterState, broker_id: int, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record in a replica's segment files."""
    directory = Path(cluster.broker(broker_id).log_dir) / f"{topic}-{partition}"
    data = b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))
    return [(r.offset, r.value or b"") for r in decode_records(data)]


async def produce_ok(connection: BrokerConnection, topic: str, partition: int, values: Sequence[bytes],
                     acks: int = -1) -> int:
    answer = await produce_raw(connection, topic, partition, values, acks=acks)
    assert answer.error_code == ErrorCode.NONE, (ErrorCode.from_code(answer.error_code), answer.error_message)
    return answer.base_offset


# ================================================================================================ ISR (own cluster)


class TestIsr:
    """ISR shrink and expand by the leader, and min.insync.replicas. The paused follower is never the controller,
    and clients never talk to it (a request to a stopped broker waits for its timeout)."""

    async def test_a_stopped_follower_leaves_the_isr_and_rejoins_after_sigcont(self, healthy_isr: ClusterState):
        cluster = healthy_isr
        topic = "isr-shrink-expand"
        controller = await agreed_controller(cluster)
        leader_id, paused_id = [b.id for b in cluster.brokers if b.id != controller]
        other_id = controller
        await create_topic(cluster, topic, assignments={0: [leader_id, paused_id, other_id]},
                           configs={"min.insync.replicas": "2"}, in_sync=True)
        leader, other, stopped = (cluster.broker(b) for b in (leader_id, other_id, paused_id))

        async with zk_observer(cluster) as zk, connect(leader) as to_leader, connect(other) as to_other:
            for i in range(10):
                await produce_ok(to_leader, topic, 0, [f"before-{i}".encode()])
            await wait_converged(cluster, topic, [0], [leader_id, paused_id, other_id])
            initial = await zk_state(zk, topic, 0)
            assert (initial.leader, set(initial.isr)) == (leader_id, {leader_id, paused_id, other_id})

            await pause(cluster, paused_id)
            stopped_at = time.monotonic()
            # An acks=all record sent now waits for the stopped ISR member, until the leader drops it.
            waiting = asyncio.create_task(produce_raw(to_leader, topic, 0, [b"waits-for-shrink"], acks=-1,
                                                      timeout_ms=15_000))
            answered_at: list[float] = []
            waiting.add_done_callback(lambda _: answered_at.append(time.monotonic()))
            seen: list[tuple[float, dict[int, list[int]]]] = []

            async def shrunk() -> float | None:
                views = {b: await partition_metadata(c, topic, 0) for b, c in ((leader_id, to_leader),
                                                                                  (other_id, to_other))}
                at = time.monotonic() - stopped_at
                seen.append((round(at, 2), {b: sorted(v.isr) if v else [] for b, v in views.items()}))
                for view in views.values():
                    assert view is not None and other_id in view.isr, f"the running follower left the ISR: {seen}"
                return at if all(paused_id not in v.isr for v in views.values() if v) else None

            shrink_s = await eventually(shrunk, lambda: f"the ISR to lose broker {paused_id}: {seen[-3:]}",
                                        timeout_s=15)
            bound = 1.5 * LAG_MS / 1000 + PROPAGATION_S
            assert 1.0 <= shrink_s <= bound, (
                f"the stopped follower left the ISR {shrink_s:.2f} s after SIGSTOP; expected after about "
                f"replica.lag.time.max.ms ({LAG_MS} ms) and within 1.5 x lag + {PROPAGATION_S} s = {bound:.2f} s\n"
                + server_log(cluster.broker(leader_id), lines=25))
            # The leader shrank the ISR itself (a conditional write of the state znode, same leader epoch), not the
            # controller after a session expiry (that would bump the leader epoch).
            state = await zk_state(zk, topic, 0)
            assert (state.leader, state.leader_epoch, set(state.isr)) == (
                leader_id, initial.leader_epoch, {leader_id, other_id}), state
            assert state.zk_version > initial.zk_version
            reasons = [c["reason"] for c in state_changes(cluster, leader_id, topic, 0)]
            assert any(r.startswith("shrink") for r in reasons), reasons
            assert process_state(stopped.pid) == "T", "the follower must still be stopped"

            answer = await asyncio.wait_for(waiting, 15)
            assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 10), answer
            assert answered_at[0] - stopped_at >= 1.0, "the acks=all record did not wait for the stopped follower"
            # acks=all keeps working with the ISR at min.insync.replicas (2).
            for i in range(3):
                started = time.monotonic()
                assert await produce_ok(to_leader, topic, 0, [f"during-{i}".encode()]) == 11 + i
                assert time.monotonic() - started < 1.0, "acks=all waited although the ISR met min.insync.replicas"

            await resume(cluster, paused_id)
            resumed_at = time.monotonic()
            await wait_metadata([leader, other, stopped], topic, 0, lambda s: paused_id in s.isr,
                                f"broker {paused_id} back in the ISR", timeout_s=15)
            rejoin_s = time.monotonic() - resumed_at
            ends = await wait_converged(cluster, topic, [0], [leader_id, paused_id, other_id])
            assert ends == {0: 14}
            state = await zk_state(zk, topic, 0)
            assert (state.leader, state.leader_epoch, set(state.isr)) == (
                leader_id, initial.leader_epoch, {leader_id, paused_id, other_id}), state
            reasons = [c["reason"] for c in state_changes(cluster, leader_id, topic, 0)]
            assert any(r.startswith("expand") for r in reasons), reasons
        assert records_on_disk(cluster, paused_id, topic, 0) == records_on_disk(cluster, leader_id, topic, 0)
        print(f"\nISR shrink seen {shrink_s:.2f} s after SIGSTOP; rejoined {rejoin_s:.2f} s after SIGCONT")

    async def test_min_insync_replicas_refuses_acks_all_but_not_acks_1(self, healthy_isr: ClusterState):
        cluster = healthy_isr
        topic = "min-isr"
        controller = await agreed_controller(cluster)
        leader_id, paused_id = [b.id for b in cluster.brokers if b.id != controller]
        other_id = controller
        replicas = [leader_id, paused_id, other_id]
        await create_topic(cluster, topic, assignments={0: replicas},
                           configs={"min.insync.replicas": "3"}, in_sync=True)
        leader = cluster.broker(leader_id)
        committed = 5

        async with connect(leader) as to_leader:
            for i in range(committed):
                await produce_ok(to_leader, topic, 0, [f"c-{i}".encode()])
            await wait_converged(cluster, topic, [0], replicas)

            await pause(cluster, paused_id)
            try:
                # Appended while the ISR still had 3 members; it cannot be committed once the ISR shrinks below
                # min.insync.replicas (the HW does not advance), so it must never be acknowledged.
                appended = asyncio.create_task(produce_raw(to_leader, topic, 0, [b"appended-then-shrunk"], acks=-1,
                                                           timeout_ms=2500))
                await wait_metadata([leader], topic, 0, lambda s: set(s.isr) == {leader_id, other_id},
                                    f"broker {paused_id} out of the ISR", timeout_s=15)
                async with Producer(leader.address, acks="all", retries=0, delivery_timeout_ms=5000,
                                    request_timeout_ms=5000, linger_ms=0) as producer:
                    with pytest.raises(ProducerError) as refused:
                        await (await producer.send(topic, b"refused", partition=0))
                assert refused.value.code == ErrorCode.NOT_ENOUGH_REPLICAS, refused.value
                async with Producer(leader.address, acks="1", retries=0, delivery_timeout_ms=5000,
                                    request_timeout_ms=5000, linger_ms=0) as producer:
                    ack = await (await producer.send(topic, b"acks-1", partition=0))
                assert ack.offset == committed + 1  # after the appended acks=all record; the refused one is not there

                # The running follower fetches everything, yet the HW stays at what was committed.
                async def followed() -> DescribedReplica | None:
                    state = (await describe(to_leader, topic))[0]
                    remote = {f.broker_id: f.log_end_offset for f in state.followers}
                    return state if remote[other_id] == committed + 2 else None

                state = await eventually(followed, f"broker {other_id} to fetch up to {committed + 2}")
                assert (state.log_end_offset, state.high_watermark) == (committed + 2, committed), state
                answer = await fetch(to_leader, topic, 0, 0)
                assert answer.high_watermark == committed
                assert [r.value for r in decode_records(answer.records)] == [f"c-{i}".encode() for i in
                                                                            range(committed)]
                late = await asyncio.wait_for(appended, 20)
                # Appended while the ISR held min.insync.replicas, which then shrank below it while it waited.
                assert late.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, \
                    (ErrorCode.from_code(late.error_code), late.error_message)
            finally:
                await resume(cluster, paused_id)

            await wait_metadata([leader], topic, 0, lambda s: set(s.isr) == set(replicas),
                                f"broker {paused_id} back in the ISR", timeout_s=15)
            assert await produce_ok(to_leader, topic, 0, [b"after-rejoin"]) == committed + 2
            ends = await wait_converged(cluster, topic, [0], replicas)
            assert ends == {0: committed + 3}


# ================================================================================================ failover


async def test_kill_9_of_a_leader_under_acks_all_load_loses_no_acknowledged_record(healthy: ClusterState):
    """The leader of partition 0 is killed while the follower that will succeed it is stopped for a moment (well
    under replica.lag.time.max.ms, so it stays in the ISR): records the leader appended meanwhile must not have
    been acknowledged, since the successor does not have them. Without that pause the followers trail the leader
    by milliseconds and a leader acknowledging too early would rarely be caught."""
    cluster = healthy
    topic = "kill-leader"
    controller = await agreed_controller(cluster)
    victim_id, successor_id = [b.id for b in cluster.brokers if b.id != controller]  # the controller stays up
    replicas = [victim_id, successor_id, controller]  # the successor: first live ISR member in assignment order
    await create_topic(cluster, topic, assignments={0: replicas, 1: [controller, victim_id, successor_id]},
                       configs={"min.insync.replicas": "2"}, in_sync=True)
    survivors = [cluster.broker(successor_id), cluster.broker(controller)]
    before = await wait_metadata(survivors, topic, 0, lambda s: s.leader == victim_id, "the initial leader")

    async with Producer(cluster.bootstrap_servers, acks="all", linger_ms=0, request_timeout_ms=10_000,
                        delivery_timeout_ms=60_000, retry_backoff_ms=50) as producer:
        load = Load(producer, topic, (0, 1), "kill")
        task = asyncio.create_task(load.run())
        try:
            await wait_acks(load, 0, 150)
            await pause(cluster, successor_id)
            paused_at = time.monotonic()
            try:
                sent = load.sent

                async def sent_more() -> bool | None:
                    return True if load.sent >= sent + 150 else None

                await eventually(sent_more, "the producer to send 150 records while the successor is stopped")
                victim = cluster.broker(victim_id)
                kill_broker(cluster.directory, victim_id, "KILL")
                killed_at = time.monotonic()
                await wait_gone(victim)
            finally:
                await resume(cluster, successor_id)
            stopped_s = time.monotonic() - paused_at
            after = await wait_metadata(survivors, topic, 0, lambda s: s.leader not in (victim_id, -1),
                                        "a new leader")
            failover_s = time.monotonic() - killed_at
            assert after.leader in set(before.isr) - {victim_id}, (before, after)
            assert after.leader_epoch > before.leader_epoch, (before, after)
            assert set(after.isr) == set(before.isr) - {victim_id}, after
            if stopped_s < LAG_MS / 1000:  # it stayed in the ISR: it is the first live ISR member
                assert after.leader == successor_id, (stopped_s, after)
            async with connect(cluster.broker(after.leader)) as connection:
                row = (await describe(connection, topic))[0]
            assert (row.role, row.leader_epoch) == ("leader", after.leader_epoch), row
            # The load goes on on the new leader.
            await wait_acks(load, 0, 150, after=killed_at + failover_s)
        finally:
            load.stop()
            await asyncio.wait_for(task, 60)
    assert not load.failures, f"{len(load.failures)} sends failed, e.g. {load.failures[:3]}"
    acked_after_kill = load.acked(0, killed_at)
    assert acked_after_kill and min(a.offset for a in acked_after_kill) > 0

    await asyncio.to_thread(cli, "cluster", "start", str(victim_id), "--dir", str(cluster.directory))
    cluster = load_cluster(cluster.directory)
    ends = await wait_converged(cluster, topic, [0, 1], replicas)
    records = await read_all(cluster, topic, ends)
    check_no_loss(load, records)
    for partition in (0, 1):
        on_disk = [records_on_disk(cluster, b, topic, partition) for b in replicas]
        assert on_disk[0] == on_disk[1] == on_disk[2], f"partition {partition}: the replicas' logs differ"
        assert len(on_disk[0]) == ends[partition]
    [row] = (await replica_states(cluster, [victim_id], topic, 0)).values()
    assert row is not None and (row.role, row.leader, row.leader_epoch) == ("follower", after.leader,
                                                                            after.leader_epoch), row
    print(f"\nkill -9: new leader {after.leader} (epoch {after.leader_epoch}) in metadata {failover_s:.2f} s "
          f"after the kill (successor stopped for {stopped_s:.2f} s); {len(load.acks)} acknowledged records, all found")


async def _lose_leader_with_an_unreplicated_record(cluster: ClusterState, zk: ZkClient, topics: Sequence[str],
                                                   leader_id: int, follower_id: int, committed: int) -> int:
    """For each topic (one partition on [leader, follower]): `committed` records on both replicas, then the
    follower stopped until the ISR is the leader alone, one acks=1 record only the leader has, the leader killed
    (-9) and the follower continued. Returns the leader epoch the partitions had."""
    leader = cluster.broker(leader_id)
    async with connect(leader) as connection:
        for topic in topics:
            for i in range(committed):
                await produce_ok(connection, topic, 0, [f"committed-{i}".encode()])
    for topic in topics:
        await wait_converged(cluster, topic, [0], [leader_id, follower_id])
    epoch = (await zk_state(zk, topics[0], 0)).leader_epoch

    await pause(cluster, follower_id)
    # The leader's lag check (or the controller, once the stopped follower's session expired) takes it out.
    for topic in topics:
        await wait_zk_state(zk, topic, 0, lambda s: s.isr == (leader_id,), f"the ISR to shrink to {leader_id}")
    async with connect(leader) as connection:
        for topic in topics:
            assert await produce_ok(connection, topic, 0, [b"unreplicated"], acks=1) == committed
    kill_broker(cluster.directory, leader_id, "KILL")
    await wait_gone(leader)
    for topic in topics:
        await wait_zk_state(zk, topic, 0, lambda s: s.leader != leader_id, "the controller to react to the kill")
    await resume(cluster, follower_id)
    return epoch


async def test_unclean_election_off_keeps_the_partition_offline_without_loss(healthy: ClusterState):
    cluster = healthy
    topic = "unclean-off"
    controller = await agreed_controller(cluster)
    leader_id, follower_id = [b.id for b in cluster.brokers if b.id != controller]
    await create_topic(cluster, topic, assignments={0: [leader_id, follower_id]},
                       configs={"unclean.leader.election.enable": "false"}, in_sync=True)
    committed = 5
    async with zk_observer(cluster) as zk:
        epoch = await _lose_leader_with_an_unreplicated_record(cluster, zk, [topic], leader_id, follower_id,
                                                               committed)
        offline = await zk_state(zk, topic, 0)
        assert (offline.leader, offline.isr) == (-1, (leader_id,)), offline  # the ISR keeps its last member
        # The follower is back (its session expired while it was stopped: it registers again) ...
        ctl, follower = cluster.broker(controller), cluster.broker(follower_id)

        async def follower_registered() -> bool | None:
            async with connect(ctl) as connection:
                response = await metadata(connection, [])
            return True if follower_id in {b.node_id for b in response.brokers} else None

        await eventually(follower_registered, f"the controller to list broker {follower_id} again")
        learned = await wait_metadata([ctl, follower], topic, 0, lambda s: s.leader in (-1, follower_id),
                                      "the follower to learn the partition's state")
        assert learned.leader == -1, f"broker {follower_id}, not in the ISR, was elected with unclean election off"
        # ... and the partition stays offline: no leader in ZooKeeper or in either broker's metadata.
        deadline = time.monotonic() + OFFLINE_WATCH_S
        observations = 0
        while time.monotonic() < deadline or observations < 3:
            state = await zk_state(zk, topic, 0)
            assert (state.leader, state.isr) == (-1, (leader_id,)), f"an unclean election happened: {state}"
            for broker in (ctl, follower):
                async with connect(broker) as connection:
                    view = await partition_metadata(connection, topic, 0)
                assert view is not None and (view.leader, view.error_code) == (-1, ErrorCode.LEADER_NOT_AVAILABLE), \
                    (broker.id, view)
            observations += 1
            await asyncio.sleep(0.1)  # a poll interval: the partition must stay offline throughout
        async with connect(follower) as connection:
            refused = await produce_raw(connection, topic, 0, [b"to-the-follower"], acks=1)
        assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, refused
        reasons = [c["reason"] for c in state_changes(cluster, controller, topic, 0) if c["source"] == "controller"]
        assert any("offline" in r for r in reasons), reasons

        # The old leader comes back: the partition is online again with the record only it had.
        await asyncio.to_thread(cli, "cluster", "start", str(leader_id), "--dir", str(cluster.directory))
        cluster = load_cluster(cluster.directory)
        back = await wait_zk_state(zk, topic, 0, lambda s: s.leader == leader_id, "the old leader to lead again")
        assert back.leader_epoch > epoch
    # The follower registered again after its session expired, catches up and rejoins the ISR.
    ends = await wait_converged(cluster, topic, [0], [leader_id, follower_id])
    assert ends == {0: committed + 1}
    records = await read_all(cluster, topic, ends)
    assert [records[0][o] for o in range(committed + 1)] == [f"committed-{i}".encode() for i in range(committed)] + [
        b"unreplicated"]
    assert records_on_disk(cluster, follower_id, topic, 0) == records_on_disk(cluster, leader_id, topic, 0)


async def test_unclean_election_on_elects_the_follower_and_loses_exactly_the_unreplicated_record(
    healthy: ClusterState,
):
    cluster = healthy
    created_on, turned_on = "unclean-on", "unclean-turned-on"
    controller = await agreed_controller(cluster)
    leader_id, follower_id = [b.id for b in cluster.brokers if b.id != controller]
    await create_topic(cluster, created_on, assignments={0: [leader_id, follower_id]},
                       configs={"unclean.leader.election.enable": "true"}, in_sync=True)
    await create_topic(cluster, turned_on, assignments={0: [leader_id, follower_id]},
                       configs={"unclean.leader.election.enable": "false"}, in_sync=True)
    committed = 5
    async with zk_observer(cluster) as zk:
        epoch = await _lose_leader_with_an_unreplicated_record(cluster, zk, [created_on, turned_on], leader_id,
                                                               follower_id, committed)
        # unclean.leader.election.enable=true: the follower, not in the ISR, becomes leader once it is back.
        elected = await wait_zk_state(zk, created_on, 0, lambda s: s.leader == follower_id,
                                      f"an unclean election of broker {follower_id}")
        assert (elected.isr, elected.leader_epoch > epoch) == ((follower_id,), True), elected

        def unclean_logged() -> list[str] | None:  # logged after the state is written; by whichever broker controls
            reasons = [c["reason"] for b in cluster.brokers for c in state_changes(cluster, b.id, created_on, 0)]
            return reasons if any(r.startswith("unclean election") for r in reasons) else None

        await eventually(unclean_logged, "an unclean election in a controller's state-change log")

        # The same partition with unclean election off is offline, until the config is turned on at run time.
        state = await zk_state(zk, turned_on, 0)
        assert (state.leader, state.isr) == (-1, (leader_id,)), state
        await alter_topic_config(zk, turned_on, {"unclean.leader.election.enable": "true"})
        elected_later = await wait_zk_state(zk, turned_on, 0, lambda s: s.leader == follower_id,
                                            "an unclean election after the config change")
        assert elected_later.leader_epoch > epoch

        follower = cluster.broker(follower_id)
        for topic in (created_on, turned_on):
            await wait_metadata([follower, cluster.broker(controller)], topic, 0,
                                lambda s: s.leader == follower_id and s.error_code == ErrorCode.NONE,
                                "the follower leading in metadata")
        async with connect(follower) as connection:
            for topic in (created_on, turned_on):
                # Exactly the unreplicated record is gone: everything acknowledged before it is there.
                assert await produce_ok(connection, topic, 0, [b"after-unclean"]) == committed

        await asyncio.to_thread(cli, "cluster", "start", str(leader_id), "--dir", str(cluster.directory))
        cluster = load_cluster(cluster.directory)
    expected = [f"committed-{i}".encode() for i in range(committed)] + [b"after-unclean"]
    for topic in (created_on, turned_on):
        # The old leader truncates its unreplicated record away and follows: identical logs.
        ends = await wait_converged(cluster, topic, [0], [leader_id, follower_id])
        assert ends == {0: committed + 1}
        records = await read_all(cluster, topic, ends)
        assert [records[0][o] for o in range(committed + 1)] == expected
        for broker_id in (leader_id, follower_id):
            assert records_on_disk(cluster, broker_id, topic, 0) == list(enumerate(expected)), (topic, broker_id)
        [row] = (await replica_states(cluster, [leader_id], topic, 0)).values()
        assert row is not None and (row.role, row.leader) == ("follower", follower_id), row


async def test_controlled_shutdown_moves_leaders_before_the_broker_exits(healthy: ClusterState):
    cluster = healthy
    topic = "controlled-shutdown"
    controller = await agreed_controller(cluster)
    victim_id, other_id = [b.id for b in cluster.brokers if b.id != controller]
    assignments = {0: [victim_id, other_id, controller], 1: [victim_id, controller, other_id]}
    await create_topic(cluster, topic, assignments=assignments, configs={"min.insync.replicas": "2"}, in_sync=True)
    victim = cluster.broker(victim_id)
    watcher_broker = cluster.broker(controller)
    epochs_before = {}
    async with connect(watcher_broker) as connection:
        for partition in assignments:
            view = await partition_metadata(connection, topic, partition)
            assert view is not None and view.leader == victim_id
            epochs_before[partition] = view.leader_epoch

    @dataclass
    class Observation:
        at: float
        views: dict[int, tuple[int, int]]  # partition -> (leader, leader epoch)
        victim_alive: bool

    observations: list[Observation] = []
    watching = asyncio.Event()

    async def watch() -> None:
        async with connect(watcher_broker) as connection:
            while not watching.is_set():
                views = {}
                for partition in assignments:
                    view = await partition_metadata(connection, topic, partition)
                    assert view is not None
                    views[partition] = (view.leader, view.leader_epoch)
                observations.append(Observation(time.monotonic(), views, broker_running(victim)))
                await asyncio.sleep(0.01)  # the watcher's poll interval

    async with Producer(cluster.bootstrap_servers, acks="all", linger_ms=0, request_timeout_ms=10_000,
                        delivery_timeout_ms=60_000, retry_backoff_ms=50) as producer:
        load = Load(producer, topic, (0, 1), "cs")
        task = asyncio.create_task(load.run())
        watcher = asyncio.create_task(watch())
        try:
            for partition in assignments:
                await wait_acks(load, partition, 100)
            committed_at_term = {p: max(a.offset for a in load.acked(p)) + 1 for p in assignments}
            term_at = time.monotonic()
            await asyncio.to_thread(cli, "cluster", "kill", str(victim_id), "--signal", "TERM", "--dir",
                                    str(cluster.directory))
            await wait_gone(victim, timeout_s=30)
            exited_at = time.monotonic()
            for partition in assignments:
                await wait_acks(load, partition, 100, after=exited_at)
        finally:
            load.stop()
            await asyncio.wait_for(task, 60)
            watching.set()
            await asyncio.wait_for(watcher, 10)

    assert not load.failures, f"{len(load.failures)} acks=all sends failed, e.g. {load.failures[:3]}"
    assert observations
    offline = [o for o in observations if any(leader == -1 for leader, _ in o.views.values())]
    assert not offline, f"a partition had no leader: {offline[:3]}"
    moved = next((o for o in observations if all(leader != victim_id for leader, _ in o.views.values())), None)
    assert moved is not None, f"the leaderships never moved: {observations[-1]}"
    for partition, (leader, epoch) in moved.views.items():
        assert leader in set(assignments[partition]) - {victim_id} and epoch > epochs_before[partition]
    pauses = {p: load.max_gap(p, term_at, exited_at + 0.5) for p in assignments}
    assert max(pauses.values()) < SESSION_MS / 1000, f"producers paused for {pauses} s"
    # The new leaders took over before the old broker stopped: by the brokers' own logs (one clock), each new
    # leader's "became leader" precedes the old one's "stopped", and the old one became their follower first.
    stopped_ms = logged_at_ms(victim.server_log, f"broker {victim_id} stopped")
    assert stopped_ms is not None, server_log(cluster.broker(victim_id), lines=25)
    for partition, (leader, epoch) in moved.views.items():
        became = [c for c in state_changes(cluster, leader, topic, partition)
                  if c["leader_epoch"] == epoch and c["reason"].startswith("became leader")]
        assert became and became[0]["time_ms"] < stopped_ms, (partition, became, stopped_ms)
        followed = [c for c in state_changes(cluster, victim_id, topic, partition)
                    if c["leader_epoch"] == epoch and c["reason"].startswith("became follower")]
        assert followed and followed[0]["time_ms"] <= stopped_ms, (partition, followed, stopped_ms)
    log_text = victim.server_log.read_text(errors="replace")
    assert "controlled shutdown succeeded" in log_text, server_log(cluster.broker(victim_id), lines=25)
    reasons = [c["reason"] for c in state_changes(cluster, controller, topic, 0) if c["source"] == "controller"]
    assert any(r.startswith(f"controlled shutdown of broker {victim_id}") for r in reasons), reasons

    # What a clean shutdown leaves: the marker and the HW checkpoint (Kafka's text format).
    data = Path(victim.log_dir)
    assert (data / CLEAN_SHUTDOWN_MARKER).exists(), sorted(p.name for p in data.iterdir())
    lines = (data / REPLICATION_OFFSET_CHECKPOINT).read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2, lines
    checkpoint = {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}
    for partition in assignments:
        assert checkpoint[(topic, partition)] >= committed_at_term[partition], (checkpoint, committed_at_term)

    # It comes back as a follower of the partitions it led.
    await asyncio.to_thread(cli, "cluster", "start", str(victim_id), "--dir", str(cluster.directory))
    cluster = load_cluster(cluster.directory)
    assert not (data / CLEAN_SHUTDOWN_MARKER).exists(), "the marker only vouches for one shutdown"
    ends = await wait_converged(cluster, topic, list(assignments), assignments[0])
    for partition in assignments:
        [row] = (await replica_states(cluster, [victim_id], topic, partition)).values()
        assert row is not None and row.role == "follower" and row.leader == moved.views[partition][0], row
    records = await read_all(cluster, topic, ends)
    check_no_loss(load, records)
    print(f"\ncontrolled shutdown: leaders moved {moved.at - term_at:.2f} s after SIGTERM (the old broker "
          f"{'still ran' if moved.victim_alive else 'had exited'} when Metadata first showed it), broker exited "
          f"{exited_at - term_at:.2f} s after it; longest producer pause {max(pauses.values()):.2f} s")


async def test_kill_9_of_the_controller_elects_another_and_increments_the_epoch(healthy: ClusterState):
    cluster = healthy
    topic_before, topic_after = "controller-kill-before", "controller-kill-after"
    old_controller = await agreed_controller(cluster)
    others = [b.id for b in cluster.brokers if b.id != old_controller]
    await create_topic(cluster, topic_before, assignments={0: [old_controller, *others]}, in_sync=True)
    status = await cluster_status(cluster.directory)
    old_epoch = status["controller_epoch"]
    assert status["controller"] == old_controller and isinstance(old_epoch, int), status

    victim = cluster.broker(old_controller)
    kill_broker(cluster.directory, old_controller, "KILL")
    killed_at = time.monotonic()
    await wait_gone(victim)
    seen: list[dict[str, Any]] = []

    async def moved() -> dict[str, Any] | None:
        status = await cluster_status(cluster.directory)
        seen.append(status)
        if status["controller"] in (None, old_controller) or (status["controller_epoch"] or 0) <= old_epoch:
            return None
        return status

    status = await eventually(moved, lambda: f"a new controller: {seen[-1:]}", timeout_s=FAILOVER_WAIT_S)
    took_s = time.monotonic() - killed_at
    new_controller = status["controller"]
    assert new_controller in others
    assert status["controller_epoch"] == old_epoch + 1, status
    assert await agreed_controller(cluster, others) == new_controller
    async with zk_observer(cluster) as zk:
        data, _ = await zk.get(znodes.CONTROLLER_PATH)
        assert znodes.decode_controller(data) == new_controller
        # The partition the old controller led moved, decided by the new controller (its epoch in the znode).
        state = await wait_zk_state(zk, topic_before, 0, lambda s: s.leader in others, "the partition to move")
        assert (state.leader_epoch, state.controller_epoch) == (1, old_epoch + 1), state
    changes = [c for c in state_changes(cluster, new_controller, topic_before, 0) if c["source"] == "controller"]
    assert changes and changes[-1]["controller_epoch"] == old_epoch + 1, changes

    # The CLI says the same.
    shown = status_json(cluster.directory)
    assert (shown["controller"], shown["controller_epoch"]) == (new_controller, old_epoch + 1), shown
    # Topics can still be created, and used with acks=all.
    alive = ",".join(cluster.broker(b).address for b in others)
    await create_topic(cluster, topic_after, assignments={0: others, 1: others[::-1]}, in_sync=True)
    async with Producer(alive, acks="all", request_timeout_ms=10_000) as producer:
        acks = [await (await producer.send(topic_after, f"v{i}".encode(), partition=i % 2)) for i in range(10)]
    assert sorted((a.partition, a.offset) for a in acks) == sorted((i % 2, i // 2) for i in range(10))

    await asyncio.to_thread(cli, "cluster", "start", str(old_controller), "--dir", str(cluster.directory))
    cluster = load_cluster(cluster.directory)
    # The old controller comes back as an ordinary broker: no new election.
    assert await agreed_controller(cluster) == new_controller
    assert (await cluster_status(cluster.directory))["controller_epoch"] == old_epoch + 1
    await wait_converged(cluster, topic_before, [0], [old_controller, *others])
    print(f"\ncontroller kill: broker {new_controller} controller with epoch {old_epoch + 1} "
          f"{took_s:.2f} s after the kill")

