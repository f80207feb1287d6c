"""The consumer with a group (client/consumer.py) against a stand-in broker (tests/unit/fake_group_broker.py):
subscribe, positions from the committed offsets (auto_offset_reset for partitions without one), commits of what
was handed out with the leader epoch of its last record, committed(), a consumer assigned by hand committing from
outside the group, close committing and leaving, and the misuses refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from client.consumer import Consumer
from client.group.offsets import OffsetAndMetadata
from protocol.apis.group_offsets import OffsetCommitRequest
from protocol.apis.groups import LeaveGroupRequest
from protocol.topic_partition import TopicPartition as TP
from tests.polling import poll_records
from tests.unit.fake_group_broker import BOOTSTRAP, Committed, FakeGroupBroker, use_fake_broker

FAST = {"heartbeat_interval_ms": 20, "session_timeout_ms": 400, "retry_backoff_ms": 10, "fetch_max_wait_ms": 20}


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGroupBroker]:
    """The broker every Consumer made in the test talks to."""
    fake = FakeGroupBroker(topics={"t": 2})
    use_fake_broker(monkeypatch, "client.consumer", fake)
    yield fake


def values(records: list) -> list[tuple[int, int, bytes]]:
    return sorted((r.partition, r.offset, r.value) for r in records)


async def test_a_subscribed_consumer_starts_at_the_committed_offsets_else_at_auto_offset_reset(broker):
    broker.append(TP("t", 0), b"a0", b"a1", b"a2")
    broker.append(TP("t", 1), b"b0", b"b1")
    broker.committed[("g", TP("t", 0))] = Committed(1, 0, "")
    async with Consumer(BOOTSTRAP, group_id="g", auto_offset_reset="earliest", **FAST) as consumer:
        consumer.subscribe(["t"])
        records = await poll_records(consumer, 4)
        assert values(records) == [(0, 1, b"a1"), (0, 2, b"a2"), (1, 0, b"b0"), (1, 1, b"b1")]
        assert consumer.assignment() == [TP("t", 0), TP("t", 1)] and consumer.subscription() == {"t"}


async def test_commit_commits_what_was_handed_out_with_the_leader_epoch_of_its_last_record(broker):
    broker.append(TP("t", 0), b"x", b"y", leader_epoch=4)
    broker.append(TP("t", 1), b"z", leader_epoch=2)
    async with Consumer(BOOTSTRAP, group_id="g", auto_offset_reset="earliest", enable_auto_commit=False,
                        **FAST) as consumer:
        consumer.subscribe(["t"])
        await poll_records(consumer, 3)
        await consumer.commit()
        assert await consumer.committed([("t", 0), ("t", 1)]) == {
            TP("t", 0): OffsetAndMetadata(2, 4), TP("t", 1): OffsetAndMetadata(1, 2)}
        await consumer.commit({("t", 0): 1})
        assert broker.committed[("g", TP("t", 0))].offset == 1
        [*_, last] = broker.sent(OffsetCommitRequest)
        assert (last.generation_id, last.member_id) == (1, "member-0")


async def test_a_consumer_assigned_by_hand_commits_from_outside_the_group(broker):
    broker.append(TP("t", 1), b"only")
    async with Consumer(BOOTSTRAP, group_id="g", auto_offset_reset="earliest", **FAST) as consumer:
        consumer.assign([("t", 1)])
        await poll_records(consumer, 1)
    [commit] = broker.sent(OffsetCommitRequest)
    assert (commit.generation_id, commit.member_id) == (-1, "")
    assert broker.committed[("g", TP("t", 1))].offset == 1
    assert broker.sent(LeaveGroupRequest) == []


async def test_close_commits_the_consumed_offsets_and_leaves(broker):
    broker.append(TP("t", 0), b"one", b"two")
    async with Consumer(BOOTSTRAP, group_id="g", auto_offset_reset="earliest", **FAST) as consumer:
        consumer.subscribe(["t"])
        await poll_records(consumer, 2)
    assert broker.committed[("g", TP("t", 0))].offset == 2
    assert len(broker.sent(LeaveGroupRequest)) == 1


async def test_subscribe_and_assign_exclude_each_other_and_subscribe_needs_a_group(broker):
    async with Consumer(BOOTSTRAP, **FAST) as consumer:
        with pytest.raises(ValueError, match="needs a group_id"):
            consumer.subscribe(["t"])
        consumer.subscribe(["t"], group_id="g")
        with pytest.raises(ValueError, match="exclude each other"):
            consumer.assign([("t", 0)])
        with pytest.raises(ValueError, match="belongs to group 'g'"):
            consumer.subscribe(["t"], group_id="h")
        with pytest.raises(TypeError, match="list of topics"):
            consumer.subscribe("t")
    async with Consumer(BOOTSTRAP, group_id="g", **FAST) as consumer:
        consumer.assign([("t", 0)])
        with pytest.raises(ValueError, match="exclude each other"):
            consumer.subscribe(["t"])
    async with Consumer(BOOTSTRAP, **FAST) as consumer:
        with pytest.raises(ValueError, match="no group_id"):
            await consumer.commit()
