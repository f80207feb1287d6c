"""An index flushed on a worker thread (as the broker flushes logs) while its owner appends entries: the append
waits for the write of the buffer instead of failing, and no entry is lost from the file."""

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
