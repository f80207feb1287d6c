"""What every assignor shares: the rebalance protocols, a member as the group leader sees it, and the `Assignor`
interface (Kafka's ConsumerPartitionAssignor).

minikafka's brokers have no racks, so the assignors here are Kafka's without their rack-aware passes (which Kafka
runs only when members and partitions both name racks)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from protocol.consumer_protocol import NO_GENERATION, Assignment, Subscription
from protocol.topic_partition import TopicPartition

#: An assignment: each member's partitions, by member id.
MemberAssignments = dict[str, list[TopicPartition]]


class RebalanceProtocol(IntEnum):
    """EAGER: every member gives up all its partitions before it rejoins. COOPERATIVE: a member keeps the partitions
    it is assigned again, and gives up only those moved away (in a second rebalance)."""

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, slots=True)
class Member:
    """A member of the group as the leader sees it in JoinGroup's answer: its id, its static instance id, and its
    subscription for the protocol chosen."""

    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None


def member_order(member: Member) -> tuple[bool, str]:
    """Kafka's MemberInfo order: static members first, by group.instance.id, then dynamic ones by member id."""
    if member.group_instance_id is not None:
        return False, member.group_instance_id
    return True, member.member_id


class Assignor(Protocol):
    """A partition assignor the group's leader runs (Kafka's ConsumerPartitionAssignor): `name` is the protocol
    name it is offered under in JoinGroup."""

    @property
    def name(self) -> str: ...

    @property
    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]: ...

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """The user data of this member's subscription."""

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[Member]) -> MemberAssignments:
        """Each member's partitions: `partitions_per_topic` holds the partition count of every subscribed topic the
        leader knows (a topic it does not know is left out); every member has an entry, maybe empty."""

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """This member was given `assignment` in `generation`."""


class StatelessAssignor:
    """An assignor that keeps nothing between rebalances and adds no user data (range, roundrobin)."""

    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, generation: int = NO_GENERATION) -> None:
        return None
