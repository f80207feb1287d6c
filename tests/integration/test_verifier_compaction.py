"""The verifier on compacted partitions written and cleaned by minikafka's own log code: replicas cleaned on their
own (once, twice with a tombstone dropped, or not at all) verify clean with every acknowledged record accounted
for; a replica missing a key's latest record, or holding another record at an offset, is found; a partition no
cleaner-offset-checkpoint names is checked batch for batch unless it is named with --compacted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol.history import OK, HistoryWriter, Outcome
from tests.verifierutil import KeyedBatches, log_dir, write_compacted_replica
from verifier import verify
from verifier.report import Report

KEYS = [f"k{i}".encode() for i in range(10)]


def _batches(changed: bytes | None = None) -> KeyedBatches:
    """Five rounds of every key (offsets 0-49), a tombstone of k3 (50), ten other keys (51-60), a sixth round of
    every key but k3 (61-69; k7's value ``changed`` if given), five more other keys (70-74). One record a batch."""
    batches = [(r // 2, [(key, key + b"-%d" % r)]) for r in range(5) for key in KEYS]
    batches.append((2, [(b"k3", None)]))
    batches += [(2, [(b"p%d" % i, b"pad")]) for i in range(10)]
    batches += [(3, [(key, changed if changed and key == b"k7" else key + b"-5")]) for key in KEYS if key != b"k3"]
    batches += [(3, [(b"q%d" % i, b"pad")]) for i in range(5)]
    return batches


LEO = 75
K5_LATEST = 65  # k5's record of the sixth round


@pytest.fixture(scope="module")
def directories(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("verifier-compaction")
    one, two, three = (log_dir(root, broker) for broker in (1, 2, 3))
    write_compacted_replica(one, "compacted", 0, _batches(), cleanings=[(LEO, 0)])
    # Cleaned up to offset 60, then again past the tombstone's delete horizon: the tombstone is gone.
    write_compacted_replica(two, "compacted", 0, _batches(), cleanings=[(61, 2000), (LEO, 0)])
    write_compacted_replica(three, "compacted", 0, _batches())
    write_compacted_replica(one, "lost-latest", 0, _batches(), cleanings=[(LEO, 0)])
    write_compacted_replica(two, "lost-latest", 0, _batches(), skip={K5_LATEST})
    write_compacted_replica(one, "changed-value", 0, _batches(), cleanings=[(LEO, 0)])
    write_compacted_replica(two, "changed-value", 0, _batches(b"evil"), cleanings=[(LEO, 0)])
    write_compacted_replica(one, "unnamed", 0, _batches(), cleanings=[(LEO, 0)], named=False)
    write_compacted_replica(two, "unnamed", 0, _batches(), cleanings=[(61, 2000), (LEO, 0)], named=False)
    return [one, two, three]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every record of every topic acknowledged at its offset."""
    path = tmp_path_factory.mktemp("history") / "history.jsonl"
    with HistoryWriter(path) as writer:
        for topic in ("compacted", "lost-latest", "changed-value", "unnamed"):
            for offset, (_epoch, [(key, value)]) in enumerate(_batches()):
                writer.write(Outcome(topic, 0, offset, key, value, OK))
    return path


@pytest.fixture(scope="module")
def report(spark: Any, directories: list[Path], history: Path) -> Report:
    return verify(directories, history, spark=spark)


def _of(report: Report, topic: str) -> list[tuple[str, int | None, int | None]]:
    return sorted(((v.kind, v.broker, v.offset) for v in report.violations if v.topic == topic),
                  key=lambda found: (found[0], found[1] or -1, found[2] or -1))


def test_replicas_cleaned_on_their_own_verify_clean_with_every_acknowledged_record(report: Report):
    assert _of(report, "compacted") == []
    rows = {r.broker: r for r in report.replicas if r.topic == "compacted"}
    assert {broker: (row.leo, row.hw) for broker, row in rows.items()} == {b: (LEO, LEO) for b in (1, 2, 3)}
    assert rows[3].records == LEO and rows[1].records < LEO and rows[2].records < rows[1].records
    assert report.history is not None and report.history["acked"] == 4 * LEO
    assert any("compacted partitions" in note and "compacted-0" in note for note in report.notes), report.notes


def test_a_replica_without_a_keys_latest_record_disagrees_and_loses_it(report: Report):
    assert _of(report, "lost-latest") == [("divergence", 2, 45), ("lost", 2, K5_LATEST)]
    [divergence] = [v for v in report.violations if v.topic == "lost-latest" and v.kind == "divergence"]
    assert "latest record of 1 keys" in divergence.detail and f"offset {K5_LATEST} on broker 1" in divergence.detail


def test_another_record_at_an_offset_is_a_divergence(report: Report):
    changed = 61 + KEYS.index(b"k7") - 1  # k3 is not in the sixth round
    assert _of(report, "changed-value") == [("divergence", 2, changed), ("lost", 2, changed)]


def test_a_partition_no_checkpoint_names_is_checked_batch_for_batch_unless_named(report: Report, spark: Any,
                                                                                directories: list[Path],
                                                                                history: Path):
    assert {kind for kind, _broker, _offset in _of(report, "unnamed")} >= {"offset-gap"}
    named = verify(directories, history, spark=spark, compacted_topics=["unnamed"])
    assert _of(named, "unnamed") == []
