"""What runs against the cluster during a soak: acks=all producers that write the history, and a consumer that
checks what it reads (offsets never go backwards, a record read twice at one offset never changes)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from client.accumulator import FutureRecordMetadata
from client.chaos.record import WriteTimes, gaps
from client.consumer import Consumer, ConsumerError, OffsetOutOfRangeError
from client.outcomes import outcome_of
from client.producer import Producer, ProducerError
from protocol.history import FAILED, OK, UNKNOWN, HistoryWriter, Outcome

#: Errors after which a record may or may not have been written: no answer came.


@dataclass(frozen=True, slots=True)
class Acked:
    """An acknowledged record: where the leader said it is."""

    partition: int
    offset: int
    key: str
    value: str


@dataclass
class ProducerStats:
    """Outcomes of every record the producers attempted, and when each came."""

    attempted: int = 0
    acked: list[Acked] = field(default_factory=list)
    failed: int = 0
    unknown: int = 0
    times: WriteTimes = field(default_factory=WriteTimes)

    def unavailable_ms(self, partitions: Sequence[int], start: float, end: float) -> dict[int, int]:
        """Per partition, the longest time within [start, end] without an acknowledgement: how long it could
        not take an acks=all write (the producers write to every partition all the time)."""
        return {partition: round(1000 * max(b - a for a, b in gaps(self.times.acked.get(partition, ()), start, end)))
                for partition in partitions}


class Workers(ABC):
    """`count` tasks of the same work (`_run_one(number)`, which a subclass defines), all until stop()."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """Run every worker until stop() (each finishes what it started)."""
        await asyncio.gather(*(self._run_one(n) for n in range(self.count)))

    @abstractmethod
    async def _run_one(self, number: int) -> None:
        """One worker's loop, until stop()."""


