"""The protocol a group uses (broker/coordinator/group/protocol_choice.py): Kafka's selectProtocol, ties included.

The tie cases' winners were produced once by Kafka 3.9.1's own kafka.coordinator.group.GroupMetadata.selectProtocol,
from a small Java program compiled with javac against build/kafka/libs/* that added members offering these
protocols (in this order of preference) to a GroupMetadata.
"""

from __future__ import annotations

import pytest

from broker.coordinator.group.member import Member
from broker.coordinator.group.protocol_choice import candidate_protocols, scala_hash_map_order, select_protocol


def member(n: int, *protocols: str) -> Member:
    return Member(f"m{n}", None, "client", "/h", 30000, 10000, "consumer",
                  tuple((name, name.encode()) for name in protocols))


def members(*preferences: str) -> list[Member]:
    return [member(n, *p.split(",")) for n, p in enumerate(preferences)]


@pytest.mark.parametrize(("preferences", "kafka_choice"), [
    (("range,roundrobin", "roundrobin,range"), "roundrobin"),
    (("roundrobin,range", "range,roundrobin"), "roundrobin"),
    (("range,cooperative-sticky", "cooperative-sticky,range"), "cooperative-sticky"),
    (("a,b,c", "b,c,a", "c,a,b"), "a"),
    (("sticky,range,roundrobin,cooperative-sticky", "range,sticky,roundrobin,cooperative-sticky",
      "roundrobin,sticky,range,cooperative-sticky", "cooperative-sticky,sticky,range,roundrobin"),
     "cooperative-sticky"),
    (("p1,p2", "p2,p1"), "p2"),
    (("p2,p1", "p1,p2", "p1,p2"), "p1"),
    (("x,y,only", "only,y", "y,only"), "y"),
])
def test_protocol_choice_is_kafkas(preferences, kafka_choice):
    assert select_protocol(members(*preferences)) == kafka_choice


def test_the_most_votes_win_among_protocols_every_member_offers():
    group = members("roundrobin,range", "range", "cooperative-sticky,range,roundrobin")
    assert candidate_protocols(group) == {"range"}
    assert select_protocol(group) == "range"
    assert select_protocol(members("b,a", "b,a", "a,b")) == "b"


def test_ties_follow_the_scala_hash_map_order():
    assert scala_hash_map_order(["range", "roundrobin"]) == ["roundrobin", "range"]
    assert scala_hash_map_order(["a", "b", "c"]) == ["a", "b", "c"]
    many = [f"assignor-{i}" for i in range(100)]  # deep enough to share hash fragments
    assert sorted(scala_hash_map_order(many)) == sorted(many)


def test_no_protocol_for_a_group_without_members():
    with pytest.raises(ValueError):
        select_protocol([])
    assert candidate_protocols([]) == set()


def test_a_member_votes_for_its_first_preference_and_matches_only_identical_protocols():
    m = member(1, "sticky", "range")
    assert m.vote({"range", "sticky"}) == "sticky"
    assert m.vote({"range"}) == "range"
    with pytest.raises(ValueError):
        m.vote({"roundrobin"})
    assert m.matches((("sticky", b"sticky"), ("range", b"range")))
    assert not m.matches((("range", b"range"), ("sticky", b"sticky")))
    assert not m.matches((("sticky", b"other"), ("range", b"range")))
    assert m.metadata("range") == b"range"
    with pytest.raises(KeyError):
        m.metadata("roundrobin")
