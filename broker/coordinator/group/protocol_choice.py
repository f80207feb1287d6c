"""Which protocol (assignor) a group uses, as Kafka's GroupMetadata.selectProtocol chooses it.

The candidates are the protocols every member offers; each member votes for its first preference among them; the
protocol with the most votes wins. Kafka (its Scala coordinator, which a ZooKeeper-mode 3.9 broker runs) counts the
votes in a Scala immutable HashMap and takes the first protocol with the most votes in that map's iteration order,
so ties go to the protocol that comes first in that order: :func:`scala_hash_map_order` reproduces it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from broker.coordinator.group.member import Member
from protocol.consumer_offsets import java_string_hash

_MASK = 0xFFFFFFFF
_BITS_PER_LEVEL = 5
_HASH_BITS = 32


def candidate_protocols(members: Iterable[Member]) -> set[str]:
    """The protocols every member offers (None of them when there are no members)."""
    offered = [set(member.protocol_names) for member in members]
    return set.intersection(*offered) if offered else set()


def select_protocol(members: Sequence[Member]) -> str:
    """The protocol a group of `members` (at least one) uses."""
    if not members:
        raise ValueError("cannot select a protocol for a group without members")
    candidates = candidate_protocols(members)
    votes = Counter(member.vote(candidates) for member in members)
    most = max(votes.values())
    return next(name for name in scala_hash_map_order(votes) if votes[name] == most)


def _improve(hash_code: int) -> int:
    """scala.collection.Hashing.improve, on the unsigned 32 bits of a Java hash code."""
    h = hash_code & _MASK
    h = (h + (~(h << 9) & _MASK)) & _MASK
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK
    return h ^ (h >> 10)


def scala_hash_map_order(keys: Iterable[str], _shift: int = 0) -> list[str]:
    """The order in which Scala 2.13's immutable HashMap (a CHAMP trie) iterates string keys: at each level the keys
    alone in their 5-bit hash fragment come first, by fragment, then each shared fragment's sub-trie, by fragment.
    Keys whose 32 improved hash bits all collide are given in name order."""
    by_fragment: dict[int, list[str]] = {}
    for key in keys:
        fragment = (_improve(java_string_hash(key)) >> _shift) & ((1 << _BITS_PER_LEVEL) - 1)
        by_fragment.setdefault(fragment, []).append(key)
    fragments = sorted(by_fragment)
    order = [by_fragment[f][0] for f in fragments if len(by_fragment[f]) == 1]
    deeper = _shift + _BITS_PER_LEVEL
    for shared in (by_fragment[f] for f in fragments if len(by_fragment[f]) > 1):
        order += scala_hash_map_order(shared, deeper) if deeper < _HASH_BITS else sorted(shared)
    return order
