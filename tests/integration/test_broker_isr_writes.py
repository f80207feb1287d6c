"""A leader's ISR writes against a real ZooKeeper (BrokerZkState): the conditional state writes of many partitions
go in few transactions, a refused one is settled alone without losing the others, and the changes are named in few
ISR change notifications, never lost (written again after an error, flushed at close)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from broker.zk_state import BrokerZkState
from protocol.topic_partition import TopicPartition
from tests.polling import eventually
from zk import znodes
from zk.client import NoNodeError, ZkClient, ZkSessionError
from zk.znodes import LeaderIsrAndControllerEpoch

if TYPE_CHECKING:
    from tests.integration.conftest import ZkSessionFactory
    from zk.server import ZooKeeperServer

TOPIC = "events"
OLD = LeaderIsrAndControllerEpoch(leader=1, leader_epoch=3, isr=(1, 2), controller_epoch=1)
NEW = LeaderIsrAndControllerEpoch(leader=1, leader_epoch=3, isr=(1, 2, 3), controller_epoch=1)


def state_path(partition: int) -> str:
    return znodes.partition_state_path(TOPIC, partition)


async def create_states(zk: ZkClient, count: int) -> None:
    await asyncio.gather(*(zk.create(state_path(p), znodes.encode_partition_state(OLD), makepath=True)
                           for p in range(count)))
    await zk.ensure_path(znodes.ISR_CHANGE_NOTIFICATION_PATH)


async def write_all(writer: BrokerZkState, partitions: range) -> list[int | BaseException | None]:
    """Every partition's ISR expanded to NEW, conditional on version 0, all at once (as a rejoining follower)."""
    return await asyncio.gather(*(writer.write_isr(TopicPartition(TOPIC, p), NEW) for p in partitions),
                                return_exceptions=True)


async def notified(zk: ZkClient) -> list[list[tuple[str, int]]]:
    """The partitions each ISR change notification names, in sequence order."""
    names = await zk.get_children(znodes.ISR_CHANGE_NOTIFICATION_PATH)
    reads = [await zk.get(f"{znodes.ISR_CHANGE_NOTIFICATION_PATH}/{name}") for name in names]
    return [znodes.decode_isr_change(data) for data, _ in reads]


async def wait_notified(zk: ZkClient, count: int) -> list[list[tuple[str, int]]]:
    found: list[list[tuple[str, int]]] = []

    async def enough() -> list[list[tuple[str, int]]] | None:
        found[:] = await notified(zk)
        return found if len(found) >= count else None

    return await eventually(enough, lambda: f"{count} notifications (found {found})", timeout_s=10, interval_s=0.02)


async def transactions_of(zk: ZkClient, partitions: range) -> int:
    """How many transactions wrote these state znodes (one zxid each)."""
    return len({(await zk.get(state_path(p)))[1].mzxid for p in partitions})


async def test_isr_writes_of_hundreds_of_partitions_take_one_transaction_and_one_notification(
        zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        await create_states(zk, 300)
        writer = BrokerZkState(zk, propagation_delay_ms=50)
        assert await write_all(writer, range(300)) == [1] * 300
        assert await transactions_of(zk, range(300)) == 1
        assert await wait_notified(zk, 1) == [[(TOPIC, p) for p in range(300)]]
        for p in range(300):
            data, stat = await zk.get(state_path(p))
            assert znodes.decode_partition_state(data, stat.version) == replace(NEW, zk_version=1)
        await writer.close()
        assert len(await notified(zk)) == 1


async def test_refused_writes_are_settled_alone_and_the_rest_of_their_transaction_is_written(
        zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        await create_states(zk, 50)
        await zk.set(state_path(10), znodes.encode_partition_state(LeaderIsrAndControllerEpoch(
            leader=2, leader_epoch=4, isr=(2, 3), controller_epoch=1)))  # the controller moved the leadership
        await zk.set(state_path(20), znodes.encode_partition_state(NEW))  # an earlier attempt's lost answer
        await zk.set(state_path(30), znodes.encode_partition_state(OLD))  # the controller rewrote it
        await zk.delete(state_path(40))  # the topic is being deleted
        writer = BrokerZkState(zk, propagation_delay_ms=50)
        results = await write_all(writer, range(50))
        assert (results[10], results[20], results[30]) == (None, 1, None)
        assert isinstance(results[40], NoNodeError)
        assert [r for p, r in enumerate(results) if p not in (10, 20, 30, 40)] == [1] * 46
        [named] = await wait_notified(zk, 1)
        assert sorted(named) == [(TOPIC, p) for p in range(50) if p not in (10, 30, 40)]
        await writer.close()


async def test_a_whole_batch_whose_answer_was_lost_is_recognised_as_written(zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        await create_states(zk, 200)
        # Notifications only at close, so each writer's changes are named in one whatever the checks' timing.
        first = BrokerZkState(zk, propagation_delay_ms=600_000)
        assert await write_all(first, range(200)) == [1] * 200
        await first.close()
        again = BrokerZkState(zk, propagation_delay_ms=600_000)  # the same writes, conditional on version 0 again
        assert await write_all(again, range(200)) == [1] * 200
        await again.close()
        assert [len(n) for n in await notified(zk)] == [200, 200]


async def test_close_names_the_pending_changes_at_once(zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        await create_states(zk, 5)
        writer = BrokerZkState(zk, propagation_delay_ms=600_000)
        assert await write_all(writer, range(5)) == [1] * 5
        assert await notified(zk) == []
        await writer.close()
        assert await notified(zk) == [[(TOPIC, p) for p in range(5)]]


async def test_a_notification_that_fails_is_written_again(zk_session: ZkSessionFactory,
                                                          monkeypatch: pytest.MonkeyPatch):
    async with zk_session() as zk:
        await create_states(zk, 20)
        create, failures = zk.create, []

        async def create_failing_once(path: str, *args: object, **kwargs: object) -> str:
            if path.startswith(znodes.ISR_CHANGE_NOTIFICATION_PATH) and not failures:
                failures.append(path)
                raise ZkSessionError("create: no connection to ZooKeeper")
            return await create(path, *args, **kwargs)

        monkeypatch.setattr(zk, "create", create_failing_once)
        writer = BrokerZkState(zk, propagation_delay_ms=50)
        assert await write_all(writer, range(10)) == [1] * 10
        assert await wait_notified(zk, 1) == [[(TOPIC, p) for p in range(10)]]
        assert failures
        await writer.close()


async def test_under_a_small_request_budget_writes_and_notifications_are_split(zookeeper: ZooKeeperServer,
                                                                               zk_chroot: str):
    zk = ZkClient(zookeeper.connect_string, chroot=zk_chroot, max_request_bytes=4000)
    await zk.start()
    try:
        await create_states(zk, 200)
        writer = BrokerZkState(zk, propagation_delay_ms=50)
        assert await write_all(writer, range(200)) == [1] * 200
        assert 1 < await transactions_of(zk, range(200)) < 200
        await writer.close()
        notifications = await notified(zk)
        assert 1 < len(notifications) < 200
        assert sorted(tp for n in notifications for tp in n) == [(TOPIC, p) for p in range(200)]
    finally:
        await zk.close()
