"""Kafka's StickyAssignor ("sticky", EAGER) and CooperativeStickyAssignor ("cooperative-sticky", COOPERATIVE or
EAGER): the sticky assignment (client/assignors/sticky_core.py), and what each tells the leader of its last
generation.

A sticky member puts its last assignment and generation in its subscription's user data (Kafka's
StickyAssignorUserData v1: the partitions by topic, then an int32 generation; v0 lacks the generation). A
cooperative-sticky member relies on the subscription's owned partitions and generation, and puts its generation in
the user data too (an int32) for leaders that read subscriptions older than v2. As cooperative-sticky never gives a
member a partition another still owns, a partition that moves is left unassigned in this generation: its owner gives
it up and rejoins, and the next rebalance hands it on.

minikafka's subscriptions do not tell a missing generation (before v2) from a generation of -1, so a
cooperative-sticky leader takes the user data's generation for both.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence

from client.assignors.base import Member, MemberAssignments, RebalanceProtocol
from client.assignors.sticky_core import DEFAULT_GENERATION, MemberData, sticky_assign
from protocol.consumer_protocol import Assignment
from protocol.topic_partition import TopicPartition

STICKY = "sticky"
COOPERATIVE_STICKY = "cooperative-sticky"


class UserDataError(ValueError):
    """User data that does not hold what the assignor wrote."""


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise UserDataError("user data ends early")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def text(self) -> str:
        length = self.take(">h")
        if length < 0 or self.pos + length > len(self.buf):
            raise UserDataError("bad string in user data")
        self.pos += length
        return self.buf[self.pos - length:self.pos].decode()


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """StickyAssignorUserData v1: the partitions grouped by topic, and the generation."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [struct.pack(">i", len(by_topic))]
    for topic, numbers in by_topic.items():
        name = topic.encode()
        out += [struct.pack(">h", len(name)), name, struct.pack(f">i{len(numbers)}i", len(numbers), *numbers)]
    out.append(struct.pack(">i", generation))
    return b"".join(out)


def decode_sticky_user_data(buf: bytes) -> MemberData:
    """StickyAssignorUserData v1, or v0 (no generation); user data that is neither reads as nothing owned in the
    default generation, as Kafka reads it."""
    reader = _Reader(buf)
    try:
        partitions = []
        for _ in range(reader.take(">i")):
            topic = reader.text()
            partitions += [TopicPartition(topic, reader.take(">i")) for _ in range(reader.take(">i"))]
    except UserDataError:
        return MemberData((), DEFAULT_GENERATION)
    try:
        generation: int | None = reader.take(">i")
    except UserDataError:
        generation = None
    return MemberData(tuple(partitions), generation)


class StickyAssignor:
    """Balanced and sticky, under the EAGER protocol; remembers its last assignment for the next subscription."""

    name = STICKY
    supported_protocols = (RebalanceProtocol.EAGER,)

    def __init__(self) -> None:
        self._assigned: tuple[TopicPartition, ...] | None = None
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return None if self._assigned is None else encode_sticky_user_data(self._assigned, self._generation)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._assigned = assignment.partitions
        self._generation = generation

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[Member]) -> MemberAssignments:
        return sticky_assign(partitions_per_topic, members, _sticky_member_data).assignment


def _sticky_member_data(member: Member) -> MemberData:
    user_data = member.subscription.user_data
    return MemberData((), None) if not user_data else decode_sticky_user_data(user_data)


class CooperativeStickyAssignor:
    """Balanced and sticky, under the COOPERATIVE protocol: a partition moving between members is first only
    taken from its owner."""

    name = COOPERATIVE_STICKY
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return struct.pack(">i", self._generation)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._generation = generation

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[Member]) -> MemberAssignments:
        result = sticky_assign(partitions_per_topic, members, _cooperative_member_data)
        transferring = result.transferring
        if transferring is None:
            transferring = _moved_partitions(members, result.assignment)
        for tp, consumer in transferring.items():
            result.assignment[consumer].remove(tp)
        return result.assignment


def _cooperative_member_data(member: Member) -> MemberData:
    subscription = member.subscription
    generation: int | None = subscription.generation_id
    if generation == DEFAULT_GENERATION:
        user_data = subscription.user_data
        generation = None if user_data is None else (
            struct.unpack(">i", user_data[:4])[0] if len(user_data) >= 4 else DEFAULT_GENERATION)
    return MemberData(subscription.owned_partitions, generation)


def _moved_partitions(members: Sequence[Member], assignment: MemberAssignments) -> dict[TopicPartition, str]:
    """The partitions assigned to a member other than the one owning them, with their new member."""
    owned = {m.member_id: set(m.subscription.owned_partitions) for m in members}
    added = {tp: consumer for consumer, tps in assignment.items() for tp in tps if tp not in owned[consumer]}
    revoked = {tp for consumer, tps in assignment.items() for tp in owned[consumer] - set(tps)}
    return {tp: consumer for tp, consumer in added.items() if tp in revoked}
