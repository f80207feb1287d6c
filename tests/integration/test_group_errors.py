"""Bad group requests get Kafka's error codes and never crash the broker: an invalid session timeout, an unknown
member, an illegal generation, a rebalance in progress, a full group (group.max.size), commits for topics that do
not exist, member metadata too large for the group's record, produce to __consumer_offsets, and a malformed
JoinGroup on Kafka's wire; the broker serves groups as before after each. One broker (`minikafka cluster up`),
requests over minikafka's own wire, which serves the group apis as Kafka's does."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest_asyncio

from client.cluster import ClusterState
from protocol.apis.group_offsets import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse
from protocol.apis.groups import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.apis.shapes import Topic
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from tests.integration.clusterutil import cluster_fixture, connect, create_topic, metadata, produce_answer
from tests.integration.test_stock_kafka_clients import _raw_request
from tests.polling import eventually
from transport.connection import BrokerConnection

#: A new group's first rebalance waits a second for more members, so that members joining together join one
#: generation.
cluster = cluster_fixture(brokers=1, configs={"offsets.topic.num.partitions": "1", "group.max.size": "2",
                                              "group.initial.rebalance.delay.ms": "1000"})
SESSION_MS = 10_000
TOPIC = "errors"


@pytest_asyncio.fixture(loop_scope="function")
async def connection(cluster: ClusterState) -> AsyncIterator[BrokerConnection]:
    """A connection to the broker once it coordinates groups (FindCoordinator first creates __consumer_offsets)."""
    async with connect(cluster.brokers[0]) as opened:
        async def found() -> bool:
            response = await opened.request(FindCoordinatorRequest(keys=["any"]))
            assert isinstance(response, FindCoordinatorResponse)
            return response.coordinators[0].error_code == ErrorCode.NONE

        await eventually(found, "the broker to coordinate groups")
        if TOPIC not in [t.name for t in (await metadata(opened)).topics]:
            await create_topic(cluster, TOPIC, partitions=1, replication_factor=1)
        yield opened


async def join(connection: BrokerConnection, group: str, member_id: str = "", *, session_ms: int = SESSION_MS,
               metadata: bytes = b"\x00\x01") -> JoinGroupResponse:
    response = await connection.request(JoinGroupRequest(
        group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=SESSION_MS, member_id=member_id,
        protocol_type="consumer", protocols=[JoinGroupProtocol(name="range", metadata=metadata)]))
    assert isinstance(response, JoinGroupResponse)
    return response


async def join_new(connection: BrokerConnection, group: str, **options: object) -> JoinGroupResponse:
    """A new member joins: asked for its id (KIP-394), then joining with it."""
    asked = await join(connection, group, **options)  # type: ignore[arg-type]
    assert asked.error_code == ErrorCode.MEMBER_ID_REQUIRED
    return await join(connection, group, asked.member_id, **options)  # type: ignore[arg-type]


async def sync(connection: BrokerConnection, group: str, joined: JoinGroupResponse,
               assignment: bytes = b"") -> SyncGroupResponse:
    response = await connection.request(SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
        assignments=[SyncGroupAssignment(member_id=joined.member_id, assignment=assignment)]
        if joined.leader == joined.member_id else []))
    assert isinstance(response, SyncGroupResponse)
    return response


async def heartbeat(connection: BrokerConnection, group: str, member_id: str, generation: int) -> ErrorCode:
    response = await connection.request(HeartbeatRequest(group_id=group, generation_id=generation,
                                                         member_id=member_id))
    assert isinstance(response, HeartbeatResponse)
    return ErrorCode.from_code(response.error_code)


async def commit(connection: BrokerConnection, group: str, topic: str, *, generation: int = -1,
                 member_id: str = "") -> ErrorCode:
    response = await connection.request(OffsetCommitRequest(
        group_id=group, generation_id=generation, member_id=member_id,
        topics=[Topic(name=topic, partitions=[OffsetCommitPartition(partition=0, offset=1)])]))
    assert isinstance(response, OffsetCommitResponse)
    return ErrorCode.from_code(response.topics[0].partitions[0].error_code)


def new_group() -> str:
    return f"errors-{uuid.uuid4().hex[:8]}"


async def test_session_timeouts_outside_the_brokers_bounds_are_refused(connection: BrokerConnection) -> None:
    for session_ms in (1, 5999, 1_800_001):
        refused = await join(connection, new_group(), session_ms=session_ms)
        assert refused.error_code == ErrorCode.INVALID_SESSION_TIMEOUT


async def test_unknown_members_illegal_generations_and_a_rebalance_in_progress(cluster: ClusterState,
                                                                              connection: BrokerConnection) -> None:
    group = new_group()
    assert await heartbeat(connection, group, "nobody", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    first = await join_new(connection, group)
    assert first.error_code == ErrorCode.NONE and first.leader == first.member_id
    assert (await sync(connection, group, first, b"all")).assignment == b"all"
    assert await heartbeat(connection, group, first.member_id, first.generation_id) is ErrorCode.NONE
    assert await heartbeat(connection, group, first.member_id, first.generation_id + 1) is (
        ErrorCode.ILLEGAL_GENERATION)
    assert await heartbeat(connection, group, "someone-else", first.generation_id) is ErrorCode.UNKNOWN_MEMBER_ID
    assert await commit(connection, group, TOPIC, generation=first.generation_id + 1,
                        member_id=first.member_id) is ErrorCode.ILLEGAL_GENERATION

    async def told() -> ErrorCode | None:  # NONE until the rebalance starts
        code = await heartbeat(connection, group, first.member_id, first.generation_id)
        return None if code is ErrorCode.NONE else code

    # A second member, on a connection of its own (responses come in request order: its join waits for the
    # first member's), makes the group rebalance.
    async with connect(cluster.brokers[0]) as second_connection:
        asked = await join(second_connection, group)
        second = asyncio.ensure_future(join(second_connection, group, asked.member_id))
        assert await eventually(told, "the first member to be told of the rebalance") is (
            ErrorCode.REBALANCE_IN_PROGRESS)
        assert await commit(connection, group, TOPIC, generation=first.generation_id,
                            member_id=first.member_id) is ErrorCode.NONE  # commits go on while preparing
        rejoined = await join(connection, group, first.member_id)
        assert (rejoined.error_code, (await second).error_code) == (ErrorCode.NONE, ErrorCode.NONE)
        assert rejoined.generation_id == first.generation_id + 1


async def test_a_full_group_refuses_another_member(connection: BrokerConnection) -> None:
    group = new_group()
    asked = [await join(connection, group) for _ in range(2)]
    joined = await asyncio.gather(*(join(connection, group, a.member_id) for a in asked))
    assert [j.error_code for j in joined] == [ErrorCode.NONE, ErrorCode.NONE]
    assert len({j.generation_id for j in joined}) == 1
    assert (await join(connection, group)).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


async def test_commits_for_topics_that_do_not_exist_are_refused(connection: BrokerConnection) -> None:
    group = new_group()
    assert await commit(connection, group, f"missing-{uuid.uuid4().hex[:8]}") is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert await commit(connection, group, TOPIC) is ErrorCode.NONE


async def test_member_metadata_too_large_for_the_groups_record_fails_the_sync_not_the_broker(
        connection: BrokerConnection) -> None:
    group = new_group()
    joined = await join_new(connection, group, metadata=bytes(1_500_000))  # over max.message.bytes
    assert joined.error_code == ErrorCode.NONE and len(joined.members[0].metadata) == 1_500_000
    assert (await sync(connection, group, joined, b"x")).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    other = new_group()  # and groups go on forming
    small = await join_new(connection, other)
    assert (await sync(connection, other, small, b"x")).error_code == ErrorCode.NONE


async def test_clients_cannot_produce_to_the_offsets_topic_and_malformed_joins_close_the_connection(
        cluster: ClusterState, connection: BrokerConnection) -> None:
    answer = await produce_answer(connection, OFFSETS_TOPIC, 0, [b"x"], acks=1)
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert _raw_request(cluster, 11, 5, b"\x00\x05group\x7f\xff\xff\xff") == b""  # JoinGroup v5, cut short
    assert _raw_request(cluster, 8, 9, b"\x00") == b""  # OffsetCommit v9 (flexible) without its body
    assert await commit(connection, new_group(), TOPIC) is ErrorCode.NONE
