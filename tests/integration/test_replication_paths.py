"""The produce and fetch paths on real broker processes: acks values, the delayed produce timing out,
long-polls woken by appends and high-watermark moves, one fetcher per source broker, an idle cluster that does not
spin, checkpoints written while brokers run, topic retention honoured, a broker started in the foreground with
`--override`, and a new leader stamping its epoch at its log end.

replica.fetch.wait.max.ms is 9 s in this cluster: a parked fetch is answered early only when something wakes it,
so an answer that comes within a third of that was woken, not waited out. replica.lag.time.max.ms is 60 s, so a
paused follower stays in the ISR.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from broker.log.checkpoint import RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from client.cluster import ClusterState, kill_broker, start_broker
from protocol.apis.offsets import EARLIEST_TIMESTAMP
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from tests.integration.clusterutil import (
    PROJECT_ROOT,
    cluster_fixture,
    connect,
    controller_of,
    create_topic,
    describe,
    established_ports,
    fetch,
    list_offset,
    metadata,
    paused,
    produce,
    produce_answer,
    records_of,
    wait_process_state,
)
from tests.polling import WAIT_S, eventually
from transport.connection import BrokerConnection
from zk.server import free_port

FETCH_WAIT_MS = 9_000
WOKEN_WITHIN_MS = FETCH_WAIT_MS // 3  # an answer within this was woken, not waited out
CHECKPOINT_INTERVAL_MS = 300
cluster = cluster_fixture(brokers=3, configs={
    "replica.fetch.wait.max.ms": str(FETCH_WAIT_MS),
    "replica.lag.time.max.ms": "60000",
    "replica.high.watermark.checkpoint.interval.ms": str(CHECKPOINT_INTERVAL_MS),
    "log.flush.offset.checkpoint.interval.ms": str(CHECKPOINT_INTERVAL_MS),
    "log.retention.check.interval.ms": str(CHECKPOINT_INTERVAL_MS),
})


async def produce_error(connection: BrokerConnection, topic: str, acks: int, timeout_ms: int) -> ErrorCode:
    """Produce one record to partition 0 with `acks`; the error code of the partition's answer."""
    answer = await produce_answer(connection, topic, 0, [b"x"], acks=acks, timeout_ms=timeout_ms)
    return ErrorCode.from_code(answer.error_code)


async def offsets_everywhere(cluster: ClusterState, topic: str) -> dict[int, tuple[int, int]]:
    """{broker: (LEO, HW)} of partition 0 of `topic` on every broker."""
    offsets = {}
    for broker in cluster.brokers:
        async with connect(broker) as connection:
            state = (await describe(connection, topic))[0]
            offsets[broker.id] = (state.log_end_offset, state.high_watermark)
    return offsets


async def wait_committed(cluster: ClusterState, topic: str, leader: int, end: int, timeout_s: float = WAIT_S) -> None:
    """Wait until every replica's LEO is `end` and the leader's HW is too. (A follower learns the HW from its next
    fetch response; as in Kafka, an HW move alone does not answer a follower's parked fetch, so with a long fetch
    wait a follower's HW may lag that long.)"""
    seen: dict[int, tuple[int, int]] = {}

    async def committed() -> bool | None:
        seen.update(await offsets_everywhere(cluster, topic))
        return True if seen[leader][1] == end and {leo for leo, _ in seen.values()} == {end} else None

    await eventually(committed, lambda: f"LEO {end} everywhere and HW {end} on leader {leader}: {seen}",
                     timeout_s=timeout_s)


async def single_partition_topic(
    cluster: ClusterState, name: str, configs: dict[str, str] | None = None
) -> tuple[int, int]:
    """Create `name` with one partition on all brokers, led by a broker that is not the controller;
    (leader, the other broker that is not the controller)."""
    controller, _ = await controller_of(cluster)
    leader, follower = [b.id for b in cluster.brokers if b.id != controller]
    await create_topic(cluster, name, assignments={0: [leader, follower, controller]}, configs=configs)
    return leader, follower


async def test_acks_other_than_minus_one_zero_and_one_are_refused(cluster):
    leader, _ = await single_partition_topic(cluster, "bad-acks")
    async with connect(cluster.broker(leader)) as connection:
        for acks in (2, -2, 5):
            assert await produce_error(connection, "bad-acks", acks, 1000) == ErrorCode.INVALID_REQUIRED_ACKS
    assert set((await offsets_everywhere(cluster, "bad-acks")).values()) == {(0, 0)}  # nothing was appended


