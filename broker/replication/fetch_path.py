"""The fetch path: a Fetch request's session, a follower's fetch state on the leader, the reads, long polls."""

from __future__ import annotations

import asyncio
import logging

from broker.config import BrokerConfig
from broker.log.log import Clock, Log
from broker.metrics.counters import BrokerCounters
from broker.replication.delayed import DelayedFetch
from broker.replication.error_codes import error_code_of
from broker.replication.fetch_session import FetchSessionCache, SessionPartition
from broker.replication.hosted import HostedPartitions
from broker.replication.isr_manager import IsrManager
from broker.replication.parked import ParkedRequests
from protocol.apis.fetch import (
    DEBUGGING_CONSUMER_ID,
    EpochEndOffset,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
)
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)


def diverging_epoch(log: Log, last_fetched_epoch: int, fetch_offset: int) -> EpochEndOffset | None:
    """Where a fetcher's log diverges from the leader's, if it does (Kafka's Partition.readRecords): the leader's
    end of the fetcher's last fetched epoch is below the fetch offset, or the leader has no such epoch."""
    epoch, end_offset = log.end_offset_for_epoch(last_fetched_epoch)
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return EpochEndOffset(epoch=epoch, end_offset=end_offset)
    return None


class FetchPath:
    """Serves fetches. A follower's fetch offset is its LEO on the leader (which may move the HW and bring it back
    into the ISR); followers read up to the LEO, consumers up to the HW. A debugging consumer (the replica
    verification tool) reads any replica, leader or follower, up to that replica's HW. Without enough data a fetch
    waits up to max_wait_ms in the fetch purgatory. In an incremental fetch session the request names only what
    changed, and the response only partitions with news (fetch_session.py)."""

    def __init__(self, config: BrokerConfig, hosted: HostedPartitions, parked: ParkedRequests, isr: IsrManager,
                 clock: Clock, counters: BrokerCounters) -> None:
        self._hosted = hosted
        self._counters = counters
        self._partitions = hosted.partitions
        self._fetches = parked.fetches
        self._wake_soon = parked.wake_soon
        self._isr = isr
        self.sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots,
                                          config.min_incremental_fetch_session_eviction_ms, clock)

    def fetch(self, request: FetchRequest) -> FetchResponse | asyncio.Future[FetchResponse]:
        """Serve a fetch: its response, or a future of it."""
        try:
            context = self.sessions.context(request)
        except KafkaError as e:
            return FetchResponse(error_code=e.code, topics=[], session_id=request.session_id)
        from_follower = request.replica_id >= 0
        wanted = context.partitions
        offsets = {tp: (p.fetch_offset, p.current_leader_epoch) for tp, p in wanted.items()}
        if from_follower:
            for tp, p in wanted.items():
                self._record_follower_fetch(tp, request.replica_id, p.fetch_offset, p.log_start_offset,
                                            p.current_leader_epoch)

        def read() -> list[tuple[TopicPartition, FetchPartitionResponse]]:
            return self._read_for_fetch(request.max_bytes, wanted, from_follower,
                                        request.replica_id == DEBUGGING_CONSUMER_ID)

        def respond(results: list[tuple[TopicPartition, FetchPartitionResponse]]) -> FetchResponse:
            topics: dict[str, list[FetchPartitionResponse]] = {}
            counters = self._counters
            for tp, result in context.reported(results):
                topics.setdefault(tp.topic, []).append(result)
                if result.records:
                    if from_follower:
                        counters.replication_bytes_out += len(result.records)
                    else:
                        counters.topic(tp.topic).bytes_out += len(result.records)
            return FetchResponse(error_code=ErrorCode.NONE, session_id=context.session_id,
                                 topics=[Topic(name=name, partitions=parts) for name, parts in topics.items()])

        immediate = read()
        read_bytes = sum(len(result.records) for _tp, result in immediate)
        has_error = any(result.error_code != ErrorCode.NONE for _tp, result in immediate)
        if request.max_wait_ms <= 0 or read_bytes >= request.min_bytes or has_error or not offsets:
            return respond(immediate)
        operation = DelayedFetch(request.max_wait_ms, offsets,
                                 lambda ready: self._fetch_ready(ready, from_follower, request.min_bytes),
                                 lambda: respond(read()))
        return self._fetches.try_complete_else_watch(operation, offsets)

    def _record_follower_fetch(self, tp: TopicPartition, follower: int, fetch_offset: int, log_start: int,
                               epoch: int) -> None:
        partition = self._partitions.get(tp)
        if partition is None or not partition.is_leader or (0 <= epoch != partition.leader_epoch):
            return  # the read reports the error
        if fetch_offset > partition.log.log_end_offset or follower not in partition.remote_replicas:
            return
        if partition.update_follower_fetch_state(follower, fetch_offset, log_start):
            self._wake_soon(tp)
        self._isr.maybe_expand(tp, partition, follower)

    def _read_for_fetch(self, max_bytes: int, wanted: dict[TopicPartition, SessionPartition],
                        from_follower: bool, debugging: bool) -> list[tuple[TopicPartition, FetchPartitionResponse]]:
        hosted = self._hosted
        budget = max_bytes
        results = []
        for tp, fetch in wanted.items():
            response = FetchPartitionResponse(partition=tp.partition, error_code=ErrorCode.NONE, high_watermark=-1,
                                              records=b"")
            results.append((tp, response))
            try:
                partition = hosted.leader_partition(tp, fetch.current_leader_epoch, require_leader=not debugging)
                if fetch.last_fetched_epoch >= 0 and not debugging:
                    response.diverging_epoch = diverging_epoch(partition.log, fetch.last_fetched_epoch,
                                                               fetch.fetch_offset)
                result = partition.read(fetch.fetch_offset, max(1, min(fetch.max_bytes, budget)),
                                        up_to_high_watermark=not from_follower)
            except Exception as e:
                response.error_code = error_code_of(e)
                if response.error_code is ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("fetch from %s failed", tp)
                continue
            response.records = result.records if response.diverging_epoch is None else b""
            response.high_watermark = result.high_watermark
            response.last_stable_offset = result.high_watermark
            response.log_start_offset = result.log_start_offset
            budget = max(0, budget - len(result.records))
        return results

    def _fetch_ready(self, wanted: dict[TopicPartition, tuple[int, int]], from_follower: bool, min_bytes: int) -> bool:
        """Whether a parked fetch can be answered: new data past a fetch offset, or a leadership change. With
        fetch.min.bytes 1 (followers) the first partition with news settles it: a follower's session may hold
        thousands of partitions, and every append to one of them asks again."""
        new_data = False
        for tp, (fetch_offset, epoch) in wanted.items():
            partition = self._partitions.get(tp)
            if partition is None or not partition.is_leader or (0 <= epoch != partition.leader_epoch):
                return True
            end = partition.log.log_end_offset if from_follower else partition.log.high_watermark
            if end > fetch_offset:
                if min_bytes <= 1:
                    return True
                new_data = True
        return new_data and self._available_bytes(wanted, from_follower) >= min_bytes

    def _available_bytes(self, wanted: dict[TopicPartition, tuple[int, int]], from_follower: bool) -> int:
        total = 0
        for tp, (fetch_offset, _epoch) in wanted.items():
            partition = self._partitions[tp]
            total += len(partition.read(fetch_offset, 1 << 20, up_to_high_watermark=not from_follower).records)
        return total
