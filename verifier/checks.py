"""The checks across batches, replicas and checkpoints, as DataFrame joins and aggregations.

Inputs: the batch table (verifier.source) and two small tables the driver builds from the layout: one row per
replica (REPLICA_SCHEMA: its checkpoint entries) and one per leader-epoch-checkpoint entry (EPOCH_SCHEMA). Outputs:
one row per replica (`replica_summary`) and one row per violation (`violations`, VIOLATION_COLUMNS), both small
enough for the driver to collect. The checks of `violations` also join the batches with two small tables the driver
derives from the collected summary (each replica's bounds, each pair of replicas' range to compare): built there,
they cost no Spark job of their own.

A replica's log end offset (LEO) is the end of its last complete batch (or, for a log without batches, its active
segment's base offset or its log start); its high watermark (HW) is its replication-offset-checkpoint entry clamped
to its LEO (its log start without an entry); its log start is the log-start-offset-checkpoint entry, never before
its first segment.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from functools import reduce

from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from broker.log.checkpoint import RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from verifier.layout import Layout
from verifier.scanner import CRC, OK, TORN, UNREADABLE

REPLICA_SCHEMA = ("replica_id int, broker int, topic string, partition int, log_start bigint, hw_checkpoint bigint, "
                  "recovery_point bigint, last_segment bigint, hw_file boolean, recovery_file boolean, "
                  "has_epochs boolean")
EPOCH_SCHEMA = "replica_id int, entry int, epoch int, start_offset bigint, prev_epoch int, prev_start bigint"
VIOLATION_COLUMNS = ["kind", "topic", "partition", "broker", "offset", "detail"]
READABLE = (OK, CRC)


def replica_table(spark: SparkSession, layout: Layout) -> DataFrame:
    rows = []
    for r in layout.replicas:
        files = layout.log_dirs[r.dir_index].checkpoints
        rows.append((r.replica_id, r.broker, r.topic, r.partition, r.log_start_offset, r.high_watermark,
                     r.recovery_point, r.segments[-1].base_offset if r.segments else None,
                     REPLICATION_OFFSET_CHECKPOINT in files, RECOVERY_POINT_CHECKPOINT in files, r.epochs is not None))
    return spark.createDataFrame(rows, REPLICA_SCHEMA)


def epoch_table(spark: SparkSession, layout: Layout) -> DataFrame:
    """One row per leader-epoch-checkpoint entry, with the entry before it in the same file (null for the first)."""
    rows = [(r.replica_id, entry, epoch, start, *(r.epochs[entry - 1] if entry else (None, None)))
            for r in layout.replicas for entry, (epoch, start) in enumerate(r.epochs or ())]
    return spark.createDataFrame(rows, EPOCH_SCHEMA)


def readable(batches: DataFrame) -> DataFrame:
    """The whole batches (valid or with a bad CRC: their header fields are still what the broker wrote)."""
    return batches.filter(F.col("status").isin(*READABLE))


def replica_summary(batches: DataFrame, replicas: DataFrame) -> DataFrame:
    """Per replica: the REPLICA_SCHEMA columns plus batches, records, bytes, first_offset, batch_end, leo, hw."""
    stats = readable(batches).groupBy("replica_id").agg(
        F.count("*").alias("batches"),
        F.sum("records").cast("long").alias("records"),
        F.sum("size").cast("long").alias("bytes"),
        F.min("base_offset").alias("first_offset"),
        (F.max("last_offset") + 1).alias("batch_end"),
    )
    leo = F.greatest("batch_end", "last_segment", "log_start")
    return (replicas.join(F.broadcast(stats), "replica_id", "left")
            .fillna(0, ["batches", "records", "bytes"])
            .withColumn("leo", leo)
            .withColumn("hw", F.least(F.coalesce("hw_checkpoint", "log_start"), F.col("leo"))))


def violations(spark: SparkSession, batches: DataFrame, summary: DataFrame, summary_rows: list[Row],
               epochs: DataFrame) -> DataFrame:
    """Every violation the tables show, unordered (VIOLATION_COLUMNS). ``summary_rows``: the collected summary
    (one row per replica), from which the driver derives the small tables the checks join the batches with."""
    return reduce(DataFrame.unionByName, [
        _batch_checks(batches), _unreadable(batches), _replica_checks(summary),
        _agreement(batches, pair_table(spark, summary_rows)),
        _epoch_cache(batches, replica_bounds(spark, summary_rows), epochs)])


BOUNDS_SCHEMA = ("replica_id int, broker int, topic string, partition int, first_offset bigint, leo bigint, "
                 "has_epochs boolean")
PAIR_SCHEMA = ("rid_a int, rid_b int, broker_a int, broker_b int, topic string, partition int, limit bigint, "
               "lower bigint")


def replica_bounds(spark: SparkSession, summary_rows: list[Row]) -> DataFrame:
    """One row per replica (BOUNDS_SCHEMA): where its batches begin and end, and whether it has an epoch file."""
    columns = [name.split()[0] for name in BOUNDS_SCHEMA.split(", ")]
    return spark.createDataFrame([tuple(row[c] for c in columns) for row in summary_rows], BOUNDS_SCHEMA)


def pair_table(spark: SparkSession, summary_rows: list[Row]) -> DataFrame:
    """One row per pair of replicas of a partition (rid_a < rid_b, PAIR_SCHEMA) with the offsets where their
    batches must agree: from ``lower``, the later of their first offsets, to below ``limit``, the lower of their
    high watermarks."""
    by_partition: dict[tuple[str, int], list[Row]] = defaultdict(list)
    for row in summary_rows:
        by_partition[(row["topic"], row["partition"])].append(row)
    rows = [(a["replica_id"], b["replica_id"], a["broker"], b["broker"], topic, partition,
             _present(min, a["hw"], b["hw"]), _present(max, a["first_offset"], b["first_offset"]))
            for (topic, partition), replicas in by_partition.items()
            for a, b in itertools.combinations(sorted(replicas, key=lambda r: r["replica_id"]), 2)]
    return spark.createDataFrame(rows, PAIR_SCHEMA)


def _present(choose: Callable[..., int], *values: int | None) -> int | None:
    """``choose`` (min or max) of the values that are not None, like SQL's least and greatest; None if none is."""
    present = [v for v in values if v is not None]
    return choose(present) if present else None


