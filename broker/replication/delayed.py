"""The two parked requests: an acks=all produce waiting for the HW, and a fetch waiting for data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.replication.partition import Partition
from broker.replication.purgatory import DelayedOperation
from protocol.apis.fetch import FetchResponse
from protocol.apis.produce import ProducePartitionResponse, ProduceResponse
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

PartitionLookup = Callable[[TopicPartition], Partition | None]
MissingPartitionError = Callable[[TopicPartition], ErrorCode]


@dataclass(slots=True)
class PendingProduce:
    """One partition of a produce request: its response so far and the offset the HW must pass."""

    response: ProducePartitionResponse
    required_offset: int
    decided: bool = False


class DelayedProduce(DelayedOperation[ProduceResponse]):
    """Completes when every partition's HW passed its batch, or leadership was lost (or the partition is no longer
    hosted: `missing` says with which error), or at the timeout (REQUEST_TIMED_OUT for what is still waiting)."""

    def __init__(self, timeout_ms: int, pending: dict[TopicPartition, PendingProduce], partition: PartitionLookup,
                 missing: MissingPartitionError, order: list[TopicPartition]) -> None:
        super().__init__(timeout_ms)
        self._pending = pending
        self._partition = partition
        self._missing = missing
        self._order = order

    def try_complete(self) -> bool:
        for tp, waiting in self._pending.items():
            if waiting.decided:
                continue
            partition = self._partition(tp)
            code = self._missing(tp) if partition is None else partition.produce_completion(waiting.required_offset)
            if code is not None:
                waiting.decided = True
                waiting.response.error_code = code
                if code is not ErrorCode.NONE:
                    waiting.response.error_message = f"{tp}: {code.name}"
        if all(waiting.decided for waiting in self._pending.values()):
            return self.force_complete()
        return False

    def result(self) -> ProduceResponse:
        for tp, waiting in self._pending.items():
            if not waiting.decided:
                waiting.response.error_code = ErrorCode.REQUEST_TIMED_OUT
                waiting.response.error_message = f"{tp}: the high watermark did not reach {waiting.required_offset}"
        return build_produce_response(self._order, {tp: w.response for tp, w in self._pending.items()})


def build_produce_response(order: list[TopicPartition],
                           responses: dict[TopicPartition, ProducePartitionResponse]) -> ProduceResponse:
    """Group per-partition responses by topic, in request order."""
    topics: dict[str, list[ProducePartitionResponse]] = {}
    for tp in order:
        topics.setdefault(tp.topic, []).append(responses[tp])
    return ProduceResponse(topics=[Topic(name=name, partitions=parts) for name, parts in topics.items()])


class DelayedFetch(DelayedOperation[FetchResponse]):
    """Completes when enough new data is readable (LEO for followers, HW for consumers), a partition's
    leadership changed, or at max_wait_ms; the response is read at completion."""

    def __init__(self, timeout_ms: int, fetch_offsets: dict[TopicPartition, tuple[int, int]],
                 ready: Callable[[dict[TopicPartition, tuple[int, int]]], bool],
                 respond: Callable[[], FetchResponse]) -> None:
        super().__init__(timeout_ms)
        self._fetch_offsets = fetch_offsets
        self._ready = ready
        self._respond = respond

    def try_complete(self) -> bool:
        return self._ready(self._fetch_offsets) and self.force_complete()

    def result(self) -> FetchResponse:
        return self._respond()
