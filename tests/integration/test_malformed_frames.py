"""Malformed frames do not hurt a real broker: an oversized length prefix or a body that is not a request
closes the connection; an unknown api key, an unsupported version or a body that fails validation gets an error
response with the request's correlation id on a connection that stays usable; a few hundred random byte strings
on fresh connections change nothing. After each, the same broker process (pid from cluster.json) still answers
Metadata and a produce/consume round trip works, and its server.log says what it refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import struct
from typing import Any

import msgpack
import pytest

from client.cluster import BrokerProcess, ClusterState, broker_running, load_cluster
from client.consumer import Consumer
from client.producer import Producer
from protocol.apis.api import ApiKey
from protocol.errors import ErrorCode
from protocol.framing import encode_frame
from tests.integration.clusterutil import cli, cluster_fixture, connect, metadata, server_log
from tests.polling import eventually, poll_records

cluster = cluster_fixture(brokers=1)

TOPIC = "survivor"
IO_TIMEOUT_S = 10.0
FUZZ_CONNECTIONS = 300
FUZZ_SEED = 20240603
MISSING = object()


@pytest.fixture(scope="module")
def broker(cluster: ClusterState) -> BrokerProcess:
    [broker] = cluster.brokers
    return broker


class RawConnection:
    """A plain TCP connection for bytes the client library would never send."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, broker: BrokerProcess) -> RawConnection:
        return cls(*await asyncio.open_connection(broker.host, broker.port))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def request(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Send a msgpack request envelope and return the decoded response envelope."""
        await self.send(encode_frame(msgpack.packb(envelope)))
        async with asyncio.timeout(IO_TIMEOUT_S):
            (length,) = struct.unpack(">i", await self.reader.readexactly(4))
            response = msgpack.unpackb(await self.reader.readexactly(length), raw=False)
        assert isinstance(response, dict), response
        return response

    async def closed_by_broker(self) -> bytes:
        """Read until the broker closes the connection (EOF or reset); return what it sent before."""
        received = b""
        async with asyncio.timeout(IO_TIMEOUT_S):
            try:
                while chunk := await self.reader.read(65536):
                    received += chunk
            except ConnectionResetError:
                pass
        return received

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


def envelope(api_key: int, correlation_id: int, body: Any, api_version: int = 0) -> dict[str, Any]:
    return {"api_key": api_key, "api_version": api_version, "correlation_id": correlation_id,
            "client_id": "malformed-test", "body": body}


async def assert_healthy(cluster: ClusterState, broker: BrokerProcess, tag: str) -> None:
    """The very same process runs, answers Metadata on a new connection, and round-trips a record."""
    assert load_cluster(cluster.directory).broker(broker.id).pid == broker.pid
    assert broker_running(broker), f"broker {broker.id} (pid {broker.pid}) is gone\n{server_log(broker)}"
    async with connect(broker) as connection:
        answer = await metadata(connection, [TOPIC])
        assert [b.node_id for b in answer.brokers] == [broker.id]
        assert answer.topics[0].error_code == ErrorCode.NONE
    async with Producer(broker.address, acks="all", request_timeout_ms=10_000) as producer:
        ack = await (await producer.send(TOPIC, tag.encode(), key=b"health"))
    async with Consumer(broker.address, request_timeout_ms=10_000) as consumer:
        consumer.assign([(TOPIC, 0)])
        consumer.seek((TOPIC, 0), ack.offset)
        [got] = await poll_records(consumer, 1, f"record {ack.offset} back after {tag}")
    assert (got.offset, got.key, got.value) == (ack.offset, b"health", tag.encode())


async def wait_for_log_line(broker: BrokerProcess, text: str) -> None:
    async def logged() -> bool | None:
        return True if text in broker.server_log.read_text(errors="replace") else None

    await eventually(logged, f"{text!r} in {broker.server_log}")


@pytest.fixture(scope="module")
def topic_created(cluster: ClusterState) -> None:
    """The module's topic, replication factor 1 on the only broker."""
    cli("topic", "create", TOPIC, "--partitions", "1", "--replication-factor", "1", "--dir", str(cluster.directory))


async def test_oversized_length_prefix_closes_the_connection(cluster, broker, topic_created):
    await assert_healthy(cluster, broker, "before")
    raw = await RawConnection.open(broker)
    # 200 MB announced (socket.request.max.bytes is 100 MB): refused from the prefix, before any body is read.
    await raw.send(struct.pack(">i", 200 * 1024 * 1024) + b"\x81" * 64)
    assert await raw.closed_by_broker() == b""
    await raw.close()
    await wait_for_log_line(broker, "frame of 209715200 bytes exceeds socket.request.max.bytes=104857600")
    for length in (0, -1, -(2**31)):
        raw = await RawConnection.open(broker)
        await raw.send(struct.pack(">i", length) + b"\x00" * 8)
        assert await raw.closed_by_broker() == b"", length
        await raw.close()
    await assert_healthy(cluster, broker, "oversized and non-positive lengths")


@pytest.mark.parametrize("payload", [
    pytest.param(b"\xc1" * 64, id="not-msgpack"),
    pytest.param(bytes(range(256)) * 4, id="byte-soup"),
    pytest.param(msgpack.packb([1, 2, 3]), id="not-a-map"),
    pytest.param(msgpack.packb({"hello": "world"}), id="no-header"),
    pytest.param(msgpack.packb({"api_key": "x", "api_version": 0, "correlation_id": 1, "body": {}}), id="bad-header"),
    pytest.param(msgpack.packb({"api_key": 3, "api_version": 0, "correlation_id": 2**40, "body": {}}),
                 id="correlation-id-out-of-range"),
    pytest.param(msgpack.packb({"api_key": 3, "api_version": 0, "correlation_id": 1, "body": {}}) + b"\x00",
                 id="trailing-bytes"),
])
async def test_a_frame_that_is_not_a_request_closes_the_connection(cluster, broker, topic_created, payload):
    raw = await RawConnection.open(broker)
    await raw.send(encode_frame(payload))
    assert await raw.closed_by_broker() == b""
    await raw.close()
    await assert_healthy(cluster, broker, "garbage body")


async def test_unknown_api_and_version_get_an_error_with_the_correlation_id(cluster, broker, topic_created):
    raw = await RawConnection.open(broker)
    try:
        response = await raw.request(envelope(4242, 777, {}))
        assert response["correlation_id"] == 777
        assert ErrorCode.from_code(response["error_code"]) == ErrorCode.INVALID_REQUEST
        assert "4242" in response["error_message"] and response["body"] is None

        response = await raw.request(envelope(ApiKey.METADATA, 778, {"topics": None}, api_version=9))
        assert response["correlation_id"] == 778
        assert ErrorCode.from_code(response["error_code"]) == ErrorCode.UNSUPPORTED_VERSION

        # The connection is still usable.
        response = await raw.request(envelope(ApiKey.METADATA, 779, {"topics": [TOPIC]}))
        assert (response["correlation_id"], response["error_code"]) == (779, ErrorCode.NONE)
        assert response["body"]["topics"][0]["name"] == TOPIC
    finally:
        await raw.close()
    await wait_for_log_line(broker, "unknown api key 4242")
    await assert_healthy(cluster, broker, "unknown api key")


@pytest.mark.parametrize(("api_key", "body"), [
    pytest.param(ApiKey.METADATA, {"topics": 5}, id="metadata-topics-not-a-list"),
    pytest.param(ApiKey.PRODUCE, {"acks": "all", "timeout_ms": 1000, "topics": []}, id="produce-acks-not-an-int"),
    pytest.param(ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 2**40, "topics": []}, id="produce-int-out-of-range"),
    pytest.param(ApiKey.FETCH, {"replica_id": -1, "max_wait_ms": 0}, id="fetch-missing-fields"),
    pytest.param(ApiKey.LEADER_AND_ISR, {"controller_id": 1, "controller_epoch": 99, "broker_epoch": -1,
                                         "partition_states": [{"topic": TOPIC}], "live_leaders": []},
                 id="leader-and-isr-incomplete-state"),
    pytest.param(ApiKey.METADATA, "not-a-map", id="body-not-a-map"),
    pytest.param(ApiKey.METADATA, MISSING, id="no-body"),
])
async def test_a_body_that_fails_validation_gets_invalid_request(cluster, broker, topic_created, api_key, body):
    raw = await RawConnection.open(broker)
    try:
        request = envelope(api_key, 4321, body)
        if body is MISSING:
            del request["body"]
        response = await raw.request(request)
        assert response["correlation_id"] == 4321
        assert ErrorCode.from_code(response["error_code"]) == ErrorCode.INVALID_REQUEST, response
        assert response["body"] is None and response["error_message"]
        response = await raw.request(envelope(ApiKey.API_VERSIONS, 4322, {}))
        assert (response["correlation_id"], response["error_code"]) == (4322, ErrorCode.NONE)
    finally:
        await raw.close()
    await assert_healthy(cluster, broker, f"invalid body for api {api_key}")


