"""The assignment shared by Kafka's sticky assignors (its AbstractStickyAssignor), pure: balanced, and moving as few
partitions as possible from the members that owned them in the last generation.

When every member subscribes to the same topics, the constrained algorithm: each member keeps up to its quota of
the partitions it owned (at most one more than the fair share for as many members as partitions do not divide
evenly), and the rest are dealt round robin to the members under their quota. Otherwise the general one: owned
partitions are kept, the others go to the member with the fewest partitions, then partitions move from members
with more to members with fewer (preferring the member that owned them in an older generation) until no member
could take one from a member with two more; it is undone if it does not improve the balance (when not
initializing). Where Kafka's results depend on the order of its hash maps, that order is Java's
(client/assignors/java_order.py).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from client.assignors.base import Member, MemberAssignments
from client.assignors.java_order import JavaHashSet, hash_map_order, topic_partition_hash
from protocol.topic_partition import TopicPartition

DEFAULT_GENERATION = -1


@dataclass(frozen=True, slots=True)
class MemberData:
    """What a member owned and in which generation (None: not known), as its assignor reads its subscription."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


@dataclass(frozen=True, slots=True)
class StickyResult:
    """The assignment, and (from the constrained algorithm) the partitions it gives to a member other than the one
    owning them, with their new member; None when the general algorithm ran."""

    assignment: MemberAssignments
    transferring: dict[TopicPartition, str] | None


def sticky_assign(partitions_per_topic: Mapping[str, int], members: Sequence[Member],
                  member_data: Callable[[Member], MemberData]) -> StickyResult:
    """Kafka's AbstractStickyAssignor.assignPartitions (without racks)."""
    by_id = {m.member_id: m for m in members}
    order = hash_map_order(m.member_id for m in members)
    owned, multiple_owners, all_equal, max_generation = _owned_partitions(
        set(partitions_per_topic), [by_id[c] for c in order], member_data)
    if all_equal:
        return _Constrained(partitions_per_topic, order, owned, multiple_owners).build()
    return StickyResult(_General(partitions_per_topic, order, by_id, owned, member_data, max_generation).build(),
                        None)


def _owned_partitions(known_topics: set[str], members: list[Member], member_data: Callable[[Member], MemberData]
                      ) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition], bool, int]:
    """Each member's owned partitions of known topics (a partition claimed by two members goes to the one of the
    newer generation, or to neither in the same generation), the partitions so claimed twice, whether all
    subscriptions are equal, and the newest generation (Kafka's allSubscriptionsEqual)."""
    subscribed: set[str] = set()
    all_equal = True
    max_generation = DEFAULT_GENERATION
    owned: dict[str, list[TopicPartition]] = {}
    multiple_owners: set[TopicPartition] = set()
    previous_owner: dict[TopicPartition, str] = {}
    generations = {m.member_id: m.subscription.generation_id for m in members}
    for member in members:
        topics = set(member.subscription.topics)
        if not subscribed:
            subscribed |= topics
        elif topics != subscribed:
            all_equal = False
        data = member_data(member)
        generation = DEFAULT_GENERATION if data.generation is None else data.generation
        max_generation = max(max_generation, generation)
        mine = owned[member.member_id] = []
        for tp in data.partitions:
            if tp.topic not in known_topics:
                continue
            other = previous_owner.get(tp)
            if other is None:
                mine.append(tp)
                previous_owner[tp] = member.member_id
            elif generation == generations[other]:
                multiple_owners.add(tp)
                _remove(owned[other], tp)
                previous_owner[tp] = member.member_id
            elif generation > generations[other]:
                mine.append(tp)
                _remove(owned[other], tp)
                previous_owner[tp] = member.member_id
    return owned, multiple_owners, all_equal, max_generation


def _remove(partitions: list[TopicPartition], tp: TopicPartition) -> None:
    if tp in partitions:
        partitions.remove(tp)


def _all_partitions(partitions_per_topic: Mapping[str, int], topics: Sequence[str]) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for topic in topics for p in range(partitions_per_topic[topic])]


