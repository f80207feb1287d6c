"""Integration fixtures: one real ZooKeeper server (tickTime 500 ms, free loopback port) for the whole run,
and ZooKeeper sessions under a chroot of their own per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest

from zk.client import ZkClient
from zk.server import ZooKeeperServer, zookeeper_available

ZkSessionFactory = Callable[..., AbstractAsyncContextManager[ZkClient]]


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    if not zookeeper_available():
        pytest.fail("ZooKeeper (or java) is not installed: run make setup")
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), tick_time_ms=500)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_chroot() -> str:
    """A chroot no other test uses."""
    return f"/test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def zk_session(zookeeper: ZooKeeperServer, zk_chroot: str) -> ZkSessionFactory:
    """`async with zk_session() as zk:` opens a session under the test's chroot and closes it after."""

    @asynccontextmanager
    async def open_session(session_timeout_ms: int = 4000) -> AsyncIterator[ZkClient]:
        zk = ZkClient(zookeeper.connect_string, chroot=zk_chroot, session_timeout_ms=session_timeout_ms)
        await zk.start()
        try:
            yield zk
        finally:
            await zk.close()

    return open_session
