"""The cleaner threads (Kafka's LogCleaner and CleanerThread): log.cleaner.threads threads, each cleaning the
dirtiest compacted log, or waiting log.cleaner.backoff.ms when none needs it. They never run on the event loop:
what must happen on the thread that owns the logs (choosing a log, putting cleaned segments in place) is handed to
it through ``owner``.

A test may stop a cleaning at one of its steps and kill the broker there: MINIKAFKA_CLEANER_HALT_AT names the step
("cleaned", "swap", "deleted" or "replaced"), MINIKAFKA_CLEANER_HALT_FILE the file created when a thread reaches it;
that thread then waits forever (at "swap" and "deleted" it is the owner's thread).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError
from pathlib import Path

from broker.log.cleaner.cleaner import Cleaner, CleaningAbortedError, CleaningJob, Owner, StepHook, no_step
from broker.log.cleaner.config import CleanerConfig
from broker.log.cleaner.manager import LogCleanerManager
from broker.log.cleaner.offset_map import OffsetMap

log = logging.getLogger(__name__)

HALT_AT = "MINIKAFKA_CLEANER_HALT_AT"
HALT_FILE = "MINIKAFKA_CLEANER_HALT_FILE"


class OwnerGoneError(Exception):
    """The thread that owns the logs no longer takes work (the broker is stopping)."""


def halt_hook(environ: Mapping[str, str]) -> StepHook | None:
    """The test hook MINIKAFKA_CLEANER_HALT_AT and MINIKAFKA_CLEANER_HALT_FILE set, if they do."""
    step, marker = environ.get(HALT_AT), environ.get(HALT_FILE)
    if not step or not marker:
        return None

    def halt(reached: str) -> None:
        if reached == step:
            log.warning("the cleaner halts at step %r (%s)", step, HALT_AT)
            Path(marker).write_text(step)
            threading.Event().wait()

    return halt


class LogCleaner:
    """The cleaner threads over the logs of a LogCleanerManager."""

    def __init__(self, config: CleanerConfig, manager: LogCleanerManager, owner: Owner, clock: Callable[[], int],
                 step: StepHook = no_step) -> None:
        self.config = config
        self.manager = manager
        self._owner = owner
        self._clock = clock
        self._step = step
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        log.info("starting the log cleaner (%d threads)", self.config.threads)
        for number in range(self.config.threads):
            offset_map = OffsetMap(self.config.offset_map_bytes)
            cleaner = Cleaner(offset_map, self._owner, self._check_done, self._clock, self._step)
            thread = threading.Thread(target=self._run, args=(number, cleaner), name=f"log-cleaner-{number}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Stop the threads and wait for them (blocking; the owner's thread must keep taking work meanwhile)."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        self.manager.write_checkpoints()

    def _check_done(self, job: CleaningJob) -> None:
        """Kafka's checkDone: stop a cleaning when the cleaner stops, or its log was deleted or truncated."""
        if self._stopping.is_set() or self.manager.is_aborted(job.tp) or job.log.truncations != job.truncations:
            raise CleaningAbortedError(f"the cleaning of {job.tp} was aborted")

    def _run(self, number: int, cleaner: Cleaner) -> None:
        while not self._stopping.is_set():
            try:
                cleaned = self._clean_dirtiest(number, cleaner)
            except OwnerGoneError:
                return
            self.manager.write_checkpoints()
            if not cleaned:
                self._stopping.wait(self.config.backoff_ms / 1000)

    def _clean_dirtiest(self, number: int, cleaner: Cleaner) -> bool:
        """Clean the dirtiest log, if one needs it; whether one did."""
        try:
            job = self._owner(lambda: self.manager.grab_dirtiest(self._clock()))
        except (RuntimeError, CancelledError) as e:  # the event loop is closed, or closing
            raise OwnerGoneError(str(e)) from e
        if job is None:
            return False
        self.manager.write_checkpoints()  # a first cleaning's entry is on disk before it replaces a segment
        end = None
        try:
            end, stats = cleaner.clean(job)
            log.info("cleaner %d cleaned %s (dirty section [%d, %d)): %s", number, job.tp, job.first_dirty, end,
                     stats.summary())
        except CleaningAbortedError as e:
            log.info("cleaner %d: %s", number, e)
        except Exception:
            log.exception("cleaner %d failed to clean %s; it is not cleaned again until the broker restarts", number,
                          job.tp)
            self.manager.mark_uncleanable(job.tp)
        finally:
            self.manager.done_cleaning(job, end)
        return True
