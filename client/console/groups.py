"""The console's consumer groups: every group's state, members and, per partition, its committed offset, the log
end offset and the lag, as `consumer-groups --describe` gives them, read through the admin client every few
seconds (a group that cannot be read keeps its last picture, with the problem)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

from client.admin import Admin, AdminError
from client.closing import AsyncClosing
from client.group.descriptions import GroupDescription
from client.group.lag import MISSING, offset_rows
from protocol.apis.offsets import LATEST_TIMESTAMP
from protocol.errors import KafkaError
from protocol.topic_partition import TopicPartition
from transport.connection import KafkaConnectionError

POLL_INTERVAL_S = 2.0
ANSWER_TIMEOUT_MS = 2000
CONSUMER_PROTOCOL_TYPE = "consumer"


def group_json(described: GroupDescription, committed: dict[TopicPartition, int],
               log_ends: dict[TopicPartition, int]) -> dict[str, Any]:
    """One group as the page shows it: state, member count, total lag, and a row per partition (pure)."""
    rows = [{"topic": r.topic, "partition": r.partition, "committed": r.current_offset, "log_end": r.log_end_offset,
             "lag": r.lag, "member": None if r.consumer_id == MISSING else r.consumer_id}
            for r in offset_rows(described, committed, log_ends)]
    return {"state": described.state, "members": len(described.members),
            "lag": sum(r["lag"] for r in rows if r["lag"] is not None), "partitions": rows}


class GroupWatch(AsyncClosing):
    """Polls the cluster's consumer groups (ListGroups, DescribeGroups, OffsetFetch, ListOffsets) until closed."""

    def __init__(self, bootstrap_servers: str, *, interval_s: float = POLL_INTERVAL_S,
                 timeout_ms: int = ANSWER_TIMEOUT_MS, tls: ssl.SSLContext | None = None) -> None:
        self.interval_s = interval_s
        self.timeout_ms = timeout_ms
        self.groups: dict[str, dict[str, Any]] = {}
        self._admin = Admin(bootstrap_servers, client_id="minikafka-console", tls=tls)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._admin.close()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(AdminError, KafkaError, KafkaConnectionError, OSError, TimeoutError):
                await self.poll()
            await asyncio.sleep(self.interval_s)

    async def poll(self) -> None:
        """Read every consumer group once; a group gone from the listing leaves the picture."""
        admin, timeout_ms = self._admin, self.timeout_ms
        listings = await admin.list_groups(timeout_ms=timeout_ms)
        ids = [g.group_id for g in listings if g.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")]
        described = await admin.describe_groups(ids, timeout_ms=timeout_ms) if ids else {}
        groups = {}
        for group_id, description in sorted(described.items()):
            try:
                committed = await admin.list_group_offsets(group_id, timeout_ms=timeout_ms)
                partitions = set(committed) | {tp for m in description.members for tp in m.assignment}
                log_ends = await admin.list_offsets(partitions, LATEST_TIMESTAMP, timeout_ms=timeout_ms)
            except (AdminError, KafkaError, KafkaConnectionError) as e:
                groups[group_id] = {**self.groups.get(group_id, {}), "problem": str(e)}
                continue
            groups[group_id] = group_json(description, {tp: o.offset for tp, o in committed.items()}, log_ends)
        self.groups = groups
