"""The group coordinator's shell on a real event loop, over a stand-in replica manager whose partitions of
__consumer_offsets are in-memory logs: answers reach the handlers' futures, timers fire through loop.call_later,
records are appended with acks=all and their failures mapped as Kafka does, groups are loaded from the log when
this broker becomes a partition's leader (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and unloaded when it stops
leading it (NOT_COORDINATOR); and FindCoordinator's view of the offsets topic."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import pytest

from broker.auto_topic_creation import AutoTopicCreationManager
from broker.coordinator.config import GroupCoordinatorConfig
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.requests import CommitRequest, HeartbeatRequest, JoinRequest, OffsetToCommit, SyncRequest
from broker.coordinator.group.results import JoinResult
from broker.coordinator.group_shell import GroupCoordinatorShell
from broker.coordinator.offsets_log import OffsetsLog
from broker.coordinator.offsets_topic import OffsetsTopic, offsets_topic, offsets_topic_configs
from broker.log.log import wall_clock_ms
from protocol.apis.produce import ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.replica_control import UpdateMetadataPartitionState
from protocol.apis.shapes import Topic
from protocol.apis.topics import CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse
from protocol.consumer_offsets import OFFSETS_TOPIC, decode_key
from protocol.consumer_protocol import Subscription, encode_subscription
from protocol.errors import ErrorCode
from protocol.records import decode_records
from protocol.topic_partition import TopicPartition
from tests.unit.memory_log import MemoryLog

PARTITIONS = 3
GROUP = "g"
SESSION_MS = 200
CONFIG = GroupCoordinatorConfig(GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0,
                                            offsets_topic_partitions=PARTITIONS))
ORDERS = TopicPartition("orders", 0)


@dataclass
class StandInReplicas:
    """Partitions of __consumer_offsets in memory; appends answer `error` (NONE: appended), at once or, when
    `held`, when a test releases them."""

    logs: dict[int, MemoryLog] = field(default_factory=dict)
    error: ErrorCode = ErrorCode.NONE
    held: bool = False
    waiting: list[tuple[ProduceRequest, asyncio.Future[ProduceResponse]]] = field(default_factory=list)
    internal_flags: list[bool] = field(default_factory=list)

    def log(self, partition: int) -> MemoryLog:
        return self.logs.setdefault(partition, MemoryLog(TopicPartition(OFFSETS_TOPIC, partition)))

    def partition(self, tp: TopicPartition) -> SimpleNamespace | None:
        return SimpleNamespace(log=self.logs[tp.partition]) if tp.partition in self.logs else None

    def append_records(self, request: ProduceRequest, internal_topics_allowed: bool = False
                       ) -> ProduceResponse | asyncio.Future[ProduceResponse]:
        self.internal_flags.append(internal_topics_allowed)
        if self.held:
            answer: asyncio.Future[ProduceResponse] = asyncio.get_running_loop().create_future()
            self.waiting.append((request, answer))
            return answer
        return self._answer(request)

    def release(self) -> None:
        for request, answer in self.waiting:
            answer.set_result(self._answer(request))
        self.waiting.clear()

    def _answer(self, request: ProduceRequest) -> ProduceResponse:
        [topic] = request.topics
        [data] = topic.partitions
        if self.error is ErrorCode.NONE:
            self.log(data.partition).append_as_leader(bytes(data.records), 0)
        return ProduceResponse(topics=[Topic(name=topic.name, partitions=[
            ProducePartitionResponse(partition=data.partition, error_code=self.error, base_offset=0)])])


def shell_over(replicas: StandInReplicas, config: GroupCoordinatorConfig = CONFIG) -> GroupCoordinatorShell:
    return GroupCoordinatorShell(config, OffsetsLog(replicas, 5000, 64), wall_clock_ms)


def offsets_partitions(*partitions: int) -> list[TopicPartition]:
    return [TopicPartition(OFFSETS_TOPIC, p) for p in partitions]


async def lead_all(shell: GroupCoordinatorShell, replicas: StandInReplicas) -> None:
    for partition in range(PARTITIONS):
        replicas.log(partition)
    shell.on_leadership_change(offsets_partitions(*range(PARTITIONS)), ())
    await loaded(shell)


async def loaded(shell: GroupCoordinatorShell) -> None:
    """Wait until no partition is being loaded (ListGroups answers COORDINATOR_LOAD_IN_PROGRESS until then)."""
    async with asyncio.timeout(5):
        while shell.list_groups((), ()).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            await asyncio.sleep(0.01)


async def settle() -> None:
    """Let the event loop run the tasks and callbacks that are ready (loads, append completions)."""
    for _ in range(20):
        await asyncio.sleep(0)


def join_request(member_id: str = "", session_ms: int = SESSION_MS) -> JoinRequest:
    protocols = (("range", encode_subscription(Subscription(("orders",)))),)
    return JoinRequest(GROUP, member_id, None, "consumer", protocols, session_ms, 1000, "client", "/127.0.0.1")


async def form_group(shell: GroupCoordinatorShell, session_ms: int = SESSION_MS) -> tuple[str, int]:
    """One member joins (asked for its id first) and syncs; its member id and generation."""
    first = await shell.join(join_request(session_ms=session_ms))
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED
    joined = await asyncio.wait_for(shell.join(join_request(first.member_id, session_ms)), 5)
    assert joined.error is ErrorCode.NONE, joined
    synced = await asyncio.wait_for(shell.sync(SyncRequest(
        GROUP, joined.generation_id, joined.member_id, assignments={joined.member_id: b"assigned"})), 5)
    assert (synced.error, synced.assignment) == (ErrorCode.NONE, b"assigned")
    return joined.member_id, joined.generation_id


async def test_a_group_is_written_with_acks_all_and_loaded_back_by_the_next_leader():
    replicas = StandInReplicas()
    first = shell_over(replicas)
    await lead_all(first, replicas)
    member, generation = await form_group(first)
    committed = await asyncio.wait_for(first.commit(CommitRequest(
        GROUP, {ORDERS: OffsetToCommit(42, metadata="m")}, generation, member)), 5)
    assert committed.errors == {ORDERS: ErrorCode.NONE}
    assert replicas.internal_flags and all(replicas.internal_flags)
    written = [decode_key(r.key) for r in decode_records(replicas.log(first.partition_for(GROUP)).read(0, 1 << 20))]
    assert [type(k).__name__ for k in written] == ["GroupMetadataKey", "OffsetCommitKey"]

    first.on_leadership_change((), offsets_partitions(first.partition_for(GROUP)))
    assert first.fetch_offsets(GROUP, [ORDERS], False).error is ErrorCode.NOT_COORDINATOR
    second = shell_over(replicas)
    await lead_all(second, replicas)
    fetched = second.fetch_offsets(GROUP, [ORDERS], False)
    assert (fetched.error, fetched.partitions[ORDERS].offset, fetched.partitions[ORDERS].metadata) == (
        ErrorCode.NONE, 42, "m")
    [described] = second.describe([GROUP])
    assert (described.state, [m.member_id for m in described.members]) == ("Stable", [member])
    await asyncio.gather(first.shutdown(), second.shutdown())


async def test_requests_wait_for_the_load_and_a_resignation_answers_parked_joins_not_coordinator():
    replicas = StandInReplicas()
    delayed = replace(CONFIG, group=replace(CONFIG.group, initial_rebalance_delay_ms=60_000))
    shell = shell_over(replicas, delayed)  # the first rebalance waits: joins stay parked
    replicas.log(shell.partition_for(GROUP))
    reading = asyncio.Event()
    read = shell._offsets_log.read

    async def slow_read(partition: int) -> object:
        await reading.wait()
        return await read(partition)

    shell._offsets_log.read = slow_read  # type: ignore[method-assign]
    shell.on_leadership_change(offsets_partitions(shell.partition_for(GROUP)), ())
    refused = await shell.join(join_request())
    assert refused.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    reading.set()
    await loaded(shell)
    first = await shell.join(join_request())
    parked = shell.join(join_request(first.member_id))
    await settle()
    assert not parked.done()
    shell.on_leadership_change((), offsets_partitions(shell.partition_for(GROUP)))
    result = await asyncio.wait_for(parked, 5)
    assert isinstance(result, JoinResult) and result.error is ErrorCode.NOT_COORDINATOR
    assert shell.heartbeat(HeartbeatRequest(GROUP, 1, first.member_id)) is ErrorCode.NOT_COORDINATOR
    await shell.shutdown()


async def test_a_failed_append_answers_with_kafkas_mapping_and_a_late_one_answers_when_done():
    replicas = StandInReplicas()
    shell = shell_over(replicas)
    await lead_all(shell, replicas)
    replicas.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
    refused = await asyncio.wait_for(shell.commit(CommitRequest(GROUP, {ORDERS: OffsetToCommit(1)})), 5)
    assert refused.errors == {ORDERS: ErrorCode.NOT_COORDINATOR}
    replicas.error, replicas.held = ErrorCode.NONE, True
    answer = shell.commit(CommitRequest(GROUP, {ORDERS: OffsetToCommit(2)}))
    await settle()
    assert not answer.done() and shell.fetch_offsets(GROUP, [ORDERS], True).partitions[ORDERS].error is (
        ErrorCode.UNSTABLE_OFFSET_COMMIT)
    replicas.release()
    assert (await asyncio.wait_for(answer, 5)).errors == {ORDERS: ErrorCode.NONE}
    assert shell.fetch_offsets(GROUP, [ORDERS], True).partitions[ORDERS].offset == 2
    await shell.shutdown()


async def test_a_member_without_heartbeats_leaves_when_its_session_timer_fires():
    replicas = StandInReplicas()
    shell = shell_over(replicas)
    await lead_all(shell, replicas)
    member, generation = await form_group(shell)
    for _ in range(3):  # heartbeats keep the session alive past its timeout
        await asyncio.sleep(SESSION_MS / 2000)
        assert shell.heartbeat(HeartbeatRequest(GROUP, generation, member)) is ErrorCode.NONE
    await asyncio.sleep(SESSION_MS * 2 / 1000)
    [described] = shell.describe([GROUP])
    assert (described.state, described.members) == ("Empty", ())
    assert shell.heartbeat(HeartbeatRequest(GROUP, generation, member)) is ErrorCode.UNKNOWN_MEMBER_ID
    await shell.shutdown()


async def test_only_partitions_of_the_offsets_topic_are_loaded():
    replicas = StandInReplicas()
    shell = shell_over(replicas)
    shell.on_leadership_change([TopicPartition("orders", shell.partition_for(GROUP))], ())
    assert shell.fetch_offsets(GROUP, None, False).error is ErrorCode.NOT_COORDINATOR
    await shell.shutdown()


# ------------------------------------------------------------------------------------------------ FindCoordinator


@dataclass
class Cluster:
    """A metadata cache's answers."""

    live_broker_count: int = 3
    states: dict[TopicPartition, UpdateMetadataPartitionState] = field(default_factory=dict)
    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)

    def has_topic(self, topic: str) -> bool:
        return any(tp.topic == topic for tp in self.states)

    def partition_state(self, tp: TopicPartition) -> UpdateMetadataPartitionState | None:
        return self.states.get(tp)

    def endpoint(self, broker_id: int, _listener_name: str) -> tuple[str, int] | None:
        return self.endpoints.get(broker_id)


