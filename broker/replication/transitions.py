"""The controller's decisions applied to this broker's partitions: LeaderAndIsr and StopReplica."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Protocol

from broker.config import BrokerConfig
from broker.log.config import LogConfig, LogConfigError
from broker.log.log import Clock, Log, LogError, flush_epoch_caches, flush_topic_ids
from broker.log.manager import LogManager, remove_deleted_dir
from broker.replication.hosted import HostedPartitions
from broker.replication.partition import LeaderAndIsrState, Partition, Role
from broker.replication.state_records import record_partition_state
from protocol.apis.replica_control import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.state_change import record_replica_state_change
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

TopicConfigSource = Callable[[str], Awaitable[dict[str, str]]]
#: Told the partitions that became followers (with their leaders' ids) and the live leaders' endpoints.
FollowCallback = Callable[[dict[TopicPartition, int], dict[int, tuple[str, int]]], None]
#: Told the partitions that stopped following (they lead now, or are no longer hosted).
StopFollowingCallback = Callable[[Iterable[TopicPartition]], None]
#: Told, after a LeaderAndIsr or StopReplica, the partitions this broker became leader of and those it no longer
#: leads (Kafka's onLeadershipChange: the coordinators load and unload the partitions of their internal topics).
LeadershipCallback = Callable[[Collection[TopicPartition], Collection[TopicPartition]], None]


class ProduceHold(Protocol):
    """What becoming leader needs of the produce path: produce requests held while new leader epochs are written."""

    def hold(self, tps: frozenset[TopicPartition]) -> None: ...

    def release(self) -> None: ...


class ReplicaTransitions:
    """Applies LeaderAndIsr (fencing stale controllers and stale leader epochs, creating partitions, making each leader
    or follower, and moving the fetchers) and StopReplica (stopping partitions, deleting their logs when asked).
    Requests for partitions that change are woken."""

    def __init__(self, config: BrokerConfig, log_manager: LogManager, topic_config: TopicConfigSource, clock: Clock,
                 hosted: HostedPartitions, produce: ProduceHold, wake_all: Callable[[Collection[TopicPartition]], None],
                 run_in_thread: Callable[..., None]) -> None:
        self._config = config
        self._broker_id = config.broker_id
        self._log_manager = log_manager
        self._topic_config = topic_config
        self._clock = clock
        self._hosted = hosted
        self._produce = produce
        self._wake_all = wake_all
        self._run_in_thread = run_in_thread
        self.controller_epoch = 0
        #: Called with (partition, leader id) for partitions that became followers, and with the
        #: partitions that stopped following; set by the fetcher manager.
        self.on_follow: FollowCallback = lambda _p, _l: None
        self.on_stop_following: StopFollowingCallback = lambda _tps: None
        self.on_leadership_change: LeadershipCallback = lambda _led, _resigned: None
        #: LeaderAndIsr requests are applied one at a time, in arrival order.
        self._state_change_lock = asyncio.Lock()

    # -- LeaderAndIsr -----------------------------------------------------------------------

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
            if state.leader == self._broker_id:
                leading[tp] = state
            else:
                self._apply_partition_state(self._hosted.partitions[tp], state, request)
                followed[tp] = state.leader
        leading_before = {tp for tp in leading if self._hosted.partitions[tp].role is Role.LEADER}
        codes.update(await self._make_leaders(leading, request))
        if created:  # their partition.metadata after the leaders' epochs: one batch of durable writes at a time
            self._run_in_thread(flush_topic_ids, created)
        endpoints = {leader.broker_id: (leader.host, leader.port) for leader in request.live_leaders}
        if followed:
            self.on_follow(followed, endpoints)
        self._wake_all([tp for tp, code in codes.items() if code is ErrorCode.NONE])
        self.on_leadership_change([tp for tp in leading if codes[tp] is ErrorCode.NONE and tp not in leading_before],
                                  list(followed))
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
        loop goes on, and produce requests for them wait (:meth:`ProduceHold.hold`), as Kafka's wait on the
        partition's leaderIsrUpdateLock."""
        if not leading:
            return {}
        self.on_stop_following(leading)
        partitions = {tp: self._hosted.partitions[tp] for tp in leading}
        pending = [partitions[tp].log for tp, state in leading.items()
                   if partitions[tp].log.assign_epoch_start_offset(state.leader_epoch, flush=False)]
        failed: dict[TopicPartition, OSError] = {}
        if pending:
            self._produce.hold(frozenset(leading))
            try:
                began = time.monotonic()
                failed = {each.tp: error for each, error in await asyncio.to_thread(flush_epoch_caches, pending)}
                log.info("%d leader-epoch checkpoints written in %.0f ms", len(pending),
                         (time.monotonic() - began) * 1000)
            except BaseException:  # cancelled (shutdown): none of them may append at its old epoch any more
                for each in pending:
                    partitions[each.tp].role = Role.NONE
                self._produce.release()
                raise
        codes = {}
        for tp, state in leading.items():
            partition = partitions[tp]
            if self._hosted.get(tp) is not partition:  # a StopReplica handled meanwhile removed it
                codes[tp] = self._hosted.missing_partition_error(tp)
            elif tp in failed:
                # Not durable: the partition must not lead (nor append at its old epoch, which the cache now ends).
                log.error("%s: cannot write its leader-epoch-checkpoint: %s", tp, failed[tp])
                partition.role = Role.NONE
                codes[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            else:
                self._apply_partition_state(partition, state, request)
                codes[tp] = ErrorCode.NONE
        self._produce.release()
        return codes

    def _drop_stale_incarnations(self, request: LeaderAndIsrRequest) -> None:
        """A local log of another incarnation of a topic (deleted and created again under the same name while this
        broker did not hear of it) is stale: it is deleted, and the partition starts afresh (KIP-516)."""
        stale = []
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            local = self._log_manager.get_log(tp)
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
        hosted = self._hosted
        new = {TopicPartition(s.topic, s.partition): s for s in request.partition_states
               if self._broker_id in s.replicas and TopicPartition(s.topic, s.partition) not in hosted.partitions}
        if not new:
            return {}, []
        failed: dict[TopicPartition, ErrorCode] = {}
        configs: dict[str, LogConfig] = {}
        for topic in sorted({tp.topic for tp in new}):
            try:
                configs[topic] = self._log_manager.default_config.with_topic_overrides(await self._topic_config(topic))
            except (LogConfigError, KafkaError, OSError) as e:
                log.error("cannot read the config of topic %s: %s", topic, e)
                failed.update({tp: ErrorCode.KAFKA_STORAGE_ERROR for tp in new if tp.topic == topic})
        wanted = [tp for tp in new if tp not in failed]
        existing = {tp: found for tp in wanted if (found := self._log_manager.get_log(tp)) is not None}
        placed = self._log_manager.place_new_logs([tp for tp in wanted if tp not in existing])

        def open_logs() -> dict[TopicPartition, Log | Exception]:
            opened: dict[TopicPartition, Log | Exception] = {}
            for tp, directory in placed.items():
                try:
                    opened[tp] = created = self._log_manager.open_log(directory, tp, configs[tp.topic])
                    if new[tp].topic_id:
                        created.record_topic_id(new[tp].topic_id)
                except (OSError, LogError) as e:
                    opened[tp] = e
            return opened

        opened = await asyncio.to_thread(open_logs) if placed else {}
        created = [each for each in opened.values() if isinstance(each, Log)]
        self._log_manager.add_logs(created)
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
                hosted.add(tp, Partition(tp, self._broker_id, partition_log, self._clock,
                                         replica_lag_time_max_ms=self._config.replica_lag_time_max_ms,
                                         min_insync_replicas=configs[tp.topic].min_insync_replicas))
        return failed, created

    async def _adopt_topic_ids(self, request: LeaderAndIsrRequest) -> None:
        """Logs that do not know their topic id yet (written before the topic had one) take the controller's."""
        adopted = [(found, state.topic_id) for state in request.partition_states if state.topic_id
                   and (found := self._log_manager.get_log(TopicPartition(state.topic, state.partition))) is not None
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
        partition = self._hosted.get(tp)
        if partition is not None and state.leader_epoch <= partition.leader_epoch:
            record_partition_state(self._broker_id, tp, state,
                                   f"ignored LeaderAndIsr from controller {request.controller_id}: leader epoch "
                                   f"{state.leader_epoch} is not newer than {partition.leader_epoch}")
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if partition is None or self._broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NONE

    def _apply_partition_state(self, partition: Partition[Log], state: LeaderAndIsrPartitionState,
                               request: LeaderAndIsrRequest) -> None:
        new_state = LeaderAndIsrState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                                      replicas=tuple(state.replicas), zk_version=state.zk_version,
                                      controller_epoch=state.controller_epoch)
        if state.leader == self._broker_id:
            partition.make_leader(new_state)
        else:
            partition.make_follower(new_state)
        record_partition_state(self._broker_id, partition.tp, state,
                               f"became {partition.role.value} on LeaderAndIsr from controller "
                               f"{request.controller_id}")

    # -- StopReplica ------------------------------------------------------------------------

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
            local = self._log_manager.get_log(tp)
            if stop.topic_id and local is not None and local.topic_id not in (None, stop.topic_id):
                log.info("%s: StopReplica for topic id %s left alone: the local log is of topic id %s", tp,
                         stop.topic_id, local.topic_id)
            else:
                stopped[stop.delete_partition].append(tp)
                record_replica_state_change(
                    source="broker", broker_id=self._broker_id, topic=tp.topic, partition=tp.partition,
                    replica=self._broker_id, state="deleted" if stop.delete_partition else "stopped",
                    reason=f"StopReplica from controller {request.controller_id}")
            errors.append(PartitionError(topic=stop.topic, partition=stop.partition, error_code=ErrorCode.NONE))
        for delete, tps in stopped.items():
            self._remove_replicas(tps, delete=delete)
        return StopReplicaResponse(error_code=ErrorCode.NONE, partition_errors=errors)

    def _remove_replicas(self, tps: list[TopicPartition], *, delete: bool) -> None:
        """Stop following the partitions and forget them; with `delete`, their logs go too (renamed at once,
        removed from disk on a worker thread). Parked requests on them are answered."""
        if not tps:
            return
        self.on_stop_following(tps)
        removed = []
        for tp in tps:
            partition = self._hosted.remove(tp, deleted=delete)
            if delete:
                renamed = self._log_manager.delete_log(tp)
                if renamed is not None:
                    self._run_in_thread(remove_deleted_dir, renamed)
            if partition is not None:
                partition.role = Role.NONE
                removed.append(tp)
        self._wake_all(removed)
        self.on_leadership_change((), removed)
