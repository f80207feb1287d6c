"""The partition assignors (client/assignors/) against Apache Kafka's own results for the same inputs
(tests/unit/kafka_assignor_vectors.py), the sticky assignors' user data against Kafka's bytes, Java's hash order,
and the rules every assignment keeps: each subscribed partition given to exactly one member subscribed to its topic,
every member named."""

from __future__ import annotations

import struct

import pytest

from client.assignors import ASSIGNORS, assignors
from client.assignors.base import Member
from client.assignors.java_order import JavaHashSet, hash_map_order, string_hash, topic_partition_hash
from client.assignors.sticky import (
    CooperativeStickyAssignor,
    StickyAssignor,
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from client.assignors.sticky_core import MemberData
from protocol.consumer_protocol import Assignment, Subscription
from protocol.topic_partition import TopicPartition as TP
from tests.unit.kafka_assignor_vectors import (
    CASES,
    COOPERATIVE_USER_DATA,
    KAFKA,
    KAFKA_STICKY,
    STICKY_CASES,
    STICKY_USER_DATA,
)

EXACT = ["range", "roundrobin"]


def members_of(case: list[tuple[str, str | None, list[str]]]) -> list[Member]:
    return [Member(member_id, Subscription(tuple(topics)), instance) for member_id, instance, topics in case]


def as_text(assignment: dict) -> dict[str, list[str]]:
    return {member: sorted(str(tp) for tp in tps) for member, tps in assignment.items()}


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize(("case", "partitions", "members"), CASES, ids=[c[0] for c in CASES])
def test_the_assignment_is_kafkas(name, case, partitions, members):
    [assignor] = assignors([name])
    assert as_text(assignor.assign(partitions, members_of(members))) == KAFKA[case][name]


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@pytest.mark.parametrize(("case", "partitions", "members"), CASES, ids=[c[0] for c in CASES])
def test_every_subscribed_partition_goes_to_one_subscribed_member(name, case, partitions, members):
    group = members_of(members)
    [assignor] = assignors([name])
    assignment = assignor.assign(partitions, group)
    assert set(assignment) == {m.member_id for m in group}
    given = [tp for tps in assignment.values() for tp in tps]
    assert len(given) == len(set(given))
    subscribed = {t for m in group for t in m.subscription.topics}
    assert {(tp.topic, tp.partition) for tp in given} == {
        (t, p) for t, count in partitions.items() if t in subscribed for p in range(count)}
    topics_of = {m.member_id: set(m.subscription.topics) for m in group}
    assert all(tp.topic in topics_of[member] for member, tps in assignment.items() for tp in tps)


def test_assignors_are_named_by_protocol_or_kafka_class_name():
    names = [a.name for a in assignors(["org.apache.kafka.clients.consumer.RoundRobinAssignor", " range "])]
    assert names == ["roundrobin", "range"]
    with pytest.raises(ValueError, match="unknown partition assignor 'fair'"):
        assignors(["fair"])


def tp(text: str) -> TP:
    topic, _, partition = text.rpartition("-")
    return TP(topic, int(partition))


def sticky_members(name: str, case: list) -> list[Member]:
    """The members of a sticky case as Kafka's consumers subscribe with each assignor."""
    members = []
    for member_id, topics, owned, generation in case:
        partitions = tuple(tp(p) for p in owned)
        g = -1 if generation is None else generation
        if name == "sticky":
            user_data = None if generation is None else encode_sticky_user_data(partitions, g)
            members.append(Member(member_id, Subscription(tuple(topics), user_data, (), g)))
        else:
            members.append(Member(member_id, Subscription(tuple(topics), struct.pack(">i", g), partitions, g)))
    return members


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize(("case", "partitions", "members"), STICKY_CASES, ids=[c[0] for c in STICKY_CASES])
def test_the_sticky_assignment_is_kafkas(name, case, partitions, members):
    [assignor] = assignors([name])
    known = {t: n for t, n in partitions.items() if any(t in m[1] for m in members)}
    assert as_text(assignor.assign(known, sticky_members(name, members))) == KAFKA_STICKY[case][name]


def test_the_sticky_assignors_user_data_is_kafkas():
    sticky = StickyAssignor()
    assert sticky.subscription_user_data(["orders"]) is None
    sticky.on_assignment(Assignment((TP("orders", 0), TP("orders", 2))), 5)
    assert sticky.subscription_user_data(["orders"]).hex() == STICKY_USER_DATA
    owned = (TP("orders", 0), TP("orders", 2))
    assert decode_sticky_user_data(bytes.fromhex(STICKY_USER_DATA)) == MemberData(owned, 5)
    assert decode_sticky_user_data(bytes.fromhex(STICKY_USER_DATA)[:-4]) == MemberData(owned, None)  # v0
    assert decode_sticky_user_data(b"\x00\x00") == MemberData((), -1)
    cooperative = CooperativeStickyAssignor()
    cooperative.on_assignment(Assignment(()), 7)
    assert cooperative.subscription_user_data(["orders"]).hex() == COOPERATIVE_USER_DATA


def test_java_hash_order():
    """Against what Java 17 answers for String.hashCode and prints for a HashMap's keys and a HashSet."""
    assert [string_hash(s) for s in ("", "a", "hello", "consumer-10")] == [0, 97, 99162322, -858448042]
    assert topic_partition_hash(TP("t", 0)) == 31 * 31 + 116
    assert hash_map_order(["BB", "Aa", "c"]) == ["BB", "Aa", "c"]  # "Aa" and "BB" share a hash code
    keys = [f"k{i}" for i in range(20)]
    assert hash_map_order(keys) == ["k0", "k1", "k2", "k3", "k4", "k5", "k11", "k6", "k10", "k7", "k13", "k8", "k12",
                                    "k9", "k15", "k14", "k17", "k16", "k19", "k18"]
    shrunk = JavaHashSet(string_hash, keys)
    for key in keys[:18]:
        shrunk.discard(key)
    assert list(shrunk) == ["k19", "k18"]
