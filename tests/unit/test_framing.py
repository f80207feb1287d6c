"""Length-prefixed frames: layout, limits checked from the prefix alone, incremental decoding."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.framing import (
    LENGTH_PREFIX_SIZE,
    FrameDecoder,
    FrameError,
    FrameTooLargeError,
    InvalidFrameError,
    encode_frame,
    parse_frame_length,
)


def test_encode_frame_layout() -> None:
    assert LENGTH_PREFIX_SIZE == 4
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"x" * 300)[:4] == struct.pack(">i", 300)


def test_encode_frame_refuses_empty_payload() -> None:
    with pytest.raises(InvalidFrameError):
        encode_frame(b"")


def test_parse_frame_length() -> None:
    assert parse_frame_length(b"\x00\x00\x01\x00", 256) == 256
    assert parse_frame_length(encode_frame(b"abc")[:4], 3) == 3


def test_too_large_is_refused_from_the_prefix_alone() -> None:
    with pytest.raises(FrameTooLargeError) as info:
        parse_frame_length(struct.pack(">i", 104_857_601), 104_857_600)
    assert info.value.length == 104_857_601
    assert info.value.max_frame_bytes == 104_857_600
    assert "104857601" in str(info.value)
    assert "104857600" in str(info.value)


@pytest.mark.parametrize("length", [0, -1, -(2**31)])
def test_zero_and_negative_lengths_are_invalid(length: int) -> None:
    with pytest.raises(InvalidFrameError, match=str(length)):
        parse_frame_length(struct.pack(">i", length), 1024)


def test_error_hierarchy() -> None:
    assert issubclass(FrameTooLargeError, FrameError)
    assert issubclass(InvalidFrameError, FrameError)
    assert issubclass(FrameError, ValueError)


def test_prefix_must_be_four_bytes() -> None:
    with pytest.raises(ValueError, match="4 bytes"):
        parse_frame_length(b"\x00\x00\x01", 1024)


PAYLOADS = [b"a", b"hello", bytes(range(256)), b"\x00\x00\x00\x00", b"z" * 1000]
STREAM = b"".join(encode_frame(p) for p in PAYLOADS)


def test_decoder_split_at_every_byte_boundary() -> None:
    for split in range(len(STREAM) + 1):
        decoder = FrameDecoder(max_frame_bytes=1000)
        assert decoder.feed(STREAM[:split]) + decoder.feed(STREAM[split:]) == PAYLOADS, split


def test_decoder_byte_by_byte() -> None:
    decoder = FrameDecoder(max_frame_bytes=1000)
    frames: list[bytes] = []
    for i in range(len(STREAM)):
        frames += decoder.feed(STREAM[i : i + 1])
    assert frames == PAYLOADS


@given(st.lists(st.binary(min_size=1, max_size=64), max_size=8), st.data())
def test_decoder_arbitrary_chunking(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = FrameDecoder(max_frame_bytes=64)
    frames: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        frames += decoder.feed(stream[start:end])
    assert frames == payloads


def test_decoder_refuses_oversized_frame_before_its_body() -> None:
    decoder = FrameDecoder(max_frame_bytes=100)
    assert decoder.feed(b"\x00\x00") == []
    with pytest.raises(FrameTooLargeError):
        decoder.feed(b"\x00\x65")  # 101 announced, no body sent
    with pytest.raises(FrameTooLargeError):  # the stream stays unusable
        decoder.feed(b"more")


def test_decoder_refuses_negative_length_after_good_frames() -> None:
    decoder = FrameDecoder(max_frame_bytes=100)
    assert decoder.feed(encode_frame(b"ok")) == [b"ok"]
    with pytest.raises(InvalidFrameError):
        decoder.feed(struct.pack(">i", -5))
