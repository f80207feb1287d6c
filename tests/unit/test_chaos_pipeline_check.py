"""The pipeline workload's check: the output's count of each record's key against the record's outcome in the
history. An acknowledged record counted exactly once passes, not counted is missing, counted twice is a duplicate;
a record of unknown outcome may be counted once or not at all; a failed one, and a key no producer sent, not at all.
The committed files are those the file sink's log lists, compactions included."""

from __future__ import annotations

import json
from pathlib import Path

from client.chaos.pipeline import committed_files
from client.chaos.pipeline_check import check_counts
from protocol.history import FAILED, OK, UNKNOWN, Outcome


def outcome(key: str, status: str, offset: int | None = None) -> Outcome:
    return Outcome("chaos", 0, offset, key.encode(), f"value of {key}".encode(), status)


HISTORY = [outcome("a", OK, 0), outcome("b", OK, 1), outcome("u", UNKNOWN), outcome("f", FAILED)]


def test_every_acknowledged_record_counted_once_passes_with_unknown_counted_or_not():
    for unknown in (0, 1):
        check = check_counts(HISTORY, {"a": 1, "b": 1, "u": unknown})
        assert (check.counted, check.missing, check.duplicates) == (2 + unknown, 0, 0)


def test_an_acknowledged_record_not_counted_is_missing():
    check = check_counts(HISTORY, {"a": 1})
    assert (check.missing, check.duplicates) == (1, 0)
    assert check.missing_examples == ["chaos-0 'b' (ok at offset 1): not counted"]


def test_a_record_counted_more_often_than_it_can_have_been_written_is_a_duplicate():
    check = check_counts(HISTORY, {"a": 2, "b": 1, "u": 2, "f": 1, "stranger": 1})
    assert (check.missing, check.duplicates) == (0, 4)
    assert check.duplicate_examples == ["chaos-0 'a' (ok at offset 0): counted 2 times",
                                        "chaos-0 'u' (unknown): counted 2 times",
                                        "chaos-0 'f' (failed): counted 1 times",
                                        "'stranger' (sent by no producer): counted 1 times"]


def test_only_files_the_sink_log_committed_count(tmp_path: Path):
    log = tmp_path / "_spark_metadata"
    log.mkdir()

    def entries(*names: str) -> str:
        return "\n".join(["v1", *(json.dumps({"path": f"file:{tmp_path}/{n}", "action": "add"}) for n in names)])

    (log / "9.compact").write_text(entries("part-0.parquet", "part%201.parquet"))
    (log / "10").write_text(entries("part-2.parquet"))
    (log / ".10.crc").write_text("not a batch")
    (tmp_path / "part-3.parquet").write_text("a file of a batch that never committed")
    assert committed_files(tmp_path) == [tmp_path / n for n in ("part 1.parquet", "part-0.parquet", "part-2.parquet")]
    assert committed_files(tmp_path / "nothing-yet") == []
