"""The checks across batches, replicas and checkpoints, as DataFrame joins and aggregations.

Inputs: the batch table (verifier.source) and two small tables the driver builds from the layout: one row per
replica (REPLICA_SCHEMA: its checkpoint entries) and one per leader-epoch-checkpoint entry (EPOCH_SCHEMA). Outputs:
one row per replica (`replica_summary`) and one row per violation (`violations`, VIOLATION_COLUMNS), both small
enough for the driver to collect.

A replica's log end offset (LEO) is the end of its last complete batch (or, for a log without batches, its active
segment's base offset or its log start); its high watermark (HW) is its replication-offset-checkpoint entry clamped
to its LEO (its log start without an entry); its log start is the log-start-offset-checkpoint entry, never before
its first segment.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from broker.log.checkpoint import RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from verifier.layout import Layout
from verifier.scanner import CRC, OK, TORN, UNREADABLE

REPLICA_SCHEMA = ("replica_id int, broker int, topic string, partition int, log_start bigint, hw_checkpoint bigint, "
                  "recovery_point bigint, last_segment bigint, hw_file boolean, recovery_file boolean, "
                  "has_epochs boolean")
EPOCH_SCHEMA = "replica_id int, entry int, epoch int, start_offset bigint"
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
    rows = [(r.replica_id, entry, epoch, start)
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
    return (replicas.join(stats, "replica_id", "left")
            .fillna(0, ["batches", "records", "bytes"])
            .withColumn("leo", leo)
            .withColumn("hw", F.least(F.coalesce("hw_checkpoint", "log_start"), F.col("leo"))))


def violations(batches: DataFrame, summary: DataFrame, epochs: DataFrame) -> DataFrame:
    """Every violation the tables show, unordered (VIOLATION_COLUMNS)."""
    return reduce(DataFrame.unionByName, [
        _batch_checks(batches), _unreadable(batches), _replica_checks(summary), _agreement(batches, summary),
        _epoch_cache(batches, summary, epochs)])


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


def _agreement(batches: DataFrame, summary: DataFrame) -> DataFrame:
    """Check 2: for each pair of replicas of a partition, the batches below min(HW) of the two (and from the later
    of their first offsets) are identical: offsets, leader epoch and CRC. One violation per pair: the first
    divergent offset, with each side's epoch and CRC."""
    r = summary.select("replica_id", "broker", "topic", "partition", "hw", "first_offset")
    a, b = r.alias("a"), r.alias("b")
    pairs = a.join(b, (F.col("a.topic") == F.col("b.topic")) & (F.col("a.partition") == F.col("b.partition"))
                   & (F.col("a.replica_id") < F.col("b.replica_id"))).select(
        F.col("a.replica_id").alias("rid_a"), F.col("b.replica_id").alias("rid_b"),
        F.col("a.broker").alias("broker_a"), F.col("b.broker").alias("broker_b"),
        F.col("a.topic").alias("topic"), F.col("a.partition").alias("partition"),
        F.least("a.hw", "b.hw").alias("limit"), F.greatest("a.first_offset", "b.first_offset").alias("lower"))
    rows = readable(batches).select("replica_id", "base_offset", "last_offset", "leader_epoch", "crc")
    bounds = pairs.select("rid_a", "rid_b", "limit", "lower")

    def side(key: str, prefix: str) -> DataFrame:
        joined = bounds.join(rows, F.col(key) == F.col("replica_id"))
        return joined.filter((F.col("base_offset") < F.col("limit")) & (F.col("base_offset") >= F.col("lower"))) \
            .select("rid_a", "rid_b", "base_offset", *(F.col(c).alias(f"{prefix}_{c}")
                                                      for c in ("last_offset", "leader_epoch", "crc")))

    both = side("rid_a", "a").join(side("rid_b", "b"), ["rid_a", "rid_b", "base_offset"], "full_outer")
    same = reduce(Column.__and__, [F.col(f"a_{c}").eqNullSafe(F.col(f"b_{c}"))
                                   for c in ("last_offset", "leader_epoch", "crc")])
    first = both.filter(~same).groupBy("rid_a", "rid_b").agg(F.min(F.struct(
        "base_offset", "a_leader_epoch", "a_crc", "b_leader_epoch", "b_crc")).alias("m"))
    found = first.join(pairs, ["rid_a", "rid_b"]).withColumn("broker", F.col("broker_b"))
    return _flagged(found, [(F.lit(True), "divergence", F.col("m.base_offset"), F.format_string(
        "brokers %d and %d differ at offset %d, below both high watermarks (min %d): broker %d has %s, broker %d "
        "has %s", "broker_a", "broker_b", "m.base_offset", "limit", "broker_a",
        _batch_text("m.a_leader_epoch", "m.a_crc"), "broker_b", _batch_text("m.b_leader_epoch", "m.b_crc")))])


def _batch_text(epoch: str, crc: str) -> Column:
    return F.when(F.col(epoch).isNull(), F.lit("no batch there")).otherwise(
        F.format_string("a batch of leader epoch %d, crc 0x%08x", epoch, crc))


def _epoch_cache(batches: DataFrame, summary: DataFrame, epochs: DataFrame) -> DataFrame:
    """Check 3: leader-epoch-checkpoint entries strictly increasing; each entry's start offset is the first offset
    of a batch with that epoch (within the retained log, below the LEO); no batch carries an epoch it lacks."""
    replica = summary.select("replica_id", "broker", "topic", "partition", "first_offset", "leo", "has_epochs")
    order = Window.partitionBy("replica_id").orderBy("entry")
    entries = (epochs.withColumn("prev_epoch", F.lag("epoch").over(order))
               .withColumn("prev_start", F.lag("start_offset").over(order))
               .join(replica, "replica_id"))
    unordered = _flagged(entries, [(
        (F.col("epoch") <= F.col("prev_epoch")) | (F.col("start_offset") <= F.col("prev_start")),
        "epoch-cache", F.col("start_offset"), F.format_string(
            "leader-epoch-checkpoint entry %d (epoch %d at %d) does not follow the one before (epoch %d at %d)",
            F.col("entry") + 1, "epoch", "start_offset", "prev_epoch", "prev_start"))])
    by_epoch = readable(batches).groupBy("replica_id", "leader_epoch").agg(
        F.min("base_offset").alias("epoch_first"))
    matched = entries.join(by_epoch, (entries.replica_id == by_epoch.replica_id)
                           & (entries.epoch == by_epoch.leader_epoch), "left").drop(by_epoch.replica_id)
    in_log = (F.col("start_offset") >= F.coalesce("first_offset", "leo")) & (F.col("start_offset") < F.col("leo"))
    starts = _flagged(matched, [
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
    ])
    known = epochs.select("replica_id", F.col("epoch").alias("leader_epoch"))
    lacking = (by_epoch.join(known, ["replica_id", "leader_epoch"], "left_anti")
               .join(replica.filter("has_epochs"), "replica_id"))
    unknown = _flagged(lacking, [(F.lit(True), "epoch-cache", F.col("epoch_first"), F.format_string(
        "batches of leader epoch %d (the first at offset %d) but leader-epoch-checkpoint has no entry for it",
        "leader_epoch", "epoch_first"))])
    return reduce(DataFrame.unionByName, [unordered, starts, unknown])
