"""Length-prefixed frames: a 4-byte big-endian signed length, then that many payload bytes.

The length counts the payload only. A reader checks it against its maximum frame size from the
4-byte prefix alone, before reading (or buffering) the body.
"""

import struct

LENGTH_PREFIX_SIZE = 4
MAX_LENGTH = 2**31 - 1
#: How many received bytes a stream reader buffers before it stops reading its socket. Far above asyncio's
#: 64 KiB default: a frame of a few hundred KiB then arrives in a few large reads, not in 64 KiB steps each
#: pausing and resuming the socket (which made receiving big produce and fetch frames several times dearer).
STREAM_BUFFER_LIMIT = 4 * 1024 * 1024
_LENGTH = struct.Struct(">i")


class FrameError(ValueError):
    """The byte stream does not hold a valid frame; the connection cannot be trusted any more."""


class FrameTooLargeError(FrameError):
    """The length prefix announces more bytes than the reader accepts."""

    def __init__(self, length: int, max_frame_bytes: int) -> None:
        super().__init__(f"frame of {length} bytes exceeds the maximum of {max_frame_bytes} bytes")
        self.length = length
        self.max_frame_bytes = max_frame_bytes


class InvalidFrameError(FrameError):
    """The length prefix is zero or negative."""


def encode_frame(payload: bytes) -> bytes:
    """The frame carrying `payload`: its length prefix followed by the payload."""
    if not 0 < len(payload) <= MAX_LENGTH:
        raise InvalidFrameError(f"frame payload must be 1..{MAX_LENGTH} bytes, got {len(payload)}")
    return _LENGTH.pack(len(payload)) + payload


def parse_frame_length(prefix: bytes, max_frame_bytes: int) -> int:
    """The payload length announced by a 4-byte prefix, refused if not in 1..max_frame_bytes."""
    if len(prefix) != LENGTH_PREFIX_SIZE:
        raise ValueError(f"a length prefix is {LENGTH_PREFIX_SIZE} bytes, got {len(prefix)}")
    (length,) = _LENGTH.unpack(prefix)
    if length <= 0:
        raise InvalidFrameError(f"invalid frame length {length}")
    if length > max_frame_bytes:
        raise FrameTooLargeError(length, max_frame_bytes)
    return length


class FrameDecoder:
    """Splits a byte stream fed in arbitrary chunks into frame payloads.

    An oversized frame is refused as soon as its prefix has arrived. A FrameError means the stream
    is unusable: frames completed in the same feed are dropped, every further feed raises again,
    and the connection should be closed.
    """

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the payloads of the frames completed by them, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        pos = 0
        end = len(buffer)
        while end - pos >= LENGTH_PREFIX_SIZE:
            body_start = pos + LENGTH_PREFIX_SIZE
            length = parse_frame_length(buffer[pos:body_start], self.max_frame_bytes)
            if end - body_start < length:
                break
            pos = body_start + length
            frames.append(bytes(buffer[body_start:pos]))
        del buffer[:pos]
        return frames
