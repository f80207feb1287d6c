"""Kafka's consumer protocol: the bytes a consumer puts in JoinGroup as its subscription (the metadata of each
assignor it offers) and the bytes the leader hands each member in SyncGroup as its assignment.

Both start with an int16 version. Subscription v0 is the topics and user data; v1 adds the partitions the member
owns, v2 its generation, v3 its rack. Assignment v0-v3 are the same: the assigned partitions by topic and user
data. As Kafka's ConsumerProtocol, a newer version than v3 is read as v3 (versions only ever add fields at the end).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from protocol.kafka import data
from protocol.kafka.data import DataFormatError
from protocol.topic_partition import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"
SUBSCRIPTION = "ConsumerProtocolSubscription"
ASSIGNMENT = "ConsumerProtocolAssignment"
HIGHEST_VERSION = data.versions(SUBSCRIPTION).high
NO_GENERATION = -1


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = NO_GENERATION
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


def _version(buf: bytes, name: str) -> int:
    """The version to read `buf` at: its own, a newer one as the newest known."""
    version = data.read_version(buf)
    if version < 0:
        raise DataFormatError(f"unsupported {name} version {version}")
    return min(version, data.versions(name).high)


def _by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """Partitions grouped by topic, topics in order of first appearance, partitions in the order given."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": topic, "partitions": numbers} for topic, numbers in by_topic.items()]


def _flattened(topics: list[dict[str, Any]]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t["topic"], p) for t in topics for p in t["partitions"])


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """As Kafka's ConsumerProtocol.serializeSubscription: topics sorted, owned partitions sorted."""
    return data.encode(SUBSCRIPTION, version, {
        "topics": sorted(subscription.topics), "user_data": subscription.user_data,
        "owned_partitions": _by_topic(sorted(subscription.owned_partitions)),
        "generation_id": subscription.generation_id, "rack_id": subscription.rack_id})


def decode_subscription(buf: bytes) -> Subscription:
    """A subscription of any version; DataFormatError for bytes that do not hold one. An empty rack is none."""
    fields = data.decode(SUBSCRIPTION, _version(buf, SUBSCRIPTION), buf)
    return Subscription(tuple(fields["topics"]), fields["user_data"], _flattened(fields["owned_partitions"]),
                        fields["generation_id"], fields["rack_id"] or None)


def subscribed_topics(buf: bytes) -> tuple[str, ...]:
    """The topics of a subscription of any version, read as v0 (the prefix of every version), as Kafka's group
    coordinator does to know what a consumer group consumes."""
    _version(buf, SUBSCRIPTION)
    return tuple(data.decode(SUBSCRIPTION, 0, buf)["topics"])


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """As Kafka's ConsumerProtocol.serializeAssignment."""
    return data.encode(ASSIGNMENT, version, {"assigned_partitions": _by_topic(assignment.partitions),
                                             "user_data": assignment.user_data})


def decode_assignment(buf: bytes) -> Assignment:
    """An assignment of any version; DataFormatError for bytes that do not hold one."""
    fields = data.decode(ASSIGNMENT, _version(buf, ASSIGNMENT), buf)
    return Assignment(_flattened(fields["assigned_partitions"]), fields["user_data"])
