"""The log manager: every partition log in a broker's log dirs, their recovery and checkpoints."""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from broker.log.checkpoint import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    atomic_write_text,
    read_meta_properties,
    write_meta_properties,
)
from broker.log.cleaner.cleaner import Owner, StepHook, no_step
from broker.log.cleaner.config import CleanerConfig
from broker.log.cleaner.log_cleaner import LogCleaner
from broker.log.cleaner.manager import LogCleanerManager
from broker.log.config import LogConfig
from broker.log.log import Clock, Log, log_dir_name, parse_log_dir_name, wall_clock_ms
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

#: A deleted log's directory is renamed to <topic>-<partition>.<unique id>-delete, then removed (as Kafka does):
#: a crash in between leaves a directory the next start-up removes, never a half-deleted log to load.
DELETE_DIR_SUFFIX = "-delete"


class LogDirError(Exception):
    """A log dir that this broker must not use (another broker's, or unreadable)."""


class InconsistentClusterIdError(LogDirError):
    """A log dir of another cluster (Kafka's InconsistentClusterIdException): its meta.properties names another
    cluster id than the one in ZooKeeper."""


class LogManager:
    """Opens every ``<topic>-<partition>`` directory under the log dirs at start-up, creates and
    deletes logs, applies retention and flush policy, runs the log cleaner over compacted logs, and
    writes the per-dir checkpoint files (recovery points, log start offsets, high watermarks, cleaner
    offsets) and the clean-shutdown marker.

    Blocking work (fsync, checkpoint writes) happens in the calling thread; an asyncio owner
    calls these methods through a worker thread.
    """

    def __init__(self, log_dirs: Sequence[Path], broker_id: int, default_config: LogConfig, *,
                 topic_config: Callable[[str], LogConfig] | None = None, clock: Clock = wall_clock_ms) -> None:
        if not log_dirs:
            raise LogDirError("log.dirs is empty")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.broker_id = broker_id
        self.default_config = default_config
        self._topic_config = topic_config or (lambda _topic: default_config)
        self._clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._logs_per_dir: dict[Path, int] = dict.fromkeys(self.log_dirs, 0)
        #: Per checkpoint file: the offsets it was last written with.
        self._written: dict[str, dict[Path, dict[TopicPartition, int]]] = {}
        #: Per log dir: whether the last shutdown was clean (no recovery was needed).
        self.clean_shutdown: dict[Path, bool] = {}
        self.cleaner_manager = LogCleanerManager(self.log_dirs, self._logs)
        self._cleaner: LogCleaner | None = None

    # -- start and stop ---------------------------------------------------------------------

    def startup(self, cluster_id: str | None = None) -> None:
        """Claim the log dirs for this broker (of the cluster `cluster_id`, when known) and load every log,
        recovering after a crash."""
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._claim(log_dir, cluster_id)
        for log_dir in self.log_dirs:
            self._load_dir(log_dir)
        self.cleaner_manager.load()

    def start_cleaner(self, config: CleanerConfig, owner: Owner, step: StepHook = no_step) -> None:
        """Start the log cleaner's threads (if log.cleaner.enable, with log.cleaner.threads > 0); ``owner`` runs what
        they hand to the thread that owns the logs."""
        if config.enable and config.threads > 0:
            self._cleaner = LogCleaner(config, self.cleaner_manager, owner, self._clock, step)
            self._cleaner.start()

    def stop_cleaner(self) -> None:
        """Stop the log cleaner's threads, if running (blocking, as `shutdown`)."""
        cleaner, self._cleaner = self._cleaner, None
        if cleaner is not None:
            cleaner.stop()

    def _claim(self, log_dir: Path, cluster_id: str | None) -> None:
        """meta.properties names this broker and its cluster: written if missing (or without the cluster id), a log
        dir of another broker or another cluster refused, as Kafka does before it loads any log."""
        meta = read_meta_properties(log_dir)
        if meta is not None:
            owner = meta.get("broker.id")
            if owner != str(self.broker_id):
                raise LogDirError(f"log dir {log_dir} belongs to broker.id {owner}, this broker is {self.broker_id}; "
                                  "use another log.dirs or set broker.id to match meta.properties")
            stored = meta.get("cluster.id")
            if stored is not None and cluster_id is not None and stored != cluster_id:
                raise InconsistentClusterIdError(
                    f"The Cluster ID {cluster_id} doesn't match stored clusterId {stored} in meta.properties "
                    f"({log_dir}). The broker is trying to join the wrong cluster. Configured zookeeper.connect "
                    "may be wrong.")
            if stored is not None or cluster_id is None:
                return
        write_meta_properties(log_dir, self.broker_id, cluster_id)

    def _load_dir(self, log_dir: Path) -> None:
        marker = log_dir / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        self.clean_shutdown[log_dir] = clean
        recovery_points = OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).read()
        log_starts = OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).read()
        high_watermarks = OffsetCheckpointFile(log_dir / REPLICATION_OFFSET_CHECKPOINT).read()
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                log.info("removing %s, a log deleted before the last shutdown", child)
                remove_deleted_dir(child)
                continue
            try:
                tp = parse_log_dir_name(child.name)
            except ValueError as e:
                raise LogDirError(f"{child}: {e}") from None
            if tp in self._logs:
                raise LogDirError(f"{tp} is in two log dirs: {self._logs[tp].dir} and {child}")
            loaded = Log(child, tp, self._topic_config(tp.topic),
                         recovery_point=recovery_points.get(tp, 0), log_start_offset=log_starts.get(tp, 0),
                         high_watermark=high_watermarks.get(tp, 0), needs_recovery=not clean, clock=self._clock)
            if loaded.bytes_truncated_by_recovery:
                log.warning("%s: recovery truncated %d invalid bytes; log end offset is now %d",
                            tp, loaded.bytes_truncated_by_recovery, loaded.log_end_offset)
            self._add(loaded)
        # The marker only vouches for the shutdown that wrote it: a crash from now on must recover.
        marker.unlink(missing_ok=True)

    def shutdown(self) -> None:
        """Stop the cleaner, flush every log, write all checkpoints, close the logs and leave the clean-shutdown
        marker (blocking: while the cleaner stops, the thread that owns the logs must keep taking its work)."""
        self.stop_cleaner()
        for each in self._logs.values():
            each.flush()
        self.checkpoint_all()
        for each in self._logs.values():
            each.close()
        for log_dir in self.log_dirs:
            atomic_write_text(log_dir / CLEAN_SHUTDOWN_MARKER, "")
        self._logs.clear()

    # -- logs -------------------------------------------------------------------------------

    @property
    def logs(self) -> Mapping[TopicPartition, Log]:
        return self._logs

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def get_or_create_log(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        """The partition's log, created empty in the log dir holding the fewest partitions."""
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        created = self.open_log(self.place_new_logs([tp])[tp], tp, config or self._topic_config(tp.topic))
        self._add(created)
        return created

    def place_new_logs(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Path]:
        """The directory each new log goes to: the log dir holding the fewest partitions, counting those
        placed here. Call :meth:`open_log` for each (on any thread), then :meth:`add_logs`."""
        placed: dict[TopicPartition, Path] = {}
        counts = dict(self._logs_per_dir)
        for tp in tps:
            target = min(self.log_dirs, key=counts.__getitem__)
            counts[target] += 1
            placed[tp] = target / log_dir_name(tp)
        return placed

    def open_log(self, directory: Path, tp: TopicPartition, config: LogConfig) -> Log:
        """Create (or open) a log without adding it to this manager: blocking file work, safe on a worker
        thread while the owning thread goes on using the logs already added."""
        return Log(directory, tp, config, clock=self._clock)

    def add_logs(self, logs: Sequence[Log]) -> None:
        """Make logs from :meth:`open_log` part of this manager (on the thread that owns the logs)."""
        for each in logs:
            if each.tp in self._logs:
                raise LogDirError(f"{each.tp} already has a log: {self._logs[each.tp].dir}")
            self._add(each)

    def _add(self, added: Log) -> None:
        self._logs[added.tp] = added
        self._logs_per_dir[added.dir.parent] += 1

    def delete_log(self, tp: TopicPartition) -> Path | None:
        """Take the partition's log out of this manager: close it and rename its directory to
        ``<name>.<unique id>-delete`` at once. Returns that directory, for :func:`remove_deleted_dir` (blocking,
        on any thread); None if there was no log."""
        removed = self._logs.pop(tp, None)
        if removed is None:
            return None
        self._logs_per_dir[removed.dir.parent] -= 1
        self.cleaner_manager.forget(tp)
        removed.close()
        renamed = removed.dir.with_name(f"{removed.dir.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        removed.dir.rename(renamed)
        return renamed

    # -- periodic work ----------------------------------------------------------------------

    def flush_due_logs(self) -> int:
        """Flush the logs whose flush.messages or flush.ms is due; returns how many were flushed."""
        now = self._clock()
        due = [each for each in self._logs.values() if each.flush_due(now)]
        for each in due:
            each.flush()
        return len(due)

    def cleanup_logs(self) -> int:
        """Apply retention to every log a cleaner thread does not have at the moment (as Kafka's cleaner keeps its
        logs from retention while it cleans them); returns the number of segments deleted."""
        in_progress = self.cleaner_manager.in_progress
        return sum(each.delete_retained_segments() for tp, each in list(self._logs.items()) if not in_progress(tp))

    def checkpoint_snapshot(self, name: str) -> dict[Path, dict[TopicPartition, int]] | None:
        """What checkpoint file ``name`` should hold now, per log dir; None when that is what it last got.

        Call it on the thread that owns the logs (the event loop), then give the result to
        :meth:`write_checkpoint` on a worker thread: the logs are never iterated from two threads.
        """
        per_dir: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
        if name == LOG_START_OFFSET_CHECKPOINT:
            # Only logs whose start moved past their first segment need an entry (as in Kafka).
            for each in self._logs.values():
                if each.log_start_offset > each.segments[0].base_offset:
                    per_dir[each.dir.parent][each.tp] = each.log_start_offset
        else:
            value = _CHECKPOINTED_OFFSETS[name]
            for each in self._logs.values():
                per_dir[each.dir.parent][each.tp] = value(each)
        return None if self._written.get(name) == per_dir else per_dir

    def write_checkpoint(self, name: str, per_dir: dict[Path, dict[TopicPartition, int]]) -> None:
        """Write a snapshot from :meth:`checkpoint_snapshot` (blocking: fsync and rename)."""
        for log_dir, offsets in per_dir.items():
            OffsetCheckpointFile(log_dir / name).write(offsets)
        self._written[name] = per_dir

    def checkpoint_all(self) -> None:
        """Write the three checkpoint files now, changed or not."""
        for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
            self._written.pop(name, None)
            snapshot = self.checkpoint_snapshot(name)
            assert snapshot is not None
            self.write_checkpoint(name, snapshot)


_CHECKPOINTED_OFFSETS: dict[str, Callable[[Log], int]] = {
    RECOVERY_POINT_CHECKPOINT: lambda each: each.recovery_point,
    REPLICATION_OFFSET_CHECKPOINT: lambda each: each.high_watermark,
}


def remove_deleted_dir(path: Path) -> None:
    """Remove a directory renamed by :meth:`LogManager.delete_log` and everything in it."""
    shutil.rmtree(path, ignore_errors=True)
