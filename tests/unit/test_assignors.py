"""The partition assignors (client/assignors/) against Apache Kafka's own results for the same inputs
(tests/unit/kafka_assignor_vectors.py), and the rules every assignment keeps: each subscribed partition given to
exactly one member subscribed to its topic, every member named."""

from __future__ import annotations

import pytest

from client.assignors import ASSIGNORS, assignors
from client.assignors.base import Member
from protocol.consumer_protocol import Subscription
from tests.unit.kafka_assignor_vectors import CASES, KAFKA

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
