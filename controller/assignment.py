"""Pure rules for creating a topic: a legal name, and where its replicas go.

Replica assignment is Kafka's (AdminUtils.assignReplicasToBrokers without racks, from a fixed start): over the n
live brokers sorted by id, partition i's first replica (its preferred leader) is broker i mod n, as in seed 001,
and its followers come after it at a distance that shifts by one for every round of n partitions. Seed 001's
"replica j is broker (i + j) mod n" is the first round; the shift is what makes the partitions a broker leads have
different followers, so that when it fails its leaderships are spread over the others instead of all going to
the next broker. No two replicas of a partition are on one broker.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from typing import ClassVar

from protocol.errors import ErrorCode, KafkaError

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class TopicCreationError(KafkaError):
    """A topic that cannot be created as asked; `code` is the CreateTopics error for it."""

    error_code: ClassVar[ErrorCode]

    def __init__(self, message: str) -> None:
        super().__init__(self.error_code, message)


class InvalidTopicError(TopicCreationError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidPartitionsError(TopicCreationError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(TopicCreationError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(TopicCreationError):
    error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


def validate_topic_name(name: str) -> None:
    """Kafka's topic name rules: 1..249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {name}"
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise InvalidTopicError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'"
        )


def topics_collide(a: str, b: str) -> bool:
    """True if two distinct topic names would clash in metric names ('.' and '_' are interchangeable)."""
    return a != b and a.replace(".", "_") == b.replace(".", "_")


def assign_replicas(broker_ids: Iterable[int], num_partitions: int, replication_factor: int, *,
                    first_partition: int = 0) -> dict[int, list[int]]:
    """partition -> replicas (the first is the preferred leader) over the given live brokers, for partitions
    first_partition .. first_partition + num_partitions - 1 (added partitions are placed as in a topic created
    with that many partitions)."""
    brokers = sorted(set(broker_ids))
    if num_partitions < 1:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor < 1:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    n = len(brokers)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {n}."
        )
    added = range(first_partition, first_partition + num_partitions)
    return {i: _replicas(brokers, i, replication_factor) for i in added}


def _replicas(brokers: Sequence[int], partition: int, replication_factor: int) -> list[int]:
    """Kafka's replicaIndex: the first replica at partition mod n, follower j at 1 + (shift + j) mod (n - 1) after
    it, where the shift is the round (partition // n)."""
    n = len(brokers)
    first, shift = partition % n, partition // n
    return [brokers[first]] + [brokers[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(replication_factor - 1)]


def validate_replicas(partition: int, replicas: Sequence[int], live_broker_ids: Collection[int]) -> list[int]:
    """One partition's replica list checked as Kafka does, and on live brokers only."""
    if not replicas:
        raise InvalidReplicaAssignmentError(f"Partition {partition} has no replicas")
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignmentError(f"Duplicate replica assignment found: {partition}: {list(replicas)}")
    unknown = sorted(set(replicas) - set(live_broker_ids))
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"Partition {partition} is assigned to brokers that are not live: {unknown}"
        )
    return list(replicas)


def validate_assignment(
    assignments: Iterable[tuple[int, Sequence[int]]], live_broker_ids: Collection[int]
) -> dict[int, list[int]]:
    """An explicit assignment ((partition, replicas) pairs) checked as Kafka does, and on live brokers only."""
    result: dict[int, list[int]] = {}
    for partition, replicas in assignments:
        if partition in result:
            raise InvalidReplicaAssignmentError(f"Partition {partition} is assigned more than once")
        result[partition] = validate_replicas(partition, replicas, live_broker_ids)
    if not result:
        raise InvalidReplicaAssignmentError("The replica assignment is empty")
    if sorted(result) != list(range(len(result))):
        raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
    if len({len(replicas) for replicas in result.values()}) != 1:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    return dict(sorted(result.items()))
