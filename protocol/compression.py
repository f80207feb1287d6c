"""The compression codecs of a RecordBatch v2 payload (its records), as Kafka's clients and brokers write them.

- gzip: one gzip member (level 6, Java's default).
- snappy: Kafka's xerial framing when writing (the 16-byte header ``\\x82SNAPPY\\x00``, version 1, compatible
  version 1, then blocks of at most 32 KiB, each its compressed length as an int32 and raw snappy), as the Java
  client (snappy-java's SnappyOutputStream) writes; reading takes xerial framing or plain (raw) snappy, which
  librdkafka writes.
- lz4: the standard LZ4 frame (magic 0x184D2204, a correct header checksum) with independent blocks of 64 KiB, as
  Kafka writes for magic 2. Kafka's reader takes independent blocks only, and so does this one. (The broken header
  checksum of Kafka's old clients belongs to magic 0 and 1, which minikafka does not read.)
- zstd: one zstd frame (level 3, Kafka's default).

All four come from cramjam (Rust bindings with no system library). Decompressed payloads are bounded by
MAX_DECOMPRESSED_BYTES: a payload that would grow beyond it (a decompression bomb) is refused as one that does not
decompress, before the memory is taken.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
#: Kafka's codec names (the producer's compression.type; the batch attributes' codec ids).
CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODECS: dict[str, int] = {name: codec for codec, name in CODEC_NAMES.items()}

#: The most bytes a payload may decompress to.
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

_Buffer = bytes | bytearray | memoryview

_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_BYTES = 32 * 1024
_INT32 = struct.Struct(">i")

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_VERSION_MASK, _LZ4_VERSION_1 = 0xC0, 0x40
_LZ4_INDEPENDENT_BLOCKS = 0x20
_LZ4_RESERVED = 0x03

#: A first guess of how much larger a payload decompresses (a larger one is decompressed once more, with room for
#: MAX_DECOMPRESSED_BYTES).
_GUESS_RATIO = 8
_GUESS_SLACK = 64 * 1024


class CompressionError(ValueError):
    """A payload that does not decompress with its codec (or would decompress beyond MAX_DECOMPRESSED_BYTES)."""


def codec_of(name: str) -> int:
    """The codec id of a Kafka codec name (``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``); ValueError if unknown."""
    try:
        return CODECS[name.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown compression type {name!r} (one of {', '.join(CODECS)})") from None


def compress(codec: int, data: _Buffer) -> bytes:
    """``data`` compressed with ``codec`` (1 to 4) as Kafka's clients write it."""
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data, level=_GZIP_LEVEL))
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        compressor = cramjam.lz4.Compressor(level=0, content_checksum=False, block_linked=False)
        compressor.compress(data if isinstance(data, bytes) else bytes(data))  # it takes bytes only
        return bytes(compressor.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise ValueError(f"no compression codec {codec}")


def decompress(codec: int, payload: _Buffer, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The payload of a batch compressed with ``codec`` (1 to 4), decompressed; CompressionError if it does not
    decompress to at most ``limit`` bytes."""
    if codec == GZIP:
        return _bounded(cramjam.gzip.decompress_into, payload, limit, "gzip")
    if codec == SNAPPY:
        return _snappy_decompress(payload, limit)
    if codec == LZ4:
        _check_lz4_frame(payload)
        return _bounded(cramjam.lz4.decompress_into, payload, limit, "lz4")
    if codec == ZSTD:
        return _bounded(cramjam.zstd.decompress_into, payload, limit, "zstd")
    raise ValueError(f"no compression codec {codec}")


def _bounded(decompress_into: Callable[[_Buffer, _Buffer], int], payload: _Buffer, limit: int, name: str) -> bytes:
    """Decompress into a buffer of a guessed size; if that fails (too small, or a payload that does not
    decompress), once more into a lazily mapped buffer of ``limit`` bytes, whose pages are taken only as written."""
    out = bytearray(min(limit, _GUESS_RATIO * len(payload) + _GUESS_SLACK))
    try:
        return bytes(memoryview(out)[:decompress_into(payload, out)])
    except cramjam.DecompressionError:
        pass
    with mmap.mmap(-1, max(limit, 1)) as room:
        try:
            size = decompress_into(payload, room)
        except cramjam.DecompressionError as e:
            raise CompressionError(f"the {name} payload does not decompress to at most {limit} bytes: {e}") from None
        return room[:size]


def _xerial_compress(data: _Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK_BYTES]))
        parts += (_INT32.pack(len(block)), block)
    return b"".join(parts)


def _snappy_decompress(payload: _Buffer, limit: int) -> bytes:
    view = memoryview(payload)
    if not (len(view) >= len(_XERIAL_HEADER) and view[:len(_XERIAL_MAGIC)] == _XERIAL_MAGIC):
        return _snappy_raw(view, limit, limit)
    parts: list[bytes] = []
    room = limit
    position = len(_XERIAL_HEADER)
    while position < len(view):
        if position + 4 > len(view):
            raise CompressionError(f"xerial snappy block length cut short at byte {position}")
        length = _INT32.unpack_from(view, position)[0]
        position += 4
        if length < 0 or position + length > len(view):
            raise CompressionError(f"xerial snappy block of {length} bytes at byte {position} runs past the end")
        parts.append(_snappy_raw(view[position:position + length], room, limit))
        room -= len(parts[-1])
        position += length
    return b"".join(parts)


def _snappy_raw(block: _Buffer, room: int, limit: int) -> bytes:
    """A raw snappy block, which states its decompressed length first: checked against the ``room`` left under
    ``limit`` before it is decompressed."""
    try:
        if cramjam.snappy.decompress_raw_len(block) <= room:
            return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as e:
        raise CompressionError(f"the snappy payload does not decompress: {e}") from None
    raise CompressionError(f"the snappy payload decompresses to more than {limit} bytes")


def _check_lz4_frame(payload: _Buffer) -> None:
    """The frame descriptor's flags as Kafka's reader takes them: version 1, independent blocks, reserved bits 0."""
    if len(payload) < 7 or payload[:4] != _LZ4_MAGIC:
        raise CompressionError("the lz4 payload is not an LZ4 frame (no frame magic)")
    flags = payload[4]
    if flags & _LZ4_VERSION_MASK != _LZ4_VERSION_1 or flags & _LZ4_RESERVED:
        raise CompressionError(f"the lz4 frame has flags {flags:#04x}: not version 1")
    if not flags & _LZ4_INDEPENDENT_BLOCKS:
        raise CompressionError("the lz4 frame has dependent blocks, which Kafka does not read")
