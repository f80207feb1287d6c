"""An idempotent producer's identity: its producer id and epoch from InitProducerId, and the next sequence number
of each partition (the idempotence part of Kafka's TransactionManager)."""

from __future__ import annotations

import logging

from client.accumulator import ProducerBatch
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1


def idempotence_note(acks: int) -> str:
    """Why a producer whose enable.idempotence is not set is not idempotent with these acks (Kafka's wording)."""
    return f"idempotence is disabled because acks is set to {acks}, not to all"


def idempotence_enabled(enable_idempotence: bool | None, acks: int) -> bool:
    """Whether a producer is idempotent, as Kafka's ProducerConfig decides: by default (None) exactly when acks is
    all (-1), with a note in the log otherwise; asked for explicitly with other acks, ValueError."""
    if enable_idempotence is None:
        if acks != -1:
            log.info(idempotence_note(acks))
        return acks == -1
    if enable_idempotence and acks != -1:
        raise ValueError("must set acks to all in order to use the idempotent producer")
    return enable_idempotence


class ProducerIdentity:
    """Gives each batch, when first sent, the producer id, epoch and the sequence of its first record. A batch
    that fails for good after it was given a sequence leaves a gap the partition's leader would refuse: the
    identity is then dropped, and later batches go under a new producer id (Kafka resets the producer id)."""

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.epoch = -1
        self._next_sequence: dict[TopicPartition, int] = {}

    @property
    def has_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    def set_id(self, producer_id: int, epoch: int) -> None:
        """Adopt a new producer id; every partition's sequence starts again at 0."""
        self.producer_id, self.epoch = producer_id, epoch
        self._next_sequence.clear()
        log.info("idempotent producer id %d, epoch %d", producer_id, epoch)

    def stamp(self, batch: ProducerBatch) -> None:
        """Give a batch about to be built its producer id, epoch and sequence numbers."""
        assert self.has_id, "no producer id yet"
        sequence = self._next_sequence.get(batch.tp, 0)
        batch.set_producer(self.producer_id, self.epoch, sequence)
        self._next_sequence[batch.tp] = (sequence + batch.record_count) % 2**31

    def batch_failed(self, batch: ProducerBatch) -> None:
        """A batch failed for good: if it was sent under the current id, later batches need a new one."""
        if batch.producer_id != NO_PRODUCER_ID and batch.producer_id == self.producer_id:
            log.warning("dropping producer id %d after %r failed; later batches get a new one", self.producer_id,
                        batch)
            self.producer_id, self.epoch = NO_PRODUCER_ID, -1
