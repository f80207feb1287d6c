"""The order in which Java's HashMap and HashSet hand out their keys, for assignors whose results depend on it (Kafka's
sticky assignors iterate such maps): a key's bucket is its hashCode spread (h ^ h >>> 16) masked by the table size,
keys come out bucket by bucket, and in a bucket in the order they were added. The table starts at 16 buckets and
doubles when the size passes three quarters of it (and never shrinks). Buckets of eight keys or more, which Java
turns into trees, are not modelled."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

from protocol.topic_partition import TopicPartition

K = TypeVar("K", bound=Hashable)
_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def string_hash(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, in 32-bit arithmetic."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def topic_partition_hash(tp: TopicPartition) -> int:
    """Kafka's TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode()."""
    return _int32(31 * (31 + tp.partition) + string_hash(tp.topic))


def _capacity(peak_size: int) -> int:
    capacity = _INITIAL_CAPACITY
    while peak_size > capacity * _LOAD_FACTOR:
        capacity *= 2
    return capacity


def _bucket(h: int, capacity: int) -> int:
    h &= 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


class JavaHashSet(Generic[K]):
    """A set that iterates as a java.util.HashSet built by the same adds and removes would."""

    def __init__(self, hash_code: Callable[[K], int], keys: Iterable[K] = ()) -> None:
        self._hash = hash_code
        self._added: dict[K, int] = {}  # key -> when it was added
        self._count = 0
        self._peak = 0
        for key in keys:
            self.add(key)

    def add(self, key: K) -> None:
        if key not in self._added:
            self._added[key] = self._count
            self._count += 1
            self._peak = max(self._peak, len(self._added))

    def discard(self, key: K) -> None:
        self._added.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._added

    def __len__(self) -> int:
        return len(self._added)

    def __iter__(self) -> Iterator[K]:
        capacity = _capacity(self._peak)
        return iter(sorted(self._added, key=lambda k: (_bucket(self._hash(k), capacity), self._added[k])))


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """The order a java.util.HashMap<String, ?> that had `keys` put in this order iterates them."""
    return list(JavaHashSet(string_hash, keys))
