"""The codecs of compressed batches: round trips, the formats other implementations write and read (xerial snappy,
plain snappy, LZ4 frames, gzip, zstd), and payloads that do not decompress."""

from __future__ import annotations

import contextlib
import gzip
import struct

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_python_codec

from protocol.compression import (
    CODEC_NAMES,
    GZIP,
    LZ4,
    MAX_DECOMPRESSED_BYTES,
    SNAPPY,
    ZSTD,
    CompressionError,
    codec_of,
    compress,
    decompress,
)

CODECS = [GZIP, SNAPPY, LZ4, ZSTD]
DATA = b"".join(b"record %d of a batch, " % i for i in range(20_000))  # about 440 KB, compressible


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec: int) -> None:
    compressed = compress(codec, DATA)
    assert len(compressed) < len(DATA) // 3
    assert decompress(codec, compressed) == DATA
    assert decompress(codec, memoryview(compressed)) == DATA
    assert decompress(codec, compress(codec, memoryview(bytearray(DATA)))) == DATA


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=100_000) | st.text(max_size=3000).map(str.encode))
def test_round_trip_of_any_bytes(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_codec_names_are_kafkas() -> None:
    assert CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    assert [codec_of(name) for name in ("none", "gzip", "snappy", "lz4", "ZSTD")] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="unknown compression type 'brotli'"):
        codec_of("brotli")
    with pytest.raises(ValueError, match="no compression codec 5"):
        compress(5, b"x")


def test_snappy_is_written_in_xerial_framing_of_32_kib_blocks() -> None:
    compressed = compress(SNAPPY, DATA)
    assert compressed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    blocks = []
    position = 16
    while position < len(compressed):
        (length,) = struct.unpack_from(">i", compressed, position)
        blocks.append(snappy.uncompress(compressed[position + 4:position + 4 + length]))
        position += 4 + length
    assert position == len(compressed)
    assert [len(block) for block in blocks[:-1]] == [32 * 1024] * (len(blocks) - 1)
    assert b"".join(blocks) == DATA
    assert kafka_python_codec.snappy_decode(compressed) == DATA


def test_snappy_is_read_in_xerial_framing_and_plain() -> None:
    assert decompress(SNAPPY, kafka_python_codec.snappy_encode(DATA, xerial_compatible=True)) == DATA
    assert decompress(SNAPPY, snappy.compress(DATA)) == DATA
    assert decompress(SNAPPY, b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)) == b""


def test_lz4_is_a_frame_of_independent_blocks_with_a_correct_header_checksum() -> None:
    compressed = compress(LZ4, DATA)
    info = lz4.frame.get_frame_info(compressed)
    assert info["block_linked"] is False
    assert info["block_size"] == 64 * 1024
    assert lz4.frame.decompress(compressed) == DATA
    assert decompress(LZ4, lz4.frame.compress(DATA, block_linked=False)) == DATA
    assert decompress(LZ4, kafka_python_codec.lz4_encode(DATA)) == DATA


def test_lz4_frames_of_dependent_blocks_are_refused_as_kafka_does() -> None:
    with pytest.raises(CompressionError, match="dependent blocks"):
        decompress(LZ4, lz4.frame.compress(DATA, block_linked=True))


def test_gzip_and_zstd_read_what_others_write() -> None:
    assert gzip.decompress(compress(GZIP, DATA)) == DATA
    assert decompress(GZIP, gzip.compress(DATA)) == DATA
    assert zstandard.ZstdDecompressor().decompressobj().decompress(compress(ZSTD, DATA)) == DATA
    assert decompress(ZSTD, zstandard.ZstdCompressor(level=3).compress(DATA)) == DATA


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_payloads_do_not_decompress(codec: int) -> None:
    compressed = compress(codec, DATA)
    for cut in (0, 1, 7, 15, 17, len(compressed) // 2, len(compressed) - 1):
        with pytest.raises(CompressionError):
            decompress(codec, compressed[:cut])


@pytest.mark.parametrize("codec", CODECS)
def test_a_payload_larger_than_the_limit_is_refused(codec: int) -> None:
    compressed = compress(codec, DATA)
    assert decompress(codec, compressed, limit=len(DATA)) == DATA
    with pytest.raises(CompressionError, match=f"{len(DATA) - 1}"):
        decompress(codec, compressed, limit=len(DATA) - 1)


def test_a_decompression_bomb_stops_at_the_limit() -> None:
    bomb = compress(ZSTD, bytes(MAX_DECOMPRESSED_BYTES + 1))
    assert len(bomb) < 20_000
    with pytest.raises(CompressionError, match="at most"):
        decompress(ZSTD, bomb)


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from(CODECS), payload=st.binary(max_size=300))
def test_random_payloads_decompress_or_raise_compression_error(codec: int, payload: bytes) -> None:
    with contextlib.suppress(CompressionError):
        decompress(codec, payload)


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(min_size=1, max_size=2000),
       flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=4))
def test_mutated_payloads_decompress_or_raise_compression_error(codec: int, data: bytes,
                                                                flips: list[tuple[int, int]]) -> None:
    payload = bytearray(compress(codec, data))
    for position, mask in flips:
        payload[position % len(payload)] ^= mask
    with contextlib.suppress(CompressionError):
        decompress(codec, bytes(payload))
