"""Where a follower truncates before fetching from a new leader (KIP-101, KIP-279). Pure functions.

With leader epochs, the follower asks the leader (OffsetsForLeaderEpoch) where its own latest epoch
ends on the leader's log and truncates there, so it never cuts records the leader has and never
keeps records the leader does not have. The pre-0.11 rule, truncating to the local high watermark,
is kept as an explicitly unsafe mode to reproduce the data loss and divergence it allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from broker.log.results import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

LEADER_EPOCH_MODE = "leader-epoch"
HIGH_WATERMARK_MODE = "high-watermark"


class LatestEpoch(Protocol):
    @property
    def latest_epoch(self) -> int | None:
        """The latest leader epoch the log holds (None: none)."""


class TruncatingLog(Protocol):
    """What the truncation rules read of a follower's log (``broker.log.log.Log`` is one)."""

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def epoch_cache(self) -> LatestEpoch: ...

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(the largest epoch <= leader_epoch, where it ends on this log)``."""


@dataclass(frozen=True, slots=True)
class TruncationDecision:
    """Truncate to ``offset``; when not ``complete``, ask the leader again with the new latest epoch."""

    offset: int
    complete: bool


def epoch_to_ask(log: TruncatingLog) -> int | None:
    """The epoch a follower asks the leader about: its latest one (None: no epochs, use the HW)."""
    return log.epoch_cache.latest_epoch


def decide_truncation(log: TruncatingLog, leader_epoch: int, leader_end_offset: int) -> TruncationDecision:
    """Kafka's getOffsetTruncationState, given the leader's answer ``(leader_epoch, leader_end_offset)``.

    - The leader knows no such epoch: truncate to the local HW.
    - The follower has that epoch: truncate to where it ends on both logs, done.
    - The follower lacks the epoch the leader answered with: truncate to where the follower's largest
      epoch below it ends and ask again (KIP-279's extra round).
    """
    leo = log.log_end_offset
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return TruncationDecision(min(log.high_watermark, leo), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationDecision(min(leader_end_offset, leo), True)
    follower_epoch, follower_end_offset = log.end_offset_for_epoch(leader_epoch)
    if follower_epoch == UNDEFINED_EPOCH:
        return TruncationDecision(min(leader_end_offset, leo), True)
    if follower_epoch != leader_epoch:
        return TruncationDecision(min(follower_end_offset, leo), False)
    return TruncationDecision(min(follower_end_offset, leader_end_offset, leo), True)


def high_watermark_truncation(log: TruncatingLog) -> int:
    """The pre-0.11 rule (unsafe): cut everything above the local high watermark."""
    return log.high_watermark
