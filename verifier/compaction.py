"""The compaction contract, checked on compacted partitions (``Layout.compacted``) where the other checks compare
replicas batch for batch.

Each replica cleans its log on its own, so below their high watermarks two replicas of a compacted partition may hold
different batches: one has removed records the other still has, tombstones included. What they must still agree on,
below the smaller of their two high watermarks (verifier.checks checks that offsets only increase):

- a record both hold at an offset is the same record (same key and value);
- a key both hold is at the same offset on both, when each one's latest record of it (below its own high watermark)
  is below that bound. A record of the key between the bound and one side's high watermark may have let that side's
  cleaner remove older ones, and a key one side lacks altogether may have had its tombstone dropped: neither is
  compared.

And a record acknowledged to a producer may be gone from a replica that holds a later record of its key, or if the
history has a later acknowledged record of its key (a tombstone that superseded it may have been dropped since), a
tombstone of its key whose outcome is not known, or if it is a tombstone itself or has no key (the cleaner drops
those in time).

Each check is one query over the records of the compacted partitions (the view ``keyed``, KEYED_RECORD_SCHEMA) and
the replicas' bounds (the view ``summary``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame

from protocol.history import OK, Outcome
from verifier.checks import flagged
from verifier.record_digest import key_digest
from verifier.views import Views, local_table

#: The records of compacted partitions below their replica's high watermark, with that bound.
_BOUNDED = "(SELECT k.*, s.hw FROM {keyed} k JOIN {summary} s USING (replica_id) WHERE k.`offset` < s.hw)"


def agreement() -> str:
    """The query of both agreements (VIOLATION_COLUMNS, kind divergence): one violation per pair of replicas and
    kind of disagreement, naming its first offset."""
    same_offset = f"""(
        SELECT a.topic, a.`partition`, a.broker AS broker_a, b.broker AS broker_b, b.broker,
               least(a.hw, b.hw) AS `limit`, count(*) AS records, min(a.`offset`) AS first
        FROM {_BOUNDED} a JOIN {_BOUNDED} b
          ON a.topic = b.topic AND a.`partition` = b.`partition` AND a.`offset` = b.`offset`
             AND a.replica_id < b.replica_id
        WHERE a.digest != b.digest
        GROUP BY a.topic, a.`partition`, a.replica_id, b.replica_id, a.broker, b.broker, least(a.hw, b.hw))"""
    latest = f"""(
        SELECT replica_id, broker, topic, `partition`, hw, key_digest, max(`offset`) AS last
        FROM {_BOUNDED} WHERE key_digest IS NOT NULL
        GROUP BY replica_id, broker, topic, `partition`, hw, key_digest)"""
    latest_keys = f"""(
        SELECT a.topic, a.`partition`, a.broker AS broker_a, b.broker AS broker_b, b.broker,
               least(a.hw, b.hw) AS `limit`, count(*) AS keys, min(named_struct('a', a.last, 'b', b.last)) AS first
        FROM {latest} a JOIN {latest} b
          ON a.topic = b.topic AND a.`partition` = b.`partition` AND a.key_digest = b.key_digest
             AND a.replica_id < b.replica_id
        WHERE a.last < least(a.hw, b.hw) AND b.last < least(a.hw, b.hw) AND a.last != b.last
        GROUP BY a.topic, a.`partition`, a.replica_id, b.replica_id, a.broker, b.broker, least(a.hw, b.hw))"""
    return " UNION ALL ".join([
        flagged(same_offset, [("TRUE", "divergence", "first", (
            "format_string('brokers %d and %d hold different records at %d offsets below both high watermarks (min "
            "%d) of this compacted partition, the first at offset %d', broker_a, broker_b, records, `limit`, "
            "first)"))]),
        flagged(latest_keys, [("TRUE", "divergence", "least(first.a, first.b)", (
            "format_string('brokers %d and %d disagree on the latest record of %d keys below both high watermarks "
            "(min %d) of this compacted partition: the first is at offset %d on broker %d, at %d on broker %d', "
            "broker_a, broker_b, keys, `limit`, first.a, broker_a, first.b, broker_b)"))]),
    ])


@dataclass(frozen=True, slots=True)
class Superseded:
    """Acknowledged records of compacted partitions that may be gone: from every replica, by the history
    (``by_history``: outcome numbers), or from the replicas that hold a later record of their key (``on_replica``:
    outcome numbers and replica ids)."""

    by_history: DataFrame
    on_replica: DataFrame

    def anywhere(self) -> DataFrame:
        """The outcome numbers of those that may be gone from some replica (and so be found on none)."""
        return self.by_history.union(self.on_replica.select("outcome")).distinct()


def superseded(views: Views, outcomes: Sequence[Outcome], compacted: Collection[tuple[str, int]]) -> Superseded:
    """The acknowledged records of compacted partitions that may be gone (see the module), by the history and by
    what each replica holds (the view ``keyed``). Adds the view ``compacted_acked``."""
    acked = [(number, o.topic, o.partition, o.offset, key_digest(o.key)) for number, o in enumerate(outcomes)
             if o.status == OK and (o.topic, o.partition) in compacted and o.key is not None]
    views.add("compacted_acked", local_table(views.spark, acked,
                                             "outcome int, topic string, partition int, offset bigint, "
                                             "key_digest binary"))
    by_history = local_table(views.spark, [(number,) for number in sorted(_gone_by_history(outcomes, compacted))],
                             "outcome int")
    on_replica = views.sql("""
        SELECT DISTINCT a.outcome, k.replica_id
        FROM {compacted_acked} a JOIN {keyed} k
          ON a.topic = k.topic AND a.`partition` = k.`partition` AND a.key_digest = k.key_digest
        WHERE k.`offset` > a.`offset`""")
    return Superseded(by_history, on_replica)


def _gone_by_history(outcomes: Sequence[Outcome], compacted: Collection[tuple[str, int]]) -> set[int]:
    """The acknowledged records of compacted partitions the history alone allows to be gone: tombstones, records
    without a key, records a later acknowledged record of their key follows, and records of a key that has a
    tombstone whose outcome is not known (in their partition, or in an unknown one)."""
    latest: dict[tuple[str, int, bytes], int] = {}
    unsettled: set[tuple[str, int | None, bytes]] = set()
    for o in outcomes:
        if o.key is None:
            continue
        if o.status == OK:
            where = (o.topic, o.partition, o.key)
            latest[where] = max(latest.get(where, -1), o.offset)
        elif o.value is None:
            unsettled.add((o.topic, o.partition, o.key))
    gone = set()
    for number, o in enumerate(outcomes):
        if o.status != OK or (o.topic, o.partition) not in compacted:
            continue
        if (o.key is None or o.value is None or o.offset < latest[(o.topic, o.partition, o.key)]
                or (o.topic, o.partition, o.key) in unsettled or (o.topic, None, o.key) in unsettled):
            gone.add(number)
    return gone
