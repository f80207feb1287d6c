"""One TCP connection to a broker: pipelined requests matched to responses by correlation id."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any, NamedTuple

import msgpack

from protocol.apis import API_BY_REQUEST_TYPE
from protocol.apis.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from protocol.envelope import RequestHeader, decode_response, encode_request
from protocol.errors import ErrorCode, KafkaError
from protocol.framing import FrameError, encode_frame
from protocol.sasl import SaslAuthenticationError, SaslCredentials
from protocol.sasl.client import client_exchange
from transport.frames import FrameStream

log = logging.getLogger(__name__)

_MAX_CORRELATION_ID = 2**31 - 1

Reply = tuple[ErrorCode, str | None, Any]
"""A response's top-level error code and message, and its body (None when the request was refused as a whole)."""


class _Pending(NamedTuple):
    """A request waiting for its response."""

    future: asyncio.Future[Reply]
    api_key: int
    timer: asyncio.TimerHandle


class KafkaConnectionError(Exception):
    """The request could not be completed on this connection: connect failure, lost or closed connection."""


class AuthenticationFailedError(KafkaConnectionError):
    """The broker refused the connection's SASL authentication (its message names no secret)."""


class RequestTimedOutError(KafkaConnectionError):
    """No response arrived within the request timeout (the connection itself stays usable)."""


def _peek_correlation_id(payload: bytes | bytearray) -> int | None:
    """The correlation id of a response payload, read without decoding its body where the header comes first
    (and without copying the payload: a large one is a bytearray, which io.BytesIO would copy whole)."""
    unpacker = msgpack.Unpacker(_Chunks(memoryview(payload)), raw=False, read_size=64)
    try:
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key == "correlation_id":
                value = unpacker.unpack()
                return value if type(value) is int else None
            unpacker.skip()
    except (ValueError, msgpack.UnpackException):
        return None
    return None


class _Chunks:
    """A file-like reader over a buffer, handing out copies of the small pieces asked for."""

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._position = 0

    def read(self, size: int) -> bytes:
        start = self._position
        self._position = min(len(self._view), start + size)
        return bytes(self._view[start:self._position])


