"""`ZkClient`: a kazoo session bridged into asyncio. The only module that imports kazoo.

kazoo runs its own threads. Requests use kazoo's ``*_async`` calls, whose completions are handed to
the event loop with ``call_soon_threadsafe``; the few blocking calls (connect, close, setting up a
watch) run in ``asyncio.to_thread``. Watch and session-state callbacks arrive on kazoo's threads and
are forwarded to the loop the same way: every callback given to this module runs on the loop thread,
and nothing here touches an asyncio object from another thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient, KazooState
from kazoo.handlers import utils as kazoo_utils
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.states import ZnodeStat as KazooStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from zk import znodes
from zk.multiread import MultiRead, ReadOp, get_children, get_data
from zk.ops import (
    MATCH_ANY_VERSION,
    MAX_REQUEST_BYTES,
    CheckOp,
    CreateOp,
    DeleteOp,
    Op,
    SetOp,
    children_answer_bytes,
    data_answer_bytes,
    multi_bytes,
    op_bytes,
    pack,
    pack_reads,
)

log = logging.getLogger("zk.client")

class ZkError(Exception):
    """A ZooKeeper operation failed. `op_index` names the failing operation of a multi."""

    def __init__(self, message: str, op_index: int | None = None) -> None:
        super().__init__(message)
        self.op_index = op_index


class NodeExistsError(ZkError):
    """The znode to create exists already."""


class NoNodeError(ZkError):
    """The znode (or the parent of the znode to create) does not exist."""


class BadVersionError(ZkError):
    """A conditional write or version check found another znode version."""


class NotEmptyError(ZkError):
    """The znode to delete has children."""


class RequestTooLargeError(ZkError):
    """The request would be over the client's byte budget (ZooKeeper would drop the connection); not sent."""


class RolledBackError(ZkError):
    """Not applied: another operation of its transaction failed."""


class ZkSessionError(ZkError):
    """No usable session: not connected, connection lost during the call, session expired, or client closed."""


_ERRORS: tuple[tuple[type[Exception], type[ZkError]], ...] = (
    (kz.NodeExistsError, NodeExistsError),
    (kz.NoNodeError, NoNodeError),
    (kz.BadVersionError, BadVersionError),
    (kz.NotEmptyError, NotEmptyError),
    (kz.ConnectionLoss, ZkSessionError),
    (kz.SessionExpiredError, ZkSessionError),
    (kz.ConnectionClosedError, ZkSessionError),
    (KazooTimeoutError, ZkSessionError),
)


def _translate(error: BaseException, what: str, op_index: int | None = None) -> BaseException:
    for kazoo_type, ours in _ERRORS:
        if isinstance(error, kazoo_type):
            return ours(f"{what}: {type(error).__name__}", op_index)
    if isinstance(error, kz.KazooException):
        return ZkError(f"{what}: {type(error).__name__} {error}", op_index)
    return error


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    """A znode's metadata: versions, creating transaction (czxid) and ephemeral owner (0 if persistent)."""

    czxid: int
    mzxid: int
    ctime_ms: int
    mtime_ms: int
    version: int
    cversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int

    @classmethod
    def _from_kazoo(cls, stat: KazooStat) -> ZnodeStat:
        return cls(
            czxid=stat.czxid,
            mzxid=stat.mzxid,
            ctime_ms=stat.ctime,
            mtime_ms=stat.mtime,
            version=stat.version,
            cversion=stat.cversion,
            ephemeral_owner=stat.ephemeralOwner,
            data_length=stat.dataLength,
            num_children=stat.numChildren,
        )


class ZkState(enum.Enum):
    """Session events. NEW_SESSION: connected again after the previous session expired (ephemeral
    znodes of the old session are gone)."""

    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"
    NEW_SESSION = "new-session"


OpResult = str | ZnodeStat | None  # created path, new stat of a set, nothing for check and delete


class Watch:
    """A persistent watch; cancel() stops its callbacks."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _SourceBoundSocketModule:
    """The `socket` module as kazoo's connection code uses it, except that every connection it opens is bound
    to one local address."""

    def __init__(self, source_address: str) -> None:
        self._source = (source_address, 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(socket, name)

    def create_connection(self, address: tuple[str, int], timeout: float | None = None) -> socket.socket:
        return socket.create_connection(address, timeout, source_address=self._source)


class _SourceBoundHandler(SequentialThreadingHandler):
    """kazoo's threading handler, opening its ZooKeeper connections from a given local address."""

    def __init__(self, source_address: str) -> None:
        super().__init__()
        self._socket_module = _SourceBoundSocketModule(source_address)

    def create_connection(self, *args: Any, **kwargs: Any) -> socket.socket:
        return kazoo_utils.create_tcp_connection(self._socket_module, *args, **kwargs)


