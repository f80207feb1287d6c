"""Checkpoint files and meta.properties: exact text, atomic writes, errors naming file and line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    META_PROPERTIES,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    CheckpointFile,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    atomic_write_text,
    read_meta_properties,
    write_meta_properties,
)
from protocol.topic_partition import TopicPartition


def error_at(path: Path, line: int, problem: str) -> str:
    """A regex for a CheckpointError message about ``path`` at ``line`` that mentions ``problem``."""
    return f"^{re.escape(str(path))}: line {line}: .*{re.escape(problem)}"


# ---------------------------------------------------------------- atomic_write_text


def test_atomic_write_creates_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "f"
    atomic_write_text(path, "one\n")
    atomic_write_text(path, "two\n")
    assert path.read_text() == "two\n"
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_atomic_write_overwrites_a_stale_tmp(tmp_path: Path) -> None:
    path = tmp_path / "f"
    (tmp_path / "f.tmp").write_text("garbage left by a crash, longer than the new content\n")
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert not (tmp_path / "f.tmp").exists()


def test_atomic_write_failure_leaves_old_file_and_no_tmp(tmp_path: Path) -> None:
    path = tmp_path / "f"
    atomic_write_text(path, "old\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(path, "bad \udc80 surrogate\n")
    assert path.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["f"]


# ---------------------------------------------------------------- CheckpointFile


def test_generic_round_trip_and_text(tmp_path: Path) -> None:
    cp = CheckpointFile(tmp_path / "cp", version=3)
    cp.write_lines(["a b", "c"])
    assert (tmp_path / "cp").read_text() == "3\n2\na b\nc\n"
    assert cp.read_lines() == ["a b", "c"]


def test_generic_missing_empty_and_version_only_read_empty(tmp_path: Path) -> None:
    cp = CheckpointFile(tmp_path / "cp")
    assert cp.read_lines() == []
    cp.path.write_text("")
    assert cp.read_lines() == []
    cp.path.write_text("0\n")
    assert cp.read_lines() == []


def test_generic_write_of_nothing(tmp_path: Path) -> None:
    cp = CheckpointFile(tmp_path / "cp")
    cp.write_lines([])
    assert cp.path.read_text() == "0\n0\n"
    assert cp.read_lines() == []


def test_generic_reads_crlf_and_missing_final_newline(tmp_path: Path) -> None:
    cp = CheckpointFile(tmp_path / "cp")
    cp.path.write_bytes(b"0\r\n2\r\nx\r\ny")
    assert cp.read_lines() == ["x", "y"]


@pytest.mark.parametrize("line", ["", "  ", "a\nb", "a\r"])
def test_generic_refuses_unreadable_entries(tmp_path: Path, line: str) -> None:
    cp = CheckpointFile(tmp_path / "cp")
    with pytest.raises(ValueError, match="single line"):
        cp.write_lines(["ok", line])
    assert not cp.path.exists()


def test_stale_tmp_does_not_affect_reading_or_writing(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    cp.write({TopicPartition("t", 0): 5})
    stale = tmp_path / f"{REPLICATION_OFFSET_CHECKPOINT}.tmp"
    stale.write_text("not a checkpoint at all")
    assert cp.read() == {TopicPartition("t", 0): 5}
    cp.write({TopicPartition("t", 0): 6})
    assert cp.read() == {TopicPartition("t", 0): 6}
    assert not stale.exists()


# ---------------------------------------------------------------- malformed files

MALFORMED_OFFSET_FILES = [
    pytest.param("3\n1\nt 0 1\n", 1, "unrecognised version 3 (expected 0)", id="bad-version"),
    pytest.param("zero\n1\nt 0 1\n", 1, "malformed", id="non-numeric-version"),
    pytest.param("0\ntwo\nt 0 1\n", 2, "malformed", id="non-numeric-count"),
    pytest.param("0\n-1\n", 2, "negative", id="negative-count"),
    pytest.param("0\n2\nt 0 1\n", 2, "expected 2 entries, found 1", id="too-few-entries"),
    pytest.param("0\n1\nt 0 1\nt 1 2\n", 2, "expected 1 entries, found 2", id="too-many-entries"),
    pytest.param("0\n2\nt 0 1\nt 1\n", 4, "expected 3 fields, found 2", id="two-fields"),
    pytest.param("0\n1\nt 0 1 9\n", 3, "expected 3 fields, found 4", id="four-fields"),
    pytest.param("0\n1\nt 0 x1\n", 3, "not an integer", id="non-integer-offset"),
    pytest.param("0\n1\nt 0 1.5\n", 3, "not an integer", id="fractional-offset"),
    pytest.param("0\n1\nt p 1\n", 3, "not an integer", id="non-integer-partition"),
    pytest.param("0\n2\nt 0 1\n\nt 1 2\n", 4, "empty line", id="empty-line-in-the-middle"),
    pytest.param("0\n1\nt 0 1\n\n", 4, "empty line", id="trailing-blank-line"),
    pytest.param(b"0\n1\nt\xff 0 1\n", 3, "UTF-8", id="not-utf8"),
]


@pytest.mark.parametrize(("content", "line", "problem"), MALFORMED_OFFSET_FILES)
def test_malformed_offset_checkpoint(tmp_path: Path, content: str | bytes, line: int, problem: str) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(CheckpointError) as info:
        OffsetCheckpointFile(path).read()
    assert re.match(error_at(path, line, problem), str(info.value))
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        pytest.param("1\n1\n0 0\n", 1, "unrecognised version 1 (expected 0)", id="bad-version"),
        pytest.param("0\n1\n0\n", 3, "expected 2 fields, found 1", id="one-field"),
        pytest.param("0\n1\n0 0 0\n", 3, "expected 2 fields, found 3", id="three-fields"),
        pytest.param("0\n2\n0 0\n1 x\n", 4, "not an integer", id="non-integer-offset"),
        pytest.param("0\n1\n-1 0\n", 3, "non-negative", id="negative-epoch"),
        pytest.param("0\n3\n0 0\n1 1\n", 2, "expected 3 entries, found 2", id="count-mismatch"),
    ],
)
def test_malformed_leader_epoch_checkpoint(tmp_path: Path, content: str, line: int, problem: str) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(content)
    with pytest.raises(CheckpointError, match=error_at(path, line, problem)):
        LeaderEpochCheckpointFile(path).read()


# ---------------------------------------------------------------- OffsetCheckpointFile


def test_topic_partition() -> None:
    tp = TopicPartition("my-topic.v2", 3)
    assert str(tp) == "my-topic.v2-3"
    assert tp == ("my-topic.v2", 3)
    assert (tp.topic, tp.partition) == ("my-topic.v2", 3)


def test_offset_checkpoint_text_matches_kafka(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    cp.write({TopicPartition("tp1", 1): 2, TopicPartition("tp1", 0): 1})
    assert cp.path.read_text() == "0\n2\ntp1 0 1\ntp1 1 2\n"


def test_offset_checkpoint_sorted_numerically_by_partition(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    cp.write({TopicPartition("b", 10): 0, TopicPartition("b", 2): 0, TopicPartition("a", 7): 0})
    assert cp.path.read_text() == "0\n3\na 7 0\nb 2 0\nb 10 0\n"


def test_offset_checkpoint_reads_kafka_written_file(tmp_path: Path) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_text("0\n3\n__consumer_offsets 12 0\nlogs-2024.01 0 9007199254740993\nx\t1   7\n")
    assert OffsetCheckpointFile(path).read() == {
        TopicPartition("__consumer_offsets", 12): 0,
        TopicPartition("logs-2024.01", 0): 9007199254740993,
        TopicPartition("x", 1): 7,
    }


def test_offset_checkpoint_empty_and_missing(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    assert cp.read() == {}
    cp.write({})
    assert cp.path.read_text() == "0\n0\n"
    assert cp.read() == {}


@pytest.mark.parametrize("topic", ["", "has space", "tab\there"])
def test_offset_checkpoint_refuses_unwritable_topics(tmp_path: Path, topic: str) -> None:
    cp = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    with pytest.raises(ValueError, match="topic name"):
        cp.write({TopicPartition(topic, 0): 1})


topics = st.text(alphabet="abcXYZ019-._", min_size=1, max_size=12)
offset_maps = st.dictionaries(
    st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1)), st.integers(0, 2**63 - 1), max_size=20
)


@given(offsets=offset_maps)
def test_offset_checkpoint_round_trip(tmp_path_factory: pytest.TempPathFactory, offsets: dict) -> None:
    cp = OffsetCheckpointFile(tmp_path_factory.mktemp("cp") / REPLICATION_OFFSET_CHECKPOINT)
    cp.write(offsets)
    assert cp.read() == offsets


# ---------------------------------------------------------------- LeaderEpochCheckpointFile


def test_leader_epoch_checkpoint_text_matches_kafka(tmp_path: Path) -> None:
    cp = LeaderEpochCheckpointFile(tmp_path / LEADER_EPOCH_CHECKPOINT)
    assert not cp.exists()
    assert cp.read() == []
    entries = [EpochEntry(0, 0), EpochEntry(1, 1), EpochEntry(2, 2)]
    cp.write(entries)
    assert cp.exists()
    assert cp.path.read_text() == "0\n3\n0 0\n1 1\n2 2\n"
    assert cp.read() == entries


def test_leader_epoch_checkpoint_empty(tmp_path: Path) -> None:
    cp = LeaderEpochCheckpointFile(tmp_path / LEADER_EPOCH_CHECKPOINT)
    cp.write([])
    assert cp.exists()
    assert cp.path.read_text() == "0\n0\n"
    assert cp.read() == []


def test_epoch_entry_orders_by_epoch_then_offset() -> None:
    assert sorted([EpochEntry(2, 1), EpochEntry(1, 9), EpochEntry(1, 3)]) == [
        EpochEntry(1, 3),
        EpochEntry(1, 9),
        EpochEntry(2, 1),
    ]


# ---------------------------------------------------------------- meta.properties


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    write_meta_properties(tmp_path, 7)
    assert read_meta_properties(tmp_path) == {"version": "0", "broker.id": "7"}
    assert (tmp_path / META_PROPERTIES).read_text().startswith("#")
    write_meta_properties(tmp_path, 8)
    assert read_meta_properties(tmp_path) == {"version": "0", "broker.id": "8"}
    assert sorted(os.listdir(tmp_path)) == [META_PROPERTIES]
    write_meta_properties(tmp_path, 8, "Wz3hJwq9T0y1e6bRfZbBLQ")
    assert read_meta_properties(tmp_path) == {"version": "0", "broker.id": "8", "cluster.id": "Wz3hJwq9T0y1e6bRfZbBLQ"}


def test_meta_properties_reads_kafka_written_file(tmp_path: Path) -> None:
    (tmp_path / META_PROPERTIES).write_text(
        "#\n#Tue Mar 05 10:00:00 UTC 2024\n\nbroker.id=1\n  version = 0\n! another comment\n"
        "cluster.id=Ab3_x-9==\n"
    )
    assert read_meta_properties(tmp_path) == {"broker.id": "1", "version": "0", "cluster.id": "Ab3_x-9=="}


@pytest.mark.parametrize(("bad", "line"), [("broker.id 1", 3), ("=1", 3)])
def test_meta_properties_malformed(tmp_path: Path, bad: str, line: int) -> None:
    path = tmp_path / META_PROPERTIES
    path.write_text(f"# comment\nversion=0\n{bad}\n")
    with pytest.raises(CheckpointError, match=error_at(path, line, "malformed property line")):
        read_meta_properties(tmp_path)