def torn_tails(batches: DataFrame) -> DataFrame:
    return batches.filter(F.col("status") == TORN).select("broker", "topic", "partition", "segment", "position",
                                                          F.col("size").alias("bytes"), "detail")


Check = tuple[Column, str, Column | None, Column]  # (condition, kind, offset, detail)


def _flagged(frame: DataFrame, checks: list[Check]) -> DataFrame:
    """The violations of every row of `frame` for each check whose condition holds: one pass over the rows."""
    candidates = F.array(*[
        F.when(condition, F.struct(F.lit(kind).alias("kind"),
                                   (offset if offset is not None else F.lit(None)).cast("long").alias("offset"),
                                   detail.alias("detail")))
        for condition, kind, offset, detail in checks])
    return (frame.select("topic", "partition", "broker", F.explode(candidates).alias("v"))
            .filter(F.col("v").isNotNull())
            .select(F.col("v.kind").alias("kind"), "topic", "partition", "broker", F.col("v.offset").alias("offset"),
                    F.col("v.detail").alias("detail")))


def _place() -> Column:
    """'00000000000000000000.log position 4096' of a batch row."""
    return F.format_string("%020d.log position %d", "segment", "position")


def _batch_checks(batches: DataFrame) -> DataFrame:
    """Check 1 on the whole batches, in file order per replica: the CRC32C valid, offsets contiguous within and
    between batches and segments, leader epochs never decreasing, each segment named after its first batch."""
    order = Window.partitionBy("replica_id").orderBy("segment", "position")
    rows = (readable(batches)
            .withColumn("prev_last", F.lag("last_offset").over(order))
            .withColumn("prev_epoch", F.lag("leader_epoch").over(order)))
    base, last, prev_last = F.col("base_offset"), F.col("last_offset"), F.col("prev_last")
    return _flagged(rows, [
        (F.col("status") == CRC, "crc", base, F.format_string(
            "%s: the batch of offsets %d..%d: %s", _place(), "base_offset", "last_offset", "detail")),
        (base > prev_last + 1, "offset-gap", prev_last + 1, F.format_string(
            "offsets %d..%d are missing: the batch before ends at %d, the next (%s) starts at %d", prev_last + 1,
            base - 1, "prev_last", _place(), "base_offset")),
        (base <= prev_last, "offset-gap", base, F.format_string(
            "the batch at %s starts at offset %d, within the batch before it (which ends at %d)", _place(),
            "base_offset", "prev_last")),
        (last < base, "offset-gap", base, F.format_string(
            "the batch at %s ends (%d) before it starts (%d)", _place(), "last_offset", "base_offset")),
        (F.col("leader_epoch") < F.col("prev_epoch"), "epoch-cache", base, F.format_string(
            "the partition leader epoch goes down from %d to %d at %s", "prev_epoch", "leader_epoch", _place())),
        ((F.col("position") == 0) & (base != F.col("segment")), "offset-gap", F.col("segment"), F.format_string(
            "segment %020d.log starts with offset %d", "segment", "base_offset")),
    ])


