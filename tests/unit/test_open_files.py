"""Segment files are opened on demand and at most a bounded number stay open; a pinned one is never closed
under the thread using it."""

from __future__ import annotations

import os

import pytest

from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.open_files import OpenFiles
from protocol.records import decode_batch
from tests.unit.logutil import TP, ManualClock, batch


def _owners(tmp_path, count: int) -> list[tuple[object, str]]:
    owners = []
    for i in range(count):
        path = tmp_path / f"{i}.log"
        path.write_bytes(f"file {i}".encode())
        owners.append((object(), str(path)))
    return owners


def test_at_most_capacity_files_stay_open_and_evicted_ones_reopen(tmp_path):
    files = OpenFiles(capacity=2)
    owners = _owners(tmp_path, 5)
    for owner, path in owners:
        files.descriptor(owner, path)
        assert len(files) <= 2
    for i, (owner, path) in enumerate(owners):
        assert os.pread(files.descriptor(owner, path), 100, 0) == f"file {i}".encode()
    assert len(files) == 2


def test_the_least_recently_used_file_is_closed_first(tmp_path):
    files = OpenFiles(capacity=2)
    (a, pa), (b, pb), (c, pc) = _owners(tmp_path, 3)
    fd_a = files.descriptor(a, pa)
    files.descriptor(b, pb)
    assert files.descriptor(a, pa) == fd_a  # a is now the most recently used
    files.descriptor(c, pc)  # evicts b
    assert os.fstat(fd_a)  # still open
    assert files.descriptor(a, pa) == fd_a


def test_a_pinned_file_is_not_closed_by_eviction_nor_by_close(tmp_path):
    files = OpenFiles(capacity=1)
    (a, pa), (b, pb) = _owners(tmp_path, 2)
    with files.pinned(a, pa) as fd:
        files.descriptor(b, pb)
        files.close(a)
        assert os.pread(fd, 100, 0) == b"file 0"
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_log_reads_every_segment_back_through_a_two_file_budget(tmp_path):
    files = OpenFiles(capacity=2)
    log = Log(tmp_path / "events-0", TP, LogConfig(segment_bytes=300), clock=ManualClock(), files=files)
    values = [f"value-{i:04d}".encode() * 5 for i in range(30)]
    for value in values:
        log.append_as_leader(batch(value), leader_epoch=0)
    assert len(log.segments) > 5
    read_back = []
    for offset in range(len(values)):
        data = log.read(offset, max_bytes=1 << 20)
        read_back.append(decode_batch(data, 0)[1][0].value)
        assert len(files) <= 2
    assert read_back == values
    log.close()
    assert len(files) == 0
