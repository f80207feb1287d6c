"""The leader-epoch cache: for each leader epoch of a partition, the offset of its first record."""

from __future__ import annotations

import contextlib
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from operator import attrgetter
from pathlib import Path

from broker.log.checkpoint import EpochEntry, LeaderEpochCheckpointFile
from broker.log.results import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

_epoch_of = attrgetter("epoch")
_start_of = attrgetter("start_offset")


def _precedes(a: EpochEntry, b: EpochEntry) -> bool:
    return a.epoch < b.epoch and a.start_offset < b.start_offset


class LeaderEpochCache:
    """Per-partition map of leader epoch -> first offset of that epoch, with Kafka's semantics,
    optionally persisted to a LeaderEpochCheckpointFile.

    Entries are kept strictly increasing in both epoch and start offset. Every change is flushed to
    the checkpoint (if any) before the call returns, under a lock, so concurrent callers never leave
    an older state on disk than in memory.
    """

    def __init__(
        self,
        checkpoint: LeaderEpochCheckpointFile | None = None,
        entries: Iterable[EpochEntry] | None = None,
    ) -> None:
        """Start from ``entries`` if given, else from the checkpoint file if it exists.

        Either source is replayed through the assignment rule, so non-monotonic entries are dropped
        as they would be when assigned live; loading never writes the file.
        """
        self._checkpoint = checkpoint
        self._entries: list[EpochEntry] = []
        self._lock = threading.RLock()
        #: Whether a change made with ``flush=False`` is not in the checkpoint yet.
        self.unflushed = False
        if entries is None and checkpoint is not None:
            entries = checkpoint.read()
        for entry in entries or ():
            self._append(entry)

    @property
    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, ascending."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        with self._lock:
            return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        with self._lock:
            return self._entries[0] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        latest = self.latest_entry
        return None if latest is None else latest.epoch

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True (and flushed) if the cache changed.

        Re-assigning the latest epoch at a later offset is a no-op; anything else replaces every
        entry at the end whose epoch or start offset is not below the new one. With ``flush=False`` the
        caller flushes before anything relies on the entry being durable (a broker becoming leader of many
        partitions writes their checkpoints together, see broker.log.log.flush_epoch_caches).
        """
        entries = self._entries
        if entries and epoch == entries[-1].epoch and start_offset >= entries[-1].start_offset and epoch >= 0:
            return False  # the common case on every append, decided without the lock (as Kafka does)
        with self._lock:
            changed = self._append(EpochEntry(epoch, start_offset))
            if changed:
                self._changed(flush)
            return changed

    def _append(self, entry: EpochEntry) -> bool:
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {entry}: epoch and start offset must be >= 0")
        entries = self._entries
        if entries and entry.epoch == entries[-1].epoch and entry.start_offset >= entries[-1].start_offset:
            return False
        # Keep the map monotonic in both epoch and offset: drop conflicting entries from the end.
        while entries and not _precedes(entries[-1], entry):
            entries.pop()
        entries.append(entry)
        return True

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range contains ``offset``: the last one starting at or before it."""
        with self._lock:
            i = bisect_right(self._entries, offset, key=_start_of)
            return self._entries[i - 1].epoch if i else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest known epoch <= requested, the offset where it ends) as an OffsetsForLeaderEpoch answer.

        The end of the latest epoch is ``log_end_offset``; an epoch below every known one ends where
        the first known epoch starts; an epoch above every known one, or UNDEFINED_EPOCH, gets
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        undefined = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if requested_epoch == UNDEFINED_EPOCH:
            return undefined
        with self._lock:
            if requested_epoch == self.latest_epoch:
                return requested_epoch, log_end_offset
            i = bisect_right(self._entries, requested_epoch, key=_epoch_of)
            if i == len(self._entries):
                return undefined
            higher = self._entries[i]
            floor_epoch = self._entries[i - 1].epoch if i else requested_epoch
            return floor_epoch, higher.start_offset

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> None:
        """Drop every entry starting at or after ``end_offset`` (after the log is truncated to it).

        With ``flush=False`` the checkpoint is left to the caller (:attr:`unflushed` says whether it must write it):
        a follower truncating many partitions at once writes their checkpoints together."""
        with self._lock:
            if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
                return
            del self._entries[bisect_left(self._entries, end_offset, key=_start_of) :]
            self._changed(flush)

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget history before ``start_offset`` (the new log start offset).

        Entries starting at or before it are removed and the last of them is kept, moved to start at
        ``start_offset``; an entry starting exactly there is therefore kept as is.
        """
        with self._lock:
            removed = bisect_right(self._entries, start_offset, key=_start_of)
            if not removed:
                return
            first = EpochEntry(self._entries[removed - 1].epoch, start_offset)
            if removed == 1 and self._entries[0] == first:
                return
            self._entries[:removed] = [first]
            self.flush()

    def clear(self, *, flush: bool = True) -> None:
        """Remove every entry and flush (``flush=False``: as for :meth:`truncate_from_end`)."""
        with self._lock:
            self._entries.clear()
            self._changed(flush)

    def _changed(self, flush: bool) -> None:
        if flush:
            self.flush()
        else:
            self.unflushed = True

    def flush(self) -> None:
        """Write the entries to the checkpoint file, if the cache has one (and it is not closed)."""
        with self._lock:
            if self._checkpoint is not None:
                self._checkpoint.write(self._entries)
            self.unflushed = False

    @contextlib.contextmanager
    def locked_checkpoint(self) -> Iterator[tuple[Path, str] | None]:
        """The checkpoint's path and the content to write there, with the cache held meanwhile (no change, no
        other write, no close) until the block ends: for writing many caches' checkpoints together elsewhere. None
        if the cache writes no file (none, or closed). The caller sets ``unflushed`` by the outcome."""
        with self._lock:
            checkpoint = self._checkpoint
            yield None if checkpoint is None else (checkpoint.path, checkpoint.text(self._entries))

    def close(self) -> None:
        """Write nothing more (waiting for a write under way): the log is closed, and its directory may go."""
        with self._lock:
            self._checkpoint = None