class ZkClient:
    """An asyncio ZooKeeper session under a chroot (created if missing). With `source_address`, the
    connection to ZooKeeper is bound to that local address. No request larger than `max_request_bytes` is sent
    (RequestTooLargeError instead): see zk.ops.request_budget.

    kazoo holds a request made while it reconnects until it has reconnected, which may be never (ZooKeeper gone
    for good). A request waits for a lost connection at most `connection_timeout_ms` (Kafka's
    zookeeper.connection.timeout.ms, the session timeout unless given), then fails with ZkSessionError, however long
    the connection was down before it was made; after stop_waiting_for_connection() (a broker shutting down) every
    request fails as soon as the connection is down."""

    def __init__(self, connect: str, chroot: str = "/minikafka", session_timeout_ms: int = 18000,
                 source_address: str | None = None, connection_timeout_ms: int | None = None,
                 max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.connect = connect
        self.chroot = "/" + chroot.strip("/") if chroot.strip("/") else ""
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = session_timeout_ms if connection_timeout_ms is None else connection_timeout_ms
        self._waiting: set[asyncio.Future[Any]] = set()  # requests not answered yet
        self._disconnected: asyncio.TimerHandle | None = None  # fails the waiting requests when it fires
        self._waits_for_connection = True
        self.source_address = source_address
        self.max_request_bytes = max_request_bytes
        self._client: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state_listeners: list[Callable[[ZkState], None]] = []
        self._session_id: int | None = None  # written on kazoo's connection thread only

    # -- session --------------------------------------------------------------------------------

    async def start(self, timeout_s: float = 15.0) -> None:
        """Connect (creating the chroot path first if needed); raises ZkSessionError on timeout."""
        self._loop = asyncio.get_running_loop()
        if self.chroot:
            root = self._new_kazoo(self.connect)
            try:
                await self._blocking(root.start, timeout_s, what=f"connect to {self.connect}")
                await self._blocking(root.ensure_path, self.chroot, what=f"create {self.chroot}")
            finally:
                await asyncio.to_thread(root.stop)
                root.close()
        client = self._new_kazoo(self.connect + self.chroot)
        client.add_listener(self._on_kazoo_state)
        self._client = client
        try:
            await self._blocking(client.start, timeout_s, what=f"connect to {self.connect}{self.chroot}")
        except ZkError:
            self._client = None  # kazoo has stopped itself
            raise

    async def close(self) -> None:
        """End the session (its ephemeral znodes go at once) and stop kazoo's threads."""
        client, self._client = self._client, None
        if client is None:
            return
        client.remove_listener(self._on_kazoo_state)
        self._cancel_connection_timeout()
        await asyncio.to_thread(client.stop)
        client.close()

    def stop_waiting_for_connection(self) -> None:
        """From now on no request waits for a lost connection to come back: those waiting fail now, later ones
        as soon as the connection is down. For a broker shutting down, whose last writes are not worth waiting
        zookeeper.connection.timeout.ms for."""
        self._waits_for_connection = False
        self._cancel_connection_timeout()
        if not self.connected:
            self._connection_lost()

    @property
    def session_id(self) -> int | None:
        """The current session's id, None before start and after close."""
        client_id = self._client.client_id if self._client is not None else None
        return client_id[0] if client_id else None

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.connected

    def add_state_listener(self, callback: Callable[[ZkState], None]) -> None:
        """Call `callback(state)` on the loop for every session event."""
        self._state_listeners.append(callback)

    def remove_state_listener(self, callback: Callable[[ZkState], None]) -> None:
        if callback in self._state_listeners:
            self._state_listeners.remove(callback)

    # -- requests -------------------------------------------------------------------------------

    async def create(
        self, path: str, data: bytes = b"", ephemeral: bool = False, sequence: bool = False, makepath: bool = False
    ) -> str:
        """Create a znode; returns its path (with the sequence suffix for a sequential znode)."""
        client = self._require()
        self._check_size(multi_bytes([CreateOp(path, data)], self.chroot), f"create {path}")
        return await self._await(
            client.create_async(path, data, ephemeral=ephemeral, sequence=sequence, makepath=makepath),
            f"create {path}",
        )

    async def get(self, path: str) -> tuple[bytes, ZnodeStat]:
        data, stat = await self._await(self._require().get_async(path), f"get {path}")
        return data, ZnodeStat._from_kazoo(stat)

    async def get_or_none(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            return await self.get(path)
        except NoNodeError:
            return None

    async def get_many(self, paths: Sequence[str], data_bytes: int = 1024) -> list[tuple[bytes, ZnodeStat] | None]:
        """Per path, the znode's data and stat, or None if it does not exist (as get_or_none): read with ZooKeeper's
        multiRead (3.6+), as many znodes a request as keep the request and its answer under the request budget at
        about `data_bytes` of data a znode, the requests pipelined. Not atomic: each request reads the znodes as
        they are when ZooKeeper processes it (after every request this session sent before)."""
        client = self._require()
        found = await self._multi_read(paths, [get_data(_prefix_root(client.chroot, p)) for p in paths],
                                       data_answer_bytes(data_bytes), "get")
        return [None if got is None else (got[0], ZnodeStat._from_kazoo(got[1])) for got in found]

    async def get_children_many(self, paths: Sequence[str], names_bytes: int = 1024) -> list[list[str] | None]:
        """Per path, the znode's children (sorted), or None if it does not exist: as get_many, with about
        `names_bytes` of children's names (and their length prefixes) a znode."""
        client = self._require()
        found = await self._multi_read(paths, [get_children(_prefix_root(client.chroot, p)) for p in paths],
                                       children_answer_bytes(names_bytes), "get children of")
        return [None if children is None else sorted(children) for children in found]

    async def _multi_read(self, paths: Sequence[str], ops: list[ReadOp], answer_bytes: int, what: str) -> list[Any]:
        """Send `ops` (reads of `paths`) in multiRead requests packed by pack_reads, all at once, then wait for all:
        per op its answer, None for a znode that does not exist; any other error is raised."""
        runs = pack_reads(paths, answer_bytes, self.max_request_bytes, self.chroot)
        pending = [self._await(self._send(MultiRead(tuple(ops[run.start:run.stop]))), f"{what} {len(run)} znodes")
                   for run in runs]
        answers = await asyncio.gather(*pending, return_exceptions=True)
        results: list[Any] = []
        for run, answer in zip(runs, answers, strict=True):
            if isinstance(answer, BaseException):
                raise answer
            for path, result in zip((paths[index] for index in run), answer, strict=True):
                if isinstance(result, kz.NoNodeError):
                    results.append(None)
                elif isinstance(result, Exception):
                    raise _translate(result, f"{what} {path}")
                else:
                    results.append(result)
        return results

    async def set(self, path: str, data: bytes, version: int = MATCH_ANY_VERSION) -> ZnodeStat:
        self._check_size(multi_bytes([SetOp(path, data)], self.chroot), f"set {path}")
        stat = await self._await(self._require().set_async(path, data, version), f"set {path}")
        return ZnodeStat._from_kazoo(stat)

    async def delete(self, path: str, version: int = MATCH_ANY_VERSION, recursive: bool = False) -> None:
        client = self._require()
        if recursive:
            await self._blocking(client.delete, path, version, True, what=f"delete {path}")
        else:
            await self._await(client.delete_async(path, version), f"delete {path}")

    async def exists(self, path: str) -> ZnodeStat | None:
        stat = await self._await(self._require().exists_async(path), f"exists {path}")
        return ZnodeStat._from_kazoo(stat) if stat is not None else None

    async def get_children(self, path: str) -> list[str]:
        return sorted(await self._await(self._require().get_children_async(path), f"get children of {path}"))

    async def ensure_path(self, path: str) -> None:
        """Create `path` and its missing parents (persistent, empty)."""
        await self._await(self._require().ensure_path_async(path), f"ensure {path}")

    async def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        """Apply `ops` atomically: all or none. On failure raises the failing operation's error, with
        `op_index` set to its position. RequestTooLargeError if they do not fit in one request."""
        self._check_size(multi_bytes(ops, self.chroot), f"multi of {len(ops)} operations")
        results = await self._await(self._commit(ops), "multi")
        error = _multi_error(ops, results)
        if error is not None:
            raise error
        return [_op_result(result) for result in results]

    def transactions(self, groups: Sequence[Sequence[Op]], prefix: Sequence[Op] = ()) -> list[range]:
        """Pack groups of operations, in order and each group whole, into as few transactions as fit in a request
        with `prefix` at the head of each: the runs of group indexes. RequestTooLargeError for a group that does
        not fit on its own."""
        fixed = multi_bytes(prefix, self.chroot)
        try:
            return pack([sum(op_bytes(op, self.chroot) for op in group) for group in groups],
                        self.max_request_bytes - fixed)
        except ValueError as e:
            raise RequestTooLargeError(f"a group of operations does not fit in one request: {e}") from None

    async def multi_pipelined(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult] | ZkError]:
        """Send every transaction at once, in order, then wait for all: ZooKeeper applies one session's requests
        in the order sent, so each sees the effects of those before it, but a failed one does not stop the others.
        Per transaction, its results or its error (as `multi` raises it)."""
        for ops in transactions:
            self._check_size(multi_bytes(ops, self.chroot), f"multi of {len(ops)} operations")
        pending = [self._await(self._commit(ops), "multi") for ops in transactions]
        outcomes: list[list[OpResult] | ZkError] = []
        for ops, raw in zip(transactions, await asyncio.gather(*pending, return_exceptions=True), strict=True):
            if isinstance(raw, ZkError):
                outcomes.append(raw)
            elif isinstance(raw, BaseException):
                raise raw
            else:
                error = _multi_error(ops, raw)
                outcomes.append(error if error is not None else [_op_result(result) for result in raw])
        return outcomes

    def _commit(self, ops: Sequence[Op]) -> IAsyncResult:
        """Send `ops` as one transaction now (before any await, so requests leave in call order)."""
        transaction = self._require().transaction()
        for op in ops:
            match op:
                case CheckOp(path, version):
                    transaction.check(path, version)
                case CreateOp(path, data, ephemeral, sequence):
                    transaction.create(path, data, ephemeral=ephemeral, sequence=sequence)
                case SetOp(path, data, version):
                    transaction.set_data(path, data, version)
                case DeleteOp(path, version):
                    transaction.delete(path, version)
        return transaction.commit_async()

    def _send(self, request: MultiRead) -> IAsyncResult:
        """Send a request kazoo has no call for now (before any await, so requests leave in call order)."""
        client = self._require()
        result = client.handler.async_result()
        client._call(request, result)
        return result

    def _check_size(self, size: int, what: str) -> None:
        if size > self.max_request_bytes:
            raise RequestTooLargeError(
                f"{what}: a request of {size} bytes, over this client's budget of {self.max_request_bytes} "
                "(half of the servers' jute.maxbuffer; ZooKeeper drops the connection of a client whose request is "
                "over it)"
            )

    # -- watches --------------------------------------------------------------------------------

    async def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> Watch:
        """Call `callback(children)` on the loop now and whenever the children of `path` (which must
        exist) change, across reconnections, until the watch is cancelled."""
        if await self.exists(path) is None:
            raise NoNodeError(f"watch children of {path}: no such znode")
        watch = Watch(path)

        def on_children(children: list[str]) -> bool | None:  # kazoo thread
            if watch.cancelled:
                return False
            self._post(self._fire, watch, callback, sorted(children))
            return None

        await self._blocking(ChildrenWatch, self._require(), path, on_children, what=f"watch {path}")
        return watch

    async def watch_data(self, path: str, callback: Callable[[bytes | None, ZnodeStat | None], None]) -> Watch:
        """Call `callback(data, stat)` on the loop now and whenever `path` is created, changed or
        deleted (data and stat None while it does not exist), until the watch is cancelled."""
        watch = Watch(path)

        def on_data(data: bytes | None, stat: KazooStat | None, event: Any = None) -> bool | None:  # kazoo thread
            if watch.cancelled:
                return False
            ours = ZnodeStat._from_kazoo(stat) if stat is not None else None
            self._post(self._fire, watch, callback, data if stat is not None else None, ours)
            return None

        await self._blocking(DataWatch, self._require(), path, on_data, what=f"watch {path}")
        return watch

    async def watch_exists(self, path: str, callback: Callable[[ZnodeStat | None], None]) -> Watch:
        """Like watch_data, for callers that only care whether (and which version of) `path` exists."""
        return await self.watch_data(path, lambda _data, stat: callback(stat))

    # -- plumbing -------------------------------------------------------------------------------

    def _new_kazoo(self, hosts: str) -> KazooClient:
        return KazooClient(
            hosts=hosts,
            handler=_SourceBoundHandler(self.source_address) if self.source_address else None,
            timeout=self.session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "delay": 0.05, "backoff": 2, "max_delay": 1.0},
            logger=logging.getLogger("zk.client.kazoo"),
        )

    def _require(self) -> KazooClient:
        if self._client is None:
            raise ZkSessionError("the ZooKeeper client is not started")
        return self._client

    async def _blocking(self, fn: Callable[..., Any], *args: Any, what: str) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except Exception as e:
            raise _translate(e, what) from None

    async def _await(self, result: IAsyncResult, what: str) -> Any:
        """The value of a kazoo async result, delivered on the loop."""
        future = asyncio.get_running_loop().create_future()

        def completed(done: IAsyncResult) -> None:  # kazoo thread
            try:
                value, error = done.get(block=False), None
            except Exception as e:
                value, error = None, e
            self._post(_settle, future, value, error)

        result.rawlink(completed)
        self._waiting.add(future)
        if not self.connected:  # made while the connection is down: it waits at most connection_timeout_ms
            self._connection_lost()
        try:
            return await future
        except _NoConnection as e:
            raise ZkSessionError(f"{what}: {e}") from None
        except Exception as e:
            raise _translate(e, what) from None
        finally:
            self._waiting.discard(future)

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run fn(*args) on the loop; called from kazoo's threads."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
            self._loop.call_soon_threadsafe(fn, *args)  # type: ignore[union-attr]

    @staticmethod
    def _fire(watch: Watch, callback: Callable[..., None], *args: Any) -> None:
        if watch.cancelled:
            return
        try:
            callback(*args)
        except Exception:
            log.exception("ZooKeeper watch callback for %s failed", watch.path)

    def _on_kazoo_state(self, state: str) -> None:  # kazoo's connection thread
        if state == KazooState.CONNECTED:
            client_id = self._client.client_id if self._client is not None else None
            session_id = client_id[0] if client_id else None
            renewed = self._session_id is not None and session_id != self._session_id
            self._session_id = session_id
            event = ZkState.NEW_SESSION if renewed else ZkState.CONNECTED
        else:
            event = ZkState.SUSPENDED if state == KazooState.SUSPENDED else ZkState.LOST
        self._post(self._dispatch_state, event)

    def _connection_lost(self) -> None:
        """The waiting requests fail now (no waiting while shutting down), or when the connection has been down for
        connection_timeout_ms (counted from the first request or event that found it down)."""
        if not self._waits_for_connection:
            self._fail_waiting()
        elif self._disconnected is None and self._loop is not None:
            self._disconnected = self._loop.call_later(self.connection_timeout_ms / 1000, self._fail_waiting)

    def _cancel_connection_timeout(self) -> None:
        """No timer fails the waiting requests any more (the connection is back, or they are failed otherwise)."""
        if self._disconnected is not None:
            self._disconnected.cancel()
            self._disconnected = None

    def _fail_waiting(self) -> None:
        self._disconnected = None
        for future in list(self._waiting):
            _settle(future, None, self._no_connection())

    def _no_connection(self) -> _NoConnection:
        if self._waits_for_connection:
            return _NoConnection(f"no connection to ZooKeeper for {self.connection_timeout_ms} ms "
                                 "(zookeeper.connection.timeout.ms)")
        return _NoConnection("no connection to ZooKeeper, and no waiting for one while shutting down")

    def _dispatch_state(self, event: ZkState) -> None:
        log.info("ZooKeeper session %s: %s", self.connect + self.chroot, event.value)
        if event in (ZkState.CONNECTED, ZkState.NEW_SESSION):
            self._cancel_connection_timeout()
        else:
            self._connection_lost()
        for callback in list(self._state_listeners):
            try:
                callback(event)
            except Exception:
                log.exception("ZooKeeper state listener failed on %s", event.value)


class _NoConnection(Exception):
    """The connection has been down for the whole connection timeout, or is down while shutting down."""


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _multi_error(ops: Sequence[Op], results: list[Any]) -> ZkError | None:
    """The error of the failing operation of a transaction, None if it was applied."""
    for index, result in enumerate(results):
        if isinstance(result, Exception) and not isinstance(result, kz.RolledBackError | kz.RuntimeInconsistency):
            error = _translate(result, f"multi: {ops[index]}", index)
            return error if isinstance(error, ZkError) else ZkError(f"multi: {ops[index]}: {error!r}", index)
    return None


def _op_result(result: Any) -> OpResult:
    if isinstance(result, str):
        return result
    if isinstance(result, KazooStat):
        return ZnodeStat._from_kazoo(result)
    return None


async def ensure_top_level_paths(zk: ZkClient) -> None:
    """Create the persistent paths every broker and the controller rely on (Kafka's createTopLevelPaths)."""
    for path in znodes.TOP_LEVEL_PATHS:
        await zk.ensure_path(path)