class BrokerConnection:
    """A pipelined request/response connection to one broker.

    Any number of requests may be outstanding; a reader task matches each response to its request by
    correlation id, so responses may arrive in any order. A request that gets no answer within its timeout
    fails alone (a late answer is dropped); a lost connection fails every outstanding request.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "minikafka",
        request_timeout_ms: int = 30000,
        max_frame_bytes: int = 100 * 1024 * 1024,
        local_address: str | None = None,
        tls: ssl.SSLContext | None = None,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.host = host
        #: the credentials to authenticate with once connected (a SASL listener), or None
        self.sasl = sasl
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.max_frame_bytes = max_frame_bytes
        #: The local address the socket is bound to (None: the kernel chooses), so that a broker's own
        #: connections come from its own address.
        self.local_address = local_address
        #: TLS (transport.tls.client_context) or None: plaintext. The host is the name checked against the
        #: broker's certificate.
        self.tls = tls
        self._stream: FrameStream | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pending: dict[int, _Pending] = {}
        self._next_correlation_id = 0
        self._closed = False
        self._failure: KafkaConnectionError | None = None

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port})"

    @property
    def closed(self) -> bool:
        """True once the connection was closed or lost; a closed connection is not reopened."""
        return self._closed

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)

    async def connect(self) -> None:
        """Open the socket (within the request timeout) and start reading responses."""
        if self._stream is not None or self._closed:
            raise KafkaConnectionError(f"{self!r} is already {'closed' if self._closed else 'connected'}")
        local_addr = (self.local_address, 0) if self.local_address else None
        loop = asyncio.get_running_loop()
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that arrives as the
            # connection attempt ends (it returns or raises the attempt's outcome instead), which left a
            # controller's sender retrying a removed broker for ever
            async with asyncio.timeout(self.request_timeout_ms / 1000):
                _transport, self._stream = await loop.create_connection(
                    lambda: FrameStream(self.max_frame_bytes), self.host, self.port, local_addr=local_addr,
                    **({} if self.tls is None else {"ssl": self.tls, "server_hostname": self.host,
                                                    "ssl_handshake_timeout": self.request_timeout_ms / 1000}))
        except (OSError, TimeoutError) as e:
            self._closed = True
            raise KafkaConnectionError(f"cannot connect to {self.host}:{self.port}: {e or 'timed out'}") from e
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        if self.sasl is not None:
            try:
                await self._authenticate(self.sasl)
            except BaseException:
                await self.close()
                raise

    async def _authenticate(self, credentials: SaslCredentials) -> None:
        """SaslHandshake, then SaslAuthenticate with each token of the mechanism's exchange."""
        handshake = await self.request(SaslHandshakeRequest(mechanism=credentials.mechanism))
        if handshake.error_code != ErrorCode.NONE:
            raise AuthenticationFailedError(
                f"{self.host}:{self.port} refused SASL mechanism {credentials.mechanism} "
                f"({ErrorCode.from_code(handshake.error_code).name}; enabled: {', '.join(handshake.mechanisms)})")
        exchange = client_exchange(credentials)
        try:
            token = next(exchange)
            while True:
                answer = await self.request(SaslAuthenticateRequest(auth_bytes=token))
                if answer.error_code != ErrorCode.NONE:
                    raise AuthenticationFailedError(f"{self.host}:{self.port}: {answer.error_message}")
                token = exchange.send(answer.auth_bytes)
        except StopIteration:
            return
        except SaslAuthenticationError as e:
            raise AuthenticationFailedError(f"{self.host}:{self.port}: {e}") from None

    async def request(self, body: object, *, timeout_ms: int | None = None) -> Any:
        """Send a request and return the response body.

        Raises KafkaConnectionError on transport failure (RequestTimedOutError on timeout) and KafkaError if
        the broker refused the request as a whole (its top-level error code)."""
        error_code, message, response = await self.request_with_error(body, timeout_ms=timeout_ms)
        if error_code != ErrorCode.NONE:
            raise KafkaError(error_code, message)
        return response

    async def request_with_error(self, body: object, *, timeout_ms: int | None = None) -> Reply:
        """Send a request; return the response's top-level error code and message, and its body (None when
        the request was refused as a whole). Raises KafkaConnectionError on transport failure."""
        correlation_id, future = self._send(body, timeout_ms)
        try:
            await self._drain()
            return await future
        finally:
            self._forget(correlation_id)

    def send(self, body: object, *, timeout_ms: int | None = None) -> asyncio.Future[Reply]:
        """Write a request now, without waiting, and return the future of its (error code, message, body).

        The future fails with RequestTimedOutError when no response arrives within the timeout, and with
        KafkaConnectionError when the connection is lost. Raises KafkaConnectionError at once if the connection
        is closed. For callers that complete work in callbacks (the producer); others use `request`."""
        return self._send(body, timeout_ms)[1]

    async def send_no_response(self, body: object) -> None:
        """Send a request the broker does not answer (a Produce with acks=0)."""
        self._write(self._frame(body)[2])
        await self._drain()
        if self._failure is not None:
            raise self._failure

    async def close(self) -> None:
        """Close the socket and fail every outstanding request."""
        self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} was closed"))
        task, self._reader_task = self._reader_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._stream is not None:
            self._stream.close()
            with contextlib.suppress(OSError):
                await self._stream.wait_closed()

    def _frame(self, body: object) -> tuple[int, int, bytes]:
        """(correlation id, api key, frame) of a request; raises if the connection cannot send."""
        if self._failure is not None:
            raise self._failure
        if self._stream is None:
            raise KafkaConnectionError(f"{self!r} is not connected")
        api = API_BY_REQUEST_TYPE[type(body)]
        correlation_id = self._next_correlation_id
        self._next_correlation_id = 0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        header = RequestHeader(
            api_key=api.api_key, api_version=api.max_version, correlation_id=correlation_id, client_id=self.client_id
        )
        return correlation_id, api.api_key, encode_frame(encode_request(header, body))

    def _send(self, body: object, timeout_ms: int | None) -> tuple[int, asyncio.Future[Reply]]:
        """Write a request and await its response in `_pending`, with a timer that fails it on timeout."""
        correlation_id, api_key, frame = self._frame(body)
        self._write(frame)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Reply] = loop.create_future()
        timeout = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        timer = loop.call_later(timeout, self._time_out, correlation_id, api_key, timeout)
        self._pending[correlation_id] = _Pending(future, api_key, timer)
        return correlation_id, future

    def _time_out(self, correlation_id: int, api_key: int, timeout: float) -> None:
        pending = self._pending.pop(correlation_id, None)
        if pending is not None and not pending.future.done():
            pending.future.set_exception(RequestTimedOutError(
                f"no response from {self.host}:{self.port} within {timeout * 1000:.0f} ms "
                f"(api key {api_key}, correlation id {correlation_id})"
            ))

    def _forget(self, correlation_id: int) -> None:
        """Stop waiting for a response (answered, timed out, or its awaiting caller was cancelled)."""
        pending = self._pending.pop(correlation_id, None)
        if pending is not None:
            pending.timer.cancel()

    def _write(self, frame: bytes) -> None:
        assert self._stream is not None
        try:
            self._stream.write(frame)
        except (OSError, RuntimeError) as e:
            error = KafkaConnectionError(f"cannot send to {self.host}:{self.port}: {e}")
            self._fail(error)
            raise error from e

    async def _drain(self) -> None:
        """Wait while the socket's send buffer is above its high-water mark. A failure fails the connection
        (and with it every pending request)."""
        assert self._stream is not None
        try:
            await self._stream.drain()
        except (OSError, RuntimeError) as e:
            self._fail(KafkaConnectionError(f"cannot send to {self.host}:{self.port}: {e}"))

    async def _read_loop(self) -> None:
        assert self._stream is not None
        stream = self._stream
        reason: str = "closed by the broker"
        try:
            while (payload := await stream.read_frame()) is not None:
                if not self._dispatch(payload):
                    reason = "a response without a valid correlation id"
                    break
        except FrameError as e:
            reason = f"invalid frame: {e}"
        except OSError as e:
            reason = str(e)
        log.debug("connection to %s:%s lost: %s", self.host, self.port, reason)
        self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} lost: {reason}"))
        if self._stream is not None:
            self._stream.close()

    def _dispatch(self, payload: bytes | bytearray) -> bool:
        """Complete the request this response answers; False if the payload names no correlation id."""
        correlation_id = _peek_correlation_id(payload)
        if correlation_id is None:
            return False
        pending = self._pending.pop(correlation_id, None)
        if pending is None:
            log.debug("dropping a response to %s (correlation id %d, no longer awaited)", self, correlation_id)
            return True
        pending.timer.cancel()
        future = pending.future
        if future.done():
            return True
        try:
            _, error_code, message, body = decode_response(payload, pending.api_key)
        except ValueError as e:  # MalformedResponseError: only this request is affected
            future.set_exception(e)
        else:
            future.set_result((error_code, message, body))
        return True

    def _fail(self, error: KafkaConnectionError) -> None:
        """Mark the connection unusable and fail everything outstanding with `error`."""
        self._closed = True
        if self._failure is None:
            self._failure = error
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.timer.cancel()
            if not entry.future.done():
                entry.future.set_exception(error)