def fuzz_inputs(rng: random.Random, count: int) -> list[bytes]:
    """Random byte strings: raw noise, noise behind a plausible length prefix, random msgpack values, and
    request envelopes with a valid header for a read-only api and a random body."""
    safe_apis = [ApiKey.METADATA, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.API_VERSIONS, ApiKey.DESCRIBE_REPLICAS,
                 ApiKey.PRODUCE, 31337]

    def noise(n: int) -> bytes:
        return rng.randbytes(n)

    def value(depth: int = 0) -> Any:
        kind = rng.randrange(8 if depth < 3 else 5)
        return [lambda: rng.randint(-(2**63), 2**64 - 1), lambda: noise(rng.randrange(8)),
                lambda: rng.choice(["", "topics", TOPIC, "x" * 40]), lambda: None, lambda: rng.random() < 0.5,
                lambda: [value(depth + 1) for _ in range(rng.randrange(4))],
                lambda: {rng.choice(["topics", "acks", "replica_id", "partitions", "name", "k"]): value(depth + 1)
                         for _ in range(rng.randrange(4))},
                lambda: rng.random()][kind]()

    inputs = []
    for _ in range(count):
        shape = rng.randrange(5)
        if shape == 0:
            data = noise(rng.randrange(1, 200))
        elif shape == 1:
            body = noise(rng.randrange(1, 200))
            data = struct.pack(">i", len(body) + rng.choice([0, 0, 1, -1, 1000])) + body
        elif shape == 2:
            data = encode_frame(msgpack.packb(value()))
        elif shape == 3:
            data = encode_frame(msgpack.packb(
                {"api_key": rng.choice(safe_apis), "api_version": rng.choice([0, 0, 1, -1]),
                 "correlation_id": rng.randrange(2**31), "client_id": rng.choice([None, "fuzz"]), "body": value()}))
        else:
            frame = encode_frame(msgpack.packb(envelope(rng.choice(safe_apis), rng.randrange(2**31), value())))
            cut = rng.randrange(1, len(frame) + 1)
            data = frame[:cut] + noise(rng.randrange(0, 20))
        inputs.append(data)
    return inputs


async def test_random_bytes_on_fresh_connections(cluster, broker, topic_created):
    inputs = fuzz_inputs(random.Random(FUZZ_SEED), FUZZ_CONNECTIONS)
    async with connect(broker) as health:
        for i, data in enumerate(inputs):
            raw = await RawConnection.open(broker)
            try:
                await raw.send(data)
                raw.writer.write_eof()  # nothing more comes: the broker answers what it can, then sees the end
                await raw.closed_by_broker()
            except OSError:
                pass  # reset or closed by the broker while we were still writing
            finally:
                await raw.close()
            assert broker_running(broker), f"input {i} (seed {FUZZ_SEED}) killed the broker: {data!r}"
            answer = await metadata(health, [TOPIC])
            assert answer.topics[0].error_code == ErrorCode.NONE, f"after input {i}: {answer}"
    await assert_healthy(cluster, broker, "fuzzing")
    log = broker.server_log.read_text(errors="replace")
    assert "Traceback" not in log, server_log(broker, 80)
