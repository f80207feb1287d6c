"""The verifier on a real cluster (a real ZooKeeper, three broker processes on 127.0.0.1): after load the log
directories verify clean with exact counts; one flipped byte in one replica is a crc violation naming that broker,
partition and batch; a leader killed (-9) under acks=all load with unclean election off loses nothing
acknowledged. And the CLI producer that feeds the verifier: its history, and its failures on stderr as they
happen."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from broker.log.checkpoint import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from client.cluster import ClusterState, kill_broker
from client.outcomes import track_outcome
from client.producer import Producer
from protocol.history import OK, HistoryWriter, read_history
from protocol.records import read_header
from protocol.topic_partition import TopicPartition
from tests.integration.clusterutil import (
    PROJECT_ROOT,
    SMALL_TIMEOUTS,
    agreed_controller,
    cli,
    cluster_fixture,
    create_topic,
    paused,
    restore,
    wait_converged,
    wait_gone,
    wait_metadata,
)
from tests.polling import eventually
from tests.verifierutil import flip_byte
from verifier import verify

cluster = cluster_fixture(configs={**SMALL_TIMEOUTS, "replica.high.watermark.checkpoint.interval.ms": "200",
                                   "log.flush.offset.checkpoint.interval.ms": "200"})
RECORDS = 3000


def log_dirs(state: ClusterState) -> list[Path]:
    return [Path(b.log_dir) for b in state.brokers]


async def wait_checkpointed(state: ClusterState, topic: str, ends: dict[int, int]) -> None:
    """Wait until every broker's replication-offset-checkpoint has each partition of `topic` at its end."""

    async def written() -> bool | None:
        for directory in log_dirs(state):
            entries = OffsetCheckpointFile(directory / REPLICATION_OFFSET_CHECKPOINT).read()
            if any(entries.get(TopicPartition(topic, p)) != end for p, end in ends.items()):
                return None
        return True

    await eventually(written, f"the HW checkpoints of {topic} to reach {ends}")