class Controller:
    def __init__(self) -> None:
        self.requests: list[CreateTopicsRequest] = []

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse:
        self.requests.append(request)
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name, error_code=ErrorCode.NONE)
                                            for t in request.topics])


def _leader_state(partition: int, leader: int) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(topic=OFFSETS_TOPIC, partition=partition, controller_epoch=1, leader=leader,
                                        leader_epoch=0, isr=[leader], zk_version=0, replicas=[leader],
                                        offline_replicas=[])


async def test_find_coordinator_creates_the_topic_once_enough_brokers_live_then_answers_its_leader():
    cluster, controller = Cluster(live_broker_count=2), Controller()
    creation = AutoTopicCreationManager(cluster, controller.create_topics, auto_create_topics_enable=False,
                                        num_partitions=1,
                                        default_replication_factor=1, internal={OFFSETS_TOPIC: offsets_topic(CONFIG)})
    topic = OffsetsTopic(cluster, creation, lambda _group: 1)
    assert topic.coordinator(GROUP, "PLAINTEXT").error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    await settle()
    assert controller.requests == []  # 2 brokers alive, 3 replicas wanted
    cluster.live_broker_count = 3
    for _ in range(3):
        assert topic.coordinator(GROUP, "PLAINTEXT").error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    await settle()
    [request] = controller.requests
    [created] = request.topics
    assert (created.name, created.num_partitions, created.replication_factor) == (OFFSETS_TOPIC, PARTITIONS, 3)
    assert created.configs == offsets_topic_configs(CONFIG)
    assert created.configs["segment.bytes"] == str(100 * 1024 * 1024)

    cluster.states = {TopicPartition(OFFSETS_TOPIC, p): _leader_state(p, 2) for p in range(PARTITIONS)}
    assert topic.coordinator(GROUP, "PLAINTEXT").error is ErrorCode.COORDINATOR_NOT_AVAILABLE  # no endpoint
    cluster.endpoints = {2: ("broker-2", 9092)}
    found = topic.coordinator(GROUP, "PLAINTEXT")
    assert (found.error, found.node_id, found.host, found.port) == (ErrorCode.NONE, 2, "broker-2", 9092)


@pytest.mark.parametrize("name", ["offsets.topic.replication.factor", "offsets.topic.num.partitions",
                                  "offsets.commit.timeout.ms", "group.max.size"])
def test_settings_below_kafkas_minimum_are_refused(name: str):
    with pytest.raises(ValueError, match=name):
        GroupCoordinatorConfig.from_broker_properties({name: "0"})


def test_settings_are_read_by_kafkas_names_and_listed_with_them():
    config = GroupCoordinatorConfig.from_broker_properties({
        "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0",
        "offsets.retention.minutes": "60", "offsets.commit.timeout.ms": "2000"})
    assert config == replace(GroupCoordinatorConfig(), group=replace(
        GroupConfig(), initial_rebalance_delay_ms=0, offsets_retention_ms=3_600_000),
        offsets_topic_replication_factor=1, offsets_commit_timeout_ms=2000)
    settings = config.settings()
    assert (settings["offsets.retention.minutes"], settings["offsets.topic.num.partitions"],
            settings["group.min.session.timeout.ms"], settings["offsets.retention.check.interval.ms"]) == (
        "60", "50", "6000", "600000")
