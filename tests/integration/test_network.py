"""The broker's network layer over real sockets on 127.0.0.1: framing limits, request-level errors, ordered
and pipelined responses, delayed and absent responses, back-pressure, idle connections, shutdown, fuzzing."""

import asyncio
import logging
import random
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import msgpack
import pytest
import uvloop

from broker.network import NO_RESPONSE, NetworkConfig, Request, RequestHandler, Response, SocketServer
from protocol.apis import API_BY_REQUEST_TYPE, supported_api_versions
from protocol.apis.api import ApiKey
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.fetch import FetchPartition, FetchPartitionResponse, FetchRequest, FetchResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse, MetadataTopic
from protocol.apis.produce import ProducePartition, ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.shapes import Topic
from protocol.endpoint import EndPoint
from protocol.envelope import RequestHeader, decode_response, encode_request
from protocol.errors import ErrorCode
from protocol.framing import encode_frame
from tests.polling import eventually

TIMEOUT = 5.0
Address = tuple[str, int]


# ---------------------------------------------------------------------------------------------
# A raw test client, a server fixture and request helpers


class WireClient:
    """Speaks the wire protocol over raw asyncio streams; requests may be pipelined."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, address: Address) -> "WireClient":
        return cls(*await asyncio.open_connection(*address))

    def send(self, body: object, correlation_id: int, api_version: int = 0) -> None:
        api_key = API_BY_REQUEST_TYPE[type(body)].api_key
        header = RequestHeader(api_key=api_key, api_version=api_version, correlation_id=correlation_id, client_id="t")
        self.writer.write(encode_frame(encode_request(header, body)))

    async def receive(self, api_key: int = ApiKey.METADATA) -> tuple[int, ErrorCode, str | None, Any]:
        async with asyncio.timeout(TIMEOUT):
            (length,) = struct.unpack(">i", await self.reader.readexactly(4))
            return decode_response(await self.reader.readexactly(length), api_key)

    async def request(self, body: object, correlation_id: int) -> tuple[int, ErrorCode, str | None, Any]:
        self.send(body, correlation_id)
        return await self.receive(API_BY_REQUEST_TYPE[type(body)].api_key)

    async def wait_closed(self) -> None:
        """Read until the server closes the connection."""
        async with asyncio.timeout(TIMEOUT):
            try:
                while await self.reader.read(65536):
                    pass
            except ConnectionResetError:
                pass

    def close(self) -> None:
        self.writer.close()


Connect = Callable[[], Awaitable[WireClient]]


@asynccontextmanager
async def serving(handler: RequestHandler, **config: Any) -> AsyncIterator[tuple[SocketServer, Connect]]:
    """A started server, and a function opening clients to it; stops the server and closes them at the end."""
    server = SocketServer(NetworkConfig(**{"listeners": (EndPoint("PLAINTEXT", "127.0.0.1", 0),), **config}), handler)
    [address] = (await server.start()).values()
    clients: list[WireClient] = []

    async def connect() -> WireClient:
        clients.append(await WireClient.connect(address))
        return clients[-1]

    try:
        yield server, connect
    finally:
        await server.stop()
        for client in clients:
            client.close()


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll `condition` every 5 ms until it holds (tests.polling.eventually), for at most TIMEOUT."""
    await eventually(condition, what, timeout_s=TIMEOUT, interval_s=0.005)


def metadata(name: str) -> MetadataRequest:
    """A request carrying `name`, which test handlers read as an instruction and echo back."""
    return MetadataRequest(topics=[name])


def name_of(request: Request) -> str:
    assert isinstance(request.body, MetadataRequest) and request.body.topics
    return request.body.topics[0]


def answer(name: str) -> Response:
    return Response(MetadataResponse(brokers=[], controller_id=-1, topics=[_topic(name)]))


def _topic(name: str) -> MetadataTopic:
    return MetadataTopic(error_code=ErrorCode.NONE, name=name, partitions=[])


def answered_name(response: tuple[int, ErrorCode, str | None, Any]) -> str:
    return response[3].topics[0].name


async def echo(request: Request) -> Response:
    if isinstance(request.body, ApiVersionsRequest):
        return Response(ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=supported_api_versions()))
    return answer(name_of(request))


