"""The primitive fields of Kafka's "data" structs (the version-prefixed records of __consumer_offsets and the consumer
protocol's subscription and assignment), read and written as Kafka's generated classes do.

Non-flexible versions use int16-length strings, int32-length bytes and int32-count arrays (-1 for null); flexible
versions use "compact" forms (an unsigned varint holding length + 1, 0 for null) and end every struct with tagged
fields (an unsigned varint count of (tag, size, bytes) entries), which a reader skips and a writer leaves empty.
"""

from __future__ import annotations

import struct

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class DataFormatError(ValueError):
    """Bytes that do not hold the struct expected (too short, a bad length, text that is not UTF-8)."""


class FieldReader:
    """Reads fields one after another from bytes; every read raises DataFormatError past the end."""

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self._data = bytes(data)
        self.pos = pos

    def _take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self._data):
            raise DataFormatError(f"{size} bytes wanted at {self.pos}, {len(self._data) - self.pos} left")
        start = self.pos
        self.pos += size
        return self._data[start:self.pos]

    def _unpack(self, packer: struct.Struct) -> int:
        return packer.unpack(self._take(packer.size))[0]

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def int64(self) -> int:
        return self._unpack(_INT64)

    def unsigned_varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise DataFormatError("unsigned varint longer than 5 bytes")

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataFormatError(f"string is not UTF-8: {e}") from None

    def _length(self, compact: bool, wide: bool) -> int:
        """A length prefix: -1 is null; anything else below zero is an error."""
        if compact:
            length = self.unsigned_varint() - 1
        elif wide:
            length = self.int32()
        else:
            length = self.int16()
        if length < -1:
            raise DataFormatError(f"invalid length {length}")
        return length

    def nullable_string(self, compact: bool = False) -> str | None:
        length = self._length(compact, wide=False)
        return None if length == -1 else self._text(self._take(length))

    def string(self, compact: bool = False) -> str:
        value = self.nullable_string(compact)
        if value is None:
            raise DataFormatError("null where a string is required")
        return value

    def nullable_binary(self, compact: bool = False) -> bytes | None:
        length = self._length(compact, wide=True)
        return None if length == -1 else self._take(length)

    def binary(self, compact: bool = False) -> bytes:
        value = self.nullable_binary(compact)
        if value is None:
            raise DataFormatError("null where bytes are required")
        return value

    def array_count(self, compact: bool = False) -> int:
        """The element count of a non-null array (each element takes a byte at least)."""
        count = self._length(compact, wide=True)
        if count < 0:
            raise DataFormatError("null where an array is required")
        if count > len(self._data) - self.pos:
            raise DataFormatError(f"array of {count} elements runs past the end")
        return count

    def skip_tagged_fields(self) -> None:
        for _ in range(self.unsigned_varint()):
            self.unsigned_varint()  # the tag
            self._take(self.unsigned_varint())


class FieldWriter:
    """Appends fields to a bytearray; ``getvalue()`` gives the bytes written."""

    def __init__(self) -> None:
        self._out = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self._out)

    def int16(self, value: int) -> None:
        self._out += _INT16.pack(value)

    def int32(self, value: int) -> None:
        self._out += _INT32.pack(value)

    def int64(self, value: int) -> None:
        self._out += _INT64.pack(value)

    def unsigned_varint(self, value: int) -> None:
        while value >= 0x80:
            self._out.append((value & 0x7F) | 0x80)
            value >>= 7
        self._out.append(value)

    def _length(self, length: int, compact: bool, wide: bool) -> None:
        if compact:
            self.unsigned_varint(length + 1)
        elif wide:
            self.int32(length)
        else:
            self.int16(length)

    def string(self, value: str | None, compact: bool = False) -> None:
        """A string, or null (-1) for None where the field is nullable."""
        if value is None:
            self._length(-1, compact, wide=False)
            return
        encoded = value.encode("utf-8")
        self._length(len(encoded), compact, wide=False)
        self._out += encoded

    def binary(self, value: bytes | None, compact: bool = False) -> None:
        """Bytes, or null (-1) for None where the field is nullable."""
        if value is None:
            self._length(-1, compact, wide=True)
            return
        self._length(len(value), compact, wide=True)
        self._out += value

    def array_count(self, count: int, compact: bool = False) -> None:
        self._length(count, compact, wide=True)

    def empty_tagged_fields(self) -> None:
        self.unsigned_varint(0)
