"""Idempotent producers on a partition log: retried batches are written once and answered with their first
offsets, sequences out of order and fenced epochs are refused, and the state is rebuilt from the log's batch
headers after a restart or a truncation (as a new leader finds it)."""

from __future__ import annotations

import pytest

from broker.log.producer_state import BATCHES_PER_PRODUCER, ProducerStateManager, last_sequence
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchBuilder, read_header
from tests.unit.logutil import batch, offsets_of, open_log, values_of


def idempotent(producer_id: int, epoch: int, sequence: int, *values: bytes) -> bytes:
    builder = BatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
    for value in values:
        builder.append(value, timestamp=1_700_000_000_000)
    return builder.build()


def test_a_retried_batch_is_written_once_and_answered_with_its_first_offsets(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(b"other"), leader_epoch=0)
    first = log.append_as_leader(idempotent(7, 0, 0, b"a", b"b"), leader_epoch=0)
    log.append_as_leader(idempotent(7, 0, 2, b"c"), leader_epoch=0)
    retry = log.append_as_leader(idempotent(7, 0, 0, b"a", b"b"), leader_epoch=0)
    assert (first.first_offset, first.last_offset) == (1, 2)
    assert (retry.first_offset, retry.last_offset, retry.batch_count) == (1, 2, 0)
    assert values_of(log.read(0, 1 << 20)) == [b"other", b"a", b"b", b"c"]


def test_only_the_last_five_batches_are_recognised(tmp_path):
    log = open_log(tmp_path)
    for sequence in range(BATCHES_PER_PRODUCER + 1):
        log.append_as_leader(idempotent(7, 0, sequence, b"x"), leader_epoch=0)
    with pytest.raises(KafkaError) as refused:
        log.append_as_leader(idempotent(7, 0, 0, b"x"), leader_epoch=0)
    assert refused.value.code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(idempotent(7, 0, 1, b"x"), leader_epoch=0).batch_count == 0


@pytest.mark.parametrize(("epoch", "sequence", "code"), [
    (0, 3, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a gap
    (0, 1, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # overlaps the last batch without repeating it
    (1, 5, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a new epoch starts at 0
    (-1, 2, ErrorCode.INVALID_PRODUCER_EPOCH),  # an epoch older than the producer's is fenced
])
def test_out_of_order_sequences_and_old_epochs_are_refused_and_nothing_is_written(tmp_path, epoch, sequence, code):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(7, 0, 0, b"a", b"b"), leader_epoch=0)
    with pytest.raises(KafkaError) as refused:
        log.append_as_leader(idempotent(7, epoch, sequence, b"c"), leader_epoch=0)
    assert refused.value.code is code
    assert log.log_end_offset == 2


def test_a_new_epoch_from_zero_and_an_unknown_producer_at_any_sequence_are_accepted(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(7, 0, 0, b"a"), leader_epoch=0)
    log.append_as_leader(idempotent(7, 1, 0, b"b"), leader_epoch=0)
    log.append_as_leader(idempotent(8, 0, 41, b"c"), leader_epoch=0)
    assert log.log_end_offset == 3


def test_sequences_wrap_after_the_largest_int32():
    header = read_header(idempotent(7, 0, 2**31 - 2, b"a", b"b", b"c"))
    assert last_sequence(header) == 0
    state = ProducerStateManager.from_headers([header])
    assert state.check_append([read_header(idempotent(7, 0, 1, b"d"))]) is None


def test_the_state_is_rebuilt_from_the_batch_headers_after_a_restart(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(7, 0, 0, b"a"), leader_epoch=0)
    log.append_as_leader(idempotent(7, 0, 1, b"b"), leader_epoch=0)
    log.close()
    reopened = open_log(tmp_path)
    assert reopened.append_as_leader(idempotent(7, 0, 1, b"b"), leader_epoch=1).first_offset == 1
    with pytest.raises(KafkaError):
        reopened.append_as_leader(idempotent(7, 0, 5, b"z"), leader_epoch=1)
    assert reopened.append_as_leader(idempotent(7, 0, 2, b"c"), leader_epoch=1).first_offset == 2


def test_a_follower_becoming_leader_knows_the_batches_it_replicated(tmp_path):
    leader = open_log(tmp_path / "leader")
    leader.append_as_leader(idempotent(7, 0, 0, b"a", b"b"), leader_epoch=0)
    follower = open_log(tmp_path / "follower")
    follower.producer_state()  # loaded before the follower appends: kept up to date by the appends
    follower.append_as_follower(leader.read(0, 1 << 20))
    retry = follower.append_as_leader(idempotent(7, 0, 0, b"a", b"b"), leader_epoch=1)
    assert (retry.first_offset, retry.batch_count) == (0, 0)


def test_a_truncated_batch_may_be_written_again(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(7, 0, 0, b"a"), leader_epoch=0)
    log.append_as_leader(idempotent(7, 0, 1, b"b"), leader_epoch=0)
    log.truncate_to(1)
    again = log.append_as_leader(idempotent(7, 0, 1, b"b"), leader_epoch=1)
    assert (again.first_offset, again.batch_count) == (1, 1)
    assert offsets_of(log.read(0, 1 << 20)) == [0, 1]
