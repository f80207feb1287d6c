"""The ISRs of the partitions this broker leads: shrinking and expanding them, written to ZooKeeper first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from broker.log.log import Log
from broker.metrics.counters import BrokerCounters
from broker.replication.partition import Partition
from broker.replication.state_records import record_partition_state
from protocol.topic_partition import TopicPartition
from zk.znodes import LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)

#: Writes a partition state znode conditionally; the new znode version, or None if it had moved on.
IsrWriter = Callable[[TopicPartition, LeaderIsrAndControllerEpoch], Awaitable[int | None]]


class IsrManager:
    """Shrinks the ISRs of the partitions this broker leads (followers not caught up within
    replica.lag.time.max.ms) and expands them (a follower that reached the HW and its epoch's start), as the
    partitions' rules decide. Each new ISR is written conditionally (one update per partition at a time) and adopted
    only if the partition still leads at the same epoch; it is recorded in the state-change log, and the
    partition's parked requests are woken."""

    def __init__(self, broker_id: int, replica_lag_time_max_ms: int,
                 partitions: Mapping[TopicPartition, Partition[Log]], writer: IsrWriter,
                 wake: Callable[[TopicPartition], None], counters: BrokerCounters) -> None:
        self._broker_id = broker_id
        self._replica_lag_time_max_ms = replica_lag_time_max_ms
        self._partitions = partitions
        self._writer = writer
        self._wake = wake
        self._counters = counters
        self._updates: dict[TopicPartition, asyncio.Task] = {}

    def maybe_shrink(self) -> None:
        """Drop followers not caught up within replica.lag.time.max.ms from the ISRs this broker leads
        (run every replica.lag.time.max.ms / 2, as Kafka does)."""
        for tp, partition in list(self._partitions.items()):
            if partition.is_leader:
                lagging = partition.out_of_sync_replicas()
                if lagging:
                    self._change(tp, partition, partition.isr - lagging,
                                 f"shrink: {sorted(lagging)} not caught up within {self._replica_lag_time_max_ms} ms")

    def maybe_expand(self, tp: TopicPartition, partition: Partition[Log], follower: int) -> None:
        """Add ``follower`` to the ISR of ``partition`` (which this broker leads) once it is in sync."""
        if follower not in partition.isr and partition.is_follower_in_sync(follower):
            self._change(tp, partition, partition.isr | {follower},
                         f"expand: broker {follower} reached the HW and the epoch start offset")

    def _change(self, tp: TopicPartition, partition: Partition[Log], isr: frozenset[int], reason: str) -> None:
        """Persist a new ISR (one update per partition at a time), then adopt it if still leader."""
        if tp in self._updates:
            return
        epoch = partition.leader_epoch
        state = LeaderIsrAndControllerEpoch(leader=self._broker_id, leader_epoch=epoch, isr=tuple(sorted(isr)),
                                            controller_epoch=partition.controller_epoch,
                                            zk_version=partition.zk_version)

        async def update() -> None:
            log.info("%s: writing ISR %s -> %s (%s)", tp, sorted(partition.isr), list(state.isr), reason)
            try:
                version = await self._writer(tp, state)
            except Exception:
                log.exception("%s: writing ISR %s failed", tp, list(state.isr))
                return
            finally:
                self._updates.pop(tp, None)
            if self._partitions.get(tp) is not partition or not partition.is_leader or partition.leader_epoch != epoch:
                return
            if version is None:
                record_partition_state(self._broker_id, tp, state,
                                       f"{reason}: not applied, the state znode changed under this leader")
                return
            if len(isr) < len(partition.isr):
                self._counters.isr_shrinks += 1
            elif len(isr) > len(partition.isr):
                self._counters.isr_expands += 1
            partition.update_isr(isr, version)
            record_partition_state(self._broker_id, tp, state, reason)
            self._wake(tp)

        self._updates[tp] = asyncio.get_running_loop().create_task(update())

    def updates_under_way(self) -> list[asyncio.Task]:
        """The ISR writes not finished yet (shutdown waits for them)."""
        return list(self._updates.values())
