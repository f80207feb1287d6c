"""The producer's record accumulator: per-partition batches, the futures of their records, and when each batch is
ready to send (no I/O, no clock).

Times are milliseconds from any monotonic clock, passed in by the caller.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, NamedTuple

from protocol.compression import NONE
from protocol.records import HEADER_SIZE, BatchBuilder, Header, new_named_tuple
from protocol.topic_partition import TopicPartition

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


class FutureRecordMetadata(NamedTuple):
    """The future of one record's RecordMetadata, settled when its batch is (as Kafka's FutureRecordMetadata).

    Awaiting it gives the RecordMetadata or raises the batch's error; `done`, `result`, `exception`, `cancelled`
    and `add_done_callback` behave as asyncio.Future's. It cannot be cancelled: cancelling a task that awaits it
    stops only the wait. (A tuple over the batch: sending a record creates nothing else, and completing a batch
    costs the same for one record as for thousands.)"""

    batch: ProducerBatch
    offset_delta: int
    timestamp: int

    def done(self) -> bool:
        return self.batch.completion.done()

    def cancelled(self) -> bool:
        return False

    def result(self) -> RecordMetadata:
        """The record's metadata; raises the batch's error if it failed, InvalidStateError if it is not settled."""
        batch = self._settled_batch()
        if batch.error is not None:
            raise batch.error
        offset = -1 if batch.base_offset < 0 else batch.base_offset + self.offset_delta
        timestamp = self.timestamp if batch.log_append_time_ms < 0 else batch.log_append_time_ms
        return new_named_tuple(RecordMetadata, (batch.tp.topic, batch.tp.partition, offset, timestamp))

    def exception(self) -> BaseException | None:
        """The batch's error, None if it succeeded; raises InvalidStateError if it is not settled."""
        return self._settled_batch().error

    def add_done_callback(
        self, callback: Callable[[FutureRecordMetadata], object], *, context: contextvars.Context | None = None
    ) -> None:
        """Call `callback(self)` from the event loop once the record is settled (in `context` if given)."""
        self.batch.completion.add_done_callback(lambda _: callback(self), context=context)

    def _settled_batch(self) -> ProducerBatch:
        if not self.batch.completion.done():
            raise asyncio.InvalidStateError("the record is not acknowledged yet")
        return self.batch

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        completion = self.batch.completion
        if not completion.done():
            yield from asyncio.shield(completion)
        return self.result()


class ProducerBatch:
    """Records for one partition, built into one RecordBatch v2 (its records compressed with ``compression``, a
    codec id of protocol.compression), and the outcome their futures read."""

    def __init__(self, tp: TopicPartition, created_ms: float, compression: int = NONE) -> None:
        self.tp = tp
        self.created_ms = created_ms
        self.retry_at_ms = created_ms
        self.attempts = 0
        self.last_error: str | None = None  # why the last attempt failed, for the message if the batch expires
        self.maybe_written = False  # an attempt failed so that the records may have been written all the same
        self.sealed = False
        self.estimated_size = HEADER_SIZE
        self._builder = BatchBuilder(compression=compression)
        self._records: bytes | None = None
        self.producer_id = -1  # set for an idempotent producer when the batch is first drained
        #: Set when the batch is completed: the offset of its first record (-1 for acks=0) and the broker's
        #: LogAppendTime (-1 for CreateTime); or when it failed: the error.
        self.base_offset = -1
        self.log_append_time_ms = -1
        self.error: BaseException | None = None
        #: Resolved (to None) once the batch is completed or failed, by `complete` or `fail`.
        self.completion: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp.topic}-{self.tp.partition}, {self.record_count} records)"

    @property
    def record_count(self) -> int:
        return self._builder.record_count

    @property
    def done(self) -> bool:
        """True once the batch was completed or failed."""
        return self.completion.done()

    def append(
        self, key: bytes | None, value: bytes | None, headers: Sequence[HeaderLike], timestamp: int, estimate: int
    ) -> FutureRecordMetadata:
        """Add a record (the batch must not be sealed); return the future of its metadata."""
        assert not self.sealed, "append to a sealed batch"
        offset_delta = self._builder.append(value, key, headers, timestamp)
        self.estimated_size += estimate
        return new_named_tuple(FutureRecordMetadata, (self, offset_delta, timestamp))

    @property
    def built(self) -> bool:
        """True once the batch bytes exist (they never change after)."""
        return self._records is not None

    def set_producer(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Stamp an idempotent producer's id, epoch and first sequence number (before the batch is built)."""
        assert self._records is None, "the batch is built already"
        self.producer_id = producer_id
        self._builder.set_producer(producer_id, producer_epoch, base_sequence)

    def records(self) -> bytes:
        """The batch bytes (built once; the batch is sealed from then on)."""
        if self._records is None:
            self.sealed = True
            self._records = self._builder.build()
        return self._records

    def complete(self, base_offset: int, log_append_time_ms: int = -1) -> None:
        """Settle every record: offset base_offset + its index (base_offset -1 means unknown: acks=0)."""
        if not self.completion.done():
            self.base_offset = base_offset
            self.log_append_time_ms = log_append_time_ms
            self.completion.set_result(None)

    def fail(self, error: BaseException) -> None:
        """Fail every record with `error`."""
        if not self.completion.done():
            self.error = error
            self.completion.set_result(None)


class RecordAccumulator:
    """Per-partition queues of batches, and the rules deciding which are ready to send.

    A batch takes records until the next one would push it past batch_size (a record bigger than that gets a
    batch of its own). A partition's head batch is ready when it is sealed or older than linger_ms (or always,
    when forced by flush or close), unless its retry backoff runs or the partition is muted because a batch
    of it is in flight: at most one batch per partition is in flight, which keeps records in order on retry.
    Batches waiting longer than delivery_timeout_ms since creation expire. Batches are compressed with
    ``compression`` when built; batch_size counts their records before compression.
    """

    def __init__(self, *, batch_size: int, linger_ms: float, delivery_timeout_ms: float,
                 sequencer: Callable[[ProducerBatch], None] | None = None, compression: int = NONE) -> None:
        self.batch_size = batch_size
        self.compression = compression
        #: Called with each batch when it is drained for the first time, before it is built (an idempotent
        #: producer's sequence numbers are given then, in send order).
        self._sequencer = sequencer
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
        *,
        abort_on_new_batch: bool = False,
    ) -> FutureRecordMetadata | None:
        """Add a record to the partition's open batch, or to a new one, and return its future (whose offset_delta
        is 0 if it opened a new batch). `estimate` is the record's estimate_record_size, if the caller has it
        already. An open batch the record does not fit in is sealed, and so is a batch the record fills.

        With abort_on_new_batch, a record that would need a new batch is not appended and None is returned (the
        open batch it did not fit in is sealed): a sticky partitioner then moves on to another partition, as
        Kafka's producer does for keyless records (KIP-480)."""
        if estimate is None:
            estimate = estimate_record_size(key, value, headers)
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        batch = queue[-1] if queue else None
        if batch is not None and not batch.sealed and batch.estimated_size + estimate > self.batch_size:
            batch.sealed = True
        if batch is None or batch.sealed:
            if abort_on_new_batch:
                return None
            batch = ProducerBatch(tp, now_ms, self.compression)
            queue.append(batch)
            self._incomplete.add(batch)
        future = batch.append(key, value, headers, timestamp, estimate)
        self.buffered_bytes += estimate
        if batch.estimated_size >= self.batch_size:
            batch.sealed = True
        return future

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
            if self._sequencer is not None and not batch.built:
                self._sequencer(batch)
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