async def test_a_cluster_after_load_verifies_clean_with_exact_counts(cluster: ClusterState, spark: Any, tmp_path):
    topic = "verified"
    await create_topic(cluster, topic, assignments={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, in_sync=True)
    history = tmp_path / "history.jsonl"
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(RECORDS))
    result = cli("produce", topic, "--dir", str(cluster.directory), "--key-separator", ":", "--history",
                 str(history), "--producer-property", "linger.ms=20", input=lines, check=False)
    assert result.returncode == 0, result.stderr
    outcomes = read_history(history).outcomes
    assert len(outcomes) == RECORDS and {o.status for o in outcomes} == {OK}
    ends = await wait_converged(cluster, topic, [0, 1, 2], [1, 2, 3])
    assert sum(ends.values()) == RECORDS
    await wait_checkpointed(cluster, topic, ends)

    report = await asyncio.to_thread(verify, log_dirs(cluster), history, spark=spark)
    assert report.violations == [] and report.torn_tails == [], report.violations[:5]
    mine = [r for r in report.replicas if r.topic == topic]
    assert sorted((r.topic, r.partition, r.broker) for r in mine) == [(topic, p, b) for p in range(3)
                                                                        for b in (1, 2, 3)]
    assert all((r.log_start, r.hw, r.leo, r.records) == (0, ends[r.partition], ends[r.partition],
                                                         ends[r.partition]) for r in mine)
    summary = report.to_json()
    assert (summary["consistent"], summary["acked"], summary["lost"]) == (True, RECORDS, 0)
    assert sum(r.records for r in mine) == 3 * RECORDS
    assert summary["history"]["duplicates"] == 0

    # One flipped byte inside a record of one replica (a copy of the directories): a crc violation naming it.
    copies = []
    for directory in log_dirs(cluster):
        copies.append(tmp_path / directory.parent.name)
        shutil.copytree(directory, copies[-1])
    segment = copies[1] / f"{topic}-1" / f"{0:020d}.log"
    data = segment.read_bytes()
    position, batches = 0, []
    while position < len(data):
        header = read_header(data, position)
        batches.append((position, header))
        position += header.size_in_bytes
    at, victim = batches[len(batches) // 2]
    flip_byte(segment, at + victim.size_in_bytes - 3)  # in the last record's value
    damaged = await asyncio.to_thread(verify, copies, spark=spark)
    assert [(v.kind, v.topic, v.partition, v.broker, v.offset) for v in damaged.violations] == [
        ("crc", topic, 1, 2, victim.base_offset)]


async def test_a_leader_killed_under_acks_all_load_loses_no_acknowledged_record(cluster: ClusterState, spark: Any,
                                                                                tmp_path):
    state = await restore(cluster.directory)
    topic = "failover-verified"
    controller = await agreed_controller(state)
    victim, other = [b.id for b in state.brokers if b.id != controller]
    await create_topic(state, topic, assignments={0: [victim, other, controller], 1: [other, victim, controller]},
                       configs={"min.insync.replicas": "2"}, in_sync=True)
    history = tmp_path / "history.jsonl"
    sent = 0
    with HistoryWriter(history) as writer:
        async with Producer(state.bootstrap_servers, acks="all", linger_ms=0, request_timeout_ms=5000,
                            delivery_timeout_ms=30_000, retry_backoff_ms=50) as producer:

            async def send(count: int) -> None:
                nonlocal sent
                for _ in range(count):
                    value = f"record-{sent}".encode()
                    track_outcome(writer, topic, None, value, await producer.send(topic, value, partition=sent % 2))
                    sent += 1
                    await asyncio.sleep(0.002)  # pacing the load

            await send(300)
            kill_broker(state.directory, victim, "KILL")
            await wait_gone(state.broker(victim))
            survivors = [state.broker(other), state.broker(controller)]
            await asyncio.gather(send(600), wait_metadata(survivors, topic, 0, lambda s: s.leader not in (victim, -1),
                                                          "a new leader"))
            await producer.flush()
    outcomes = read_history(history).outcomes
    assert len(outcomes) == sent
    acknowledged = sum(o.status == OK for o in outcomes)
    assert acknowledged > sent // 2
    state = await restore(state.directory)
    ends = await wait_converged(state, topic, [0, 1], [victim, other, controller])
    await wait_checkpointed(state, topic, ends)
    report = await asyncio.to_thread(verify, log_dirs(state), history, spark=spark)
    assert report.violations == [], report.violations[:5]
    assert (report.to_json()["acked"], report.to_json()["lost"]) == (acknowledged, 0)
    epochs = {r.epochs for r in report.replicas if r.topic == topic and r.partition == 0}
    assert len(epochs) == 1 and len(next(iter(epochs))) >= 2  # the failover started a new epoch, on every replica


async def test_produce_reports_each_failure_on_stderr_as_it_happens_and_exits_1(cluster: ClusterState, tmp_path):
    state = await restore(cluster.directory)
    topic = "below-min-isr"
    controller = await agreed_controller(state)
    leader, follower = [b.id for b in state.brokers if b.id != controller]
    await create_topic(state, topic, assignments={0: [leader, follower, controller]},
                       configs={"min.insync.replicas": "3"}, in_sync=True)
    history = tmp_path / "history.jsonl"
    async with paused(state, follower):
        await wait_metadata([state.broker(leader)], topic, 0, lambda s: follower not in s.isr,
                            f"broker {follower} out of the ISR")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client.cli", "produce", topic, "--dir", str(state.directory), "--history",
            str(history), "--producer-property", "delivery.timeout.ms=4000", "--producer-property", "linger.ms=0",
            "--bootstrap-server", state.broker(leader).address, stdin=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=PROJECT_ROOT)
        assert process.stdin is not None and process.stderr is not None
        process.stdin.write(b"refused\n")
        await process.stdin.drain()
        first = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        assert process.returncode is None, "the first message should come while the producer still retries"
        assert first.startswith("warning: ") and "NOT_ENOUGH_REPLICAS" in first, first
        process.stdin.close()
        rest = (await asyncio.wait_for(process.stderr.read(), 60)).decode()
        assert await process.wait() == 1
    assert "error: line 1: REQUEST_TIMED_OUT" in rest and "NOT_ENOUGH_REPLICAS" in rest, rest
    [line] = [json.loads(text) for text in history.read_text().splitlines()]
    assert (line["status"], line["offset"], line["value"]) == ("failed", None, "refused")
