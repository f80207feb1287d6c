"""The checks across batches, replicas and checkpoints, as joins and aggregations in Spark SQL.

Inputs: the batch table (verifier.source) and two small tables the driver builds from the layout: one row per
replica (REPLICA_SCHEMA: its checkpoint entries) and one per leader-epoch-checkpoint entry (EPOCH_SCHEMA). Outputs:
one row per replica (`replica_summary`) and one row per violation (`violations`, VIOLATION_COLUMNS), both small
enough for the driver to collect. The checks of `violations` also read the summary, cached: each replica's bounds,
and each partition's replicas with their bounds, from which each pair of replicas' range to compare follows. So
`violations` waits for no collected result: the driver plans it while the query of the summary is still reading the
segment files (verifier.job).

Each output is one SQL query, handed to Spark whole. Built with DataFrame calls instead, the checks took 1,906 calls to
the JVM, each one analysed there on its own: 0.7 s before anything ran, against 0.16 s for the SQL text.

A replica's log end offset (LEO) is the end of its last complete batch (or, for a log without batches, its active
segment's base offset or its log start); its high watermark (HW) is its replication-offset-checkpoint entry clamped
to its LEO (its log start without an entry); its log start is the log-start-offset-checkpoint entry, never before
its first segment.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from broker.log.checkpoint import RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from verifier.layout import Layout
from verifier.scanner import CRC, OK, TORN, UNREADABLE
from verifier.views import Views, local_table

REPLICA_SCHEMA = ("replica_id int, broker int, topic string, partition int, log_start bigint, hw_checkpoint bigint, "
                  "recovery_point bigint, last_segment bigint, hw_file boolean, recovery_file boolean, "
                  "has_epochs boolean")
EPOCH_SCHEMA = "replica_id int, entry int, epoch int, start_offset bigint, prev_epoch int, prev_start bigint"
VIOLATION_COLUMNS = ["kind", "topic", "partition", "broker", "offset", "detail"]
READABLE = (OK, CRC)
#: The kind of the rows of `violations` that are torn tails (reported apart from the violations): their offset is the
#: position of the tail, their detail "<segment> <bytes> <what>".
TORN_TAIL = "torn-tail"


def _replica_table(spark: SparkSession, layout: Layout) -> DataFrame:
    rows = []
    for r in layout.replicas:
        files = layout.log_dirs[r.dir_index].checkpoints
        rows.append((r.replica_id, r.broker, r.topic, r.partition, r.log_start_offset, r.high_watermark,
                     r.recovery_point, r.segments[-1].base_offset if r.segments else None,
                     REPLICATION_OFFSET_CHECKPOINT in files, RECOVERY_POINT_CHECKPOINT in files, r.epochs is not None))
    return local_table(spark, rows, REPLICA_SCHEMA)


def _epoch_table(spark: SparkSession, layout: Layout) -> DataFrame:
    """One row per leader-epoch-checkpoint entry, with the entry before it in the same file (null for the first)."""
    rows = [(r.replica_id, entry, epoch, start, *(r.epochs[entry - 1] if entry else (None, None)))
            for r in layout.replicas for entry, (epoch, start) in enumerate(r.epochs or ())]
    return local_table(spark, rows, EPOCH_SCHEMA)


#: The whole batches (valid or with a bad CRC: their header fields are still what the broker wrote).
_IS_READABLE = f"status IN ({', '.join(repr(status) for status in READABLE)})"
_READABLE_BATCHES = f"(SELECT * FROM {{batches}} WHERE {_IS_READABLE})"
_PLACE = "format_string('%020d.log position %d', segment, `position`)"


def replica_summary(views: Views, layout: Layout) -> DataFrame:
    """Per replica of the layout (the view ``batches`` holds their batches): the REPLICA_SCHEMA columns plus
    batches, records, bytes, first_offset, batch_end, leo, hw. Adds the view ``replicas``."""
    views.add("replicas", _replica_table(views.spark, layout))
    leo = "greatest(s.batch_end, r.last_segment, r.log_start)"
    return views.sql(f"""
        SELECT r.*, coalesce(s.batches, 0) AS batches, coalesce(s.records, 0) AS records,
               coalesce(s.bytes, 0) AS bytes, s.first_offset, s.batch_end, {leo} AS leo,
               least(coalesce(r.hw_checkpoint, r.log_start), {leo}) AS hw
        FROM {{replicas}} r LEFT JOIN (
            SELECT replica_id, count(*) AS batches, CAST(sum(records) AS BIGINT) AS records,
                   CAST(sum(`size`) AS BIGINT) AS bytes, min(base_offset) AS first_offset,
                   max(last_offset) + 1 AS batch_end
            FROM {_READABLE_BATCHES} GROUP BY replica_id) s
        ON r.replica_id = s.replica_id""")


def violations(views: Views, layout: Layout) -> DataFrame:
    """Every violation the views ``batches`` and ``summary`` and the layout's epoch files show, and every torn tail
    (kind TORN_TAIL), unordered (VIOLATION_COLUMNS). It needs no Spark job before it: the driver can plan it while
    the first query of the summary is still reading the segment files. Adds the view ``epochs``.

    The replicas of compacted partitions (``layout.compacted``) have gaps the cleaner left between and inside their
    segments, and may differ batch for batch: for them the gaps, the batches' agreement and an epoch's first batch
    are not checked here: the compaction contract is (verifier.compaction)."""
    views.add("epochs", _epoch_table(views.spark, layout))
    compacted = layout.compacted_replicas
    cleaned = f"replica_id IN ({', '.join(map(str, compacted))})" if compacted else None
    return views.sql(" UNION ALL ".join([_batch_checks(cleaned), _replica_checks(cleaned), _agreement(cleaned),
                                         _epoch_cache(cleaned)]))


def _unless(condition: str, cleaned: str | None) -> str:
    """``condition``, checked only on replicas of partitions that are not compacted (``cleaned`` names those)."""
    return condition if cleaned is None else f"{condition} AND NOT {cleaned}"


Check = tuple[str, str, str | None, str]  # SQL of (condition, kind, offset, detail)


def flagged(rows: str, checks: list[Check]) -> str:
    """A query of the violations of every row of ``rows`` (a FROM clause) for each check whose condition holds: one
    pass over the rows."""
    candidates = ", ".join(
        f"CASE WHEN {condition} THEN named_struct('kind', '{kind}', 'offset', CAST({offset or 'NULL'} AS BIGINT), "
        f"'detail', {detail}) END" for condition, kind, offset, detail in checks)
    return f"""
        SELECT v.kind, topic, `partition`, broker, v.offset AS `offset`, v.detail FROM (
            SELECT topic, `partition`, broker, explode(array({candidates})) AS v FROM {rows})
        WHERE v IS NOT NULL"""


def _batch_checks(cleaned: str | None) -> str:
    """Check 1 on every row of the batch table, in file order per replica: of the whole batches (valid or with a bad
    CRC), the CRC32C valid, offsets contiguous within and between batches and segments, leader epochs never
    decreasing, each segment named after its first batch; bytes where a batch should be that are not one (a bad
    length or magic, a batch cut short); and the torn tails, in the violations' columns (kind TORN_TAIL). The batch
    before a whole batch is the whole batch before it (``lag ... IGNORE NULLS`` of values only whole batches
    have). On compacted partitions (``cleaned``) offsets may skip, and a segment's first batch may come after the
    offset it is named after, never before it."""
    def before(column: str) -> str:
        return f"lag(CASE WHEN {_IS_READABLE} THEN {column} END) IGNORE NULLS OVER w"

    rows = f"""(SELECT *, {before('last_offset')} AS prev_last, {before('leader_epoch')} AS prev_epoch
                FROM {{batches}} WINDOW w AS (PARTITION BY replica_id ORDER BY segment, `position`))"""
    misnamed = "`position` = 0 AND base_offset != segment"
    of_whole_batches: list[Check] = [
        (_unless("base_offset > prev_last + 1", cleaned), "offset-gap", "prev_last + 1",
         "format_string('offsets %d..%d are missing: the batch before ends at %d, the next (%s) starts at %d', "
         f"prev_last + 1, base_offset - 1, prev_last, {_PLACE}, base_offset)"),
        ("base_offset <= prev_last", "offset-gap", "base_offset",
         "format_string('the batch at %s starts at offset %d, within the batch before it (which ends at %d)', "
         f"{_PLACE}, base_offset, prev_last)"),
        ("last_offset < base_offset", "offset-gap", "base_offset",
         f"format_string('the batch at %s ends (%d) before it starts (%d)', {_PLACE}, last_offset, base_offset)"),
        ("leader_epoch < prev_epoch", "epoch-cache", "base_offset",
         "format_string('the partition leader epoch goes down from %d to %d at %s', prev_epoch, leader_epoch, "
         f"{_PLACE})"),
        (misnamed if cleaned is None else f"{misnamed} AND (base_offset < segment OR NOT {cleaned})", "offset-gap",
         "segment",
         "format_string('segment %020d.log starts with offset %d', segment, base_offset)"),
    ]
    return flagged(rows, [
        (f"status = '{CRC}'", "crc", "base_offset",
         f"format_string('%s: the batch of offsets %d..%d: %s', {_PLACE}, base_offset, last_offset, detail)"),
        *[(f"{_IS_READABLE} AND {condition}", kind, offset, detail)
          for condition, kind, offset, detail in of_whole_batches],
        (f"status = '{UNREADABLE}'", "crc", None,
         "format_string('%s: not a batch (%s); the %d bytes from there to the end of the range are not read', "
         f"{_PLACE}, detail, `size`)"),
        (f"status = '{TORN}'", TORN_TAIL, "`position`", "format_string('%d %d %s', segment, `size`, detail)"),
    ])


def _replica_checks(cleaned: str | None) -> str:
    """Check 4 (log start <= HW <= LEO, recovery point <= LEO, an entry in the HW and recovery-point checkpoints for
    every partition directory) and check 1's last segment not named past the batches (except on compacted
    partitions: ``cleaned``)."""
    return flagged("{summary}", [
        ("hw_checkpoint IS NULL", "checkpoint", None,
         "CASE WHEN hw_file THEN 'no entry in replication-offset-checkpoint' "
         "ELSE 'no replication-offset-checkpoint in its log directory' END"),
        ("recovery_point IS NULL", "checkpoint", None,
         "CASE WHEN recovery_file THEN 'no entry in recovery-point-offset-checkpoint' "
         "ELSE 'no recovery-point-offset-checkpoint in its log directory' END"),
        ("hw_checkpoint < log_start", "checkpoint", "hw_checkpoint",
         "format_string('high watermark %d is below the log start offset %d', hw_checkpoint, log_start)"),
        ("hw_checkpoint > leo", "checkpoint", "hw_checkpoint",
         "format_string('high watermark %d is above the log end offset %d', hw_checkpoint, leo)"),
        ("recovery_point > leo", "checkpoint", "recovery_point",
         "format_string('recovery point %d is above the log end offset %d', recovery_point, leo)"),
        (_unless("last_segment > batch_end", cleaned), "offset-gap", "batch_end",
         "format_string('offsets %d..%d are missing: the batches end at %d, the last segment is named %020d', "
         "batch_end, last_segment - 1, batch_end, last_segment)"),
    ])


def _agreement(cleaned: str | None) -> str:
    """Check 2: for each pair of replicas of a partition, the batches below min(HW) of the two (and from the later
    of their first offsets) are identical: offsets, leader epoch and CRC. One violation per pair: the first
    divergent offset, with each side's epoch and CRC.

    The batch rows move once, by partition: grouped by base offset (each replica's batch there), each offset meets
    its partition's replicas, and every pair whose range holds the offset compares its two sides there. Joining each
    pair of replicas with each side's batches instead took Spark twice as long to plan. The batches of compacted
    partitions (``cleaned``) are not compared."""
    compared = _READABLE_BATCHES if cleaned is None else \
        f"(SELECT * FROM {{batches}} WHERE {_IS_READABLE} AND NOT {cleaned})"
    replicas = """(
        SELECT topic, `partition`,
               collect_list(named_struct('id', replica_id, 'broker', broker, 'hw', hw, 'first', first_offset)) AS rs
        FROM {summary} GROUP BY topic, `partition`)"""
    offsets = f"""(
        SELECT topic, `partition`, base_offset,
               collect_list(named_struct('id', replica_id, 'batch', named_struct(
                   'last_offset', last_offset, 'leader_epoch', leader_epoch, 'crc', crc))) AS here
        FROM (SELECT /*+ REPARTITION(topic, `partition`) */ * FROM {compared})
        GROUP BY topic, `partition`, base_offset)"""

    def side(replica: str) -> str:
        """The batch of ``replica`` at this offset (null: none; the larger of two, as a struct, if a log has two)."""
        return f"array_max(transform(filter(here, h -> h.id = {replica}.id), h -> h.batch))"

    # Least and greatest skip nulls: a replica without batches bounds nothing from below.
    in_range = "base_offset >= greatest(a.first, b.first) AND base_offset < least(a.hw, b.hw)"
    pairs_here = (f"flatten(transform(rs, a -> transform(filter(rs, b -> b.id > a.id AND {in_range}), b -> "
                  "named_struct('id_a', a.id, 'id_b', b.id, 'broker_a', a.broker, 'broker_b', b.broker, "
                  f"'limit', least(a.hw, b.hw), 'a', {side('a')}, 'b', {side('b')}))))")
    found = f"""(
        SELECT topic, `partition`, p.broker_a, p.broker_b, p.broker_b AS broker, p.`limit`,
               min(named_struct('base_offset', base_offset, 'a_leader_epoch', p.a.leader_epoch, 'a_crc', p.a.crc,
                                'b_leader_epoch', p.b.leader_epoch, 'b_crc', p.b.crc)) AS m
        FROM (SELECT topic, `partition`, base_offset, explode({pairs_here}) AS p
              FROM {offsets} JOIN {replicas} USING (topic, `partition`))
        WHERE NOT p.a <=> p.b
        GROUP BY topic, `partition`, p.id_a, p.id_b, p.broker_a, p.broker_b, p.`limit`)"""
    return flagged(found, [("TRUE", "divergence", "m.base_offset", (
        "format_string('brokers %d and %d differ at offset %d, below both high watermarks (min %d): broker %d has "
        "%s, broker %d has %s', broker_a, broker_b, m.base_offset, `limit`, broker_a, "
        f"{_batch_text('m.a_leader_epoch', 'm.a_crc')}, broker_b, {_batch_text('m.b_leader_epoch', 'm.b_crc')})"))])


def _batch_text(epoch: str, crc: str) -> str:
    return (f"CASE WHEN {epoch} IS NULL THEN 'no batch there' "
            f"ELSE format_string('a batch of leader epoch %d, crc 0x%08x', {epoch}, {crc}) END")


def _epoch_cache(cleaned: str | None) -> str:
    """Check 3: leader-epoch-checkpoint entries strictly increasing; each entry's start offset is the first offset
    of a batch with that epoch (within the retained log, below the LEO); no batch carries an epoch it lacks. One
    join of the entries with each replica's epochs as its batches show them. On a compacted partition (``cleaned``)
    the cleaner may have removed an epoch's first batches, or all of them: there an epoch's first batch must only
    not come before the entry's start offset."""
    first_differs = "epoch_first != start_offset" if cleaned is None else \
        f"epoch_first != start_offset AND (epoch_first < start_offset OR NOT {cleaned})"
    rows = f"""(
        SELECT * FROM {{epochs}} FULL OUTER JOIN (
            SELECT replica_id, leader_epoch AS epoch, min(base_offset) AS epoch_first
            FROM {_READABLE_BATCHES} GROUP BY replica_id, leader_epoch) USING (replica_id, epoch)
        JOIN {{summary}} USING (replica_id))"""
    in_log = "(start_offset >= coalesce(first_offset, leo) AND start_offset < leo)"
    return flagged(rows, [
        ("epoch <= prev_epoch OR start_offset <= prev_start", "epoch-cache", "start_offset",
         "format_string('leader-epoch-checkpoint entry %d (epoch %d at %d) does not follow the one before "
         "(epoch %d at %d)', entry + 1, epoch, start_offset, prev_epoch, prev_start)"),
        (_unless(f"{in_log} AND epoch_first IS NULL", cleaned), "epoch-cache", "start_offset",
         "format_string('leader-epoch-checkpoint says epoch %d starts at %d, but no batch has that epoch', epoch, "
         "start_offset)"),
        (f"{in_log} AND {first_differs}", "epoch-cache", "start_offset",
         "format_string('leader-epoch-checkpoint says epoch %d starts at %d, but its first batch starts at %d', "
         "epoch, start_offset, epoch_first)"),
        ("start_offset >= leo AND epoch_first IS NOT NULL", "epoch-cache", "epoch_first",
         "format_string('leader-epoch-checkpoint says epoch %d starts at %d (at or past the log end %d), but a batch "
         "of that epoch starts at %d', epoch, start_offset, leo, epoch_first)"),
        ("entry IS NULL AND has_epochs", "epoch-cache", "epoch_first",
         "format_string('batches of leader epoch %d (the first at offset %d) but leader-epoch-checkpoint has no "
         "entry for it', epoch, epoch_first)"),
    ])