def _unreadable(batches: DataFrame) -> DataFrame:
    """Check 1: bytes where a batch should be that are not one (a bad length or magic, a batch cut short)."""
    return _flagged(batches.filter(F.col("status") == UNREADABLE), [(F.lit(True), "crc", None, F.format_string(
        "%s: not a batch (%s); the %d bytes from there to the end of the range are not read", _place(), "detail",
        "size"))])


def _replica_checks(summary: DataFrame) -> DataFrame:
    """Check 4 (log start <= HW <= LEO, recovery point <= LEO, an entry in the HW and recovery-point checkpoints for
    every partition directory) and check 1's last segment not named past the batches."""
    hw, rp = F.col("hw_checkpoint"), F.col("recovery_point")
    return _flagged(summary, [
        (hw.isNull(), "checkpoint", None, F.when(F.col("hw_file"), F.lit("no entry in replication-offset-checkpoint"))
         .otherwise(F.lit("no replication-offset-checkpoint in its log directory"))),
        (rp.isNull(), "checkpoint", None, F.when(F.col("recovery_file"), F.lit(
            "no entry in recovery-point-offset-checkpoint")).otherwise(F.lit(
                "no recovery-point-offset-checkpoint in its log directory"))),
        (hw < F.col("log_start"), "checkpoint", hw, F.format_string(
            "high watermark %d is below the log start offset %d", "hw_checkpoint", "log_start")),
        (hw > F.col("leo"), "checkpoint", hw, F.format_string(
            "high watermark %d is above the log end offset %d", "hw_checkpoint", "leo")),
        (rp > F.col("leo"), "checkpoint", rp, F.format_string(
            "recovery point %d is above the log end offset %d", "recovery_point", "leo")),
        (F.col("last_segment") > F.col("batch_end"), "offset-gap", F.col("batch_end"), F.format_string(
            "offsets %d..%d are missing: the batches end at %d, the last segment is named %020d", "batch_end",
            F.col("last_segment") - 1, "batch_end", "last_segment")),
    ])


