"""The example Structured Streaming pipeline (examples/spark_pipeline.py) end to end on a real cluster, with Spark's
own Kafka connector from build/spark-kafka/jars: keyed events with known timestamps in three windows, and the counts
per key and window, in the Parquet files (those the file sink's log committed) and in the compacted topic, exactly
those of the input: after one run with Trigger.AvailableNow, and after a run whose input partition's leader was
killed -9 and whose driver was killed -9 in the middle of a micro-batch, then restarted from its checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from client.chaos.pipeline import CONNECTOR_JARS as JARS
from client.chaos.pipeline import EXAMPLE as PIPELINE
from client.chaos.pipeline import committed_files
from client.cluster import ClusterState
from client.consumer import Consumer
from client.producer import Producer
from tests.integration.clusterutil import cluster_fixture, create_topic, metadata_leaders, restore, stop_broker
from tests.polling import eventually, poll_records

WINDOW_S = 10
START_MS = 1_795_000_000_000 // (WINDOW_S * 1000) * (WINDOW_S * 1000)  # a window boundary
KEYS = [f"user-{i}" for i in range(5)]

cluster = cluster_fixture(brokers=3, configs={"unclean.leader.election.enable": "false"})


def event_times() -> list[tuple[str, int]]:
    """(key, timestamp) of each event: 90 events over three windows, keys unevenly spread."""
    return [(KEYS[i * i % len(KEYS)], START_MS + i * 333) for i in range(90)]


def epoch_ms(moment: datetime) -> int:
    """A timestamp read from Parquet (UTC, with or without its zone) in milliseconds since the epoch."""
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp() * 1000)


def window_name(key: str, start_ms: int) -> str:
    return f"{key}@{datetime.fromtimestamp(start_ms / 1000, UTC).strftime('%Y-%m-%dT%H:%M:%S')}"


def pipeline_command(bootstrap: str, name: str, output: Path, *options: str) -> list[str]:
    return [sys.executable, str(PIPELINE), "--bootstrap-server", bootstrap, "--input-topic", name,
            "--output-topic", f"{name}-counts", "--output", str(output), "--window", f"{WINDOW_S} seconds",
            "--watermark", "5 seconds", *options]


def run_available_now(bootstrap: str, name: str, output: Path) -> None:
    run = subprocess.run(pipeline_command(bootstrap, name, output, "--available-now"), capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]


async def create_topics(cluster: ClusterState, name: str) -> None:
    if not any(JARS.glob("spark-sql-kafka-*.jar")):
        pytest.fail(f"Spark's Kafka connector is not in {JARS}: run make setup")
    await create_topic(cluster, name, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})
    await create_topic(cluster, f"{name}-counts", partitions=3, replication_factor=3,
                       configs={"cleanup.policy": "compact"})


async def send(producer: Producer, name: str, events: list[tuple[str, int]]) -> None:
    futures = [await producer.send(name, b"click", key=key.encode(), timestamp=timestamp) for key, timestamp in events]
    await producer.flush()
    for future in futures:
        await future  # every event acknowledged: the expected counts are the input's


async def close_windows(producer: Producer, name: str) -> None:
    """A late event moves the watermark past every window of the input, so that append mode emits them all."""
    await send(producer, name, [("flush", START_MS + 3_600_000)])


def expected_counts(events: list[tuple[str, int]]) -> Counter[tuple[str, int]]:
    return Counter((key, timestamp - timestamp % (WINDOW_S * 1000)) for key, timestamp in events)


async def check_outputs(cluster: ClusterState, name: str, output: Path, expected: Counter[tuple[str, int]]) -> None:
    """The Parquet table and the compacted topic hold exactly the expected count of each key and window."""
    rows = [row for path in committed_files(output / "counts") for row in pq.read_table(path).to_pylist()]
    counted = Counter({(row["key"], epoch_ms(row["window_start"])): row["count"] for row in rows})
    assert len(rows) == len(counted), "a window was written twice"
    assert counted == expected
    async with Consumer(cluster.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([(f"{name}-counts", p) for p in range(3)])
        await consumer.seek_to_beginning()
        records = await poll_records(consumer, len(expected), f"the counts in {name}-counts")
    in_topic = {r.key.decode(): int(r.value.decode()) for r in records}  # compaction keeps the last of each key
    assert in_topic == {window_name(key, start): count for (key, start), count in expected.items()}


async def test_the_pipeline_counts_each_key_per_window_exactly(cluster: ClusterState, tmp_path: Path):
    await create_topics(cluster, "events")
    events = event_times()
    async with Producer(cluster.bootstrap_servers) as producer:
        await send(producer, "events", events)
        await close_windows(producer, "events")
    expected = expected_counts(events)
    assert len({start for _key, start in expected}) == 3
    run_available_now(cluster.bootstrap_servers, "events", tmp_path / "pipeline")
    await check_outputs(cluster, "events", tmp_path / "pipeline", expected)


def batch_in_progress(checkpoint: Path, after: int = -1) -> int | None:
    """The number of a micro-batch later than `after` whose offsets the query logged and has not committed yet."""
    logged = {int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*")}
    committed = {int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")}
    return next((batch for batch in sorted(logged - committed) if batch > after), None)


async def test_a_leader_and_the_driver_killed_mid_batch_still_count_each_record_once(cluster: ClusterState,
                                                                                      tmp_path: Path):
    name = "clicks"
    await create_topics(cluster, name)
    events = event_times()
    output = tmp_path / "pipeline"
    checkpoint = output / "checkpoints" / "parquet"
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(pipeline_command(cluster.bootstrap_servers, name, output, "--interval", "1 second"),
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        async with Producer(cluster.bootstrap_servers) as producer:
            await send(producer, name, events[:30])
            first = await eventually(lambda: batch_in_progress(checkpoint), "a micro-batch under way",
                                     timeout_s=300)
            leader = (await metadata_leaders(cluster, name))[0]
            await stop_broker(cluster, leader, "KILL")
            await send(producer, name, events[30:60])
            await eventually(lambda: batch_in_progress(checkpoint, first), "another micro-batch under way",
                             timeout_s=300)
            os.killpg(driver.pid, signal.SIGKILL)  # the driver and its JVM, in the middle of that batch
            driver.wait(timeout=30)
            await restore(cluster.directory)
            await send(producer, name, events[60:])
            await close_windows(producer, name)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
        log.close()
    run_available_now(cluster.bootstrap_servers, name, output)
    await check_outputs(cluster, name, output, expected_counts(events))
