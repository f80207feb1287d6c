"""A broker killed (-9) at each step of the log cleaner's replacement of segments (its cleaned segment written, its
files renamed .swap, the old segments renamed .deleted, the swap done) comes back with a readable log that keeps
every acknowledged latest value and every offset: the replacement is undone before its files are all .swap files,
completed after. The cleaner stops at the step through its test hook, which leaves a file the test waits for."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.log.cleaner.log_cleaner import HALT_AT, HALT_FILE
from client.cluster import ClusterState, kill_broker, start_broker
from client.producer import ProducerError
from protocol.history import HistoryWriter, read_history
from protocol.topic_partition import TopicPartition
from tests.integration.clusterutil import cluster_fixture, consume_records, create_topic, healthy_fixture, wait_gone
from tests.integration.compactionutil import (
    cleaner_checkpoint,
    latest_acked,
    latest_of,
    lost_latest,
    produce_keyed,
    swap_files,
)
from tests.polling import eventually

cluster = cluster_fixture(brokers=1, configs={"log.cleaner.backoff.ms": "100"})
healthy = healthy_fixture()
KEYS = 500
#: What the broker's log says at start-up after a kill at each step.
RECOVERY = {
    "cleaned": "a cleaned segment whose swap had not begun",
    "swap": "completing the swap of",
    "deleted": "completing the swap of",
    "replaced": None,  # the swap was complete: only its .deleted files are left to remove
}


def rounds(start: int) -> Iterator[tuple[bytes, bytes]]:
    return ((b"key-%03d" % i, b"value-%d-%d" % (start, i)) for i in range(KEYS))


@pytest.mark.parametrize("step", list(RECOVERY))
async def test_a_broker_killed_at_a_step_of_a_cleaning_recovers_every_latest_value(
        healthy: ClusterState, step: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cluster = healthy
    topic, tp = f"crash-at-{step}", TopicPartition(f"crash-at-{step}", 0)
    log_dir = Path(cluster.brokers[0].log_dir)
    await create_topic(cluster, topic, partitions=1, replication_factor=1,
                       configs={"cleanup.policy": "compact", "segment.bytes": "16384",
                                "min.cleanable.dirty.ratio": "0.1"})
    halted = tmp_path / "halted"
    broker = kill_broker(cluster.directory, cluster.brokers[0].id, "TERM")
    await wait_gone(broker)
    with monkeypatch.context() as env:
        env.setenv(HALT_AT, step)
        env.setenv(HALT_FILE, str(halted))
        broker = await start_broker(cluster.directory, broker.id)

    history = tmp_path / "history.jsonl"
    with HistoryWriter(history) as writer:
        async def produce_until_halted() -> None:
            written = 0
            while not halted.exists():
                assert written < 40, "the cleaner should have reached the step"
                try:
                    await produce_keyed(cluster, topic, rounds(written), writer, request_timeout_ms=1000,
                                        delivery_timeout_ms=3000, retry_backoff_ms=50, max_block_ms=3000)
                except ProducerError:
                    if not halted.exists():
                        raise
                    return  # the round under way when the broker was killed on purpose
                written += 1

        async def kill_when_halted() -> None:
            await eventually(halted.exists, f"the cleaner to halt at {step}", timeout_s=60)
            kill_broker(cluster.directory, broker.id, "KILL")

        await asyncio.gather(produce_until_halted(), kill_when_halted())
    await wait_gone(broker)
    log_lines = Path(broker.config).parent / "server.log"
    before = len(log_lines.read_text())
    broker = await start_broker(cluster.directory, broker.id)
    started = log_lines.read_text()[before:]
    if RECOVERY[step] is not None:
        assert RECOVERY[step] in started, started[-3000:]

    outcomes = read_history(history).outcomes
    records = await consume_records(cluster, topic)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    assert lost_latest(latest_acked(outcomes), latest_of(records)) == []

    async def cleaned() -> bool:
        segments = sorted((log_dir / f"{topic}-0").glob("*.log"))
        checkpoint = cleaner_checkpoint(log_dir, tp)
        return checkpoint is not None and checkpoint >= int(segments[-1].stem) and not swap_files(log_dir, tp)

    await eventually(cleaned, f"{tp} to be cleaned again after the restart", timeout_s=60)
    records = await consume_records(cluster, topic)
    assert lost_latest(latest_acked(outcomes), latest_of(records)) == []
    assert len({r.key for r in records}) == KEYS
