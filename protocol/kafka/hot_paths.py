"""What the codecs written by hand share: the Produce and Fetch paths (protocol.apis.produce and .fetch) decode
requests straight into the broker's request objects and encode responses straight from its response objects, with
record batches passed through as bytes, field for field what codec.py does from the specs (tests check the two
against each other). Each takes the version's form: classic below the api's first flexible version, compact (with
tagged fields ending every struct) from it."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

from protocol.kafka.primitives import (
    INT16,
    INT32,
    Buffer,
    KafkaDecodeError,
    array_count,
    compact_array_count,
    read_compact_string,
    read_string,
    skip_tagged_fields,
    write_uvarint,
)

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
                topic: Callable[..., T], flexible: bool = False) -> tuple[list[T], int]:
    """An array of topics, each a name and an array of partitions read by `read_partition` (which reads a
    partition's own tagged fields), made into `topic(name=..., partitions=...)`."""
    count, name_of = (compact_array_count, read_compact_string) if flexible else (array_count, read_string)
    topic_count, pos = count(buf, pos)
    topics = []
    for _ in range(topic_count):
        name, pos = name_of(buf, pos)
        partition_count, pos = count(buf, pos)
        partitions = []
        for _ in range(partition_count):
            partition, pos = read_partition(pos)
            partitions.append(partition)
        if flexible:
            pos = skip_tagged_fields(buf, pos)
        topics.append(topic(name=name, partitions=partitions))
    return topics, pos


def write_count(out: bytearray, count: int, flexible: bool = False) -> None:
    """An array's count: an int32, or a compact count (count + 1) in a flexible version."""
    if flexible:
        write_uvarint(out, count + 1)
    else:
        out += INT32.pack(count)


def write_topic_head(out: bytearray, name: str, partition_count: int, flexible: bool = False) -> None:
    """A response topic's name and its partition count."""
    encoded_name = name.encode()
    if flexible:
        write_uvarint(out, len(encoded_name) + 1)
    else:
        out += INT16.pack(len(encoded_name))
    out += encoded_name
    write_count(out, partition_count, flexible)