# ---------------------------------------------------------------------------------------------
# Round trips and ordering


def test_network_config_has_kafkas_defaults_and_refuses_nonsense() -> None:
    config = NetworkConfig()
    assert (config.num_network_threads, config.num_io_threads, config.queued_max_requests) == (3, 8, 500)
    assert (config.socket_request_max_bytes, config.connections_max_idle_ms) == (104857600, 600000)
    with pytest.raises(ValueError, match="queued_max_requests"):
        NetworkConfig(queued_max_requests=0)


async def test_api_versions_round_trip() -> None:
    seen: list[Request] = []

    async def handler(request: Request) -> Response:
        seen.append(request)
        return await echo(request)

    async with serving(handler) as (server, connect):
        client = await connect()
        correlation_id, error, message, body = await client.request(ApiVersionsRequest(), 41)
        assert (correlation_id, error, message) == (41, ErrorCode.NONE, None)
        assert body == ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=supported_api_versions())
        local_port = client.writer.get_extra_info("sockname")[1]
        assert seen[0].connection_id == f"127.0.0.1:{local_port}-0"
        assert seen[0].header.client_id == "t"
        assert seen[0].size == 4 + len(encode_request(seen[0].header, ApiVersionsRequest()))
        assert (server.stats.requests_received, server.stats.responses_sent, server.stats.connections_open) == (1, 1, 1)
        client.close()
        await wait_until(lambda: server.stats.connections_open == 0, "the server sees the close")


async def test_pipelined_requests_completed_out_of_order_are_answered_in_order() -> None:
    names = ["a", "b", "c", "d"]
    release = {name: asyncio.Event() for name in names}
    completed: list[str] = []

    async def handler(request: Request) -> Response:
        await release[name_of(request)].wait()
        completed.append(name_of(request))
        return answer(name_of(request))

    async with serving(handler, num_io_threads=len(names)) as (server, connect):
        client = await connect()
        for correlation_id, name in enumerate(names):
            client.send(metadata(name), correlation_id)
        await wait_until(lambda: server.stats.requests_received == len(names), "all requests are read")
        for name in reversed(names[1:]):
            release[name].set()
            await wait_until(lambda n=name: completed[-1:] == [n], f"{name} completes")
        assert server.stats.responses_sent == 0  # all later responses wait for the first one
        release["a"].set()
        responses = [await client.receive() for _ in names]
        assert [(r[0], answered_name(r)) for r in responses] == list(enumerate(names))
        assert completed == ["d", "c", "b", "a"]


async def test_a_delayed_response_leaves_handler_tasks_free_and_keeps_its_place() -> None:
    loop = asyncio.get_running_loop()
    delayed: dict[str, asyncio.Future[Response]] = {}

    async def handler(request: Request) -> Response | asyncio.Future[Response]:
        if name_of(request).startswith("delay"):
            return delayed.setdefault(name_of(request), loop.create_future())
        return answer(name_of(request))

    async with serving(handler, num_io_threads=1) as (_, connect):
        parked = await connect()
        parked.send(metadata("delay-forever"), 1)
        await wait_until(lambda: "delay-forever" in delayed, "the first request is parked")
        other = await connect()
        assert answered_name(await other.request(metadata("served"), 2)) == "served"

        other.send(metadata("delay-then-done"), 3)
        other.send(metadata("after"), 4)
        await wait_until(lambda: "delay-then-done" in delayed, "the second request is parked")
        delayed["delay-then-done"].set_result(answer("done late"))
        assert [(r[0], answered_name(r)) for r in [await other.receive(), await other.receive()]] == [
            (3, "done late"),
            (4, "after"),
        ]


async def test_no_response_sends_nothing_and_keeps_later_responses_in_order() -> None:
    loop = asyncio.get_running_loop()
    delayed: asyncio.Future[Any] = loop.create_future()

    async def handler(request: Request) -> Any:
        match name_of(request):
            case "acks=0":
                return NO_RESPONSE
            case "delayed acks=0":
                return delayed
            case name:
                return answer(name)

    async with serving(handler) as (server, connect):
        client = await connect()
        for correlation_id, name in enumerate(["acks=0", "x", "acks=0", "y", "delayed acks=0", "z"]):
            client.send(metadata(name), correlation_id)
        assert [(r[0], answered_name(r)) for r in [await client.receive(), await client.receive()]] == [
            (1, "x"),
            (3, "y"),
        ]
        await wait_until(lambda: server.stats.requests_received == 6, "all requests are read")
        delayed.set_result(NO_RESPONSE)
        response = await client.receive()
        assert (response[0], answered_name(response)) == (5, "z")
        assert server.stats.responses_sent == 3


