"""Kafka's default partitioning: murmur2 of the key for keyed records, one partition per batch for the rest."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2: the 32-bit MurmurHash2 of `data` as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    tail = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:tail]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's Utils.toPositive: clear the sign bit of a 32-bit int."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a keyed record."""
    return to_positive(murmur2(key)) % num_partitions


class Partitioner:
    """Keyed records go to `partition_for_key`; keyless records of a topic stick to one partition until its
    open batch is closed (full or sent), then move to the next partition, round-robin from a random start."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}

    def partition(
        self, topic: str, key: bytes | None, num_partitions: int, has_open_batch: Callable[[int], bool]
    ) -> int:
        """The partition for a record; `has_open_batch(p)` says whether partition p has a batch still taking
        records."""
        if key is not None:
            return partition_for_key(key, num_partitions)
        current = self._sticky.get(topic)
        if current is None:
            current = self._rng.randrange(num_partitions)
        elif current >= num_partitions or not has_open_batch(current):
            current = (current + 1) % num_partitions
        self._sticky[topic] = current
        return current
