"""Partition reassignment from the operator's side, as Kafka's kafka-reassign-partitions does it: the JSON files it
reads and prints, a proposed plan (the replica assignment over the brokers given), starting a plan, and each
partition's status. A plan starts either through ZooKeeper, by writing /admin/reassign_partitions (`ZkReassignments`,
the --zookeeper way), or through the controller's AlterPartitionReassignments (`client.reassignment_admin`, the
--bootstrap-server way); the controller does the rest.

The plan functions are pure; `execute`, `read_statuses` and `wait_statuses` go through a `Reassignments`.
"""

from __future__ import annotations

import asyncio
import enum
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from controller.assignment import TopicCreationError, assign_replicas
from zk import znodes
from zk.client import NodeExistsError, ZkClient
from zk.znodes import TopicAssignment

Plan = dict[tuple[str, int], list[int]]  # (topic, partition) -> replicas


class ReassignmentError(ValueError):
    """A plan or file that cannot be used; the message says why."""


class ReassignmentStatus(enum.Enum):
    COMPLETE = "completed successfully"
    IN_PROGRESS = "is still in progress"
    FAILED = "failed"


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise ReassignmentError(f"{what} is not JSON: {e}") from None


def parse_topics_to_move(text: str) -> list[str]:
    """{"topics": [{"topic": "foo"}], "version": 1} -> ["foo"]."""
    value = _load(text, "the topics to move")
    entries = value.get("topics") if isinstance(value, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ReassignmentError('the topics to move must look like {"topics": [{"topic": "foo"}], "version": 1}')
    topics = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise ReassignmentError(f"not a topic entry: {entry!r}")
        if topic in topics:
            raise ReassignmentError(f"topic {topic} is given twice")
        topics.append(topic)
    return topics


def parse_plan(text: str) -> Plan:
    """{"version": 1, "partitions": [{"topic", "partition", "replicas", "log_dirs"?}]}, checked as Kafka does:
    not empty, no partition twice, replicas not empty and without duplicates."""
    value = _load(text, "the reassignment")
    entries = value.get("partitions") if isinstance(value, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ReassignmentError("Partition reassignment list cannot be empty")
    plan: Plan = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ReassignmentError(f"not a partition entry: {entry!r}")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
            raise ReassignmentError(f"a partition entry needs a topic and a partition: {entry!r}")
        if not isinstance(replicas, list) or not all(isinstance(r, int) and not isinstance(r, bool)
                                                     for r in replicas):
            raise ReassignmentError(f"{topic}-{partition}: replicas must be a list of broker ids: {replicas!r}")
        if (topic, partition) in plan:
            raise ReassignmentError(f"Partition reassignment contains duplicate topic partitions: {topic}-{partition}")
        if not replicas:
            raise ReassignmentError(f"Partition replica list cannot be empty: {topic}-{partition}")
        if len(set(replicas)) != len(replicas):
            raise ReassignmentError(f"Partition replica lists may not contain duplicate entries: {topic}-{partition} "
                                    f"contains {replicas}")
        plan[(topic, partition)] = list(replicas)
    return plan


def plan_json(plan: Mapping[tuple[str, int], Iterable[int]]) -> str:
    """A plan as kafka-reassign-partitions prints it (log_dirs "any" for each replica)."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(list(r))}
        for (t, p), r in sorted(plan.items())
    ]}, separators=(",", ":"))


def current_plan(assignments: Mapping[str, TopicAssignment], partitions: Iterable[tuple[str, int]]) -> Plan:
    """The current replicas of the partitions (a reassignment in progress counts with its original replicas)."""
    plan: Plan = {}
    for topic, partition in partitions:
        znode = assignments[topic]
        adding = znode.adding.get(partition, [])
        plan[(topic, partition)] = [r for r in znode.partitions[partition] if r not in adding]
    return plan


def propose(assignments: Mapping[str, TopicAssignment], topics: Iterable[str], brokers: Iterable[int]) -> Plan:
    """Each topic's partitions spread over `brokers` by the replica assignment, keeping its replication factor."""
    plan: Plan = {}
    for topic in topics:
        current = current_plan(assignments, [(topic, p) for p in assignments[topic].partitions])
        replication_factor = len(current[(topic, 0)])
        try:
            proposed = assign_replicas(brokers, len(current), replication_factor)
        except TopicCreationError as e:
            raise ReassignmentError(f"topic {topic}: {e.message}") from None
        plan.update({(topic, p): replicas for p, replicas in proposed.items()})
    return plan


def statuses(plan: Plan, assignments: Mapping[str, TopicAssignment], in_progress: Iterable[tuple[str, int]]
             ) -> dict[tuple[str, int], ReassignmentStatus]:
    """Complete when assigned as planned; in progress while in /admin/reassign_partitions or while the topic znode
    still adds or removes replicas for it; failed otherwise."""
    running = set(in_progress)
    result = {}
    for (topic, partition), target in sorted(plan.items()):
        znode = assignments.get(topic)
        if znode is not None and (znode.adding.get(partition) or znode.removing.get(partition)):
            running.add((topic, partition))
        if (topic, partition) in running:
            result[(topic, partition)] = ReassignmentStatus.IN_PROGRESS
        elif znode is not None and znode.partitions.get(partition) == target:
            result[(topic, partition)] = ReassignmentStatus.COMPLETE
        else:
            result[(topic, partition)] = ReassignmentStatus.FAILED
    return result


def status_lines(result: Mapping[tuple[str, int], ReassignmentStatus]) -> list[str]:
    return ["Status of partition reassignment:"] + [
        f"Reassignment of partition {t}-{p} {status.value}" for (t, p), status in sorted(result.items())]


# ------------------------------------------------------------------------------------------------ the cluster


class Reassignments(Protocol):
    """Where a plan is checked, started and followed."""

    async def assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        """The assignments of the topics that exist, with the replicas reassignments in progress add and remove."""
        ...

    async def live_brokers(self) -> list[int]: ...

    async def in_progress(self) -> set[tuple[str, int]]:
        """Partitions whose reassignment is asked for and not done (beyond those the assignments show)."""
        ...

    async def start(self, plan: Plan) -> None:
        """Start the plan (ReassignmentError if another one is running or the cluster refuses it)."""
        ...


class ZkReassignments:
    """Plans through ZooKeeper: /admin/reassign_partitions and the topic znodes."""

    def __init__(self, zk: ZkClient) -> None:
        self._zk = zk

    async def assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        found = {}
        for topic in dict.fromkeys(topics):
            got = await self._zk.get_or_none(znodes.topic_path(topic))
            if got is not None:
                found[topic] = znodes.decode_topic_znode(got[0])
        return found

    async def live_brokers(self) -> list[int]:
        return sorted(int(b) for b in await self._zk.get_children(znodes.BROKER_IDS_PATH) if b.isdigit())

    async def in_progress(self) -> set[tuple[str, int]]:
        got = await self._zk.get_or_none(znodes.REASSIGN_PARTITIONS_PATH)
        return set(znodes.decode_reassignment(got[0])) if got is not None else set()

    async def start(self, plan: Plan) -> None:
        try:
            await self._zk.create(znodes.REASSIGN_PARTITIONS_PATH, znodes.encode_reassignment(plan), makepath=True)
        except NodeExistsError:
            raise ReassignmentError(EXISTING_REASSIGNMENT) from None


EXISTING_REASSIGNMENT = "There is an existing assignment running."


async def check_brokers(cluster: Reassignments, brokers: Iterable[int]) -> None:
    unknown = sorted(set(brokers) - set(await cluster.live_brokers()))
    if unknown:
        raise ReassignmentError(f"The proposed assignment contains non-existent brokerIDs: "
                                f"{','.join(map(str, unknown))}")


async def execute(cluster: Reassignments, plan: Plan) -> Plan:
    """Start a plan after checking it against the cluster. Returns the current assignment of its partitions (to
    roll back with)."""
    assignments = await cluster.assignments(t for t, _ in plan)
    missing = [f"{t}-{p}" for t, p in sorted(plan) if t not in assignments or p not in assignments[t].partitions]
    if missing:
        raise ReassignmentError(f"The proposed assignment contains non-existent partitions: {', '.join(missing)}")
    await check_brokers(cluster, (r for replicas in plan.values() for r in replicas))
    current = current_plan(assignments, plan)
    await cluster.start(plan)
    return current


async def read_statuses(cluster: Reassignments, plan: Plan) -> dict[tuple[str, int], ReassignmentStatus]:
    running = await cluster.in_progress()
    return statuses(plan, await cluster.assignments(t for t, _ in plan), running)


async def wait_statuses(cluster: Reassignments, plan: Plan, timeout_s: float,
                        seen: Callable[[Mapping[tuple[str, int], ReassignmentStatus]], None] = lambda _: None,
                        interval_s: float = 0.5) -> dict[tuple[str, int], ReassignmentStatus]:
    """The statuses once no partition of the plan is in progress, or at the deadline (some still are); each
    reading is shown to `seen` on the way."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = await read_statuses(cluster, plan)
        seen(found)
        if ReassignmentStatus.IN_PROGRESS not in found.values() or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(interval_s)  # the poll's cadence
