"""Kafka's default partitioning: murmur2 of the key for keyed records, one partition per batch for the rest."""

from __future__ import annotations

import random
import struct

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
    """Keyed records go to `partition_for_key`. Keyless records of a topic stick to one partition until a new
    batch would be needed there (its open batch is full or was sent): `on_new_batch` then moves the topic on to
    the next partition, round-robin from a random start (Kafka's sticky partitioning, KIP-480).

    murmur2 in Python costs about as much as the rest of sending a record, and keys repeat (users, devices): the
    hashes of up to `key_cache_size` keys are remembered (all forgotten when that many are)."""

    def __init__(self, rng: random.Random | None = None, key_cache_size: int = 65536) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}
        self._key_cache_size = key_cache_size
        self._positive_hashes: dict[bytes, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        """The partition for a record."""
        if key is not None:
            if type(key) is not bytes:
                key = bytes(key)  # a bytearray or memoryview is not hashable
            positive_hash = self._positive_hashes.get(key)
            if positive_hash is None:
                if len(self._positive_hashes) >= self._key_cache_size:
                    self._positive_hashes.clear()
                positive_hash = self._positive_hashes[key] = to_positive(murmur2(key))
            return positive_hash % num_partitions
        current = self._sticky.get(topic)
        if current is None or current >= num_partitions:
            current = self._sticky[topic] = self._rng.randrange(num_partitions)
        return current

    def on_new_batch(self, topic: str, num_partitions: int, previous: int) -> int:
        """A keyless record for `previous` needs a new batch: the partition the topic sticks to from now on."""
        current = self._sticky[topic] = (previous + 1) % num_partitions
        return current
