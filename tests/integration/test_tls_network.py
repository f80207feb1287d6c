"""The network layer's TLS listeners in-process over real sockets on 127.0.0.1, on uvloop (the broker's loop) and
asyncio's: the client certificate names each request's principal, connections whose handshake has not finished
never hold up the others, and a server stops with handshakes under way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import uvloop

from broker.network import NetworkConfig, Request, Response, SocketServer
from client.certificates import CertificateAuthority
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.endpoint import EndPoint
from protocol.errors import ErrorCode
from transport.connection import BrokerConnection
from transport.tls import client_context, server_context

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"uvloop": uvloop.new_event_loop,
                                                             "asyncio": asyncio.new_event_loop}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority.create()
    (directory / "ca.pem").write_bytes(ca.pem())
    (directory / "broker.pem").write_bytes(ca.issue("broker", ("127.0.0.1",)))
    (directory / "client.pem").write_bytes(ca.issue("client"))
    return directory


def run(loop: str, scenario: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        runner.run(scenario)


async def _serve(pki: Path, principals: list[str], client_auth: str, timeout_ms: int = 10000
                 ) -> tuple[SocketServer, tuple[str, int]]:
    async def handle(request: Request) -> Response:
        principals.append(request.principal)
        return Response(ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=[]))

    context = server_context({"ssl.keystore.location": str(pki / "broker.pem"), "ssl.client.auth": client_auth,
                              "ssl.truststore.location": str(pki / "ca.pem")})
    server = SocketServer(NetworkConfig(listeners=(EndPoint("SSL", "127.0.0.1", 0, "SSL"),), tls={"SSL": context},
                                        ssl_handshake_timeout_ms=timeout_ms), handle)
    return server, (await server.start())["SSL"]


async def _ask(address: tuple[str, int], settings: dict[str, str]) -> None:
    connection = BrokerConnection(*address, tls=client_context(settings), request_timeout_ms=5000)
    await connection.connect()
    try:
        await connection.request(ApiVersionsRequest())
    finally:
        await connection.close()


@pytest.mark.parametrize("loop", LOOPS)
def test_requests_carry_the_client_certificates_principal_or_anonymous(pki, loop):
    async def scenario() -> None:
        principals: list[str] = []
        server, address = await _serve(pki, principals, "requested")
        try:
            trust = {"ssl.truststore.location": str(pki / "ca.pem")}
            await _ask(address, {**trust, "ssl.keystore.location": str(pki / "client.pem")})
            await _ask(address, trust)
        finally:
            await server.stop()
        assert principals == ["User:CN=client,O=minikafka", "User:ANONYMOUS"]
        assert server.stats.tls_handshakes_failed == 0

    run(loop, scenario())


@pytest.mark.parametrize("loop", LOOPS)
def test_unfinished_handshakes_hold_up_no_other_connection_and_the_server_stops_with_them(pki, loop):
    async def scenario() -> None:
        principals: list[str] = []
        server, address = await _serve(pki, principals, "none", timeout_ms=60000)
        silent = [await asyncio.open_connection(*address) for _ in range(5)]
        try:
            async with asyncio.timeout(10):  # far below the handshake timeout the silent ones have
                await _ask(address, {"ssl.truststore.location": str(pki / "ca.pem")})
            assert principals == ["User:ANONYMOUS"]
        finally:
            async with asyncio.timeout(10):
                await server.stop()
            for _, writer in silent:
                writer.close()

    run(loop, scenario())
