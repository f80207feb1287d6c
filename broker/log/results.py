"""What a log's operations answer, with no file behind them: an append's AppendInfo, and the undefined epoch and
offset an epoch lookup answers with. The replication rules import these without importing the file-backed log."""

from __future__ import annotations

from typing import NamedTuple

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class AppendInfo(NamedTuple):
    """What an append did: the offsets it wrote and whether the owner should now flush."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    batch_count: int
    size_in_bytes: int
    rolled: bool
    flush_needed: bool
