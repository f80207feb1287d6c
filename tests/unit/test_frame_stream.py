"""FrameStream: frames cut out of socket reads of any size, large ones received into buffers of their own, bad
length prefixes refused before the payload, back-pressure on reading, flow control on writing."""

from __future__ import annotations

import asyncio
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.framing import FrameTooLargeError, InvalidFrameError, encode_frame
from transport.frames import DIRECT_FRAME_BYTES, FrameStream


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True
        self.closed = False
        self.written: list[bytes] = []

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 1234) if name == "peername" else default


def receive(stream: FrameStream, data: bytes, chunks: list[int]) -> None:
    """Feed `data` as the event loop would: into the buffers the stream hands out, in reads of the given sizes
    (each at most what the buffer offered)."""
    position, sizes = 0, iter(chunks)
    while position < len(data):
        buffer = stream.get_buffer(-1)
        size = min(next(sizes, len(data)), len(buffer), len(data) - position)
        assert size > 0
        buffer[:size] = data[position:position + size]
        stream.buffer_updated(size)
        position += size


async def read_all(stream: FrameStream) -> list[bytes]:
    frames = []
    while (frame := await stream.read_frame()) is not None:
        frames.append(bytes(frame))
    return frames


def new_stream(max_frame_bytes: int = 10 * 1024 * 1024, **kwargs: object) -> tuple[FrameStream, FakeTransport]:
    stream = FrameStream(max_frame_bytes, **kwargs)  # type: ignore[arg-type]
    transport = FakeTransport()
    stream.connection_made(transport)
    return stream, transport


payloads = st.lists(st.one_of(st.binary(min_size=1, max_size=300),
                              st.integers(DIRECT_FRAME_BYTES - 2, DIRECT_FRAME_BYTES + 3000).map(
                                  lambda n: bytes(range(256)) * (n // 256) + b"x" * (n % 256))),
                    max_size=6)


@settings(max_examples=60, deadline=None)
@given(payloads, st.lists(st.integers(1, 70_000), max_size=40))
def test_frames_survive_any_read_sizes(frames: list[bytes], chunks: list[int]) -> None:
    async def scenario() -> list[bytes]:
        stream, _ = new_stream()
        receive(stream, b"".join(encode_frame(f) for f in frames), chunks)
        stream.eof_received()
        return await read_all(stream)

    assert asyncio.run(scenario()) == frames


def test_a_large_frame_arrives_in_a_writable_buffer_of_its_own() -> None:
    async def scenario() -> None:
        stream, _ = new_stream()
        large = b"L" * (DIRECT_FRAME_BYTES + 1)
        receive(stream, encode_frame(b"small") + encode_frame(large) + encode_frame(b"after"), [100, 70_000])
        first, second, third = [await stream.read_frame() for _ in range(3)]
        assert (first, second, third) == (b"small", large, b"after")
        assert isinstance(second, bytearray)

    asyncio.run(scenario())


@pytest.mark.parametrize(("length", "error"), [(101, FrameTooLargeError), (0, InvalidFrameError),
                                               (-5, InvalidFrameError)])
def test_a_bad_length_prefix_stops_reading_after_the_frames_before_it(length: int, error: type) -> None:
    async def scenario() -> None:
        stream, transport = new_stream(max_frame_bytes=100)
        receive(stream, encode_frame(b"ok") + struct.pack(">i", length) + b"rest", [])
        assert await stream.read_frame() == b"ok"
        with pytest.raises(error):
            await stream.read_frame()
        assert not transport.reading

    asyncio.run(scenario())


def test_reading_pauses_while_frames_wait_and_resumes_once_they_are_taken() -> None:
    async def scenario() -> None:
        stream, transport = new_stream(max_buffered_bytes=1000)
        receive(stream, encode_frame(b"a" * 600) * 2, [])
        assert not transport.reading
        await stream.read_frame()
        assert not transport.reading  # 600 bytes still wait: above half the limit
        await stream.read_frame()
        assert transport.reading

    asyncio.run(scenario())


def test_a_reader_waits_for_the_frame_and_sees_the_end() -> None:
    async def scenario() -> None:
        stream, _ = new_stream()
        reading = asyncio.ensure_future(stream.read_frame())
        await asyncio.sleep(0)
        assert not reading.done()
        receive(stream, encode_frame(b"late"), [])
        assert await reading == b"late"
        ending = asyncio.ensure_future(stream.read_frame())
        await asyncio.sleep(0)
        stream.connection_lost(None)
        assert await ending is None

    asyncio.run(scenario())


def test_a_lost_connection_fails_reads_and_drains() -> None:
    async def scenario() -> None:
        stream, _ = new_stream()
        stream.pause_writing()
        draining = asyncio.ensure_future(stream.drain())
        await asyncio.sleep(0)
        assert not draining.done()
        stream.connection_lost(OSError("reset"))
        with pytest.raises(OSError):
            await draining
        with pytest.raises(ConnectionError):
            await stream.read_frame()
        await stream.wait_closed()

    asyncio.run(scenario())


def test_drain_waits_while_writing_is_paused() -> None:
    async def scenario() -> None:
        stream, transport = new_stream()
        stream.writelines([b"a", b"b"])
        await stream.drain()
        stream.pause_writing()
        draining = asyncio.ensure_future(stream.drain())
        await asyncio.sleep(0)
        assert not draining.done()
        stream.resume_writing()
        await draining
        assert b"".join(transport.written) == b"ab"

    asyncio.run(scenario())
