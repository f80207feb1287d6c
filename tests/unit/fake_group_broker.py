"""A stand-in broker for the group clients' unit tests, reached through fake connections (no sockets): one broker
(node 1) that is also every group's coordinator, with topics of given partition counts, records to fetch, and a
group that behaves as Kafka's for one member (a first JoinGroup answered MEMBER_ID_REQUIRED, each later one a new
generation led by the joining member, with `other_members` added to the leader's answer; SyncGroup hands out what
the leader sent). Committed offsets are kept per group and partition.

A test scripts other answers with `script(RequestType, answer, ...)`: each answer (a response, an ErrorCode for a
response with just that error, a function of the request returning either, or None for one default answer) is used
once, in order, before the default behaviour resumes. Every request and response goes through minikafka's msgpack
codec both ways, so that what the clients send fits the declarations of protocol/apis. `requests` lists every
request received.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgpack
import pytest

from client.metadata import ClusterMetadata
from protocol.apis.fetch import FetchPartitionResponse, FetchRequest, FetchResponse
from protocol.apis.group_admin import (
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from protocol.apis.group_offsets import (
    FetchedOffset,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchGroupResult,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
)
from protocol.apis.groups import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeftGroupMember,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.apis.metadata import MetadataBroker, MetadataPartition, MetadataRequest, MetadataResponse, MetadataTopic
from protocol.apis.offsets import (
    EARLIEST_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from protocol.apis.shapes import Topic
from protocol.codec import decode_body, encode_body
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder, read_header, set_base_offset
from protocol.topic_partition import TopicPartition
from transport.connection import KafkaConnectionError

BROKER = MetadataBroker(node_id=1, host="127.0.0.1", port=9092)
BOOTSTRAP = f"{BROKER.host}:{BROKER.port}"

Answer = Any  # a response, an ErrorCode, or a function of the request giving either


def _through_codec(body: Any) -> Any:
    """`body` encoded and decoded as minikafka's msgpack codec does (raises if it does not fit its declaration)."""
    return decode_body(type(body), msgpack.unpackb(msgpack.packb(encode_body(body)), raw=False))


