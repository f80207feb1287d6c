"""Apache Kafka 3.9.1's own assignments for the assignors' unit tests (tests/unit/test_assignors.py).

Made once by small Java programs compiled with javac against build/kafka/libs/* (Kafka 3.9.1's jars), which are not
kept. For each case of CASES: each member's Subscription (its topics, its group.instance.id set with
setGroupInstanceId), and RangeAssignor's and RoundRobinAssignor's assign(partitionsPerTopic, subscriptions) with the
partition counts of the subscribed topics Kafka's leader knows (a subscribed topic missing from the case's counts is
one without metadata). For each case of STICKY_CASES, as Kafka's consumers subscribe: for StickyAssignor, a
Subscription whose user data is StickyAssignor.serializeTopicPartitionAssignment of the owned partitions and
generation (none for a member never in a generation), with no owned partitions and that generation (-1 if none); for
CooperativeStickyAssignor, a Subscription with the owned partitions, the generation (-1 if none) and the generation
as its user data (an int32); then assign(partitionsPerTopic, subscriptions), CooperativeStickyAssignor's through
assignPartitions, which holds back the partitions moving from one member to another. KAFKA and KAFKA_STICKY hold
each member's partitions as "topic-partition" strings, sorted. Java's HashMap order decides some of these (which
members keep one partition more than others, in "over_quota_ties_follow_hash_order").
STICKY_USER_DATA: StickyAssignor.serializeTopicPartitionAssignment of orders-0 and orders-2 in generation 5;
COOPERATIVE_USER_DATA: CooperativeStickyAssignor.subscriptionUserData after onAssignment in generation 7.
"""

from __future__ import annotations

STICKY_USER_DATA = "0000000100066f726465727300000002000000000000000200000005"
COOPERATIVE_USER_DATA = "00000007"

#: (case, partitions per known topic, members: (member id, group.instance.id, subscribed topics))
CASES: list[tuple[str, dict[str, int], list[tuple[str, str | None, list[str]]]]] = [
    ("one_member", {"t": 3}, [
        ("m1", None, ["t"]),
    ]),
    ("two_members_uneven", {"t": 3}, [
        ("m1", None, ["t"]), ("m2", None, ["t"]),
    ]),
    ("three_members_two_topics", {"t1": 3, "t2": 5}, [
        ("c", None, ["t1", "t2"]), ("a", None, ["t1", "t2"]), ("b", None, ["t1", "t2"]),
    ]),
    ("different_subscriptions", {"t1": 3, "t2": 4}, [
        ("m1", None, ["t1"]), ("m2", None, ["t1", "t2"]), ("m3", None, ["t2"]),
    ]),
    ("more_members_than_partitions", {"t": 2}, [
        ("m1", None, ["t"]), ("m2", None, ["t"]), ("m3", None, ["t"]), ("m4", None, ["t"]),
    ]),
    ("static_members_first", {"t": 5}, [
        ("m-a", "z", ["t"]), ("m-b", "a", ["t"]), ("m-c", None, ["t"]), ("m-0", None, ["t"]),
    ]),
    ("member_ids_sort_as_strings", {"t": 7}, [
        ("consumer-10", None, ["t"]), ("consumer-9", None, ["t"]), ("consumer-1", None, ["t"]),
    ]),
    ("many_members_mixed", {"orders": 7, "payments": 11, "audit": 2}, [
        ("member-0", None, ["orders", "payments"]), ("member-1", None, ["orders", "audit"]),
        ("member-2", None, ["payments", "audit"]), ("member-3", None, ["orders", "payments"]),
        ("member-4", None, ["orders", "audit"]), ("member-5", None, ["payments", "audit"]),
        ("member-6", None, ["orders", "payments"]), ("member-7", None, ["orders", "audit"]),
        ("member-8", None, ["payments", "audit"]), ("member-9", None, ["orders", "payments"]),
    ]),
    ("topic_without_metadata", {"known": 4}, [
        ("m1", None, ["known", "unknown"]), ("m2", None, ["unknown"]),
    ]),
]

