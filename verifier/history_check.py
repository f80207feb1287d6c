"""Check 5: the producer history against the records on disk, as DataFrame joins.

Every record the history says is ``ok`` must be at its (topic, partition, offset) with the same key and value on
every replica whose HW is above that offset, and on at least one replica; one found on none is ``lost`` (one
violation each). Records missing from some replicas only are one violation per replica. Records
that ``failed`` or whose outcome is ``unknown`` may or may not be there (Kafka's semantics): how many are is
counted. Acknowledged values found at more than one offset are duplicates: information, not a violation (the
producer is not idempotent, so a retried batch may be written twice).

Records are compared by the digest of their key and value (verifier.record_digest), never by their bytes: the history
table and the records read hold the digest instead. The detail of a lost record, which shows its key and value, is
written by the driver from the history it read.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from protocol.history import OK, History, Outcome
from verifier.compaction import Superseded
from verifier.record_digest import record_digest
from verifier.report import Violation
from verifier.views import Views, local_table

HISTORY_SCHEMA = "outcome int, topic string, partition int, offset bigint, digest binary, status string"
#: How many duplicates are named in the report's notes.
DUPLICATES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class HistoryFindings:
    """What the history check found: violations and counts."""

    violations: list[Violation]
    acked: int
    lost: int
    failed: int
    failed_present: int
    unknown: int
    unknown_present: int
    duplicates: list[tuple[str, int, list[int]]]


def history_table(spark: SparkSession, history: History) -> DataFrame:
    """One row per outcome of the history (HISTORY_SCHEMA), numbered in the file's order."""
    rows = [(number, o.topic, o.partition, o.offset, record_digest(o.key, o.value), o.status)
            for number, o in enumerate(history.outcomes)]
    return local_table(spark, rows, HISTORY_SCHEMA)


def check_history(views: Views, history: History, records: DataFrame, summary: DataFrame,
                  superseded: Superseded | None = None) -> HistoryFindings:
    """Compare the history with the records (RECORD_SCHEMA) of every replica (summary: hw per replica). Adds the
    views ``acked`` (the acknowledged outcomes) and ``found`` (which replicas hold each), cached: the check's queries
    read them several times. Acknowledged records of compacted partitions that may be gone (``superseded``,
    verifier.compaction) are not lost where they are missing."""
    outcomes = history_table(views.spark, history)
    acked = views.add("acked", outcomes.filter(F.col("status") == OK), cached=True)
    found = views.add("found", acked.join(records, ["topic", "partition", "offset", "digest"])
                      .select("outcome", "replica_id").distinct(), cached=True)
    unfound = acked.join(found, "outcome", "left_anti")
    expected = acked.join(summary.select("replica_id", "broker", "topic", "partition", "hw"),
                          ["topic", "partition"]).filter(F.col("hw") > F.col("offset"))
    missing = (expected.join(found, ["outcome", "replica_id"], "left_anti")
               .join(found.select("outcome").distinct(), "outcome"))
    if superseded is not None:
        unfound = unfound.join(superseded.anywhere(), "outcome", "left_anti")
        missing = (missing.join(superseded.by_history, "outcome", "left_anti")
                   .join(superseded.on_replica, ["outcome", "replica_id"], "left_anti"))
    lost = unfound.select("outcome").collect()
    missing_rows = missing.groupBy("topic", "partition", "broker", "hw").agg(
        F.count("*").alias("count"), F.min("offset").alias("offset"), F.max("offset").alias("last")).select(
        F.lit("lost").alias("kind"), "topic", "partition", "broker", "offset", F.format_string(
            "%d acknowledged records (offsets %d..%d) are missing on this replica below its high watermark %d; "
            "another replica has each of them", "count", "offset", "last", "hw").alias("detail"))
    counts = outcomes.groupBy("status").count().collect()
    by_status = {row["status"]: row["count"] for row in counts}
    present = _unacknowledged_present(outcomes, records)
    return HistoryFindings(
        violations=[_lost(history.outcomes[row["outcome"]]) for row in lost]
        + [Violation(**row.asDict()) for row in missing_rows.collect()],
        acked=by_status.get(OK, 0),
        lost=len(lost),
        failed=by_status.get("failed", 0),
        failed_present=present.get("failed", 0),
        unknown=by_status.get("unknown", 0),
        unknown_present=present.get("unknown", 0),
        duplicates=_duplicates(acked, records))


def _lost(outcome: Outcome) -> Violation:
    return Violation("lost", outcome.topic, outcome.partition, None, outcome.offset,
                     f"the acknowledged record (key {_shown(outcome.key)}, value {_shown(outcome.value)}) is on no "
                     "replica at its offset")


def _shown(data: bytes | None) -> str:
    """Quoted text (bytes that are not UTF-8 shown as U+FFFD), or null."""
    return "null" if data is None else f"'{data.decode('utf-8', 'replace')}'"


def _unacknowledged_present(outcomes: DataFrame, records: DataFrame) -> dict[str, int]:
    """How many failed and unknown records are in their topic (and partition, when the history names it)."""
    others = outcomes.filter(F.col("status") != OK)
    r = records.select(F.col("topic").alias("r_topic"), F.col("partition").alias("r_partition"),
                       F.col("digest").alias("r_digest"))
    condition = ((F.col("topic") == F.col("r_topic")) & (F.col("digest") == F.col("r_digest"))
                 & (F.col("partition").isNull() | (F.col("partition") == F.col("r_partition"))))
    present = others.join(r, condition, "left_semi").groupBy("status").count().collect()
    return {row["status"]: row["count"] for row in present}


def _duplicates(acked: DataFrame, records: DataFrame) -> list[tuple[str, int, list[int]]]:
    """(topic, partition, offsets) of acknowledged values found at more than one offset; the first few."""
    values = acked.select("topic", "partition", "digest").distinct()
    joined = values.join(records.select("topic", "partition", "offset", "digest"), ["topic", "partition", "digest"])
    repeated = (joined.groupBy("topic", "partition", "digest")
                .agg(F.sort_array(F.collect_set("offset")).alias("offsets"))
                .filter(F.size("offsets") > 1))
    return [(row["topic"], row["partition"], list(row["offsets"]))
            for row in repeated.orderBy("topic", "partition").limit(DUPLICATES_SHOWN).collect()]
