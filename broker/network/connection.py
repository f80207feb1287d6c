"""One client connection: frames in, requests to the channel, responses out in request order."""

import asyncio
import contextlib
import logging
import struct
import time
from collections import deque

from broker.network.authenticator import AUTHENTICATION_REQUESTS, SaslAuthenticator
from broker.network.channel import RequestChannel, ResponseSlot
from broker.network.request import ANONYMOUS, CLOSE_CONNECTION, NO_RESPONSE, Request, Response, ResponseResult
from broker.network.stats import NetworkStats
from broker.network.wire import ENCODING_ERRORS, Rejection, Wire, sniff
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.envelope import MalformedRequestError, RequestHeader, RequestRejectedError
from protocol.framing import LENGTH_PREFIX_SIZE, FrameTooLargeError, InvalidFrameError
from protocol.kafka.primitives import Buffer
from protocol.sasl import MAX_TOKEN_BYTES
from transport.frames import FrameStream

logger = logging.getLogger(__name__)

_LENGTH_PREFIX = struct.Struct(">i")  # protocol.framing's prefix, packed apart so a payload is never copied
_WRITE_BATCH_BYTES = 256 * 1024  # responses ready together are written together up to this size, then drained
#: The first two bytes of a TLS ClientHello (record type handshake, version 3.x), read as a length prefix's top.
_TLS_HANDSHAKE = 0x1603
#: the largest frame read before a SASL authentication completes: a SaslAuthenticate of MAX_TOKEN_BYTES and its header
_MAX_UNAUTHENTICATED_FRAME_BYTES = MAX_TOKEN_BYTES + 4096
_FAILURE_WRITE_TIMEOUT_S = 5.0  # how long the answer to a failed authentication may take to write before closing