KAFKA: dict[str, dict[str, dict[str, list[str]]]] = {
    "one_member": {
        "range": {"m1": ["t-0", "t-1", "t-2"]},
        "roundrobin": {"m1": ["t-0", "t-1", "t-2"]},
    },
    "two_members_uneven": {
        "range": {"m1": ["t-0", "t-1"], "m2": ["t-2"]},
        "roundrobin": {"m1": ["t-0", "t-2"], "m2": ["t-1"]},
    },
    "three_members_two_topics": {
        "range": {"a": ["t1-0", "t2-0", "t2-1"], "b": ["t1-1", "t2-2", "t2-3"], "c": ["t1-2", "t2-4"]},
        "roundrobin": {"a": ["t1-0", "t2-0", "t2-3"], "b": ["t1-1", "t2-1", "t2-4"], "c": ["t1-2", "t2-2"]},
    },
    "different_subscriptions": {
        "range": {"m1": ["t1-0", "t1-1"], "m2": ["t1-2", "t2-0", "t2-1"], "m3": ["t2-2", "t2-3"]},
        "roundrobin": {"m1": ["t1-0", "t1-2"], "m2": ["t1-1", "t2-0", "t2-2"], "m3": ["t2-1", "t2-3"]},
    },
    "more_members_than_partitions": {
        "range": {"m1": ["t-0"], "m2": ["t-1"], "m3": [], "m4": []},
        "roundrobin": {"m1": ["t-0"], "m2": ["t-1"], "m3": [], "m4": []},
    },
    "static_members_first": {
        "range": {"m-0": ["t-3"], "m-a": ["t-2"], "m-b": ["t-0", "t-1"], "m-c": ["t-4"]},
        "roundrobin": {"m-0": ["t-2"], "m-a": ["t-1"], "m-b": ["t-0", "t-4"], "m-c": ["t-3"]},
    },
    "member_ids_sort_as_strings": {
        "range": {"consumer-1": ["t-0", "t-1", "t-2"], "consumer-10": ["t-3", "t-4"], "consumer-9": ["t-5", "t-6"]},
        "roundrobin": {
            "consumer-1": ["t-0", "t-3", "t-6"],
            "consumer-10": ["t-1", "t-4"],
            "consumer-9": ["t-2", "t-5"],
        },
    },
    "many_members_mixed": {
        "range": {
            "member-0": ["orders-0", "payments-0", "payments-1"],
            "member-1": ["audit-0", "orders-1"],
            "member-2": ["audit-1", "payments-2", "payments-3"],
            "member-3": ["orders-2", "payments-4", "payments-5"],
            "member-4": ["orders-3"],
            "member-5": ["payments-6", "payments-7"],
            "member-6": ["orders-4", "payments-8"],
            "member-7": ["orders-5"],
            "member-8": ["payments-9"],
            "member-9": ["orders-6", "payments-10"],
        },
        "roundrobin": {
            "member-0": ["orders-5", "payments-6"],
            "member-1": ["audit-0", "orders-6"],
            "member-2": ["audit-1", "payments-0", "payments-7"],
            "member-3": ["orders-0", "payments-1", "payments-8"],
            "member-4": ["orders-1"],
            "member-5": ["payments-2", "payments-9"],
            "member-6": ["orders-2", "payments-10", "payments-3"],
            "member-7": ["orders-3"],
            "member-8": ["payments-4"],
            "member-9": ["orders-4", "payments-5"],
        },
    },
    "topic_without_metadata": {
        "range": {"m1": ["known-0", "known-1", "known-2", "known-3"], "m2": []},
        "roundrobin": {"m1": ["known-0", "known-1", "known-2", "known-3"], "m2": []},
    },
}