class HistoryProducers(Workers):
    """`count` idempotent acks=all producers, each sending records round-robin to every partition at `rate` per
    second (at most `window` unsettled per partition), every outcome written to the history as it arrives. After
    stop(), run ends once every record has its outcome (at most the delivery timeout)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, history: HistoryWriter, *, label: str,
                 count: int = 2, rate: float = 100.0, window: int = 50, request_timeout_ms: int = 3000,
                 delivery_timeout_ms: int = 10_000) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.history = history
        super().__init__(count)
        self.label = label
        self.rate = rate
        self.window = window
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.stats = ProducerStats()

    async def _run_one(self, number: int) -> None:
        pending: dict[int, set[FutureRecordMetadata]] = {p: set() for p in range(self.partitions)}
        settled = asyncio.Event()
        producer = Producer(self.bootstrap, acks="all", enable_idempotence=True, linger_ms=5, retry_backoff_ms=100,
                            request_timeout_ms=self.request_timeout_ms, delivery_timeout_ms=self.delivery_timeout_ms,
                            max_block_ms=self.request_timeout_ms, client_id=f"chaos-producer-{number}")
        interval = 1.0 / self.rate
        next_send = time.monotonic()
        partitions = itertools.cycle(range(self.partitions))
        sequence = itertools.count()
        try:
            while not self._stop.is_set():
                # A partition that cannot take writes holds back only its own records.
                partition = next((p for p in itertools.islice(partitions, self.partitions)
                                  if len(pending[p]) < self.window), None)
                if partition is None:
                    settled.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.5):
                            await settled.wait()
                    continue
                n = next(sequence)
                key, value = f"{self.label}-{number}-{n}", f"{self.label} producer {number} record {n}"
                self.stats.attempted += 1
                try:
                    future = await producer.send(self.topic, value.encode(), key=key.encode(), partition=partition)
                except ProducerError as e:  # never sent: the record is not in any log
                    self.stats.failed += 1
                    self.stats.times.failed.append(time.monotonic())
                    self.history.write(Outcome(self.topic, partition, None, key.encode(), value.encode(), FAILED,
                                               str(e)))
                    continue
                pending[partition].add(future)
                future.add_done_callback(
                    lambda f, p=partition, k=key, v=value: self._settle(f, p, k, v, pending[p], settled))
                next_send += interval
                delay = next_send - time.monotonic()
                if delay > 0:  # pacing the load
                    await asyncio.sleep(delay)
                else:
                    next_send = time.monotonic()
        finally:
            await producer.close()  # every batch settles within the delivery timeout

    def _settle(self, future: FutureRecordMetadata, partition: int, key: str, value: str,
                pending: set[FutureRecordMetadata], settled: asyncio.Event) -> None:
        pending.discard(future)
        settled.set()
        outcome = outcome_of(self.topic, key.encode(), value.encode(), future)
        self.history.write(outcome)
        now = time.monotonic()
        if outcome.status == OK:
            assert outcome.offset is not None
            self.stats.acked.append(Acked(partition, outcome.offset, key, value))
            self.stats.times.acked.setdefault(partition, []).append(now)
        elif outcome.status == UNKNOWN:
            self.stats.unknown += 1
            self.stats.times.unknown.append(now)
        else:
            self.stats.failed += 1
            self.stats.times.failed.append(now)


@dataclass(frozen=True, slots=True)
class ReadRecord:
    key: str | None
    value: str | None


class CheckingConsumer:
    """Reads every partition from the beginning, all the time, and remembers what it read at each offset.

    Violations: an offset not above the last one read from its partition, a position past the partition's log
    end (records it read are gone: it goes back to the end and reads on), and a record read again at an offset
    that differs from what was read there before."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *, request_timeout_ms: int = 3000) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.request_timeout_ms = request_timeout_ms
        self.seen: dict[int, dict[int, ReadRecord]] = {p: {} for p in range(partitions)}
        self.violations: list[str] = []
        self._last: dict[int, int] = dict.fromkeys(range(partitions), -1)
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    @property
    def read(self) -> int:
        return sum(len(offsets) for offsets in self.seen.values())

    async def run(self) -> None:
        async with Consumer(self.bootstrap, auto_offset_reset="earliest", request_timeout_ms=self.request_timeout_ms,
                            fetch_max_wait_ms=200, client_id="chaos-consumer") as consumer:
            consumer.assign([(self.topic, p) for p in range(self.partitions)])
            while not self._stop.is_set():
                try:
                    records = await consumer.poll(timeout_ms=200, max_records=2000)
                except OffsetOutOfRangeError as e:
                    self._gone_back(consumer, e)
                    continue
                except (ConsumerError, OSError):  # a fault is in force: expected, try again
                    await asyncio.sleep(0.2)  # a retry interval, not a wait for a condition
                    continue
                for record in records:
                    self.check(record.partition, record.offset, text(record.key), text(record.value))

    def check(self, partition: int, offset: int, key: str | None, value: str | None) -> None:
        """Take one record read from `partition` at `offset`."""
        read = ReadRecord(key, value)
        if offset <= self._last[partition]:
            self.violations.append(f"{self.topic}-{partition}: offset {offset} read after {self._last[partition]}")
        self._last[partition] = max(self._last[partition], offset)
        before = self.seen[partition].setdefault(offset, read)
        if before != read:
            self.violations.append(f"{self.topic}-{partition}: offset {offset} read as {before} and later as {read}")

    def _gone_back(self, consumer: Consumer, error: OffsetOutOfRangeError) -> None:
        """The position is outside the log: behind its start (retention, not a loss), or past its end: records
        this consumer read there are gone. It reads on from where the log is; what it reads again at offsets it
        read before is compared."""
        partition, position = error.tp.partition, error.offset
        if 0 <= position < error.log_start_offset:
            consumer.seek(error.tp, error.log_start_offset)
            return
        self.violations.append(f"{self.topic}-{partition}: the consumer's position {position} is past the log end "
                               f"(high watermark {error.high_watermark}): records it read are gone")
        restart = max(error.high_watermark, error.log_start_offset, 0)
        self._last[partition] = restart - 1
        consumer.seek(error.tp, restart)


def text(data: bytes | None) -> str | None:
    """A record's key or value as text (bytes that are not UTF-8 escaped)."""
    return None if data is None else data.decode("utf-8", errors="backslashreplace")