def _agreement(batches: DataFrame, pairs: DataFrame) -> DataFrame:
    """Check 2: for each pair of replicas of a partition, the batches below min(HW) of the two (and from the later
    of their first offsets) are identical: offsets, leader epoch and CRC. One violation per pair: the first
    divergent offset, with each side's epoch and CRC."""
    rows = readable(batches).select("replica_id", "base_offset",
                                    F.struct("last_offset", "leader_epoch", "crc").alias("batch"))
    bounds = F.broadcast(pairs.select("rid_a", "rid_b", "limit", "lower"))

    def side(key: str, name: str) -> DataFrame:
        joined = rows.join(bounds, F.col(key) == F.col("replica_id"))
        return joined.filter((F.col("base_offset") < F.col("limit")) & (F.col("base_offset") >= F.col("lower"))) \
            .select("rid_a", "rid_b", "base_offset", F.lit(name).alias("side"), "batch")

    # Both sides of every pair side by side per offset: one shuffle by pair serves both aggregations.
    by_pair = side("rid_a", "a").unionByName(side("rid_b", "b")).repartition("rid_a", "rid_b")
    per_offset = by_pair.groupBy("rid_a", "rid_b", "base_offset").agg(
        *(F.max(F.when(F.col("side") == name, F.col("batch"))).alias(name) for name in ("a", "b")))
    first = per_offset.filter(~F.col("a").eqNullSafe(F.col("b"))).groupBy("rid_a", "rid_b").agg(F.min(F.struct(
        "base_offset", F.col("a.leader_epoch").alias("a_leader_epoch"), F.col("a.crc").alias("a_crc"),
        F.col("b.leader_epoch").alias("b_leader_epoch"), F.col("b.crc").alias("b_crc"))).alias("m"))
    found = first.join(F.broadcast(pairs), ["rid_a", "rid_b"]).withColumn("broker", F.col("broker_b"))
    return _flagged(found, [(F.lit(True), "divergence", F.col("m.base_offset"), F.format_string(
        "brokers %d and %d differ at offset %d, below both high watermarks (min %d): broker %d has %s, broker %d "
        "has %s", "broker_a", "broker_b", "m.base_offset", "limit", "broker_a",
        _batch_text("m.a_leader_epoch", "m.a_crc"), "broker_b", _batch_text("m.b_leader_epoch", "m.b_crc")))])


def _batch_text(epoch: str, crc: str) -> Column:
    return F.when(F.col(epoch).isNull(), F.lit("no batch there")).otherwise(
        F.format_string("a batch of leader epoch %d, crc 0x%08x", epoch, crc))


def _epoch_cache(batches: DataFrame, replicas: DataFrame, epochs: DataFrame) -> DataFrame:
    """Check 3: leader-epoch-checkpoint entries strictly increasing; each entry's start offset is the first offset
    of a batch with that epoch (within the retained log, below the LEO); no batch carries an epoch it lacks. One
    join of the entries with each replica's epochs as its batches show them."""
    by_epoch = readable(batches).groupBy("replica_id", F.col("leader_epoch").alias("epoch")).agg(
        F.min("base_offset").alias("epoch_first"))
    rows = epochs.join(by_epoch, ["replica_id", "epoch"], "full_outer").join(F.broadcast(replicas), "replica_id")
    in_log = (F.col("start_offset") >= F.coalesce("first_offset", "leo")) & (F.col("start_offset") < F.col("leo"))
    return _flagged(rows, [
        ((F.col("epoch") <= F.col("prev_epoch")) | (F.col("start_offset") <= F.col("prev_start")), "epoch-cache",
         F.col("start_offset"), F.format_string(
             "leader-epoch-checkpoint entry %d (epoch %d at %d) does not follow the one before (epoch %d at %d)",
             F.col("entry") + 1, "epoch", "start_offset", "prev_epoch", "prev_start")),
        (in_log & F.col("epoch_first").isNull(), "epoch-cache", F.col("start_offset"), F.format_string(
            "leader-epoch-checkpoint says epoch %d starts at %d, but no batch has that epoch", "epoch",
            "start_offset")),
        (in_log & (F.col("epoch_first") != F.col("start_offset")), "epoch-cache", F.col("start_offset"),
         F.format_string("leader-epoch-checkpoint says epoch %d starts at %d, but its first batch starts at %d",
                         "epoch", "start_offset", "epoch_first")),
        ((F.col("start_offset") >= F.col("leo")) & F.col("epoch_first").isNotNull(), "epoch-cache",
         F.col("epoch_first"), F.format_string(
             "leader-epoch-checkpoint says epoch %d starts at %d (at or past the log end %d), but a batch of that "
             "epoch starts at %d", "epoch", "start_offset", "leo", "epoch_first")),
        (F.col("entry").isNull() & F.col("has_epochs"), "epoch-cache", F.col("epoch_first"), F.format_string(
            "batches of leader epoch %d (the first at offset %d) but leader-epoch-checkpoint has no entry for it",
            "epoch", "epoch_first")),
    ])
