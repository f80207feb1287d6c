"""The group coordinator on the event loop: the shell around the pure rules of broker/coordinator/group (Kafka's
GroupCoordinator around its GroupMetadataManager).

Each request goes to the rules, and the shell carries out the effects they return: answers (a request's own, or one
parked earlier) complete the futures the handlers wait on; timers are armed with loop.call_later by key and fire
into ``timer_fired``; records are appended to __consumer_offsets (offsets_log.py) and their outcome goes back to
``appended``. When this broker becomes the leader of a partition of __consumer_offsets, its groups are loaded from
the log (COORDINATOR_LOAD_IN_PROGRESS meanwhile); when it stops leading one, its groups are unloaded
(NOT_COORDINATOR). Offsets past their retention are removed every offsets.retention.check.interval.ms.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Collection, Iterable, Iterator

from broker.coordinator.config import GroupCoordinatorConfig
from broker.coordinator.group.context import Clock
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.effects import Effects, TimerKey
from broker.coordinator.group.requests import CommitRequest, HeartbeatRequest, JoinRequest, LeavingMember, SyncRequest
from broker.coordinator.group.results import (
    CommitResult,
    DeleteOffsetsResult,
    GroupDescription,
    JoinResult,
    LeaveResult,
    ListGroupsResult,
    OffsetFetchResult,
    SyncResult,
)
from broker.coordinator.offsets_log import OffsetsLog
from broker.log.log import LogError
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.records import RecordBatchError
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

#: How long a partition whose log could not be read waits before it is read again.
LOAD_RETRY_S = 1.0


class GroupCoordinatorShell:
    """The group coordinator of this broker: answers the group apis' handlers and follows the leadership of the
    partitions of __consumer_offsets."""

    def __init__(self, config: GroupCoordinatorConfig, offsets_log: OffsetsLog, clock: Clock) -> None:
        self.config = config
        self._rules = GroupCoordinator(clock, config.group)
        self._offsets_log = offsets_log
        self._clock = clock
        self._timers: dict[TimerKey, asyncio.TimerHandle] = {}
        self._loads: dict[int, asyncio.Task[None]] = {}
        self._expiry: asyncio.Task[None] | None = None

    def partition_for(self, group_id: str) -> int:
        """The partition of __consumer_offsets that holds the group."""
        return self._rules.partition_for(group_id)

    # ------------------------------------------------------------------------------------------ requests

    def join(self, request: JoinRequest) -> asyncio.Future[JoinResult]:
        """JoinGroup: answered when the group's join completes (or at once, if refused)."""
        answer: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self._carry_out(self._rules.join(request, answer))
        return answer

    def sync(self, request: SyncRequest) -> asyncio.Future[SyncResult]:
        """SyncGroup: answered once the leader's assignment is written (or at once, if refused)."""
        answer: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self._carry_out(self._rules.sync(request, answer))
        return answer

    def heartbeat(self, request: HeartbeatRequest) -> ErrorCode:
        error, effects = self._rules.heartbeat(request)
        self._carry_out(effects)
        return error

    def leave(self, group_id: str, members: Iterable[LeavingMember]) -> LeaveResult:
        result, effects = self._rules.leave(group_id, members)
        self._carry_out(effects)
        return result

    def commit(self, request: CommitRequest) -> asyncio.Future[CommitResult]:
        """OffsetCommit: answered once the offsets are written (or at once, if refused)."""
        answer: asyncio.Future[CommitResult] = asyncio.get_running_loop().create_future()
        self._carry_out(self._rules.commit(request, answer))
        return answer

    def committed_offsets(self) -> Iterator[tuple[str, TopicPartition, int]]:
        """(group id, partition, committed offset) of every offset of the groups this broker coordinates."""
        return self._rules.committed_offsets()

    def fetch_offsets(self, group_id: str, partitions: Collection[TopicPartition] | None,
                      require_stable: bool) -> OffsetFetchResult:
        return self._rules.fetch_offsets(group_id, partitions, require_stable)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> DeleteOffsetsResult:
        result, effects = self._rules.delete_offsets(group_id, partitions)
        self._carry_out(effects)
        return result

    def describe(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        return self._rules.describe(group_ids)

    def list_groups(self, states: Collection[str], types: Collection[str]) -> ListGroupsResult:
        return self._rules.list_groups(states, types)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        errors, effects = self._rules.delete_groups(group_ids)
        self._carry_out(effects)
        return errors

    # ------------------------------------------------------------------------------------------ leadership

    def on_leadership_change(self, led: Collection[TopicPartition], resigned: Collection[TopicPartition]) -> None:
        """Kafka's onElection and onResignation for the partitions of __consumer_offsets among those this broker
        became leader of (`led`) and those it no longer leads (`resigned`)."""
        for tp in resigned:
            if tp.topic == OFFSETS_TOPIC:
                self._resign(tp.partition)
        for tp in led:
            if tp.topic == OFFSETS_TOPIC:
                self._elect(tp.partition)

    def _elect(self, partition: int) -> None:
        self._stop_loading(partition)
        self._rules.begin_loading(partition)
        self._loads[partition] = asyncio.get_running_loop().create_task(
            self._load(partition), name=f"load {OFFSETS_TOPIC}-{partition}")

    def _resign(self, partition: int) -> None:
        self._stop_loading(partition)
        self._carry_out(self._rules.unload(partition))

    def _stop_loading(self, partition: int) -> None:
        loading = self._loads.pop(partition, None)
        if loading is not None:
            loading.cancel()

    async def _load(self, partition: int) -> None:
        began = time.monotonic()
        while True:
            try:
                records = await self._offsets_log.read(partition)
                break
            except (LogError, RecordBatchError, OSError) as e:
                log.error("cannot read %s-%d to load its groups (retrying in %.0f s): %s", OFFSETS_TOPIC, partition,
                          LOAD_RETRY_S, e)
                await asyncio.sleep(LOAD_RETRY_S)
        if self._loads.get(partition) is asyncio.current_task():
            del self._loads[partition]
        if records is None:  # no longer hosted here
            self._carry_out(self._rules.unload(partition))
            return
        self._carry_out(self._rules.load(partition, records))
        log.info("loaded the groups and offsets of %s-%d (%d keys) in %.0f ms", OFFSETS_TOPIC, partition,
                 len(records), (time.monotonic() - began) * 1000)

    # ------------------------------------------------------------------------------------------ effects

    def _carry_out(self, effects: Effects) -> None:
        loop = asyncio.get_running_loop()
        for key, delay_ms in effects.timers.items():
            armed = self._timers.pop(key, None)
            if armed is not None:
                armed.cancel()
            if delay_ms is not None:
                self._timers[key] = loop.call_later(delay_ms / 1000, self._fire, key)
        for reply in effects.replies:
            answer = reply.to
            assert isinstance(answer, asyncio.Future)
            if not answer.done():
                answer.set_result(reply.result)
        for append in effects.appends:
            written = self._offsets_log.append(append.partition, append.records, self._clock())
            written.add_done_callback(functools.partial(self._appended, append.append_id))

    def _fire(self, key: TimerKey) -> None:
        self._timers.pop(key, None)
        self._carry_out(self._rules.timer_fired(key))

    def _appended(self, append_id: int, written: asyncio.Future[ErrorCode]) -> None:
        self._carry_out(self._rules.appended(append_id, written.result()))

    # ------------------------------------------------------------------------------------------ start and stop

    def start(self) -> None:
        """Start removing expired offsets every offsets.retention.check.interval.ms."""
        self._expiry = asyncio.get_running_loop().create_task(self._expire_periodically(), name="offset expiry")

    async def _expire_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.config.offsets_retention_check_interval_ms / 1000)
            self._carry_out(self._rules.expire_offsets())

    async def shutdown(self) -> None:
        """Stop expiring offsets, loading partitions and every timer."""
        tasks = [*self._loads.values(), *([self._expiry] if self._expiry is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loads.clear()
        for armed in self._timers.values():
            armed.cancel()
        self._timers.clear()
