"""A produced record's outcome, as the producer history (protocol.history) records it: ok with its offset, or
failed / unknown with Kafka's error name."""

from __future__ import annotations

from client.accumulator import FutureRecordMetadata
from client.producer import ProducerError
from protocol.history import FAILED, OK, UNKNOWN, HistoryWriter, Outcome


def outcome_of(topic: str, key: bytes | None, value: bytes | None, future: FutureRecordMetadata) -> Outcome:
    """The outcome of a settled record future: ok with its offset, or failed/unknown with Kafka's error name."""
    error = future.exception()
    if error is None:
        metadata = future.result()
        return Outcome(topic, metadata.partition, metadata.offset, key, value, OK)
    partition = future.batch.tp.partition
    if isinstance(error, ProducerError):
        status = UNKNOWN if error.maybe_written else FAILED
        return Outcome(topic, partition, None, key, value, status, str(error))
    return Outcome(topic, partition, None, key, value, UNKNOWN, f"{type(error).__name__}: {error}")


def track_outcome(history: HistoryWriter, topic: str, key: bytes | None, value: bytes | None,
                  future: FutureRecordMetadata) -> None:
    """Write the record's line to the history when its future settles."""
    future.add_done_callback(lambda settled: history.write(outcome_of(topic, key, value, settled)))
