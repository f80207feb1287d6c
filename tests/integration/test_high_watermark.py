"""The high watermark on real broker processes: the seeds' two-replica table walked through with a
follower paused by SIGSTOP, and consumers never reading at or above the HW.

Seeds 000/003/004: the leader's LEO moves on PRODUCE; the leader records a follower's fetch offset as its
remote LEO and sets HW = max(HW, min LEO over the ISR); a follower sets HW = min(leader HW, own LEO). A paused
follower stays in the ISR here (replica.lag.time.max.ms is long enough that the ISR does not shrink), so the HW
waits for it.

The paused broker is never the controller, and clients talk to the leader only (a client asking the stopped
broker would wait for its request timeout).
"""

from __future__ import annotations

from pathlib import Path

from client.cluster import ClusterState
from client.consumer import Consumer
from client.producer import Producer
from protocol.apis.offsets import LATEST_TIMESTAMP
from protocol.apis.replicas import DescribedReplica
from protocol.errors import ErrorCode
from tests.integration.clusterutil import (
    cluster_fixture,
    connect,
    controller_of,
    create_topic,
    describe,
    fetch,
    list_offset,
    paused,
    records_of,
)
from tests.polling import eventually, poll_records

cluster = cluster_fixture(brokers=3, configs={"replica.lag.time.max.ms": "60000"})

#: How long a consumer poll that must stay empty waits for records.
QUIET_MS = 800


async def roles(cluster: ClusterState) -> tuple[int, int, int]:
    """(leader, follower to pause, controller): the paused follower and the leader are not the controller."""
    controller, _ = await controller_of(cluster)
    follower, leader = [b.id for b in cluster.brokers if b.id != controller]
    return leader, follower, controller


def leader_row(state: DescribedReplica) -> tuple[str, int, int, dict[int, int]]:
    """(role, LEO, HW, {follower: remote LEO}) of a leader replica."""
    return state.role, state.log_end_offset, state.high_watermark, {
        f.broker_id: f.log_end_offset for f in state.followers
    }


def follower_row(state: DescribedReplica) -> tuple[str, int, int]:
    return state.role, state.log_end_offset, state.high_watermark


def check_invariants(leader: DescribedReplica, followers: list[DescribedReplica]) -> None:
    """What holds in every snapshot: HW <= LEO on each replica, remote LEO <= leader LEO, and the leader's HW
    never passes an ISR follower's remote LEO."""
    assert leader.high_watermark <= leader.log_end_offset, leader
    for remote in leader.followers:
        assert remote.log_end_offset <= leader.log_end_offset, leader
        if remote.broker_id in leader.isr:
            assert leader.high_watermark <= remote.log_end_offset, leader
    for follower in followers:
        assert follower.high_watermark <= follower.log_end_offset, follower


def segment_bytes(cluster: ClusterState, broker_id: int, topic: str, partition: int) -> int:
    """Total size of a replica's .log segment files on disk."""
    directory = Path(cluster.broker(broker_id).log_dir) / f"{topic}-{partition}"
    return sum(path.stat().st_size for path in directory.glob("*.log"))


# ------------------------------------------------------------------------------------------------ seed tables


async def test_seed_table_walk_through_with_a_paused_follower(cluster):
    """Seed 003's two-replica example, step by step, on real processes."""
    topic = "seed-table"
    leader_id, follower_id, _ = await roles(cluster)
    await create_topic(cluster, topic, assignments={0: [leader_id, follower_id]})
    leader_address = cluster.broker(leader_id).address

    async with connect(cluster.broker(leader_id)) as leader, connect(cluster.broker(follower_id)) as follower:
        # Initial state: every value is 0.
        async def initial() -> bool | None:
            lead, foll = (await describe(leader, topic)).get(0), (await describe(follower, topic)).get(0)
            if lead is None or foll is None:
                return None
            ok = leader_row(lead) == ("leader", 0, 0, {follower_id: 0}) and follower_row(foll) == ("follower", 0, 0)
            return True if ok and lead.isr == sorted([leader_id, follower_id]) else None

        await eventually(initial, "the initial state: leader and follower LEO 0, HW 0, remote LEO 0")
        [before] = (await describe(follower, topic)).values()
        assert (before.leader, before.leader_epoch) == (leader_id, 0)

        async with paused(cluster, follower_id):
            # PRODUCE one record with acks=1 while the follower cannot fetch.
            async with Producer(leader_address, acks="1", request_timeout_ms=10_000) as producer:
                ack = await (await producer.send(topic, b"record-0", key=b"k"))
            assert (ack.partition, ack.offset) == (0, 0)

            # After the PRODUCE: leader LEO 1, HW 0, remote LEO 0; the follower has nothing yet.
            [lead] = (await describe(leader, topic)).values()
            assert leader_row(lead) == ("leader", 1, 0, {follower_id: 0})
            assert lead.isr == sorted([leader_id, follower_id]), "a paused follower stays in the ISR here"
            # The follower's process is stopped, so its LEO 0 / HW 0 seen just before the pause still hold;
            # its disk confirms it appended nothing.
            assert follower_row(before) == ("follower", 0, 0)
            assert segment_bytes(cluster, follower_id, topic, 0) == 0

            # A consumer reads below the HW only: nothing at all.
            async with Consumer(leader_address, request_timeout_ms=10_000) as consumer:
                consumer.assign([(topic, 0)])
                await consumer.seek_to_beginning()
                assert await consumer.position((topic, 0)) == 0
                assert await consumer.poll(timeout_ms=QUIET_MS) == []
                await consumer.seek_to_end()
                assert await consumer.position((topic, 0)) == 0, "latest is the HW (0), not the LEO (1)"
            [lead] = (await describe(leader, topic)).values()
            assert leader_row(lead) == ("leader", 1, 0, {follower_id: 0}), "the HW waits for the paused follower"

        # The follower resumes: FETCH(0) brings it LEO 1 (HW min(0, 1) = 0); FETCH(1) moves remote LEO and
        # leader HW to 1, and its response brings the follower's HW to 1.
        seen: list[tuple[object, ...]] = []

        async def caught_up() -> bool | None:
            [lead] = (await describe(leader, topic)).values()
            [foll] = (await describe(follower, topic)).values()
            check_invariants(lead, [foll])
            seen.append((leader_row(lead), follower_row(foll)))
            done = leader_row(lead) == ("leader", 1, 1, {follower_id: 1}) and follower_row(foll) == ("follower", 1, 1)
            return True if done else None

        await eventually(caught_up, lambda: f"leader LEO/HW/remote LEO 1/1/1 and follower LEO/HW 1/1; saw {seen}")

    async with Consumer(leader_address, request_timeout_ms=10_000) as consumer:
        consumer.assign([(topic, 0)])
        await consumer.seek_to_beginning()
        [record] = await poll_records(consumer, 1, "the record below the HW")
    assert (record.offset, record.key, record.value, record.leader_epoch) == (0, b"k", b"record-0", 0)


