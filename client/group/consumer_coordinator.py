"""A consumer's side of its group, as Kafka's ConsumerCoordinator: the subscription offered in JoinGroup (one
protocol per configured assignor), the leader's assignment, handing partitions over (the rebalance callbacks, the
commit before giving partitions up), committing offsets (synchronously, asynchronously, automatically) and reading
the committed ones.

With the EAGER protocol (range, roundrobin, sticky) a member gives up every partition before it rejoins; with the
COOPERATIVE one (cooperative-sticky) it keeps those assigned to it again and gives up only those moved away, then
rejoins once more so that they can be handed on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from client.assignors.base import Assignor, Member, RebalanceProtocol
from client.assignors.sticky import COOPERATIVE_STICKY
from client.group.cluster_view import ClusterView
from client.group.config import GroupConfig
from client.group.member import Generation, GroupMember, MemberState, is_retriable, monotonic_ms
from client.group.offsets import (
    OffsetAndMetadata,
    commit_errors,
    fetched_group,
    fetched_offsets,
    offset_commit_request,
    offset_fetch_request,
)
from client.group.rebalance_listener import ConsumerRebalanceListener, invoke
from protocol.apis.groups import JoinGroupMember, JoinGroupProtocol
from protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.kafka.data import DataFormatError
from protocol.topic_partition import TopicPartition
from transport.connection import KafkaConnectionError

log = logging.getLogger(__name__)

#: How often the leader looks again for a subscribed topic it found no partitions of.
_MISSING_TOPIC_REFRESH_MS = 1000

CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], Exception | None], object]


class CommitFailedError(KafkaError):
    """A commit that cannot succeed: the consumer is no longer a member of the generation the offsets were read in
    (it was dropped from the group, or the group rebalanced); its partitions may be someone else's by now."""


