"""Seed 003's scenario on real processes, verified from the files afterwards, in both truncation modes.

Brokers A (leader) and B (follower) hold one partition; the third broker is the controller. m0 and m1 are
acknowledged with acks=all while both are in the ISR, but B dies (-9) while its high-watermark checkpoint still
says 1 (B writes it once an hour; A every 100 ms). With B out of the ISR, m2 is acknowledged by A alone
(min.insync.replicas=1). A is stopped, B restarts as A's follower (A's ZooKeeper session still holds), then A
dies and unclean leader election is switched on for the topic at run time: B leads, takes m3, and A comes back as
its follower.

- replication.truncation.mode=high-watermark: B truncated m1 away (to its checkpointed HW 1) before A died, so m3
  lands at offset 1; A comes back with HW 3, keeps m1 and cuts only past B's log end. The replicas differ at
  offset 1, below both high watermarks: the divergence the seed predicts, at the offset of the record it says is
  lost.
- leader-epoch: B keeps m1 (it asks A, which never answers, instead of trusting its HW), m3 lands at offset 2, and
  A truncates to where its epoch ends on B: identical logs, no divergence, and exactly m2, acknowledged by A alone
  and dropped by the unclean election, is lost.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from broker.log.checkpoint import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from broker.replication.truncation import HIGH_WATERMARK_MODE, LEADER_EPOCH_MODE
from client.cluster import ClusterState, kill_broker, load_cluster, start_broker
from client.outcomes import track_outcome
from client.producer import Producer
from protocol.history import HistoryWriter, read_history
from protocol.topic_partition import TopicPartition
from tests.chaos.chaosutil import zk_observer
from tests.integration.clusterutil import (
    SMALL_TIMEOUTS,
    agreed_controller,
    cli,
    create_topic,
    pause,
    replica_states,
    wait_converged,
    wait_gone,
    wait_zk_state,
)
from tests.polling import eventually
from verifier import verify
from zk import znodes
from zk.server import zookeeper_available
from zk.topic_config import alter_topic_config

TOPIC = "seed-003"
TP = TopicPartition(TOPIC, 0)
#: Long enough for B to restart and truncate while A is stopped but still registered.
SESSION_MS = 8000


def _checkpointed_hw(state: ClusterState, broker: int) -> int | None:
    return OffsetCheckpointFile(Path(state.broker(broker).log_dir) / REPLICATION_OFFSET_CHECKPOINT).read().get(TP)


async def _wait_checkpointed_hw(state: ClusterState, broker: int, hw: int) -> None:
    async def written() -> bool | None:
        return True if _checkpointed_hw(state, broker) == hw else None

    await eventually(written, f"broker {broker}'s HW checkpoint to say {hw}")


async def _acknowledged(producer: Producer, writer: HistoryWriter, value: bytes) -> int:
    future = await producer.send(TOPIC, value, partition=0)
    track_outcome(writer, TOPIC, None, value, future)
    return (await future).offset


async def _run_scenario(directory: Path, history: Path) -> dict[str, int]:
    """Seed 003's steps on the cluster in `directory`; returns the offsets m0..m3 were acknowledged at."""
    state = load_cluster(directory)
    controller = await agreed_controller(state)
    a, b = [broker.id for broker in state.brokers if broker.id != controller]
    await create_topic(state, TOPIC, assignments={0: [a, b]},
                       configs={"unclean.leader.election.enable": "false"}, in_sync=True)
    offsets: dict[str, int] = {}
    async with zk_observer(state) as zk:
        with HistoryWriter(history) as writer:
            async with Producer(state.broker(a).address, acks="all", linger_ms=0, request_timeout_ms=5000,
                                delivery_timeout_ms=20_000) as producer:
                offsets["m0"] = await _acknowledged(producer, writer, b"m0")
                await wait_converged(state, TOPIC, [0], [a, b])
                # B's HW checkpoint: 1, written at its clean shutdown; from its restart on, once an hour.
                await asyncio.to_thread(cli, "cluster", "kill", str(b), "--signal", "TERM", "--dir", str(directory))
                await wait_gone(state.broker(b), timeout_s=30)
                assert _checkpointed_hw(state, b) == 1
                with open(state.broker(b).config, "a") as config:
                    config.write("replica.high.watermark.checkpoint.interval.ms=3600000\n")
                await start_broker(directory, b)
                state = load_cluster(directory)
                await wait_converged(state, TOPIC, [0], [a, b])

                offsets["m1"] = await _acknowledged(producer, writer, b"m1")
                await eventually(lambda: _replica_has(state, b, leo=2, hw=2), "B to have m1 and HW 2")
                await _wait_checkpointed_hw(state, a, 2)
                assert _checkpointed_hw(state, b) == 1

                kill_broker(directory, b, "KILL")
                await wait_gone(state.broker(b))
                await wait_zk_state(zk, TOPIC, 0, lambda s: s.isr == (a,), "A to shrink the ISR to itself")
                offsets["m2"] = await _acknowledged(producer, writer, b"m2")
                await _wait_checkpointed_hw(state, a, 3)
            # B's old registration must be gone before A stops, or B's restart would wait for it.
            await eventually(lambda: _absent(zk, znodes.broker_path(b)), "B's old registration to expire")
            await pause(state, a)
            await start_broker(directory, b)
            state = load_cluster(directory)
            await eventually(lambda: _follows(state, b, a), "B to become A's follower (and truncate)")
            kill_broker(directory, a, "KILL")
            await wait_gone(state.broker(a))
            await alter_topic_config(zk, TOPIC, {"unclean.leader.election.enable": "true"})
            await wait_zk_state(zk, TOPIC, 0, lambda s: s.leader == b, "an unclean election of B",
                                timeout_s=SESSION_MS / 1000 + 20)
            async with Producer(state.broker(b).address, acks="all", linger_ms=0, request_timeout_ms=5000,
                                delivery_timeout_ms=20_000) as producer:
                offsets["m3"] = await _acknowledged(producer, writer, b"m3")
        await start_broker(directory, a)
        state = load_cluster(directory)
        await wait_converged(state, TOPIC, [0], [a, b])
    return offsets


