"""Incremental fetch sessions (KIP-227): the leader's cache and the follower's builder, without sockets."""

from __future__ import annotations

import pytest

from broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchSessionBuilder,
    FetchSessionCache,
    next_epoch,
)
from protocol.apis.fetch import FetchPartition, FetchPartitionResponse, FetchRequest
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import ManualClock

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def fetch(partition: int, offset: int, epoch: int = 0) -> FetchPartition:
    return FetchPartition(partition=partition, current_leader_epoch=epoch, fetch_offset=offset, log_start_offset=0,
                          partition_max_bytes=1024)


def request(parts: dict[TopicPartition, FetchPartition], session_id: int, epoch: int, forgotten=(),
            replica_id: int = 2) -> FetchRequest:
    topics: dict[str, list[FetchPartition]] = {}
    for tp, f in parts.items():
        topics.setdefault(tp.topic, []).append(f)
    forgotten_topics: dict[str, list[int]] = {}
    for tp in forgotten:
        forgotten_topics.setdefault(tp.topic, []).append(tp.partition)
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                        topics=[Topic(name=n, partitions=p) for n, p in topics.items()], session_id=session_id,
                        session_epoch=epoch, forgotten_topics=[Topic(name=n, partitions=p)
                                                               for n, p in forgotten_topics.items()])


def result(tp: TopicPartition, hw: int, records: bytes = b"", error: ErrorCode = ErrorCode.NONE):
    return tp, FetchPartitionResponse(partition=tp.partition, error_code=error, high_watermark=hw,
                                      log_start_offset=0, records=records)


def cache(max_sessions: int = 10, idle_ms: int = 60_000, clock: ManualClock | None = None) -> FetchSessionCache:
    return FetchSessionCache(max_sessions, idle_ms, clock or ManualClock())


def test_a_session_reports_only_partitions_with_news():
    sessions = cache()
    full = sessions.context(request({A0: fetch(0, 5), A1: fetch(1, 7), B0: fetch(0, 0)}, 0, INITIAL_EPOCH))
    assert full.session_id != 0 and set(full.partitions) == {A0, A1, B0}
    first = [result(A0, 5), result(A1, 7), result(B0, 0)]
    assert [tp for tp, _ in full.reported(first)] == [A0, A1, B0]  # the opening response is full

    incremental = sessions.context(request({}, full.session_id, 1))
    assert set(incremental.partitions) == {A0, A1, B0}  # the leader still reads every partition of the session
    news = [result(A0, 5), result(A1, 8), result(B0, 0, records=b"x"), ]
    assert [tp for tp, _ in incremental.reported(news)] == [A1, B0]  # a new HW, and records
    again = sessions.context(request({}, full.session_id, 2))
    assert again.reported([result(A0, 5), result(A1, 8), result(B0, 0, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)]) \
        == [result(B0, 0, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)]  # errors always go back


def test_incremental_requests_update_offsets_and_forget_partitions():
    sessions = cache()
    opened = sessions.context(request({A0: fetch(0, 5), A1: fetch(1, 7)}, 0, INITIAL_EPOCH))
    step = sessions.context(request({A0: fetch(0, 9, epoch=3), B0: fetch(0, 1)}, opened.session_id, 1,
                                    forgotten=[A1]))
    assert {tp: (p.fetch_offset, p.current_leader_epoch) for tp, p in step.partitions.items()} == {
        A0: (9, 3), B0: (1, 0)}


def test_a_wrong_epoch_or_an_unknown_session_is_refused():
    sessions = cache()
    opened = sessions.context(request({A0: fetch(0, 5)}, 0, INITIAL_EPOCH))
    with pytest.raises(KafkaError) as refused:
        sessions.context(request({}, opened.session_id, 5))
    assert refused.value.code is ErrorCode.INVALID_FETCH_SESSION_EPOCH
    with pytest.raises(KafkaError) as unknown:
        sessions.context(request({}, opened.session_id + 100, 1))
    assert unknown.value.code is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    with pytest.raises(KafkaError) as other_replica:
        sessions.context(request({}, opened.session_id, 1, replica_id=3))
    assert other_replica.value.code is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert sessions.context(request({}, opened.session_id, 1)).session_id == opened.session_id


def test_the_final_epoch_is_a_full_fetch_outside_any_session_and_closes_the_named_one():
    sessions = cache()
    consumer = sessions.context(request({A0: fetch(0, 5)}, 0, FINAL_EPOCH, replica_id=-1))
    assert consumer.session_id == 0 and len(sessions) == 0
    assert consumer.reported([result(A0, 5)]) == [result(A0, 5)]
    opened = sessions.context(request({A0: fetch(0, 5)}, 0, INITIAL_EPOCH))
    sessions.context(request({A0: fetch(0, 5)}, opened.session_id, FINAL_EPOCH))
    assert len(sessions) == 0


def test_sessions_are_bounded_and_expire_when_idle():
    clock = ManualClock()
    sessions = cache(max_sessions=2, idle_ms=1000, clock=clock)
    ids = [sessions.context(request({A0: fetch(0, 0)}, 0, INITIAL_EPOCH)).session_id for _ in range(3)]
    assert len(sessions) == 2
    with pytest.raises(KafkaError):
        sessions.context(request({}, ids[0], 1))  # the least recently used went first
    clock.advance(1001)
    with pytest.raises(KafkaError):
        sessions.context(request({}, ids[2], 1))
    assert len(sessions) == 0


def test_epochs_wrap_to_one_and_negative_epochs_stay():
    assert next_epoch(0) == 1 and next_epoch(2**31 - 1) == 1 and next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_the_builder_sends_everything_first_then_only_changes():
    builder = FetchSessionBuilder()
    wanted = {A0: fetch(0, 5), A1: fetch(1, 7)}
    send, forget = builder.build(wanted)
    assert dict(send) == wanted and forget == [] and (builder.session_id, builder.epoch) == (0, INITIAL_EPOCH)
    builder.on_response(ErrorCode.NONE, 42)
    assert (builder.session_id, builder.epoch) == (42, 1)
    send, forget = builder.build({A0: fetch(0, 6), B0: fetch(0, 0)})
    assert dict(send) == {A0: fetch(0, 6), B0: fetch(0, 0)} and forget == [A1]
    builder.on_response(ErrorCode.NONE, 42)
    assert builder.build({A0: fetch(0, 6), B0: fetch(0, 0)}) == ([], [])
    builder.on_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 42)
    send, _ = builder.build({A0: fetch(0, 6)})
    assert send == [(A0, fetch(0, 6))] and (builder.session_id, builder.epoch) == (0, INITIAL_EPOCH)


def test_a_follower_and_a_leader_stay_in_step_over_many_rounds():
    """What the leader ends up with always equals what the follower wants, whatever changes each round."""
    import random

    rng = random.Random(7)
    sessions, builder = cache(), FetchSessionBuilder()
    tps = [TopicPartition("t", p) for p in range(20)]
    offsets = dict.fromkeys(tps, 0)
    for _round in range(200):
        wanted = {tp: fetch(tp.partition, offsets[tp]) for tp in tps if rng.random() < 0.9}
        send, forget = builder.build(wanted)
        context = sessions.context(request(dict(send), builder.session_id, builder.epoch, forgotten=forget))
        builder.on_response(ErrorCode.NONE, context.session_id)
        assert {tp: p.fetch_offset for tp, p in context.partitions.items()} == {
            tp: f.fetch_offset for tp, f in wanted.items()}
        for tp in rng.sample(tps, 3):
            offsets[tp] += 1
