"""What the group clients use of the cluster: its brokers, partition counts, fresh metadata and pooled connections
(ClusterMetadata is one; the unit tests give a fake)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from protocol.apis.metadata import MetadataBroker


class Requester(Protocol):
    """A connection to one broker."""

    async def request(self, body: object, *, timeout_ms: int | None = None) -> Any:
        """The response body; KafkaError for a request refused as a whole, KafkaConnectionError if the connection
        failed or the answer did not come in time."""


class ClusterView(Protocol):
    """The cluster as a client sees it."""

    @property
    def brokers(self) -> Mapping[int, MetadataBroker]: ...

    def partition_count(self, topic: str) -> int:
        """How many partitions the topic has; 0 if it is not known (yet)."""

    async def refresh(self, topics: Iterable[str] | None = None) -> object:
        """Ask for fresh metadata about `topics` (None: all, []: brokers only)."""

    async def connection(self, broker_id: int) -> Requester:
        """A connection to a known broker."""

    async def connection_to(self, host: str, port: int) -> Requester:
        """A connection to an address."""
