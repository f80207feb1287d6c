"""Batches of small files written durably, large ones by a child process."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

from broker.log import durable_writer
from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCheckpointFile
from broker.log.durable_writer import (
    CHILD_PROCESS_FROM_FILES,
    SYNCFS_FROM_FILES,
    DurableFileWriter,
    DurableFileWriterError,
    write_files,
)
from broker.log.log import flush_epoch_caches
from tests.polling import wait_for
from tests.processes import process_state
from tests.unit.logutil import open_log


@pytest.mark.parametrize("threads", [1, 4])
def test_files_written_together_are_all_done_on_return_and_failures_are_named(tmp_path: Path, threads: int) -> None:
    names = [f"p-{i}" for i in range(20)]
    for name in names[:-2]:
        (tmp_path / name).mkdir()
    outcomes = write_files([(tmp_path / name / LEADER_EPOCH_CHECKPOINT, f"{name}\n") for name in names], threads)
    assert outcomes[:-2] == [None] * 18
    assert all(isinstance(error, FileNotFoundError) for error in outcomes[-2:])  # their directories do not exist
    assert [(tmp_path / name / LEADER_EPOCH_CHECKPOINT).read_text() for name in names[:-2]] == [
        f"{name}\n" for name in names[:-2]]


def test_a_large_batch_is_made_durable_by_two_syncfs_calls_and_replaces_files_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(durable_writer, "_syncfs", lambda fd, real=durable_writer._syncfs: calls.append(fd) or real(fd))
    files = [tmp_path / f"p-{i}" / LEADER_EPOCH_CHECKPOINT for i in range(SYNCFS_FROM_FILES)]
    for path in files:
        path.parent.mkdir()
        path.write_text("old\n")
    assert write_files([(path, f"{path.parent.name}\n") for path in files]) == [None] * len(files)
    assert len(calls) == 2  # one file system: one flush of the new files, one of their renames
    assert [path.read_text() for path in files] == [f"{path.parent.name}\n" for path in files]
    assert not list(tmp_path.glob("*/*.tmp"))


def test_a_failed_syncfs_fails_every_file_of_its_batch_and_leaves_the_old_texts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "syncfs: Input/output error")

    monkeypatch.setattr(durable_writer, "_syncfs", failing)
    files = [tmp_path / f"f{i}" for i in range(SYNCFS_FROM_FILES)]
    for path in files:
        path.write_text("old\n")
    outcomes = write_files([(path, "new\n") for path in files])
    assert all(isinstance(error, OSError) and error.errno == errno.EIO for error in outcomes)
    assert all(path.read_text() == "old\n" for path in files)
    assert not list(tmp_path.glob("*.tmp"))


@pytest.fixture
def writer():
    writer = DurableFileWriter()
    yield writer
    writer.close()


@pytest.mark.parametrize("count", [3, CHILD_PROCESS_FROM_FILES + 36])
def test_a_batch_is_written_and_each_failure_named_with_its_error(tmp_path: Path, writer: DurableFileWriter,
                                                                   count: int) -> None:
    names = [f"p-{i}" for i in range(count)]
    for name in names[1:]:
        (tmp_path / name).mkdir()
    outcomes = writer.write([(tmp_path / name / "file", f"{name}\n") for name in names])
    assert isinstance(outcomes[0], FileNotFoundError) and outcomes[0].filename  # its directory does not exist
    assert outcomes[1:] == [None] * (count - 1)
    assert [(tmp_path / name / "file").read_text() for name in names[1:]] == [f"{name}\n" for name in names[1:]]


def test_the_epoch_checkpoints_of_many_logs_are_written_together_and_a_closed_log_writes_none(tmp_path: Path) -> None:
    logs = [open_log(tmp_path / f"p{i}") for i in range(CHILD_PROCESS_FROM_FILES * 2)]
    assert all(each.assign_epoch_start_offset(3, flush=False) for each in logs)
    logs[0].close()
    assert flush_epoch_caches(logs) == []
    assert not (logs[0].dir / LEADER_EPOCH_CHECKPOINT).exists()
    assert [LeaderEpochCheckpointFile(each.dir / LEADER_EPOCH_CHECKPOINT).read() for each in logs[1:]] == [
        [EpochEntry(3, 0)]] * (len(logs) - 1)
    assert not any(each.epoch_cache.unflushed for each in logs)
    for each in logs[1:]:
        each.close()


def test_a_child_that_died_is_reported_and_replaced(tmp_path: Path, writer: DurableFileWriter) -> None:
    files = [(tmp_path / f"f{i}", "x\n") for i in range(CHILD_PROCESS_FROM_FILES)]
    writer.start()
    writer._child.kill()
    with pytest.raises(DurableFileWriterError):
        writer.write(files)
    assert writer.write(files) == [None] * len(files)


def test_the_child_ends_when_the_broker_process_dies(tmp_path: Path) -> None:
    program = ("import os, sys; from broker.log.durable_writer import DurableFileWriter; w = DurableFileWriter(); "
               "w.start(); print(w._child.pid, flush=True); os._exit(9)")
    parent = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False,
                            cwd=Path(__file__).parents[2])
    child = int(parent.stdout)
    wait_for(lambda: process_state(child) in ("", "Z"), f"the writer's child {child} to end (gone or a zombie)",
             timeout_s=10)