async def test_large_request_and_response_frames() -> None:
    size = 6 * 1024 * 1024
    received: list[int] = []

    async def handler(request: Request) -> Response:
        if isinstance(request.body, ProduceRequest):
            received.append(len(request.body.topics[0].partitions[0].records))
            partition = ProducePartitionResponse(partition=0, error_code=ErrorCode.NONE, base_offset=0)
            return Response(ProduceResponse(topics=[Topic(name="t", partitions=[partition])]))
        assert isinstance(request.body, FetchRequest)
        fetched = FetchPartitionResponse(
            partition=0, error_code=ErrorCode.NONE, high_watermark=1, records=bytes(range(256)) * (size // 256)
        )
        return Response(FetchResponse(error_code=ErrorCode.NONE, topics=[Topic(name="t", partitions=[fetched])]))

    async with serving(handler) as (_, connect):
        client = await connect()
        partition = ProducePartition(partition=0, records=b"\x07" * size)
        produce = ProduceRequest(acks=1, timeout_ms=1000, topics=[Topic(name="t", partitions=[partition])])
        assert (await client.request(produce, 1))[1] == ErrorCode.NONE
        assert received == [size]
        fetch_partition = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=size)
        fetch = FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=size,
            topics=[Topic(name="t", partitions=[fetch_partition])],
        )
        body = (await client.request(fetch, 2))[3]
        assert body.topics[0].partitions[0].records == bytes(range(256)) * (size // 256)


async def test_a_peer_that_does_not_read_stalls_only_its_own_connection() -> None:
    size = 2 * 1024 * 1024
    records = b"\x01" * size

    async def handler(request: Request) -> Response:
        if isinstance(request.body, ApiVersionsRequest):
            return await echo(request)
        fetched = FetchPartitionResponse(partition=0, error_code=ErrorCode.NONE, high_watermark=1, records=records)
        return Response(FetchResponse(error_code=ErrorCode.NONE, topics=[Topic(name="t", partitions=[fetched])]))

    async with serving(handler, num_network_threads=1) as (server, connect):
        slow = await connect()
        fetch = FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=size,
            topics=[
                Topic(name="t", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=size)])
            ],
        )
        for correlation_id in range(16):
            slow.send(fetch, correlation_id)
        await wait_until(lambda: server.stats.requests_received == 16, "the fetches are read")
        other = await connect()
        assert (await other.request(ApiVersionsRequest(), 99))[:2] == (99, ErrorCode.NONE)
        assert server.stats.responses_sent < 16  # 32 MB do not fit in socket buffers: the writer waits in drain
        for correlation_id in range(16):
            response = await slow.receive(ApiKey.FETCH)
            assert response[0] == correlation_id and response[3].topics[0].partitions[0].records == records


# ---------------------------------------------------------------------------------------------
# Bad input


async def test_an_oversized_frame_closes_only_its_connection(caplog: pytest.LogCaptureFixture) -> None:
    async with serving(echo) as (server, connect):
        bystander = await connect()
        offender = await connect()
        offender.writer.write(struct.pack(">i", 200 * 1024 * 1024))  # the prefix alone, no body
        await offender.wait_closed()
        assert server.stats.frames_too_large == 1
        offender_port = offender.writer.get_extra_info("sockname")[1]
        assert any(
            f"127.0.0.1:{offender_port}" in r.getMessage() and str(200 * 1024 * 1024) in r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING
        )
        assert answered_name(await bystander.request(metadata("still here"), 1)) == "still here"
        newcomer = await connect()
        assert (await newcomer.request(ApiVersionsRequest(), 2))[1] == ErrorCode.NONE


