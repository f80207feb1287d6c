"""The producer's record accumulator: per-partition batches, and when each is ready to send (no I/O, no clock).

Times are milliseconds from any monotonic clock, passed in by the caller.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import NamedTuple

from client.metadata import TopicPartition
from protocol.records import HEADER_SIZE, BatchBuilder, Header, new_named_tuple

# Upper bounds of a record's framing in a v2 batch: length, timestampDelta, offsetDelta, keyLength,
# valueLength and headerCount varints plus the attributes byte; per header its two length varints.
_RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 5 + 5
_HEADER_OVERHEAD = 5 + 5

HeaderLike = Header | tuple[str, bytes | None]


def estimate_record_size(key: bytes | None, value: bytes | None, headers: Sequence[HeaderLike] = ()) -> int:
    """An upper bound of the bytes a record adds to a batch."""
    size = _RECORD_OVERHEAD + len(key or b"") + len(value or b"")
    for header in headers:
        header_key, header_value = (header.key, header.value) if isinstance(header, Header) else header
        size += _HEADER_OVERHEAD + len(header_key.encode()) + len(header_value or b"")
    return size


class RecordMetadata(NamedTuple):
    """Where an acknowledged record was written. offset is -1 for acks=0. (A tuple: one is built per record.)"""

    topic: str
    partition: int
    offset: int
    timestamp: int


class Appended(NamedTuple):
    """The outcome of RecordAccumulator.append."""

    future: asyncio.Future[RecordMetadata]
    new_batch: bool  # the record opened a new batch
    sealed: bool  # a batch became full: it is ready to send


class ProducerBatch:
    """Records for one partition, built into one RecordBatch v2, and the futures their senders wait on."""

    def __init__(self, tp: TopicPartition, created_ms: float) -> None:
        self.tp = tp
        self.created_ms = created_ms
        self.retry_at_ms = created_ms
        self.attempts = 0
        self.last_error: str | None = None  # why the last attempt failed, for the message if the batch expires
        self.sealed = False
        self.estimated_size = HEADER_SIZE
        self.futures: list[asyncio.Future[RecordMetadata]] = []
        self._timestamps: list[int] = []
        self._builder = BatchBuilder()
        self._records: bytes | None = None
        self._loop = asyncio.get_running_loop()
        #: Resolved (to None) once every record's future is resolved, by `complete` or `fail`.
        self.completion: asyncio.Future[None] = self._loop.create_future()

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp.topic}-{self.tp.partition}, {len(self.futures)} records)"

    @property
    def record_count(self) -> int:
        return len(self.futures)

    @property
    def done(self) -> bool:
        """True once the batch was completed or failed."""
        return self.completion.done()

    def append(
        self, key: bytes | None, value: bytes | None, headers: Sequence[HeaderLike], timestamp: int, estimate: int
    ) -> asyncio.Future[RecordMetadata]:
        """Add a record (the batch must not be sealed); return the future of its metadata."""
        assert not self.sealed, "append to a sealed batch"
        self._builder.append(value, key, headers, timestamp)
        self._timestamps.append(timestamp)
        self.estimated_size += estimate
        future: asyncio.Future[RecordMetadata] = self._loop.create_future()
        self.futures.append(future)
        return future

    def records(self) -> bytes:
        """The batch bytes (built once; the batch is sealed from then on)."""
        if self._records is None:
            self.sealed = True
            self._records = self._builder.build()
        return self._records

    def complete(self, base_offset: int, log_append_time_ms: int = -1) -> None:
        """Resolve every record's future: offset base_offset + index (base_offset -1 means unknown: acks=0)."""
        topic, partition = self.tp
        count = len(self.futures)
        offsets = repeat(-1, count) if base_offset < 0 else range(base_offset, base_offset + count)
        timestamps = self._timestamps if log_append_time_ms < 0 else repeat(log_append_time_ms, count)
        for future, offset, timestamp in zip(self.futures, offsets, timestamps, strict=True):
            if not future.done():
                future.set_result(new_named_tuple(RecordMetadata, (topic, partition, offset, timestamp)))
        self._resolve()

    def fail(self, error: BaseException) -> None:
        """Fail every record's future with `error`."""
        for future in self.futures:
            if not future.done():
                future.set_exception(error)
        self._resolve()

    def _resolve(self) -> None:
        if not self.completion.done():
            self.completion.set_result(None)


