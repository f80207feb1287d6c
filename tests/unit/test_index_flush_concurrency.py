"""An index flushed on a worker thread (as the broker flushes logs) while its owner appends entries: the append
waits for the write of the buffer instead of failing, and no entry is lost from the file. A flush that comes after
the owner renamed or deleted the index (the log cleaner replacing a segment) never recreates a file under the old
or the removed name."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from broker.log.index import OffsetIndex

MAX_BYTES = 1024 * 1024


def test_an_entry_appended_while_a_flush_writes_the_buffer_reaches_the_file(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, MAX_BYTES)
    index.append(0, 0)
    writing, appended = threading.Event(), threading.Event()
    real_pwrite = os.pwrite

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        with memoryview(data) as held:  # the buffer stays exported for the whole write, as in os.pwrite
            writing.set()
            appended.wait(0.5)  # the owner's append may run now
            return real_pwrite(fd, held, offset)

    monkeypatch.setattr("broker.log.index.os.pwrite", pwrite)
    flusher = threading.Thread(target=index.flush)
    flusher.start()
    try:
        assert writing.wait(5)
        index.append(1, 100)  # a buffer being written cannot grow: this must wait for the write, not fail
    finally:
        appended.set()
        flusher.join()
    monkeypatch.undo()
    index.close()
    assert OffsetIndex(index.path, 0, MAX_BYTES).entries() == [(0, 0), (1, 100)]


def test_a_flush_after_the_index_was_deleted_creates_no_file(tmp_path: Path):
    index = OffsetIndex(tmp_path / "00000000000000043008.index.deleted", 43008, MAX_BYTES)
    index.append(43008, 0)  # buffered: the file does not exist yet
    index.delete()
    index.flush()  # a flush thread that took the segment before it was deleted
    index.close()
    assert list(tmp_path.iterdir()) == []


def test_a_flush_after_a_rename_writes_under_the_new_name_only(tmp_path: Path):
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, MAX_BYTES)
    index.append(0, 0)
    index.rename(tmp_path / "00000000000000000000.index.swap")
    index.flush()
    index.append(1, 100)
    index.flush()
    index.rename(tmp_path / "00000000000000000000.index")
    assert [p.name for p in tmp_path.iterdir()] == ["00000000000000000000.index"]
    assert OffsetIndex(tmp_path / "00000000000000000000.index", 0, MAX_BYTES).entries() == [(0, 0), (1, 100)]
