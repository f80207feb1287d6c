"""The soak's group workload: consumers sharing one consumer group read the soak's topic while the nemesis runs,
committing what they consumed as they go. At the end, every acknowledged record must have been delivered to the
group at least once, and no partition's committed offset may have gone backwards: neither from one successful
commit to a later one (whichever member made them), nor in what the group reads back at the end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client.chaos.workload import Acked, ReadRecord, Workers, text
from client.consumer import Consumer, ConsumerError, OffsetOutOfRangeError
from client.group.offsets import OffsetAndMetadata
from protocol.errors import KafkaError
from protocol.topic_partition import TopicPartition
from transport.connection import KafkaConnectionError

GROUP = "chaos-group"
_POLL_MS = 200
_COMMIT_TIMEOUT_MS = 5000
_EXAMPLES = 20


@dataclass
class CommitHistory:
    """Every successful commit of the group, per partition in the order they were acknowledged, and the commits
    that went backwards (an offset below one acknowledged before it)."""

    highest: dict[int, int] = field(default_factory=dict)
    successful: int = 0
    failed: int = 0
    regressions: list[str] = field(default_factory=list)

    def acknowledged(self, member: str, offsets: Mapping[int, int]) -> None:
        """A commit of `offsets` (partition to next offset) by `member` was acknowledged."""
        self.successful += 1
        for partition, offset in offsets.items():
            before = self.highest.get(partition, -1)
            if offset < before:
                self.regressions.append(f"partition {partition}: {member} committed {offset} after {before} was "
                                        f"committed")
            self.highest[partition] = max(before, offset)

    def read_back(self, committed: Mapping[int, int | None]) -> None:
        """The group's committed offsets read at the end: none may be below an acknowledged commit."""
        for partition, before in self.highest.items():
            offset = committed.get(partition)
            if offset is None or offset < before:
                self.regressions.append(f"partition {partition}: the group's committed offset is {offset} at the "
                                        f"end, below the acknowledged commit of {before}")


class GroupConsumers(Workers):
    """`count` minikafka consumers subscribed to `topic` in `group`, each committing what it consumed after every
    poll that moved it on (and again while a commit is owed); what each poll delivered is kept by partition and
    offset."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *, group: str = GROUP, count: int = 3,
                 request_timeout_ms: int = 3000, session_timeout_ms: int = 10_000) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        super().__init__(count)
        self.group = group
        self.request_timeout_ms = request_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.delivered: dict[int, dict[int, ReadRecord]] = {p: {} for p in range(partitions)}
        self.commits = CommitHistory()
        self.out_of_range: list[str] = []

    async def _run_one(self, number: int) -> None:
        member = f"chaos-group-consumer-{number}"
        async with Consumer(self.bootstrap, group_id=self.group, client_id=member, auto_offset_reset="earliest",
                            enable_auto_commit=False, request_timeout_ms=self.request_timeout_ms,
                            session_timeout_ms=self.session_timeout_ms, heartbeat_interval_ms=1000,
                            fetch_max_wait_ms=_POLL_MS, retry_backoff_max_ms=500) as consumer:
            consumer.subscribe([self.topic])
            committed: dict[TopicPartition, int] = {}
            while not self._stop.is_set():
                try:
                    records = await consumer.poll(timeout_ms=_POLL_MS, max_records=2000)
                except OffsetOutOfRangeError as e:
                    self._out_of_range(consumer, e)
                    continue
                except (ConsumerError, KafkaError, KafkaConnectionError, OSError):  # a fault is in force
                    await asyncio.sleep(_POLL_MS / 1000)  # a retry interval, not a wait for a condition
                    continue
                for record in records:
                    self.delivered[record.partition].setdefault(
                        record.offset, ReadRecord(text(record.key), text(record.value)))
                await self._commit(consumer, member, committed)

    async def _commit(self, consumer: Consumer, member: str, committed: dict[TopicPartition, int]) -> None:
        """Commit the consumed offsets if they differ from what this member last committed."""
        offsets = {tp: o.offset for tp, o in consumer.consumed_offsets().items()}
        if not offsets or all(committed.get(tp) == o for tp, o in offsets.items()):
            return
        try:
            await consumer.commit({tp: OffsetAndMetadata(o) for tp, o in offsets.items()},
                                  timeout_ms=_COMMIT_TIMEOUT_MS)
        except (ConsumerError, KafkaError, KafkaConnectionError, OSError):  # rebalancing, or a fault: later
            self.commits.failed += 1
            return
        committed.update(offsets)
        self.commits.acknowledged(member, {tp.partition: o for tp, o in offsets.items()})

    def _out_of_range(self, consumer: Consumer, error: OffsetOutOfRangeError) -> None:
        """A position outside the log: behind its start is retention; past its end, records are gone."""
        if 0 <= error.offset < error.log_start_offset:
            consumer.seek(error.tp, error.log_start_offset)
            return
        self.out_of_range.append(f"{error.tp}: position {error.offset} past the log end (high watermark "
                                 f"{error.high_watermark})")
        consumer.seek(error.tp, max(error.high_watermark, error.log_start_offset, 0))

    async def caught_up(self, acked: Iterable[Acked], timeout_s: float) -> bool:
        """Wait until the group has committed past the last acknowledged record of every partition (or its log
        end, below which an acknowledged record lost by the log cannot be read); False at the deadline."""
        ends = await self._log_ends()
        targets: dict[int, int] = {}
        for a in acked:
            targets[a.partition] = min(max(targets.get(a.partition, 0), a.offset + 1), ends[a.partition])
        deadline = time.monotonic() + timeout_s
        while any(self.commits.highest.get(p, -1) < end for p, end in targets.items()):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(_POLL_MS / 1000)
        return True

    async def _log_ends(self) -> dict[int, int]:
        async with Consumer(self.bootstrap, client_id="chaos-group-ends", request_timeout_ms=10_000) as reader:
            tps = [(self.topic, p) for p in range(self.partitions)]
            reader.assign(tps)
            await reader.seek_to_end()
            return {p: await reader.position(tp) for p, tp in enumerate(tps)}

    async def read_committed(self) -> dict[int, int | None]:
        """The group's committed offset of every partition, read back from its coordinator."""
        async with Consumer(self.bootstrap, group_id=self.group, client_id="chaos-group-offsets",
                            request_timeout_ms=10_000) as reader:
            found = await reader.committed([(self.topic, p) for p in range(self.partitions)], timeout_ms=60_000)
        return {tp.partition: None if o is None else o.offset for tp, o in found.items()}

    def verdict(self, acked: Iterable[Acked], caught_up: bool) -> dict[str, Any]:
        """The summary's group keys: `group_missed` (acknowledged records never delivered to the group),
        `commit_regressions`, and their details under `group`."""
        missed = [a for a in acked if self.delivered[a.partition].get(a.offset) != ReadRecord(a.key, a.value)]
        return {
            "group_missed": len(missed),
            "commit_regressions": len(self.commits.regressions),
            "group": {
                "group": self.group,
                "consumers": self.count,
                "delivered": sum(len(d) for d in self.delivered.values()),
                "commits": self.commits.successful,
                "failed_commits": self.commits.failed,
                "caught_up": caught_up,
                "missed_examples": [f"{self.topic}-{a.partition} offset {a.offset}: {a.value!r}"
                                    for a in missed[:_EXAMPLES]],
                "regressions": self.commits.regressions[:_EXAMPLES],
                "out_of_range": self.out_of_range[:_EXAMPLES],
            },
        }
