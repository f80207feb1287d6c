"""Merging state-change.log files: time order across files, filters, readable lines, bad lines skipped."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from client.cli import main
from client.state_change_merge import Entry, MergeError, format_entry, merge, parse_time, read_log


def write_log(path: Path, *entries: dict, garbage: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + garbage)
    return path


def change(time_ms: int, broker: int, topic: str = "t", partition: int = 0, **fields: object) -> dict:
    return {"time_ms": time_ms, "source": "broker", "broker": broker, "topic": topic, "partition": partition,
            "controller_epoch": 1, "leader_epoch": 0, "leader": 1, "isr": [1, 2], "reason": f"at {time_ms}",
            **fields}


def test_entries_of_every_file_come_out_in_time_order(tmp_path: Path):
    one = write_log(tmp_path / "1.log", change(10, 1), change(30, 1), change(50, 1))
    two = write_log(tmp_path / "2.log", change(20, 2), change(30, 2), change(40, 2))
    logs = [(str(p), read_log(p)[0]) for p in (one, two)]
    merged = list(merge(logs))
    assert [(e.time_ms, e.fields["broker"]) for e in merged] == [(10, 1), (20, 2), (30, 1), (30, 2), (40, 2), (50, 1)]
    assert {e.log for e in merged} == {str(one), str(two)}


def test_a_file_out_of_order_is_still_merged_in_time_order(tmp_path: Path):
    # A clock that stepped back on one broker must not scramble the others.
    one = write_log(tmp_path / "1.log", change(40, 1), change(10, 1))
    two = write_log(tmp_path / "2.log", change(20, 2))
    assert [e.time_ms for e in merge([(str(p), read_log(p)[0]) for p in (one, two)])] == [10, 20, 40]


def test_filters_by_topic_partitions_and_time(tmp_path: Path):
    log = write_log(tmp_path / "1.log", change(10, 1, "t", 0), change(20, 1, "t", 1), change(30, 1, "u", 0),
                    change(40, 1, "t", 2), change(50, 1, "t", 0))
    logs = [(str(log), read_log(log)[0])]
    assert [e.time_ms for e in merge(logs, topic="t")] == [10, 20, 40, 50]
    assert [e.time_ms for e in merge(logs, topic="t", partitions={0, 2})] == [10, 40, 50]
    assert [e.time_ms for e in merge(logs, partitions={0})] == [10, 30, 50]
    assert [e.time_ms for e in merge(logs, start_ms=20, end_ms=40)] == [20, 30, 40]


def test_lines_that_are_not_state_changes_are_counted_and_skipped(tmp_path: Path):
    log = write_log(tmp_path / "1.log", change(10, 1), garbage='not json\n{"time_ms": "soon"}\n[1, 2]\n')
    entries, skipped = read_log(log)
    assert [e.time_ms for e in entries] == [10] and skipped == 3
    with pytest.raises(MergeError, match="cannot read"):
        read_log(tmp_path / "missing.log")


def test_times_are_iso_8601():
    assert parse_time("1970-01-01T00:00:01.500+00:00") == 1500
    assert parse_time("2024-05-01T10:00:00") == int(datetime(2024, 5, 1, 10).timestamp() * 1000)
    with pytest.raises(MergeError, match="ISO 8601"):
        parse_time("yesterday")


def test_readable_lines_for_partition_and_replica_changes():
    state = Entry(1_500, "x", change(1_500, 2, reason="became follower", source="broker"))
    assert format_entry(state) == ("1970-01-01T00:00:01.500Z broker 2       t-0: leader 1 leader_epoch 0 isr [1, 2] "
                                   "controller_epoch 1: became follower")
    replica = Entry(0, "x", {"time_ms": 0, "source": "controller", "broker": 1, "topic": "t", "partition": 3,
                             "replica": 2, "replica_state": "ReplicaDeletionStarted", "reason": "topic deletion"})
    assert format_entry(replica) == ("1970-01-01T00:00:00.000Z controller 1   t-3: replica 2 ReplicaDeletionStarted: "
                                     "topic deletion")


def test_the_cli_merges_files_given_in_every_form(tmp_path: Path):
    one = write_log(tmp_path / "1.log", change(10, 1), change(30, 1, partition=1))
    two = write_log(tmp_path / "2.log", change(20, 2))
    three = write_log(tmp_path / "3.log", change(5, 3), garbage="junk\n")
    result = CliRunner().invoke(main, ["state-change-log", "merge", "--logs", f"{one},{two}", str(three),
                                       "--topic", "t", "--partitions", "0", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["time_ms"], e["log"]) for e in lines] == [(5, str(three)), (10, str(one)), (20, str(two))]
    assert "1 lines that are not state changes skipped" in result.stderr
    refused = CliRunner().invoke(main, ["state-change-log", "merge"])
    assert refused.exit_code == 2 and "give the logs to merge" in refused.output
    bad_time = CliRunner().invoke(main, ["state-change-log", "merge", str(one), "--start-time", "later"])
    assert bad_time.exit_code == 1 and "ISO 8601" in bad_time.output
