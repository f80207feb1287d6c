"""What a partition's replication rules use of its log (:class:`PartitionLog`), so that the rules need no file.

The broker's file-backed ``broker.log.log.Log`` satisfies it as it is; the rules' unit tests use an in-memory
log. Reads and appends work on whole record batches (protocol.records)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from broker.log.results import AppendInfo


@runtime_checkable
class PartitionLog(Protocol):
    """A partition's log as its rules see it: offsets, appends as leader or follower, reads, the high watermark,
    leader epochs and the log start."""

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets (the LEO)."""

    @property
    def high_watermark(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    def assign_epoch_start_offset(self, leader_epoch: int) -> bool:
        """Record that ``leader_epoch`` starts at the log end (a replica becoming leader); True if that is new."""

    def append_as_leader(self, records: bytes, leader_epoch: int) -> AppendInfo:
        """Assign offsets from the log end, stamp ``leader_epoch`` on every batch, and append."""

    def append_as_follower(self, records: bytes) -> AppendInfo:
        """Append batches that carry the leader's offsets and epochs (they must continue the log)."""

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, bounded to [log start offset, log end offset]; returns the value set."""

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``: at most ``max_bytes`` (at least one batch), only batches
        that end before ``max_offset``; OffsetOutOfRangeError outside [log start offset, log end offset]."""

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record with a timestamp >= ``timestamp``; None if none is."""

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record with the largest timestamp; None if the log holds none."""

    def delete_records(self, offset: int) -> None:
        """Move the log start offset up to ``offset`` (at most the HW)."""
