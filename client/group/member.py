"""Being a member of a classic group, as Kafka's AbstractCoordinator: finding the coordinator, joining (JoinGroup,
then SyncGroup with the leader's assignment), heartbeats in a task of their own, rejoining when the coordinator
says so, and leaving. What the member does with its assignment is its subclass's (ConsumerCoordinator).

States: UNJOINED, PREPARING_REBALANCE (JoinGroup sent), COMPLETING_REBALANCE (JoinGroup answered, SyncGroup sent),
STABLE (assignment received, heartbeating). An answer is acted on only if the generation it was sent in is still the
member's: a late answer of an older generation changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from client.group.cluster_view import ClusterView
from client.group.config import GroupConfig
from client.group.heartbeat import HeartbeatTimers, backoff_ms
from client.group.lookup import find_coordinator
from protocol.apis.groups import (
    NO_GENERATION,
    NO_MEMBER_ID,
    Coordinator,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeavingGroupMember,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.errors import ErrorCode, KafkaError
from transport.connection import KafkaConnectionError

log = logging.getLogger(__name__)

#: JoinGroup may be held by the coordinator for the whole rebalance timeout: its answer is awaited this much longer.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000
#: Errors after which a member sends JoinGroup again at once.
_REJOIN_AT_ONCE = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                             ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.MEMBER_ID_REQUIRED})
_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


def monotonic_ms() -> float:
    return time.monotonic() * 1000


class MemberState(Enum):
    UNJOINED = "unjoined"
    PREPARING_REBALANCE = "preparing rebalance"
    COMPLETING_REBALANCE = "completing rebalance"
    STABLE = "stable"

    @property
    def joined(self) -> bool:
        return self in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)


@dataclass(frozen=True, slots=True)
class Generation:
    """The generation a member joined, its member id and the protocol the group chose."""

    generation_id: int = NO_GENERATION
    member_id: str = NO_MEMBER_ID
    protocol_name: str | None = None

    @property
    def reset(self) -> bool:
        """No generation (never joined, or given up): Kafka's hasGenerationReset."""
        return self.generation_id == NO_GENERATION and self.protocol_name is None


NO_GENERATION_YET = Generation()


def is_retriable(error: BaseException) -> bool:
    """A failure that retrying may cure: a retriable error code, or a connection problem."""
    return isinstance(error, KafkaConnectionError) or (isinstance(error, KafkaError) and error.retriable)


class _Unjoined(KafkaConnectionError):
    """A JoinGroup answer arrived after the member stopped waiting for it (it left the group meanwhile)."""


