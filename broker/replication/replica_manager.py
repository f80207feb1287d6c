"""The partitions this broker hosts: becoming leader or follower, the produce and fetch paths, and
the periodic work (HW checkpoints, flushes, retention)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TypeVar

from broker.config import BrokerConfig
from broker.log.checkpoint import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from broker.log.config import LogConfig, LogConfigError
from broker.log.log import (
    Clock,
    Log,
    LogError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    flush_epoch_caches,
    flush_topic_ids,
)
from broker.log.manager import LogManager, remove_deleted_dir
from broker.replication.delayed import DelayedFetch, DelayedProduce, PendingProduce, build_produce_response
from broker.replication.fetch_session import FetchSessionCache, SessionPartition
from broker.replication.partition import LeaderAndIsrState, Partition, Role
from broker.replication.purgatory import Purgatory
from protocol.apis.fetch import (
    CONSUMER_REPLICA_ID,
    DEBUGGING_CONSUMER_ID,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
)
from protocol.apis.offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.produce import ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.replica_control import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode, KafkaError
from protocol.records import RecordBatchError, UnsupportedCompressionError
from protocol.state_change import record_replica_state_change, record_state_change
from protocol.topic_partition import TopicPartition
from zk.znodes import LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)

TopicConfigSource = Callable[[str], Awaitable[dict[str, str]]]
#: Writes a partition state znode conditionally; the new znode version, or None if it had moved on.
IsrWriter = Callable[[TopicPartition, LeaderIsrAndControllerEpoch], Awaitable[int | None]]
T = TypeVar("T")


def _settle(waiting: asyncio.Future[T], result: asyncio.Future[T]) -> None:
    """Complete ``waiting`` as ``result`` completed."""
    if waiting.done():
        return
    if result.cancelled():
        waiting.cancel()
    elif result.exception() is not None:
        waiting.set_exception(result.exception())
    else:
        waiting.set_result(result.result())


def error_code_of(error: Exception) -> ErrorCode:
    """Kafka's error code for an exception raised on the produce or fetch path."""
    if isinstance(error, KafkaError):
        return error.code
    if isinstance(error, RecordTooLargeError):
        return ErrorCode.MESSAGE_TOO_LARGE
    if isinstance(error, UnsupportedCompressionError):
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if isinstance(error, RecordBatchError):
        return ErrorCode.CORRUPT_MESSAGE
    if isinstance(error, OffsetOutOfRangeError):
        return ErrorCode.OFFSET_OUT_OF_RANGE
    if isinstance(error, OSError):
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.UNKNOWN_SERVER_ERROR


