"""BrokerConnection over real sockets on 127.0.0.1, against a stand-in broker written here: responses matched by
correlation id in any order, per-request timeouts, failure of everything pending on disconnect, acks=0 sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgpack
import pytest

from protocol.apis.metadata import MetadataRequest, MetadataResponse, MetadataTopic
from protocol.apis.produce import ProducePartition, ProduceRequest
from protocol.apis.shapes import Topic
from protocol.envelope import MalformedResponseError, RequestHeader, decode_request, encode_response
from protocol.errors import ErrorCode, KafkaError
from protocol.framing import encode_frame
from transport.connection import BrokerConnection, KafkaConnectionError, RequestTimedOutError

TIMEOUT = 5.0


class Peer:
    """The broker side of one accepted connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read_request(self) -> tuple[RequestHeader, Any]:
        length = int.from_bytes(await self.reader.readexactly(4), "big")
        return decode_request(await self.reader.readexactly(length))

    def reply(self, header: RequestHeader, body: Any, error: ErrorCode = ErrorCode.NONE) -> None:
        message = "refused" if error else None
        self.writer.write(encode_frame(encode_response(header.correlation_id, body, error, message)))

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)


Handler = Callable[[Peer], Awaitable[None]]


@asynccontextmanager
async def broker(handler: Handler, **options: Any) -> AsyncIterator[BrokerConnection]:
    """A stand-in broker running `handler` per connection, and a connected BrokerConnection to it."""
    peers: list[asyncio.Task[None]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peers.append(task)
        try:
            await handler(Peer(reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = BrokerConnection("127.0.0.1", port, **options)
    await connection.connect()
    try:
        yield connection
    finally:
        await connection.close()
        for task in peers:
            task.cancel()
        server.close()
        await server.wait_closed()


def metadata(topic: str) -> MetadataRequest:
    return MetadataRequest(topics=[topic])


def answer(request: MetadataRequest) -> MetadataResponse:
    """Echo the requested topic name, so a test can see which request a response answered."""
    name = (request.topics or ["?"])[0]
    return MetadataResponse(brokers=[], controller_id=1, topics=[MetadataTopic(error_code=0, name=name, partitions=[])])


async def echo(peer: Peer) -> None:
    while True:
        header, body = await peer.read_request()
        peer.reply(header, answer(body))


async def test_a_request_gets_its_response_body():
    async with broker(echo) as connection:
        response = await asyncio.wait_for(connection.request(metadata("a")), TIMEOUT)
        assert isinstance(response, MetadataResponse)
        assert response.topics[0].name == "a"
        assert connection.in_flight == 0


async def test_responses_in_reverse_order_reach_their_requests():
    async def reverse(peer: Peer) -> None:
        requests = [await peer.read_request() for _ in range(3)]
        for header, body in reversed(requests):
            peer.reply(header, answer(body))
            await peer.writer.drain()
        await echo(peer)

    async with broker(reverse) as connection:
        names = ["first", "second", "third"]
        responses = await asyncio.wait_for(asyncio.gather(*(connection.request(metadata(n)) for n in names)), TIMEOUT)
        assert [r.topics[0].name for r in responses] == names


async def test_many_pipelined_requests_are_matched():
    async with broker(echo) as connection:
        names = [f"t{i}" for i in range(200)]
        responses = await asyncio.wait_for(asyncio.gather(*(connection.request(metadata(n)) for n in names)), TIMEOUT)
        assert [r.topics[0].name for r in responses] == names


async def test_a_timeout_fails_only_that_request():
    async def ignore_slow(peer: Peer) -> None:
        while True:
            header, body = await peer.read_request()
            if body.topics != ["slow"]:
                peer.reply(header, answer(body))

    async with broker(ignore_slow, request_timeout_ms=200) as connection:
        slow = asyncio.ensure_future(connection.request(metadata("slow")))
        fast = await asyncio.wait_for(connection.request(metadata("fast")), TIMEOUT)
        assert fast.topics[0].name == "fast"
        with pytest.raises(RequestTimedOutError, match="within 200 ms"):
            await asyncio.wait_for(slow, TIMEOUT)
        assert isinstance(RequestTimedOutError("x"), KafkaConnectionError)
        assert not connection.closed
        after = await asyncio.wait_for(connection.request(metadata("after")), TIMEOUT)
        assert after.topics[0].name == "after"


async def test_a_per_request_timeout_overrides_the_default():
    async def silent(peer: Peer) -> None:
        while True:
            await peer.read_request()

    async with broker(silent, request_timeout_ms=60000) as connection:
        with pytest.raises(RequestTimedOutError):
            await asyncio.wait_for(connection.request(metadata("x"), timeout_ms=50), TIMEOUT)


async def test_a_late_response_to_a_timed_out_request_is_dropped():
    release = asyncio.Event()

    async def late(peer: Peer) -> None:
        header, body = await peer.read_request()
        await release.wait()
        peer.reply(header, answer(body))
        await echo(peer)

    async with broker(late, request_timeout_ms=100) as connection:
        with pytest.raises(RequestTimedOutError):
            await asyncio.wait_for(connection.request(metadata("late")), TIMEOUT)
        release.set()
        response = await asyncio.wait_for(connection.request(metadata("next")), TIMEOUT)
        assert response.topics[0].name == "next"


async def test_a_disconnect_fails_every_pending_request():
    async def hang_up(peer: Peer) -> None:
        for _ in range(3):
            await peer.read_request()
        peer.writer.close()

    async with broker(hang_up) as connection:
        pending = [asyncio.ensure_future(connection.request(metadata(f"t{i}"))) for i in range(3)]
        results = await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), TIMEOUT)
        assert all(isinstance(r, KafkaConnectionError) and "lost" in str(r) for r in results), results
        assert connection.closed
        with pytest.raises(KafkaConnectionError):
            await connection.request(metadata("again"))


async def test_close_fails_pending_requests():
    async def silent(peer: Peer) -> None:
        while True:
            await peer.read_request()

    async with broker(silent) as connection:
        pending = asyncio.ensure_future(connection.request(metadata("x")))
        await asyncio.sleep(0)
        await connection.close()
        with pytest.raises(KafkaConnectionError, match="closed"):
            await asyncio.wait_for(pending, TIMEOUT)


async def test_an_oversized_response_frame_breaks_the_connection():
    async def huge(peer: Peer) -> None:
        await peer.read_request()
        peer.send_raw((10_000).to_bytes(4, "big"))

    async with broker(huge, max_frame_bytes=1000) as connection:
        with pytest.raises(KafkaConnectionError, match="exceeds the maximum"):
            await asyncio.wait_for(connection.request(metadata("x")), TIMEOUT)
        assert connection.closed


async def test_a_malformed_response_fails_only_its_request():
    async def malformed_first(peer: Peer) -> None:
        header, _ = await peer.read_request()
        envelope = {"correlation_id": header.correlation_id, "error_code": 0, "error_message": None, "body": {"x": 1}}
        peer.send_raw(encode_frame(msgpack.packb(envelope)))
        await echo(peer)

    async with broker(malformed_first) as connection:
        with pytest.raises(MalformedResponseError):
            await asyncio.wait_for(connection.request(metadata("x")), TIMEOUT)
        assert not connection.closed
        response = await asyncio.wait_for(connection.request(metadata("ok")), TIMEOUT)
        assert response.topics[0].name == "ok"


async def test_a_top_level_error_is_raised_or_returned():
    async def refuse(peer: Peer) -> None:
        while True:
            header, _ = await peer.read_request()
            peer.reply(header, None, ErrorCode.INVALID_REQUEST)

    async with broker(refuse) as connection:
        with pytest.raises(KafkaError) as raised:
            await asyncio.wait_for(connection.request(metadata("x")), TIMEOUT)
        assert raised.value.code == ErrorCode.INVALID_REQUEST
        code, message, body = await asyncio.wait_for(connection.request_with_error(metadata("x")), TIMEOUT)
        assert (code, message, body) == (ErrorCode.INVALID_REQUEST, "refused", None)


async def test_send_no_response_writes_and_later_requests_still_match():
    seen: list[tuple[int, Any]] = []

    async def record(peer: Peer) -> None:
        while True:
            header, body = await peer.read_request()
            seen.append((header.api_key, body))
            if isinstance(body, MetadataRequest):
                peer.reply(header, answer(body))

    produce = ProduceRequest(
        acks=0, timeout_ms=1000, topics=[Topic(name="t", partitions=[ProducePartition(partition=0, records=b"x")])]
    )
    async with broker(record) as connection:
        await connection.send_no_response(produce)
        await connection.send_no_response(produce)
        response = await asyncio.wait_for(connection.request(metadata("after")), TIMEOUT)
        assert response.topics[0].name == "after"
        assert [api_key for api_key, _ in seen] == [0, 0, 3]
        assert seen[0][1] == produce
        assert connection.in_flight == 0


async def test_the_header_carries_client_id_and_increasing_correlation_ids():
    headers: list[RequestHeader] = []

    async def record(peer: Peer) -> None:
        while True:
            header, body = await peer.read_request()
            headers.append(header)
            peer.reply(header, answer(body))

    async with broker(record, client_id="tester") as connection:
        for name in ("a", "b"):
            await asyncio.wait_for(connection.request(metadata(name)), TIMEOUT)
    assert [(h.api_key, h.client_id) for h in headers] == [(3, "tester"), (3, "tester")]
    assert headers[1].correlation_id == headers[0].correlation_id + 1


async def test_connect_to_a_closed_port_fails_cleanly():
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    connection = BrokerConnection("127.0.0.1", port)
    with pytest.raises(KafkaConnectionError, match="cannot connect"):
        await connection.connect()
    assert connection.closed
    with pytest.raises(KafkaConnectionError):
        await connection.request(metadata("x"))
