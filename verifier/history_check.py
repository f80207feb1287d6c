"""Check 5: the producer history against the records on disk, as DataFrame joins.

Every record the history says is ``ok`` must be at its (topic, partition, offset) with the same key and value on
every replica whose HW is above that offset, and on at least one replica; one found on none is ``lost`` (one
violation each). Records missing from some replicas only are one violation per replica. Records
that ``failed`` or whose outcome is ``unknown`` may or may not be there (Kafka's semantics): how many are is
counted. Acknowledged values found at more than one offset are duplicates: information, not a violation (the
producer is not idempotent, so a retried batch may be written twice).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from client.history import OK, History
from verifier.views import local_table

HISTORY_SCHEMA = ("outcome int, topic string, partition int, offset bigint, key binary, value binary, "
                  "status string")
#: How many duplicates are named in the report's notes.
DUPLICATES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class HistoryFindings:
    """What the history check found: violations (VIOLATION_COLUMNS rows) and counts."""

    violations: DataFrame
    acked: int
    lost: int
    failed: int
    failed_present: int
    unknown: int
    unknown_present: int
    duplicates: list[tuple[str, int, list[int]]]


def history_table(spark: SparkSession, history: History) -> DataFrame:
    rows = [(number, o.topic, o.partition, o.offset, o.key, o.value, o.status)
            for number, o in enumerate(history.outcomes)]
    return local_table(spark, rows, HISTORY_SCHEMA)


def check_history(outcomes: DataFrame, records: DataFrame, summary: DataFrame) -> HistoryFindings:
    """Compare the history with the records (RECORD_SCHEMA) of every replica (summary: hw per replica)."""
    acked = outcomes.filter(F.col("status") == OK).cache()
    where = ["topic", "partition", "offset"]
    found = (acked.join(records.withColumnRenamed("key", "r_key").withColumnRenamed("value", "r_value"), where)
             .filter(F.col("key").eqNullSafe(F.col("r_key")) & F.col("value").eqNullSafe(F.col("r_value")))
             .select("outcome", "replica_id").distinct().cache())
    lost = acked.join(found, "outcome", "left_anti")
    lost_rows = lost.select(F.lit("lost").alias("kind"), "topic", "partition", F.lit(None).cast("int").alias("broker"),
                            "offset", F.format_string(
                                "the acknowledged record (key %s, value %s) is on no replica at its offset",
                                _shown("key"), _shown("value")).alias("detail"))
    expected = acked.join(summary.select("replica_id", "broker", "topic", "partition", "hw"),
                          ["topic", "partition"]).filter(F.col("hw") > F.col("offset"))
    missing = (expected.join(found, ["outcome", "replica_id"], "left_anti")
               .join(found.select("outcome").distinct(), "outcome"))
    missing_rows = missing.groupBy("topic", "partition", "broker", "hw").agg(
        F.count("*").alias("count"), F.min("offset").alias("offset"), F.max("offset").alias("last")).select(
        F.lit("lost").alias("kind"), "topic", "partition", "broker", "offset", F.format_string(
            "%d acknowledged records (offsets %d..%d) are missing on this replica below its high watermark %d; "
            "another replica has each of them", "count", "offset", "last", "hw").alias("detail"))
    counts = outcomes.groupBy("status").count().collect()
    by_status = {row["status"]: row["count"] for row in counts}
    present = _unacknowledged_present(outcomes, records)
    return HistoryFindings(
        violations=lost_rows.unionByName(missing_rows),
        acked=by_status.get(OK, 0),
        lost=lost.count(),
        failed=by_status.get("failed", 0),
        failed_present=present.get("failed", 0),
        unknown=by_status.get("unknown", 0),
        unknown_present=present.get("unknown", 0),
        duplicates=_duplicates(acked, records))


def _shown(column: str) -> F.Column:
    return F.coalesce(F.concat(F.lit("'"), F.col(column).cast("string"), F.lit("'")), F.lit("null"))


def _unacknowledged_present(outcomes: DataFrame, records: DataFrame) -> dict[str, int]:
    """How many failed and unknown records are in their topic (and partition, when the history names it)."""
    others = outcomes.filter(F.col("status") != OK)
    r = records.select(F.col("topic").alias("r_topic"), F.col("partition").alias("r_partition"),
                       F.col("key").alias("r_key"), F.col("value").alias("r_value"))
    condition = ((F.col("topic") == F.col("r_topic")) & F.col("key").eqNullSafe(F.col("r_key"))
                 & F.col("value").eqNullSafe(F.col("r_value"))
                 & (F.col("partition").isNull() | (F.col("partition") == F.col("r_partition"))))
    present = others.join(r, condition, "left_semi").groupBy("status").count().collect()
    return {row["status"]: row["count"] for row in present}


def _duplicates(acked: DataFrame, records: DataFrame) -> list[tuple[str, int, list[int]]]:
    """(topic, partition, offsets) of acknowledged values found at more than one offset; the first few."""
    values = acked.select("topic", "partition", "key", "value").distinct()
    at = records.select("topic", "partition", "offset", F.col("key").alias("r_key"), F.col("value").alias("r_value"))
    joined = values.join(at, ["topic", "partition"]).filter(
        F.col("key").eqNullSafe(F.col("r_key")) & F.col("value").eqNullSafe(F.col("r_value")))
    repeated = (joined.groupBy("topic", "partition", "key", "value")
                .agg(F.sort_array(F.collect_set("offset")).alias("offsets"))
                .filter(F.size("offsets") > 1))
    return [(row["topic"], row["partition"], list(row["offsets"]))
            for row in repeated.orderBy("topic", "partition").limit(DUPLICATES_SHOWN).collect()]
