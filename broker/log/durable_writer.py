"""`DurableFileWriter`: many small files written durably by a child process.

A broker becoming leader of thousands of partitions writes thousands of leader-epoch checkpoints (and a new
topic's partition.metadata files), each durable (write, fsync, rename, fsync the directory) before it acts on
them. Written from threads of the broker's own interpreter, each of those system calls has to win the GIL back
from a busy event loop: 3,000 files took 18 s beside a busy loop here, against 0.9 s from a process with its own
interpreter. So large batches go to a child process (``python -m broker.log.durable_writer``, one for the
broker's life); small ones are written in this process.

The child reads batches on its stdin and answers each on its stdout (4-byte length, then a pickle): a batch is
``(files, threads)``, its answer the outcome of every file (None or the OSError). It ends at the end of its
stdin, which is also what it sees when the broker dies, however it dies.
"""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from broker.log.checkpoint import atomic_write_text

#: Batches of fewer files are written in this process: a round trip to the child costs more than they do.
CHILD_PROCESS_FROM_FILES = 64

_LENGTH = struct.Struct(">I")


#: Threads that write files durably together: fsyncs issued at once share the file system's journal commits.
DURABLE_WRITE_THREADS = 8


def write_files(files: Sequence[tuple[Path, str]], threads: int = DURABLE_WRITE_THREADS) -> list[OSError | None]:
    """Durably write each ``(path, text)`` (:func:`atomic_write_text`) from up to ``threads`` threads, and return
    once all are done: per file, None or the error that failed it. Many small checkpoint files are written this
    way several times faster than one after another, each still durable when this returns."""
    def attempt(file: tuple[Path, str]) -> OSError | None:
        try:
            atomic_write_text(*file)
        except OSError as e:
            return e
        return None

    if len(files) <= 1 or threads <= 1:
        return [attempt(file) for file in files]
    with ThreadPoolExecutor(min(threads, len(files)), thread_name_prefix="durable-write") as pool:
        return list(pool.map(attempt, files))


class DurableFileWriterError(RuntimeError):
    """The child process did not answer (it died)."""


class DurableFileWriter:
    """Writes batches of ``(path, text)`` durably, large ones from a child process, one batch at a time."""

    def __init__(self, threads: int = DURABLE_WRITE_THREADS) -> None:
        self._threads = threads
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the child process now rather than at the first large batch."""
        with self._lock:
            self._running()

    def write(self, files: Sequence[tuple[Path, str]]) -> list[OSError | None]:
        """Write every file as :func:`write_files` does (blocking: call it from a worker
        thread); per file, None or the error that failed it."""
        if len(files) < CHILD_PROCESS_FROM_FILES:
            return write_files(files, self._threads)
        with self._lock:
            child = self._running()
            try:
                _send(child.stdin, ([(str(path), text) for path, text in files], self._threads))  # type: ignore[arg-type]
                return _receive(child.stdout)  # type: ignore[arg-type]
            except (OSError, EOFError, pickle.UnpicklingError) as e:
                self._child = None
                child.kill()
                child.wait()
                raise DurableFileWriterError(f"the durable file writer (pid {child.pid}) failed: {e!r}") from e

    def close(self) -> None:
        """End the child process (after a batch under way)."""
        with self._lock:
            child, self._child = self._child, None
            if child is not None:
                child.stdin.close()  # type: ignore[union-attr]
                child.wait()
                child.stdout.close()  # type: ignore[union-attr]

    def _running(self) -> subprocess.Popen[bytes]:
        if self._child is None:
            self._child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE)
        return self._child


def _send(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        raise EOFError("end of stream")
    (length,) = _LENGTH.unpack(header)
    data = stream.read(length)
    if len(data) < length:
        raise EOFError("end of stream")
    return pickle.loads(data)


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """The child's loop: write each batch read from `requests`, answer on `answers`, until `requests` ends."""
    while True:
        try:
            files, threads = _receive(requests)
        except EOFError:
            return
        _send(answers, write_files([(Path(path), text) for path, text in files], threads))


#: The broker's writer (one child process per broker process).
DURABLE_WRITER = DurableFileWriter()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
