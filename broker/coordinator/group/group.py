"""A classic group's state, as Kafka's GroupMetadata: its members and static members (group.instance.id -> member
id, KIP-345), the members given an id and expected to join with it (KIP-394), the members expected to sync, the
generation, leader and chosen protocol, and its committed offsets.

The methods keep the bookkeeping consistent; what to answer and when is the coordinator's rules' business.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.coordinator.group.member import Member, Protocols
from broker.coordinator.group.protocol_choice import candidate_protocols, select_protocol
from broker.coordinator.group.results import JoinedMember
from broker.coordinator.group.states import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    GroupState,
    can_transition,
    check_transition,
)
from protocol.consumer_offsets import OffsetCommitValue
from protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from protocol.errors import ErrorCode
from protocol.kafka.data import DataFormatError
from protocol.topic_partition import TopicPartition


@dataclass(slots=True)
class InitialJoinDelay:
    """The first rebalance of an Empty group waits `delay_ms`, then again while members keep joining, until
    `remaining_ms` of the rebalance timeout is used up (Kafka's InitialDelayedJoin)."""

    delay_ms: int
    remaining_ms: int


class Group:
    """One group. ``state_timestamp`` is when it entered its state (None when loaded from a record without one)."""

    def __init__(self, group_id: str, now_ms: int, state: GroupState = EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp: int | None = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, None] = {}  # an ordered set
        self.pending_sync_members: set[str] = set()
        self.new_member_added = False
        self.initial_join: InitialJoinDelay | None = None
        self.subscribed_topics: frozenset[str] | None = None
        self.offsets: dict[TopicPartition, OffsetCommitValue] = {}
        self.pending_offset_commits: dict[TopicPartition, OffsetCommitValue] = {}

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state.value}, generation={self.generation_id}, "
                f"members={list(self.members)})")

    # ------------------------------------------------------------------------------------------ state

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return can_transition(self.state, PREPARING_REBALANCE)

    # ------------------------------------------------------------------------------------------ members

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def member_error(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """Why a request naming this member is refused (Kafka's validateCurrentMember): a group.instance.id mapped
        to another member id is FENCED_INSTANCE_ID, an unknown instance id or member id UNKNOWN_MEMBER_ID."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return None if self.has(member_id) else ErrorCode.UNKNOWN_MEMBER_ID

    def add(self, member: Member, join_waiter: object | None = None) -> None:
        """Add a member (the group's first sets its protocol type; the leader is the first member added)."""
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already a member of {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member.join_waiter = join_waiter
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> None:
        """Remove a member or a pending member; a leaving leader is replaced by the first remaining member."""
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """The static member `old_member_id` carries on as `new_member_id`, keeping everything else."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def update_member(self, member: Member, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, join_waiter: object | None) -> object | None:
        """A known member joins again; returns the join waiter this one replaces, if any."""
        superseded = member.join_waiter if member.join_waiter is not join_waiter else None
        member.protocols = tuple(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_waiter = join_waiter
        return superseded

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise ValueError(f"{member_id} is already a member of {self.group_id}")
        self.pending_members[member_id] = None

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for member in self.members.values() if member.awaiting_join)

    def not_yet_rejoined_members(self) -> list[Member]:
        return [member for member in self.members.values() if not member.awaiting_join]

    @property
    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == self.size and not self.pending_members

    @property
    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of the members (0 without members)."""
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else make the first member that rejoined the leader. False when there is
        no leader or no member rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    # ------------------------------------------------------------------------------------------ sync

    def add_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise ValueError(f"{member_id} is not a member of {self.group_id}")
        self.pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        self.pending_sync_members.discard(member_id)

    @property
    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    # ------------------------------------------------------------------------------------------ protocols

    def supports_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        """Whether a member offering `protocol_names` of `protocol_type` may join: an Empty group takes any
        non-empty offer; otherwise the type must be the group's and one protocol offered by every member."""
        if self.is_in(EMPTY):
            return bool(protocol_type) and bool(protocol_names)
        if self.protocol_type != protocol_type:
            return False
        if not self.members:
            return True
        candidates = candidate_protocols(self.members.values())
        return any(name in candidates for name in protocol_names)

    def select_protocol(self) -> str:
        return select_protocol(list(self.members.values()))

    def init_next_generation(self, now_ms: int) -> None:
        """Start the next generation: CompletingRebalance with the chosen protocol, or Empty without members."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> tuple[JoinedMember, ...]:
        """The members and their metadata for the chosen protocol, as the leader's JoinGroup answer lists them."""
        if self.is_in(DEAD, PREPARING_REBALANCE) or self.protocol_name is None:
            raise ValueError(f"no member metadata for group {self.group_id} in state {self.state.value}")
        protocol = self.protocol_name
        return tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata(protocol))
                     for m in self.members.values())

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """The topics a consumer group's members subscribe to; None when unknown (not a consumer group, no protocol
        chosen yet, or a subscription that does not parse), which counts as subscribed to every topic."""
        if not self.is_consumer_group:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        try:
            return frozenset(topic for member in self.members.values()
                             for topic in subscribed_topics(member.metadata(self.protocol_name)))
        except (DataFormatError, KeyError):
            return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # ------------------------------------------------------------------------------------------ offsets

    @property
    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_offset_commits)

    def remove_offsets(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Forget the offsets (committed and pending) of `partitions`; returns those that had a committed one."""
        removed = []
        for tp in partitions:
            self.pending_offset_commits.pop(tp, None)
            if self.offsets.pop(tp, None) is not None:
                removed.append(tp)
        return removed
