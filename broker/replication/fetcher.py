"""Follower fetchers: one task per source broker fetching every partition it follows from that leader.

A partition first truncates (OffsetsForLeaderEpoch, or the local HW in the unsafe high-watermark
mode), then fetches from its LEO in long-poll Fetch requests; the leader parks them until data
arrives, so an idle cluster does not spin and a new record reaches followers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from broker.config import BrokerConfig
from broker.log.log import Log, flush_epoch_caches
from broker.replication.error_codes import error_code_of
from broker.replication.fetch_session import FetchSessionBuilder
from broker.replication.partition import Partition, Role
from broker.replication.replica_manager import ReplicaManager
from broker.replication.truncation import HIGH_WATERMARK_MODE, decide_truncation, epoch_to_ask
from protocol.apis.fetch import FetchPartition, FetchRequest, FetchResponse
from protocol.apis.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from transport.connection import BrokerConnection, KafkaConnectionError

log = logging.getLogger(__name__)

ConnectionFactory = Callable[[str, int], BrokerConnection]


@dataclass(slots=True, eq=False)
class FetchState:
    """A followed partition inside one fetcher: truncating first, then fetching; delayed after an error."""

    partition: Partition[Log]
    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0
    #: The leader's HW minus this replica's LEO at the last fetch (Kafka's fetcher lag).
    lag: int = 0


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader broker, in one request per round."""

    def __init__(self, config: BrokerConfig, replica_manager: ReplicaManager, leader_id: int, host: str, port: int,
                 connect: ConnectionFactory) -> None:
        self.config = config
        self.leader_id = leader_id
        self.endpoint = (host, port)
        self._replica_manager = replica_manager
        self._connect = connect
        self.partitions: dict[TopicPartition, FetchState] = {}
        self._changed = asyncio.Event()
        self._connection: BrokerConnection | None = None
        self._session = FetchSessionBuilder()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"fetcher-{leader_id}")

    def add(self, tp: TopicPartition, partition: Partition[Log]) -> None:
        self.partitions[tp] = FetchState(partition, partition.leader_epoch)
        self._changed.set()

    def remove(self, tp: TopicPartition) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._changed.set()

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)  # a cancellation of our own still propagates
        if self._connection is not None:
            await self._connection.close()

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.config.replica_fetch_backoff_ms / 1000
        while True:
            self._changed.clear()
            if not self.partitions:
                await self._changed.wait()
                continue
            try:
                connection = await self._connection_ready()
                if any(s.truncating for s in self._ready().values()):
                    await self._truncate(connection)
                ready = [tp for tp, s in self._ready().items() if not s.truncating]
                if ready:
                    await self._fetch(connection, ready)
                else:
                    await self._wait_for_change(self._next_delay())
            except (KafkaConnectionError, OSError) as e:
                log.warning("fetcher for leader %d at %s:%d: %s; retrying in %.1fs", self.leader_id,
                            *self.endpoint, e, backoff)
                await self._drop_connection()
                await self._wait_for_change(backoff)

    async def _connection_ready(self) -> BrokerConnection:
        if self._connection is None or self._connection.closed:
            self._session.reset()
            self._connection = self._connect(*self.endpoint)
            await self._connection.connect()
        return self._connection

    async def _drop_connection(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None

    def _ready(self) -> dict[TopicPartition, FetchState]:
        """The partitions not delayed after an error."""
        now = asyncio.get_running_loop().time()
        return {tp: s for tp, s in self.partitions.items() if s.delayed_until <= now}

    def _next_delay(self) -> float:
        now = asyncio.get_running_loop().time()
        return max(0.0, min((s.delayed_until for s in self.partitions.values()), default=now) - now)

    async def _wait_for_change(self, seconds: float) -> None:
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancellation that arrives as the event
        # is set, and the fetcher would never stop.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0.001)):
                await self._changed.wait()

    def _delay(self, state: FetchState) -> None:
        state.delayed_until = asyncio.get_running_loop().time() + self.config.replica_fetch_backoff_ms / 1000

    def _current(self, tp: TopicPartition, state: FetchState) -> bool:
        """Whether a response is still about the partition as it is now (no LeaderAndIsr in between)."""
        partition = state.partition
        return (self.partitions.get(tp) is state and partition.role is Role.FOLLOWER
                and partition.leader_id == self.leader_id and partition.leader_epoch == state.leader_epoch)

    # -- truncation -------------------------------------------------------------------------

    async def _truncate(self, connection: BrokerConnection) -> None:
        """Truncate each truncating partition: to where its latest epoch ends on the leader, or to its HW.

        The leader-epoch checkpoints the truncations change are written together on worker threads before this
        fetcher goes on (and appends to those logs), not one after another on the event loop."""
        truncated: list[Log] = []
        try:
            await self._truncate_in_memory(connection, truncated)
        finally:
            changed = [each for each in truncated if each.epoch_cache.unflushed]
            if changed:
                for each, error in await asyncio.to_thread(flush_epoch_caches, changed):
                    log.error("%s: cannot write its leader-epoch-checkpoint: %s", each.tp, error)

    async def _truncate_in_memory(self, connection: BrokerConnection, truncated: list[Log]) -> None:
        asking: dict[TopicPartition, int] = {}
        for tp, state in self._ready().items():
            if not state.truncating:
                continue
            partition_log = state.partition.log
            epoch = epoch_to_ask(partition_log)
            if self.config.replication_truncation_mode == HIGH_WATERMARK_MODE or epoch is None:
                truncated.append(self._truncate_to(tp, state, partition_log.high_watermark, "high watermark",
                                                   flush_epochs=False))
                state.truncating = False
            else:
                asking[tp] = epoch
        if not asking:
            return
        topics: dict[str, list[OffsetForLeaderPartition]] = {}
        for tp, epoch in asking.items():
            topics.setdefault(tp.topic, []).append(OffsetForLeaderPartition(
                partition=tp.partition, current_leader_epoch=self.partitions[tp].leader_epoch, leader_epoch=epoch))
        request = OffsetsForLeaderEpochRequest(replica_id=self.config.broker_id, topics=[
            OffsetForLeaderTopic(topic=name, partitions=parts) for name, parts in topics.items()])
        response: OffsetsForLeaderEpochResponse = await connection.request(request)
        for topic in response.topics:
            for answer in topic.partitions:
                tp = TopicPartition(topic.topic, answer.partition)
                state = self.partitions.get(tp)
                if state is None or not self._current(tp, state):
                    continue
                if answer.error_code != ErrorCode.NONE:
                    log.info("OffsetsForLeaderEpoch for %s from leader %d: %s", tp, self.leader_id,
                             ErrorCode.from_code(answer.error_code).name)
                    self._delay(state)
                    continue
                decision = decide_truncation(state.partition.log, answer.leader_epoch, answer.end_offset)
                truncated.append(self._truncate_to(tp, state, decision.offset,
                                                   f"epoch {asking[tp]} ends at {answer.end_offset} on the leader "
                                                   f"(its epoch {answer.leader_epoch})", flush_epochs=False))
                state.truncating = not decision.complete

    def _truncate_to(self, tp: TopicPartition, state: FetchState, offset: int, why: str, *,
                     flush_epochs: bool = True) -> Log:
        """Truncate the partition's log (see Log.truncate_to for ``flush_epochs``); returns the log."""
        partition_log = state.partition.log
        before = partition_log.log_end_offset
        if partition_log.truncate_to(offset, flush_epochs=flush_epochs):
            log.info("%s: truncated from %d to %d (%s)", tp, before, partition_log.log_end_offset, why)
        return partition_log

    # -- fetching ---------------------------------------------------------------------------

    async def _fetch(self, connection: BrokerConnection, ready: list[TopicPartition]) -> None:
        """One fetch of every ready partition, in this fetcher's incremental fetch session."""
        config = self.config
        wanted: dict[TopicPartition, FetchPartition] = {}
        asked: dict[TopicPartition, FetchState] = {}
        for tp in ready:
            state = self.partitions[tp]
            asked[tp] = state
            partition_log = state.partition.log
            wanted[tp] = FetchPartition(
                partition=tp.partition, current_leader_epoch=state.leader_epoch,
                fetch_offset=partition_log.log_end_offset, log_start_offset=partition_log.log_start_offset,
                partition_max_bytes=config.replica_fetch_max_bytes)
        send, forget = self._session.build(wanted)
        topics: dict[str, list[FetchPartition]] = {}
        for tp, fetch in send:
            topics.setdefault(tp.topic, []).append(fetch)
        forgotten: dict[str, list[int]] = {}
        for tp in forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        request = FetchRequest(replica_id=config.broker_id, max_wait_ms=config.replica_fetch_wait_max_ms,
                               min_bytes=config.replica_fetch_min_bytes,
                               max_bytes=config.replica_fetch_response_max_bytes,
                               topics=[Topic(name=name, partitions=parts) for name, parts in topics.items()],
                               session_id=self._session.session_id, session_epoch=self._session.epoch,
                               forgotten_topics=[Topic(name=name, partitions=parts)
                                                 for name, parts in forgotten.items()])
        try:
            response: FetchResponse = await connection.request(request)
        except BaseException:
            self._session.reset()
            raise
        self._session.on_response(response.error_code, response.session_id)
        if response.error_code != ErrorCode.NONE:
            log.info("fetch from leader %d: %s; starting a new fetch session", self.leader_id,
                     ErrorCode.from_code(response.error_code).name)
            return
        for topic in response.topics:
            for data in topic.partitions:
                tp = TopicPartition(topic.name, data.partition)
                state = asked.get(tp)
                if state is not None and self._current(tp, state):
                    await self._process(tp, state, data, connection)

    async def _process(self, tp: TopicPartition, state: FetchState, data, connection: BrokerConnection) -> None:
        partition = state.partition
        code = ErrorCode.from_code(data.error_code)
        if code is ErrorCode.NONE:
            try:
                info = partition.append_records_to_follower(data.records, data.high_watermark, data.log_start_offset)
            except Exception as e:
                log.error("%s: appending fetched data failed (%s): %s", tp, error_code_of(e).name, e)
                self._delay(state)
                return
            if info is not None:
                self._replica_manager.on_follower_append(partition, info.flush_needed)
            self._replica_manager.counters.replication_bytes_in += len(data.records or b"")
            state.lag = max(0, data.high_watermark - partition.log.log_end_offset)
        elif code is ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(tp, state, connection)
        else:
            log.info("%s: fetch from leader %d answered %s", tp, self.leader_id, code.name)
            self._delay(state)

    async def _handle_out_of_range(self, tp: TopicPartition, state: FetchState, connection: BrokerConnection) -> None:
        """Ahead of the leader: truncate to its LEO. Behind its log start: restart there."""
        partition_log = state.partition.log
        leader_end = await self._leader_offset(connection, tp, state, LATEST_TIMESTAMP)
        # Each answer is acted on only if the partition still follows this leader at this epoch: a LeaderAndIsr
        # handled meanwhile may have made it leader, whose log nothing but its own appends may change.
        if leader_end is None or not self._current(tp, state):
            return
        if leader_end < partition_log.log_end_offset:
            self._truncate_to(tp, state, leader_end, "ahead of the leader's log end")
            return
        leader_start = await self._leader_offset(connection, tp, state, EARLIEST_TIMESTAMP)
        if leader_start is not None and self._current(tp, state) and partition_log.log_end_offset < leader_start:
            log.info("%s: behind the leader's log start %d; restarting the log there", tp, leader_start)
            partition_log.truncate_fully_and_start_at(leader_start)

    async def _leader_offset(self, connection: BrokerConnection, tp: TopicPartition, state: FetchState,
                             timestamp: int) -> int | None:
        request = ListOffsetsRequest(replica_id=self.config.broker_id, isolation_level=0, topics=[Topic(
            name=tp.topic, partitions=[ListOffsetsPartition(partition=tp.partition,
                                                            current_leader_epoch=state.leader_epoch,
                                                            timestamp=timestamp)])])
        response: ListOffsetsResponse = await connection.request(request)
        answer = response.topics[0].partitions[0]
        if answer.error_code != ErrorCode.NONE:
            self._delay(state)
            return None
        return answer.offset


def fetcher_id(tp: TopicPartition, num_fetchers: int) -> int:
    """Which of a leader's `num_fetchers` fetchers follows `tp`: Kafka's getFetcherId, abs(31 * the topic name's
    Java hashCode + the partition) % num_fetchers, in Java's int arithmetic."""
    encoded = tp.topic.encode("utf-16-be")
    code = 0
    for unit in struct.unpack(f">{len(encoded) // 2}H", encoded):
        code = (31 * code + unit) & 0xFFFFFFFF
    value = (31 * code + tp.partition) & 0xFFFFFFFF
    signed = value - (1 << 32) if value >= 1 << 31 else value  # Utils.abs: Integer.MIN_VALUE is 0
    return (0 if signed == -(1 << 31) else abs(signed)) % num_fetchers


class ReplicaFetcherManager:
    """Keeps one fetcher per (leader broker, fetcher id) and moves partitions between them; `num_fetchers`
    (num.replica.fetchers) fetchers at most per leader."""

    def __init__(self, config: BrokerConfig, replica_manager: ReplicaManager, connect: ConnectionFactory) -> None:
        self.config = config
        self.num_fetchers = config.num_replica_fetchers
        self._replica_manager = replica_manager
        self._connect = connect
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._stopping: set[asyncio.Task] = set()
        replica_manager.on_follow = self.add_partitions
        replica_manager.on_stop_following = self.remove_partitions

    def add_partitions(self, followed: dict[TopicPartition, int], endpoints: dict[int, tuple[str, int]]) -> None:
        """(Re)start fetching ``followed`` partitions from their leaders, truncating first."""
        self.remove_partitions(followed)
        for tp, leader_id in followed.items():
            partition = self._replica_manager.partition(tp)
            if partition is None or leader_id not in endpoints:
                continue  # no live leader: wait for the next LeaderAndIsr
            self._fetcher_for((leader_id, fetcher_id(tp, self.num_fetchers)), endpoints[leader_id]).add(tp, partition)

    def resize(self, num_fetchers: int) -> None:
        """num.replica.fetchers changed: every followed partition moves to the fetcher its id now names, and the
        fetchers left empty stop (Kafka's resizeThreadPool)."""
        self.num_fetchers = num_fetchers
        fetchers, self._fetchers = self._fetchers, {}
        for (leader_id, _), fetcher in fetchers.items():
            moved = list(fetcher.partitions.items())
            for tp, _state in moved:
                fetcher.remove(tp)
            for tp, state in moved:
                self._fetcher_for((leader_id, fetcher_id(tp, num_fetchers)), fetcher.endpoint).add(tp, state.partition)
            self._stopping.add(asyncio.get_running_loop().create_task(fetcher.stop()))

    def _fetcher_for(self, key: tuple[int, int], endpoint: tuple[str, int]) -> ReplicaFetcher:
        fetcher = self._fetchers.get(key)
        if fetcher is not None and fetcher.endpoint == endpoint:
            return fetcher
        replacement = ReplicaFetcher(self.config, self._replica_manager, key[0], *endpoint, self._connect)
        if fetcher is not None:  # the leader came back on another address: its partitions move along
            for tp, state in fetcher.partitions.items():
                replacement.add(tp, state.partition)
            self._stopping.add(asyncio.get_running_loop().create_task(fetcher.stop()))
        self._fetchers[key] = replacement
        return replacement

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            for fetcher in self._fetchers.values():
                fetcher.remove(tp)

    def lags(self) -> list[tuple[str, TopicPartition, int]]:
        """Each followed partition's lag behind its leader's HW, with the name Kafka gives its fetcher
        (ReplicaFetcherThread-<fetcher id>-<leader id>)."""
        return [(f"ReplicaFetcherThread-{fetcher}-{leader}", tp, state.lag)
                for (leader, fetcher), each in self._fetchers.items() for tp, state in each.partitions.items()]

    def max_lag(self) -> int:
        """The largest lag of a followed partition behind its leader's HW (Kafka's MaxLag), 0 if none."""
        return max((s.lag for f in self._fetchers.values() for s in f.partitions.values()), default=0)

    def fetching(self) -> dict[TopicPartition, int]:
        """Followed partitions and the leader each is fetched from (for tests and description)."""
        return {tp: f.leader_id for f in self._fetchers.values() for tp in f.partitions}

    async def shutdown(self) -> None:
        await asyncio.gather(*(fetcher.stop() for fetcher in self._fetchers.values()), *self._stopping)
        self._fetchers.clear()
