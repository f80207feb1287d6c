"""`AdminReassignments`: reassignment plans through the controller (AlterPartitionReassignments and
ListPartitionReassignments), as kafka-reassign-partitions --bootstrap-server does it; assignments from Metadata."""

from __future__ import annotations

from collections.abc import Iterable

from client.admin import Admin, AdminError
from client.reassignment import EXISTING_REASSIGNMENT, Plan, ReassignmentError
from protocol.errors import ErrorCode
from zk.znodes import TopicAssignment


class AdminReassignments:
    """Plans through the admin client."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    async def assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        wanted = list(dict.fromkeys(topics))
        await self._admin.metadata.refresh(wanted)
        ongoing = await self._admin.list_partition_reassignments()
        found = {}
        for topic in wanted:
            partitions = self._admin.metadata.partitions(topic)
            if self._admin.metadata.topic_errors.get(topic) is not None or not partitions:
                continue
            moving = {p: r for (t, p), r in ongoing.items() if t == topic}
            found[topic] = TopicAssignment(partitions={i.partition: list(i.replicas) for i in partitions},
                                           adding={p: r.adding for p, r in moving.items() if r.adding},
                                           removing={p: r.removing for p, r in moving.items() if r.removing})
        return found

    async def live_brokers(self) -> list[int]:
        await self._admin.metadata.refresh([])
        return sorted(self._admin.metadata.brokers)

    async def in_progress(self) -> set[tuple[str, int]]:
        return set(await self._admin.list_partition_reassignments())

    async def start(self, plan: Plan) -> None:
        if await self._admin.list_partition_reassignments():
            raise ReassignmentError(EXISTING_REASSIGNMENT)
        try:
            outcomes = await self._admin.alter_partition_reassignments(plan)
        except AdminError as e:
            raise ReassignmentError(str(e)) from None
        refused = [f"{t}-{p}: {message or code.name}" for (t, p), (code, message) in sorted(outcomes.items())
                   if code != ErrorCode.NONE]
        if refused:
            raise ReassignmentError(f"Error reassigning partition(s): {'; '.join(refused)}")
