"""A producer history whose acknowledged records, on three replicas, hold more bytes than the verifier's driver has
heap (512 MB): each record is compared by the digest of its key and value, so the verification runs in that heap and
finds every record. Compared by their bytes, such a history ran the driver out of memory, and the verification never
ended."""

from __future__ import annotations

import json
from pathlib import Path

from protocol.history import OK, HistoryWriter, Outcome
from tests.integration.clusterutil import cli
from tests.verifierutil import log_dir, write_replica

RECORDS = 1_700
VALUE_BYTES = 100_000  # 1,700 records of 100 KB on each of 3 replicas: 510 MB
RECORDS_PER_BATCH = 10


def _value(number: int) -> bytes:
    return (b"%09d" % number) * (VALUE_BYTES // 9)


def test_a_history_larger_than_the_drivers_heap_is_checked_record_by_record(tmp_path: Path):
    values = [_value(n) for n in range(RECORDS)]
    batches = [(0, values[at:at + RECORDS_PER_BATCH]) for at in range(0, RECORDS, RECORDS_PER_BATCH)]
    directories = [log_dir(tmp_path, broker) for broker in (1, 2, 3)]
    for directory in directories:
        write_replica(directory, "large", 0, batches, segment_bytes=256 * 1024 * 1024)
    history = tmp_path / "history.jsonl"
    with HistoryWriter(history) as writer:
        for offset, value in enumerate(values):
            writer.write(Outcome("large", 0, offset, None, value, OK))
        writer.write(Outcome("large", 0, RECORDS - 1, None, b"not what was written", OK))

    run = cli("verify", *map(str, directories), "--history", str(history), "--json", check=False)

    assert run.returncode == 1, run.stderr  # the last line of the history: acknowledged, but nowhere
    found = json.loads(run.stdout)
    assert (found["records"], found["acked"], found["lost"]) == (3 * RECORDS, RECORDS + 1, 1)
    [lost] = found["violations"]
    assert (lost["kind"], lost["offset"]) == ("lost", RECORDS - 1)
    assert "value 'not what was written'" in lost["detail"]