async def _replica_has(state: ClusterState, broker: int, *, leo: int, hw: int) -> bool | None:
    row = (await replica_states(state, [broker], TOPIC, 0))[broker]
    return True if row is not None and (row.log_end_offset, row.high_watermark) == (leo, hw) else None


async def _follows(state: ClusterState, follower: int, leader: int) -> bool | None:
    row = (await replica_states(state, [follower], TOPIC, 0))[follower]
    return True if row is not None and (row.role, row.leader) == ("follower", leader) else None


async def _absent(zk: Any, path: str) -> bool | None:
    return True if await zk.exists(path) is None else None


@pytest.mark.parametrize("mode", [HIGH_WATERMARK_MODE, LEADER_EPOCH_MODE])
async def test_seed_003_unclean_election_verified_from_the_files(mode: str, spark: Any, tmp_path: Path):
    if not zookeeper_available():
        pytest.fail("ZooKeeper (or java) is not installed: run make setup")
    directory = tmp_path / "cluster"
    configs = {**SMALL_TIMEOUTS, "zookeeper.session.timeout.ms": str(SESSION_MS),
               "replica.high.watermark.checkpoint.interval.ms": "100", "replication.truncation.mode": mode}
    options = [item for key, value in configs.items() for item in ("--config", f"{key}={value}")]
    await asyncio.to_thread(cli, "cluster", "up", "--brokers", "3", "--dir", str(directory), *options)
    history = tmp_path / "history.jsonl"
    try:
        offsets = await _run_scenario(directory, history)
    finally:
        await asyncio.to_thread(cli, "cluster", "down", "--dir", str(directory), check=False)
    assert [o.status for o in read_history(history).outcomes] == ["ok"] * 4
    state = load_cluster(directory)
    report = await asyncio.to_thread(verify, [Path(broker.log_dir) for broker in state.brokers], history,
                                     spark=spark)
    found = [(v.kind, v.offset) for v in report.violations if v.topic == TOPIC]
    lost = [v for v in report.violations if v.kind == "lost" and v.broker is None]
    if mode == HIGH_WATERMARK_MODE:
        assert (offsets["m1"], offsets["m3"]) == (1, 1)  # m3 took m1's offset on B
        assert [kind for kind, offset in found if kind == "divergence"] == ["divergence"]
        assert ("divergence", 1) in found, report.violations
    else:
        assert (offsets["m1"], offsets["m3"]) == (1, 2)
        assert [(v.kind, v.offset) for v in report.violations] == [("lost", 2)], report.violations
        assert "'m2'" in lost[0].detail
        assert report.to_json()["lost"] == 1
    assert offsets["m2"] == 2
