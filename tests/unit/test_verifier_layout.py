"""What the verifier reads of a log directory before any Spark work: replicas in name order, their segments with
sizes and offset indexes, their epoch files (a missing one reported), and what it does not know skipped with a
note."""

from __future__ import annotations

from pathlib import Path

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT
from tests.verifierutil import log_dir, write_replica
from verifier.layout import read_layout


def test_replicas_come_in_name_order_with_their_segments_indexes_and_epochs(tmp_path: Path):
    directory = log_dir(tmp_path, 4)
    for topic in ("b", "a"):
        write_replica(directory, topic, 0, [(0, [b"x" * 100]) for _ in range(4)] + [(2, [b"y"])], segment_bytes=300)
    layout = read_layout([directory])
    assert [(r.topic, r.partition, r.broker) for r in layout.replicas] == [("a", 0, 4), ("b", 0, 4)]
    replica = layout.replicas[0]
    logs = sorted((directory / "a-0").glob("*.log"))
    assert [s.path for s in replica.segments] == [str(p) for p in logs]
    assert [s.base_offset for s in replica.segments] == [int(p.stem) for p in logs]
    assert [s.size for s in replica.segments] == [p.stat().st_size for p in logs]
    for segment in replica.segments:
        assert segment.index_path is None or Path(segment.index_path) == Path(segment.path).with_suffix(".index")
    assert any(s.index_path is not None for s in replica.segments)
    assert replica.epochs == ((0, 0), (2, 4))
    assert layout.findings == []


def test_a_partition_with_segments_but_no_epoch_file_is_a_finding(tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    partition = write_replica(directory, "t", 0, [(0, [b"x"])])
    (partition / LEADER_EPOCH_CHECKPOINT).unlink()
    layout = read_layout([directory])
    assert layout.replicas[0].epochs is None
    [finding] = layout.findings
    assert (finding.kind, finding.topic, finding.partition, finding.broker) == ("epoch-cache", "t", 0, 1)
    assert finding.detail == f"{partition / LEADER_EPOCH_CHECKPOINT} is missing"


def test_a_follower_of_an_empty_partition_needs_no_epoch_file(tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    partition = write_replica(directory, "t", 0, [])
    (partition / LEADER_EPOCH_CHECKPOINT).unlink(missing_ok=True)
    assert all(s.size == 0 for s in read_layout([directory]).replicas[0].segments)
    assert read_layout([directory]).findings == []


def test_files_and_directories_it_does_not_know_are_noted_not_read(tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    partition = write_replica(directory, "t", 0, [(0, [b"x"])])
    (partition / f"{0:020d}.snapshot").write_bytes(b"")
    (directory / "t-1.abc-delete").mkdir()
    (directory / "__cluster_metadata-0").mkdir()
    layout = read_layout([directory])
    assert [(r.topic, r.partition) for r in layout.replicas] == [("t", 0)]
    assert "ignored .snapshot file in partition directories" in layout.notes
    assert "ignored __cluster_metadata partition (not a log of record batches to verify)" in layout.notes
    assert any(note.startswith("ignored directory that is not <topic>-<partition>") for note in layout.notes)