@pytest.mark.parametrize(
    "frame",
    [
        encode_frame(b"\xc1 is never msgpack"),
        encode_frame(msgpack.packb([1, 2, 3])),
        encode_frame(msgpack.packb({"api_key": "produce", "api_version": 0, "correlation_id": 1, "client_id": None})),
        struct.pack(">i", 0),
        struct.pack(">i", -5),
    ],
    ids=["not-msgpack", "not-a-map", "bad-header", "zero-length", "negative-length"],
)
async def test_a_frame_that_is_not_a_request_closes_the_connection(frame: bytes) -> None:
    async with serving(echo) as (server, connect):
        client = await connect()
        client.writer.write(frame)
        await client.wait_closed()
        assert server.stats.malformed_requests == 1
        await wait_until(lambda: server.stats.connections_open == 0, "the server forgets the connection")
        assert (await (await connect()).request(ApiVersionsRequest(), 1))[1] == ErrorCode.NONE


async def test_rejected_requests_are_answered_and_the_connection_stays_usable() -> None:
    header = {"api_version": 0, "client_id": None}
    async with serving(echo) as (server, connect):
        client = await connect()
        client.writer.write(encode_frame(msgpack.packb({**header, "api_key": 999, "correlation_id": 7, "body": {}})))
        client.send(ApiVersionsRequest(), 8, api_version=3)
        client.writer.write(
            encode_frame(
                msgpack.packb({**header, "api_key": ApiKey.METADATA, "correlation_id": 9, "body": {"topics": 5}})
            )
        )
        unknown, unsupported, invalid = [await client.receive() for _ in range(3)]
        assert unknown[:2] == (7, ErrorCode.INVALID_REQUEST) and "999" in unknown[2] and unknown[3] is None
        assert unsupported[:2] == (8, ErrorCode.UNSUPPORTED_VERSION)
        assert invalid[:2] == (9, ErrorCode.INVALID_REQUEST) and "topics" in invalid[2]
        assert (await client.request(ApiVersionsRequest(), 10))[:2] == (10, ErrorCode.NONE)
        assert server.stats.invalid_requests == 3


async def test_handler_failures_are_answered_with_unknown_server_error(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()

    async def handler(request: Request) -> Any:
        match name_of(request):
            case "raise":
                raise RuntimeError("boom")
            case "not a response":
                return answer("x").body
            case "wrong body":
                return Response(ApiVersionsResponse(error_code=0, api_keys=[]))
            case "delayed failure":
                failed = loop.create_future()
                failed.set_exception(OSError("disk gone"))
                return failed
            case name:
                return answer(name)

    async with serving(handler) as (server, connect):
        client = await connect()
        for correlation_id, name in enumerate(["raise", "not a response", "wrong body", "delayed failure"]):
            correlation, error, message, body = await client.request(metadata(name), correlation_id)
            assert (correlation, error, body) == (correlation_id, ErrorCode.UNKNOWN_SERVER_ERROR, None)
            assert message
        assert answered_name(await client.request(metadata("fine"), 9)) == "fine"
        assert server.stats.handler_errors == 4
        assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)


# ---------------------------------------------------------------------------------------------
# Back-pressure, idle connections, shutdown


async def test_a_full_request_channel_stops_reading_until_handlers_catch_up() -> None:
    release = asyncio.Event()

    async def handler(request: Request) -> Response:
        await release.wait()
        return answer(name_of(request))

    async with serving(handler, num_io_threads=1, queued_max_requests=2) as (server, connect):
        client = await connect()
        for correlation_id in range(10):
            client.send(metadata(str(correlation_id)), correlation_id)
        # One request in the handler, two in the channel, one read and waiting for room in the channel.
        limit = 1 + 2 + 1
        await wait_until(lambda: server.stats.requests_received == limit, "the channel fills")
        await asyncio.sleep(0.2)  # not synchronisation: give the server time to read more than it should
        assert server.stats.requests_received == limit
        release.set()
        responses = [await client.receive() for _ in range(10)]
        assert [r[0] for r in responses] == list(range(10))
        assert server.stats.requests_received == server.stats.responses_sent == 10


