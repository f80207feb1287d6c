"""Which compacted logs are being cleaned, and each log dir's cleaner-offset-checkpoint (Kafka's LogCleanerManager).

A log is in one of Kafka's LogCleaningStates while a cleaner thread has it: in progress, or aborted (its log was
deleted: the thread stops at its next check and nothing it wrote is kept). The checkpoint of a log dir holds, for
each compacted partition cleaned there, its first dirty offset, in Kafka's format (version 0, a count, then
``topic partition offset`` lines). A partition's entry is written before its first cleaning replaces a segment, so
that a log dir names every partition whose segments the cleaner has rewritten (the verifier reads it so).

The choice of the log to clean runs on the thread that owns the logs (it reads their segment lists); the rest may run
on any thread, under one lock; checkpoint files are written outside it, one writer at a time.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from broker.log.checkpoint import CLEANER_OFFSET_CHECKPOINT, CheckpointError, OffsetCheckpointFile
from broker.log.cleaner import rules
from broker.log.cleaner.cleaner import CleaningJob
from broker.log.log import Log
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)


class CleaningState(enum.Enum):
    """Kafka's LogCleaningState of a log a cleaner thread has (minikafka never pauses cleaning: what Kafka pauses
    it for, a truncation or deletion, makes the replacement of segments refuse instead)."""

    IN_PROGRESS = "in progress"
    ABORTED = "aborted"


def log_state(partition_log: Log) -> rules.LogState:
    """What the rules read of a log (on the thread that owns it)."""
    segments = tuple(rules.SegmentInfo(s.base_offset, s.size, s.max_timestamp, s.first_batch_timestamp,
                                       len(s.offset_index), len(s.time_index)) for s in partition_log.segments)
    config = partition_log.config
    return rules.LogState(segments, partition_log.log_start_offset, partition_log.log_end_offset,
                          partition_log.high_watermark, config.min_cleanable_dirty_ratio, config.min_compaction_lag_ms,
                          config.max_compaction_lag_ms)


class LogCleanerManager:
    """The cleaning state of each log and the cleaner-offset-checkpoint of each log dir."""

    def __init__(self, log_dirs: Sequence[Path], logs: Mapping[TopicPartition, Log]) -> None:
        self._files = {Path(d): OffsetCheckpointFile(Path(d) / CLEANER_OFFSET_CHECKPOINT) for d in log_dirs}
        self._logs = logs
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self._files}
        #: The log's truncation count when its checkpoint entry was last set: a truncation since makes it stale.
        self._truncations: dict[TopicPartition, int] = {}
        self._states: dict[TopicPartition, CleaningState] = {}
        self._uncleanable: set[TopicPartition] = set()
        self._unwritten: set[Path] = set()

    def load(self) -> None:
        """Read each log dir's checkpoint (an unreadable one is logged and read as empty)."""
        for log_dir, file in self._files.items():
            try:
                self._checkpoints[log_dir] = file.read()
            except (CheckpointError, OSError) as e:
                log.error("ignoring %s: %s", file.path, e)

    # -- the owner's side ---------------------------------------------------------------------------------------

    def grab_dirtiest(self, now_ms: int) -> CleaningJob | None:
        """Kafka's grabFilthiestCompactedLog, on the thread that owns the logs: the dirtiest cleanable compacted
        log (rules.dirtiest), marked in progress; None if no log needs cleaning. A wrong checkpoint entry (outside
        the log, or older than a truncation) is set to the log start offset; a log about to be cleaned for the first
        time gets an entry (to write with :meth:`write_checkpoints` before the cleaning)."""
        found: dict[TopicPartition, tuple[rules.Candidate, float]] = {}
        with self._lock:
            for tp, partition_log in list(self._logs.items()):
                if not partition_log.config.compact or tp in self._states or tp in self._uncleanable:
                    continue
                state = log_state(partition_log)
                dirty = rules.cleanable_range(state, self._checkpoint_of(tp, partition_log), now_ms)
                if dirty.reset_checkpoint:
                    log.warning("%s: the cleaner checkpoint is outside the log [%d, %d]: the next cleaning starts at"
                                " %d", tp, state.log_start_offset, state.log_end_offset, dirty.first_dirty)
                    self._set_checkpoint(tp, partition_log, dirty.first_dirty)
                found[tp] = (rules.candidate(state, dirty, now_ms), partition_log.config.min_cleanable_dirty_ratio)
            chosen = rules.dirtiest(found)
            if chosen is None:
                return None
            partition_log, candidate = self._logs[chosen], found[chosen][0]
            self._states[chosen] = CleaningState.IN_PROGRESS
            if chosen not in self._checkpoints[partition_log.dir.parent]:
                self._set_checkpoint(chosen, partition_log, candidate.first_dirty)
        return CleaningJob(chosen, partition_log, tuple(partition_log.segments), candidate.first_dirty,
                           candidate.first_uncleanable, partition_log.truncations, partition_log.config)

    def _checkpoint_of(self, tp: TopicPartition, partition_log: Log) -> int | None:
        """The log's checkpoint entry; the log start offset if the log was truncated since the entry was set (the
        entry may be past where it was cut); hold the lock."""
        entry = self._checkpoints[partition_log.dir.parent].get(tp)
        seen = self._truncations.setdefault(tp, partition_log.truncations)
        if entry is not None and seen != partition_log.truncations:
            log.info("%s: truncated since its last cleaning: the next cleaning starts at its log start offset", tp)
            self._set_checkpoint(tp, partition_log, partition_log.log_start_offset)
            return partition_log.log_start_offset
        return entry

    def _set_checkpoint(self, tp: TopicPartition, partition_log: Log, offset: int) -> None:
        """Hold the lock."""
        self._checkpoints[partition_log.dir.parent][tp] = offset
        self._truncations[tp] = partition_log.truncations
        self._unwritten.add(partition_log.dir.parent)

    def in_progress(self, tp: TopicPartition) -> bool:
        """Whether a cleaner thread has the log (retention leaves it alone meanwhile)."""
        return tp in self._states

    def forget(self, tp: TopicPartition) -> None:
        """The log is deleted: abort its cleaning and drop its checkpoint entry (written later)."""
        with self._lock:
            if tp in self._states:
                self._states[tp] = CleaningState.ABORTED
            self._uncleanable.discard(tp)
            self._truncations.pop(tp, None)
            for log_dir, entries in self._checkpoints.items():
                if entries.pop(tp, None) is not None:
                    self._unwritten.add(log_dir)

    # -- the cleaner threads' side ------------------------------------------------------------------------------

    def is_aborted(self, tp: TopicPartition) -> bool:
        return self._states.get(tp) is CleaningState.ABORTED

    def done_cleaning(self, job: CleaningJob, end_offset: int | None) -> None:
        """Kafka's doneCleaning: the log's cleaning ended; if it was neither aborted nor failed (``end_offset``
        None), its checkpoint entry becomes ``end_offset`` (to write with :meth:`write_checkpoints`)."""
        with self._lock:
            state = self._states.pop(job.tp, None)
            if state is CleaningState.IN_PROGRESS and end_offset is not None and job.tp in self._logs:
                self._checkpoints[job.log.dir.parent][job.tp] = end_offset
                self._truncations[job.tp] = job.truncations
                self._unwritten.add(job.log.dir.parent)

    def mark_uncleanable(self, tp: TopicPartition) -> None:
        """Kafka's markPartitionUncleanable: an unexpected error while cleaning the log; it is not tried again while
        this broker runs."""
        with self._lock:
            self._uncleanable.add(tp)

    def write_checkpoints(self) -> None:
        """Write the checkpoint files whose entries changed (blocking: fsync and rename), each with the entries of the
        logs that still exist."""
        with self._write_lock:
            with self._lock:
                changed = {d: dict(self._checkpoints[d]) for d in self._unwritten}
                self._unwritten.clear()
            for log_dir, entries in changed.items():
                kept = {tp: offset for tp, offset in entries.items() if tp in self._logs}
                try:
                    self._files[log_dir].write(kept)
                except OSError as e:
                    log.error("cannot write %s: %s", self._files[log_dir].path, e)
                    with self._lock:
                        self._unwritten.add(log_dir)

    def checkpoints(self) -> dict[TopicPartition, int]:
        """Every log dir's entries together (Kafka's allCleanerCheckpoints)."""
        with self._lock:
            return {tp: offset for entries in self._checkpoints.values() for tp, offset in entries.items()}
