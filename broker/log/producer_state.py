"""Idempotent producers' state of one partition (Kafka's ProducerStateManager, without transactions).

Per producer id: its epoch and the last five batches it wrote (first and last sequence, first and last offset).
The leader checks every batch that carries a producer id before appending it: a batch the producer already wrote
(a retry) is answered with the offsets it got the first time and not written again; an older epoch is fenced
(INVALID_PRODUCER_EPOCH); a sequence that does not follow the producer's last one is OUT_OF_ORDER_SEQUENCE_NUMBER.
A producer the partition knows nothing of may start at any sequence, as in Kafka. The state is a function of the
log's batch headers: it is rebuilt from them when a log needs it, and kept up to date by every append after.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader

BATCHES_PER_PRODUCER = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_EPOCH = -1
_MAX_SEQUENCE = 2**31 - 1


def last_sequence(header: BatchHeader) -> int:
    """The sequence of the batch's last record (sequences wrap to 0 after 2^31 - 1, as Kafka's do)."""
    if header.base_sequence > _MAX_SEQUENCE - header.last_offset_delta:
        return header.last_offset_delta - (_MAX_SEQUENCE - header.base_sequence) - 1
    return header.base_sequence + header.last_offset_delta


def _in_sequence(last: int, next_first: int) -> bool:
    return next_first == last + 1 or (next_first == 0 and last == _MAX_SEQUENCE)


class BatchMetadata(NamedTuple):
    """Where one batch of a producer went."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    """One producer's epoch, its last batches, oldest first, and the largest timestamp of the last one."""

    epoch: int = NO_PRODUCER_EPOCH
    last_timestamp: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_PER_PRODUCER))

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None

    def duplicate_of(self, header: BatchHeader) -> BatchMetadata | None:
        """The retained batch `header` repeats (same epoch, same first and last sequence), if any."""
        if header.producer_epoch != self.epoch:
            return None
        wanted = (header.base_sequence, last_sequence(header))
        return next((batch for batch in self.batches if batch[:2] == wanted), None)


class ProducerStateManager:
    """The producers of one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    @classmethod
    def from_headers(cls, headers: Iterable[BatchHeader]) -> ProducerStateManager:
        """The state a log's batches leave, rebuilt from their headers in log order."""
        state = cls()
        for header in headers:
            state.update(header)
        return state

    def check_append(self, headers: list[BatchHeader]) -> BatchMetadata | None:
        """Check a leader append before it is written. Returns the earlier batch if the append is a single batch
        that repeats one (nothing must be written then); raises KafkaError for a fenced epoch, a sequence out of
        order, or a repeated batch among others."""
        pending: dict[int, tuple[int, int | None]] = {}  # producer id -> (epoch, last sequence) after earlier ones
        for header in headers:
            producer_id = header.producer_id
            if producer_id < 0 or header.is_control:
                continue
            entry = self.producers.get(producer_id)
            if entry is not None and (found := entry.duplicate_of(header)) is not None:
                if len(headers) == 1:
                    return found
                raise KafkaError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
                                 f"producer {producer_id}: batch {header.base_sequence}..{last_sequence(header)} "
                                 "was written already")
            epoch, last = pending.get(producer_id) or ((entry.epoch, entry.last_sequence) if entry is not None
                                                       else (NO_PRODUCER_EPOCH, None))
            _check_sequence(producer_id, header, epoch, last)
            pending[producer_id] = (header.producer_epoch, last_sequence(header))
        return None

    def update(self, header: BatchHeader) -> None:
        """Record a batch written to the log (with its final offsets)."""
        if header.producer_id < 0 or header.is_control:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerEntry()
        if header.producer_epoch != entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        entry.batches.append(BatchMetadata(header.base_sequence, last_sequence(header), header.base_offset,
                                           header.base_offset + header.last_offset_delta))
        entry.last_timestamp = header.max_timestamp


def _check_sequence(producer_id: int, header: BatchHeader, epoch: int, last: int | None) -> None:
    """Kafka's checkProducerEpoch and checkSequence for a client's batch."""
    first = header.base_sequence
    if header.producer_epoch < epoch:
        raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                         f"producer {producer_id}: epoch {header.producer_epoch} is older than {epoch}")
    if header.producer_epoch != epoch:
        if first != 0 and epoch != NO_PRODUCER_EPOCH:
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {producer_id}: new epoch {header.producer_epoch} starts at sequence {first}, "
                             "not 0")
    elif last is not None and not _in_sequence(last, first):
        raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                         f"producer {producer_id}: sequence {first} does not follow {last}")
