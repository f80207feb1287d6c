"""The verifier's checks on log directories written by minikafka's log code, one finding per topic, all verified in
one Spark job (the session-scoped `spark` fixture): intact replicas, a flipped byte in a record, in a base offset and
in a leader epoch, a torn tail, replicas diverging below and above their high watermarks, epoch checkpoints and
offset checkpoints that disagree with the batches, a misnamed segment; then the report's JSON form, the table, the
Parquet output, and `minikafka verify`'s exit statuses."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from broker.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    EpochEntry,
    LeaderEpochCheckpointFile,
)
from client.cli import main
from protocol.history import OK, HistoryWriter, Outcome
from protocol.records import read_header
from protocol.topic_partition import TopicPartition
from tests.verifierutil import flip_byte, log_dir, set_checkpoint, write_replica
from verifier import verify
from verifier.report import Report, render_table

VALUES = [[b"v0", b"v1"], [b"v2"], [b"v3", b"v4", b"v5"]]  # three batches: offsets 0-1, 2, 3-5
EPOCHS = [0, 0, 1]
LEO = 6
# Broker 2's leader-epoch-checkpoint for each of these topics, against batches of epochs 0 (offsets 0-2), 1 (3-5).
EPOCH_CHECKPOINTS = {
    "epoch-start": [EpochEntry(0, 0), EpochEntry(1, 2)],  # epoch 1 starts at 3, not 2
    "epoch-order": [EpochEntry(0, 0), EpochEntry(1, 3), EpochEntry(0, 4)],  # epoch 0 again, after epoch 1
    "epoch-past-end": [EpochEntry(0, 0), EpochEntry(1, LEO)],  # at the log end, but epoch 1's batch is at 3
}


def _batches(values: list[list[bytes]] = VALUES, epochs: list[int] = EPOCHS) -> list[tuple[int, list[bytes]]]:
    return list(zip(epochs, values, strict=True))


def _positions(segment: Path) -> list[int]:
    """The position of each batch in a segment file."""
    data, positions, at = segment.read_bytes(), [], 0
    while at < len(data):
        positions.append(at)
        at += read_header(data, at).size_in_bytes
    return positions


def _segment(directory: Path, topic: str) -> Path:
    return directory / f"{topic}-0" / f"{0:020d}.log"


@pytest.fixture(scope="module")
def cluster_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two brokers' log directories, each topic (one partition, on both) showing one thing."""
    root = tmp_path_factory.mktemp("verifier-checks")
    one, two = log_dir(root, 1), log_dir(root, 2)
    for directory in (one, two):
        write_replica(directory, "healthy", 0, _batches(), keys=True)
        write_replica(directory, "crc", 0, _batches())
        write_replica(directory, "base-offset", 0, _batches())
        write_replica(directory, "epoch-flip", 0, _batches())
        write_replica(directory, "torn", 0, _batches())
        write_replica(directory, "epoch-entry", 0, _batches())
        for topic in EPOCH_CHECKPOINTS:
            write_replica(directory, topic, 0, _batches())
        write_replica(directory, "hw-above-leo", 0, _batches())
        write_replica(directory, "no-hw", 0, _batches())
        write_replica(directory, "segments", 0, [(0, [b"x" * 100]) for _ in range(6)], segment_bytes=300)
    # Replica 2 took other records from offset 2 on, in a later epoch. Below both HWs: divergence at 2.
    write_replica(one, "diverged", 0, _batches())
    write_replica(two, "diverged", 0, _batches([[b"v0", b"v1"], [b"w2"], [b"w3"]], [0, 2, 2]))
    # The same, but above the HW of one of them: not a divergence (the follower truncates that away).
    write_replica(one, "diverged-above-hw", 0, _batches(), hw=2)
    write_replica(two, "diverged-above-hw", 0, _batches([[b"v0", b"v1"], [b"w2"], [b"w3"]], [0, 2, 2]))

    positions = _positions(_segment(two, "crc"))
    flip_byte(_segment(two, "crc"), positions[2] + 70)  # inside the first record of the batch at offset 3
    flip_byte(_segment(two, "base-offset"), positions[1] + 7)  # baseOffset 2 -> 253 (outside the CRC)
    flip_byte(_segment(two, "epoch-flip"), positions[1] + 15)  # partitionLeaderEpoch 0 -> 255 (outside the CRC)
    with open(_segment(two, "torn"), "ab") as f:  # half a batch written when the broker died
        f.write(_segment(one, "healthy").read_bytes()[:40])
    LeaderEpochCheckpointFile(two / "epoch-entry-0" / LEADER_EPOCH_CHECKPOINT).write([EpochEntry(0, 0)])
    for topic, entries in EPOCH_CHECKPOINTS.items():
        LeaderEpochCheckpointFile(two / f"{topic}-0" / LEADER_EPOCH_CHECKPOINT).write(entries)
    set_checkpoint(two, REPLICATION_OFFSET_CHECKPOINT, TopicPartition("hw-above-leo", 0), LEO + 3)
    set_checkpoint(two, REPLICATION_OFFSET_CHECKPOINT, TopicPartition("no-hw", 0), None)
    second = sorted((two / "segments-0").glob("*.log"))[1]
    second.rename(second.with_name(f"{int(second.stem) + 1:020d}.log"))
    # What the verifier does not know: skipped with a note.
    (two / "__cluster_metadata-0").mkdir()
    (two / "healthy-0" / f"{0:020d}.snapshot").write_bytes(b"")
    (two / "healthy-0" / "partition.metadata").write_text("version: 0\n")
    return one, two


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The history of `healthy`'s records: all acknowledged where they are; plus one acknowledged record that is
    nowhere, and a torn last line."""
    path = tmp_path_factory.mktemp("history") / "history.jsonl"
    with HistoryWriter(path) as writer:
        for offset, value in enumerate(v for batch in VALUES for v in batch):
            writer.write(Outcome("healthy", 0, offset, value, value, OK))
        writer.write(Outcome("healthy", 0, LEO, b"k", b"never-written", OK))
    with open(path, "a") as f:
        f.write('{"topic": "healthy", "partit')
    return path


@pytest.fixture(scope="module")
def report(spark: Any, cluster_dirs: tuple[Path, Path], history: Path,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    output = tmp_path_factory.mktemp("parquet")
    return verify(list(cluster_dirs), history, output=output, spark=spark), output


def _of(report: Report, topic: str) -> list[tuple[str, int | None, int | None]]:
    return sorted((v.kind, v.broker, v.offset) for v in report.violations if v.topic == topic)


def test_intact_replicas_verify_clean_with_exact_counts(report, cluster_dirs):
    found, _ = report
    assert _of(found, "healthy") == [("lost", None, LEO)]  # only the history's record that was never written
    rows = [r for r in found.replicas if r.topic == "healthy"]
    assert [(r.broker, r.log_start, r.hw, r.leo, r.batches, r.records, r.epochs) for r in rows] == [
        (b, 0, LEO, LEO, 3, LEO, ((0, 0), (1, 3))) for b in (1, 2)]
    summary = found.to_json()
    assert (summary["partitions"], summary["replicas"]) == (14, 28)
    assert summary["batches"] == sum(r.batches for r in found.replicas)
    assert [r.bytes for r in rows] == [_segment(d, "healthy").stat().st_size for d in cluster_dirs]


def test_a_flipped_byte_in_a_record_is_a_crc_violation_of_that_broker_and_batch(report):
    found, _ = report
    assert _of(found, "crc") == [("crc", 2, 3)]
    [violation] = [v for v in found.violations if v.topic == "crc"]
    assert "offsets 3..5" in violation.detail and "stored crc" in violation.detail


def test_a_flipped_base_offset_breaks_offset_continuity(report):
    found, _ = report
    kinds = Counter(kind for kind, broker, _ in _of(found, "base-offset") if broker == 2)
    assert kinds["offset-gap"] >= 2, _of(found, "base-offset")  # a gap before the batch, an overlap after it


def test_a_flipped_leader_epoch_is_an_epoch_cache_violation(report):
    found, _ = report
    # ... and the replicas now disagree on that batch's epoch below their high watermarks.
    assert {(kind, broker) for kind, broker, _ in _of(found, "epoch-flip")} == {("epoch-cache", 2),
                                                                                ("divergence", 2)}


def test_a_torn_tail_is_reported_beyond_the_log_end_not_as_corruption(report):
    found, _ = report
    assert _of(found, "torn") == []
    [tail] = [t for t in found.torn_tails if t.topic == "torn"]
    assert (tail.broker, tail.bytes) == (2, 40)
    assert [r.leo for r in found.replicas if r.topic == "torn"] == [LEO, LEO]


def test_replicas_diverging_below_both_high_watermarks_name_the_first_divergent_offset(report):
    found, _ = report
    [violation] = [v for v in found.violations if v.topic == "diverged"]
    assert (violation.kind, violation.offset) == ("divergence", 2)
    assert "broker 1 has a batch of leader epoch 0" in violation.detail
    assert "broker 2 has a batch of leader epoch 2" in violation.detail
    assert _of(found, "diverged-above-hw") == []


def test_each_pair_of_replicas_is_compared_below_both_of_their_high_watermarks(spark, tmp_path: Path):
    brokers = [log_dir(tmp_path, broker) for broker in (1, 2, 3, 4)]
    recut = _batches([[b"v0", b"v1"], [b"v2"], [b"v3"], [b"v4", b"v5"]], [0, 0, 1, 1])  # offsets 3-5 as 3, 4-5
    write_replica(brokers[0], "recut", 0, _batches())
    write_replica(brokers[1], "recut", 0, _batches())
    write_replica(brokers[2], "recut", 0, recut)
    write_replica(brokers[3], "recut", 0, recut, hw=3)  # the same records, but committed only below offset 3
    found = verify(brokers, spark=spark).violations
    assert sorted((v.kind, v.broker, v.offset, v.detail.split(" differ")[0]) for v in found) == [
        ("divergence", 3, 3, "brokers 1 and 3"), ("divergence", 3, 3, "brokers 2 and 3")]


def test_a_leader_epoch_checkpoint_missing_an_epoch_is_reported(report):
    found, _ = report
    assert _of(found, "epoch-entry") == [("epoch-cache", 2, 3)]


def test_a_leader_epoch_checkpoint_that_disagrees_with_the_batches_is_reported_where_it_does(report):
    found, _ = report
    details = {topic: [v.detail for v in found.violations if v.topic == topic] for topic in EPOCH_CHECKPOINTS}
    assert _of(found, "epoch-start") == [("epoch-cache", 2, 2)]
    assert "says epoch 1 starts at 2, but its first batch starts at 3" in details["epoch-start"][0]
    assert _of(found, "epoch-order") == [("epoch-cache", 2, 4), ("epoch-cache", 2, 4)]
    assert any("entry 3 (epoch 0 at 4) does not follow the one before (epoch 1 at 3)" in d
               for d in details["epoch-order"])
    assert _of(found, "epoch-past-end") == [("epoch-cache", 2, 3)]
    assert f"says epoch 1 starts at {LEO} (at or past the log end {LEO}), but a batch of that epoch starts at 3" \
        in details["epoch-past-end"][0]


def test_offset_checkpoints_are_checked_against_the_log(report):
    found, _ = report
    assert _of(found, "hw-above-leo") == [("checkpoint", 2, LEO + 3)]
    assert _of(found, "no-hw") == [("checkpoint", 2, None)]


def test_a_segment_not_named_after_its_first_batch_is_reported(report):
    found, _ = report
    problems = _of(found, "segments")
    assert ("offset-gap", 2, 2) in problems or ("offset-gap", 2, 3) in problems, problems
    assert all(broker == 2 for _, broker, _ in problems)


def test_what_the_verifier_does_not_know_is_skipped_with_a_note(report):
    found, _ = report
    notes = " | ".join(found.notes)
    assert "__cluster_metadata" in notes and ".snapshot" in notes and "partition.metadata" in notes
    assert "torn" in notes  # the history's torn last line
    assert all(r.topic != "__cluster_metadata" for r in found.replicas)


def test_the_json_object_has_the_documented_keys(report):
    found, _ = report
    summary = json.loads(json.dumps(found.to_json()))
    assert list(summary)[:10] == ["consistent", "partitions", "replicas", "batches", "records", "bytes", "acked",
                                  "lost", "violations", "torn_tails"]
    assert summary["consistent"] is False
    assert (summary["acked"], summary["lost"]) == (LEO + 1, 1)
    kinds = {v["kind"] for v in summary["violations"]}
    assert kinds == {"crc", "offset-gap", "divergence", "epoch-cache", "checkpoint", "lost"}
    assert all(set(v) == {"kind", "topic", "partition", "broker", "offset", "detail"} for v in summary["violations"])


def test_the_table_shows_each_replica_and_the_verdict(report):
    found, _ = report
    table = render_table(found)
    assert "diverged-0" in table and "divergence: diverged-0, broker 2, offset 2" in table
    assert table.splitlines()[-1].startswith("INCONSISTENT: 14 partitions, 28 replicas")


def test_a_verification_leaves_the_sessions_adaptive_execution_as_it_found_it(spark, cluster_dirs):
    key = "spark.sql.adaptive.enabled"
    for setting in ("true", "false"):
        spark.conf.set(key, setting)
        verify(list(cluster_dirs), spark=spark)
        assert spark.conf.get(key) == setting
    spark.conf.set(key, "true")


def _plan_descriptions(spark) -> dict[int, str]:
    """The description of the plan of each query the session ran (as Spark's UI would show it), by execution id."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return {e.executionId(): e.physicalPlanDescription() for e in map(executions.apply, range(executions.size()))}


def test_a_verification_leaves_spark_no_description_of_its_queries_plans(spark, cluster_dirs):
    before = _plan_descriptions(spark)
    verify(list(cluster_dirs), spark=spark)
    descriptions = [text for execution, text in _plan_descriptions(spark).items() if execution not in before]
    assert descriptions and all(text.startswith("Truncated plan of ") for text in descriptions), descriptions


def test_the_batch_table_and_violations_are_written_as_parquet(report, spark):
    found, output = report
    batches = spark.read.parquet(str(output / "batches.parquet"))
    assert batches.filter("status = 'crc'").count() == 1
    assert batches.filter("status = 'torn'").count() == 1
    violations = spark.read.parquet(str(output / "violations.parquet"))
    assert violations.count() == len(found.violations)


def test_corrupted_bytes_always_give_a_violation_or_a_torn_tail(spark, tmp_path):
    """Twenty replicas, each one copy of a healthy partition with random damage (bytes flipped, overwritten,
    cut, or inserted anywhere in the segment): verified together, each shows a violation or a torn tail, and
    the undamaged original none."""
    rng = random.Random(20261123)
    reference = log_dir(tmp_path, 0)
    write_replica(reference, "t", 0, _batches([[b"a" * 30, b"b" * 5], [b"c"], [b"d" * 20, b"e", b"f"], [b"g"]],
                                              [0, 0, 1, 3]))
    damaged = []
    for broker in range(1, 21):
        directory = log_dir(tmp_path, broker)
        shutil.copytree(reference / "t-0", directory / "t-0")
        shutil.copy(reference / REPLICATION_OFFSET_CHECKPOINT, directory)
        shutil.copy(reference / "recovery-point-offset-checkpoint", directory)
        segment = directory / "t-0" / f"{0:020d}.log"
        data = bytearray(segment.read_bytes())
        at = rng.randrange(len(data))
        how = rng.choice(["flip", "overwrite", "cut", "insert"])
        if how == "flip":
            data[at] ^= 1 << rng.randrange(8)
        elif how == "overwrite":
            data[at:at + 4] = bytes(rng.randrange(256) for _ in range(4))
        elif how == "cut":
            del data[at:]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        if bytes(data) != segment.read_bytes():
            segment.write_bytes(bytes(data))
            damaged.append((broker, how, at))
    found = verify([reference, *(tmp_path / f"broker-{b}" for b, _, _ in damaged)], spark=spark)
    noticed = {v.broker for v in found.violations} | {t.broker for t in found.torn_tails}
    assert 0 not in noticed
    assert [d for d in damaged if d[0] not in noticed] == []
    # The damaged replicas also disagree with the original below the HW unless their damage is a torn tail.


def test_verify_exits_0_when_consistent_and_1_on_a_violation(spark, cluster_dirs, tmp_path):
    clean = log_dir(tmp_path, 7)
    write_replica(clean, "t", 0, _batches())
    runner = CliRunner()
    result = runner.invoke(main, ["verify", str(clean), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["consistent"] is True
    result = runner.invoke(main, ["verify", str(clean), str(cluster_dirs[1])])
    assert result.exit_code == 1, result.output
    assert "INCONSISTENT" in result.stdout


@pytest.mark.parametrize("problem", ["missing", "not-a-log-dir", "bad-history", "no-cluster"])
def test_unreadable_input_exits_2_with_a_one_line_error(tmp_path, cluster_dirs, problem):
    one, _ = cluster_dirs
    history = tmp_path / "history.jsonl"
    history.write_text('{"topic": "t"}\n{"topic": "t", "partition": 0}\n')
    (tmp_path / "plain").mkdir()
    arguments = {
        "missing": [str(tmp_path / "nowhere")],
        "not-a-log-dir": [str(tmp_path / "plain")],
        "bad-history": [str(one), "--history", str(history)],
        "no-cluster": ["--dir", str(tmp_path / "plain")],
    }[problem]
    result = CliRunner().invoke(main, ["verify", *arguments])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
