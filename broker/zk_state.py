"""What a broker itself reads and writes in ZooKeeper: topic configs, and the ISR of partitions it leads.

As in Kafka's ZooKeeper mode, a leader persists its ISR changes itself: a write of the partition's state
znode conditional on the version it last saw, then an /isr_change_notification znode so the controller
propagates the change with UpdateMetadata. Both are batched, so that thousands of ISR changes (a broker that
comes back and rejoins every ISR, or one that dies and leaves them) take a few requests, not two each:

- the conditional writes queued while a transaction is in flight go together in the next (group commit), in
  as few transactions as fit in a request, pipelined;
- as Kafka's ReplicaManager.recordIsrChange / maybePropagateIsrChanges, written changes are recorded and named
  together in one notification (a few under a small jute.maxbuffer), `propagation_delay_ms` after the first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from broker.isr_changes import Conflict, conflict, notification_payloads
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import BadVersionError, NoNodeError, SetOp, ZkClient, ZkError
from zk.znodes import LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)

#: How long after the first recorded ISR change its notification is written, naming every change recorded by
#: then. Kafka checks every 2.5 s and propagates once no change came for 5 s (or 60 s after the last
#: propagation): cheap for its controller, but the metadata shows a new ISR 5-7.5 s late. minikafka's clients,
#: tests and benchmarks read the ISR from the metadata, so it waits a short window instead: a mass change (a
#: broker rejoining thousands of ISRs over a few seconds) still takes a few notifications a second per leader,
#: and the metadata lags the state znode by a quarter of a second.
ISR_CHANGE_PROPAGATION_DELAY_MS = 250


@dataclass
class _IsrWrite:
    """A conditional state write waiting for its answer."""

    tp: TopicPartition
    state: LeaderIsrAndControllerEpoch
    answer: asyncio.Future[int | None] = field(repr=False)

    @cached_property
    def op(self) -> SetOp:
        return SetOp(znodes.partition_state_path(self.tp.topic, self.tp.partition),
                     znodes.encode_partition_state(self.state), version=self.state.zk_version)

    def settle(self, version: int | None = None, error: BaseException | None = None) -> None:
        if self.answer.done():  # its writer gave up waiting
            return
        if error is not None:
            self.answer.set_exception(error)
        else:
            self.answer.set_result(version)


class BrokerZkState:
    """A broker's own ZooKeeper reads and writes (the controller has its own)."""

    def __init__(self, zk: ZkClient, propagation_delay_ms: int = ISR_CHANGE_PROPAGATION_DELAY_MS) -> None:
        self.zk = zk
        self.propagation_delay_ms = propagation_delay_ms
        self._queued: dict[TopicPartition, _IsrWrite] = {}
        self._writer: asyncio.Task[None] | None = None
        #: Partitions whose new ISR is in their state znode but not yet named in a notification, in order.
        self._changed: dict[TopicPartition, None] = {}
        self._propagator: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()

    async def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (empty if none were set)."""
        try:
            data, _stat = await self.zk.get(znodes.topic_config_path(topic))
        except NoNodeError:
            return {}
        return znodes.decode_topic_config(data)

    # -- conditional state writes ---------------------------------------------------------------

    async def write_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int | None:
        """Write ``state`` if the state znode is still at ``state.zk_version``; returns the new version,
        or None when someone else (the controller) changed it first: the leader's view is stale and it
        must wait for the controller's LeaderAndIsr. One write per partition at a time (the caller's rule).
        A written change is recorded for the next ISR change notification."""
        loop = asyncio.get_running_loop()
        write = _IsrWrite(tp, state, loop.create_future())
        self._queued[tp] = write
        if self._writer is None:
            self._writer = loop.create_task(self._write_queued())
        return await write.answer

    async def _write_queued(self) -> None:
        """Write what is queued; what is queued meanwhile goes in the next round (group commit)."""
        try:
            while self._queued:
                writes = list(self._queued.values())
                self._queued.clear()
                try:
                    await self._write(writes)
                except Exception as e:  # unexpected: no write may wait forever
                    log.exception("writing the ISR of %d partitions failed", len(writes))
                    for write in writes:
                        write.settle(error=e)
        finally:
            self._writer = None

    async def _write(self, writes: list[_IsrWrite]) -> None:
        """The writes as transactions under the request budget, pipelined. A transaction is atomic: it fails whole
        if one of its writes is refused; that one is settled alone and the others, rolled back, sent again."""
        ops = [write.op for write in writes]
        runs = self.zk.transactions([[op] for op in ops])
        outcomes = await self.zk.multi_pipelined([ops[run.start:run.stop] for run in runs])
        failed = []
        for run, outcome in zip(runs, outcomes, strict=True):
            group = writes[run.start:run.stop]
            if isinstance(outcome, ZkError):
                failed.append(self._after_failure(group, outcome))
            else:
                for write, stat in zip(group, outcome, strict=True):
                    self._written(write, stat.version)  # type: ignore[union-attr]
        await asyncio.gather(*failed)

    async def _after_failure(self, group: list[_IsrWrite], error: ZkError) -> None:
        """Settle the writes of a failed transaction, retrying those rolled back until none is left. The first
        refused write is checked alone (an earlier attempt's lost answer, or the controller's change); once a
        second is refused, every write left is checked at once (all of an earlier batch whose answer was lost
        would otherwise take a round trip each)."""
        refusals = 0
        while True:
            if error.op_index is None:  # the request failed as a whole (no connection): nothing is known
                for write in group:
                    write.settle(error=error)
                return
            failing = group[error.op_index]
            if isinstance(error, BadVersionError):
                refusals += 1
                group = await self._check_refused(group if refusals > 1 else [failing], group)
            else:
                failing.settle(error=error)
                group = [write for write in group if write is not failing]
            if not group:
                return
            try:
                results = await self.zk.multi([write.op for write in group])
            except ZkError as e:
                error = e
                continue
            for write, stat in zip(group, results, strict=True):
                self._written(write, stat.version)  # type: ignore[union-attr]
            return

    async def _check_refused(self, suspects: Sequence[_IsrWrite], group: list[_IsrWrite]) -> list[_IsrWrite]:
        """Read the state znodes of the suspects (in few requests) and settle those no longer at their cached
        version; the writes of `group` left to retry."""
        try:
            reads = await self.zk.get_many([write.op.path for write in suspects])
        except ZkError as e:
            reads = [e] * len(suspects)
        settled: set[int] = set()
        for write, read in zip(suspects, reads, strict=True):
            if read is None or isinstance(read, ZkError):
                write.settle(error=read if read is not None else NoNodeError(f"get {write.op.path}: NoNodeError"))
                settled.add(id(write))
                continue
            data, stat = read
            stored = znodes.decode_partition_state(data, stat.version)
            match conflict(write.state, stored):
                case Conflict.RETRY:
                    continue
                case Conflict.WRITTEN:
                    self._written(write, stat.version)
                case Conflict.STALE:
                    log.info("%s: cached state znode version %d is stale (now %d); ISR update skipped", write.tp,
                             write.state.zk_version, stat.version)
                    write.settle(None)
            settled.add(id(write))
        return [write for write in group if id(write) not in settled]

    def _written(self, write: _IsrWrite, version: int) -> None:
        self._record_change(write.tp)
        write.settle(version)

    # -- ISR change notifications ---------------------------------------------------------------

    def _record_change(self, tp: TopicPartition) -> None:
        """Name `tp` in the next notification (Kafka's recordIsrChange)."""
        self._changed[tp] = None
        if self._propagator is None:
            self._propagator = asyncio.get_running_loop().create_task(self._propagate_changes())

    async def _propagate_changes(self) -> None:
        """Every `propagation_delay_ms` while changes are recorded, name them in notifications; changes whose
        notification failed stay recorded and go in the next round."""
        try:
            while self._changed and not self._closing.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.propagation_delay_ms / 1000):
                        await self._closing.wait()
                await self._propagate()
        finally:
            self._propagator = None

    async def _propagate(self) -> None:
        """Write one notification naming every recorded change (more if they do not fit in a request), pipelined.
        The state znodes were written before the changes were recorded, so the controller reading a notification
        reads the new states."""
        tps = list(self._changed)
        self._changed.clear()
        payloads = notification_payloads([(tp.topic, tp.partition) for tp in tps], self.zk.max_request_bytes,
                                         self.zk.chroot)
        created = await asyncio.gather(*(self.zk.create(znodes.isr_change_sequence_path(), data, sequence=True,
                                                        makepath=True) for data, _ in payloads),
                                       return_exceptions=True)
        for (_data, named), result in zip(payloads, created, strict=True):
            if isinstance(result, BaseException):
                log.warning("an ISR change notification naming %d partitions failed (%s); written again in %d ms",
                            len(named), result, self.propagation_delay_ms)
                self._changed.update((TopicPartition(t, p), None) for t, p in named)
            else:
                log.debug("%s names the ISR changes of %d partitions", result, len(named))

    async def close(self) -> None:
        """At shutdown, after the replica manager's last ISR update: finish the queued writes and name every
        written change in a notification now (while the session lasts; with no connection, the wait would only
        end at zookeeper.connection.timeout.ms)."""
        self._closing.set()
        for task in (self._writer, self._propagator):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)
        if self._changed and self.zk.connected:
            await self._propagate()
        if self._changed:
            log.error("the ISR changes of %d partitions are in their state znodes but in no notification: the "
                      "controller sees them when it next reads those states", len(self._changed))
