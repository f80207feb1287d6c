"""What the codecs written by hand share: the Produce and Fetch paths (protocol.apis.produce and .fetch) decode
requests straight into the broker's request objects and encode responses straight from its response objects, with
record batches passed through as bytes, field for field what codec.py does from the specs (tests check the two
against each other)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

from protocol.kafka.primitives import INT16, INT32, Buffer, KafkaDecodeError, array_count, read_string

NULL_ARRAY = b"\xff\xff\xff\xff"
EMPTY_ARRAY = b"\x00\x00\x00\x00"
NULL_STRING = b"\xff\xff"
P = TypeVar("P")
T = TypeVar("T")


def guarded(decode: Callable[[memoryview, int, int], Any], what: str) -> Callable[[Buffer, int, int], Any]:
    """`decode` over a memoryview of the payload; a message that ends early is a KafkaDecodeError."""

    def guarded(buf: Buffer, pos: int, version: int) -> Any:
        try:
            return decode(memoryview(buf), pos, version)
        except struct.error:
            raise KafkaDecodeError(f"{what} v{version}: the message ends early") from None

    return guarded


def read_topics(buf: memoryview, pos: int, read_partition: Callable[[int], tuple[P, int]],
                topic: Callable[..., T]) -> tuple[list[T], int]:
    """An array of topics, each a name and an array of partitions read by `read_partition`, made into
    `topic(name=..., partitions=...)`."""
    topic_count, pos = array_count(buf, pos)
    topics = []
    for _ in range(topic_count):
        name, pos = read_string(buf, pos)
        partition_count, pos = array_count(buf, pos)
        partitions = []
        for _ in range(partition_count):
            partition, pos = read_partition(pos)
            partitions.append(partition)
        topics.append(topic(name=name, partitions=partitions))
    return topics, pos


def write_topic_head(out: bytearray, name: str, partition_count: int) -> None:
    """A response topic's name and its partition count."""
    encoded_name = name.encode()
    out += INT16.pack(len(encoded_name))
    out += encoded_name
    out += INT32.pack(partition_count)
