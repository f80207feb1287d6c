"""The classic group's states and transitions (broker/coordinator/group/states.py): every pair against Kafka's."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from broker.coordinator.group.group import Group
from broker.coordinator.group.states import (
    VALID_PREVIOUS_STATES,
    GroupState,
    InvalidTransition,
    can_transition,
    check_transition,
    parse_state,
)
from tests.unit.test_pure_core import FORBIDDEN, ROOT, imported_roots

E, P, C, S, D = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
#: Kafka's GroupMetadata: (from, to) for every allowed transition, written out independently of the table.
KAFKA_TRANSITIONS = {
    (S, P), (C, P), (E, P),  # PreparingRebalance
    (P, C),                  # CompletingRebalance
    (C, S),                  # Stable
    (P, E),                  # Empty
    (S, D), (P, D), (C, D), (E, D), (D, D),  # Dead
}


def test_state_names_are_kafkas():
    assert [state.value for state in GroupState] == [E, P, C, S, D]


@pytest.mark.parametrize(("current", "target"), list(itertools.product(GroupState, GroupState)),
                         ids=lambda s: s.value)
def test_every_transition_is_allowed_exactly_as_kafka_allows_it(current, target):
    allowed = (current.value, target.value) in KAFKA_TRANSITIONS
    assert can_transition(current, target) is allowed
    assert (current in VALID_PREVIOUS_STATES[target]) is allowed
    group = Group("g", now_ms=0, state=current)
    if allowed:
        check_transition("g", current, target)
        group.transition_to(target, now_ms=5)
        assert (group.state, group.state_timestamp) == (target, 5)
    else:
        with pytest.raises(InvalidTransition, match=f"before moving to {target.value} state"):
            group.transition_to(target, now_ms=5)
        assert (group.state, group.state_timestamp) == (current, 0)


def test_the_table_has_every_state():
    assert set(VALID_PREVIOUS_STATES) == set(GroupState)


@pytest.mark.parametrize(("name", "state"), [("stable", GroupState.STABLE), ("EMPTY", GroupState.EMPTY),
                                             ("completingrebalance", GroupState.COMPLETING_REBALANCE),
                                             ("AwaitingSync", None), ("", None)])
def test_states_are_parsed_case_insensitively(name, state):
    assert parse_state(name) is state


def test_the_group_coordinator_core_is_pure():
    modules = sorted((ROOT / "broker/coordinator/group").glob("*.py"))
    assert len(modules) >= 10
    for path in modules:
        assert imported_roots(path) & (FORBIDDEN | {"threading", "subprocess"}) == set(), Path(path).name
