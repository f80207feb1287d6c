"""Producer and consumer against stand-in brokers (real sockets, in-memory partitions) whose leadership and errors
the test scripts: retries with metadata refresh, order kept across retries, non-retriable errors, the delivery
timeout, acks=0, a consumer following a leader change and skipping records below its position, and metadata
that passes over a broker still starting up."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from client.accumulator import estimate_record_size
from client.consumer import Consumer
from client.metadata import ClusterMetadata
from client.partitioner import Partitioner
from client.producer import Producer, ProducerError
from protocol.apis.fetch import FetchPartitionResponse, FetchRequest, FetchResponse
from protocol.apis.metadata import MetadataBroker, MetadataPartition, MetadataRequest, MetadataResponse, MetadataTopic
from protocol.apis.offsets import (
    EARLIEST_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from protocol.apis.produce import ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.shapes import Topic
from protocol.envelope import decode_request, encode_response
from protocol.errors import ErrorCode
from protocol.framing import encode_frame
from protocol.records import (
    HEADER_SIZE,
    BatchBuilder,
    decode_records,
    read_header,
    set_base_offset,
    set_partition_leader_epoch,
)
from protocol.topic_partition import TopicPartition
from tests.polling import poll_records
from transport.connection import KafkaConnectionError

TIMEOUT = 10.0
TOPIC = "events"
TP0 = TopicPartition(TOPIC, 0)


@dataclass
class FakePartition:
    leader: int
    epoch: int = 0
    batches: list[bytes] = field(default_factory=list)
    end_offset: int = 0
    errors: list[ErrorCode] = field(default_factory=list)  # answered to the next produce requests, in order
    offsets_errors: list[ErrorCode] = field(default_factory=list)  # answered to the next ListOffsets, in order


class FakeCluster:
    """Brokers 1..n on 127.0.0.1 sharing one in-memory view of partitions; the test moves leaders and scripts
    produce errors. Every partition is replicated on every broker; the high watermark is the log end."""

    def __init__(self, brokers: int, partitions: int) -> None:
        self.ids = list(range(1, brokers + 1))
        self.partitions = {
            TopicPartition(TOPIC, p): FakePartition(leader=self.ids[p % brokers]) for p in range(partitions)
        }
        self.ports: dict[int, int] = {}
        self.produce_requests: list[tuple[int, int]] = []  # (broker, acks)
        self.produce_gate: asyncio.Event | None = None  # if set, produce responses wait for it
        self.starting: set[int] = set()  # brokers that have had no UpdateMetadata yet: they know no brokers
        self._servers: list[asyncio.Server] = []
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        for broker_id in self.ids:
            server = await asyncio.start_server(
                lambda r, w, b=broker_id: self._serve(b, r, w), "127.0.0.1", 0
            )
            self._servers.append(server)
            self.ports[broker_id] = server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
            await server.wait_closed()
        for writer in self._writers:
            writer.close()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[self.ids[0]]}"

    def move_leader(self, tp: TopicPartition, leader: int) -> None:
        partition = self.partitions[tp]
        partition.leader = leader
        partition.epoch += 1

    def append(self, tp: TopicPartition, records: bytes) -> int:
        partition = self.partitions[tp]
        batch = bytearray(records)
        base_offset = partition.end_offset
        set_base_offset(batch, 0, base_offset)
        set_partition_leader_epoch(batch, 0, partition.epoch)
        partition.batches.append(bytes(batch))
        partition.end_offset = read_header(batch).next_offset
        return base_offset

    def values(self, tp: TopicPartition) -> list[bytes | None]:
        return [r.value for batch in self.partitions[tp].batches for r in decode_records(batch)]

    async def _serve(self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            while True:
                length = int.from_bytes(await reader.readexactly(4), "big")
                header, body = decode_request(await reader.readexactly(length))
                response = await self._handle(broker_id, body)
                if response is not None:
                    writer.write(encode_frame(encode_response(header.correlation_id, response)))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _handle(self, broker_id: int, body: Any) -> Any:
        if isinstance(body, MetadataRequest):
            if broker_id in self.starting:
                return MetadataResponse(brokers=[], controller_id=-1, topics=[
                    MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=t, partitions=[])
                    for t in body.topics or ()])
            return self._metadata()
        if isinstance(body, ProduceRequest):
            self.produce_requests.append((broker_id, body.acks))
            response = self._produce(broker_id, body)
            if self.produce_gate is not None:
                await self.produce_gate.wait()
            return None if body.acks == 0 else response
        if isinstance(body, FetchRequest):
            return await self._fetch(broker_id, body)
        if isinstance(body, ListOffsetsRequest):
            return self._list_offsets(body)
        raise AssertionError(f"unexpected request {body!r}")

    def _metadata(self) -> MetadataResponse:
        partitions = [
            MetadataPartition(
                error_code=0, partition=tp.partition, leader=p.leader, leader_epoch=p.epoch, replicas=self.ids,
                isr=self.ids, offline_replicas=[],
            )
            for tp, p in self.partitions.items()
        ]
        return MetadataResponse(
            brokers=[MetadataBroker(node_id=b, host="127.0.0.1", port=port) for b, port in self.ports.items()],
            controller_id=self.ids[0],
            topics=[MetadataTopic(error_code=0, name=TOPIC, partitions=partitions)],
        )

    def _leader_error(self, broker_id: int, tp: TopicPartition, epoch: int) -> ErrorCode:
        partition = self.partitions[tp]
        if partition.leader != broker_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if epoch not in (-1, partition.epoch):
            return ErrorCode.FENCED_LEADER_EPOCH if epoch < partition.epoch else ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    def _produce(self, broker_id: int, request: ProduceRequest) -> ProduceResponse:
        topics = []
        for topic in request.topics:
            results = []
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition)
                error = self._leader_error(broker_id, tp, p.current_leader_epoch)
                if error == ErrorCode.NONE and self.partitions[tp].errors:
                    error = self.partitions[tp].errors.pop(0)
                base_offset = self.append(tp, p.records) if error == ErrorCode.NONE else -1
                results.append(
                    ProducePartitionResponse(partition=p.partition, error_code=error, base_offset=base_offset)
                )
            topics.append(Topic(name=topic.name, partitions=results))
        return ProduceResponse(topics=topics)

    async def _fetch(self, broker_id: int, request: FetchRequest) -> FetchResponse:
        topics = []
        found = False
        for topic in request.topics:
            results = []
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition)
                partition = self.partitions[tp]
                error = self._leader_error(broker_id, tp, p.current_leader_epoch)
                if error == ErrorCode.NONE and p.fetch_offset > partition.end_offset:
                    error = ErrorCode.OFFSET_OUT_OF_RANGE
                records = b""
                if error == ErrorCode.NONE:
                    records = b"".join(b for b in partition.batches if read_header(b).next_offset > p.fetch_offset)
                found = found or bool(records) or error != ErrorCode.NONE
                results.append(
                    FetchPartitionResponse(
                        partition=p.partition, error_code=error, high_watermark=partition.end_offset, records=records
                    )
                )
            topics.append(Topic(name=topic.name, partitions=results))
        if not found:
            await asyncio.sleep(min(request.max_wait_ms, 50) / 1000)
        return FetchResponse(error_code=0, topics=topics)

    def _list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        topics = []
        for topic in request.topics:
            results = []
            for p in topic.partitions:
                partition = self.partitions[TopicPartition(topic.name, p.partition)]
                if partition.offsets_errors:
                    results.append(ListOffsetsPartitionResponse(partition=p.partition,
                                                                error_code=partition.offsets_errors.pop(0)))
                    continue
                offset = 0 if p.timestamp == EARLIEST_TIMESTAMP else partition.end_offset
                results.append(ListOffsetsPartitionResponse(partition=p.partition, error_code=0, offset=offset))
            topics.append(Topic(name=topic.name, partitions=results))
        return ListOffsetsResponse(topics=topics)


@asynccontextmanager
async def fake_cluster(brokers: int = 2, partitions: int = 1) -> AsyncIterator[FakeCluster]:
    cluster = FakeCluster(brokers, partitions)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def producer(cluster: FakeCluster, **options: Any) -> Producer:
    """A plain (not idempotent) producer: the stand-in brokers hand out no producer ids."""
    options = {"linger_ms": 1, "retry_backoff_ms": 10, "enable_idempotence": False, **options}
    return Producer(cluster.bootstrap, **options)


async def send_all(p: Producer, values: list[bytes], **options: Any) -> list[Any]:
    futures = [await p.send(TOPIC, value, **options) for value in values]
    return await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), TIMEOUT)


def values(n: int, start: int = 0) -> list[bytes]:
    return [f"v{i}".encode() for i in range(start, start + n)]


def one_batch(records: list[bytes]) -> bytes:
    builder = BatchBuilder()
    for value in records:
        builder.append(value)
    return builder.build()


async def test_metadata_passes_over_a_broker_that_knows_no_brokers_yet():
    async with fake_cluster(brokers=2) as cluster:
        cluster.starting = {1}
        metadata = ClusterMetadata([f"127.0.0.1:{cluster.ports[b]}" for b in cluster.ids])
        try:
            await metadata.refresh([TOPIC])
            assert metadata.partition_count(TOPIC) == 1 and sorted(metadata.brokers) == cluster.ids
            assert TOPIC not in metadata.topic_errors
            cluster.starting = {1, 2}
            metadata.brokers.clear()
            with pytest.raises(KafkaConnectionError, match="knows no brokers yet"):
                await metadata.refresh([TOPIC])
        finally:
            await metadata.close()


async def test_the_producer_follows_a_leader_change():
    async with fake_cluster() as cluster, producer(cluster) as p:
        first = await send_all(p, values(1), partition=0)
        cluster.move_leader(TP0, 2)
        rest = await send_all(p, values(4, 1), partition=0)
        assert [m.offset for m in first + rest] == [0, 1, 2, 3, 4]
        assert cluster.values(TP0) == values(5)
        assert {broker for broker, _ in cluster.produce_requests} == {1, 2}


async def test_retriable_errors_are_retried_in_order():
    async with fake_cluster() as cluster, producer(cluster, batch_size=120, max_in_flight=5) as p:
        cluster.partitions[TP0].errors = [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT]
        results = await send_all(p, values(30), partition=0)
        assert [m.offset for m in results] == list(range(30))
        assert cluster.values(TP0) == values(30)


async def test_a_non_retriable_error_fails_the_records():
    # The three records must share the one batch that gets the error: a 1 ms linger could send the first alone on a
    # busy machine.
    async with fake_cluster() as cluster, producer(cluster, linger_ms=200) as p:
        cluster.partitions[TP0].errors = [ErrorCode.INVALID_TOPIC_EXCEPTION]
        results = await send_all(p, values(3), partition=0)
        assert all(isinstance(r, ProducerError) and r.code == ErrorCode.INVALID_TOPIC_EXCEPTION for r in results)
        assert cluster.values(TP0) == []
        later = await send_all(p, values(1), partition=0)
        assert later[0].offset == 0


async def test_retries_stop_at_the_delivery_timeout():
    async with fake_cluster() as cluster, producer(cluster, delivery_timeout_ms=300) as p:
        cluster.partitions[TP0].errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 1000
        [result] = await send_all(p, values(1), partition=0)
        assert isinstance(result, ProducerError)
        assert result.code == ErrorCode.REQUEST_TIMED_OUT
        assert "NOT_ENOUGH_REPLICAS" in str(result)


async def test_retries_stop_after_the_configured_count():
    async with fake_cluster() as cluster, producer(cluster, retries=2) as p:
        cluster.partitions[TP0].errors = [ErrorCode.NOT_ENOUGH_REPLICAS] * 3
        [result] = await send_all(p, values(1), partition=0)
        assert isinstance(result, ProducerError) and result.code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert "after 2 retries" in str(result)


async def test_acks_zero_gets_no_offsets():
    async with fake_cluster() as cluster, producer(cluster, acks="0") as p:
        results = await send_all(p, values(3), partition=0)
        assert [m.offset for m in results] == [-1, -1, -1]
    assert cluster.values(TP0) == values(3)
    assert {acks for _, acks in cluster.produce_requests} == {0}


async def test_one_request_per_leader_carries_all_its_ready_batches():
    async with fake_cluster(brokers=2, partitions=4) as cluster, producer(cluster, linger_ms=60_000) as p:
        futures = [await p.send(TOPIC, b"x", partition=partition) for partition in range(4)]
        await asyncio.wait_for(p.flush(), TIMEOUT)
        assert all(f.done() for f in futures)
        assert sorted(cluster.produce_requests) == [(1, -1), (2, -1)]


async def test_keyless_records_fill_a_batch_then_move_to_the_next_partition():
    batch_size = HEADER_SIZE + 3 * estimate_record_size(None, b"v0")  # three records per batch
    async with (
        fake_cluster(brokers=2, partitions=3) as cluster,
        producer(cluster, batch_size=batch_size, linger_ms=60_000, partitioner=Partitioner(random.Random(7))) as p,
    ):
        results = await send_all(p, values(9))
        first = results[0].partition
        assert [m.partition for m in results] == [(first + i // 3) % 3 for i in range(9)]
        assert [m.offset for m in results] == [i % 3 for i in range(9)]
        assert [cluster.values(TopicPartition(TOPIC, (first + i) % 3)) for i in range(3)] == [
            values(3, 3 * i) for i in range(3)
        ]


@pytest.mark.parametrize("linger_ms", [0, 50])
async def test_a_batch_opened_while_its_partition_has_a_request_in_flight_goes_once_answered(linger_ms):
    async with fake_cluster() as cluster, producer(cluster, linger_ms=linger_ms, delivery_timeout_ms=60_000) as p:
        cluster.produce_gate = asyncio.Event()
        first = await p.send(TOPIC, b"a", partition=0)
        async with asyncio.timeout(TIMEOUT):
            while not cluster.produce_requests:  # the first batch is in flight, its response held back
                await asyncio.sleep(0.005)
        second = await p.send(TOPIC, b"b", partition=0)  # a new batch while the partition is muted
        cluster.produce_gate.set()
        # Well before the delivery timeout: the answered request wakes the sender, which sends or times the batch.
        results = await asyncio.wait_for(asyncio.gather(first, second), TIMEOUT)
        assert [m.offset for m in results] == [0, 1]
        assert len(cluster.produce_requests) == 2


async def test_an_out_of_range_partition_is_refused():
    async with fake_cluster() as cluster, producer(cluster) as p:
        with pytest.raises(ProducerError, match="not in the range"):
            await p.send(TOPIC, b"x", partition=5)


async def test_the_consumer_follows_a_leader_change():
    async with fake_cluster() as cluster, Consumer(cluster.bootstrap, retry_backoff_ms=10) as consumer:
        cluster.append(TP0, one_batch(values(3)))
        consumer.assign([TP0])
        await consumer.seek_to_beginning()
        first = await poll_records(consumer, 3, timeout_s=TIMEOUT)
        cluster.move_leader(TP0, 2)
        cluster.append(TP0, one_batch([b"after"]))
        second = await poll_records(consumer, 1, timeout_s=TIMEOUT)
        assert [(r.offset, r.value, r.leader_epoch) for r in first + second] == [
            (0, b"v0", 0), (1, b"v1", 0), (2, b"v2", 0), (3, b"after", 1)
        ]
        assert await consumer.position(TP0) == 4


async def test_the_consumer_waits_for_the_end_offset_of_a_new_leader_whose_high_watermark_lags():
    async with fake_cluster() as cluster, Consumer(cluster.bootstrap, retry_backoff_ms=10) as consumer:
        cluster.append(TP0, one_batch(values(3)))
        cluster.partitions[TP0].offsets_errors = [ErrorCode.OFFSET_NOT_AVAILABLE] * 2
        consumer.assign([TP0])
        await consumer.seek_to_end()
        assert await consumer.position(TP0) == 3
        assert cluster.partitions[TP0].offsets_errors == []


async def test_the_consumer_skips_records_below_its_position_in_the_first_batch():
    async with fake_cluster() as cluster, Consumer(cluster.bootstrap) as consumer:
        cluster.append(TP0, one_batch(values(5)))
        consumer.assign([TP0])
        consumer.seek(TP0, 2)
        records = await poll_records(consumer, 3, timeout_s=TIMEOUT)
        assert [r.offset for r in records] == [2, 3, 4]


async def test_poll_hands_out_at_most_max_records_and_keeps_the_rest():
    async with fake_cluster() as cluster, Consumer(cluster.bootstrap) as consumer:
        cluster.append(TP0, one_batch(values(5)))
        consumer.assign([TP0])
        await consumer.seek_to_beginning()
        first = await consumer.poll(timeout_ms=int(TIMEOUT * 1000), max_records=2)
        assert [r.offset for r in first] == [0, 1]
        assert await consumer.position(TP0) == 2
        rest = await poll_records(consumer, 3, timeout_s=TIMEOUT)
        assert [r.offset for r in rest] == [2, 3, 4]


async def test_an_idle_poll_returns_nothing_after_its_timeout():
    async with fake_cluster() as cluster, Consumer(cluster.bootstrap) as consumer:
        consumer.assign([TP0])
        assert await consumer.poll(timeout_ms=100) == []
        assert await consumer.position(TP0) == 0
