"""The producer's record accumulator with an injected clock: batch.size and linger.ms decisions, one batch in
flight per partition, retry order and backoff, delivery timeout, and the offsets handed to each record."""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.accumulator import (
    FutureRecordMetadata,
    ProducerBatch,
    RecordAccumulator,
    RecordMetadata,
    estimate_record_size,
)
from protocol.records import HEADER_SIZE, BatchBuilder, Header, decode_records
from protocol.topic_partition import TopicPartition

TP0 = TopicPartition("events", 0)
TP1 = TopicPartition("events", 1)
T0 = 1_000_000.0
VALUE = b"v" * 100
RECORD = estimate_record_size(None, VALUE)
REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="outside")


def accumulator(batch_records: int = 3, linger_ms: float = 5, delivery_timeout_ms: float = 1000) -> RecordAccumulator:
    """An accumulator whose batches hold exactly `batch_records` records of VALUE."""
    return RecordAccumulator(
        batch_size=HEADER_SIZE + batch_records * RECORD, linger_ms=linger_ms, delivery_timeout_ms=delivery_timeout_ms
    )


def append(
    acc: RecordAccumulator, tp: TopicPartition = TP0, now: float = T0, value: bytes = VALUE, **options: bool
) -> FutureRecordMetadata | None:
    return acc.append(tp, None, value, (), 1_700_000_000_000, now, **options)


async def test_records_share_a_batch_until_batch_size():
    acc = accumulator(batch_records=3, linger_ms=50)
    first, second = (append(acc) for _ in range(2))
    assert (first.offset_delta, second.offset_delta, second.batch) == (0, 1, first.batch)
    assert not first.batch.sealed
    assert acc.ready(T0) == []
    third = append(acc, abort_on_new_batch=True)
    assert (third.offset_delta, third.batch.sealed) == (2, True)  # the third record joins the batch and fills it
    assert append(acc, abort_on_new_batch=True) is None  # a fourth would need a new batch
    assert acc.ready(T0) == [TP0]
    [batch] = acc.drain([TP0], max_request_size=10**6)
    assert batch.record_count == 3
    assert len(batch.records()) <= acc.batch_size


async def test_a_record_that_does_not_fit_seals_the_batch_and_opens_a_new_one():
    acc = accumulator(batch_records=3, linger_ms=50)
    append(acc)
    big = b"x" * (3 * len(VALUE))
    opened = append(acc, value=big)
    assert opened.offset_delta == 0 and not opened.batch.sealed
    assert acc.ready(T0) == [TP0]  # the batch it did not fit in is sealed
    first, = acc.drain([TP0], 10**6)
    assert first.record_count == 1


async def test_a_sticky_record_that_does_not_fit_seals_the_batch_and_is_not_appended():
    acc = accumulator(batch_records=3, linger_ms=50)
    append(acc)
    assert append(acc, value=b"x" * (3 * len(VALUE)), abort_on_new_batch=True) is None
    assert acc.ready(T0) == [TP0]  # sealed: ready to send although linger has not passed
    first, = acc.drain([TP0], 10**6)
    assert first.record_count == 1
    assert acc.incomplete() == [first]


async def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = accumulator(batch_records=1)
    append(acc, value=b"small")
    assert append(acc, value=b"x" * 10_000).batch.sealed
    first, = acc.drain([TP0], 10**6)
    acc.unmute(TP0)
    second, = acc.drain([TP0], 10**6)
    assert (first.record_count, second.record_count) == (1, 1)
    assert len(second.records()) > acc.batch_size


async def test_linger_makes_an_open_batch_ready_and_says_when():
    acc = accumulator(linger_ms=5)
    append(acc, now=T0)
    assert acc.ready(T0 + 4.9) == []
    assert acc.next_wakeup_in(T0 + 2) == pytest.approx(3)
    assert acc.ready(T0 + 5) == [TP0]
    assert append(acc, now=T0 + 5, abort_on_new_batch=True).offset_delta == 1  # still taking records until drained


async def test_force_makes_every_open_batch_ready():
    acc = accumulator(linger_ms=10_000)
    append(acc, TP0)
    append(acc, TP1)
    assert acc.ready(T0) == []
    assert acc.ready(T0, force=True) == [TP0, TP1]


async def test_no_wakeup_without_batches():
    assert accumulator().next_wakeup_in(T0) is None


async def test_a_partition_is_muted_while_its_batch_is_in_flight():
    acc = accumulator(batch_records=1)
    append(acc)
    append(acc)
    first, = acc.drain(acc.ready(T0), 10**6)
    assert acc.ready(T0) == []
    assert acc.next_wakeup_in(T0) == pytest.approx(1000)  # only the delivery timeout is left to wait for
    acc.unmute(TP0)
    second, = acc.drain(acc.ready(T0), 10**6)
    assert second is not first


async def test_drain_respects_max_request_size_but_takes_at_least_one_batch():
    acc = accumulator(batch_records=1)
    for tp in (TP0, TP1):
        append(acc, tp)
    one_batch = HEADER_SIZE + RECORD
    drained = acc.drain(acc.ready(T0), max_request_size=one_batch)
    assert [b.tp for b in drained] == [TP0]
    assert acc.ready(T0) == [TP1]
    assert [b.tp for b in acc.drain(acc.ready(T0), max_request_size=1)] == [TP1]