class _Constrained:
    """Kafka's ConstrainedAssignmentBuilder: every member subscribes to the same topics."""

    def __init__(self, partitions_per_topic: Mapping[str, int], order: list[str],
                 owned: dict[str, list[TopicPartition]], multiple_owners: set[TopicPartition]) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.order = order
        self.owned = owned
        self.multiple_owners = multiple_owners
        total = sum(partitions_per_topic.values())
        self.min_quota = total // len(owned)
        self.max_quota = math.ceil(total / len(owned))
        self.expected_over = total % len(owned)
        self.current_over = 0
        self.assignment: MemberAssignments = {c: [] for c in order}
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> StickyResult:
        assigned = self._assign_owned()
        unassigned = [tp for tp in _all_partitions(self.partitions_per_topic, sorted(self.partitions_per_topic))
                      if tp not in assigned]
        self.under_min.sort()
        self.exactly_min.sort()
        self._assign_round_robin(unassigned)
        if self.under_min and self.current_over != self.expected_over:
            raise RuntimeError("the sticky assignment did not reach the expected number of members over the minimum "
                               "quota, and has no partitions left to assign")
        if any(len(self.assignment[c]) != self.min_quota for c in self.under_min):
            raise RuntimeError("a member did not reach its minimum quota, and no partitions are left to assign")
        return StickyResult(self.assignment, self.transferring)

    def _assign_owned(self) -> set[TopicPartition]:
        assigned: set[TopicPartition] = set()
        for consumer in self.order:
            owned = sorted(self.owned[consumer], key=lambda tp: (tp.partition, tp.topic))
            owned = [tp for tp in owned if tp not in self.multiple_owners]
            if len(owned) < self.min_quota:
                kept = owned
                self.under_min.append(consumer)
            elif len(owned) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exactly_min.clear()
                kept = owned[:self.max_quota]
            else:
                kept = owned[:self.min_quota]
                if self.current_over < self.expected_over:
                    self.exactly_min.append(consumer)
            for tp in owned[len(kept):]:
                self.maybe_revoked[tp] = consumer
            self.assignment[consumer] += kept
            assigned.update(kept)
        return assigned

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        """Kafka's iteration over the members under their minimum quota, starting over when it reaches the end, and
        over those at exactly the minimum once none is under it."""
        position = 0  # of the next member under the minimum quota
        for tp in unassigned:
            from_under = True
            if position < len(self.under_min):
                consumer = self.under_min[position]
                position += 1
            elif not self.under_min and not self.exactly_min:
                raise RuntimeError("no more members to assign partitions to")
            elif not self.under_min:
                consumer = self.exactly_min.pop(0)
                from_under = False
            else:
                consumer, position = self.under_min[0], 1
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                if from_under:
                    position -= 1
                    del self.under_min[position]
                self.exactly_min.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        mine = self.assignment[consumer]
        mine.append(tp)
        if self.maybe_revoked.get(tp, consumer) != consumer or tp in self.multiple_owners:
            self.transferring[tp] = consumer
        return len(mine)


class _SortedMembers:
    """Kafka's TreeSet of members ordered by how many partitions they have, then by id: a member's place is taken
    when it is added (it is removed before its assignment changes, and added again after)."""

    def __init__(self, assignment: MemberAssignments) -> None:
        self.assignment = assignment
        self._keys: list[tuple[int, str]] = []
        self._key_of: dict[str, tuple[int, str]] = {}

    def add(self, consumer: str) -> None:
        if consumer not in self._key_of:
            key = (len(self.assignment[consumer]), consumer)
            self._key_of[consumer] = key
            bisect.insort(self._keys, key)

    def remove(self, consumer: str) -> None:
        key = self._key_of.pop(consumer, None)
        if key is not None:
            self._keys.remove(key)

    def first(self) -> str:
        return self._keys[0][1]

    def last(self) -> str:
        return self._keys[-1][1]

    def __iter__(self) -> Iterator[str]:
        return iter([consumer for _, consumer in self._keys])


