"""The states of a classic consumer group and the transitions between them, as a table.

As Kafka's GroupMetadata (Kafka 3.9), each state lists the states it may be entered from; one lookup reads it.

- Empty: no members (a new group, the group after its last member left, or a group only used to commit offsets).
  Joins from new members start a rebalance; syncs, heartbeats and commits with a member id are answered
  UNKNOWN_MEMBER_ID. Entered from PreparingRebalance when no member rejoined.
- PreparingRebalance: joins are parked until every known member has rejoined or the rebalance timeout passes;
  heartbeats and syncs are answered REBALANCE_IN_PROGRESS; commits of the previous generation are still taken.
  Entered from Stable, CompletingRebalance or Empty.
- CompletingRebalance: the new generation is formed; syncs wait for the leader's assignment; commits are answered
  REBALANCE_IN_PROGRESS. Entered from PreparingRebalance.
- Stable: members heartbeat, sync returns the assignment, commits of the current generation are taken. Entered from
  CompletingRebalance once the leader's assignment is written.
- Dead: the group is gone (deleted, expired, or its offsets partition moved to another broker). Entered from any
  state, itself included.
"""

from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    """A group's state; the value is Kafka's name for it, as DescribeGroups and ListGroups show it."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: For each state, the states a group may move to it from.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}


class InvalidTransition(RuntimeError):
    """A transition the table does not allow: a bug in the coordinator's rules, never a client's fault."""


def can_transition(current: GroupState, target: GroupState) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    """Raise InvalidTransition unless `current` may move to `target`."""
    if not can_transition(current, target):
        allowed = ",".join(sorted(s.value for s in VALID_PREVIOUS_STATES[target]))
        raise InvalidTransition(f"Group {group_id} should be in the {allowed} states before moving to "
                                f"{target.value} state. Instead it is in {current.value} state")


def parse_state(name: str) -> GroupState | None:
    """The state named `name`, case-insensitively (as ListGroups' state filter), or None."""
    return next((s for s in GroupState if s.value.lower() == name.lower()), None)
