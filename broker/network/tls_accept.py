"""The acceptor of a TLS listener: accepts connections on its own socket and hands each over once its TLS
handshake is done. A handshake that fails or does not finish in time (a plaintext client, a silent one) ends that
connection with a log line naming why; the acceptor goes on accepting."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

from transport.frames import FrameStream
from transport.tls import peer_principal

logger = logging.getLogger(__name__)
_BACKLOG = 128
#: What OpenSSL says when the first bytes are not a TLS record (plaintext, HTTP).
_NOT_TLS = ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNEXPECTED_RECORD", "RECORD_LAYER_FAILURE")


class TlsAcceptor:
    """Listens on (host, port) (an empty host: every interface, port 0: a free one); `on_secured(stream,
    principal)` takes each connection whose handshake succeeded, its principal the client certificate's
    (transport.tls.peer_principal) or None."""

    def __init__(self, listener_name: str, context: ssl.SSLContext, handshake_timeout_s: float,
                 max_frame_bytes: int, on_secured: Callable[[FrameStream, str | None], None],
                 on_failure: Callable[[], None]) -> None:
        self.listener_name = listener_name
        self._context = context
        self._timeout_s = handshake_timeout_s
        self._max_frame_bytes = max_frame_bytes
        self._on_secured = on_secured
        self._on_failure = on_failure
        self._socket: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()

    def start(self, host: str, port: int) -> tuple[str, int]:
        """Bind and start accepting; the bound (host, port)."""
        listening = socket.create_server((host, port), backlog=_BACKLOG, reuse_port=False)
        listening.setblocking(False)
        self._socket = listening
        self._accepting = asyncio.get_running_loop().create_task(self._accept(listening),
                                                                 name=f"tls acceptor {self.listener_name}")
        bound = listening.getsockname()
        return bound[0], bound[1]

    async def stop(self) -> None:
        """Stop accepting, abandon the handshakes under way and close the socket."""
        tasks = [*self._handshakes, *([self._accepting] if self._accepting else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._socket is not None:
            self._socket.close()

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                connection, _ = await loop.sock_accept(listening)
            except OSError as e:  # out of file descriptors, say: go on with the connections already open
                logger.warning("listener %s cannot accept a connection: %s", self.listener_name, e)
                await asyncio.sleep(0.1)
                continue
            task = loop.create_task(self._handshake(connection))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, connection: socket.socket) -> None:
        peer = "an unknown peer"
        with contextlib.suppress(OSError):
            host, port = connection.getpeername()[:2]
            peer = f"{host}:{port}"
        stream = FrameStream(self._max_frame_bytes)
        try:
            # the second of what it returns is the TLS layer's protocol under uvloop, the stream under asyncio
            transport, _ = await asyncio.get_running_loop().connect_accepted_socket(
                lambda: stream, connection, ssl=self._context, ssl_handshake_timeout=self._timeout_s)
        except asyncio.CancelledError:
            connection.close()
            raise
        except Exception as e:  # whatever ends a handshake ends only this connection
            connection.close()
            self._on_failure()
            reason = str(e) or type(e).__name__
            hint = " (a plaintext client on a TLS listener?)" if any(n in reason for n in _NOT_TLS) else ""
            logger.warning("closing %s on listener %s: TLS handshake failed: %s%s", peer, self.listener_name,
                           reason, hint)
            return
        self._on_secured(stream, peer_principal(transport.get_extra_info("ssl_object")))