async def test_acks_all_times_out_while_an_isr_follower_does_not_fetch(cluster):
    leader, follower = await single_partition_topic(cluster, "slow-follower")
    async with paused(cluster, follower), connect(cluster.broker(leader)) as connection:
        assert await produce_error(connection, "slow-follower", -1, 500) == ErrorCode.REQUEST_TIMED_OUT
        state = (await describe(connection, "slow-follower"))[0]
        assert (state.log_end_offset, state.high_watermark, follower in state.isr) == (1, 0, True)

    # The record was appended: it commits once the follower fetches again.
    await wait_committed(cluster, "slow-follower", leader, 1)


async def test_appends_and_high_watermark_moves_wake_parked_fetches(cluster):
    leader, _ = await single_partition_topic(cluster, "wake-up")
    broker = cluster.broker(leader)
    async with connect(broker) as producer_connection, connect(broker) as consumer_connection:
        # Setup: once both followers have fetched a first record and asked for the next offset, their fetches
        # include this partition and are parked on the leader. (A fetch parked before the topic existed does not
        # include it: that can take up to the fetch wait, as in Kafka.)
        assert await produce(producer_connection, "wake-up", 0, [b"first"], acks=1) == 0
        await wait_committed(cluster, "wake-up", leader, 1, timeout_s=2 * FETCH_WAIT_MS / 1000)

        # A consumer parked at the HW (1) for the whole fetch wait.
        parked = asyncio.create_task(fetch(consumer_connection, "wake-up", 0, 1, max_wait_ms=FETCH_WAIT_MS))
        # acks=all completes within its timeout (a third of the fetch wait) only if both followers' parked
        # fetches woke on the append.
        assert await produce(producer_connection, "wake-up", 0, [b"woken"], acks=-1, timeout_ms=WOKEN_WITHIN_MS) == 1
        # The consumer's fetch (which reads below the HW) woke when the HW moved past the record.
        answer = await asyncio.wait_for(parked, WOKEN_WITHIN_MS / 1000)
        assert [r.value for r in records_of(answer.records)] == [b"woken"]


async def test_checkpoints_are_written_while_brokers_run(cluster):
    # Small segments: each roll flushes the segment before it, which moves the recovery point.
    leader, _ = await single_partition_topic(cluster, "checkpointed", configs={"segment.bytes": "1024"})
    async with connect(cluster.broker(leader)) as connection:
        for _ in range(20):
            await produce(connection, "checkpointed", 0, [bytes(100)], acks=1)
    # (Followers' fetches parked before the topic existed do not include it: up to one fetch wait, as in Kafka.)
    await wait_committed(cluster, "checkpointed", leader, 20, timeout_s=2 * FETCH_WAIT_MS / 1000)
    tp = TopicPartition("checkpointed", 0)
    seen: dict[int, tuple[int | None, int | None]] = {}

    async def checkpointed() -> bool | None:
        # Every replica's files, read while it runs: the HW (20 on the leader; a follower's may lag, see
        # wait_committed) and a recovery point past the first segments.
        for broker in cluster.brokers:
            data = Path(broker.log_dir)
            seen[broker.id] = (OffsetCheckpointFile(data / REPLICATION_OFFSET_CHECKPOINT).read().get(tp),
                               OffsetCheckpointFile(data / RECOVERY_POINT_CHECKPOINT).read().get(tp))
        hw_ok = seen[leader][0] == 20 and all(hw is not None for hw, _ in seen.values())
        return True if hw_ok and all(rp is not None and rp > 0 for _, rp in seen.values()) else None

    await eventually(checkpointed, lambda: f"(HW, recovery point) checkpointed per broker, saw {seen}")


def write_syscalls(pid: int) -> int:
    return int(dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())["syscw"])


async def test_one_fetcher_per_source_broker_and_an_idle_cluster_does_not_spin(cluster):
    await create_topic(cluster, "spread", partitions=6, replication_factor=3)
    async with connect(cluster.brokers[0]) as connection:
        leaders = {p.leader for t in (await metadata(connection, ["spread"])).topics for p in t.partitions}
    assert leaders == {b.id for b in cluster.brokers}  # every broker follows partitions of both others
    controller, _ = await controller_of(cluster)
    followers = [b for b in cluster.brokers if b.id != controller]  # the controller's channel connects to all too

    def connections_to_leaders() -> dict[int, list[int]]:
        """{follower: [its connections to each other broker's port]}."""
        return {b.id: [established_ports(b.pid).count(o.port) for o in cluster.brokers if o.id != b.id]
                for b in followers}

    async def one_fetcher_each() -> bool | None:
        # A follower's partitions of one leader travel on one fetcher connection, in one request at a time.
        return True if all(counts == [1, 1] for counts in connections_to_leaders().values()) else None

    await eventually(one_fetcher_each, lambda: f"one connection per leader, saw {connections_to_leaders()}")

    # Idle: followers' fetches stay parked on the leaders, so the brokers make hardly any write system calls
    # (a broker that answered fetches at once, or polled, would make thousands in this window).
    before = {b.id: write_syscalls(b.pid) for b in cluster.brokers}
    await asyncio.sleep(2)  # observing an idle window, not waiting for anything
    writes = {b.id: write_syscalls(b.pid) - before[b.id] for b in cluster.brokers}
    assert all(count < 100 for count in writes.values()), writes


