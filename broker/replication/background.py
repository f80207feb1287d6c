"""The replica manager's work off the request paths: periodic tasks, flushes and other file work on worker threads."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable

from broker.config import BrokerConfig
from broker.log.checkpoint import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from broker.log.log import Clock, Log
from broker.log.manager import LogManager
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)


class BackgroundTasks:
    """The periodic tasks, as Kafka schedules them (the HW, recovery-point and log-start checkpoints, flushes of
    due logs, retention, the ISR shrink); fsyncs of logs, one per log at a time; other blocking file work. Blocking
    work runs on worker threads, never on the event loop, and shutdown waits for it."""

    def __init__(self, config: BrokerConfig, log_manager: LogManager, clock: Clock,
                 shrink_isr: Callable[[], None]) -> None:
        self._config = config
        self._log_manager = log_manager
        self._clock = clock
        self._shrink_isr = shrink_isr
        self._periodic: list[asyncio.Task] = []
        self._flushing: dict[TopicPartition, asyncio.Task] = {}
        self._file_work: set[asyncio.Task] = set()

    def start(self) -> None:
        """Start the periodic tasks."""
        config = self._config
        loop = asyncio.get_running_loop()
        every = {
            "checkpoint high watermarks": (config.replica_high_watermark_checkpoint_interval_ms,
                                           lambda: self._checkpoint(REPLICATION_OFFSET_CHECKPOINT)),
            "checkpoint recovery points": (config.log_flush_offset_checkpoint_interval_ms,
                                           lambda: self._checkpoint(RECOVERY_POINT_CHECKPOINT)),
            "checkpoint log start offsets": (config.log_flush_start_offset_checkpoint_interval_ms,
                                             lambda: self._checkpoint(LOG_START_OFFSET_CHECKPOINT)),
            "flush due logs": (config.log_flush_scheduler_interval_ms, self._flush_due_logs),
            "retention": (config.log_retention_check_interval_ms, self._log_manager.cleanup_logs),
            "ISR shrink": (config.replica_lag_time_max_ms // 2, self._shrink_isr),
        }
        self._periodic += [loop.create_task(self._every(interval, name, work))
                           for name, (interval, work) in every.items()]

    def schedule_flush(self, partition_log: Log) -> None:
        """fsync a log on a worker thread, never on the event loop; one flush per log at a time."""
        tp = partition_log.tp
        if tp in self._flushing:
            return

        async def flush() -> None:
            try:
                await asyncio.to_thread(partition_log.flush)
            except OSError as e:
                log.error("flushing %s failed: %s", tp, e)
            finally:
                self._flushing.pop(tp, None)

        self._flushing[tp] = asyncio.get_running_loop().create_task(flush())

    def run_in_thread(self, work: Callable[..., object], *args: object) -> None:
        """Run blocking file work on a worker thread, waiting for nobody (shutdown waits for it)."""
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(work, *args))
        self._file_work.add(task)
        task.add_done_callback(self._file_work.discard)

    def _flush_due_logs(self) -> None:
        now = self._clock()
        for partition_log in list(self._log_manager.logs.values()):
            if partition_log.flush_due(now):
                self.schedule_flush(partition_log)

    async def _checkpoint(self, name: str) -> None:
        """Snapshot the offsets on the loop; write them on a worker thread only if they changed."""
        snapshot = self._log_manager.checkpoint_snapshot(name)
        if snapshot is not None:
            await asyncio.to_thread(self._log_manager.write_checkpoint, name, snapshot)

    async def _every(self, interval_ms: int, name: str, work: Callable[[], object]) -> None:
        """Run ``work`` every interval (awaiting what it returns, if anything); log its failures."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                result = work()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("periodic task %r failed", name)

    def stop(self) -> list[asyncio.Task]:
        """Cancel the periodic tasks; the tasks to wait for: those, and the flushes and file work under way."""
        for task in self._periodic:
            task.cancel()
        waiting = [*self._periodic, *self._flushing.values(), *self._file_work]
        self._periodic = []
        return waiting
