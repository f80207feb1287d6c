"""The consumer: reads partitions from their leaders, following leader changes; the partitions assigned by hand, or
by its group (subscribe), whose committed offsets it reads and writes."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import NamedTuple

from client.assignors import DEFAULT_STRATEGY, assignors
from client.assignors.base import Assignor
from client.closing import AsyncClosing
from client.group.config import GroupConfig
from client.group.consumer_coordinator import CommitCallback, ConsumerCoordinator
from client.group.offsets import OffsetAndMetadata
from client.group.rebalance_listener import ConsumerRebalanceListener
from client.metadata import ClusterMetadata
from protocol.apis.fetch import CONSUMER_REPLICA_ID, FetchPartition, FetchRequest, FetchResponse
from protocol.apis.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    BatchHeader,
    Header,
    RecordBatchError,
    TruncatedBatchError,
    decode_batch_columns,
    new_named_tuple,
    read_header,
)
from protocol.sasl import SaslCredentials
from protocol.topic_partition import TopicPartition
from transport.connection import KafkaConnectionError

log = logging.getLogger(__name__)

_RESETS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP, "none": None}


class ConsumerRecord(NamedTuple):
    """A record read from a partition; leader_epoch is the epoch of the leader that appended its batch. (A tuple:
    one is built per record.)"""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[Header, ...]
    leader_epoch: int


class ConsumerError(Exception):
    """Reading failed for a reason retrying will not fix; `code` is the Kafka error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class OffsetOutOfRangeError(ConsumerError):
    """The fetch position is outside the partition's [log start offset, high watermark]."""

    def __init__(self, tp: TopicPartition, offset: int, log_start_offset: int, high_watermark: int) -> None:
        super().__init__(
            ErrorCode.OFFSET_OUT_OF_RANGE,
            f"offset {offset} is out of range for {tp.topic}-{tp.partition} (log start offset {log_start_offset}, "
            f"high watermark {high_watermark}); seek to a valid offset",
        )
        self.tp = tp
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.high_watermark = high_watermark


def _tp(tp: tuple[str, int]) -> TopicPartition:
    return TopicPartition(*tp)


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class _FetchedRecords:
    """The records of one partition fetched and not handed out yet: whole batches, each decoded when poll gets to
    it. (Records decoded long before poll hands them out would live long enough for the garbage collector to
    promote them and walk them over and over.)"""

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        #: (response bytes, batch position in them, batch header, the fetch position: records below it are skipped)
        self._batches: deque[tuple[bytes, int, BatchHeader, int]] = deque()
        self._records: list[ConsumerRecord] = []
        self._next = 0  # index in _records of the next record to hand out

    def __bool__(self) -> bool:
        return self._next < len(self._records) or bool(self._batches)

    def add(self, data: bytes, pos: int, header: BatchHeader, position: int) -> None:
        self._batches.append((data, pos, header, position))

    def clear(self) -> None:
        self._batches.clear()
        self._records = []
        self._next = 0

    def next_offset(self) -> int | None:
        """The offset of the next record to hand out (a batch's offsets are consecutive: no need to decode it),
        None if nothing is buffered."""
        if self._next < len(self._records):
            return self._records[self._next].offset
        if self._batches:
            _, _, header, position = self._batches[0]
            return max(position, header.base_offset)
        return None

    def take(self, count: int) -> list[ConsumerRecord]:
        """Up to `count` records, in order."""
        taken: list[ConsumerRecord] = []
        while len(taken) < count and self._decode_next():
            end = min(len(self._records), self._next + count - len(taken))
            taken += self._records[self._next : end]
            self._next = end
        return taken

    def _decode_next(self) -> bool:
        """Decode batches until a record is ready to hand out; False if none is left. A batch that does not decode
        raises ConsumerError, now and on every later call until a seek."""
        while self._next >= len(self._records):
            if not self._batches:
                return False
            data, pos, header, position = self._batches[0]
            try:
                _, (offsets, timestamps, keys, values, headers) = decode_batch_columns(data, pos)
            except RecordBatchError as e:
                raise ConsumerError(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"{self.tp.topic}-{self.tp.partition}: batch at offset {header.base_offset}: {e}",
                ) from None
            rows: Iterator[tuple] = zip(
                repeat(self.tp.topic), repeat(self.tp.partition), offsets, keys, values, timestamps, headers,
                repeat(header.partition_leader_epoch),
            )
            if header.base_offset < position:  # the batch holding the fetch position starts before it
                rows = compress(rows, [offset >= position for offset in offsets])
            self._records = list(map(new_named_tuple, repeat(ConsumerRecord), rows))
            self._next = 0
            self._batches.popleft()
        return True


