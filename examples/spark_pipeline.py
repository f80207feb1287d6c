"""Counts of keyed events per key and per time window, as a Spark Structured Streaming pipeline on minikafka.

    events topic (key = what happened to whom, e.g. "user-7")
      -> per key, per WINDOW of event time (the records' timestamps), a count; events later than WATERMARK
         behind the newest one seen are dropped, and a window's count is final once the watermark passes its end
      -> Parquet files under OUTPUT/counts (exactly once: Spark's file sink with checkpointed Kafka offsets)
      -> a compacted topic, one record per key and window ("user-7@2026-11-27T12:00:00"), whose value is the count
         (the Kafka sink writes at least once; a record written twice carries the same count, and compaction keeps
         one)

Both outputs are queries of their own, each with a checkpoint under OUTPUT/checkpoints: stopped (or killed) and
started again, each resumes from the offsets its checkpoint holds. Spark's Kafka connector comes from
build/spark-kafka/jars (`make setup`). Run it against `minikafka cluster up`:

    python examples/spark_pipeline.py --bootstrap-server 127.0.0.1:9092 --output /tmp/pipeline

With --available-now it reads what the events topic holds, writes the windows that closed, and stops (Spark's
Trigger.AvailableNow); without it, it runs until interrupted, a micro-batch every --interval.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

CONNECTOR_JARS = Path(__file__).resolve().parents[1] / "build" / "spark-kafka" / "jars"


def spark_session(jars: Path = CONNECTOR_JARS, master: str = "local[2]") -> SparkSession:
    """A local, quiet Spark session with the Kafka connector's jars on its class path."""
    found = sorted(str(jar) for jar in jars.glob("*.jar"))
    if not found:
        raise SystemExit(f"no jars in {jars}: `make setup` fetches Spark's Kafka connector")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (SparkSession.builder.master(master).appName("minikafka-pipeline")
             .config("spark.jars", ",".join(found))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def window_counts(spark: SparkSession, bootstrap: str, topic: str, window: str, watermark: str) -> DataFrame:
    """The stream of (key, window start, window end, count) from the events topic."""
    events = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", "earliest")
              .load())
    return (events.select(F.col("key").cast("string").alias("key"), F.col("timestamp"))
            .withWatermark("timestamp", watermark)
            .groupBy(F.window("timestamp", window), F.col("key"))
            .count()
            .select("key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "count"))


def parquet_sink(counts: DataFrame, output: Path) -> DataStreamWriter:
    """The counts appended to Parquet files under OUTPUT/counts, the query's checkpoint under OUTPUT/checkpoints."""
    return (counts.writeStream.format("parquet").outputMode("append")
            .option("path", str(output / "counts"))
            .option("checkpointLocation", str(output / "checkpoints" / "parquet")))


def start(counts: DataFrame, bootstrap: str, output_topic: str, output: Path, *, available_now: bool,
          interval: str) -> list[StreamingQuery]:
    """The two sinks' queries: Parquet files and the compacted topic, each with its own checkpoint."""
    def trigger(writer):  # type: ignore[no-untyped-def]
        return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime=interval)

    to_parquet = trigger(parquet_sink(counts, output))
    records = counts.select(
        F.concat_ws("@", "key", F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss")).alias("key"),
        F.col("count").cast("string").alias("value"))
    to_topic = trigger(records.writeStream.format("kafka").outputMode("append")
                       .option("kafka.bootstrap.servers", bootstrap)
                       .option("topic", output_topic)
                       .option("checkpointLocation", str(output / "checkpoints" / "topic")))
    return [to_parquet.start(), to_topic.start()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--input-topic", default="events")
    parser.add_argument("--output-topic", default="event-counts")
    parser.add_argument("--output", type=Path, required=True, help="Parquet files and checkpoints go here.")
    parser.add_argument("--window", default="10 seconds", help="Length of the tumbling windows of event time.")
    parser.add_argument("--watermark", default="5 seconds", help="How late an event may come.")
    parser.add_argument("--interval", default="5 seconds", help="Time between micro-batches.")
    parser.add_argument("--available-now", action="store_true", help="Process what is there, then stop.")
    parser.add_argument("--jars", type=Path, default=CONNECTOR_JARS, help="Spark's Kafka connector's jars.")
    args = parser.parse_args(argv)
    spark = spark_session(args.jars)
    counts = window_counts(spark, args.bootstrap_server, args.input_topic, args.window, args.watermark)
    queries = start(counts, args.bootstrap_server, args.output_topic, args.output,
                    available_now=args.available_now, interval=args.interval)
    try:
        for query in queries:
            query.awaitTermination()
    except KeyboardInterrupt:
        for query in queries:
            query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