async def test_a_retried_batch_goes_first_after_its_backoff():
    acc = accumulator(batch_records=1)
    append(acc)
    append(acc)
    first, = acc.drain([TP0], 10**6)
    acc.reenqueue(first, retry_at_ms=T0 + 100)
    acc.unmute(TP0)
    assert first.attempts == 1
    assert acc.ready(T0 + 99) == []
    assert acc.next_wakeup_in(T0 + 50) == pytest.approx(50)
    assert acc.ready(T0 + 100) == [TP0]
    again, = acc.drain([TP0], 10**6)
    assert again is first


async def test_batches_expire_after_the_delivery_timeout():
    acc = accumulator(batch_records=1, delivery_timeout_ms=1000)
    append(acc, TP0, now=T0)
    append(acc, TP0, now=T0 + 500)
    assert acc.expire(T0 + 999) == []
    expired = acc.expire(T0 + 1000)
    assert [b.created_ms for b in expired] == [T0]
    assert acc.next_wakeup_in(T0 + 1000) == pytest.approx(500)


async def test_offsets_are_base_offset_plus_index():
    acc = accumulator(batch_records=3)
    futures = [append(acc) for _ in range(3)]
    batch, = acc.drain([TP0], 10**6)
    batch.complete(base_offset=40)
    assert [f.result() for f in futures] == [
        RecordMetadata("events", 0, offset, 1_700_000_000_000) for offset in (40, 41, 42)
    ]


async def test_a_record_future_settles_with_its_batch_like_an_asyncio_future():
    acc = accumulator(batch_records=3)
    first, second = (append(acc) for _ in range(2))
    assert not first.done() and not first.cancelled()
    with pytest.raises(asyncio.InvalidStateError):
        first.result()
    with pytest.raises(asyncio.InvalidStateError):
        first.exception()
    called = []
    second.add_done_callback(called.append)
    context = contextvars.copy_context()
    context.run(REQUEST.set, "in context")
    second.add_done_callback(lambda f: called.append(REQUEST.get()), context=context)
    waiting = second.__await__()
    waited_on = next(waiting)  # what a task awaiting `second` waits on: cancelling that task cancels it
    waited_on.cancel()
    batch, = acc.drain([TP0], 10**6)
    assert not batch.done  # cancelling a wait does not cancel the batch
    waiter = asyncio.ensure_future(_await(first))
    batch.complete(base_offset=7)
    assert await waiter == RecordMetadata("events", 0, 7, 1_700_000_000_000)
    assert called == [second, "in context"] and second.exception() is None and second.result().offset == 8
    assert await first == first.result()  # awaiting a settled future returns at once


async def test_awaiting_a_record_of_a_failed_batch_raises_the_batch_error():
    acc = accumulator(batch_records=1)
    future = append(acc)
    batch, = acc.drain([TP0], 10**6)
    error = RuntimeError("boom")
    batch.fail(error)
    with pytest.raises(RuntimeError, match="boom"):
        await future
    assert future.exception() is error and future.done()


async def _await(future: FutureRecordMetadata) -> RecordMetadata:
    return await future


async def test_acks_zero_offsets_are_minus_one_and_log_append_time_replaces_the_timestamp():
    acc = accumulator(batch_records=2)
    futures = [append(acc) for _ in range(2)]
    batch, = acc.drain([TP0], 10**6)
    batch.complete(base_offset=-1, log_append_time_ms=5)
    assert [(f.result().offset, f.result().timestamp) for f in futures] == [(-1, 5), (-1, 5)]


async def test_a_failed_batch_fails_every_record_and_frees_its_buffer():
    acc = accumulator(batch_records=2)
    futures = [append(acc) for _ in range(2)]
    assert acc.buffered_bytes == 2 * RECORD
    batch, = acc.drain([TP0], 10**6)
    batch.fail(RuntimeError("boom"))
    acc.deallocate(batch)
    assert all(isinstance(f.exception(), RuntimeError) for f in futures)
    assert batch.done
    assert acc.buffered_bytes == 0
    assert acc.incomplete() == []


async def test_the_built_batch_holds_the_records_in_order():
    acc = accumulator(batch_records=10)
    for i in range(3):
        acc.append(TP0, f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")], 1_700_000_000_000 + i, T0)
    batch, = acc.drain([TP0], 10**6)
    records = list(decode_records(batch.records()))
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (i, f"k{i}".encode(), f"v{i}".encode(), (Header("h", b"x"),)) for i in range(3)
    ]


async def test_appending_to_a_sealed_batch_is_refused():
    batch = ProducerBatch(TP0, T0)
    batch.append(None, b"v", (), 0, estimate_record_size(None, b"v"))
    batch.records()
    with pytest.raises(AssertionError):
        batch.append(None, b"v", (), 0, estimate_record_size(None, b"v"))


_maybe_bytes = st.none() | st.binary(max_size=300)


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            _maybe_bytes,
            _maybe_bytes,
            st.lists(st.tuples(st.text(max_size=20), _maybe_bytes), max_size=3),
            st.integers(min_value=-(2**40), max_value=2**40),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_the_size_estimate_bounds_the_real_batch_size(records):
    builder = BatchBuilder()
    estimate = HEADER_SIZE
    for key, value, headers, timestamp in records:
        builder.append(value, key, headers, timestamp)
        estimate += estimate_record_size(key, value, headers)
    assert builder.size_in_bytes() <= estimate