class SubscribedPartitions(Protocol):
    """The consumer's side of the assignment: what it holds, and its positions."""

    def assigned(self) -> list[TopicPartition]:
        """The partitions assigned now."""

    def assign_from_subscribed(self, partitions: Sequence[TopicPartition]) -> None:
        """Read exactly these partitions from now on (those kept keep their positions)."""

    def consumed_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offset of the next record to hand out of each assigned partition that has a position."""


def rebalance_in_progress_error(what: str) -> KafkaError:
    return KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"{what} cannot be completed: the group is rebalancing; "
                                                       f"poll to complete the rebalance, then try again")


class ConsumerCoordinator(GroupMember):
    """The group membership, assignment and committed offsets of one consumer."""

    def __init__(self, metadata: ClusterView, config: GroupConfig, assignors: Sequence[Assignor],
                 partitions: SubscribedPartitions, *, clock: Callable[[], float] = monotonic_ms) -> None:
        super().__init__(metadata, config, clock=clock)
        if not assignors:
            raise ValueError("partition.assignment.strategy names no assignor")
        common = set(assignors[0].supported_protocols).intersection(*(a.supported_protocols for a in assignors))
        if not common:
            raise ValueError(f"the assignors {', '.join(a.name for a in assignors)} have no rebalance protocol in "
                             f"common")
        self.protocol = max(common)
        self.assignors = list(assignors)
        self.subscription: frozenset[str] = frozenset()
        self.subscribed = False
        self.listener: ConsumerRebalanceListener | None = None
        self.is_leader = False
        self._partitions = partitions
        self._joined_subscription: frozenset[str] | None = None
        self._group_topics: frozenset[str] = frozenset()
        self._assignment_snapshot: dict[str, int] | None = None
        self._next_metadata_refresh = 0.0
        self._next_auto_commit = clock() + config.auto_commit_interval_ms
        self._auto_commit: asyncio.Task[None] | None = None
        self._join_prepare_deadline: float | None = None
        self._async_commits: set[asyncio.Task[None]] = set()
        self._fenced: KafkaError | None = None

    # ------------------------------------------------------------------------------ subscription

    def subscribe(self, topics: Iterable[str], listener: ConsumerRebalanceListener | None = None) -> None:
        """Consume these topics through the group from the next poll on (a change rejoins the group)."""
        self.subscription = frozenset(topics)
        self.subscribed = True
        self.listener = listener

    async def unsubscribe(self) -> None:
        """Give up the partitions (the revoked callback) and leave the group."""
        await self.on_leave_prepare()
        await self.maybe_leave_group("the consumer unsubscribed")
        self.subscription = frozenset()
        self.subscribed = False
        self._joined_subscription = None

    async def poll(self, deadline: float) -> bool:
        """What a consumer's poll does for its group: keep the heartbeats informed, (re)join the group if needed
        (waiting until `deadline`), commit automatically when it is time. False if the group is not joined yet."""
        self._raise_if_fenced()
        if self.subscribed:
            self.poll_heartbeat(self._clock())
            if self.coordinator is None and not await self.ensure_coordinator_ready(deadline):
                return False
            await self._maybe_refresh_group_metadata()
            if self.rejoin_needed_or_pending() and not await self.ensure_active_group(deadline):
                return False
        self._maybe_auto_commit()
        return True

    def rejoin_needed_or_pending(self) -> bool:
        if not self.subscribed:
            return False
        if self._assignment_snapshot is not None and self._assignment_snapshot != self._metadata_snapshot():
            self._request_rejoin_if_necessary("the partitions of the group's topics changed")
            return True
        if self._joined_subscription is not None and self._joined_subscription != self.subscription:
            self._request_rejoin_if_necessary("the subscription changed")
            return True
        return super().rejoin_needed_or_pending()

    def _request_rejoin_if_necessary(self, reason: str) -> None:
        if not self._rejoin_needed:
            self.request_rejoin(reason)

    def _metadata_snapshot(self) -> dict[str, int]:
        return {t: n for t in sorted(self._group_topics) if (n := self.metadata.partition_count(t)) > 0}

    async def _maybe_refresh_group_metadata(self) -> None:
        """As the leader, look at the group's topics again every metadata.max.age.ms (every second while one has
        no partitions known), so that added partitions or topics lead to a new assignment."""
        now = self._clock()
        if not self.is_leader or now < self._next_metadata_refresh:
            return
        try:
            await self.metadata.refresh(sorted(self._group_topics))
        except KafkaConnectionError as e:
            log.debug("group %s: metadata refresh failed: %s", self.config.group_id, e)
        missing = len(self._metadata_snapshot()) < len(self._group_topics)
        self._next_metadata_refresh = now + (_MISSING_TOPIC_REFRESH_MS if missing
                                             else self.config.metadata_max_age_ms)

    # ------------------------------------------------------------------------------ joining

    def _assignor(self, name: str | None) -> Assignor:
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                         f"the coordinator chose the assignor {name!r}, which this consumer does not offer")

    def join_protocols(self) -> list[JoinGroupProtocol]:
        self._joined_subscription = self.subscription
        topics = tuple(sorted(self.subscription))
        owned = tuple(self._partitions.assigned())
        return [JoinGroupProtocol(name=assignor.name, metadata=encode_subscription(Subscription(
            topics, assignor.subscription_user_data(topics), owned, self.generation.generation_id)))
            for assignor in self.assignors]

    async def on_join_prepare(self, generation: Generation, deadline: float) -> bool:
        if self._join_prepare_deadline is None:
            self._join_prepare_deadline = self._clock() + self.config.rebalance_timeout_ms
        if not await self._commit_before_rebalance(deadline):
            return False
        assigned = self._partitions.assigned()
        error = None
        if generation.reset or not generation.member_id:
            if assigned:
                log.info("group %s: giving up all partitions as lost: the member is no longer in the group",
                         self.config.group_id)
                error = await invoke(self.listener, "on_partitions_lost", assigned)
                self._partitions.assign_from_subscribed([])
        elif self.protocol is RebalanceProtocol.EAGER:
            error = await invoke(self.listener, "on_partitions_revoked", assigned)
            self._partitions.assign_from_subscribed([])
        else:
            revoked = [tp for tp in assigned if tp.topic not in self.subscription]
            if revoked:
                error = await invoke(self.listener, "on_partitions_revoked", revoked)
                self._partitions.assign_from_subscribed([tp for tp in assigned if tp not in revoked])
        self.is_leader = False
        self._group_topics = frozenset()
        self._join_prepare_deadline = None
        if error is not None:
            raise error
        return True

    async def _commit_before_rebalance(self, deadline: float) -> bool:
        """With auto commit: commit the consumed offsets before giving partitions up, retrying retriable failures
        for at most the rebalance timeout; False if that is still going on at `deadline`."""
        if not self.config.enable_auto_commit:
            return True
        if self._auto_commit is None:
            self._auto_commit = self._start_commit(self._partitions.consumed_offsets())
        assert self._join_prepare_deadline is not None
        until = min(deadline, self._join_prepare_deadline)
        commit = self._auto_commit
        if not commit.done():
            await asyncio.wait([commit], timeout=max(0.0, until - self._clock()) / 1000)
        if commit.done():
            self._auto_commit = None
        if self._clock() >= self._join_prepare_deadline:
            log.error("group %s: the commit before the rebalance did not finish within the rebalance timeout; "
                      "joining anyway", self.config.group_id)
            return True
        if not commit.done():
            return False
        error = commit.exception()
        if error is not None and is_retriable(error):
            log.debug("group %s: the commit before the rebalance failed (%s); retrying", self.config.group_id, error)
            await self._sleep(self.config.retry_backoff_ms, deadline)
            return False
        if error is not None:
            log.error("group %s: the commit before the rebalance failed: %s; joining anyway", self.config.group_id,
                      error)
        return True

    async def on_leader_elected(self, leader_id: str, protocol: str, members: Sequence[JoinGroupMember],
                                skip_assignment: bool) -> dict[str, bytes]:
        assignor = self._assignor(protocol)
        try:
            group = [Member(m.member_id, decode_subscription(m.metadata), m.group_instance_id) for m in members]
        except DataFormatError as e:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"a member's subscription does not read: {e}"
                             ) from None
        self._group_topics = frozenset(topic for m in group for topic in m.subscription.topics)
        await self.metadata.refresh(sorted(self._group_topics))
        self._next_metadata_refresh = self._clock() + self.config.metadata_max_age_ms
        self.is_leader = True
        if skip_assignment:
            log.info("group %s: a returning static leader keeps its assignment (generation %d)",
                     self.config.group_id, self.generation.generation_id)
            self._assignment_snapshot = self._metadata_snapshot()
            return {}
        partitions_per_topic = self._metadata_snapshot()
        assignments = assignor.assign(partitions_per_topic, group)
        if self.protocol is RebalanceProtocol.COOPERATIVE and assignor.name != COOPERATIVE_STICKY:
            _check_cooperative(group, assignments)  # cooperative-sticky holds moved partitions back itself
        unassigned = sorted(self._group_topics - {tp.topic for tps in assignments.values() for tp in tps})
        if unassigned:
            log.warning("group %s: no member was assigned a partition of %s", self.config.group_id,
                        ", ".join(unassigned))
        self._assignment_snapshot = partitions_per_topic
        log.info("group %s: assignment for generation %d: %s", self.config.group_id, self.generation.generation_id,
                 {member: [str(tp) for tp in tps] for member, tps in assignments.items()})
        return {member: encode_assignment(Assignment(tuple(tps))) for member, tps in assignments.items()}

    async def on_join_complete(self, generation: Generation, assignment: bytes) -> None:
        if not self.is_leader:
            self._assignment_snapshot = None
        assignor = self._assignor(generation.protocol_name)
        if len(assignment) < 2:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"SyncGroup gave {len(assignment)} bytes, too few for an assignment: the leader's "
                             f"assignor gave this member none")
        try:
            given = decode_assignment(assignment)
        except DataFormatError as e:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"the assignment does not read: {e}") from None
        assigned = set(given.partitions)
        if any(tp.topic not in self.subscription for tp in assigned):
            self.request_rejoin("the assignment does not match the subscription (it changed since the join)")
            return
        owned = set(self._partitions.assigned())
        errors: list[Exception | None] = []
        if self.protocol is RebalanceProtocol.COOPERATIVE and (revoked := owned - assigned):
            errors.append(await invoke(self.listener, "on_partitions_revoked", sorted(revoked)))
            self.request_rejoin("partitions moved to other members must be given up first")
        assignor.on_assignment(given, generation.generation_id)
        if self.config.enable_auto_commit:
            self._next_auto_commit = self._clock() + self.config.auto_commit_interval_ms
        self._partitions.assign_from_subscribed(sorted(assigned))
        errors.append(await invoke(self.listener, "on_partitions_assigned", sorted(assigned - owned)))
        for error in errors:
            if error is not None:
                raise error

    async def on_leave_prepare(self) -> None:
        dropped = self._partitions.assigned()
        if not self.subscribed or not dropped:
            return
        lost = self.generation.reset or not self.generation.member_id or self.rebalance_in_progress()
        error = await invoke(self.listener, "on_partitions_lost" if lost else "on_partitions_revoked", dropped)
        self._partitions.assign_from_subscribed([])
        if error is not None:
            raise error

    # ------------------------------------------------------------------------------ commits

    async def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], deadline: float) -> None:
        """Commit `offsets`, retrying retriable failures until `deadline` (then REQUEST_TIMED_OUT); with no offsets,
        wait for the asynchronous commits in flight. Raises CommitFailedError if the consumer left the generation."""
        self._raise_if_fenced()
        if not offsets:
            pending = list(self._async_commits)
            if pending:
                await asyncio.wait(pending, timeout=max(0.0, deadline - self._clock()) / 1000)
            return
        attempts = 0
        while True:
            if self.coordinator is None and not await self.ensure_coordinator_ready(deadline):
                break
            try:
                await self._send_commit(offsets)
                return
            except (KafkaError, KafkaConnectionError) as e:
                if not is_retriable(e):
                    raise
                log.debug("group %s: commit failed: %s", self.config.group_id, e)
            if not await self._sleep(self._backoff(attempts), deadline):
                break
            attempts += 1
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"the commit of {len(offsets)} offsets of group "
                                                      f"{self.config.group_id!r} did not complete in time")

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                     callback: CommitCallback | None = None) -> asyncio.Task[None]:
        """Send a commit of `offsets` without waiting for it (tried once); `callback(offsets, error)` is called
        when it is answered (error None on success). The task's outcome is the commit's."""
        self._raise_if_fenced()
        task = self._start_commit(dict(offsets), find_coordinator=True)
        self._async_commits.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._async_commits.discard(finished)
            error = None if finished.cancelled() else finished.exception()
            if isinstance(error, KafkaError) and error.code == ErrorCode.FENCED_INSTANCE_ID:
                self._fenced = error
            if callback is not None:
                callback(offsets, error if isinstance(error, Exception) else None)
            elif error is not None:
                log.error("group %s: asynchronous commit failed: %s", self.config.group_id, error)

        task.add_done_callback(done)
        return task

    def _start_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], *,
                      find_coordinator: bool = False) -> asyncio.Task[None]:
        async def commit() -> None:
            if find_coordinator and self.coordinator is None:
                await self.ensure_coordinator_ready(self._clock())
            await self._send_commit(offsets)

        return asyncio.get_running_loop().create_task(commit())

    def _maybe_auto_commit(self) -> None:
        if not self.config.enable_auto_commit or self._clock() < self._next_auto_commit:
            return
        self._next_auto_commit = self._clock() + self.config.auto_commit_interval_ms

        def done(offsets: Mapping[TopicPartition, OffsetAndMetadata], error: Exception | None) -> None:
            if error is not None and is_retriable(error):
                log.debug("group %s: auto-commit failed (%s); retrying", self.config.group_id, error)
                self._next_auto_commit = self._clock() + self.config.retry_backoff_ms
            elif error is not None:
                log.warning("group %s: auto-commit of offsets failed: %s", self.config.group_id, error)

        offsets = self._partitions.consumed_offsets()
        if offsets:
            self.commit_async(offsets, done)

    async def _send_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        if not offsets:
            return
        sent, instance = Generation(), None
        if self.subscribed:
            stable = self.generation_if_stable()
            if stable is None:
                if self.rebalance_in_progress():
                    raise rebalance_in_progress_error("the offset commit")
                raise CommitFailedError(ErrorCode.UNKNOWN_MEMBER_ID, "the offset commit cannot be completed: the "
                                        "consumer is not part of an active group; it was likely dropped from it")
            sent, instance = stable, self.config.group_instance_id
        request = offset_commit_request(self.config.group_id, offsets, generation_id=sent.generation_id,
                                        member_id=sent.member_id, group_instance_id=instance)
        response = await self.request(request)
        for tp, error in commit_errors(response).items():
            if error != ErrorCode.NONE:
                self._commit_failed(tp, error, sent)
        log.debug("group %s: committed %s", self.config.group_id, {str(tp): o.offset for tp, o in offsets.items()})

    def _commit_failed(self, tp: TopicPartition, error: ErrorCode, sent: Generation) -> None:
        """Raise what the error of one partition of an OffsetCommit means (after acting on it)."""
        log.log(logging.DEBUG if error.retriable else logging.WARNING, "group %s: commit of %s failed: %s",
                self.config.group_id, tp, error.name)
        if error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.REQUEST_TIMED_OUT):
            self.mark_coordinator_unknown(f"{error.name} from OffsetCommit")
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self.request_rejoin("an offset commit found the group rebalancing")
            raise rebalance_in_progress_error("the offset commit")
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID):
            if error == ErrorCode.FENCED_INSTANCE_ID and self.generation == sent:
                raise KafkaError(error, f"group.instance.id {self.config.group_instance_id!r} was fenced")
            if self.generation != sent and self.state is MemberState.PREPARING_REBALANCE:
                raise rebalance_in_progress_error("the offset commit of an older generation")
            if error != ErrorCode.FENCED_INSTANCE_ID:
                self.reset_state_on_error("OffsetCommit", error, reset_member_id=error != ErrorCode.ILLEGAL_GENERATION)
            raise CommitFailedError(error, "the offset commit cannot be completed: the group has rebalanced and "
                                           "given the partitions to another member (the time between polls was "
                                           "likely longer than max.poll.interval.ms)")
        raise KafkaError(error, f"cannot commit the offset of {tp}")

    def _raise_if_fenced(self) -> None:
        if self._fenced is not None:
            raise self._fenced

    # ------------------------------------------------------------------------------ committed offsets

    async def fetch_committed_offsets(self, partitions: Iterable[TopicPartition], deadline: float
                                      ) -> dict[TopicPartition, OffsetAndMetadata | None] | None:
        """The group's committed offsets of `partitions` (None for a partition without one), retrying retriable
        failures; None if not known by `deadline`."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        attempts = 0
        while True:
            if not await self.ensure_coordinator_ready(deadline):
                return None
            try:
                return await self._fetch_offsets(wanted)
            except (KafkaError, KafkaConnectionError) as e:
                if not is_retriable(e):
                    raise
                log.debug("group %s: committed offsets not read: %s", self.config.group_id, e)
            if not await self._sleep(self._backoff(attempts), deadline):
                return None
            attempts += 1

    async def _fetch_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        response = await self.request(offset_fetch_request(self.config.group_id, partitions, require_stable=True))
        try:
            group = fetched_group(response, self.config.group_id)
        except KafkaError as e:
            if e.code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
                self.mark_coordinator_unknown(f"{e.code.name} from OffsetFetch")
            raise
        offsets, errors = fetched_offsets(group)
        for tp, error in sorted(errors.items()):
            if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise KafkaError(error, f"topic or partition {tp} does not exist")
            if error != ErrorCode.UNSTABLE_OFFSET_COMMIT:
                raise KafkaError(error, f"cannot fetch the committed offset of {tp}")
        if errors:
            raise KafkaError(ErrorCode.UNSTABLE_OFFSET_COMMIT, "some offsets are still being committed")
        return {tp: offsets.get(tp) for tp in partitions}

    # ------------------------------------------------------------------------------ closing

    async def close(self, deadline: float | None = None) -> None:
        """Commit the consumed offsets (with auto commit), wait for asynchronous commits until `deadline`, then
        leave the group."""
        if deadline is None:
            deadline = self._clock() + self.config.default_api_timeout_ms
        try:
            if self.config.enable_auto_commit:
                try:
                    await self.commit_sync(self._partitions.consumed_offsets(), deadline)
                except (KafkaError, KafkaConnectionError) as e:
                    log.warning("group %s: the commit on close failed: %s", self.config.group_id, e)
            pending = list(self._async_commits)
            if pending:
                await asyncio.wait(pending, timeout=max(0.0, deadline - self._clock()) / 1000)
        finally:
            for task in (*self._async_commits, *([self._auto_commit] if self._auto_commit else [])):
                task.cancel()
            if self.subscribed:
                await super().close()
            else:
                self._closed = True


def _check_cooperative(members: Sequence[Member], assignments: Mapping[str, list[TopicPartition]]) -> None:
    """Under the COOPERATIVE protocol an assignor may not give a partition to one member while another still owns
    it (it must first be revoked, then assigned in the next rebalance)."""
    owned = {m.member_id: set(m.subscription.owned_partitions) for m in members}
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member_id, partitions in assignments.items():
        added |= set(partitions) - owned.get(member_id, set())
        revoked |= owned.get(member_id, set()) - set(partitions)
    if added & revoked:
        raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                         f"the assignor moved partitions still owned by other members under the COOPERATIVE "
                         f"protocol: {', '.join(map(str, sorted(added & revoked)))}")
