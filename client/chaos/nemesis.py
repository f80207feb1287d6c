"""The nemesis: injects the faults of a schedule into a local cluster one at a time, and heals each.

It reads who leads what and who the controller is from ZooKeeper (its own session, from 127.0.0.1, which no cut
ever touches), acts through the cluster manager (signals, restarts) and network cuts, and after each fault waits
until every broker is back (running, registered, listing a controller) before the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from client import netsplit
from client.chaos import schedule as kinds
from client.chaos.record import InjectedFault
from client.chaos.schedule import FaultPlan
from client.cluster import (
    ClusterError,
    ClusterState,
    broker_running,
    kill_broker,
    load_cluster,
    start_broker,
    wait_until_ready,
)
from protocol.consumer_offsets import OFFSETS_TOPIC, partition_for
from zk import znodes
from zk.client import ZkClient
from zk.znodes import LeaderIsrAndControllerEpoch

_POLL_S = 0.1
_RECOVERY_TIMEOUT_S = 60.0
_SHUTDOWN_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Timeouts:
    """The cluster's timeouts the faults' durations are scaled by."""

    session_s: float
    lag_s: float

    def hold_s(self, fraction: float) -> float:
        """How long a fault is held: 0.6 to 1.8 session timeouts, so some end before the session expires."""
        return self.session_s * (0.6 + 1.2 * fraction)

    def expiring_hold_s(self, fraction: float) -> float:
        """A hold the session surely expires in, with time for the controller to act: 1.5 to 2.5 timeouts."""
        return self.session_s * (1.5 + fraction)

    def shrink_s(self) -> float:
        """Long enough for a leader to drop followers it cannot hear from (it checks every lag / 2)."""
        return 1.5 * self.lag_s + 1.0

    def gap_s(self, fraction: float) -> float:
        """The quiet time after a fault is healed and the cluster is back."""
        return 0.5 + 1.5 * fraction


class Nemesis:
    """Injects faults into the cluster described in `directory`; counts them per kind, and keeps each as injected
    (`injected`: when, what, when healed and recovered). `group` is the consumer group whose coordinator
    kill-coordinator kills."""

    def __init__(self, directory: Path, topic: str, partitions: int, zk: ZkClient, timeouts: Timeouts,
                 progress: Callable[[str], None], *, group: str | None = None) -> None:
        self.directory = directory
        self.topic = topic
        self.partitions = partitions
        self.group = group
        self.zk = zk
        self.timeouts = timeouts
        self.progress = progress
        self.faults: Counter[str] = Counter()
        self.injected: list[InjectedFault] = []

    # -- the faults -----------------------------------------------------------------------------

    async def run(self, plan: FaultPlan) -> None:
        """Inject one fault, hold it, heal it, and wait until the cluster is back; then the gap."""
        inject: dict[str, Callable[[FaultPlan], Awaitable[None]]] = {
            kinds.KILL: self._kill,
            kinds.PAUSE: self._pause,
            kinds.SHUTDOWN: self._shutdown,
            kinds.ISOLATE_LEADER: self._isolate_leader,
            kinds.ISOLATE_FOLLOWER: self._isolate_follower,
            kinds.ISOLATE_CONTROLLER: self._isolate_controller,
            kinds.CUT_ZOOKEEPER: self._cut_zookeeper,
            kinds.KILL_COORDINATOR: self._kill_coordinator,
        }
        self.faults[plan.kind] += 1
        fault = InjectedFault(plan.number, plan.kind, started=time.monotonic())
        self.injected.append(fault)
        try:
            await inject[plan.kind](plan)
        finally:
            await self.heal_everything()
            fault.healed = time.monotonic()
        await self.wait_recovered()
        fault.recovered = time.monotonic()
        await asyncio.sleep(self.timeouts.gap_s(plan.gap))  # the schedule's quiet time

    async def _kill(self, plan: FaultPlan) -> None:
        await self._signal_and_hold(plan, self._broker(plan.target), "KILL",
                                    "kill -9 broker {id}, restart after {hold:.1f} s")

    async def _pause(self, plan: FaultPlan) -> None:
        await self._signal_and_hold(plan, self._broker(plan.target), "STOP", "SIGSTOP broker {id} for {hold:.1f} s")

    async def _kill_coordinator(self, plan: FaultPlan) -> None:
        coordinator = await self._coordinator()
        if coordinator is None:
            await self._signal_and_hold(plan, self._broker(plan.target), "KILL",
                                        "no coordinator of the group yet: kill -9 broker {id}, restart after "
                                        "{hold:.1f} s")
        else:
            await self._signal_and_hold(plan, coordinator, "KILL", f"kill -9 broker {{id}} (coordinator of group "
                                                                   f"{self.group}), restart after {{hold:.1f}} s")

    async def _signal_and_hold(self, plan: FaultPlan, broker_id: int, signal_name: str, what: str) -> None:
        """Signal the broker and hold; healing continues or restarts it."""
        hold = self.timeouts.hold_s(plan.hold)
        self._say(plan, what.format(id=broker_id, hold=hold))
        kill_broker(self.directory, broker_id, signal_name)
        await asyncio.sleep(hold)  # the fault's duration

    async def _shutdown(self, plan: FaultPlan) -> None:
        broker_id = self._broker(plan.target)
        hold = self.timeouts.hold_s(plan.hold)
        self._say(plan, f"controlled shutdown of broker {broker_id}, restart {hold:.1f} s after it exits")
        broker = kill_broker(self.directory, broker_id, "TERM")
        deadline = time.monotonic() + _SHUTDOWN_TIMEOUT_S
        while broker_running(broker) and time.monotonic() < deadline:
            await asyncio.sleep(_POLL_S)
        if broker_running(broker):
            self._say(plan, f"broker {broker_id} did not exit within {_SHUTDOWN_TIMEOUT_S:.0f} s: kill -9")
            kill_broker(self.directory, broker_id, "KILL")
        await asyncio.sleep(hold)  # the fault's duration

    async def _isolate_leader(self, plan: FaultPlan) -> None:
        partition = plan.target % self.partitions
        state = await self.partition_state(partition)
        leader = state.leader if state.leader >= 0 else self._broker(plan.target)
        others = [str(b) for b in self._broker_ids() if b != leader]
        what = f"broker {leader} (leader of {self.topic}-{partition})"
        if plan.staged:
            first, then = self.timeouts.shrink_s(), self.timeouts.expiring_hold_s(plan.hold)
            self._say(plan, f"{what}: cut from brokers {','.join(others)} for {first:.1f} s, then from "
                            f"ZooKeeper too for {then:.1f} s")
            self._cut(str(leader), ",".join(others))
            await asyncio.sleep(first)  # the fault's first stage
            self._cut(str(leader), netsplit.ZOOKEEPER_MEMBER)
            await asyncio.sleep(then)  # its second stage
        else:
            hold = self.timeouts.expiring_hold_s(plan.hold)
            self._say(plan, f"{what}: cut from brokers {','.join(others)} and ZooKeeper for {hold:.1f} s")
            self._cut(str(leader), ",".join([*others, netsplit.ZOOKEEPER_MEMBER]))
            await asyncio.sleep(hold)  # the fault's duration

    async def _isolate_follower(self, plan: FaultPlan) -> None:
        partition = plan.target % self.partitions
        state = await self.partition_state(partition)
        replicas = await self._replicas(partition)
        followers = [b for b in replicas if b != state.leader] or replicas
        follower = followers[(plan.target // self.partitions) % len(followers)]
        others = [str(b) for b in self._broker_ids() if b != follower]
        hold = self.timeouts.hold_s(plan.hold)
        self._say(plan, f"broker {follower} (follower of {self.topic}-{partition}): cut from brokers "
                        f"{','.join(others)} for {hold:.1f} s")
        self._cut(str(follower), ",".join(others))
        await asyncio.sleep(hold)  # the fault's duration

    async def _isolate_controller(self, plan: FaultPlan) -> None:
        controller = await self._controller()
        if controller is None:
            controller = self._broker(plan.target)
        others = [str(b) for b in self._broker_ids() if b != controller]
        hold = self.timeouts.hold_s(plan.hold)
        self._say(plan, f"broker {controller} (the controller): cut from brokers {','.join(others)} and "
                        f"ZooKeeper for {hold:.1f} s")
        self._cut(str(controller), ",".join([*others, netsplit.ZOOKEEPER_MEMBER]))
        await asyncio.sleep(hold)  # the fault's duration

    async def _cut_zookeeper(self, plan: FaultPlan) -> None:
        broker_id = self._broker(plan.target)
        hold = self.timeouts.hold_s(plan.hold)
        self._say(plan, f"broker {broker_id}: cut from ZooKeeper for {hold:.1f} s")
        self._cut(str(broker_id), netsplit.ZOOKEEPER_MEMBER)
        await asyncio.sleep(hold)  # the fault's duration

    # -- healing --------------------------------------------------------------------------------

    async def heal_everything(self) -> None:
        """Remove every cut, continue stopped brokers and start dead ones."""
        state = self._state()
        await asyncio.to_thread(netsplit.heal, state.addresses)
        for broker in state.brokers:
            if broker_running(broker) and _stopped(broker.pid):
                kill_broker(self.directory, broker.id, "CONT")
        for broker in state.brokers:
            if not broker_running(broker):
                await start_broker(self.directory, broker.id, timeout_s=_RECOVERY_TIMEOUT_S)

    async def wait_recovered(self) -> None:
        """Wait until every broker runs, answers and lists every broker and a controller."""
        state = self._state()
        try:
            await wait_until_ready(list(state.brokers), {b.id for b in state.brokers}, _RECOVERY_TIMEOUT_S)
        except ClusterError as e:
            self.progress(f"the cluster did not recover within {_RECOVERY_TIMEOUT_S:.0f} s: {e}")

    async def wait_full_isr(self, timeout_s: float = _RECOVERY_TIMEOUT_S) -> bool:
        """Wait until every partition has a leader and all its replicas in the ISR; False at the deadline."""
        deadline = time.monotonic() + timeout_s
        while True:
            states = [await self.partition_state(p) for p in range(self.partitions)]
            replicas = [await self._replicas(p) for p in range(self.partitions)]
            if all(s.leader >= 0 and set(s.isr) == set(r) for s, r in zip(states, replicas, strict=True)):
                return True
            if time.monotonic() > deadline:
                described = "; ".join(f"{self.topic}-{p}: leader {s.leader} isr {list(s.isr)}"
                                      for p, s in enumerate(states))
                self.progress(f"not every partition has its full ISR after {timeout_s:.0f} s: {described}")
                return False
            await asyncio.sleep(_POLL_S)

    # -- the cluster's state --------------------------------------------------------------------

    def _state(self) -> ClusterState:
        return load_cluster(self.directory)

    def _broker_ids(self) -> list[int]:
        return sorted(b.id for b in self._state().brokers)

    def _broker(self, target: int) -> int:
        ids = self._broker_ids()
        return ids[target % len(ids)]

    def _cut(self, side_a: str, side_b: str) -> None:
        addresses = self._state().addresses
        netsplit.apply_cut(addresses, netsplit.make_cut(side_a, side_b, addresses))

    async def partition_state(self, partition: int) -> LeaderIsrAndControllerEpoch:
        """The partition's state znode (leader, leader epoch, ISR)."""
        data, stat = await self.zk.get(znodes.partition_state_path(self.topic, partition))
        return znodes.decode_partition_state(data, stat.version)

    async def _replicas(self, partition: int) -> list[int]:
        data, _ = await self.zk.get(znodes.topic_path(self.topic))
        return znodes.decode_topic_assignment(data)[partition]

    async def _coordinator(self) -> int | None:
        """The broker leading the group's partition of __consumer_offsets (None without a group, that topic or
        a leader)."""
        found = None if self.group is None else await self.zk.get_or_none(znodes.topic_path(OFFSETS_TOPIC))
        if self.group is None or found is None:
            return None
        partition = partition_for(self.group, len(znodes.decode_topic_assignment(found[0])))
        state = await self.zk.get_or_none(znodes.partition_state_path(OFFSETS_TOPIC, partition))
        leader = -1 if state is None else znodes.decode_partition_state(state[0], state[1].version).leader
        return leader if leader >= 0 else None

    async def _controller(self) -> int | None:
        found = await self.zk.get_or_none(znodes.CONTROLLER_PATH)
        return znodes.decode_controller(found[0]) if found is not None else None

    def _say(self, plan: FaultPlan, what: str) -> None:
        self.injected[-1].said.append(what)
        self.progress(f"fault {plan.number} {plan.kind}: {what}")


def _stopped(pid: int) -> bool:
    """True if the process is stopped (SIGSTOP)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "T"
    return False
