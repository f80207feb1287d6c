"""The example Structured Streaming pipeline (examples/spark_pipeline.py) end to end on a real cluster, with Spark's
own Kafka connector from build/spark-kafka/jars: keyed events with known timestamps in three windows, the pipeline
run once with Trigger.AvailableNow, and the counts per key and window, in the Parquet files and in the compacted
topic, exactly those of the input."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from client.cluster import ClusterState
from client.consumer import Consumer
from client.producer import Producer
from tests.integration.clusterutil import cluster_fixture, create_topic
from tests.polling import poll_records

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = PROJECT_ROOT / "examples" / "spark_pipeline.py"
JARS = PROJECT_ROOT / "build" / "spark-kafka" / "jars"
WINDOW_S = 10
START_MS = 1_795_000_000_000 // (WINDOW_S * 1000) * (WINDOW_S * 1000)  # a window boundary
KEYS = [f"user-{i}" for i in range(5)]

cluster = cluster_fixture(brokers=3)


def event_times() -> list[tuple[str, int]]:
    """(key, timestamp) of each event: 90 events over three windows, keys unevenly spread."""
    return [(KEYS[i * i % len(KEYS)], START_MS + i * 333) for i in range(90)]


def epoch_ms(moment: datetime) -> int:
    """A timestamp read from Parquet (UTC, with or without its zone) in milliseconds since the epoch."""
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp() * 1000)


def window_name(key: str, start_ms: int) -> str:
    return f"{key}@{datetime.fromtimestamp(start_ms / 1000, UTC).strftime('%Y-%m-%dT%H:%M:%S')}"


async def test_the_pipeline_counts_each_key_per_window_exactly(cluster: ClusterState, tmp_path: Path):
    if not any(JARS.glob("spark-sql-kafka-*.jar")):
        pytest.fail(f"Spark's Kafka connector is not in {JARS}: run make setup")
    bootstrap = cluster.bootstrap_servers
    await create_topic(cluster, "events", partitions=3, replication_factor=3)
    await create_topic(cluster, "event-counts", partitions=3, replication_factor=3,
                       configs={"cleanup.policy": "compact"})
    events = event_times()
    async with Producer(bootstrap) as producer:
        for key, timestamp in events:
            await producer.send("events", b"click", key=key.encode(), timestamp=timestamp)
        # a late event moves the watermark past every window above, so that append mode emits them all
        await producer.send("events", b"click", key=b"flush", timestamp=START_MS + 3_600_000)
        await producer.flush()
    expected = Counter((key, timestamp - timestamp % (WINDOW_S * 1000)) for key, timestamp in events)
    assert len({start for _key, start in expected}) == 3

    output = tmp_path / "pipeline"
    run = subprocess.run(
        [sys.executable, str(PIPELINE), "--bootstrap-server", bootstrap, "--output", str(output),
         "--window", f"{WINDOW_S} seconds", "--watermark", "5 seconds", "--available-now"],
        capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]

    rows = pq.read_table(output / "counts").to_pylist()
    counted = Counter({(row["key"], epoch_ms(row["window_start"])): row["count"] for row in rows})
    assert len(rows) == len(counted), "a window was written twice"
    assert counted == expected

    async with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([("event-counts", p) for p in range(3)])
        await consumer.seek_to_beginning()
        records = await poll_records(consumer, len(expected), "the counts in event-counts")
    in_topic = {r.key.decode(): int(r.value.decode()) for r in records}
    assert in_topic == {window_name(key, start): count for (key, start), count in expected.items()}
