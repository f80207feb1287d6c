"""The producer: batches records per partition and sends them to partition leaders, retrying on retriable errors."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from client.accumulator import (
    FutureRecordMetadata,
    HeaderLike,
    ProducerBatch,
    RecordAccumulator,
    estimate_record_size,
)
from client.closing import AsyncClosing
from client.idempotence import ProducerIdentity, idempotence_enabled
from client.metadata import ClusterMetadata
from client.partitioner import Partitioner
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.apis.shapes import Topic
from protocol.compression import codec_of
from protocol.errors import ErrorCode, ProtocolError
from protocol.sasl import SaslCredentials
from protocol.topic_partition import TopicPartition
from transport.connection import BrokerConnection, KafkaConnectionError, Reply, RequestTimedOutError

log = logging.getLogger(__name__)

_ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}
_YIELD_INTERVAL_MS = 1.0  # send() lets the event loop run at least this often


#: Errors after which a request may have been written all the same: its response was lost, or it was appended and
#: then not replicated in time.
_MAYBE_WRITTEN = frozenset({
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.KAFKA_STORAGE_ERROR,
})


class ProducerError(Exception):
    """A record could not be written; `code` is the Kafka error code that said why. `maybe_written` is True when an
    attempt ended so that the record may be in the log anyway (a timeout or a lost connection on the way, for
    instance): its outcome is unknown rather than failed."""

    def __init__(self, code: ErrorCode, message: str, *, maybe_written: bool = False) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.maybe_written = maybe_written


def parse_acks(acks: str | int) -> int:
    """"all"/-1, "1"/1 or "0"/0 as the wire value -1, 1 or 0."""
    try:
        return _ACKS[str(acks).strip().lower()]
    except KeyError:
        raise ValueError(f"acks must be all, -1, 1 or 0, got {acks!r}") from None


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class Producer(AsyncClosing):
    """Sends records to partition leaders in per-partition batches (RecordBatch v2).

    `send` returns the record's FutureRecordMetadata. Keyed records are placed by murmur2 of the key,
    keyless ones one batch per partition in turn. A batch is sent when full (batch_size) or linger_ms after
    its first record; all ready batches for one leader travel in one Produce request. Retriable errors are
    retried after a metadata refresh and retry_backoff_ms, in order (one batch per partition in flight),
    until delivery_timeout_ms after the batch was created; other errors fail the records with ProducerError.

    Idempotent (Kafka's enable.idempotence), the producer first gets a producer id with InitProducerId and numbers
    its records per partition, so that a leader writes a retried batch only once. As in Kafka's clients since 3.0,
    it is idempotent by default with acks=all; left unset, acks 0 or 1 turn it off (with a note in the log), and
    enable_idempotence=True with acks other than all is an error.

    compression_type (Kafka's compression.type: none, gzip, snappy, lz4 or zstd) compresses each batch's records.

    A topic that does not exist is created by the brokers if their auto.create.topics.enable allows it; otherwise
    `send` fails with UNKNOWN_TOPIC_OR_PARTITION after max_block_ms.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        acks: str | int = "all",
        enable_idempotence: bool | None = None,
        batch_size: int = 16384,
        linger_ms: int = 5,
        retries: int = 2**31 - 1,
        delivery_timeout_ms: int = 120000,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        max_in_flight: int = 5,
        max_request_size: int = 1048576,
        buffer_memory: int = 32 * 1024 * 1024,
        max_block_ms: int = 60000,
        client_id: str = "minikafka-producer",
        tls: ssl.SSLContext | None = None,
        compression_type: str = "none",
        partitioner: Partitioner | None = None,
        clock: Callable[[], float] = _monotonic_ms,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.acks = parse_acks(acks)
        compression = codec_of(compression_type)
        idempotent = idempotence_enabled(enable_idempotence, self.acks)
        self.retries = retries
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.max_in_flight = max_in_flight
        self.max_request_size = max_request_size
        self.buffer_memory = buffer_memory
        self.max_block_ms = max_block_ms
        self.metadata = ClusterMetadata(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            allow_auto_topic_creation=True, tls=tls, sasl=sasl,
        )
        self.identity = ProducerIdentity() if idempotent else None
        self._identity_request: asyncio.Task[None] | None = None
        self._accumulator = RecordAccumulator(
            batch_size=batch_size,
            linger_ms=linger_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            sequencer=self.identity.stamp if self.identity is not None else None,
            compression=compression,
        )
        self._partitioner = partitioner or Partitioner()
        self._clock = clock
        self._wakeup = asyncio.Event()
        self._space = asyncio.Event()
        self._in_flight: dict[int, int] = defaultdict(int)
        self._requests: set[asyncio.Task[None]] = set()
        self._sender: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._last_refresh_ms = float("-inf")
        self._flushing = 0
        self._closing = False
        self._last_yield_ms = float("-inf")

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[HeaderLike] = (),
        timestamp: int | None = None,
    ) -> FutureRecordMetadata:
        """Queue a record; the returned future resolves to where it was written, or fails with ProducerError.

        Waits (up to max_block_ms) for the topic's metadata and for buffer space; raises ProducerError if the
        topic does not appear, the partition does not exist or the record is larger than max_request_size."""
        if self._closing:
            raise RuntimeError("the producer is closed")
        if self._sender is not None and self._sender.done():
            raise RuntimeError("the producer's sender has stopped")
        start = now = self._clock()
        tps = self.metadata.topic_partitions(topic)
        if not tps:
            tps = await self._wait_for_partitions(topic, start)
            now = self._clock()
        num_partitions = len(tps)
        size = estimate_record_size(key, value, headers)
        if size > self.max_request_size:
            raise ProducerError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"the record is about {size} bytes, more than max_request_size ({self.max_request_size})",
            )
        sticky = partition is None and key is None
        if partition is None:
            partition = self._partitioner.partition(topic, key, num_partitions)
        elif not 0 <= partition < num_partitions:
            raise ProducerError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition {partition} is not in the range [0, {num_partitions}) of topic {topic!r}",
            )
        accumulator = self._accumulator
        if accumulator.buffered_bytes + size > self.buffer_memory:
            await self._wait_for_space(size, start + self.max_block_ms)
            now = self._clock()
        if timestamp is None:
            timestamp = time.time_ns() // 1_000_000
        future = accumulator.append(
            tps[partition], key, value, headers, timestamp, now, size, abort_on_new_batch=sticky
        )
        if future is None:
            # The sticky partition needs a new batch (its batch is full or was sent): move on, as Kafka does.
            partition = self._partitioner.on_new_batch(topic, num_partitions, partition)
            future = accumulator.append(tps[partition], key, value, headers, timestamp, now, size)
            assert future is not None
        # A new batch may have sealed the one before it, and the sender times its linger; a full one goes now.
        new_batch = future.offset_delta == 0
        if new_batch:
            self._start_sender()
            self._wakeup.set()
        if new_batch or future.batch.sealed:
            self._send_ready()
        elif now - self._last_yield_ms < _YIELD_INTERVAL_MS or not any(self._in_flight.values()):
            return future
        # Let the loop run: an application sending as fast as it can would otherwise keep responses (and the
        # batches waiting for them) unhandled until the buffer is full.
        self._last_yield_ms = now
        await asyncio.sleep(0)
        return future

    async def flush(self) -> None:
        """Send everything queued now and wait until each of those records is acknowledged or failed."""
        batches = self._accumulator.incomplete()
        if not batches:
            return
        self._flushing += 1
        self._send_ready()
        self._wakeup.set()
        try:
            await asyncio.wait([batch.completion for batch in batches])
        finally:
            self._flushing -= 1

    async def close(self) -> None:
        """Flush, stop the sender and close the connections. Further sends raise."""
        if self._closing:
            return
        await self.flush()
        self._closing = True
        self._wakeup.set()
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)
        for task in (self._refresher, self._identity_request):
            if task is not None:
                task.cancel()
        await self.metadata.close()

    # ----------------------------------------------------------------------------------- record intake

    async def _wait_for_partitions(self, topic: str, now: float) -> tuple[TopicPartition, ...]:
        """The topic's partitions, refreshing metadata until they are known or max_block_ms passed."""
        deadline = now + self.max_block_ms
        code, problem = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "not present in metadata"
        while True:
            tps = self.metadata.topic_partitions(topic)
            if tps:
                return tps
            error = self.metadata.topic_errors.get(topic)
            if error is not None and not error.retriable:
                raise ProducerError(error, f"cannot produce to topic {topic!r}")
            wait_ms = max(0.0, self._last_refresh_ms + self.retry_backoff_ms - self._clock())
            if self._clock() + wait_ms >= deadline:
                raise ProducerError(code, f"topic {topic!r} {problem} after {self.max_block_ms} ms")
            await asyncio.sleep(wait_ms / 1000)
            try:
                await self._refresh_metadata({topic, *self.metadata.topics()})
            except KafkaConnectionError as e:
                code, problem = ErrorCode.NETWORK_EXCEPTION, f"not present in metadata ({e})"

    async def _wait_for_space(self, size: int, deadline: float) -> None:
        while self._accumulator.buffered_bytes and self._accumulator.buffered_bytes + size > self.buffer_memory:
            self._space.clear()
            remaining = deadline - self._clock()
            try:
                if remaining <= 0:
                    raise TimeoutError
                async with asyncio.timeout(remaining / 1000):
                    await self._space.wait()
            except TimeoutError:
                raise ProducerError(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"no buffer space within {self.max_block_ms} ms (buffer_memory {self.buffer_memory})",
                ) from None

    # ----------------------------------------------------------------------------------- the sender

    def _start_sender(self) -> None:
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._run())
            self._sender.add_done_callback(self._sender_done)

    def _sender_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        log.error("the producer's sender failed", exc_info=task.exception())
        error = ProducerError(ErrorCode.UNKNOWN_SERVER_ERROR, f"the producer's sender failed: {task.exception()}",
                              maybe_written=True)
        for batch in self._accumulator.incomplete():
            self._finish(batch, error=error)

    async def _run(self) -> None:
        """Expire batches, send what linger or retry backoff made ready, and sleep until the next of those
        moments or a wake-up. Full batches and answered requests do not wait for this loop: `_send_ready` runs
        right away when a batch is sealed and when a response arrives."""
        accumulator = self._accumulator
        while True:
            now = self._clock()
            for batch in accumulator.expire(now):
                self._finish(batch, error=self._expired(batch, now))
            self._send_ready()
            if self._closing and not accumulator.incomplete():
                return
            delay = accumulator.next_wakeup_in(now, force=self._flushing > 0 or self._closing)
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if delay is None else delay / 1000):
                    await self._wakeup.wait()

    def _send_ready(self) -> None:
        """Send the batches that may go now: one request per leader with fewer than max_in_flight requests
        outstanding, carrying the head batch of each of its ready partitions."""
        accumulator = self._accumulator
        if self.identity is not None and not self.identity.has_id:
            self._request_producer_id()
            return
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in accumulator.ready(self._clock(), force=self._flushing > 0 or self._closing):
            info = self.metadata.leader_for(tp.topic, tp.partition)
            if info is None:
                self._request_refresh()
            else:
                by_leader[info.leader].append(tp)
        for leader, tps in by_leader.items():
            if self._in_flight[leader] < self.max_in_flight:
                self._send_to(leader, accumulator.drain(tps, self.max_request_size))

    def _send_to(self, leader: int, batches: list[ProducerBatch]) -> None:
        """Send one Produce request for the batches: written right away if the leader's connection is open and
        a response is expected, else from a task (which connects first, or waits while an acks=0 request drains
        into the socket: nothing else holds back a producer that gets no responses)."""
        self._in_flight[leader] += 1
        request = self._produce_request(batches)
        connection = self.metadata.open_connection(leader)
        if connection is not None and self.acks != 0:
            self._write_request(leader, connection, batches, request)
            return
        task = asyncio.get_running_loop().create_task(self._send_from_task(leader, batches, request))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    def _produce_request(self, batches: list[ProducerBatch]) -> ProduceRequest:
        by_topic: dict[str, list[ProducePartition]] = defaultdict(list)
        for batch in batches:
            info = self.metadata.partition(*batch.tp)
            by_topic[batch.tp.topic].append(
                ProducePartition(
                    partition=batch.tp.partition,
                    records=batch.records(),
                    current_leader_epoch=info.leader_epoch if info is not None else -1,
                )
            )
        return ProduceRequest(
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topics=[Topic(name=name, partitions=partitions) for name, partitions in by_topic.items()],
        )

    async def _send_from_task(self, leader: int, batches: list[ProducerBatch], request: ProduceRequest) -> None:
        try:
            connection = await self.metadata.connection(leader)
            if self.acks != 0:
                self._write_request(leader, connection, batches, request)
                return
            await connection.send_no_response(request)
        except KafkaConnectionError as e:
            self._retry_all(batches, ErrorCode.NETWORK_EXCEPTION, str(e))
        else:
            self._handle_response(batches, None)
        self._request_done(leader, batches)

    def _write_request(
        self, leader: int, connection: BrokerConnection, batches: list[ProducerBatch], request: ProduceRequest
    ) -> None:
        """Write a request that gets a response; `_on_response` handles it."""
        try:
            response = connection.send(request)
        except KafkaConnectionError as e:
            self._retry_all(batches, ErrorCode.NETWORK_EXCEPTION, str(e))
            self._request_done(leader, batches)
        else:
            response.add_done_callback(functools.partial(self._on_response, leader, batches))

    def _on_response(self, leader: int, batches: list[ProducerBatch], response: asyncio.Future[Reply]) -> None:
        error = response.exception()
        if isinstance(error, RequestTimedOutError):
            self._retry_all(batches, ErrorCode.REQUEST_TIMED_OUT, str(error))
        elif isinstance(error, KafkaConnectionError):
            self._retry_all(batches, ErrorCode.NETWORK_EXCEPTION, str(error))
        elif isinstance(error, ProtocolError):  # a response that does not decode
            self._retry_all(batches, error.error_code, str(error))
        elif error is not None:
            self._retry_all(batches, ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
        else:
            code, message, body = response.result()
            if code != ErrorCode.NONE:
                self._retry_all(batches, code, message or code.name)
            else:
                self._handle_response(batches, body)
        self._request_done(leader, batches)

    def _request_done(self, leader: int, batches: list[ProducerBatch]) -> None:
        """The request is answered or failed: its partitions may send again, and what is ready goes now."""
        self._in_flight[leader] -= 1
        for batch in batches:
            self._accumulator.unmute(batch.tp)
        self._send_ready()
        self._wakeup.set()  # the sender times what is left (a lingering batch of a partition muted until now)

    def _handle_response(self, batches: list[ProducerBatch], response: ProduceResponse | None) -> None:
        if response is None:  # acks=0: written to the socket is all we know
            for batch in batches:
                batch.complete(-1)
                self._finish(batch)
            return
        results = {(t.name, p.partition): p for t in response.topics for p in t.partitions}
        for batch in batches:
            result = results.get(batch.tp)
            if result is None:
                self._retry(batch, ErrorCode.UNKNOWN_SERVER_ERROR, "the response has no result for the partition")
                continue
            error = ErrorCode.from_code(result.error_code)
            if error == ErrorCode.NONE:
                batch.complete(result.base_offset, result.log_append_time_ms)
                self._finish(batch)
            else:
                self._retry(batch, error, result.error_message or error.name)

    def _retry_all(self, batches: list[ProducerBatch], error: ErrorCode, message: str) -> None:
        for batch in batches:
            self._retry(batch, error, message)

    def _retry(self, batch: ProducerBatch, error: ErrorCode, message: str) -> None:
        """Queue the batch again if the error is retriable and time and attempts are left, else fail it."""
        now = self._clock()
        retry_at = now + self.retry_backoff_ms
        where = f"{batch.tp.topic}-{batch.tp.partition}"
        repeated = batch.last_error is not None and batch.last_error.startswith(f"{error.name}:")
        batch.last_error = f"{error.name}: {message}"
        batch.maybe_written |= error in _MAYBE_WRITTEN
        if not error.retriable:
            self._finish(batch, error=ProducerError(error, f"{where}: {message}", maybe_written=batch.maybe_written))
        elif batch.attempts >= self.retries:
            self._finish(batch, error=ProducerError(error, f"{where}: {message} (after {batch.attempts} retries)",
                                                    maybe_written=batch.maybe_written))
        elif retry_at - batch.created_ms >= self._accumulator.delivery_timeout_ms:
            self._finish(batch, error=self._expired(batch, now))
        else:
            # As Kafka's producer logs each retry (a WARN line): here once per batch and error, not every backoff.
            log.log(logging.DEBUG if repeated else logging.WARNING, "%s: retrying %d record(s) after %s: %s",
                    where, batch.record_count, error.name, message)
            self._accumulator.reenqueue(batch, retry_at)
            self._request_refresh()

    def _expired(self, batch: ProducerBatch, now: float) -> ProducerError:
        """The error of a batch past delivery_timeout_ms, whether it expired waiting for a retry (or for its first
        send) or its last attempt failed too close to the deadline for another."""
        last_error = f" (last error {batch.last_error})" if batch.last_error else ""
        return ProducerError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"expiring {batch.record_count} record(s) for {batch.tp.topic}-{batch.tp.partition}: "
            f"{now - batch.created_ms:.0f} ms has passed since batch creation{last_error}",
            maybe_written=batch.maybe_written,
        )

    def _finish(self, batch: ProducerBatch, *, error: ProducerError | None = None) -> None:
        if error is not None:
            batch.fail(error)
            if self.identity is not None:
                self.identity.batch_failed(batch)
        self._accumulator.deallocate(batch)
        self._space.set()

    # ----------------------------------------------------------------------------------- idempotence

    def _request_producer_id(self) -> None:
        """Get a producer id in the background (one request at a time), then send what is ready."""
        if self._identity_request is None or self._identity_request.done():
            self._identity_request = asyncio.get_running_loop().create_task(self._init_producer_id())

    async def _init_producer_id(self) -> None:
        """Ask the known brokers in turn for a producer id until one gives it, backing off between rounds."""
        assert self.identity is not None
        while not self.identity.has_id and not (self._closing and not self._accumulator.incomplete()):
            if not self.metadata.brokers:
                with contextlib.suppress(KafkaConnectionError):
                    await self._refresh_metadata(self.metadata.topics())
            for broker_id in list(self.metadata.brokers):
                try:
                    connection = await self.metadata.connection(broker_id)
                    code, message, body = await connection.request_with_error(InitProducerIdRequest())
                except (KafkaConnectionError, ProtocolError) as e:
                    log.info("InitProducerId to broker %d failed: %s", broker_id, e)
                    continue
                assert body is None or isinstance(body, InitProducerIdResponse)
                if code == ErrorCode.NONE and body is not None and body.error_code == ErrorCode.NONE:
                    self.identity.set_id(body.producer_id, body.producer_epoch)
                    break
                log.info("InitProducerId to broker %d answered %s: %s", broker_id,
                         ErrorCode.from_code(body.error_code if body is not None else code).name,
                         message or (body.error_message if body is not None else ""))
            else:
                await asyncio.sleep(self.retry_backoff_ms / 1000)
        self._send_ready()
        self._wakeup.set()

    # ----------------------------------------------------------------------------------- metadata

    def _request_refresh(self) -> None:
        """Refresh metadata in the background (at most once per retry_backoff_ms), then wake the sender."""
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.get_running_loop().create_task(self._background_refresh())

    async def _background_refresh(self) -> None:
        wait_ms = self._last_refresh_ms + self.retry_backoff_ms - self._clock()
        if wait_ms > 0:
            await asyncio.sleep(wait_ms / 1000)
        try:
            await self._refresh_metadata(self.metadata.topics())
        except KafkaConnectionError as e:
            log.warning("metadata refresh failed: %s", e)
        self._wakeup.set()

    async def _refresh_metadata(self, topics: Sequence[str] | set[str]) -> None:
        self._last_refresh_ms = self._clock()
        await self.metadata.refresh(topics)
