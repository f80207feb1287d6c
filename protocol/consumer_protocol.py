"""Kafka's consumer protocol: the bytes a consumer puts in JoinGroup as its subscription (the metadata of each
assignor it offers) and the bytes the leader hands each member in SyncGroup as its assignment.

Both start with an int16 version. Subscription v0 is the topics and user data; v1 adds the partitions the member
owns, v2 its generation, v3 its rack. Assignment v0-v3 are the same: the assigned partitions by topic and user
data. As Kafka's ConsumerProtocol, a newer version than v3 is read as v3 (versions only ever add fields at the end).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from protocol.data_fields import DataFormatError, FieldReader, FieldWriter
from protocol.topic_partition import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"
HIGHEST_VERSION = 3
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


def _read_version(reader: FieldReader, what: str) -> int:
    version = reader.int16()
    if version < 0:
        raise DataFormatError(f"unsupported {what} version {version}")
    return min(version, HIGHEST_VERSION)


def _write_partitions(out: FieldWriter, partitions: Iterable[TopicPartition]) -> None:
    """Partitions grouped by topic, topics in order of first appearance, partitions in the order given."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out.array_count(len(by_topic))
    for topic, numbers in by_topic.items():
        out.string(topic)
        out.array_count(len(numbers))
        for number in numbers:
            out.int32(number)


def _read_partitions(reader: FieldReader) -> tuple[TopicPartition, ...]:
    partitions: list[TopicPartition] = []
    for _ in range(reader.array_count()):
        topic = reader.string()
        partitions.extend(TopicPartition(topic, reader.int32()) for _ in range(reader.array_count()))
    return tuple(partitions)


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """As Kafka's ConsumerProtocol.serializeSubscription: topics sorted, owned partitions sorted."""
    if not 0 <= version <= HIGHEST_VERSION:
        raise ValueError(f"no subscription version {version}")
    out = FieldWriter()
    out.int16(version)
    out.array_count(len(subscription.topics))
    for topic in sorted(subscription.topics):
        out.string(topic)
    out.binary(subscription.user_data)
    if version >= 1:
        _write_partitions(out, sorted(subscription.owned_partitions))
    if version >= 2:
        out.int32(subscription.generation_id)
    if version >= 3:
        out.string(subscription.rack_id)
    return out.getvalue()


def decode_subscription(data: bytes) -> Subscription:
    """A subscription of any version; DataFormatError for bytes that do not hold one. An empty rack is none."""
    reader = FieldReader(data)
    version = _read_version(reader, "subscription")
    topics = tuple(reader.string() for _ in range(reader.array_count()))
    user_data = reader.nullable_binary()
    owned = _read_partitions(reader) if version >= 1 else ()
    generation = reader.int32() if version >= 2 else NO_GENERATION
    rack = reader.nullable_string() if version >= 3 else None
    return Subscription(topics, user_data, owned, generation, rack or None)


def subscribed_topics(data: bytes) -> tuple[str, ...]:
    """The topics of a subscription of any version, read as v0 (the prefix of every version), as Kafka's group
    coordinator does to know what a consumer group consumes."""
    reader = FieldReader(data)
    _read_version(reader, "subscription")
    return tuple(reader.string() for _ in range(reader.array_count()))


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """As Kafka's ConsumerProtocol.serializeAssignment."""
    if not 0 <= version <= HIGHEST_VERSION:
        raise ValueError(f"no assignment version {version}")
    out = FieldWriter()
    out.int16(version)
    _write_partitions(out, assignment.partitions)
    out.binary(assignment.user_data)
    return out.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    """An assignment of any version; DataFormatError for bytes that do not hold one."""
    reader = FieldReader(data)
    _read_version(reader, "assignment")
    return Assignment(_read_partitions(reader), reader.nullable_binary())