async def test_idle_connections_are_closed_but_busy_ones_are_not() -> None:
    never: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    async def handler(request: Request) -> Response | asyncio.Future[Response]:
        return never if name_of(request) == "never" else answer(name_of(request))

    async with serving(handler, connections_max_idle_ms=200) as (server, connect):
        started = time.monotonic()
        idle = await connect()
        waiting = await connect()
        waiting.send(metadata("never"), 1)
        chatty = await connect()

        async def chat() -> None:  # activity keeps a connection open
            while time.monotonic() - started < 0.6:
                assert answered_name(await chatty.request(metadata("hi"), 2)) == "hi"
                await asyncio.sleep(0.05)

        chatting = asyncio.create_task(chat())
        await idle.wait_closed()
        assert time.monotonic() - started >= 0.2
        await chatting
        assert server.stats.connections_closed_idle == 1
        assert server.stats.connections_open == 2  # `waiting` has a response pending, so it is not idle


async def test_stop_closes_everything_and_frees_the_port() -> None:
    tasks_before = asyncio.all_tasks()
    never: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    async def handler(request: Request) -> asyncio.Future[Response]:
        return never

    server = SocketServer(NetworkConfig(listeners=(EndPoint("PLAINTEXT", "127.0.0.1", 0),)), handler)
    [(host, port)] = (await server.start()).values()
    assert host == "127.0.0.1" and port > 0
    clients = [await WireClient.connect((host, port)) for _ in range(4)]
    clients[0].send(metadata("pending"), 1)
    await wait_until(lambda: server.stats.requests_received == 1, "the request is read")
    await server.stop()
    for client in clients:
        await client.wait_closed()
        client.close()
    assert server.stats.connections_open == 0
    assert asyncio.all_tasks() == tasks_before
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection(host, port)
    listeners = (EndPoint("PLAINTEXT", "127.0.0.1", port),)
    async with serving(echo, listeners=listeners) as (_, connect):  # a new server can listen on the port at once
        assert (await (await connect()).request(ApiVersionsRequest(), 1))[1] == ErrorCode.NONE


async def test_random_byte_streams_never_hurt_the_server() -> None:
    rng = random.Random(20240601)
    valid = encode_frame(
        encode_request(RequestHeader(api_key=3, api_version=0, correlation_id=5, client_id="x"), metadata("m"))
    )

    def stream() -> bytes:
        match rng.randrange(4):
            case 0:
                return rng.randbytes(rng.randrange(1, 64))
            case 1:
                return struct.pack(">i", rng.randrange(-(2**31), 2**31)) + rng.randbytes(rng.randrange(64))
            case 2:
                frame = bytearray(valid * rng.randrange(1, 3))
                for _ in range(rng.randrange(1, 4)):
                    frame[rng.randrange(len(frame))] = rng.randrange(256)
                return bytes(frame)
            case _:
                return encode_frame(rng.randbytes(rng.randrange(1, 64)))

    async with serving(echo, num_network_threads=2, num_io_threads=2) as (server, connect):
        for _ in range(300):
            client = await connect()
            client.writer.write(stream())
            client.writer.write_eof()
            await client.wait_closed()
        await wait_until(lambda: server.stats.connections_open == 0, "every fuzzed connection is closed")
        assert server.stats.connections_accepted == 300
        assert (await (await connect()).request(ApiVersionsRequest(), 1))[:2] == (1, ErrorCode.NONE)


# ---------------------------------------------------------------------------------------------
# The same scenarios on uvloop, the broker's event loop

UVLOOP_SCENARIOS: list[Callable[[], Coroutine[Any, Any, None]]] = [
    test_api_versions_round_trip,
    test_pipelined_requests_completed_out_of_order_are_answered_in_order,
    test_a_delayed_response_leaves_handler_tasks_free_and_keeps_its_place,
    test_no_response_sends_nothing_and_keeps_later_responses_in_order,
    test_large_request_and_response_frames,
    test_a_peer_that_does_not_read_stalls_only_its_own_connection,
    test_rejected_requests_are_answered_and_the_connection_stays_usable,
    test_a_full_request_channel_stops_reading_until_handlers_catch_up,
    test_stop_closes_everything_and_frees_the_port,
    test_random_byte_streams_never_hurt_the_server,
]


@pytest.mark.parametrize("scenario", UVLOOP_SCENARIOS, ids=[s.__name__.removeprefix("test_") for s in UVLOOP_SCENARIOS])
def test_on_uvloop(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())