@dataclass(slots=True)
class _Fetch:
    task: asyncio.Task[FetchResponse]
    offsets: dict[TopicPartition, int]


class Consumer(AsyncClosing):
    """Reads partitions from their leaders: those given to `assign`, or those its group assigns it after
    `subscribe`.

    One fetch per leader broker is in flight at a time; records it returns are buffered and handed out by
    `poll`. Leader changes (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, a lost
    connection) lead to a metadata refresh and fetching from the new leader. A partition without a position
    starts at its group's committed offset if there is one, else at auto_offset_reset ("latest", "earliest", or
    "none": raise).

    With a group_id, `poll` also keeps the consumer a member of its group (joining, rebalancing, with heartbeats in
    the background) and commits the consumed offsets every auto_commit_interval_ms (enable_auto_commit) and on
    close; `commit` and `commit_async` commit by hand. The group settings are Kafka's (session.timeout.ms and so
    on, see client.group.config); partition_assignment_strategy names the assignors offered, by protocol or Kafka
    class name.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        auto_offset_reset: str = "latest",
        client_id: str = "minikafka-consumer",
        tls: ssl.SSLContext | None = None,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        partition_assignment_strategy: Sequence[str | Assignor] = DEFAULT_STRATEGY,
        session_timeout_ms: int = 45000,
        heartbeat_interval_ms: int = 3000,
        max_poll_interval_ms: int = 300000,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        retry_backoff_max_ms: int = 1000,
        metadata_max_age_ms: int = 300000,
        default_api_timeout_ms: int = 60000,
        clock: Callable[[], float] = _monotonic_ms,
        sasl: SaslCredentials | None = None,
    ) -> None:
        if auto_offset_reset not in _RESETS:
            raise ValueError(f"auto_offset_reset must be one of {', '.join(_RESETS)}, got {auto_offset_reset!r}")
        self.default_api_timeout_ms = default_api_timeout_ms
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.auto_offset_reset = auto_offset_reset
        self.metadata = ClusterMetadata(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                                        tls=tls, sasl=sasl)
        self._clock = clock
        self._assignment: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int | None] = {}
        self._buffers: dict[TopicPartition, _FetchedRecords] = {}
        self._fetches: dict[int, _Fetch] = {}
        self._needs_refresh = True
        self._retry_at_ms = float("-inf")
        #: the leader epoch of the last record handed out of each partition (for commits)
        self._position_epochs: dict[TopicPartition, int] = {}
        self._group_settings = {
            "group_instance_id": group_instance_id, "session_timeout_ms": session_timeout_ms,
            "heartbeat_interval_ms": heartbeat_interval_ms, "max_poll_interval_ms": max_poll_interval_ms,
            "retry_backoff_ms": retry_backoff_ms, "retry_backoff_max_ms": retry_backoff_max_ms,
            "request_timeout_ms": request_timeout_ms, "enable_auto_commit": enable_auto_commit,
            "auto_commit_interval_ms": auto_commit_interval_ms, "metadata_max_age_ms": metadata_max_age_ms,
            "default_api_timeout_ms": default_api_timeout_ms}
        self._strategy = list(partition_assignment_strategy)
        self._group = None if group_id is None else self._new_group(group_id)

    def _new_group(self, group_id: str) -> ConsumerCoordinator:
        config = GroupConfig(group_id, **self._group_settings)
        chosen = [a for a in self._strategy if not isinstance(a, str)]
        chosen += assignors(a for a in self._strategy if isinstance(a, str))
        return ConsumerCoordinator(self.metadata, config, chosen, self, clock=self._clock)

    def assign(self, tps: Iterable[tuple[str, int]]) -> None:
        """Read exactly these partitions from now on; partitions kept from the last assignment keep their
        positions. Not for a consumer that subscribed (its group assigns its partitions)."""
        if self._group is not None and self._group.subscribed:
            raise ValueError("assign() and subscribe() exclude each other: this consumer subscribed")
        self.assign_from_subscribed([_tp(tp) for tp in tps])

    def assignment(self) -> list[TopicPartition]:
        """The assigned partitions."""
        return list(self._assignment)

    # ----------------------------------------------------------------------------------- the group

    def subscribe(self, topics: Iterable[str], *, group_id: str | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Consume `topics` as a member of group `group_id` (the consumer's group_id if not given): from the next
        poll on, the group assigns the partitions, and `listener` is told which ones this consumer gives up and
        is given."""
        if isinstance(topics, str):
            raise TypeError("subscribe takes a list of topics, not one string")
        if self._group is None or (group_id is not None and group_id != self._group.config.group_id):
            if group_id is None:
                raise ValueError("subscribe needs a group_id (give it here or to the Consumer)")
            if self._group is not None:
                raise ValueError(f"this consumer belongs to group {self._group.config.group_id!r}, "
                                 f"not {group_id!r}")
            self._group = self._new_group(group_id)
        if self._assignment and not self._group.subscribed:
            raise ValueError("assign() and subscribe() exclude each other: this consumer has assigned partitions")
        self._group.subscribe(topics, listener)

    def subscription(self) -> set[str]:
        """The topics subscribed to (empty if the partitions are assigned by hand)."""
        return set(self._group.subscription) if self._group is not None else set()

    async def unsubscribe(self) -> None:
        """Give up the group's partitions (with the revoked callback) and leave the group."""
        if self._group is not None and self._group.subscribed:
            await self._group.unsubscribe()

    async def commit(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata] | None = None, *,
                     timeout_ms: int | None = None) -> None:
        """Commit offsets for the group and wait until they are (retrying retriable failures until timeout_ms,
        default.api.timeout.ms by default): `offsets` (each the offset of the next record to read), or the
        position of every assigned partition. Raises CommitFailedError if the consumer is no longer in the
        generation its partitions were assigned in."""
        group = self._group_or_raise()
        deadline = self._clock() + (self.default_api_timeout_ms if timeout_ms is None else timeout_ms)
        await group.commit_sync(self._offsets_to_commit(offsets), deadline)

    def commit_async(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> asyncio.Task[None]:
        """Send a commit without waiting for it (not retried); `callback(offsets, error)` is called with its
        outcome. Returns the task that completes with it."""
        return self._group_or_raise().commit_async(self._offsets_to_commit(offsets), callback)

    async def committed(self, tps: Iterable[tuple[str, int]], *, timeout_ms: int | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of these partitions (None for a partition without one)."""
        group = self._group_or_raise()
        deadline = self._clock() + (self.default_api_timeout_ms if timeout_ms is None else timeout_ms)
        found = await group.fetch_committed_offsets([_tp(tp) for tp in tps], deadline)
        if found is None:
            raise ConsumerError(ErrorCode.REQUEST_TIMED_OUT, "the committed offsets were not read in time")
        return found

    def _group_or_raise(self) -> ConsumerCoordinator:
        if self._group is None:
            raise ValueError("this consumer has no group_id: there is no group to commit offsets to")
        return self._group

    def _offsets_to_commit(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata] | None
                           ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self.consumed_offsets()
        return {_tp(tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o) for tp, o in offsets.items()}

    def assigned(self) -> list[TopicPartition]:
        return list(self._assignment)

    def assign_from_subscribed(self, partitions: Sequence[TopicPartition]) -> None:
        assignment = list(dict.fromkeys(partitions))
        self._positions = {tp: self._positions.get(tp) for tp in assignment}
        self._buffers = {tp: self._buffers.get(tp) or _FetchedRecords(tp) for tp in assignment}
        self._position_epochs = {tp: e for tp, e in self._position_epochs.items() if tp in self._positions}
        self._assignment = assignment
        self._needs_refresh = True

    def consumed_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offset of the next record poll will hand out of each assigned partition with a position, with the
        leader epoch of the last one handed out: what a commit of "everything consumed" commits."""
        consumed = {}
        for tp in self._assignment:
            offset = self._buffers[tp].next_offset()
            if offset is None:
                offset = self._positions[tp]
            if offset is not None:
                consumed[tp] = OffsetAndMetadata(offset, self._position_epochs.get(tp))
        return consumed

    def seek(self, tp: tuple[str, int], offset: int) -> None:
        """Read the partition from `offset` on."""
        tp = self._assigned(tp)
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        self._positions[tp] = offset
        self._position_epochs.pop(tp, None)
        self._buffers[tp].clear()

    async def seek_to_beginning(self, tps: Iterable[tuple[str, int]] | None = None) -> None:
        """Move to each partition's log start offset (all assigned partitions if tps is None)."""
        await self._seek_to(tps, EARLIEST_TIMESTAMP)

    async def seek_to_end(self, tps: Iterable[tuple[str, int]] | None = None) -> None:
        """Move to each partition's high watermark: only records produced from now on will be read."""
        await self._seek_to(tps, LATEST_TIMESTAMP)

    async def position(self, tp: tuple[str, int]) -> int:
        """The offset of the next record poll will return for the partition."""
        tp = self._assigned(tp)
        buffered = self._buffers[tp].next_offset()
        if buffered is not None:
            return buffered
        await self._reset_missing_positions(self._clock() + self.default_api_timeout_ms)
        position = self._positions[tp]
        assert position is not None
        return position

    async def poll(self, timeout_ms: int = 1000, max_records: int = 500) -> list[ConsumerRecord]:
        """Return up to max_records records, waiting up to timeout_ms for some to arrive (an empty list if
        none did). Raises OffsetOutOfRangeError if a position is outside its partition's log."""
        deadline = self._clock() + timeout_ms
        while True:
            if self._group is not None and not await self._group.poll(deadline):
                return []
            self._complete_done_fetches()
            records = self._take_buffered(max_records)
            if records:
                if not self._needs_refresh:
                    self._start_fetches()  # ahead, for the partitions just drained
                if self._fetches:
                    await asyncio.sleep(0)  # let fetch responses in while the application works through these
                return records
            await self._prepare(deadline)
            self._start_fetches()
            remaining = deadline - self._clock()
            if remaining <= 0 and not any(f.task.done() for f in self._fetches.values()):
                return []
            if self._fetches:
                await asyncio.wait(
                    [f.task for f in self._fetches.values()],
                    timeout=max(remaining, 0) / 1000,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            else:
                await asyncio.sleep(max(0.0, min(self._retry_at_ms - self._clock(), remaining)) / 1000)

    async def close(self) -> None:
        """Commit the consumed offsets (with a group and auto commit), leave the group, stop outstanding fetches
        and close the connections."""
        try:
            if self._group is not None:
                await self._group.close()
        finally:
            await self._stop()

    async def _stop(self) -> None:
        fetches, self._fetches = self._fetches, {}
        for fetch in fetches.values():
            fetch.task.cancel()
        await asyncio.gather(*(f.task for f in fetches.values()), return_exceptions=True)
        await self.metadata.close()

    # ----------------------------------------------------------------------------------- positions

    def _assigned(self, tp: tuple[str, int]) -> TopicPartition:
        tp = _tp(tp)
        if tp not in self._positions:
            raise ValueError(f"{tp.topic}-{tp.partition} is not assigned to this consumer")
        return tp

    async def _seek_to(self, tps: Iterable[tuple[str, int]] | None, timestamp: int) -> None:
        targets = self._assignment if tps is None else [self._assigned(tp) for tp in tps]
        for tp, offset in (await self._list_offsets(targets, timestamp)).items():
            self.seek(tp, offset)

    async def _reset_missing_positions(self, deadline: float) -> None:
        """Give each partition without a position its group's committed offset, or else auto_offset_reset's."""
        missing = [tp for tp, position in self._positions.items() if position is None]
        if not missing:
            return
        if self._group is not None:
            committed = await self._group.fetch_committed_offsets(missing, deadline)
            if committed is None:
                return  # not known yet: the next poll asks again
            for tp, found in committed.items():
                if found is not None and tp in self._positions and self._positions[tp] is None:
                    self._positions[tp] = found.offset
                    if found.leader_epoch is not None:
                        self._position_epochs[tp] = found.leader_epoch
            missing = [tp for tp in missing if self._positions.get(tp, 0) is None]
            if not missing:
                return
        timestamp = _RESETS[self.auto_offset_reset]
        if timestamp is None:
            names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing)
            raise ConsumerError(ErrorCode.OFFSET_OUT_OF_RANGE, f"no position for {names}: seek first")
        for tp, offset in (await self._list_offsets(missing, timestamp)).items():
            if self._positions.get(tp, -1) is None:
                self._positions[tp] = offset

    async def _list_offsets(self, tps: Sequence[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
        """Each partition's offset for a timestamp (EARLIEST/LATEST_TIMESTAMP), from its leader, retrying
        retriable errors until request_timeout_ms."""
        deadline = self._clock() + self.request_timeout_ms
        found: dict[TopicPartition, int] = {}
        pending = set(tps)
        problem = "no leader known"
        while True:
            await self._refresh_if_needed()
            for leader, group in self._by_leader(pending).items():
                try:
                    response = await self._list_offsets_from(leader, group, timestamp)
                except (KafkaConnectionError, KafkaError) as e:
                    problem = self._fetch_failed(e)
                    continue
                for topic in response.topics:
                    for result in topic.partitions:
                        tp = TopicPartition(topic.name, result.partition)
                        error = ErrorCode.from_code(result.error_code)
                        if error == ErrorCode.NONE:
                            found[tp] = result.offset
                            pending.discard(tp)
                        elif error.retriable:
                            problem = f"{error.name} from broker {leader}"
                            self._needs_refresh = True
                        else:
                            raise ConsumerError(error, f"cannot list offsets of {tp.topic}-{tp.partition}")
            if not pending:
                return found
            if self._clock() >= deadline:
                names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(pending))
                raise ConsumerError(ErrorCode.REQUEST_TIMED_OUT, f"cannot list offsets of {names}: {problem}")
            await asyncio.sleep(self.retry_backoff_ms / 1000)

    async def _list_offsets_from(self, leader: int, tps: list[TopicPartition], timestamp: int) -> ListOffsetsResponse:
        connection = await self.metadata.connection(leader)
        by_topic: dict[str, list[ListOffsetsPartition]] = defaultdict(list)
        for tp in tps:
            by_topic[tp.topic].append(
                ListOffsetsPartition(
                    partition=tp.partition, current_leader_epoch=self._leader_epoch(tp), timestamp=timestamp
                )
            )
        request = ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID,
            isolation_level=0,
            topics=[Topic(name=name, partitions=partitions) for name, partitions in by_topic.items()],
        )
        return await connection.request(request)

    # ----------------------------------------------------------------------------------- fetching

    async def _prepare(self, deadline: float) -> None:
        """Refresh metadata if a fetch asked for it, and give every partition a position."""
        if self._clock() < self._retry_at_ms:
            return
        await self._refresh_if_needed()
        await self._reset_missing_positions(deadline)

    async def _refresh_if_needed(self) -> None:
        if not self._needs_refresh:
            return
        try:
            await self.metadata.refresh({tp.topic for tp in self._assignment})
            self._needs_refresh = False
        except KafkaConnectionError as e:
            log.warning("metadata refresh failed: %s", e)
            self._retry_at_ms = self._clock() + self.retry_backoff_ms

    def _by_leader(self, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """Partitions grouped by their known leader; a partition without one asks for a metadata refresh."""
        groups: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in tps:
            info = self.metadata.leader_for(tp.topic, tp.partition)
            if info is None:
                self._needs_refresh = True
            else:
                groups[info.leader].append(tp)
        return groups

    def _leader_epoch(self, tp: TopicPartition) -> int:
        info = self.metadata.partition(tp.topic, tp.partition)
        return -1 if info is None else info.leader_epoch

    def _start_fetches(self) -> None:
        """Send a fetch to every leader without one in flight and with nothing buffered for any of its partitions.
        (A fetch for some of them only could long-poll on those with no new data while the others wait.)"""
        if self._clock() < self._retry_at_ms:
            return
        fetchable = [tp for tp in self._assignment if self._positions[tp] is not None]
        for leader, tps in self._by_leader(fetchable).items():
            if leader in self._fetches or any(self._buffers[tp] for tp in tps):
                continue
            offsets = {tp: position for tp in tps if (position := self._positions[tp]) is not None}
            task = asyncio.get_running_loop().create_task(self._fetch(leader, offsets))
            self._fetches[leader] = _Fetch(task, offsets)

    async def _fetch(self, leader: int, offsets: dict[TopicPartition, int]) -> FetchResponse:
        connection = await self.metadata.connection(leader)
        by_topic: dict[str, list[FetchPartition]] = defaultdict(list)
        for tp, offset in offsets.items():
            by_topic[tp.topic].append(
                FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=self._leader_epoch(tp),
                    fetch_offset=offset,
                    partition_max_bytes=self.max_partition_fetch_bytes,
                )
            )
        request = FetchRequest(
            replica_id=CONSUMER_REPLICA_ID,
            max_wait_ms=self.fetch_max_wait_ms,
            min_bytes=self.fetch_min_bytes,
            max_bytes=self.fetch_max_bytes,
            topics=[Topic(name=name, partitions=partitions) for name, partitions in by_topic.items()],
        )
        return await connection.request(request, timeout_ms=self.request_timeout_ms + self.fetch_max_wait_ms)

    def _complete_done_fetches(self) -> None:
        for leader, fetch in list(self._fetches.items()):
            if fetch.task.done():
                del self._fetches[leader]
                self._complete_fetch(fetch)

    def _fetch_failed(self, error: Exception) -> str:
        """Note a failed request to a leader: refresh metadata and back off. Raises if retrying cannot help."""
        if isinstance(error, KafkaError) and not error.retriable:
            raise ConsumerError(error.code, error.message or error.code.name)
        self._needs_refresh = True
        self._retry_at_ms = self._clock() + self.retry_backoff_ms
        return str(error)

    def _complete_fetch(self, fetch: _Fetch) -> None:
        error = fetch.task.exception()
        if error is not None:
            if not isinstance(error, KafkaConnectionError | KafkaError):
                raise error
            log.debug("fetch failed: %s", error)
            self._fetch_failed(error)
            return
        response = fetch.task.result()
        top_error = ErrorCode.from_code(response.error_code)
        if top_error != ErrorCode.NONE:
            self._fetch_failed(KafkaError(top_error, "fetch refused"))
            return
        for topic in response.topics:
            for result in topic.partitions:
                tp = TopicPartition(topic.name, result.partition)
                offset = fetch.offsets.get(tp)
                if offset is None or self._positions.get(tp) != offset:
                    continue  # not asked for, unassigned or sought elsewhere meanwhile
                error_code = ErrorCode.from_code(result.error_code)
                if error_code == ErrorCode.NONE:
                    self._buffer_records(tp, offset, result.records)
                elif error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    raise OffsetOutOfRangeError(tp, offset, result.log_start_offset, result.high_watermark)
                elif error_code.retriable:
                    log.debug("fetch of %s-%d: %s", tp.topic, tp.partition, error_code.name)
                    self._needs_refresh = True
                else:
                    raise ConsumerError(error_code, f"cannot fetch {tp.topic}-{tp.partition} at offset {offset}")

    def _buffer_records(self, tp: TopicPartition, position: int, data: bytes) -> None:
        """Buffer the whole batches in `data` (their records at or after `position`), move the position."""
        buffer = self._buffers[tp]
        pos = 0
        next_offset = position
        while pos < len(data):
            try:
                header = read_header(data, pos, require_body=False)
            except TruncatedBatchError:
                break
            if pos + header.size_in_bytes > len(data):
                break  # a partial batch at the end of the response
            buffer.add(data, pos, header, position)
            next_offset = max(next_offset, header.next_offset)
            pos += header.size_in_bytes
        if pos == 0 and data:
            raise ConsumerError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"{tp.topic}-{tp.partition}: the batch at offset {position} is larger than "
                f"max_partition_fetch_bytes ({self.max_partition_fetch_bytes})",
            )
        self._positions[tp] = next_offset

    def _take_buffered(self, max_records: int) -> list[ConsumerRecord]:
        taken: list[ConsumerRecord] = []
        for tp in self._assignment:
            if len(taken) >= max_records:
                break
            records = self._buffers[tp].take(max_records - len(taken))
            if records:
                self._position_epochs[tp] = records[-1].leader_epoch
                taken += records
        return taken