#: (case, partitions per known topic, members: (member id, subscribed topics, partitions owned in the last
#: generation as "topic-partition", that generation or None for a member never in one))
STICKY_CASES: list[tuple[str, dict[str, int], list[tuple[str, list[str], list[str], int | None]]]] = [
    ("fresh_equal", {"t1": 3, "t2": 3}, [
        ("c", ["t1", "t2"], [], None),
        ("a", ["t1", "t2"], [], None),
        ("b", ["t1", "t2"], [], None),
    ]),
    ("member_left", {"t1": 3, "t2": 3}, [
        ("a", ["t1", "t2"], ["t1-0", "t2-1"], 1),
        ("b", ["t1", "t2"], ["t1-1", "t2-2"], 1),
    ]),
    ("member_joined", {"t": 6}, [
        ("a", ["t"], ["t-0", "t-1", "t-2"], 2),
        ("b", ["t"], ["t-3", "t-4", "t-5"], 2),
        ("c", ["t"], [], None),
    ]),
    ("over_quota_ties_follow_hash_order", {"t": 6}, [
        ("consumer-1", ["t"], ["t-0", "t-1"], 4),
        ("consumer-2", ["t"], ["t-2", "t-3"], 4),
        ("consumer-3", ["t"], ["t-4", "t-5"], 4),
        ("consumer-10", ["t"], [], None),
    ]),
    ("claimed_twice_same_generation", {"t": 4}, [
        ("a", ["t"], ["t-0", "t-1"], 3),
        ("b", ["t"], ["t-1", "t-2", "t-3"], 3),
    ]),
    ("claimed_twice_newer_generation_wins", {"t": 4}, [
        ("a", ["t"], ["t-0", "t-1", "t-2"], 2),
        ("b", ["t"], ["t-2", "t-3"], 3),
        ("c", ["t"], [], None),
    ]),
    ("more_members_than_partitions", {"t": 2}, [
        ("m1", ["t"], [], None),
        ("m2", ["t"], [], None),
        ("m3", ["t"], [], None),
    ]),
    ("fresh_different_subscriptions", {"t1": 3, "t2": 4, "t3": 2}, [
        ("m1", ["t1"], [], None),
        ("m2", ["t1", "t2"], [], None),
        ("m3", ["t2", "t3"], [], None),
        ("m4", ["t1", "t2", "t3"], [], None),
    ]),
    ("different_subscriptions_with_owners", {"t1": 4, "t2": 4}, [
        ("m1", ["t1", "t2"], ["t1-0", "t1-1", "t1-2", "t2-0", "t2-1"], 5),
        ("m2", ["t2"], ["t2-2", "t2-3"], 5),
        ("m3", ["t1", "t2"], [], None),
    ]),
    ("unsubscribed_topic_dropped", {"t1": 2, "t2": 2}, [
        ("m1", ["t1"], ["t1-0", "t2-0", "t2-1"], 7),
        ("m2", ["t1", "t2"], ["t1-1"], 7),
    ]),
    ("older_generation_owner_preferred", {"t1": 3, "t2": 3}, [
        ("m1", ["t1", "t2"], ["t1-0", "t1-1", "t1-2", "t2-0"], 6),
        ("m2", ["t2"], ["t2-1", "t2-2"], 6),
        ("m3", ["t1"], ["t1-1"], 4),
    ]),
    ("many_members_mixed", {"orders": 7, "payments": 11, "audit": 2}, [
        ("member-0", ["orders", "payments"], [], None),
        ("member-1", ["orders", "audit"], [], None),
        ("member-2", ["payments", "audit"], [], None),
        ("member-3", ["orders", "payments"], [], None),
        ("member-4", ["orders", "audit"], [], None),
        ("member-5", ["payments", "audit"], [], None),
        ("member-6", ["orders", "payments"], [], None),
        ("member-7", ["orders", "audit"], [], None),
        ("member-8", ["payments", "audit"], [], None),
        ("member-9", ["orders", "payments"], [], None),
    ]),
]

