"""Apache Kafka 3.9.1's own assignments for the assignors' unit tests (tests/unit/test_assignors.py).

Made once by a small Java program compiled with javac against build/kafka/libs/* (Kafka 3.9.1's jars), which is not
kept: for each case of CASES it built each member's Subscription (its topics, its group.instance.id set with
setGroupInstanceId) and called RangeAssignor's and RoundRobinAssignor's assign(partitionsPerTopic, subscriptions)
with the partition counts of the subscribed topics Kafka's leader knows (a topic missing from PARTITIONS is one
without metadata). KAFKA holds each member's partitions as "topic-partition" strings, sorted.
"""

from __future__ import annotations

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
