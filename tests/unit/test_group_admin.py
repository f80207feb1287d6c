"""DescribeGroups, ListGroups and DeleteGroups over the pure coordinator (tests/unit/group_harness.py)."""

from __future__ import annotations

from broker.coordinator.group.requests import LeavingMember
from broker.coordinator.group.results import GroupDescription, GroupListing, ListGroupsResult, MemberDescription
from broker.coordinator.group.states import GroupState
from protocol.consumer_offsets import GroupMetadataKey, OffsetCommitKey, decode_key, partition_for
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition as TP
from tests.unit.group_harness import GROUP, NO_DELAY, RANGE, FakeShell, form_group

NONE = ErrorCode.NONE


def delete(shell: FakeShell, *group_ids: str) -> dict[str, ErrorCode]:
    errors, fx = shell.coordinator.delete_groups(group_ids)
    shell.apply(fx)
    return errors


def shell_in_state(state: GroupState) -> FakeShell:
    """A shell whose group GROUP is in `state` (with an offset committed)."""
    shell = FakeShell()
    if state is GroupState.EMPTY:
        (a,), generation = form_group(shell, "a")
        shell.commit({TP("orders", 0): 1}, generation=generation, member_id=a)
        shell.leave(LeavingMember(a))
    elif state is GroupState.PREPARING_REBALANCE:
        form_group(shell, "a", "b")
        shell.leave(LeavingMember("a-uuid1"))
    elif state is GroupState.COMPLETING_REBALANCE:
        shell.join_new("a")
        shell.advance(0)
    else:
        form_group(shell, "a")
    shell.complete_appends()
    assert shell.coordinator.group(GROUP).state is state
    return shell


def test_an_empty_group_is_deleted_with_its_offsets():
    shell = shell_in_state(GroupState.EMPTY)
    assert delete(shell, GROUP) == {GROUP: NONE}
    assert shell.coordinator.group(GROUP) is None
    keys = [(decode_key(key), value) for key, value in shell.complete_appends()]
    assert keys == [(OffsetCommitKey(GROUP, "orders", 0), None), (GroupMetadataKey(GROUP), None)]
    assert delete(shell, GROUP) == {GROUP: ErrorCode.GROUP_ID_NOT_FOUND}  # Dead: gone


def test_groups_with_members_are_not_deleted():
    for state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        shell = shell_in_state(state)
        assert delete(shell, GROUP) == {GROUP: ErrorCode.NON_EMPTY_GROUP}, state
        assert shell.coordinator.group(GROUP).state is state
        assert not shell.pending_appends


def test_deleting_unknown_groups_and_groups_led_elsewhere():
    shell = FakeShell()
    assert delete(shell, "nope", "") == {"nope": ErrorCode.GROUP_ID_NOT_FOUND, "": ErrorCode.GROUP_ID_NOT_FOUND}
    assert delete(FakeShell(own=False), GROUP) == {GROUP: ErrorCode.NOT_COORDINATOR}


def test_a_group_that_only_committed_offsets_is_deleted_without_a_group_tombstone():
    shell = FakeShell()
    shell.commit({TP("orders", 0): 1})
    shell.complete_appends()
    assert delete(shell, GROUP) == {GROUP: NONE}
    assert [(decode_key(k), v) for k, v in shell.complete_appends()] == [(OffsetCommitKey(GROUP, "orders", 0), None)]


def test_a_stable_group_is_described_with_its_members_metadata_and_assignments():
    shell = FakeShell()
    (a, b), _ = form_group(shell, "a", "b")
    [described] = shell.coordinator.describe([GROUP])
    assert described == GroupDescription(GROUP, NONE, "Stable", "consumer", "range", (
        MemberDescription(a, None, "a", "/127.0.0.1", RANGE[0][1], a.encode()),
        MemberDescription(b, None, "b", "/127.0.0.1", RANGE[0][1], b.encode()),
    ))


def test_a_rebalancing_group_is_described_without_protocol_metadata_or_assignments():
    shell = shell_in_state(GroupState.PREPARING_REBALANCE)
    [described] = shell.coordinator.describe([GROUP])
    assert described == GroupDescription(GROUP, NONE, "PreparingRebalance", "consumer", "", (
        MemberDescription("b-uuid2", None, "b", "/127.0.0.1", b"", b""),))


def test_unknown_groups_are_described_as_dead():
    shell = FakeShell()
    assert shell.coordinator.describe(["nope", ""]) == [GroupDescription("nope", NONE, "Dead"),
                                                       GroupDescription("", NONE, "Dead")]
    assert FakeShell(own=False).coordinator.describe([GROUP]) == [GroupDescription(GROUP, ErrorCode.NOT_COORDINATOR)]


def test_groups_are_listed_with_their_states_and_filtered():
    shell = FakeShell()
    form_group(shell, "a")
    form_group(shell, "b", group="other")
    shell.commit({TP("orders", 0): 1}, group="simple")
    shell.complete_appends()
    listing = shell.coordinator.list_groups()
    assert listing == ListGroupsResult(NONE, (GroupListing(GROUP, "consumer", "Stable"),
                                              GroupListing("other", "consumer", "Stable"),
                                              GroupListing("simple", "", "Empty")))
    assert [g.group_id for g in shell.coordinator.list_groups(states=["empty"]).groups] == ["simple"]
    assert [g.group_id for g in shell.coordinator.list_groups(states=["STABLE", "Dead"]).groups] == [GROUP, "other"]
    assert len(shell.coordinator.list_groups(types=["Classic"]).groups) == 3
    assert shell.coordinator.list_groups(types=["consumer"]).groups == ()


def test_listing_while_a_partition_loads():
    shell = FakeShell()
    shell.coordinator.begin_loading(partition_for("elsewhere", NO_DELAY.offsets_topic_partitions))
    assert shell.coordinator.list_groups().error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