KAFKA_STICKY: dict[str, dict[str, dict[str, list[str]]]] = {
    "fresh_equal": {
        "sticky": {"a": ["t1-0", "t2-0"], "b": ["t1-1", "t2-1"], "c": ["t1-2", "t2-2"]},
        "cooperative-sticky": {"a": ["t1-0", "t2-0"], "b": ["t1-1", "t2-1"], "c": ["t1-2", "t2-2"]},
    },
    "member_left": {
        "sticky": {"a": ["t1-0", "t1-2", "t2-1"], "b": ["t1-1", "t2-0", "t2-2"]},
        "cooperative-sticky": {"a": ["t1-0", "t1-2", "t2-1"], "b": ["t1-1", "t2-0", "t2-2"]},
    },
    "member_joined": {
        "sticky": {"a": ["t-0", "t-1"], "b": ["t-3", "t-4"], "c": ["t-2", "t-5"]},
        "cooperative-sticky": {"a": ["t-0", "t-1"], "b": ["t-3", "t-4"], "c": []},
    },
    "over_quota_ties_follow_hash_order": {
        "sticky": {
            "consumer-1": ["t-0"],
            "consumer-10": ["t-1"],
            "consumer-2": ["t-2", "t-3"],
            "consumer-3": ["t-4", "t-5"],
        },
        "cooperative-sticky": {
            "consumer-1": ["t-0"],
            "consumer-10": [],
            "consumer-2": ["t-2", "t-3"],
            "consumer-3": ["t-4", "t-5"],
        },
    },
    "claimed_twice_same_generation": {
        "sticky": {"a": ["t-0", "t-1"], "b": ["t-2", "t-3"]},
        "cooperative-sticky": {"a": ["t-0"], "b": ["t-2", "t-3"]},
    },
    "claimed_twice_newer_generation_wins": {
        "sticky": {"a": ["t-0", "t-1"], "b": ["t-2"], "c": ["t-3"]},
        "cooperative-sticky": {"a": ["t-0", "t-1"], "b": ["t-2"], "c": []},
    },
    "more_members_than_partitions": {
        "sticky": {"m1": ["t-0"], "m2": ["t-1"], "m3": []},
        "cooperative-sticky": {"m1": ["t-0"], "m2": ["t-1"], "m3": []},
    },
    "fresh_different_subscriptions": {
        "sticky": {
            "m1": ["t1-0", "t1-2"],
            "m2": ["t1-1", "t2-0", "t2-3"],
            "m3": ["t2-1", "t3-0"],
            "m4": ["t2-2", "t3-1"],
        },
        "cooperative-sticky": {
            "m1": ["t1-0", "t1-2"],
            "m2": ["t1-1", "t2-0", "t2-3"],
            "m3": ["t2-1", "t3-0"],
            "m4": ["t2-2", "t3-1"],
        },
    },
    "different_subscriptions_with_owners": {
        "sticky": {"m1": ["t1-2", "t2-0", "t2-1"], "m2": ["t2-2", "t2-3"], "m3": ["t1-0", "t1-1", "t1-3"]},
        "cooperative-sticky": {"m1": ["t1-2", "t2-0", "t2-1"], "m2": ["t2-2", "t2-3"], "m3": ["t1-3"]},
    },
    "unsubscribed_topic_dropped": {
        "sticky": {"m1": ["t1-0", "t1-1"], "m2": ["t2-0", "t2-1"]},
        "cooperative-sticky": {"m1": ["t1-0"], "m2": []},
    },
    "older_generation_owner_preferred": {
        "sticky": {"m1": ["t1-2", "t2-0"], "m2": ["t2-1", "t2-2"], "m3": ["t1-0", "t1-1"]},
        "cooperative-sticky": {"m1": ["t1-2", "t2-0"], "m2": ["t2-1", "t2-2"], "m3": ["t1-1"]},
    },
    "many_members_mixed": {
        "sticky": {
            "member-0": ["orders-6", "payments-8"],
            "member-1": ["audit-0", "audit-1"],
            "member-2": ["payments-2", "payments-9"],
            "member-3": ["payments-10", "payments-3"],
            "member-4": ["orders-0", "orders-2"],
            "member-5": ["payments-0", "payments-4"],
            "member-6": ["orders-3", "payments-5"],
            "member-7": ["orders-1", "orders-4"],
            "member-8": ["payments-1", "payments-6"],
            "member-9": ["orders-5", "payments-7"],
        },
        "cooperative-sticky": {
            "member-0": ["orders-6", "payments-8"],
            "member-1": ["audit-0", "audit-1"],
            "member-2": ["payments-2", "payments-9"],
            "member-3": ["payments-10", "payments-3"],
            "member-4": ["orders-0", "orders-2"],
            "member-5": ["payments-0", "payments-4"],
            "member-6": ["orders-3", "payments-5"],
            "member-7": ["orders-1", "orders-4"],
            "member-8": ["payments-1", "payments-6"],
            "member-9": ["orders-5", "payments-7"],
        },
    },
}
