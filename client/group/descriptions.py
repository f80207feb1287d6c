"""Groups as the admin client describes them: listings, descriptions with their members' assignments, read from
the coordinators' ListGroups and DescribeGroups answers."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.apis.group_admin import DescribedGroup, DescribedGroupMember, ListedGroup
from protocol.apis.groups import Coordinator
from protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment
from protocol.kafka.data import DataFormatError
from protocol.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class GroupListing:
    """A group as ListGroups lists it: its id, protocol type ("consumer" for consumer groups), state (Kafka's
    name: Stable, Empty, ...) and the broker coordinating it."""

    group_id: str
    protocol_type: str
    state: str
    coordinator_id: int


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """A member of a group: its member id, static instance id, client id and host (as the coordinator saw the
    connection), and its assignment (read as the consumer protocol's; empty outside a Stable group)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group: its state ("Dead" for one its coordinator does not hold), protocol type, the protocol chosen (the
    assignor, for consumer groups), its members and its coordinator."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: Coordinator


def listing(group: ListedGroup, coordinator_id: int) -> GroupListing:
    return GroupListing(group.group_id, group.protocol_type, group.state, coordinator_id)


def description(group: DescribedGroup, coordinator: Coordinator) -> GroupDescription:
    consumer = group.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")
    return GroupDescription(group.group_id, group.state, group.protocol_type, group.protocol,
                            tuple(_member(m, consumer) for m in group.members), coordinator)


def _member(member: DescribedGroupMember, consumer: bool) -> MemberDescription:
    assignment: tuple[TopicPartition, ...] = ()
    if consumer and member.assignment:
        try:
            assignment = decode_assignment(member.assignment).partitions
        except DataFormatError:
            assignment = ()
    return MemberDescription(member.member_id, member.group_instance_id, member.client_id, member.client_host,
                             assignment)
