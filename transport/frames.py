"""Length-prefixed frames over an asyncio transport, received without copies: the broker's connections and the
client's BrokerConnection both read and write through a FrameStream.

asyncio's StreamReader copies every received byte three times before a frame reaches its reader (the event loop's
read buffer into a bytes object, that into the reader's buffer, the frame out of it again). A FrameStream is a
BufferedProtocol: the socket is read straight into its buffers. Frames up to half of the receive buffer are read
in batches and cut out of it (one copy of a small frame); a larger frame gets a bytearray of its own as soon as its
length prefix is seen, and the socket is read straight into it: the record batches of a produce request or a
fetch response are never copied on the way in, and arrive writable (a leader stamps offsets into them in place).

A length prefix over the maximum frame size (or not positive) ends reading at once, before the payload is read:
the frames before it are still delivered, then read_frame raises the FrameError. Reading pauses while more than
`max_buffered_bytes` of received frames wait for their reader (back-pressure), and resumes once it takes them.
"""

from __future__ import annotations

import asyncio
import collections
import struct
from collections.abc import Callable, Iterable

from protocol.framing import LENGTH_PREFIX_SIZE, STREAM_BUFFER_LIMIT, FrameError, parse_frame_length

Frame = bytes | bytearray
_LENGTH = struct.Struct(">i")
#: The buffer small frames are received in, one per connection (a read of the socket fills at most this much).
RECEIVE_BUFFER_BYTES = 64 * 1024
#: Frames longer than this are received into a buffer of their own.
DIRECT_FRAME_BYTES = RECEIVE_BUFFER_BYTES // 2


class FrameStream(asyncio.BufferedProtocol):
    """One connection's frames in (read_frame) and buffers out (write, writelines, drain), with flow control both
    ways. Made by the event loop (create_server, create_connection) from a factory; `on_connected` is called with
    it once its transport is there (a server's way to take the connection over)."""

    def __init__(self, max_frame_bytes: int, max_buffered_bytes: int = STREAM_BUFFER_LIMIT,
                 on_connected: Callable[[FrameStream], None] | None = None) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._on_connected = on_connected
        self._max_buffered = max_buffered_bytes
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray(RECEIVE_BUFFER_BYTES)
        self._view = memoryview(self._buffer)
        self._start = 0  # received bytes not yet cut into frames are self._buffer[_start:_end]
        self._end = 0
        self._frame: bytearray | None = None  # a large frame being received into its own buffer
        self._frame_view: memoryview | None = None
        self._filled = 0
        self._frames: collections.deque[Frame] = collections.deque()
        self._buffered = 0  # bytes of the frames in _frames
        self._error: BaseException | None = None  # a bad length prefix or a lost connection, after the frames
        self._eof = False
        self._reading_paused = False
        self._reader: asyncio.Future[None] | None = None
        self._writing_paused = False
        self._drainers: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lost = False
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # -- the event loop's side ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is not an asyncio.Transport
        if self._on_connected is not None:
            self._on_connected(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame_view is not None:
            return self._frame_view[self._filled:]
        if self._start == self._end:
            self._start = self._end = 0
        elif len(self._buffer) - self._end < DIRECT_FRAME_BYTES:  # move the partial frame to the front
            pending = self._end - self._start
            self._buffer[:pending] = bytes(self._view[self._start:self._end])
            self._start, self._end = 0, pending
        return self._view[self._end:]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                frame, self._frame, self._frame_view = self._frame, None, None
                self._deliver(frame)
            return
        self._end += nbytes
        self._cut_frames()

    def _cut_frames(self) -> None:
        """Cut the whole frames out of the receive buffer; start receiving a large one into its own buffer."""
        buffer, start, end, max_frame_bytes = self._buffer, self._start, self._end, self.max_frame_bytes
        while end - start >= LENGTH_PREFIX_SIZE and self._error is None:
            length = _LENGTH.unpack_from(buffer, start)[0]
            if not 0 < length <= max_frame_bytes:
                try:
                    parse_frame_length(buffer[start:start + LENGTH_PREFIX_SIZE], max_frame_bytes)
                except FrameError as e:
                    self._fail(e)
                if self.transport is not None:
                    self.transport.pause_reading()
                break
            body = start + LENGTH_PREFIX_SIZE
            if length > DIRECT_FRAME_BYTES:
                frame = bytearray(length)
                received = min(end - body, length)
                frame[:received] = self._view[body:body + received]
                start = body + received
                if received == length:
                    self._deliver(frame)
                    continue
                self._frame, self._frame_view, self._filled = frame, memoryview(frame), received
                break
            if end - body < length:
                break
            self._deliver(bytes(self._view[body:body + length]))
            start = body + length
        self._start = start

    def _deliver(self, frame: Frame) -> None:
        self._frames.append(frame)
        self._buffered += len(frame)
        if self._buffered > self._max_buffered and not self._reading_paused and self.transport is not None:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._wake_reader()

    def _wake_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    def eof_received(self) -> bool:
        self._eof = True
        self._wake_reader()
        # keep the transport open for the responses still to write (the reader closes it); TLS cannot half-close
        return self.transport is None or self.transport.get_extra_info("ssl_object") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._eof = True
        if exc is not None:
            self._fail(ConnectionResetError(f"connection lost: {exc}"))
        self._wake_reader()
        error = ConnectionResetError("connection lost") if exc is None else exc
        while self._drainers:
            waiter = self._drainers.popleft()
            if not waiter.done():
                waiter.set_exception(error)
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        while self._drainers:
            waiter = self._drainers.popleft()
            if not waiter.done():
                waiter.set_result(None)

    # -- the reader's side --------------------------------------------------------------------

    async def read_frame(self) -> Frame | None:
        """The next frame's payload (a bytearray of its own for a large one, else bytes); None at the end of the
        stream. Raises FrameTooLargeError or InvalidFrameError for a bad length prefix (reading stopped there),
        ConnectionError when the connection was lost."""
        while not self._frames:
            if self._error is not None:
                raise self._error
            if self._eof:
                return None
            self._reader = asyncio.get_running_loop().create_future()
            try:
                await self._reader
            finally:
                self._reader = None
        frame = self._frames.popleft()
        self._buffered -= len(frame)
        if self._reading_paused and self._buffered <= self._max_buffered // 2 and not self._lost:
            self._reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        return frame

    # -- the writer's side --------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def writelines(self, buffers: Iterable[bytes | bytearray | memoryview]) -> None:
        assert self.transport is not None
        self.transport.writelines(buffers)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark; ConnectionError once the
        connection is lost."""
        if self._lost:
            raise ConnectionResetError("connection lost")
        if not self._writing_paused:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._drainers.append(waiter)
        await waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def wait_closed(self) -> None:
        """Wait until the connection is closed and lost."""
        await asyncio.shield(self._closed)

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default if self.transport is None else self.transport.get_extra_info(name, default)