class _Movements:
    """Kafka's PartitionMovements: the moves made so far, by topic and (from, to) pair, so that a partition moving
    back where another came from is swapped for that one."""

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[tuple[str, str], JavaHashSet[TopicPartition]]] = {}
        self._moves: dict[TopicPartition, tuple[str, str]] = {}

    def _forget(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self._moves.pop(tp)
        pairs = self._by_topic[tp.topic]
        pairs[pair].discard(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self._by_topic[tp.topic]
        return pair

    def _record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._moves[tp] = pair
        pairs = self._by_topic.setdefault(tp.topic, {})
        pairs.setdefault(pair, JavaHashSet(topic_partition_hash)).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self._moves:
            source, _ = self._forget(tp)
            if source != new:
                self._record(tp, (source, new))
        else:
            self._record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        pairs = self._by_topic.get(tp.topic)
        if pairs is None:
            return tp
        if tp in self._moves:
            old = self._moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else next(iter(reverse))


class _General:
    """Kafka's GeneralAssignmentBuilder: members subscribe to different topics."""

    def __init__(self, partitions_per_topic: Mapping[str, int], order: list[str], by_id: dict[str, Member],
                 owned: dict[str, list[TopicPartition]], member_data: Callable[[Member], MemberData],
                 max_generation: int) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.order = order
        self.by_id = by_id
        self.member_data = member_data
        self.max_generation = max_generation
        self.topic_consumers: dict[str, list[str]] = {topic: [] for topic in partitions_per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for consumer in order:
            topics = [t for t in by_id[consumer].subscription.topics if t in partitions_per_topic]
            self.consumer_topics[consumer] = topics
            for topic in topics:
                self.topic_consumers[topic].append(consumer)
        self.current: MemberAssignments = {c: list(owned.get(c, [])) for c in order}
        self.partition_consumer = {tp: c for c, tps in self.current.items() for tp in tps}
        topics = sorted(self.topic_consumers, key=lambda t: (len(self.topic_consumers[t]), t))
        self.sorted_partitions = _all_partitions(partitions_per_topic, topics)
        self.sorted_members = _SortedMembers(self.current)
        self.revocation_required = False
        self.movements = _Movements()

    def build(self) -> MemberAssignments:
        previous = self._previous_owners()
        assigned = self._keep_owned()
        unassigned = self.sorted_partitions if not assigned else [
            tp for tp in self.sorted_partitions if tp not in assigned]
        for consumer in self.current:
            self.sorted_members.add(consumer)
        self._balance(previous, unassigned)
        return self.current

    def _previous_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """The owner of each partition in an older generation than the newest (Kafka's prevAssignment)."""
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for consumer in self.order:
            data = self.member_data(self.by_id[consumer])
            if data.generation is not None and data.generation < self.max_generation:
                generation = data.generation
            elif data.generation is None and self.max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in data.partitions:
                if tp not in previous or generation > previous[tp][1]:
                    previous[tp] = (consumer, generation)
        return previous

    def _keep_owned(self) -> set[TopicPartition]:
        assigned = set()
        for consumer in self.order:
            subscribed = self.by_id[consumer].subscription.topics
            kept = []
            for tp in self.current[consumer]:
                if tp.topic not in self.topic_consumers:
                    self.partition_consumer.pop(tp, None)
                elif tp.topic not in subscribed:
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.add(tp)
            self.current[consumer] = kept
        return assigned

    def _max_size(self, consumer: str) -> int:
        return sum(self.partitions_per_topic[t] for t in self.consumer_topics[consumer])

    def _can_participate(self, consumer: str) -> bool:
        partitions = self.current[consumer]
        return len(partitions) < self._max_size(consumer) or any(
            len(self.topic_consumers[tp.topic]) >= 2 for tp in partitions)

    def _balance(self, previous: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_members.last()]
        for tp in unassigned:
            if self.topic_consumers[tp.topic]:
                self._assign_to_smallest(tp)
        fixed = {tp for topic, consumers in self.topic_consumers.items() if len(consumers) < 2
                 for tp in _all_partitions(self.partitions_per_topic, [topic])}
        self.sorted_partitions[:] = [tp for tp in self.sorted_partitions if tp not in fixed]
        unassigned[:] = [tp for tp in unassigned if tp not in fixed]
        fixed_assignments = {}
        for consumer in self.consumer_topics:
            if not self._can_participate(consumer):
                self.sorted_members.remove(consumer)
                fixed_assignments[consumer] = self.current.pop(consumer)
        before = {c: list(tps) for c, tps in self.current.items()}
        before_owners = dict(self.partition_consumer)
        if not self.revocation_required:
            self._reassign(unassigned, previous)
        moved = self._reassign(self.sorted_partitions, previous)
        if not initializing and moved and _balance_score(self.current) >= _balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.partition_consumer = before_owners
        for consumer, partitions in fixed_assignments.items():
            self.current[consumer] = partitions
            self.sorted_members.add(consumer)

    def _assign_to_smallest(self, tp: TopicPartition) -> None:
        for consumer in self.sorted_members:
            if tp.topic in self.consumer_topics[consumer]:
                self.sorted_members.remove(consumer)
                self.current[consumer].append(tp)
                self.partition_consumer[tp] = consumer
                self.sorted_members.add(consumer)
                return

    def _balanced(self) -> bool:
        smallest = len(self.current[self.sorted_members.first()])
        largest = len(self.current[self.sorted_members.last()])
        if smallest >= largest - 1:
            return True
        owner = {tp: c for c, tps in self.current.items() for tp in tps}
        for consumer in self.sorted_members:
            partitions = set(self.current[consumer])
            if len(partitions) == self._max_size(consumer):
                continue
            for topic in self.consumer_topics[consumer]:
                for tp in _all_partitions(self.partitions_per_topic, [topic]):
                    other = owner.get(tp)
                    if tp not in partitions and other is not None and len(partitions) + 1 < len(self.current[other]):
                        return False
        return True

    def _reassign(self, partitions: list[TopicPartition], previous: dict[TopicPartition, tuple[str, int]]) -> bool:
        """Move partitions from larger members to smaller ones until balanced (Kafka's performReassignments)."""
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._balanced():
                    break
                consumer = self.partition_consumer[tp]
                size = len(self.current[consumer])
                earlier = previous.get(tp)
                if earlier is not None and earlier[0] in self.current and size > len(self.current[earlier[0]]) + 1:
                    self._move(tp, earlier[0])
                    performed = modified = True
                    continue
                if any(size > len(self.current[other]) + 1 for other in self.topic_consumers[tp.topic]
                       if other in self.current):
                    new = next(c for c in self.sorted_members if tp.topic in self.consumer_topics[c])
                    self._move(tp, new)
                    performed = modified = True
        return performed

    def _move(self, tp: TopicPartition, new: str) -> None:
        moved = self.movements.partition_to_move(tp, self.partition_consumer[tp], new)
        old = self.partition_consumer[moved]
        self.sorted_members.remove(old)
        self.sorted_members.remove(new)
        self.movements.move(moved, old, new)
        self.current[old].remove(moved)
        self.current[new].append(moved)
        self.partition_consumer[moved] = new
        self.sorted_members.add(new)
        self.sorted_members.add(old)


def _balance_score(assignment: MemberAssignments) -> int:
    sizes = [len(tps) for tps in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1:])
