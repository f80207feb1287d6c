"""The console's picture of a consumer group: each partition's committed offset, log end offset, lag and member,
as consumer-groups --describe gives them, and the group's total lag."""

from __future__ import annotations

from client.console.groups import group_json
from client.group.descriptions import GroupDescription, MemberDescription
from protocol.apis.groups import Coordinator
from protocol.topic_partition import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def described(*members: MemberDescription, state: str = "Stable") -> GroupDescription:
    coordinator = Coordinator(key="readers", node_id=1, host="h", port=1)
    return GroupDescription("readers", state, "consumer", "range", members, coordinator)


def test_a_group_shows_each_partitions_lag_and_member_and_their_sum():
    member = MemberDescription("m-1", None, "client", "/127.0.0.1", (A0, A1))
    shown = group_json(described(member), {A0: 5, A1: 7, B0: 2}, {A0: 9, A1: 7, B0: 2})
    assert shown == {"state": "Stable", "members": 1, "lag": 4, "partitions": [
        {"topic": "a", "partition": 0, "committed": 5, "log_end": 9, "lag": 4, "member": "m-1"},
        {"topic": "a", "partition": 1, "committed": 7, "log_end": 7, "lag": 0, "member": "m-1"},
        {"topic": "b", "partition": 0, "committed": 2, "log_end": 2, "lag": 0, "member": None},
    ]}


def test_an_assigned_partition_without_a_commit_has_no_lag_and_adds_none():
    member = MemberDescription("m-1", None, "client", "/127.0.0.1", (A0,))
    shown = group_json(described(member), {}, {A0: 9})
    assert shown["lag"] == 0
    assert shown["partitions"] == [{"topic": "a", "partition": 0, "committed": None, "log_end": 9, "lag": None,
                                    "member": "m-1"}]