class ReplicaManager:
    """Hosts this broker's partitions and applies the controller's decisions to them."""

    def __init__(self, config: BrokerConfig, log_manager: LogManager, topic_config: TopicConfigSource,
                 isr_writer: IsrWriter, clock: Clock) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.log_manager = log_manager
        self._topic_config = topic_config
        self._isr_writer = isr_writer
        self._isr_updates: dict[TopicPartition, asyncio.Task] = {}
        self._to_wake: set[TopicPartition] = set()  # see _wake_soon
        self._clock = clock
        self.partitions: dict[TopicPartition, Partition] = {}
        self.controller_epoch = 0
        self.produce_purgatory = Purgatory("produce")
        self.fetch_purgatory = Purgatory("fetch")
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots,
                                                config.min_incremental_fetch_session_eviction_ms, clock)
        #: Called with (partition, leader id) for partitions that became followers, and with the
        #: partitions that stopped following; set by the fetcher manager.
        self.on_follow: Callable[[dict[TopicPartition, int], dict[int, tuple[str, int]]], None] = lambda _p, _l: None
        self.on_stop_following: Callable[[Iterable[TopicPartition]], None] = lambda _tps: None
        self._flushing: dict[TopicPartition, asyncio.Task] = {}
        #: Partitions whose log a StopReplica deleted (until they are created again): requests for them are
        #: answered UNKNOWN_TOPIC_OR_PARTITION rather than NOT_LEADER_OR_FOLLOWER.
        self._deleted: set[TopicPartition] = set()
        self._background: set[asyncio.Task] = set()  # file work nobody waits for (shutdown does)
        #: LeaderAndIsr requests are applied one at a time, in arrival order.
        self._state_change_lock = asyncio.Lock()
        #: The partitions whose new leader epoch is being written before they lead at it, and the produce
        #: requests waiting for that (append_records).
        self._epoch_pending: frozenset[TopicPartition] = frozenset()
        self._waiting_produces: list[tuple[ProduceRequest, asyncio.Future[ProduceResponse]]] = []
        self._tasks: list[asyncio.Task] = []

    # -- lookups ----------------------------------------------------------------------------

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def missing_partition_error(self, tp: TopicPartition) -> ErrorCode:
        """What a request for a partition that is no longer hosted here gets: UNKNOWN_TOPIC_OR_PARTITION if its
        log was deleted (its topic is being deleted, or it moved away), else NOT_LEADER_OR_FOLLOWER."""
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in self._deleted else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def _leader_partition(self, tp: TopicPartition, current_leader_epoch: int, *, require_leader: bool = True
                          ) -> Partition:
        partition = self.partitions.get(tp)
        if partition is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not hosted on broker {self.broker_id}")
        partition.check_leader_epoch(current_leader_epoch, require_leader=require_leader)
        return partition

    # -- LeaderAndIsr and StopReplica -------------------------------------------------------

    async def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        """Apply a LeaderAndIsr request: fence stale controllers and stale leader epochs, then make each
        partition leader or follower and move the fetchers."""
        async with self._state_change_lock:
            began = time.monotonic()
            response = await self._become_leader_or_follower(request)
            log.info("finished LeaderAndIsr from controller %d for %d partitions in %.0f ms", request.controller_id,
                     len(request.partition_states), (time.monotonic() - began) * 1000)
            return response

    async def _become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        if request.controller_epoch < self.controller_epoch:
            log.warning("ignoring LeaderAndIsr from controller %d with stale epoch %d (current %d)",
                        request.controller_id, request.controller_epoch, self.controller_epoch)
            return LeaderAndIsrResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH, partition_errors=[])
        self.controller_epoch = request.controller_epoch
        self._drop_stale_incarnations(request)
        creation_errors, created = await self._create_partitions(request)
        await self._adopt_topic_ids(request)
        codes: dict[TopicPartition, ErrorCode] = {}
        followed: dict[TopicPartition, int] = {}
        leading: dict[TopicPartition, LeaderAndIsrPartitionState] = {}
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            codes[tp] = creation_errors.get(tp) or self._check_partition_state(tp, state, request)
            if codes[tp] is not ErrorCode.NONE:
                continue
            if state.leader == self.broker_id:
                leading[tp] = state
            else:
                self._apply_partition_state(self.partitions[tp], state, request)
                followed[tp] = state.leader
        codes.update(await self._make_leaders(leading, request))
        if created:  # their partition.metadata after the leaders' epochs: one batch of durable writes at a time
            self._in_background(flush_topic_ids, created)
        endpoints = {leader.broker_id: (leader.host, leader.port) for leader in request.live_leaders}
        if followed:
            self.on_follow(followed, endpoints)
        self._wake_all([tp for tp, code in codes.items() if code is ErrorCode.NONE])
        return LeaderAndIsrResponse(error_code=ErrorCode.NONE, partition_errors=[
            PartitionError(topic=state.topic, partition=state.partition,
                           error_code=codes[TopicPartition(state.topic, state.partition)])
            for state in request.partition_states])

    async def _make_leaders(self, leading: dict[TopicPartition, LeaderAndIsrPartitionState],
                            request: LeaderAndIsrRequest) -> dict[TopicPartition, ErrorCode]:
        """Make this broker leader of ``leading``. Each new epoch starts at its log end, and is on disk before the
        partition acts as leader at it, as in Kafka (makeLeader flushes the epoch cache before it takes appends):
        the fetchers stop appending to these logs, the epochs are assigned in memory, every changed checkpoint is
        written on worker threads, together, and only then do the partitions become leaders. Meanwhile the event
        loop goes on, and produce requests for them wait (:meth:`append_records`), as Kafka's wait on the
        partition's leaderIsrUpdateLock."""
        if not leading:
            return {}
        self.on_stop_following(leading)
        partitions = {tp: self.partitions[tp] for tp in leading}
        pending = [partitions[tp].log for tp, state in leading.items()
                   if partitions[tp].log.assign_epoch_start_offset(state.leader_epoch, flush=False)]
        failed: dict[TopicPartition, OSError] = {}
        if pending:
            self._epoch_pending = frozenset(leading)
            try:
                began = time.monotonic()
                failed = {each.tp: error for each, error in await asyncio.to_thread(flush_epoch_caches, pending)}
                log.info("%d leader-epoch checkpoints written in %.0f ms", len(pending),
                         (time.monotonic() - began) * 1000)
            except BaseException:  # cancelled (shutdown): none of them may append at its old epoch any more
                for each in pending:
                    partitions[each.tp].role = Role.NONE
                self._release_produces()
                raise
        codes = {}
        for tp, state in leading.items():
            partition = partitions[tp]
            if self.partitions.get(tp) is not partition:  # a StopReplica handled meanwhile removed it
                codes[tp] = self.missing_partition_error(tp)
            elif tp in failed:
                # Not durable: the partition must not lead (nor append at its old epoch, which the cache now ends).
                log.error("%s: cannot write its leader-epoch-checkpoint: %s", tp, failed[tp])
                partition.role = Role.NONE
                codes[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            else:
                self._apply_partition_state(partition, state, request)
                codes[tp] = ErrorCode.NONE
        self._release_produces()
        return codes

    def _drop_stale_incarnations(self, request: LeaderAndIsrRequest) -> None:
        """A local log of another incarnation of a topic (deleted and created again under the same name while this
        broker did not hear of it) is stale: it is deleted, and the partition starts afresh (KIP-516)."""
        stale = []
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            local = self.log_manager.get_log(tp)
            if state.topic_id and local is not None and local.topic_id not in (None, state.topic_id):
                log.warning("%s: the local log belongs to topic id %s, the controller names %s: deleting it",
                            tp, local.topic_id, state.topic_id)
                stale.append(tp)
        self._remove_replicas(stale, delete=True)

    async def _create_partitions(
        self, request: LeaderAndIsrRequest
    ) -> tuple[dict[TopicPartition, ErrorCode], list[Log]]:
        """Create the partitions the request names that this broker hosts and does not have yet: each topic's
        config is read once, and new logs are made on a worker thread, so thousands of new partitions never block
        the event loop with file work (a new leader's epoch is written with the others', :meth:`_make_leaders`;
        its partition.metadata later, in the background, :meth:`Log.record_topic_id`). Returns the failures and
        the logs created."""
        new = {TopicPartition(s.topic, s.partition): s for s in request.partition_states
               if self.broker_id in s.replicas and TopicPartition(s.topic, s.partition) not in self.partitions}
        if not new:
            return {}, []
        failed: dict[TopicPartition, ErrorCode] = {}
        configs: dict[str, LogConfig] = {}
        for topic in sorted({tp.topic for tp in new}):
            try:
                configs[topic] = self.config.log.with_topic_overrides(await self._topic_config(topic))
            except (LogConfigError, KafkaError, OSError) as e:
                log.error("cannot read the config of topic %s: %s", topic, e)
                failed.update({tp: ErrorCode.KAFKA_STORAGE_ERROR for tp in new if tp.topic == topic})
        wanted = [tp for tp in new if tp not in failed]
        existing = {tp: found for tp in wanted if (found := self.log_manager.get_log(tp)) is not None}
        placed = self.log_manager.place_new_logs([tp for tp in wanted if tp not in existing])

        def open_logs() -> dict[TopicPartition, Log | Exception]:
            opened: dict[TopicPartition, Log | Exception] = {}
            for tp, directory in placed.items():
                try:
                    opened[tp] = created = self.log_manager.open_log(directory, tp, configs[tp.topic])
                    if new[tp].topic_id:
                        created.record_topic_id(new[tp].topic_id)
                except (OSError, LogError) as e:
                    opened[tp] = e
            return opened

        opened = await asyncio.to_thread(open_logs) if placed else {}
        created = [each for each in opened.values() if isinstance(each, Log)]
        self.log_manager.add_logs(created)
        for tp, outcome in opened.items():
            if isinstance(outcome, Exception):
                log.error("cannot create the log of %s: %s", tp, outcome)
                failed[tp] = ErrorCode.KAFKA_STORAGE_ERROR
        for tp, found in existing.items():
            found.config = configs[tp.topic]
        for tp in wanted:
            if tp not in failed:
                partition_log = existing.get(tp) or opened[tp]
                assert isinstance(partition_log, Log)
                self.partitions[tp] = Partition(tp, self.broker_id, partition_log, self._clock,
                                                replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
                                                min_insync_replicas=configs[tp.topic].min_insync_replicas)
                self._deleted.discard(tp)
        return failed, created

    async def _adopt_topic_ids(self, request: LeaderAndIsrRequest) -> None:
        """Logs that do not know their topic id yet (written before the topic had one) take the controller's."""
        adopted = [(found, state.topic_id) for state in request.partition_states if state.topic_id
                   and (found := self.log_manager.get_log(TopicPartition(state.topic, state.partition))) is not None
                   and found.topic_id is None]

        def write() -> None:
            for found, topic_id in adopted:
                try:
                    found.assign_topic_id(topic_id)
                except OSError as e:
                    log.error("%s: cannot record topic id %s: %s", found.tp, topic_id, e)

        if adopted:
            await asyncio.to_thread(write)

    def _check_partition_state(self, tp: TopicPartition, state: LeaderAndIsrPartitionState,
                               request: LeaderAndIsrRequest) -> ErrorCode:
        """NONE if the partition state applies here; else why not (a stale leader epoch, a partition not hosted)."""
        partition = self.partitions.get(tp)
        if partition is not None and state.leader_epoch <= partition.leader_epoch:
            self._record_state(tp, state, f"ignored LeaderAndIsr from controller {request.controller_id}: leader epoch "
                                    f"{state.leader_epoch} is not newer than {partition.leader_epoch}")
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if partition is None or self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NONE

    def _apply_partition_state(self, partition: Partition, state: LeaderAndIsrPartitionState,
                               request: LeaderAndIsrRequest) -> None:
        new_state = LeaderAndIsrState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                                   replicas=tuple(state.replicas), zk_version=state.zk_version,
                                   controller_epoch=state.controller_epoch)
        if state.leader == self.broker_id:
            partition.make_leader(new_state)
        else:
            partition.make_follower(new_state)
        self._record_state(partition.tp, state, f"became {partition.role.value} on LeaderAndIsr from controller "
                                          f"{request.controller_id}")

    def _record_state(self, tp: TopicPartition, state: LeaderAndIsrPartitionState | LeaderIsrAndControllerEpoch,
                      reason: str) -> None:
        record_state_change(source="broker", broker_id=self.broker_id, topic=tp.topic, partition=tp.partition,
                            controller_epoch=state.controller_epoch, leader_epoch=state.leader_epoch,
                            leader=state.leader, isr=state.isr, reason=reason)

    def stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse:
        """Stop replicating partitions, and delete their logs when asked. A partition named with a topic id
        other than its local log's is of another incarnation of the topic: it is left alone."""
        if request.controller_epoch < self.controller_epoch:
            return StopReplicaResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH, partition_errors=[])
        self.controller_epoch = request.controller_epoch
        errors = []
        stopped: dict[bool, list[TopicPartition]] = {True: [], False: []}
        for stop in request.partitions:
            tp = TopicPartition(stop.topic, stop.partition)
            local = self.log_manager.get_log(tp)
            if stop.topic_id and local is not None and local.topic_id not in (None, stop.topic_id):
                log.info("%s: StopReplica for topic id %s left alone: the local log is of topic id %s", tp,
                         stop.topic_id, local.topic_id)
            else:
                stopped[stop.delete_partition].append(tp)
                record_replica_state_change(
                    source="broker", broker_id=self.broker_id, topic=tp.topic, partition=tp.partition,
                    replica=self.broker_id, state="deleted" if stop.delete_partition else "stopped",
                    reason=f"StopReplica from controller {request.controller_id}")
            errors.append(PartitionError(topic=stop.topic, partition=stop.partition, error_code=ErrorCode.NONE))
        for delete, tps in stopped.items():
            self._remove_replicas(tps, delete=delete)
        return StopReplicaResponse(error_code=ErrorCode.NONE, partition_errors=errors)

    def _in_background(self, work: Callable[..., object], *args: object) -> None:
        """Run blocking file work on a worker thread; shutdown waits for it."""
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(work, *args))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _remove_replicas(self, tps: list[TopicPartition], *, delete: bool) -> None:
        """Stop following the partitions and forget them; with `delete`, their logs go too (renamed at once,
        removed from disk on a worker thread). Parked requests on them are answered."""
        if not tps:
            return
        self.on_stop_following(tps)
        removed = []
        for tp in tps:
            partition = self.partitions.pop(tp, None)
            if delete:
                self._deleted.add(tp)
                renamed = self.log_manager.delete_log(tp)
                if renamed is not None:
                    self._in_background(remove_deleted_dir, renamed)
            if partition is not None:
                partition.role = Role.NONE
                removed.append(tp)
        self._wake_all(removed)

    # -- produce ----------------------------------------------------------------------------

    def append_records(self, request: ProduceRequest) -> ProduceResponse | asyncio.Future[ProduceResponse]:
        """Append to each partition as leader. acks=0/1 answer now; acks=all (-1) waits in the produce
        purgatory until the HW passes every batch or the request's timeout.

        A request for a partition whose new leader epoch is being written (:meth:`_make_leaders`) waits until it
        is, and so does every produce request after it, so that requests are appended in arrival order."""
        if self._waiting_produces or (self._epoch_pending and any(
                TopicPartition(topic.name, data.partition) in self._epoch_pending
                for topic in request.topics for data in topic.partitions)):
            waiting: asyncio.Future[ProduceResponse] = asyncio.get_running_loop().create_future()
            self._waiting_produces.append((request, waiting))
            return waiting
        return self._append_records(request)

    def _release_produces(self) -> None:
        """Append the produce requests that waited for leader epochs to be written, in arrival order."""
        self._epoch_pending = frozenset()
        waiting, self._waiting_produces = self._waiting_produces, []
        for request, future in waiting:
            result = self._append_records(request)
            if isinstance(result, asyncio.Future):
                result.add_done_callback(functools.partial(_settle, future))
            elif not future.done():
                future.set_result(result)

    def _append_records(self, request: ProduceRequest) -> ProduceResponse | asyncio.Future[ProduceResponse]:
        order: list[TopicPartition] = []
        responses: dict[TopicPartition, ProducePartitionResponse] = {}
        pending: dict[TopicPartition, PendingProduce] = {}
        for topic in request.topics:
            for data in topic.partitions:
                tp = TopicPartition(topic.name, data.partition)
                order.append(tp)
                response = ProducePartitionResponse(partition=data.partition, error_code=ErrorCode.NONE,
                                                    base_offset=-1)
                responses[tp] = response
                try:
                    partition = self._leader_partition(tp, data.current_leader_epoch)
                    info = partition.append_records_to_leader(data.records, request.acks)
                except Exception as e:
                    response.error_code = error_code_of(e)
                    response.error_message = str(e)
                    if response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR:
                        log.exception("append to %s failed", tp)
                    continue
                response.base_offset = info.first_offset
                response.log_start_offset = partition.log.log_start_offset
                if info.flush_needed:
                    self.schedule_flush(partition.log)
                self.fetch_purgatory.check_and_complete(tp)
                if request.acks == -1:
                    pending[tp] = PendingProduce(response, info.last_offset + 1)
                    self.produce_purgatory.check_and_complete(tp)
        if not pending:
            return build_produce_response(order, responses)
        for tp, response in responses.items():
            if tp not in pending:
                pending[tp] = PendingProduce(response, 0, decided=True)
        operation = DelayedProduce(request.timeout_ms, pending, self.partition, self.missing_partition_error,
                                   order)
        return self.produce_purgatory.try_complete_else_watch(operation, [tp for tp, p in pending.items()
                                                                          if not p.decided])

    # -- fetch ------------------------------------------------------------------------------

    def fetch(self, request: FetchRequest) -> FetchResponse | asyncio.Future[FetchResponse]:
        """Serve a fetch. A follower's fetch offset is its LEO on the leader (which may move the HW);
        followers read up to the LEO, consumers up to the HW. A debugging consumer (the replica verification
        tool) reads any replica, leader or follower, up to that replica's HW. Without enough data it waits up to
        max_wait_ms in the fetch purgatory. In an incremental fetch session the request names only what
        changed, and the response only partitions with news (fetch_session.py)."""
        try:
            context = self.fetch_sessions.context(request)
        except KafkaError as e:
            return FetchResponse(error_code=e.code, topics=[], session_id=request.session_id)
        from_follower = request.replica_id >= 0
        wanted = context.partitions
        offsets = {tp: (p.fetch_offset, p.current_leader_epoch) for tp, p in wanted.items()}
        if from_follower:
            for tp, p in wanted.items():
                self._record_follower_fetch(tp, request.replica_id, p.fetch_offset, p.log_start_offset,
                                            p.current_leader_epoch)

        def read() -> list[tuple[TopicPartition, FetchPartitionResponse]]:
            return self._read_for_fetch(request.max_bytes, wanted, from_follower,
                                        request.replica_id == DEBUGGING_CONSUMER_ID)

        def respond(results: list[tuple[TopicPartition, FetchPartitionResponse]]) -> FetchResponse:
            topics: dict[str, list[FetchPartitionResponse]] = {}
            for tp, result in context.reported(results):
                topics.setdefault(tp.topic, []).append(result)
            return FetchResponse(error_code=ErrorCode.NONE, session_id=context.session_id,
                                 topics=[Topic(name=name, partitions=parts) for name, parts in topics.items()])

        immediate = read()
        read_bytes = sum(len(result.records) for _tp, result in immediate)
        has_error = any(result.error_code != ErrorCode.NONE for _tp, result in immediate)
        if request.max_wait_ms <= 0 or read_bytes >= request.min_bytes or has_error or not offsets:
            return respond(immediate)
        operation = DelayedFetch(request.max_wait_ms, offsets,
                                 lambda ready: self._fetch_ready(ready, from_follower, request.min_bytes),
                                 lambda: respond(read()))
        return self.fetch_purgatory.try_complete_else_watch(operation, offsets)

    def _record_follower_fetch(self, tp: TopicPartition, follower: int, fetch_offset: int, log_start: int,
                               epoch: int) -> None:
        partition = self.partitions.get(tp)
        if partition is None or not partition.is_leader or (0 <= epoch != partition.leader_epoch):
            return  # the read reports the error
        if fetch_offset > partition.log.log_end_offset or follower not in partition.remote_replicas:
            return
        if partition.update_follower_fetch_state(follower, fetch_offset, log_start):
            self._wake_soon(tp)
        if follower not in partition.isr and partition.is_follower_in_sync(follower):
            self._change_isr(tp, partition, partition.isr | {follower},
                             f"expand: broker {follower} reached the HW and the epoch start offset")

    def _read_for_fetch(self, max_bytes: int, wanted: dict[TopicPartition, SessionPartition],
                        from_follower: bool, debugging: bool) -> list[tuple[TopicPartition, FetchPartitionResponse]]:
        budget = max_bytes
        results = []
        for tp, fetch in wanted.items():
            response = FetchPartitionResponse(partition=tp.partition, error_code=ErrorCode.NONE, high_watermark=-1,
                                              records=b"")
            results.append((tp, response))
            try:
                partition = self._leader_partition(tp, fetch.current_leader_epoch, require_leader=not debugging)
                result = partition.read(fetch.fetch_offset, max(1, min(fetch.max_bytes, budget)),
                                        up_to_high_watermark=not from_follower)
            except Exception as e:
                response.error_code = error_code_of(e)
                if response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("fetch from %s failed", tp)
                continue
            response.records = result.records
            response.high_watermark = result.high_watermark
            response.last_stable_offset = result.high_watermark
            response.log_start_offset = result.log_start_offset
            budget = max(0, budget - len(result.records))
        return results

    def _fetch_ready(self, wanted: dict[TopicPartition, tuple[int, int]], from_follower: bool, min_bytes: int) -> bool:
        """Whether a parked fetch can be answered: new data past a fetch offset, or a leadership change. With
        fetch.min.bytes 1 (followers) the first partition with news settles it: a follower's session may hold
        thousands of partitions, and every append to one of them asks again."""
        new_data = False
        for tp, (fetch_offset, epoch) in wanted.items():
            partition = self.partitions.get(tp)
            if partition is None or not partition.is_leader or (0 <= epoch != partition.leader_epoch):
                return True
            end = partition.log.log_end_offset if from_follower else partition.log.high_watermark
            if end > fetch_offset:
                if min_bytes <= 1:
                    return True
                new_data = True
        return new_data and self._available_bytes(wanted, from_follower) >= min_bytes

    def _available_bytes(self, wanted: dict[TopicPartition, tuple[int, int]], from_follower: bool) -> int:
        total = 0
        for tp, (fetch_offset, _epoch) in wanted.items():
            partition = self.partitions[tp]
            total += len(partition.read(fetch_offset, 1 << 20, up_to_high_watermark=not from_follower).records)
        return total

    # -- offsets ----------------------------------------------------------------------------

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        """Earliest (log start), latest (HW for consumers, LEO for replicas) or by timestamp, on the leader
        (Partition.list_offset)."""
        topics = []
        for topic in request.topics:
            parts = []
            for asked in topic.partitions:
                tp = TopicPartition(topic.name, asked.partition)
                response = ListOffsetsPartitionResponse(partition=asked.partition, error_code=ErrorCode.NONE)
                parts.append(response)
                try:
                    partition = self._leader_partition(tp, asked.current_leader_epoch)
                    response.timestamp, response.offset = partition.list_offset(
                        asked.timestamp, for_consumer=request.replica_id == CONSUMER_REPLICA_ID)
                except KafkaError as e:
                    response.error_code = e.code
                    continue
                response.leader_epoch = partition.leader_epoch
            topics.append(Topic(name=topic.name, partitions=parts))
        return ListOffsetsResponse(topics=topics)

    def offsets_for_leader_epoch(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        """Where each asked epoch ends on the leader's log (the largest epoch <= the one asked)."""
        topics = []
        for topic in request.topics:
            parts = []
            for asked in topic.partitions:
                tp = TopicPartition(topic.topic, asked.partition)
                try:
                    partition = self._leader_partition(tp, asked.current_leader_epoch)
                except KafkaError as e:
                    parts.append(OffsetForLeaderPartitionResult(error_code=e.code, partition=asked.partition,
                                                                end_offset=-1))
                    continue
                epoch, end_offset = partition.log.end_offset_for_epoch(asked.leader_epoch)
                parts.append(OffsetForLeaderPartitionResult(error_code=ErrorCode.NONE, partition=asked.partition,
                                                            leader_epoch=epoch, end_offset=end_offset))
            topics.append(OffsetForLeaderTopic(topic=topic.topic, partitions=parts))
        return OffsetsForLeaderEpochResponse(topics=topics)

    # -- the ISR ----------------------------------------------------------------------------

    def maybe_shrink_isr(self) -> None:
        """Drop followers not caught up within replica.lag.time.max.ms from the ISRs this broker leads
        (run every replica.lag.time.max.ms / 2, as Kafka does)."""
        for tp, partition in list(self.partitions.items()):
            if partition.is_leader:
                lagging = partition.out_of_sync_replicas()
                if lagging:
                    self._change_isr(tp, partition, partition.isr - lagging,
                                     f"shrink: {sorted(lagging)} not caught up within "
                                     f"{self.config.replica_lag_time_max_ms} ms")

    def _change_isr(self, tp: TopicPartition, partition: Partition, isr: frozenset[int], reason: str) -> None:
        """Persist a new ISR (one update per partition at a time), then adopt it if still leader."""
        if tp in self._isr_updates:
            return
        epoch = partition.leader_epoch
        state = LeaderIsrAndControllerEpoch(leader=self.broker_id, leader_epoch=epoch, isr=tuple(sorted(isr)),
                                            controller_epoch=partition.controller_epoch,
                                            zk_version=partition.zk_version)

        async def update() -> None:
            log.info("%s: writing ISR %s -> %s (%s)", tp, sorted(partition.isr), list(state.isr), reason)
            try:
                version = await self._isr_writer(tp, state)
            except Exception:
                log.exception("%s: writing ISR %s failed", tp, list(state.isr))
                return
            finally:
                self._isr_updates.pop(tp, None)
            if self.partitions.get(tp) is not partition or not partition.is_leader or partition.leader_epoch != epoch:
                return
            if version is None:
                self._record_state(tp, state, f"{reason}: not applied, the state znode changed under this leader")
                return
            partition.update_isr(isr, version)
            self._record_state(tp, state, reason)
            self._wake_soon(tp)

        self._isr_updates[tp] = asyncio.get_running_loop().create_task(update())

    # -- waking parked requests -------------------------------------------------------------

    def _wake_soon(self, tp: TopicPartition) -> None:
        """Wake ``tp``'s parked requests in the loop's next iteration, with every partition changed meanwhile: each
        parked request re-checks once, not once per partition. Thousands change at once when a follower rejoins
        their ISRs (the batched writes answer together) or one fetch moves their HWs, and a follower's parked fetch
        watches thousands: waking it per partition cost seconds of the loop. Safe to defer: a parked request
        re-reads the state when it checks, and nothing else waits on the wake."""
        if not self._to_wake:
            asyncio.get_running_loop().call_soon(self._wake_pending)
        self._to_wake.add(tp)

    def _wake_pending(self) -> None:
        tps, self._to_wake = self._to_wake, set()
        self._wake_all(tps)

    def _wake_all(self, tps: Collection[TopicPartition]) -> None:
        """Let parked produces and fetches on ``tps`` re-check (their HW, data or leadership changed), each once."""
        self.produce_purgatory.check_and_complete_all(tps)
        self.fetch_purgatory.check_and_complete_all(tps)

    def on_follower_append(self, partition: Partition, flush_needed: bool) -> None:
        """Called by the fetcher after it appended to a follower replica."""
        if flush_needed:
            self.schedule_flush(partition.log)

    # -- background work --------------------------------------------------------------------

    def schedule_flush(self, partition_log: Log) -> None:
        """fsync a log on a worker thread, never on the event loop; one flush per log at a time."""
        tp = partition_log.tp
        if tp in self._flushing:
            return

        async def flush() -> None:
            try:
                await asyncio.to_thread(partition_log.flush)
            except OSError as e:
                log.error("flushing %s failed: %s", tp, e)
            finally:
                self._flushing.pop(tp, None)

        self._flushing[tp] = asyncio.get_running_loop().create_task(flush())

    def start(self) -> None:
        """Start the periodic tasks, as Kafka schedules them."""
        config = self.config
        loop = asyncio.get_running_loop()
        manager = self.log_manager
        every = {
            "checkpoint high watermarks": (config.replica_high_watermark_checkpoint_interval_ms,
                                           lambda: self._checkpoint(REPLICATION_OFFSET_CHECKPOINT)),
            "checkpoint recovery points": (config.log_flush_offset_checkpoint_interval_ms,
                                           lambda: self._checkpoint(RECOVERY_POINT_CHECKPOINT)),
            "checkpoint log start offsets": (config.log_flush_start_offset_checkpoint_interval_ms,
                                             lambda: self._checkpoint(LOG_START_OFFSET_CHECKPOINT)),
            "flush due logs": (config.log_flush_scheduler_interval_ms, self._flush_due_logs),
            "retention": (config.log_retention_check_interval_ms, manager.cleanup_logs),
            "ISR shrink": (config.replica_lag_time_max_ms // 2, self.maybe_shrink_isr),
        }
        self._tasks += [loop.create_task(self._every(interval, name, work))
                        for name, (interval, work) in every.items()]

    def _flush_due_logs(self) -> None:
        now = self._clock()
        for partition_log in list(self.log_manager.logs.values()):
            if partition_log.flush_due(now):
                self.schedule_flush(partition_log)

    async def _checkpoint(self, name: str) -> None:
        """Snapshot the offsets on the loop; write them on a worker thread only if they changed."""
        snapshot = self.log_manager.checkpoint_snapshot(name)
        if snapshot is not None:
            await asyncio.to_thread(self.log_manager.write_checkpoint, name, snapshot)

    async def _every(self, interval_ms: int, name: str, work: Callable[[], object]) -> None:
        """Run ``work`` every interval (awaiting what it returns, if anything); log its failures."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                result = work()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("periodic task %r failed", name)

    async def shutdown(self) -> None:
        """Stop periodic work, answer every parked request, wait for flushes."""
        self.produce_purgatory.complete_all()
        self.fetch_purgatory.complete_all()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._flushing.values(), *self._isr_updates.values(), *self._background,
                             return_exceptions=True)
        self._tasks.clear()

    # -- description ------------------------------------------------------------------------

    def describe(self, topics: list[str] | None) -> list[Partition]:
        wanted = None if topics is None else set(topics)
        return [p for tp, p in sorted(self.partitions.items()) if wanted is None or tp.topic in wanted]