async def test_a_foreground_broker_takes_overrides_and_joins_the_cluster(cluster, tmp_path):
    config = cluster.broker(1).config
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "client.cli", "broker", "--config", config, "--override", "broker.id=9",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={tmp_path / 'data'}"],
        cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=(tmp_path / "broker-9.log").open("w"),
    )
    try:
        async def registered() -> bool | None:
            async with connect(cluster.broker(1)) as connection:
                brokers = {b.node_id: b.port for b in (await metadata(connection)).brokers}
            return True if brokers.get(9) == port else None

        await eventually(registered, lambda: f"broker 9 on port {port} in metadata; its log:\n"
                                             f"{(tmp_path / 'broker-9.log').read_text()[-2000:]}")
        assert (tmp_path / "data" / "meta.properties").read_text().count("broker.id=9") == 1
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(process.wait, 60)
    assert code == 0, (tmp_path / "broker-9.log").read_text()[-2000:]


async def test_topic_retention_configs_are_honoured_on_every_replica(cluster):
    leader, _ = await single_partition_topic(
        cluster, "retained", configs={"segment.bytes": "1024", "retention.bytes": "2048"}
    )
    async with connect(cluster.broker(leader)) as connection:
        for _ in range(30):
            await produce(connection, "retained", 0, [bytes(100)], acks=1)
    await wait_committed(cluster, "retained", leader, 30, timeout_s=2 * FETCH_WAIT_MS / 1000)
    seen: dict[int, tuple[int, int, list[int]]] = {}

    async def trimmed() -> bool | None:
        """Old segments deleted on every replica: the log starts at the first remaining segment, past 0."""
        for broker in cluster.brokers:
            async with connect(broker) as connection:
                state = (await describe(connection, "retained"))[0]
            directory = Path(broker.log_dir) / "retained-0"
            bases = sorted(int(path.stem) for path in directory.glob("*.log"))
            size = sum(path.stat().st_size for path in directory.glob("*.log"))
            seen[broker.id] = (state.log_start_offset, size, bases)
        return True if all(start > 0 and bases[0] == start for start, _, bases in seen.values()) else None

    await eventually(trimmed, lambda: f"(log start, bytes, segment bases) per broker: {seen}")
    async with connect(cluster.broker(leader)) as connection:
        earliest = await list_offset(connection, "retained", 0, EARLIEST_TIMESTAMP)
        assert earliest == seen[leader][0]
        assert (await fetch(connection, "retained", 0, 0)).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        offsets = [r.offset for r in records_of((await fetch(connection, "retained", 0, earliest)).records)]
        assert offsets and offsets == list(range(earliest, earliest + len(offsets)))  # (one segment per read)


async def test_a_new_leader_stamps_its_epoch_at_its_log_end(cluster):
    """Seed 001: on becoming leader a broker adds (new epoch, its LEO) to its leader-epoch cache. Runs last: it
    restarts a broker."""
    leader, follower = await single_partition_topic(cluster, "stamped")
    async with connect(cluster.broker(leader)) as connection:
        await produce(connection, "stamped", 0, [b"a", b"b", b"c"], acks=1)
        await produce(connection, "stamped", 0, [b"d", b"e"], acks=1)
    await wait_committed(cluster, "stamped", leader, 5, timeout_s=2 * FETCH_WAIT_MS / 1000)

    stopped = kill_broker(cluster.directory, leader, "TERM")  # controlled shutdown: the follower takes over
    await wait_process_state(stopped.pid, lambda state: state == "", "gone")
    try:
        async with connect(cluster.broker(follower)) as connection:
            [state] = (await describe(connection, "stamped")).values()
        assert (state.role, state.leader_epoch, state.log_end_offset) == ("leader", 1, 5), state
        checkpoint = Path(cluster.broker(follower).log_dir) / "stamped-0" / "leader-epoch-checkpoint"
        assert checkpoint.read_text().splitlines() == ["0", "2", "0 0", "1 5"]  # version, entries, epoch offset
    finally:
        await start_broker(cluster.directory, leader)
