"""Shapes several api families share."""

from typing import Generic, TypeVar

from protocol.codec import message

P = TypeVar("P")


@message
class Topic(Generic[P]):
    """A topic name with per-partition entries (Produce, Fetch and ListOffsets, both directions)."""

    name: str
    partitions: list[P]
