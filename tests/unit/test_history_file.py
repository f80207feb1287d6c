"""The producer history file: one JSON line per outcome, flushed as written, read back byte for byte; a torn last
line is a warning, any other bad line an error; outcomes of settled record futures (ok, failed, unknown)."""

from __future__ import annotations

import json

import pytest

from client.accumulator import FutureRecordMetadata, ProducerBatch
from client.outcomes import outcome_of
from client.producer import ProducerError
from protocol.errors import ErrorCode
from protocol.history import FAILED, OK, UNKNOWN, HistoryError, HistoryWriter, Outcome, read_history
from protocol.topic_partition import TopicPartition

OUTCOMES = [
    Outcome("events", 0, 0, b"k", b"v", OK),
    Outcome("events", 1, None, None, b"\xff\xfe binary", FAILED, "NOT_ENOUGH_REPLICAS: events-1: ISR [1]"),
    Outcome("events", None, None, b"", None, UNKNOWN, "REQUEST_TIMED_OUT: no answer"),
]


def test_each_line_is_on_disk_as_soon_as_it_is_written_and_reads_back_byte_for_byte(tmp_path):
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        for number, outcome in enumerate(OUTCOMES, start=1):
            writer.write(outcome)
            assert len(path.read_text().splitlines()) == number  # flushed, not buffered
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"topic": "events", "partition": 0, "offset": 0, "key": "k", "value": "v", "status": "ok",
                        "error": None}
    history = read_history(path)
    assert history.outcomes == tuple(OUTCOMES) and history.warnings == ()


def test_a_writer_appends_to_an_existing_history(tmp_path):
    path = tmp_path / "history.jsonl"
    for outcome in OUTCOMES:
        with HistoryWriter(path) as writer:
            writer.write(outcome)
    assert read_history(path).outcomes == tuple(OUTCOMES)


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        writer.write(OUTCOMES[0])
    with open(path, "a") as f:
        f.write('{"topic": "events", "partition": 0, "off')
    history = read_history(path)
    assert history.outcomes == (OUTCOMES[0],)
    assert len(history.warnings) == 1 and "line 2 is torn" in history.warnings[0]


@pytest.mark.parametrize(("text", "problem"), [
    ('not json\n{"a": 1}\n', "line 1"),
    ('{"topic": "t"}\n', "missing partition"),
    ('{"topic": "t", "partition": 0, "offset": null, "key": null, "value": "v", "status": "ok", "error": null}\n',
     "needs its partition and offset"),
    ('{"topic": "t", "partition": 0, "offset": 3, "key": null, "value": "v", "status": "maybe", "error": null}\n',
     "status 'maybe'"),
    ('{"topic": "t", "partition": -1, "offset": 3, "key": null, "value": "v", "status": "ok", "error": null}\n',
     "not a non-negative integer"),
    ('[1, 2]\n', "not a JSON object"),
])
def test_a_bad_line_is_an_error_naming_the_file_and_line(tmp_path, text, problem):
    path = tmp_path / "history.jsonl"
    path.write_text(text)
    with pytest.raises(HistoryError, match=problem) as raised:
        read_history(path)
    assert str(path) in str(raised.value)


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(HistoryError, match="cannot read"):
        read_history(tmp_path / "nowhere.jsonl")


async def test_outcomes_of_settled_records_tell_failed_from_maybe_written():
    tp = TopicPartition("events", 2)

    def settled(error: ProducerError | None) -> FutureRecordMetadata:
        """The future of the second record of a batch, settled with `error` (or at base offset 41)."""
        batch = ProducerBatch(tp, 0.0)
        batch.append(b"k0", b"v0", (), 1_700_000_000_000, 20)
        future = batch.append(b"k", b"v", (), 1_700_000_000_000, 20)
        if error is None:
            batch.complete(41)
        else:
            batch.fail(error)
        return future

    assert outcome_of("events", b"k", b"v", settled(None)) == Outcome("events", 2, 42, b"k", b"v", OK)
    refused = outcome_of("events", b"k", b"v", settled(ProducerError(ErrorCode.NOT_ENOUGH_REPLICAS, "events-2")))
    assert (refused.status, refused.offset, refused.error) == (FAILED, None, "NOT_ENOUGH_REPLICAS: events-2")
    timed_out = outcome_of("events", b"k", b"v", settled(
        ProducerError(ErrorCode.REQUEST_TIMED_OUT, "no answer", maybe_written=True)))
    assert (timed_out.status, timed_out.partition) == (UNKNOWN, 2)
