"""ZkClient against a real ZooKeeper: requests, versions, ephemerals, watches delivered on the loop,
transactions, session events and broker registration."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

import pytest

from broker.registration import BrokerIdInUseError, register_broker
from protocol.endpoint import EndPoint
from tests.integration.zkproxy import ZkProxy
from zk import znodes
from zk.client import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SetOp,
    ZkClient,
    ZkSessionError,
    ZkState,
    ZnodeStat,
)
from zk.ops import data_answer_bytes, pack_reads
from zk.server import ZooKeeperError, ZooKeeperServer, four_letter_word

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import ZkSessionFactory

TIMEOUT = 10.0


async def next_item(queue: asyncio.Queue[Any], timeout: float = TIMEOUT) -> Any:
    return await asyncio.wait_for(queue.get(), timeout)


async def test_requests_under_a_created_chroot(zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        assert zk.session_id
        assert await zk.create("/a", b"1") == "/a"
        data, stat = await zk.get("/a")
        assert (data, stat.version, stat.ephemeral_owner) == (b"1", 0, 0)
        assert await zk.get_or_none("/missing") is None
        assert await zk.exists("/missing") is None
        with pytest.raises(NodeExistsError):
            await zk.create("/a", b"again")
        with pytest.raises(NoNodeError):
            await zk.create("/x/y", b"")
        assert await zk.create("/x/y/z", b"deep", makepath=True) == "/x/y/z"
        sequential = await zk.create("/x/item_", sequence=True)
        assert sequential.startswith("/x/item_") and len(sequential) == len("/x/item_") + 10
        assert await zk.get_children("/x") == sorted(["y", sequential.rsplit("/", 1)[1]])
        with pytest.raises(NotEmptyError):
            await zk.delete("/x")
        await zk.delete("/x", recursive=True)
        assert await zk.exists("/x") is None


async def test_conditional_set_and_delete_check_the_version(zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        await zk.create("/v", b"0")
        stat = await zk.set("/v", b"1", version=0)
        assert isinstance(stat, ZnodeStat) and stat.version == 1
        with pytest.raises(BadVersionError):
            await zk.set("/v", b"stale", version=0)
        assert (await zk.get("/v"))[0] == b"1"
        assert (await zk.set("/v", b"any")).version == 2
        with pytest.raises(BadVersionError):
            await zk.delete("/v", version=1)
        await zk.delete("/v", version=2)
        with pytest.raises(NoNodeError):
            await zk.set("/v", b"")


async def test_ephemeral_znode_disappears_when_its_session_closes(zk_session: ZkSessionFactory):
    async with zk_session() as observer:
        async with zk_session() as owner:
            await owner.create("/e", b"mine", ephemeral=True)
            stat = await observer.exists("/e")
            assert stat is not None and stat.ephemeral_owner == owner.session_id
        assert await observer.exists("/e") is None


async def test_children_watch_runs_on_the_loop_and_rearms(zk_session: ZkSessionFactory):
    loop_thread = threading.get_ident()
    seen: asyncio.Queue[tuple[list[str], int]] = asyncio.Queue()
    async with zk_session() as zk, zk_session() as writer:
        await zk.ensure_path("/kids")
        watch = await zk.watch_children("/kids", lambda children: seen.put_nowait((children, threading.get_ident())))
        assert await next_item(seen) == ([], loop_thread)
        await writer.create("/kids/b")
        assert await next_item(seen) == (["b"], loop_thread)
        await writer.create("/kids/a")
        assert await next_item(seen) == (["a", "b"], loop_thread)
        await writer.delete("/kids/b")
        assert await next_item(seen) == (["a"], loop_thread)
        watch.cancel()
        await writer.create("/kids/c")
        later: asyncio.Queue[list[str]] = asyncio.Queue()
        await zk.watch_children("/kids", later.put_nowait)
        assert await next_item(later) == ["a", "c"]
        assert seen.empty()
        with pytest.raises(NoNodeError):
            await zk.watch_children("/nowhere", lambda _children: None)


async def test_data_watch_sees_creation_changes_and_deletion(zk_session: ZkSessionFactory):
    loop_thread = threading.get_ident()
    seen: asyncio.Queue[tuple[bytes | None, int | None, int]] = asyncio.Queue()

    def on_data(data: bytes | None, stat: ZnodeStat | None) -> None:
        seen.put_nowait((data, stat.version if stat else None, threading.get_ident()))

    async with zk_session() as zk, zk_session() as writer:
        await zk.watch_data("/d", on_data)
        assert await next_item(seen) == (None, None, loop_thread)
        await writer.create("/d", b"v0")
        assert await next_item(seen) == (b"v0", 0, loop_thread)
        await writer.set("/d", b"v1")
        assert await next_item(seen) == (b"v1", 1, loop_thread)
        await writer.delete("/d")
        assert await next_item(seen) == (None, None, loop_thread)
        existence: asyncio.Queue[ZnodeStat | None] = asyncio.Queue()
        await zk.watch_exists("/d", existence.put_nowait)
        assert await next_item(existence) is None


async def test_multi_applies_all_or_nothing(zk_session: ZkSessionFactory):
    async with zk_session() as zk:
        await zk.create("/epoch", b"1")
        await zk.create("/old")
        results = await zk.multi(
            [CheckOp("/epoch", 0), CreateOp("/t", b"x"), SetOp("/epoch", b"2", 0), DeleteOp("/old")]
        )
        assert results[0] is None and results[1] == "/t" and results[3] is None
        assert isinstance(results[2], ZnodeStat) and results[2].version == 1
        with pytest.raises(BadVersionError) as failed:
            await zk.multi([CreateOp("/u", b"x"), CheckOp("/epoch", 0), SetOp("/t", b"changed")])
        assert failed.value.op_index == 1
        assert await zk.exists("/u") is None
        assert (await zk.get("/t"))[0] == b"x"
        with pytest.raises(NodeExistsError) as failed:
            await zk.multi([CheckOp("/epoch", 1), CreateOp("/t")])
        assert failed.value.op_index == 1


async def test_get_many_reads_data_stats_and_missing_znodes_over_several_requests(
    zookeeper: ZooKeeperServer, zk_chroot: str
):
    zk = ZkClient(zookeeper.connect_string, chroot=zk_chroot, session_timeout_ms=4000, max_request_bytes=8192)
    await zk.start()
    try:
        await zk.create("/p")
        await zk.multi_pipelined([[CreateOp(f"/p/{i}", b"%d" % i * 20 if i % 7 else b"")] for i in range(600)])
        paths = [f"/p/{i}" if i % 5 else f"/gone/{i}" for i in range(600)]
        assert len(pack_reads(paths, data_answer_bytes(256), zk.max_request_bytes, zk.chroot)) > 10
        found = await zk.get_many(paths, data_bytes=256)
        singly = [await zk.get_or_none(path) for path in paths]
        assert found == singly
        assert found[0] is None and found[7] == (b"", singly[7][1]) and found[1][0] == b"1" * 20
        await zk.set("/p/1", b"new")
        assert (await zk.get_many(["/p/1"]))[0][1].version == 1  # sees this session's earlier write

        await zk.create("/p/1/a")
        await zk.create("/p/1/b")
        children = await zk.get_children_many(["/p/1", "/p/2", "/gone"] * 200, names_bytes=64)
        assert children[:3] == [["a", "b"], [], None] and children[3:] == children[:3] * 199
    finally:
        await zk.close()


async def test_register_broker_returns_the_czxid_and_refuses_a_live_duplicate(zk_session: ZkSessionFactory):
    async with zk_session() as observer:
        async with zk_session() as first, zk_session() as second:
            first_endpoints = [EndPoint("PLAINTEXT", "127.0.0.1", 9092)]
            second_endpoints = [EndPoint("PLAINTEXT", "127.0.0.1", 9093)]
            epoch = await register_broker(first, 1, first_endpoints)
            data, stat = await observer.get(znodes.broker_path(1))
            assert epoch == stat.czxid and stat.ephemeral_owner == first.session_id
            assert znodes.decode_broker(1, data, stat.czxid).port == 9092
            assert await register_broker(first, 1, first_endpoints) == epoch  # same session: still ours
            with pytest.raises(BrokerIdInUseError, match=r"broker\.id 1 is already registered"):
                await register_broker(second, 1, second_endpoints)
            for path in znodes.TOP_LEVEL_PATHS:
                assert await observer.exists(path) is not None
            waiting = asyncio.create_task(register_broker(second, 1, second_endpoints, wait_ms=int(TIMEOUT * 1000)))
            await first.close()
            new_epoch = await asyncio.wait_for(waiting, TIMEOUT)
        assert new_epoch > epoch
        assert await observer.exists(znodes.broker_path(1)) is None


async def test_session_events_through_an_expired_session(zookeeper: ZooKeeperServer, zk_session: ZkSessionFactory):
    """Cut off from ZooKeeper past its session timeout, a client sees SUSPENDED; once it reaches ZooKeeper
    again, LOST (the session expired, its ephemeral znodes are gone) and NEW_SESSION, and works again."""
    events: asyncio.Queue[ZkState] = asyncio.Queue()
    async with ZkProxy(zookeeper.connect_string) as proxy, zk_session() as observer:
        zk = ZkClient(f"127.0.0.1:{proxy.port}", chroot=observer.chroot, session_timeout_ms=2000)
        await zk.start()
        try:
            zk.add_state_listener(events.put_nowait)
            await zk.create("/mine", ephemeral=True)
            old_session = zk.session_id
            gone: asyncio.Queue[ZnodeStat | None] = asyncio.Queue()
            await observer.watch_exists("/mine", gone.put_nowait)
            assert await next_item(gone) is not None
            proxy.cut()
            assert await next_item(events) is ZkState.SUSPENDED
            assert await next_item(gone) is None  # ZooKeeper expired the session
            proxy.restore()
            assert await next_item(events) is ZkState.LOST
            assert await next_item(events) is ZkState.NEW_SESSION
            assert zk.session_id != old_session
            assert await zk.exists("/mine") is None
            assert await zk.create("/mine", ephemeral=True) == "/mine"
        finally:
            await zk.close()


async def test_a_request_made_long_after_the_connection_was_lost_still_fails_after_the_connection_timeout(
        zookeeper: ZooKeeperServer, zk_session: ZkSessionFactory):
    """However long the connection has been down when a request is made, it waits at most the connection timeout
    (a broker's ISR write made then would otherwise wait for a ZooKeeper that may never come back); and once the
    client stops waiting for connections (shutting down), a request fails at once."""
    events: asyncio.Queue[ZkState] = asyncio.Queue()
    async with ZkProxy(zookeeper.connect_string) as proxy, zk_session() as observer:
        zk = ZkClient(f"127.0.0.1:{proxy.port}", chroot=observer.chroot, session_timeout_ms=4000,
                      connection_timeout_ms=500)
        await zk.start()
        try:
            zk.add_state_listener(events.put_nowait)
            proxy.cut()
            assert await next_item(events) is ZkState.SUSPENDED
            with pytest.raises(ZkSessionError, match="no connection to ZooKeeper for 500 ms"):
                await asyncio.wait_for(zk.exists("/first"), TIMEOUT)
            with pytest.raises(ZkSessionError, match="no connection to ZooKeeper for 500 ms"):
                await asyncio.wait_for(zk.exists("/later"), TIMEOUT)
            zk.stop_waiting_for_connection()
            with pytest.raises(ZkSessionError, match="no waiting for one while shutting down"):
                await asyncio.wait_for(zk.exists("/shutting-down"), TIMEOUT)
        finally:
            await zk.close()


def test_a_server_is_not_started_on_a_port_in_use(zookeeper: ZooKeeperServer, tmp_path: Path):
    server = ZooKeeperServer(tmp_path, port=zookeeper.port)
    with pytest.raises(ZooKeeperError, match="in use already"):
        server.start()
    assert server.pid is None
    assert "Mode: standalone" in four_letter_word(zookeeper.host, zookeeper.port, "srvr")
