"""The consumer protocol's subscription and assignment (protocol/consumer_protocol.py), byte for byte as Kafka's.

The expected bytes were produced once by Kafka 3.9.1's own ConsumerProtocol.serializeSubscription and
serializeAssignment at each version, from a small Java program compiled with javac against build/kafka/libs/*:
subscription topics [t2, t1], user data 010203, owned partitions [t2-1, t1-3, t1-0], generation 9, rack "rack-1";
assignment [t2-4, t1-1, t2-0] with user data 09.
"""

from __future__ import annotations

import pytest

from protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscribed_topics,
)
from protocol.kafka.data import DataFormatError
from protocol.topic_partition import TopicPartition as TP

SUBSCRIPTION = Subscription(("t2", "t1"), b"\x01\x02\x03", (TP("t2", 1), TP("t1", 3), TP("t1", 0)), 9, "rack-1")
SUBSCRIPTIONS = {
    0: "000000000002000274310002743200000003010203",
    1: "0001000000020002743100027432000000030102030000000200027431000000020000000000000003000274320000000100000001",
    2: "000200000002000274310002743200000003010203000000020002743100000002000000000000000300027432000000010000000100"
       "000009",
    3: "00030000000200027431000274320000000301020300000002000274310000000200000000000000030002743200000001000000010000"
       "000900067261636b2d31",
}
PLAIN_SUBSCRIPTION_V3 = "00030000000100066f7264657273ffffffff00000000ffffffffffff"  # ["orders"], nothing else
ASSIGNMENT = Assignment((TP("t2", 4), TP("t1", 1), TP("t2", 0)), b"\x09")
ASSIGNMENT_BODY = "00000002000274320000000200000004000000000002743100000001000000010000000109"
GROUPED_BY_TOPIC = Assignment((TP("t2", 4), TP("t2", 0), TP("t1", 1)), b"\x09")
PLAIN_ASSIGNMENT_V3 = "00030000000100066f72646572730000000100000002ffffffff"  # [orders-2], no user data


def _kept(version: int) -> Subscription:
    """What a subscription of `version` keeps of SUBSCRIPTION (sorted, as Kafka writes it)."""
    return Subscription(
        ("t1", "t2"), b"\x01\x02\x03",
        (TP("t1", 0), TP("t1", 3), TP("t2", 1)) if version >= 1 else (),
        9 if version >= 2 else -1,
        "rack-1" if version >= 3 else None)


@pytest.mark.parametrize("version", sorted(SUBSCRIPTIONS))
def test_subscription_of_every_version_is_kafkas(version):
    assert encode_subscription(SUBSCRIPTION, version).hex() == SUBSCRIPTIONS[version]
    assert decode_subscription(bytes.fromhex(SUBSCRIPTIONS[version])) == _kept(version)


def test_plain_subscription_and_its_topics():
    data = bytes.fromhex(PLAIN_SUBSCRIPTION_V3)
    assert encode_subscription(Subscription(("orders",))) == data
    assert decode_subscription(data) == Subscription(("orders",))
    assert subscribed_topics(data) == ("orders",)
    for hexed in SUBSCRIPTIONS.values():
        assert subscribed_topics(bytes.fromhex(hexed)) == ("t1", "t2")


def test_a_newer_subscription_version_is_read_as_the_newest_known():
    newer = bytes.fromhex("0007" + SUBSCRIPTIONS[3][4:] + "ffffffff")  # v7, with a field added at the end
    assert decode_subscription(newer) == _kept(3)


def test_an_empty_rack_is_no_rack():
    data = encode_subscription(Subscription(("t",), rack_id=""))
    assert decode_subscription(data).rack_id is None


@pytest.mark.parametrize("version", range(4))
def test_assignment_of_every_version_is_kafkas(version):
    expected = f"{version:04x}" + ASSIGNMENT_BODY
    assert encode_assignment(ASSIGNMENT, version).hex() == expected
    assert decode_assignment(bytes.fromhex(expected)) == GROUPED_BY_TOPIC


def test_plain_assignment():
    data = bytes.fromhex(PLAIN_ASSIGNMENT_V3)
    assert encode_assignment(Assignment((TP("orders", 2),))) == data
    assert decode_assignment(data) == Assignment((TP("orders", 2),))


@pytest.mark.parametrize("data", ["", "00", "ffff0000", "0000000000010002", PLAIN_ASSIGNMENT_V3[:-10]])
def test_bad_assignments_are_refused(data):
    with pytest.raises(DataFormatError):
        decode_assignment(bytes.fromhex(data))


@pytest.mark.parametrize("data", ["", "0000", "ffff00000000", "000000000001ffff", PLAIN_SUBSCRIPTION_V3[:-6]])
def test_bad_subscriptions_are_refused(data):
    with pytest.raises(DataFormatError):
        decode_subscription(bytes.fromhex(data))


def test_versions_kafka_does_not_have_are_not_written():
    with pytest.raises(ValueError):
        encode_subscription(SUBSCRIPTION, 4)
    with pytest.raises(ValueError):
        encode_assignment(ASSIGNMENT, -1)