@dataclass
class Committed:
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass
class FakeGroupBroker:
    """One broker, coordinator of every group; see the module's docstring."""

    topics: dict[str, int] = field(default_factory=dict)
    other_members: list[JoinGroupMember] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    committed: dict[tuple[str, TopicPartition], Committed] = field(default_factory=dict)
    batches: dict[TopicPartition, list[bytes]] = field(default_factory=lambda: defaultdict(list))
    down: bool = False
    generation: int = 0
    leader: str | None = None  # the leader named in JoinGroup answers; None: the member joining
    assignments: dict[str, bytes] = field(default_factory=dict)
    _scripted: dict[type, deque[Answer]] = field(default_factory=lambda: defaultdict(deque))
    _ids: Iterable[int] = field(default_factory=itertools.count)

    def script(self, request_type: type, *answers: Answer) -> None:
        self._scripted[request_type].extend(answers)

    def sent(self, request_type: type) -> list[Any]:
        return [r for r in self.requests if isinstance(r, request_type)]

    def append(self, tp: TopicPartition, *values: bytes, leader_epoch: int = 0) -> None:
        builder = BatchBuilder(partition_leader_epoch=leader_epoch)
        for value in values:
            builder.append(value)
        batch = bytearray(builder.build())
        set_base_offset(batch, 0, self.end_offset(tp))
        self.batches[tp].append(bytes(batch))

    def end_offset(self, tp: TopicPartition) -> int:
        return read_header(self.batches[tp][-1]).next_offset if self.batches[tp] else 0

    async def handle(self, body: Any) -> Any:
        """The answer to one request, as the connection delivers it."""
        if self.down:
            raise KafkaConnectionError("the fake broker is down")
        body = _through_codec(body)
        self.requests.append(body)
        scripted = self._scripted[type(body)]
        answer = scripted.popleft() if scripted else None
        if answer is None:
            answer = self._default(body)
        elif callable(answer):
            answer = answer(body)
        if isinstance(answer, ErrorCode):
            answer = _error_answer(body, answer)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return _through_codec(answer)

    # ------------------------------------------------------------------------------ default behaviour

    def _default(self, body: Any) -> Any:
        handlers: dict[type, Callable[[Any], Any]] = {
            MetadataRequest: self.metadata, FindCoordinatorRequest: self._find_coordinator,
            JoinGroupRequest: self._join, SyncGroupRequest: self._sync, HeartbeatRequest: self._heartbeat,
            LeaveGroupRequest: self._leave, OffsetCommitRequest: self._commit, OffsetFetchRequest: self._fetch_offsets,
            FetchRequest: self._fetch, ListOffsetsRequest: self._list_offsets,
        }
        if type(body) not in handlers:
            raise AssertionError(f"nothing scripted for {body!r}")
        return handlers[type(body)](body)

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        names = sorted(self.topics) if request.topics is None else request.topics
        return MetadataResponse(brokers=[BROKER], controller_id=1, topics=[
            MetadataTopic(error_code=ErrorCode.NONE, name=name, partitions=[
                MetadataPartition(error_code=0, partition=p, leader=1, leader_epoch=0, replicas=[1], isr=[1],
                                  offline_replicas=[]) for p in range(self.topics[name])])
            if name in self.topics else
            MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, partitions=[])
            for name in names])

    def _find_coordinator(self, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        return FindCoordinatorResponse(coordinators=[
            Coordinator(key=key, node_id=1, host=BROKER.host, port=BROKER.port) for key in request.keys])

    def _join(self, request: JoinGroupRequest) -> JoinGroupResponse:
        if not request.member_id and request.group_instance_id is None:
            return JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id=f"member-{next(self._ids)}")
        member_id = request.member_id or f"static-{next(self._ids)}"
        self.generation += 1
        protocol = request.protocols[0]
        leader = self.leader or member_id
        members = [JoinGroupMember(member_id=member_id, group_instance_id=request.group_instance_id,
                                   metadata=protocol.metadata), *self.other_members] if leader == member_id else []
        return JoinGroupResponse(error_code=ErrorCode.NONE, member_id=member_id, generation_id=self.generation,
                                 protocol_type=request.protocol_type, protocol_name=protocol.name, leader=leader,
                                 members=members)

    def _sync(self, request: SyncGroupRequest) -> SyncGroupResponse:
        if request.generation_id != self.generation:
            return SyncGroupResponse(error_code=ErrorCode.ILLEGAL_GENERATION)
        if request.assignments:
            self.assignments = {a.member_id: a.assignment for a in request.assignments}
        return SyncGroupResponse(error_code=ErrorCode.NONE, protocol_type=request.protocol_type,
                                 protocol_name=request.protocol_name,
                                 assignment=self.assignments.get(request.member_id, b""))

    def _heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        error = ErrorCode.NONE if request.generation_id == self.generation else ErrorCode.ILLEGAL_GENERATION
        return HeartbeatResponse(error_code=error)

    def _leave(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        return LeaveGroupResponse(error_code=ErrorCode.NONE, members=[
            LeftGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=ErrorCode.NONE)
            for m in request.members])

    def _commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        error = ErrorCode.NONE
        if request.generation_id >= 0 and request.generation_id != self.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        for topic in request.topics:
            for p in topic.partitions:
                if error == ErrorCode.NONE:
                    self.committed[(request.group_id, TopicPartition(topic.name, p.partition))] = Committed(
                        p.offset, p.leader_epoch, p.metadata)
        return OffsetCommitResponse(topics=[Topic(name=t.name, partitions=[
            PartitionResult(partition=p.partition, error_code=error) for p in t.partitions]) for t in request.topics])

    def _fetch_offsets(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        groups = []
        for group in request.groups:
            wanted = [TopicPartition(t.name, p) for t in group.topics or () for p in t.partitions]
            if group.topics is None:
                wanted = sorted(tp for g, tp in self.committed if g == group.group_id)
            by_topic: dict[str, list[FetchedOffset]] = defaultdict(list)
            for tp in wanted:
                found = self.committed.get((group.group_id, tp))
                by_topic[tp.topic].append(FetchedOffset(partition=tp.partition) if found is None else FetchedOffset(
                    partition=tp.partition, offset=found.offset, leader_epoch=found.leader_epoch,
                    metadata=found.metadata))
            groups.append(OffsetFetchGroupResult(group_id=group.group_id, topics=[
                Topic(name=name, partitions=partitions) for name, partitions in by_topic.items()]))
        return OffsetFetchResponse(groups=groups)

    async def _fetch(self, request: FetchRequest) -> FetchResponse:
        """Every batch at or after the fetch offset; a fetch that finds nothing waits a little, as a long poll."""
        topics = [Topic(name=t.name, partitions=[self._fetched(TopicPartition(t.name, p.partition), p.fetch_offset)
                                                 for p in t.partitions]) for t in request.topics]
        if not any(p.records for t in topics for p in t.partitions):
            await asyncio.sleep(min(request.max_wait_ms, 20) / 1000)
        return FetchResponse(error_code=0, topics=topics)

    def _fetched(self, tp: TopicPartition, offset: int) -> FetchPartitionResponse:
        records = b"".join(b for b in self.batches[tp] if read_header(b).next_offset > offset)
        return FetchPartitionResponse(partition=tp.partition, error_code=ErrorCode.NONE,
                                      high_watermark=self.end_offset(tp), records=records)

    def _list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return ListOffsetsResponse(topics=[Topic(name=t.name, partitions=[ListOffsetsPartitionResponse(
            partition=p.partition, error_code=ErrorCode.NONE,
            offset=0 if p.timestamp == EARLIEST_TIMESTAMP else self.end_offset(TopicPartition(t.name, p.partition)))
            for p in t.partitions]) for t in request.topics])


def _error_answer(request: Any, code: ErrorCode) -> Any:
    """The answer carrying `code` for a request of this type."""
    if isinstance(request, JoinGroupRequest):
        return JoinGroupResponse(error_code=code)
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(error_code=code)
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(error_code=code)
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(error_code=code)
    if isinstance(request, FindCoordinatorRequest):
        return FindCoordinatorResponse(coordinators=[Coordinator(key=k, error_code=code) for k in request.keys])
    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(topics=[Topic(name=t.name, partitions=[
            PartitionResult(partition=p.partition, error_code=code) for p in t.partitions]) for t in request.topics])
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(groups=[OffsetFetchGroupResult(group_id=g.group_id, error_code=code)
                                           for g in request.groups])
    if isinstance(request, ListGroupsRequest):
        return ListGroupsResponse(error_code=code)
    if isinstance(request, DescribeGroupsRequest):
        return DescribeGroupsResponse(groups=[])
    if isinstance(request, DeleteGroupsRequest):
        return DeleteGroupsResponse(results=[DeletedGroup(group_id=g, error_code=code) for g in request.groups])
    if isinstance(request, OffsetDeleteRequest):
        return OffsetDeleteResponse(error_code=code)
    raise AssertionError(f"no error answer for {request!r}")


class FakeConnection:
    """A connection to the fake broker."""

    def __init__(self, broker: FakeGroupBroker) -> None:
        self.broker = broker
        self.closed = False

    async def request(self, body: object, *, timeout_ms: int | None = None) -> Any:
        await asyncio.sleep(0)
        return await self.broker.handle(body)

    async def close(self) -> None:
        self.closed = True


def use_fake_broker(monkeypatch: pytest.MonkeyPatch, module: str, broker: FakeGroupBroker) -> None:
    """Every ClusterMetadata `module` makes (client.consumer, client.admin) talks to `broker`."""
    monkeypatch.setattr(f"{module}.ClusterMetadata",
                        lambda bootstrap, **options: FakeClusterMetadata(broker, bootstrap, **options))


class FakeClusterMetadata(ClusterMetadata):
    """ClusterMetadata whose every connection is to the fake broker."""

    def __init__(self, broker: FakeGroupBroker, bootstrap: str = BOOTSTRAP, **options: Any) -> None:
        super().__init__(bootstrap, **options)
        self.broker = broker

    async def _fetch(self, request: MetadataRequest) -> MetadataResponse:
        response = await self.broker.handle(request)
        assert isinstance(response, MetadataResponse)
        return response

    async def connection_to(self, host: str, port: int) -> FakeConnection:  # type: ignore[override]
        return FakeConnection(self.broker)

    async def close(self) -> None:
        return None
