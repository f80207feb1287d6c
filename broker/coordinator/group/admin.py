"""DescribeGroups, ListGroups and DeleteGroups over the groups a coordinator holds, as Kafka 3.9's.

- A group is described with Kafka's state name, its protocol type, and its members (client id, host); a Stable
  group also with its protocol and each member's metadata and assignment. A group this coordinator does not hold
  (and owns the partition of) is described as Dead without members.
- ListGroups filters by state names (case-insensitive) and group types; every group here is "classic".
- DeleteGroups deletes Empty groups with their offsets; a group with members is NON_EMPTY_GROUP, an unknown one
  GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Collection

from broker.coordinator.group.context import Context
from broker.coordinator.group.group import Group
from broker.coordinator.group.offsets import remove_offsets_and_maybe_group
from broker.coordinator.group.results import GroupDescription, GroupListing, MemberDescription
from broker.coordinator.group.states import DEAD, EMPTY, STABLE
from protocol.errors import ErrorCode

CLASSIC = "classic"


def describe_group(group_id: str, group: Group | None) -> GroupDescription:
    if group is None:
        return GroupDescription(group_id, ErrorCode.NONE, DEAD.value)
    stable = group.is_in(STABLE) and group.protocol_name is not None
    protocol = group.protocol_name if stable else None
    members = tuple(
        MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                          m.metadata(protocol) if protocol else b"", m.assignment if protocol else b"")
        for m in group.members.values())
    return GroupDescription(group_id, ErrorCode.NONE, group.state.value, group.protocol_type or "", protocol or "",
                            members)


def list_groups(groups: Collection[Group], states: Collection[str], types: Collection[str]) -> list[GroupListing]:
    """The groups in one of `states` and of one of `types` (either filter empty: no filter)."""
    wanted_states = {state.lower() for state in states}
    if types and CLASSIC not in {kind.lower() for kind in types}:
        return []
    return [GroupListing(g.group_id, g.protocol_type or "", g.state.value, CLASSIC) for g in groups
            if not wanted_states or g.state.value.lower() in wanted_states]


def delete_group(ctx: Context, group: Group | None) -> ErrorCode:
    """Delete one group (Empty only), its offsets and its metadata."""
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if not group.is_in(EMPTY):
        return ErrorCode.NON_EMPTY_GROUP
    group.transition_to(DEAD, ctx.now())
    remove_offsets_and_maybe_group(ctx, group, lambda g: g.remove_offsets(list(g.offsets)))
    return ErrorCode.NONE
