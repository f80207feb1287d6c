"""The cleaner's offset map: each key of the dirty part and the offset of its latest record (Kafka's OffsetMap), in a
bounded amount of memory (pure).

Kafka's SkimpyOffsetMap keeps a 16-byte MD5 of each key and an 8-byte offset, 24 bytes an entry, in
log.cleaner.dedupe.buffer.size (shared by the cleaner threads) filled up to its load factor. Here a key is its own
bytes in a dict, which CPython stores in about ENTRY_OVERHEAD_BYTES more than the key: the same buffer holds fewer
keys, and the memory the setting names is the memory used.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

#: What CPython spends on one entry beyond its key's bytes: the bytes object's header (33), the offset's int (28
#: to 32) and the dict's slot at its usual fill (about 50).
ENTRY_OVERHEAD_BYTES = 112
NO_OFFSET = -1


class OffsetMap:
    """Key -> offset of its latest record, and the last offset the map has seen (Kafka's latestOffset): records
    past it are not covered by the map and are kept whatever their key."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self.offsets: dict[bytes, int] = {}
        self.used_bytes = 0
        self.latest_offset = NO_OFFSET
        self._sorted_latest: list[int] | None = None  # the map's offsets in order, once asked for (until a change)

    def __len__(self) -> int:
        return len(self.offsets)

    def get(self, key: bytes) -> int:
        """The offset of the key's latest record, NO_OFFSET if the map lacks it."""
        return self.offsets.get(key, NO_OFFSET)

    def put_all(self, keys: Sequence[bytes], offsets: Sequence[int]) -> int:
        """Record a batch's keyed records, in offset order; how many were: all of them, or none if its new keys
        would not fit in the capacity. Into an empty map a batch goes as far as its keys fit, so that a map always
        covers some records."""
        if not keys:
            return 0
        entry_bytes = ENTRY_OVERHEAD_BYTES + sum(map(len, keys)) // len(keys)
        before = len(self.offsets)
        if self.used_bytes + len(keys) * entry_bytes > self.capacity_bytes:  # near the capacity: count the new keys
            new = len(set(keys).difference(self.offsets))
            if self.used_bytes + new * entry_bytes > self.capacity_bytes:
                return 0 if before else self._put_while_room(keys, offsets, entry_bytes)
        self._sorted_latest = None
        self.offsets.update(zip(keys, offsets, strict=True))
        self.used_bytes += (len(self.offsets) - before) * entry_bytes
        return len(keys)

    def _put_while_room(self, keys: Sequence[bytes], offsets: Sequence[int], entry_bytes: int) -> int:
        self._sorted_latest = None
        for recorded, (key, offset) in enumerate(zip(keys, offsets, strict=True)):
            if key not in self.offsets:
                if self.used_bytes + entry_bytes > self.capacity_bytes:
                    return recorded
                self.used_bytes += entry_bytes
            self.offsets[key] = offset
        return len(keys)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    def latest_offsets_between(self, first: int, last: int) -> list[int]:
        """The offsets in [first, last] that are some key's latest, in order. Within the part of the log the map was
        built from, these are exactly the keyed records the map keeps (a record there is its key's latest or has a
        later one), found without looking at keys."""
        if self._sorted_latest is None:
            self._sorted_latest = sorted(self.offsets.values())
        latest = self._sorted_latest
        return latest[bisect_left(latest, first):bisect_right(latest, last)]

    def clear(self) -> None:
        self._sorted_latest = None
        self.offsets.clear()
        self.used_bytes = 0
        self.latest_offset = NO_OFFSET

    @property
    def utilization(self) -> float:
        """The share of the capacity in use."""
        return self.used_bytes / self.capacity_bytes if self.capacity_bytes else 1.0