class RecordAccumulator:
    """Per-partition queues of batches, and the rules deciding which are ready to send.

    A batch takes records until the next one would push it past batch_size (a record bigger than that gets a
    batch of its own). A partition's head batch is ready when it is sealed or older than linger_ms (or always,
    when forced by flush or close), unless its retry backoff runs or the partition is muted because a batch
    of it is in flight: at most one batch per partition is in flight, which keeps records in order on retry.
    Batches waiting longer than delivery_timeout_ms since creation expire.
    """

    def __init__(self, *, batch_size: int, linger_ms: float, delivery_timeout_ms: float) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.buffered_bytes = 0
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._muted: set[TopicPartition] = set()
        self._incomplete: set[ProducerBatch] = set()

    def append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[HeaderLike],
        timestamp: int,
        now_ms: float,
        estimate: int | None = None,
    ) -> Appended:
        """Add a record to the partition's open batch, or to a new one. `estimate` is the record's
        estimate_record_size, if the caller has it already."""
        if estimate is None:
            estimate = estimate_record_size(key, value, headers)
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        batch = queue[-1] if queue else None
        sealed = new_batch = False
        if batch is None or batch.sealed or batch.estimated_size + estimate > self.batch_size:
            if batch is not None and not batch.sealed:
                batch.sealed = sealed = True
            batch = ProducerBatch(tp, now_ms)
            queue.append(batch)
            self._incomplete.add(batch)
            new_batch = True
        future = batch.append(key, value, headers, timestamp, estimate)
        self.buffered_bytes += estimate
        if batch.estimated_size >= self.batch_size:
            batch.sealed = sealed = True
        return new_named_tuple(Appended, (future, new_batch, sealed))

    def has_open_batch(self, tp: TopicPartition) -> bool:
        """Whether the partition has a batch still taking records."""
        queue = self._queues.get(tp)
        return bool(queue) and not queue[-1].sealed

    def seal_if_full(self, tp: TopicPartition, estimate: int) -> bool:
        """Seal the partition's open batch if a record of `estimate` bytes would not fit in it; returns whether
        it did. (A keyless record then moves on to another partition instead of opening a batch here.)"""
        queue = self._queues.get(tp)
        if not queue:
            return False
        batch = queue[-1]
        if batch.sealed or batch.estimated_size + estimate <= self.batch_size:
            return False
        batch.sealed = True
        return True

    def ready(self, now_ms: float, *, force: bool = False) -> list[TopicPartition]:
        """Partitions whose head batch may be sent now."""
        return [tp for tp, queue in self._queues.items() if queue and self._ready_in(tp, queue, now_ms, force) <= 0]

    def next_wakeup_in(self, now_ms: float, *, force: bool = False) -> float | None:
        """Milliseconds until a batch that is not ready now becomes ready or expires; None if none waits."""
        delays = []
        for tp, queue in self._queues.items():
            if queue:
                delays.append(queue[0].created_ms + self.delivery_timeout_ms - now_ms)
                ready_in = self._ready_in(tp, queue, now_ms, force)
                if 0 < ready_in < float("inf"):
                    delays.append(ready_in)
        return max(0.0, min(delays)) if delays else None

    def drain(self, tps: Iterable[TopicPartition], max_request_size: int) -> list[ProducerBatch]:
        """Take the head batch of each partition, up to max_request_size bytes in all (at least one batch),
        and mute those partitions until `unmute`."""
        drained: list[ProducerBatch] = []
        size = 0
        for tp in tps:
            queue = self._queues[tp]
            batch = queue[0]
            batch_size = len(batch.records())
            if drained and size + batch_size > max_request_size:
                break
            queue.popleft()
            self._muted.add(tp)
            drained.append(batch)
            size += batch_size
        return drained

    def unmute(self, tp: TopicPartition) -> None:
        """The partition's in-flight batch is answered: its next batch may go."""
        self._muted.discard(tp)

    def reenqueue(self, batch: ProducerBatch, retry_at_ms: float) -> None:
        """Put a batch back at the head of its partition, to be retried from retry_at_ms."""
        batch.attempts += 1
        batch.retry_at_ms = retry_at_ms
        self._queues.setdefault(batch.tp, deque()).appendleft(batch)

    def expire(self, now_ms: float) -> list[ProducerBatch]:
        """Remove and return the queued batches older than delivery_timeout_ms."""
        expired = []
        for queue in self._queues.values():
            while queue and now_ms - queue[0].created_ms >= self.delivery_timeout_ms:
                batch = queue.popleft()
                batch.sealed = True
                expired.append(batch)
        return expired

    def deallocate(self, batch: ProducerBatch) -> None:
        """Forget a batch that is completed or failed, freeing its buffer space."""
        if batch in self._incomplete:
            self._incomplete.remove(batch)
            self.buffered_bytes -= batch.estimated_size - HEADER_SIZE

    def incomplete(self) -> list[ProducerBatch]:
        """Batches appended to and not yet deallocated (queued or in flight)."""
        return list(self._incomplete)

    def _ready_in(self, tp: TopicPartition, queue: deque[ProducerBatch], now_ms: float, force: bool) -> float:
        """Milliseconds until the head batch of `tp` may be sent: <= 0 now, inf when muted."""
        if tp in self._muted:
            return float("inf")
        head = queue[0]
        if head.attempts:
            return head.retry_at_ms - now_ms
        if head.sealed or len(queue) > 1 or force:
            return 0.0
        return head.created_ms + self.linger_ms - now_ms
