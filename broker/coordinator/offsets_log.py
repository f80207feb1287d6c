"""The group coordinator's reads and writes of __consumer_offsets, through the replica manager: records appended
as the broker's own produce requests (acks=all, waiting at most offsets.commit.timeout.ms), and a partition's
records read back, from its log start to its log end, when this broker becomes its leader (Kafka's
GroupMetadataManager.appendForGroup and doLoadGroupsAndOffsets)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from broker.coordinator.group.effects import Record
from broker.log.log import Log
from broker.replication.partition import Partition
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.shapes import Topic
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder, decode_batch, iter_batches
from protocol.topic_partition import TopicPartition

ACKS_ALL = -1


class Replicas(Protocol):
    """What the coordinator uses of the replica manager."""

    def append_records(self, request: ProduceRequest, internal_topics_allowed: bool = False
                       ) -> ProduceResponse | asyncio.Future[ProduceResponse]: ...

    def partition(self, tp: TopicPartition) -> Partition[Log] | None: ...


def records_batch(records: Sequence[Record], timestamp_ms: int) -> bytes:
    """One uncompressed batch of the records, each with the append's time (Kafka's coordinator writes create
    times)."""
    builder = BatchBuilder()
    for key, value in records:
        builder.append(value, key=key, timestamp=timestamp_ms)
    return builder.build()


def _produce_error(response: ProduceResponse) -> ErrorCode:
    [topic] = response.topics
    [answer] = topic.partitions
    return ErrorCode.from_code(answer.error_code)


def _keep_latest(data: bytes, latest: dict[bytes, bytes | None]) -> int:
    """Add each keyed record of the whole batches in `data` to `latest` (the last record of a key wins, and moves
    to the end); the offset after the last batch."""
    next_offset = -1
    for position, header in iter_batches(data):
        if not header.is_control:
            for record in decode_batch(data, position)[1]:
                if record.key is not None:
                    latest.pop(record.key, None)
                    latest[record.key] = record.value
        next_offset = header.next_offset
    return next_offset


class OffsetsLog:
    """Appends to, and reads, the partitions of __consumer_offsets this broker leads."""

    def __init__(self, replicas: Replicas, commit_timeout_ms: int, load_buffer_size: int) -> None:
        self._replicas = replicas
        self._commit_timeout_ms = commit_timeout_ms
        self._load_buffer_size = load_buffer_size

    def append(self, partition: int, records: Sequence[Record], timestamp_ms: int) -> asyncio.Future[ErrorCode]:
        """Append the records to `partition` in one batch, acks=all; the future's result is the produce's error
        code (NONE once the ISR has them), never an exception."""
        request = ProduceRequest(acks=ACKS_ALL, timeout_ms=self._commit_timeout_ms, topics=[Topic(
            name=OFFSETS_TOPIC, partitions=[ProducePartition(partition=partition,
                                                             records=records_batch(records, timestamp_ms))])])
        done: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        result = self._replicas.append_records(request, internal_topics_allowed=True)
        if not isinstance(result, asyncio.Future):
            done.set_result(_produce_error(result))
            return done

        def settle(future: asyncio.Future[ProduceResponse]) -> None:
            if future.cancelled() or future.exception() is not None:
                done.set_result(ErrorCode.UNKNOWN_SERVER_ERROR)
            else:
                done.set_result(_produce_error(future.result()))

        result.add_done_callback(settle)
        return done

    async def read(self, partition: int) -> list[Record] | None:
        """The records of `partition` from its log start to its log end, only the last of each key, in log order;
        None if this broker no longer hosts it. Each slice of offsets.load.buffer.size bytes is read on the event
        loop and decoded on a worker thread."""
        hosted = self._replicas.partition(TopicPartition(OFFSETS_TOPIC, partition))
        if hosted is None:
            return None
        log = hosted.log
        offset, end = log.log_start_offset, log.log_end_offset
        latest: dict[bytes, bytes | None] = {}
        while offset < end:
            data = log.read(offset, self._load_buffer_size, max_offset=end)
            if not data:
                break
            offset = await asyncio.to_thread(_keep_latest, data, latest)
        return list(latest.items())