class GroupMember(ABC):
    """A member of one group: `ensure_active_group` joins (or rejoins) it; heartbeats keep the session alive in the
    background; `close` leaves it."""

    protocol_type = "consumer"

    def __init__(self, metadata: ClusterView, config: GroupConfig, *,
                 clock: Callable[[], float] = monotonic_ms) -> None:
        self.metadata = metadata
        self.config = config
        self._clock = clock
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION_YET
        self.coordinator: Coordinator | None = None
        self.timers = HeartbeatTimers(config.session_timeout_ms, config.heartbeat_interval_ms,
                                      config.max_poll_interval_ms, config.retry_backoff_ms,
                                      config.retry_backoff_max_ms, clock())
        self._rejoin_needed = True
        self._rejoin_reason = ""
        self._needs_join_prepare = True
        self._join: asyncio.Task[bytes] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._heartbeat_enabled = False
        self._heartbeat_wakeup = asyncio.Event()
        self._heartbeat_failure: BaseException | None = None
        self._closed = False

    # ------------------------------------------------------------------------------ what a kind of member adds

    @abstractmethod
    def join_protocols(self) -> list[JoinGroupProtocol]:
        """The protocols this member offers in JoinGroup, in its order of preference, with their metadata."""

    @abstractmethod
    async def on_join_prepare(self, generation: Generation, deadline: float) -> bool:
        """Before (re)joining: give up what must be given up. False if that is not finished by `deadline` (the join
        is then tried again at the next call)."""

    @abstractmethod
    async def on_leader_elected(self, leader_id: str, protocol: str, members: Sequence[JoinGroupMember],
                                skip_assignment: bool) -> dict[str, bytes]:
        """As the leader: each member's assignment (by member id) for SyncGroup."""

    @abstractmethod
    async def on_join_complete(self, generation: Generation, assignment: bytes) -> None:
        """The member joined `generation` and was given `assignment`."""

    @abstractmethod
    async def on_leave_prepare(self) -> None:
        """Before leaving the group: give up what it holds."""

    # ------------------------------------------------------------------------------ the coordinator

    def coordinator_unknown(self) -> bool:
        return self.coordinator is None

    def mark_coordinator_unknown(self, cause: str) -> None:
        if self.coordinator is not None:
            log.info("group %s: coordinator %d (%s:%d) unavailable or invalid (%s); looking for it again",
                     self.config.group_id, self.coordinator.node_id, self.coordinator.host, self.coordinator.port,
                     cause)
            self.coordinator = None

    async def ensure_coordinator_ready(self, deadline: float) -> bool:
        """Find the coordinator unless known, retrying retriable failures until `deadline`; False if still unknown
        then. Raises KafkaError for an error that retrying does not cure."""
        attempts = 0
        while self.coordinator is None:
            try:
                self.coordinator = await find_coordinator(self.metadata, self.config.group_id)
            except (KafkaError, KafkaConnectionError) as e:
                if not is_retriable(e):
                    raise
                log.debug("group %s: coordinator not found: %s", self.config.group_id, e)
            else:
                log.info("group %s: coordinator is broker %d (%s:%d)", self.config.group_id,
                         self.coordinator.node_id, self.coordinator.host, self.coordinator.port)
                self.timers.reset_session_timeout(self._clock())
                return True
            if not await self._sleep(self._backoff(attempts), deadline):
                return False
            attempts += 1
        return True

    async def request(self, body: object, *, timeout_ms: int | None = None) -> Any:
        """Send a request to the coordinator; a connection failure marks the coordinator unknown (and raises)."""
        coordinator = self.coordinator
        if coordinator is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not known")
        try:
            connection = await self.metadata.connection_to(coordinator.host, coordinator.port)
            return await connection.request(body, timeout_ms=timeout_ms)
        except KafkaConnectionError as e:
            if self.coordinator is coordinator:
                self.mark_coordinator_unknown(str(e))
            raise

    # ------------------------------------------------------------------------------ joining

    def request_rejoin(self, reason: str) -> None:
        log.info("group %s: rejoining: %s", self.config.group_id, reason)
        self._rejoin_reason = reason
        self._rejoin_needed = True

    def rejoin_needed_or_pending(self) -> bool:
        return self._rejoin_needed or self._join is not None

    def generation_if_stable(self) -> Generation | None:
        return self.generation if self.state is MemberState.STABLE else None

    def rebalance_in_progress(self) -> bool:
        return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    async def ensure_active_group(self, deadline: float) -> bool:
        """Join the group unless a member in a stable generation already, waiting until `deadline`; False if the
        join is still under way then (it goes on, and the next call picks it up)."""
        if not await self.ensure_coordinator_ready(deadline):
            return False
        self._start_heartbeats()
        return await self._join_group_if_needed(deadline)

    async def _join_group_if_needed(self, deadline: float) -> bool:
        while self.rejoin_needed_or_pending():
            if not await self.ensure_coordinator_ready(deadline):
                return False
            if self._needs_join_prepare:
                self._needs_join_prepare = False
                if not await self.on_join_prepare(self.generation, deadline):
                    self._needs_join_prepare = True
                    return False
            join = self._initiate_join_group()
            if not await _wait_until(join, deadline - self._clock()):
                return False
            self._join = None
            error = join.exception()
            if error is None:
                if not self.generation.reset and self.state is MemberState.STABLE:
                    self._needs_join_prepare = True
                    await self.on_join_complete(self.generation, join.result())
                else:
                    self._reset_state_and_rejoin(f"the generation or state changed to {self.generation}/"
                                                 f"{self.state.value} before the rebalance completed", True)
                continue
            code = error.code if isinstance(error, KafkaError) else None
            if code != ErrorCode.MEMBER_ID_REQUIRED:
                self.request_rejoin(f"rebalance failed: {error}")
            if code in _REJOIN_AT_ONCE:
                continue
            if not is_retriable(error):
                raise error
            if not await self._sleep(self.config.retry_backoff_ms, deadline):
                return False
        return True

    def _initiate_join_group(self) -> asyncio.Task[bytes]:
        if self._join is None:
            self.state = MemberState.PREPARING_REBALANCE
            self._join = asyncio.get_running_loop().create_task(self._join_and_sync())
        return self._join

    async def _join_and_sync(self) -> bytes:
        """JoinGroup, then SyncGroup: the member's assignment. Raises KafkaError (with the error code the
        coordinator answered) or KafkaConnectionError."""
        sent = self.generation
        log.info("group %s: (re)joining", self.config.group_id)
        request = JoinGroupRequest(
            group_id=self.config.group_id, session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms, member_id=sent.member_id,
            group_instance_id=self.config.group_instance_id, protocol_type=self.protocol_type,
            protocols=self.join_protocols(), reason=self._rejoin_reason or None)
        timeout = max(self.config.request_timeout_ms, self.config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        response: JoinGroupResponse = await self.request(request, timeout_ms=timeout)
        error = ErrorCode.from_code(response.error_code)
        if error == ErrorCode.NONE:
            if response.protocol_type is not None and response.protocol_type != self.protocol_type:
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"JoinGroup answered protocol type {response.protocol_type!r}")
            if self.state is not MemberState.PREPARING_REBALANCE:
                raise _Unjoined("the member left the group while joining")
            self.state = MemberState.COMPLETING_REBALANCE
            self._enable_heartbeats()
            self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
            log.info("group %s: joined generation %d as %s (protocol %s)%s", self.config.group_id,
                     response.generation_id, response.member_id, response.protocol_name,
                     ", the leader" if response.leader == response.member_id else "")
            assignments: dict[str, bytes] = {}
            if response.leader == response.member_id:
                assignments = await self.on_leader_elected(response.leader, response.protocol_name or "",
                                                           response.members, response.skip_assignment)
            return await self._sync_group(assignments)
        if error == ErrorCode.UNKNOWN_MEMBER_ID and self.generation == sent:
            self._reset_state_and_rejoin(f"{error.name} from JoinGroup", True)
        elif error in _COORDINATOR_MOVED:
            self.mark_coordinator_unknown(f"{error.name} from JoinGroup")
        elif error == ErrorCode.MEMBER_ID_REQUIRED:
            self.generation = Generation(NO_GENERATION, response.member_id, None)
            self.request_rejoin(f"need to rejoin with the member id the coordinator gave: {response.member_id}")
        raise KafkaError(error, f"JoinGroup of group {self.config.group_id!r} failed")

    async def _sync_group(self, assignments: dict[str, bytes]) -> bytes:
        sent = self.generation
        request = SyncGroupRequest(
            group_id=self.config.group_id, generation_id=sent.generation_id, member_id=sent.member_id,
            group_instance_id=self.config.group_instance_id, protocol_type=self.protocol_type,
            protocol_name=sent.protocol_name,
            assignments=[SyncGroupAssignment(member_id=m, assignment=a) for m, a in assignments.items()])
        response: SyncGroupResponse = await self.request(request)
        error = ErrorCode.from_code(response.error_code)
        if error == ErrorCode.NONE:
            if response.protocol_type is not None and response.protocol_type != self.protocol_type:
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"SyncGroup answered protocol type {response.protocol_type!r}")
            if self.generation.reset or self.state is not MemberState.COMPLETING_REBALANCE:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION, "the generation was reset before SyncGroup answered")
            if response.protocol_name is not None and response.protocol_name != sent.protocol_name:
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"SyncGroup answered protocol {response.protocol_name!r}")
            log.info("group %s: synced generation %d", self.config.group_id, sent.generation_id)
            self.state = MemberState.STABLE
            self._rejoin_reason = ""
            self._rejoin_needed = False
            return response.assignment
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION) and self.generation == sent:
            self._reset_state_and_rejoin(f"{error.name} from SyncGroup", error != ErrorCode.ILLEGAL_GENERATION)
        elif error in _COORDINATOR_MOVED:
            self.mark_coordinator_unknown(f"{error.name} from SyncGroup")
        raise KafkaError(error, f"SyncGroup of group {self.config.group_id!r} failed")

    def reset_state_on_error(self, api: str, error: ErrorCode, *, reset_member_id: bool) -> None:
        self._reset_state_and_rejoin(f"{error.name} from {api}", reset_member_id)

    def _reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        log.info("group %s: resetting the generation%s: %s", self.config.group_id,
                 " and member id" if reset_member_id else "", reason)
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION_YET if reset_member_id else Generation(member_id=self.generation.member_id)
        self.request_rejoin(reason)
        self._needs_join_prepare = True

    # ------------------------------------------------------------------------------ heartbeats

    def poll_heartbeat(self, now: float) -> None:
        """The application polled: raise what stopped the heartbeats for good, restart the poll clock."""
        if self._heartbeat_failure is not None:
            failure, self._heartbeat_failure = self._heartbeat_failure, None
            raise failure
        if self.timers.should_heartbeat(now):
            self._heartbeat_wakeup.set()
        self.timers.poll(now)

    def _start_heartbeats(self) -> None:
        if self._heartbeat_task is None and not self._closed:
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())

    def _enable_heartbeats(self) -> None:
        self._heartbeat_enabled = True
        self.timers.reset_timeouts(self._clock())
        self._heartbeat_wakeup.set()

    async def _heartbeat_loop(self) -> None:
        """Kafka's heartbeat thread: heartbeats while the member is in a generation, the coordinator looked for when
        lost, the member leaves if the application stops polling for max.poll.interval.ms."""
        try:
            while not self._closed:
                if not self._heartbeat_enabled or not self.state.joined:
                    self._heartbeat_enabled = False
                    await self._nap(None)
                    continue
                now = self._clock()
                if self.coordinator is None:
                    with contextlib.suppress(KafkaError, KafkaConnectionError):
                        await self.ensure_coordinator_ready(now)
                    await self._nap(self.config.retry_backoff_ms)
                elif self.timers.session_timeout_expired(now):
                    self.mark_coordinator_unknown("the session timed out without a heartbeat answer")
                elif self.timers.poll_timeout_expired(now):
                    log.warning("group %s: no poll for max.poll.interval.ms (%d ms): the poll loop spends too long on "
                                "its records; leaving the group (raise max.poll.interval.ms, or fetch fewer records "
                                "per poll)", self.config.group_id, self.config.max_poll_interval_ms)
                    await self.maybe_leave_group("the consumer's poll timeout expired")
                elif not self.timers.should_heartbeat(now):
                    await self._nap(self.timers.time_to_next_heartbeat(now))
                else:
                    self.timers.sent_heartbeat(now)
                    await self._heartbeat()
        except Exception as e:
            log.error("group %s: the heartbeat task failed: %s", self.config.group_id, e)
            self._heartbeat_failure = e

    async def _heartbeat(self) -> None:
        sent = self.generation
        request = HeartbeatRequest(group_id=self.config.group_id, generation_id=sent.generation_id,
                                   member_id=sent.member_id, group_instance_id=self.config.group_instance_id)
        try:
            response: HeartbeatResponse = await self.request(request)
        except (KafkaError, KafkaConnectionError) as e:
            log.debug("group %s: heartbeat failed: %s", self.config.group_id, e)
            self.timers.failed_heartbeat(self._clock())
            return
        error = ErrorCode.from_code(response.error_code)
        now = self._clock()
        if error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            if error == ErrorCode.REBALANCE_IN_PROGRESS and self.state is MemberState.STABLE:
                self.request_rejoin("the group is rebalancing")
            self.timers.received_heartbeat(now)
        elif error in _COORDINATOR_MOVED:
            self.mark_coordinator_unknown(f"{error.name} from Heartbeat")
            self.timers.failed_heartbeat(now)
        elif error in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            if self.generation != sent:
                return  # an answer to an older generation
            self.reset_state_on_error("Heartbeat", error, reset_member_id=error != ErrorCode.ILLEGAL_GENERATION)
            if error == ErrorCode.FENCED_INSTANCE_ID:
                raise KafkaError(error, f"group.instance.id {self.config.group_instance_id!r} was fenced by "
                                        f"another instance")
            self.timers.failed_heartbeat(now)
        else:
            raise KafkaError(error, "unexpected error in a heartbeat answer")

    async def _nap(self, ms: float | None) -> None:
        """Wait `ms` (None: for ever) or until woken."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._heartbeat_wakeup.wait(), None if ms is None else ms / 1000)
        self._heartbeat_wakeup.clear()

    # ------------------------------------------------------------------------------ leaving

    async def maybe_leave_group(self, reason: str) -> None:
        """Leave the group (a dynamic member in a generation, with a known coordinator, says so in LeaveGroup; a
        static member only forgets its generation, so that the coordinator keeps its place for the session)."""
        if (self.config.group_instance_id is None and self.coordinator is not None
                and self.state is not MemberState.UNJOINED and self.generation.member_id):
            log.info("group %s: member %s leaves: %s", self.config.group_id, self.generation.member_id, reason)
            request = LeaveGroupRequest(group_id=self.config.group_id, members=[
                LeavingGroupMember(member_id=self.generation.member_id, reason=reason)])
            try:
                response: LeaveGroupResponse = await self.request(request)
                error = ErrorCode.from_code(response.error_code)
                if error != ErrorCode.NONE:
                    log.info("group %s: LeaveGroup answered %s", self.config.group_id, error.name)
            except (KafkaError, KafkaConnectionError) as e:
                log.info("group %s: LeaveGroup failed: %s", self.config.group_id, e)
        self._reset_state_and_rejoin("the member left the group", True)

    async def close(self) -> None:
        """Stop heartbeating and leave the group."""
        self._closed = True
        self._heartbeat_wakeup.set()
        tasks = [t for t in (self._heartbeat_task, self._join) if t is not None]
        self._heartbeat_task = self._join = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.config.leave_group_on_close:
            try:
                await self.on_leave_prepare()
            finally:
                await self.maybe_leave_group("the consumer is being closed")

    # ------------------------------------------------------------------------------ waiting

    def _backoff(self, attempts: int) -> float:
        return backoff_ms(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms, attempts)

    async def _sleep(self, ms: float, deadline: float) -> bool:
        """Sleep `ms`, or only until `deadline`; False if the deadline has passed."""
        remaining = deadline - self._clock()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(ms, remaining) / 1000)
        return self._clock() < deadline


async def _wait_until(task: asyncio.Task[Any], timeout_ms: float) -> bool:
    """Wait for `task` at most `timeout_ms` (not cancelling it); whether it is done."""
    if not task.done() and timeout_ms > 0:
        await asyncio.wait([task], timeout=timeout_ms / 1000)
    return task.done()
