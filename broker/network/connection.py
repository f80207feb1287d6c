"""One client connection: frames in, requests to the channel, responses out in request order."""

import asyncio
import logging
import struct
import time
from collections import deque

from broker.network.channel import RequestChannel, ResponseSlot
from broker.network.request import NO_RESPONSE, Request, Response
from broker.network.stats import NetworkStats
from protocol.errors import ErrorCode
from protocol.framing import LENGTH_PREFIX_SIZE, FrameTooLargeError, InvalidFrameError, parse_frame_length
from protocol.messages import (
    APIS,
    MalformedRequestError,
    RequestHeader,
    RequestRejectedError,
    decode_request,
    encode_response,
)

logger = logging.getLogger(__name__)

_LENGTH_PREFIX = struct.Struct(">i")  # protocol.framing's prefix, packed apart so a payload is never copied
_WRITE_BATCH_BYTES = 256 * 1024  # responses ready together are written together up to this size, then drained


class Connection:
    """Reads length-prefixed requests and queues them on the request channel; a writer task sends the
    responses in request order, each as soon as it and all earlier ones are done (requests may be
    pipelined and may complete out of order).

    A request that cannot be served (unknown api, unsupported version, invalid body) is answered with
    its error and the connection stays open. An oversized or non-positive frame length, a payload that
    is not a request, or end of stream closes the connection; so does a failed write.
    """

    def __init__(
        self,
        connection_id: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        channel: RequestChannel,
        max_frame_bytes: int,
        stats: NetworkStats,
        listener_name: str,
    ) -> None:
        self.id = connection_id
        self.listener_name = listener_name
        self._reader = reader
        self._writer = writer
        self._channel = channel
        self._max_frame_bytes = max_frame_bytes
        self._stats = stats
        self._slots: deque[tuple[RequestHeader, ResponseSlot]] = deque()
        self._slot_added = asyncio.Event()
        self._last_active = time.monotonic()
        self._task: asyncio.Task[None] | None = None

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
        if self._slots or self._writer.transport.get_write_buffer_size():
            return 0.0
        return now - self._last_active

    async def _run(self) -> None:
        writer_task = asyncio.create_task(self._write_responses(), name=f"connection {self.id} writer")
        writer_task.add_done_callback(self._writer_done)
        try:
            await self._read_requests()
        except BaseException:
            self._writer.transport.abort()
            raise
        else:
            self._writer.close()
        finally:
            writer_task.cancel()
            for _, slot in self._slots:
                slot.cancel()
            await asyncio.wait([writer_task])

    def _writer_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        if (error := task.exception()) is not None:
            logger.error("writer of %s failed", self.id, exc_info=error)
        self.close("writing failed")

    async def _read_requests(self) -> None:
        reader = self._reader
        while True:
            try:
                length = parse_frame_length(await reader.readexactly(LENGTH_PREFIX_SIZE), self._max_frame_bytes)
                payload = await reader.readexactly(length)
            except (asyncio.IncompleteReadError, OSError):
                logger.debug("%s closed by the peer", self.id)
                return
            except FrameTooLargeError as e:
                self._stats.frames_too_large += 1
                logger.warning(
                    "closing %s: frame of %d bytes exceeds socket.request.max.bytes=%d",
                    self.id,
                    e.length,
                    e.max_frame_bytes,
                )
                return
            except InvalidFrameError as e:
                self._stats.malformed_requests += 1
                logger.warning("closing %s: %s", self.id, e)
                return
            try:
                header, body = decode_request(payload)
            except MalformedRequestError as e:
                self._stats.malformed_requests += 1
                logger.warning("closing %s: malformed request of %d bytes: %s", self.id, length, e)
                return
            except RequestRejectedError as e:
                self._stats.requests_received += 1
                self._stats.invalid_requests += 1
                logger.info("rejecting request %d from %s: %s", e.header.correlation_id, self.id, e)
                self._add_slot(e.header).set_result(Response(None, e.error_code, str(e)))
                continue
            self._stats.requests_received += 1
            slot = self._add_slot(header)
            request = Request(header, body, self.id, LENGTH_PREFIX_SIZE + length, self.listener_name)
            await self._channel.send_request(request, slot)

    def _add_slot(self, header: RequestHeader) -> ResponseSlot:
        slot: ResponseSlot = asyncio.get_running_loop().create_future()
        self._slots.append((header, slot))
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
            await slots[0][1]
            buffers: list[bytes] = []
            batch_bytes = 0
            while slots and slots[0][1].done() and batch_bytes < _WRITE_BATCH_BYTES:
                header, slot = slots.popleft()
                response = slot.result()
                if response is not NO_RESPONSE:
                    payload = self._encode(header, response)
                    buffers += (_LENGTH_PREFIX.pack(len(payload)), payload)
                    batch_bytes += len(payload)
            if not buffers:
                continue
            if self._writer.transport.is_closing():
                return
            try:
                self._writer.writelines(buffers)
                await self._writer.drain()
            except OSError as e:
                logger.debug("writing to %s failed: %s", self.id, e)
                return
            self._stats.responses_sent += len(buffers) // 2
            self._last_active = time.monotonic()

    def _encode(self, header: RequestHeader, response: Response) -> bytes:
        """The response payload; a response that does not fit the api's declaration becomes UNKNOWN_SERVER_ERROR."""
        try:
            body = response.body
            api = APIS.get(header.api_key)
            if body is not None and (api is None or type(body) is not api.response):
                raise TypeError(f"{type(body).__name__} is not the response of api key {header.api_key}")
            return encode_response(header.correlation_id, body, response.error_code, response.error_message)
        except (TypeError, ValueError) as e:
            self._stats.handler_errors += 1
            logger.exception("cannot encode the response to request %d from %s", header.correlation_id, self.id)
            return encode_response(
                header.correlation_id, None, ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot encode the response: {e}"
            )
