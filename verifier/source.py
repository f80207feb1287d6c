"""Segment files as DataFrames, through Spark's Python data source API: ``spark.read.format("minikafka-segments")``.

Each group of splits (verifier.splits) is one input partition, read by an executor with the batch scanner.
Options: ``groups`` (JSON list of lists of Split dicts) and ``rows``: ``batches`` (one row per batch,
BATCH_SCHEMA) or ``records`` (one row per record of the valid batches, RECORD_SCHEMA).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from verifier.scanner import scan_file, scan_records
from verifier.splits import Split, group_splits

FORMAT = "minikafka-segments"
_WHERE = "replica_id int, broker int, topic string, partition int"
BATCH_SCHEMA = (f"{_WHERE}, segment bigint, position bigint, size int, base_offset bigint, last_offset bigint, "
                "leader_epoch int, crc bigint, records int, max_timestamp bigint, status string, detail string")
RECORD_SCHEMA = f"{_WHERE}, offset bigint, key binary, value binary"


class SegmentReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.groups = json.loads(options["groups"])
        self.rows = options.get("rows", "batches")

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(group) for group in self.groups] or [InputPartition([])]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        for split in partition.value:
            yield from self._read_split(Split(**split))

    def _read_split(self, split: Split) -> Iterator[tuple[object, ...]]:
        where = (split.replica_id, split.broker, split.topic, split.partition)
        if self.rows == "records":
            for record in scan_records(split.path, split.start, split.end):
                yield (*where, *record)
            return
        for row in scan_file(split.path, split.start, split.end, tail_may_tear=split.tail_may_tear):
            yield (*where, split.segment, *row)


class SegmentDataSource(DataSource):
    """The batches (or records) of segment file splits."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RECORD_SCHEMA if self.options.get("rows") == "records" else BATCH_SCHEMA

    def reader(self, schema: object) -> DataSourceReader:
        return SegmentReader(self.options)


def read_splits(spark: SparkSession, splits: list[Split], rows: str = "batches") -> DataFrame:
    """The DataFrame of ``rows`` (batches or records) of the splits, in twice as many tasks as the cluster has
    cores (fewer for fewer splits)."""
    spark.dataSource.register(SegmentDataSource)
    groups = group_splits(splits, 2 * spark.sparkContext.defaultParallelism)
    return (spark.read.format(FORMAT).option("groups", json.dumps([[s.to_dict() for s in g] for g in groups]))
            .option("rows", rows).load())
