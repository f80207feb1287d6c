"""The admin client: create, list and describe topics, and describe the replicas every broker hosts."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from client.closing import AsyncClosing
from client.connection import KafkaConnectionError
from client.metadata import NO_LEADER, ClusterMetadata, PartitionInfo
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeReplicasRequest,
    DescribeReplicasResponse,
    MetadataRequest,
    MetadataResponse,
    ReplicaState,
)

log = logging.getLogger(__name__)


class AdminError(Exception):
    """An admin operation failed; `code` is the Kafka error code, the message the broker's explanation."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create: a partition count and replication factor, or explicit replica lists per partition."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)
    assignments: dict[int, list[int]] = field(default_factory=dict)

    def to_wire(self) -> CreatableTopic:
        return CreatableTopic(
            name=self.name,
            num_partitions=self.num_partitions,
            replication_factor=self.replication_factor,
            assignments=[
                CreatableReplicaAssignment(partition=p, broker_ids=list(ids)) for p, ids in self.assignments.items()
            ],
            configs=dict(self.configs),
        )


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class Admin(AsyncClosing):
    """Topic administration against a cluster. CreateTopics goes to the active controller (found through
    Metadata, re-found on NOT_CONTROLLER); DescribeReplicas goes to every live broker."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        client_id: str = "minikafka-admin",
        clock: Callable[[], float] = _monotonic_ms,
    ) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.metadata = ClusterMetadata(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms)
        self._clock = clock

    async def create_topics(
        self,
        topics: Sequence[NewTopic],
        *,
        timeout_ms: int = 30000,
        validate_only: bool = False,
        wait_for_leaders: bool = True,
    ) -> None:
        """Create topics through the controller. With wait_for_leaders, return only once every live broker
        reports a leader for every new partition. Raises AdminError (Kafka's error name and the broker's
        message) for the first topic that could not be created, or on timeout."""
        deadline = self._clock() + timeout_ms
        pending = {topic.name: topic for topic in topics}
        failures: list[tuple[ErrorCode, str]] = []
        problem = "no controller"
        while pending:
            try:
                response = await self._create_on_controller(list(pending.values()), deadline, validate_only)
            except KafkaError as e:
                if not e.retriable:
                    raise AdminError(e.code, e.message or "CreateTopics refused") from None
                problem = str(e)
            except KafkaConnectionError as e:
                problem = str(e)
            else:
                for result in response.topics:
                    error = ErrorCode.from_code(result.error_code)
                    if error == ErrorCode.NOT_CONTROLLER:
                        problem = f"broker {self.metadata.controller_id} is no longer the controller"
                    elif result.name in pending:
                        del pending[result.name]
                        if error != ErrorCode.NONE:
                            failures.append((error, result.error_message or f"cannot create topic {result.name!r}"))
            if pending:
                await self._backoff(deadline, f"cannot create {', '.join(sorted(pending))}: {problem}")
        if failures:
            raise AdminError(failures[0][0], "; ".join(message for _, message in failures))
        if wait_for_leaders and not validate_only:
            await self._wait_for_leaders([topic.name for topic in topics], deadline)

    async def list_topics(self) -> list[str]:
        """The names of all topics."""
        await self.metadata.refresh()
        return self.metadata.topics()

    async def describe_topics(self, names: Sequence[str] | None = None) -> list[PartitionInfo]:
        """Every partition of the named topics (all topics if None): leader, leader epoch, replicas and ISR.
        Raises AdminError for a topic that does not exist."""
        await self.metadata.refresh(names)
        for name in names or ():
            error = self.metadata.topic_errors.get(name)
            if error is not None:
                raise AdminError(error, f"topic {name!r}")
        return [info for topic in (names or self.metadata.topics()) for info in self.metadata.partitions(topic) or ()]

    async def describe_replicas(self, names: Sequence[str] | None = None) -> dict[int, list[ReplicaState]]:
        """The replicas each live broker hosts (of the named topics, or all): role, LEO, HW, log start offset,
        and on leaders each follower's remote LEO. A broker that does not answer is left out."""
        await self.metadata.refresh([])
        broker_ids = sorted(self.metadata.brokers)
        request = DescribeReplicasRequest(topics=None if names is None else list(names))
        answers = await asyncio.gather(*(self._ask(b, request) for b in broker_ids), return_exceptions=True)
        described: dict[int, list[ReplicaState]] = {}
        for broker_id, answer in zip(broker_ids, answers, strict=True):
            if isinstance(answer, DescribeReplicasResponse):
                described[broker_id] = answer.partitions
            else:
                log.warning("broker %d did not describe its replicas: %s", broker_id, answer)
        return described

    async def close(self) -> None:
        """Close the connections."""
        await self.metadata.close()

    async def _ask(self, broker_id: int, request: object) -> object:
        connection = await self.metadata.connection(broker_id)
        return await connection.request(request)

    async def _create_on_controller(
        self, topics: list[NewTopic], deadline: float, validate_only: bool
    ) -> CreateTopicsResponse:
        await self.metadata.refresh([])
        controller = self.metadata.controller_id
        if controller not in self.metadata.brokers:
            raise KafkaConnectionError(f"no live controller (controller id {controller})")
        request = CreateTopicsRequest(
            topics=[topic.to_wire() for topic in topics],
            timeout_ms=max(0, int(deadline - self._clock())),
            validate_only=validate_only,
        )
        response = await self._ask(controller, request)
        assert isinstance(response, CreateTopicsResponse)
        return response

    async def _wait_for_leaders(self, names: list[str], deadline: float) -> None:
        """Poll every live broker's metadata until all partitions of `names` have a leader."""
        while True:
            lagging = await self._brokers_without_leaders(names)
            if not lagging:
                return
            await self._backoff(deadline, f"created {', '.join(names)}, but {lagging} reports no leader for them yet")

    async def _brokers_without_leaders(self, names: list[str]) -> str:
        """Which broker lacks a leader for some partition of `names` ('' if none), per its metadata cache."""
        await self.metadata.refresh([])
        request = MetadataRequest(topics=names)
        for broker_id in sorted(self.metadata.brokers):
            try:
                response = await self._ask(broker_id, request)
            except (KafkaConnectionError, KafkaError) as e:
                return f"broker {broker_id} ({e})"
            assert isinstance(response, MetadataResponse)
            for topic in response.topics:
                if topic.error_code or not topic.partitions or any(p.leader == NO_LEADER for p in topic.partitions):
                    return f"broker {broker_id}"
        return ""

    async def _backoff(self, deadline: float, problem: str) -> None:
        """Sleep retry_backoff_ms, or raise AdminError(REQUEST_TIMED_OUT) if that passes the deadline."""
        if self._clock() + self.retry_backoff_ms > deadline:
            raise AdminError(ErrorCode.REQUEST_TIMED_OUT, problem)
        await asyncio.sleep(self.retry_backoff_ms / 1000)
