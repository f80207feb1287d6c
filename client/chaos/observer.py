"""Watching the soak's partitions for its report: each partition's state znode (leader, leader epoch, ISR) read every
200 ms through the nemesis's ZooKeeper session (from 127.0.0.1, which no cut touches), every change kept."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from client.chaos.record import StateChange
from zk.client import ZkError
from zk.znodes import LeaderIsrAndControllerEpoch

SAMPLE_INTERVAL_S = 0.2


class LeadershipObserver:
    """Samples the states `read_state` gives for partitions 0..partitions-1 until cancelled; `changes` holds each
    partition's first state and every change after it, in the order seen."""

    def __init__(self, read_state: Callable[[int], Awaitable[LeaderIsrAndControllerEpoch]], partitions: int, *,
                 interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.read_state = read_state
        self.partitions = partitions
        self.interval_s = interval_s
        self.changes: list[StateChange] = []

    async def run(self) -> None:
        last: dict[int, StateChange] = {}
        while True:
            for partition in range(self.partitions):
                try:
                    state = await self.read_state(partition)
                except ZkError:  # ZooKeeper busy or reconnecting: the next sample tells
                    continue
                seen = StateChange(time.monotonic(), partition, state.leader, state.leader_epoch, tuple(state.isr))
                before = last.get(partition)
                if before is None or (before.leader, before.leader_epoch, before.isr) != (
                        seen.leader, seen.leader_epoch, seen.isr):
                    last[partition] = seen
                    self.changes.append(seen)
            await asyncio.sleep(self.interval_s)  # the sampling cadence