# ------------------------------------------------------------------------------------------------ visibility


async def test_consumers_never_see_records_at_or_above_the_high_watermark(cluster):
    topic = "below-hw"
    leader_id, paused_id, other_id = await roles(cluster)
    await create_topic(cluster, topic, assignments={0: [leader_id, paused_id, other_id]})
    leader_address = cluster.broker(leader_id).address
    committed, uncommitted = 20, 15
    end = committed + uncommitted

    async with (
        connect(cluster.broker(leader_id)) as leader,
        connect(cluster.broker(other_id)) as other,
        connect(cluster.broker(paused_id)) as paused_conn,
    ):
        async with Producer(leader_address, acks="all", request_timeout_ms=10_000) as producer:
            acks = [await (await producer.send(topic, f"v{i}".encode())) for i in range(committed)]
        assert [a.offset for a in acks] == list(range(committed))

        async def all_at(offset: int) -> bool | None:
            states = [(await describe(c, topic))[0] for c in (leader, other, paused_conn)]
            return True if all((s.log_end_offset, s.high_watermark) == (offset, offset) for s in states) else None

        await eventually(lambda: all_at(committed), f"every replica at LEO = HW = {committed}")

        async with paused(cluster, paused_id):
            async with Producer(leader_address, acks="1", linger_ms=0, request_timeout_ms=10_000) as producer:
                acks = [await (await producer.send(topic, f"v{i}".encode())) for i in range(committed, end)]
            assert [a.offset for a in acks] == list(range(committed, end))

            # The running follower reads up to the LEO; the HW stays where the paused ISR member left it.
            async def split() -> tuple[DescribedReplica, DescribedReplica] | None:
                lead, foll = (await describe(leader, topic))[0], (await describe(other, topic))[0]
                remote = {f.broker_id: f.log_end_offset for f in lead.followers}
                return (lead, foll) if foll.log_end_offset == remote[other_id] == end else None

            lead, foll = await eventually(split, f"the running follower to fetch from LEO {end}")
            check_invariants(lead, [foll])
            assert leader_row(lead) == ("leader", end, committed, {paused_id: committed, other_id: end})
            assert follower_row(foll) == ("follower", end, committed)

            # Raw consumer fetches (replica_id -1): only records below the HW reported in the same response.
            answer = await fetch(leader, topic, 0, 0)
            assert answer.error_code == ErrorCode.NONE
            assert answer.high_watermark == committed
            offsets = [r.offset for r in records_of(answer.records)]
            assert offsets == list(range(committed)), f"HW {answer.high_watermark}, offsets {offsets}"
            for offset in (committed - 1, committed, committed + 5, end):
                answer = await fetch(leader, topic, 0, offset)
                assert answer.error_code == ErrorCode.NONE, (offset, ErrorCode.from_code(answer.error_code))
                assert answer.high_watermark == committed
                assert all(r.offset < answer.high_watermark for r in records_of(answer.records)), offset
                assert [r.offset for r in records_of(answer.records)] == list(range(offset, committed))
            # A long-poll at the HW is not woken by data above it: it waits out max_wait_ms and returns nothing.
            answer = await fetch(leader, topic, 0, committed, max_wait_ms=300)
            assert (answer.error_code, answer.high_watermark, answer.records) == (ErrorCode.NONE, committed, b"")

            # ListOffsets latest for a consumer is the HW, not the LEO.
            assert await list_offset(leader, topic, 0, LATEST_TIMESTAMP) == committed

            # The client library's consumer: exactly the committed records, then nothing.
            async with Consumer(leader_address, request_timeout_ms=10_000) as consumer:
                consumer.assign([(topic, 0)])
                await consumer.seek_to_beginning()
                records = await poll_records(consumer, committed, f"{committed} committed records")
                assert [r.offset for r in records] == list(range(committed))
                assert [r.value for r in records] == [f"v{i}".encode() for i in range(committed)]
                assert await consumer.poll(timeout_ms=QUIET_MS) == []
                await consumer.seek_to_end()
                assert await consumer.position((topic, 0)) == committed

            [lead] = (await describe(leader, topic)).values()
            assert leader_row(lead) == ("leader", end, committed, {paused_id: committed, other_id: end})

        await eventually(lambda: all_at(end), f"every replica at LEO = HW = {end} after the follower resumed")
        answer = await fetch(leader, topic, 0, committed)
        assert answer.high_watermark == end
        assert [r.offset for r in records_of(answer.records)] == list(range(committed, end))
        assert await list_offset(leader, topic, 0, LATEST_TIMESTAMP) == end
