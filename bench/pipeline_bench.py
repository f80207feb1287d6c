"""Records per second through the example Spark pipeline (examples/spark_pipeline.py: Kafka source -> counts per key
and window -> Parquet) on a 3-broker minikafka cluster and, in the same run, on three Apache Kafka 3.9 brokers from
the jars in build/kafka/libs.

Both clusters are started here on 127.0.0.1 (ZooKeeper and three brokers each), and given the same topic layout: 3
partitions, replication factor 3. Per run and per cluster: librdkafka (confluent-kafka, acks=all) writes --records
keyed 100-byte records (100 keys, event times 1 ms apart, so 10-second windows) and one late record that closes
every window, to a new topic; then the pipeline's query reads that topic from the beginning with Trigger.AvailableNow
into a new Parquet table, and its wall time from start to termination is the figure (records / seconds). One Spark
session (local[2], the connector from build/spark-kafka/jars) serves the whole benchmark, so the JVM's start is not
in it; a warm-up query runs first on each cluster. Each table's counts must add up to the records written. The last
lines are the medians over --runs runs and the ratio minikafka / Kafka.

    python -m bench.pipeline_bench --runs 3
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import uvloop
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.kafka_brokers import kafka_broker
from bench.produce_bench import PARTITIONS, REPLICATION_FACTOR, VALUE_SIZE, local_cluster
from client.chaos.pipeline import EXAMPLE
from client.progress import Progress
from zk.server import ZooKeeperServer

SYSTEMS = ("minikafka", "kafka")
KEYS = [f"user-{n}".encode() for n in range(100)]
WINDOW, WATERMARK = "10 seconds", "5 seconds"
START_MS = 1_795_000_000_000
WARM_UP_RECORDS = 2_000
_ADMIN_TIMEOUT_S = 60.0


def load_example() -> ModuleType:
    """examples/spark_pipeline.py as a module (it is a script, not a package's)."""
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def kafka_cluster(directory: Path) -> Iterator[str]:
    """ZooKeeper and three Apache Kafka brokers under one chroot; yields their bootstrap servers."""
    zookeeper = ZooKeeperServer(directory / "zookeeper")
    zookeeper.start()
    try:
        with contextlib.ExitStack() as brokers:
            chroot = {"zookeeper.connect": f"{zookeeper.connect_string}/kafka-bench"}
            started = [brokers.enter_context(kafka_broker(directory / f"kafka-{n}", zookeeper.connect_string,
                                                          broker_id=n, overrides=chroot)) for n in (1, 2, 3)]
            yield ",".join(broker.bootstrap for broker in started)
    finally:
        zookeeper.stop()


def write_input(bootstrap: str, records: int) -> str:
    """A new topic holding `records` keyed records and the late one that closes their windows; its name."""
    topic = f"pipeline-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)]).values():
        future.result(timeout=_ADMIN_TIMEOUT_S)
    failed: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000})
    value = bytes(VALUE_SIZE)
    for n in range(records + 1):
        timestamp = START_MS + n if n < records else START_MS + records + 3_600_000
        while True:
            try:
                producer.produce(topic, value, key=KEYS[n % len(KEYS)], timestamp=timestamp,
                                 on_delivery=lambda error, _message: error and failed.append(error))
                break
            except BufferError:  # the client's queue is full: let it deliver
                producer.poll(0.1)
        producer.poll(0)
    if producer.flush(_ADMIN_TIMEOUT_S) or failed:
        raise RuntimeError(f"writing the input to {bootstrap} failed: {failed[:3]}")
    return topic


def time_query(example: ModuleType, spark: Any, bootstrap: str, topic: str, output: Path, records: int) -> float:
    """Seconds the pipeline's query takes to read `topic` and write its counts (Trigger.AvailableNow)."""
    counts = example.window_counts(spark, bootstrap, topic, WINDOW, WATERMARK)
    started = time.perf_counter()
    query = example.parquet_sink(counts, output).trigger(availableNow=True).start()
    query.awaitTermination()
    seconds = time.perf_counter() - started
    counted = spark.read.parquet(str(output / "counts")).groupBy().sum("count").first()[0]
    if counted != records:
        raise RuntimeError(f"the pipeline counted {counted} of {records} records on {bootstrap}")
    return seconds


def one_run(example: ModuleType, spark: Any, clusters: dict[str, str], records: int, work: Path) -> dict[str, float]:
    """Records per second through the pipeline on each cluster."""
    figures = {}
    for system, bootstrap in clusters.items():
        topic = write_input(bootstrap, records)
        output = work / f"{system}-{topic}"
        seconds = time_query(example, spark, bootstrap, topic, output, records)
        shutil.rmtree(output, ignore_errors=True)
        figures[f"{system}.seconds"] = seconds
        figures[f"{system}.records_per_s"] = records / seconds
    return figures


def describe(figures: dict[str, float]) -> Iterator[str]:
    for system in SYSTEMS:
        yield (f"  {system:<10} {figures[f'{system}.records_per_s']:>10,.0f} records/s  (query "
               f"{figures[f'{system}.seconds']:.2f} s)")
    yield f"  minikafka / kafka {figures['minikafka.records_per_s'] / figures['kafka.records_per_s']:.2f}"


async def run(args: argparse.Namespace) -> None:
    example = load_example()
    work = Path(tempfile.mkdtemp(prefix="pipeline-bench-", dir=args.dir))
    progress = Progress()
    try:
        async with local_cluster(work) as state, contextlib.AsyncExitStack() as stack:
            with progress.ticking("starting three Kafka brokers"):
                kafka = stack.enter_context(kafka_cluster(work / "kafka"))
            clusters = {"minikafka": state.bootstrap_servers, "kafka": kafka}
            print(f"minikafka at {clusters['minikafka']}, Kafka at {kafka}", flush=True)
            spark = example.spark_session()
            stack.callback(spark.stop)
            with progress.ticking("warm-up"):
                one_run(example, spark, clusters, WARM_UP_RECORDS, work)
            results = []
            for number in range(1, args.runs + 1):
                with progress.ticking(f"run {number} of {args.runs}"):
                    results.append(one_run(example, spark, clusters, args.records, work))
                print(f"run {number}:", *describe(results[-1]), sep="\n", flush=True)
        median = {name: statistics.median(r[name] for r in results) for name in results[0]}
        print(f"median of {len(results)} runs ({PARTITIONS} partitions, RF {REPLICATION_FACTOR}, {args.records:,} "
              f"records of {VALUE_SIZE} bytes, {len(KEYS)} keys, windows of {WINDOW}):", *describe(median), sep="\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000, help="records written per run and cluster")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the benchmark's temporary directory")
    args = parser.parse_args()
    if args.runs < 1 or args.records < 1:
        parser.error("--runs and --records must be positive")
    uvloop.run(run(args))


if __name__ == "__main__":
    main()
