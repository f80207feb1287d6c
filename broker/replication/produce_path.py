"""The produce path: appending a Produce request's batches as leader, and answering it by its acks."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import TypeVar

from broker.log.log import Log
from broker.metrics.counters import BrokerCounters
from broker.replication.delayed import DelayedProduce, PendingProduce, build_produce_response
from broker.replication.error_codes import error_code_of
from broker.replication.hosted import HostedPartitions
from broker.replication.parked import ParkedRequests
from protocol.apis.produce import ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)
T = TypeVar("T")


def _settle(waiting: asyncio.Future[T], result: asyncio.Future[T]) -> None:
    """Complete ``waiting`` as ``result`` completed."""
    if waiting.done():
        return
    if result.cancelled():
        waiting.cancel()
    elif result.exception() is not None:
        waiting.set_exception(result.exception())
    else:
        waiting.set_result(result.result())


class ProducePath:
    """Appends to each partition as leader. acks=0/1 are answered at once; acks=all (-1) waits in the produce
    purgatory until the HW passes every batch or the request's timeout. While new leader epochs are being written
    (:meth:`hold`), requests for those partitions wait, and so does every produce request after them. Only the
    broker's own coordinator appends to the internal topic (__consumer_offsets): clients are refused
    INVALID_TOPIC_EXCEPTION, as Kafka does."""

    def __init__(self, hosted: HostedPartitions, parked: ParkedRequests, flush: Callable[[Log], None],
                 counters: BrokerCounters) -> None:
        self._hosted = hosted
        self._counters = counters
        self._produces = parked.produces
        self._fetches = parked.fetches
        self._flush = flush
        #: The partitions whose new leader epoch is being written before they lead at it, and the produce
        #: requests waiting for that (append_records).
        self._epoch_pending: frozenset[TopicPartition] = frozenset()
        self._waiting_produces: list[tuple[ProduceRequest, bool, asyncio.Future[ProduceResponse]]] = []

    def append_records(self, request: ProduceRequest, internal_topics_allowed: bool = False
                       ) -> ProduceResponse | asyncio.Future[ProduceResponse]:
        """Append the request's batches (or wait with it, see :meth:`hold`); its response, or a future of it."""
        if self._waiting_produces or (self._epoch_pending and any(
                TopicPartition(topic.name, data.partition) in self._epoch_pending
                for topic in request.topics for data in topic.partitions)):
            waiting: asyncio.Future[ProduceResponse] = asyncio.get_running_loop().create_future()
            self._waiting_produces.append((request, internal_topics_allowed, waiting))
            return waiting
        return self._append_records(request, internal_topics_allowed)

    def hold(self, tps: frozenset[TopicPartition]) -> None:
        """Make produce requests for ``tps`` (whose new leader epochs are being written) wait, and every produce
        request after them, until :meth:`release`."""
        self._epoch_pending = tps

    def release(self) -> None:
        """Append the produce requests that waited for leader epochs to be written, in arrival order."""
        self._epoch_pending = frozenset()
        waiting, self._waiting_produces = self._waiting_produces, []
        for request, internal_topics_allowed, future in waiting:
            result = self._append_records(request, internal_topics_allowed)
            if isinstance(result, asyncio.Future):
                result.add_done_callback(functools.partial(_settle, future))
            elif not future.done():
                future.set_result(result)

    def _append_records(self, request: ProduceRequest, internal_topics_allowed: bool
                        ) -> ProduceResponse | asyncio.Future[ProduceResponse]:
        hosted = self._hosted
        order: list[TopicPartition] = []
        responses: dict[TopicPartition, ProducePartitionResponse] = {}
        pending: dict[TopicPartition, PendingProduce] = {}
        for topic in request.topics:
            for data in topic.partitions:
                tp = TopicPartition(topic.name, data.partition)
                order.append(tp)
                response = ProducePartitionResponse(partition=data.partition, error_code=ErrorCode.NONE,
                                                    base_offset=-1)
                responses[tp] = response
                if tp.topic == OFFSETS_TOPIC and not internal_topics_allowed:
                    response.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
                    response.error_message = f"Cannot append to internal topic {tp.topic}"
                    continue
                try:
                    partition = hosted.leader_partition(tp, data.current_leader_epoch)
                    info = partition.append_records_to_leader(data.records, request.acks)
                except Exception as e:
                    response.error_code = error_code_of(e)
                    response.error_message = str(e)
                    if response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR:
                        log.exception("append to %s failed", tp)
                    continue
                response.base_offset = info.first_offset
                topic_counters = self._counters.topic(tp.topic)
                topic_counters.bytes_in += info.size_in_bytes
                topic_counters.messages_in += info.last_offset - info.first_offset + 1
                response.log_start_offset = partition.log.log_start_offset
                if info.flush_needed:
                    self._flush(partition.log)
                self._fetches.check_and_complete(tp)
                if request.acks == -1:
                    pending[tp] = PendingProduce(response, info.last_offset + 1)
                    self._produces.check_and_complete(tp)
        if not pending:
            return build_produce_response(order, responses)
        for tp, response in responses.items():
            if tp not in pending:
                pending[tp] = PendingProduce(response, 0, decided=True)
        operation = DelayedProduce(request.timeout_ms, pending, hosted.get, hosted.missing_partition_error, order)
        return self._produces.try_complete_else_watch(operation, [tp for tp, p in pending.items() if not p.decided])