class Connection:
    """Reads length-prefixed requests and queues them on the request channel; a writer task sends the
    responses in request order, each as soon as it and all earlier ones are done (requests may be
    pipelined and may complete out of order).

    The first frame decides the codec (broker.network.wire): minikafka's msgpack or Kafka's protocol. A request
    that cannot be served (unknown api, unsupported version, invalid body) is answered with its error and the
    connection stays open, or, where the codec says so (Kafka's unknown apis and versions), the connection is
    closed once the responses before it are written. An oversized or non-positive frame length, a payload that
    is not a request, or end of stream closes the connection; so does a failed write, and a handler's
    CLOSE_CONNECTION.

    On a SASL listener (an `authenticator` given) the connection answers SaslHandshake and SaslAuthenticate itself
    until the authentication completes, which sets its principal; ApiVersions is served meanwhile, anything else
    closes the connection (Kafka's ILLEGAL_SASL_STATE), as does a failed authentication (once its answer is
    written) and one not complete within `authentication_timeout_s`. Frames are limited to MAX_TOKEN_BYTES until
    then.
    """

    def __init__(
        self,
        connection_id: str,
        stream: FrameStream,
        channel: RequestChannel,
        stats: NetworkStats,
        listener_name: str,
        principal: str = ANONYMOUS,
        authenticator: SaslAuthenticator | None = None,
        authentication_timeout_s: float = 10.0,
    ) -> None:
        self.id = connection_id
        self.listener_name = listener_name
        self.principal = principal  # a TLS client certificate's, or set by an authentication on the connection
        self._stream = stream
        assert stream.transport is not None
        self._transport = stream.transport
        self._channel = channel
        self._stats = stats
        self._wire: Wire | None = None
        #: (header, request object, response slot) of each request not answered yet, in arrival order.
        self._slots: deque[tuple[RequestHeader, object, ResponseSlot]] = deque()
        self._slot_added = asyncio.Event()
        self._last_active = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._writer_task: asyncio.Task[None] | None = None
        self._authenticator = authenticator
        self._authentication_timeout_s = authentication_timeout_s
        self._authentication_deadline = time.monotonic() + authentication_timeout_s
        self._max_frame_bytes = stream.max_frame_bytes
        if authenticator is not None:
            stream.max_frame_bytes = min(stream.max_frame_bytes, _MAX_UNAUTHENTICATED_FRAME_BYTES)
        #: the header of the last authentication request, which raw SASL tokens are answered under
        self._handshake_header = RequestHeader(api_key=0, api_version=0, correlation_id=0, client_id=None)
        #: the client software the peer named in its ApiVersions request (KIP-511), "name version", or ""
        self.client_software = ""

    def start(self) -> asyncio.Task[None]:
        """Start serving; the returned task ends when the connection is closed."""
        self._task = asyncio.create_task(self._run(), name=f"connection {self.id}")
        return self._task

    def close(self, reason: str) -> None:
        """Close the connection now, dropping responses not yet written."""
        if self._task is not None and not self._task.done():
            logger.debug("closing %s: %s", self.id, reason)
            self._task.cancel()

    def idle_seconds(self, now: float) -> float:
        """Seconds since the last request was received or response sent; 0 while a response is pending or
        still being written."""
        if self._slots or self._transport.get_write_buffer_size():
            return 0.0
        return now - self._last_active

    async def _run(self) -> None:
        self._writer_task = writer_task = asyncio.create_task(self._write_responses(),
                                                              name=f"connection {self.id} writer")
        writer_task.add_done_callback(self._writer_done)
        try:
            await self._read_requests()
        except BaseException:
            self._transport.abort()
            raise
        else:
            self._stream.close()
        finally:
            writer_task.cancel()
            for _, _, slot in self._slots:
                slot.cancel()
            await asyncio.wait([writer_task])

    def _writer_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        if (error := task.exception()) is not None:
            logger.error("writer of %s failed", self.id, exc_info=error)
        self.close("the response writer stopped")

    async def _read_requests(self) -> None:
        while True:
            try:
                payload = await self._read_frame()
            except TimeoutError:  # an OSError too: caught first
                logger.warning("closing %s: authentication not complete within %.0f ms", self.peer,
                               self._authentication_timeout_s * 1000)
                return
            except OSError:
                payload = None
            except FrameTooLargeError as e:
                self._stats.frames_too_large += 1
                limit = ("socket.request.max.bytes=%d" if self._authenticator is None or self._authenticator.complete
                         else "the %d bytes allowed before SASL authentication")
                hint = (" (a TLS handshake: a TLS client on a plaintext listener?)" if e.length >> 16 == _TLS_HANDSHAKE
                        else "")
                logger.warning("closing %s: frame of %d bytes exceeds " + limit + "%s", self.id, e.length,
                               e.max_frame_bytes, hint)
                return
            except InvalidFrameError as e:
                self._stats.malformed_requests += 1
                logger.warning("closing %s: %s", self.id, e)
                return
            if payload is None:
                logger.debug("%s closed by the peer", self.id)
                return
            length = len(payload)
            if self._authenticator is not None and self._authenticator.raw_tokens and not self._authenticator.complete:
                if not await self._authenticate_raw(payload):
                    return
                continue
            if self._wire is None:
                self._wire = sniff(payload)
                logger.debug("%s speaks %s", self.id, self._wire.name)
            try:
                header, body = self._wire.decode(payload)
            except MalformedRequestError as e:
                self._stats.malformed_requests += 1
                logger.warning("closing %s: malformed request of %d bytes: %s", self.peer, length, e)
                return
            except RequestRejectedError as e:
                self._stats.requests_received += 1
                self._stats.invalid_requests += 1
                rejection = self._wire.reject(e)
                logger.info("%s request %d from %s: %s", "rejecting" if rejection.payload is not None else
                            "closing the connection on", e.header.correlation_id, self.peer, e)
                self._add_slot(e.header, None).set_result(
                    rejection if rejection.payload is not None else CLOSE_CONNECTION)
                continue
            self._stats.requests_received += 1
            if isinstance(body, ApiVersionsRequest) and body.client_software_name:
                self._record_client_software(body)
            if self._authenticator is not None and not self._authenticator.complete and not isinstance(
                    body, ApiVersionsRequest):
                if not await self._authenticate(header, body):
                    return
                continue
            slot = self._add_slot(header, body)
            request = Request(header, body, self.id, LENGTH_PREFIX_SIZE + length, self.listener_name, time.monotonic(),
                              self.principal)
            await self._channel.send_request(request, slot)

    async def _read_frame(self) -> bytes | None:
        """The next frame; TimeoutError if the authentication is not complete by its deadline."""
        if self._authenticator is None or self._authenticator.complete:
            return await self._stream.read_frame()
        async with asyncio.timeout(max(0.0, self._authentication_deadline - time.monotonic())):
            return await self._stream.read_frame()

    async def _authenticate(self, header: RequestHeader, body: object) -> bool:
        """Answer an authentication request; False once the connection is to close (the answer written first)."""
        authenticator = self._authenticator
        assert authenticator is not None
        if not isinstance(body, AUTHENTICATION_REQUESTS):
            logger.warning("closing %s: %s before its SASL authentication completed (ILLEGAL_SASL_STATE)",
                           self.peer, type(body).__name__)
            return False
        raw_tokens = header.api_version == 0 and self._wire is not None and self._wire.name == "kafka"
        self._handshake_header = header
        self._add_slot(header, body).set_result(await authenticator.handle(body, raw_tokens))
        return await self._authenticated()

    async def _authenticate_raw(self, token: bytes) -> bool:
        """Answer a raw token (after Kafka's SaslHandshake v0) with a raw one; False once the connection is to
        close."""
        authenticator = self._authenticator
        assert authenticator is not None
        answer = await authenticator.handle_raw_token(token)
        if answer is not None:
            self._add_slot(self._handshake_header, None).set_result(Rejection(answer, "a raw SASL token"))
        return await self._authenticated()

    async def _authenticated(self) -> bool:
        """After an authentication step: close on a failure (once the answers before are written), take the
        principal on success; False once the connection is to close."""
        authenticator = self._authenticator
        assert authenticator is not None
        if authenticator.failed:
            logger.warning("closing %s: failed authentication on listener %s: %s", self.peer, self.listener_name,
                           authenticator.failure)
            self._add_slot(self._handshake_header, None).set_result(CLOSE_CONNECTION)
            assert self._writer_task is not None
            await asyncio.wait([self._writer_task], timeout=_FAILURE_WRITE_TIMEOUT_S)
            return False
        if authenticator.complete:
            self.principal = f"User:{authenticator.username}"
            self._stream.max_frame_bytes = self._max_frame_bytes
            logger.info("%s authenticated as %s on listener %s", self.peer, self.principal, self.listener_name)
        return True

    @property
    def peer(self) -> str:
        """The connection as logs name it: its id, and the client software it named, if any."""
        return f"{self.id} ({self.client_software})" if self.client_software else self.id

    def _record_client_software(self, body: ApiVersionsRequest) -> None:
        """Remember the software the client named (Kafka's ClientInformation of the connection)."""
        self.client_software = f"{body.client_software_name} {body.client_software_version}"
        logger.debug("%s is %s", self.id, self.client_software)

    def _add_slot(self, header: RequestHeader, body: object) -> ResponseSlot:
        slot: ResponseSlot = asyncio.get_running_loop().create_future()
        self._slots.append((header, body, slot))
        self._slot_added.set()
        self._last_active = time.monotonic()
        return slot

    async def _write_responses(self) -> None:
        slots = self._slots
        while True:
            if not slots:
                self._slot_added.clear()
                await self._slot_added.wait()
                continue
            await slots[0][2]
            buffers: list[Buffer] = []
            batch_bytes = 0
            responses = 0
            close = False
            while slots and slots[0][2].done() and batch_bytes < _WRITE_BATCH_BYTES:
                header, request, slot = slots.popleft()
                result: ResponseResult | Rejection = slot.result()
                if result is CLOSE_CONNECTION:
                    close = True
                    break
                if result is NO_RESPONSE:
                    continue
                payload = [result.payload] if isinstance(result, Rejection) else self._encode(header, request, result)
                size = sum(len(part) for part in payload)
                buffers.append(_LENGTH_PREFIX.pack(size))
                buffers += payload
                batch_bytes += size
                responses += 1
            if self._transport.is_closing():
                return
            if buffers:
                try:
                    self._stream.writelines(buffers)
                    await self._stream.drain()
                except OSError as e:
                    logger.debug("writing to %s failed: %s", self.id, e)
                    return
                self._stats.responses_sent += responses
                self._last_active = time.monotonic()
            if close:
                logger.info("closing %s as its codec or a handler asked", self.id)
                with contextlib.suppress(OSError):  # first let what was answered before it reach the socket
                    self._transport.set_write_buffer_limits(0)
                    await self._stream.drain()
                return

    def _encode(self, header: RequestHeader, request: object, response: Response) -> list[Buffer]:
        """The response payload; one that does not fit the api's declaration becomes UNKNOWN_SERVER_ERROR."""
        assert self._wire is not None
        try:
            return self._wire.encode(header, request, response)
        except ENCODING_ERRORS as e:
            self._stats.handler_errors += 1
            logger.exception("cannot encode the response to request %d from %s", header.correlation_id, self.id)
            return self._wire.encode_failure(header, request, f"cannot encode the response: {e}")
