"""`TopicPartition`: a partition of a topic, the key of everything kept per partition (logs and checkpoints, fetch
sessions, the controller's view, a producer's batches)."""

from __future__ import annotations

from typing import NamedTuple

from protocol.codec import Int32


class TopicPartition(NamedTuple):
    """A partition of a topic: hashable, ordered by topic then partition, equal to the plain ``(topic, partition)``
    tuple. It reads ``topic-partition`` (the name of its log directory) in text and logs, as Kafka's does. On the
    wire (a message field) it is the map {"topic", "partition"}."""

    topic: str
    partition: Int32

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    __repr__ = __str__
