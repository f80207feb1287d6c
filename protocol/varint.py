"""Kafka's zigzag varints (a varint is at most 5 bytes, a varlong 10): encoding, and tables that decode the one- and
two-byte ones, which nearly every record length, offset delta, timestamp delta, key and value length is.

Reading varints out of a record, with its bounds and error checks, is protocol.records' business.
"""

from __future__ import annotations


def _encode_zigzag(value: int) -> bytes:
    """Zigzag varint/varlong encoding of a signed 64-bit value."""
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# The encodings of 0 .. SMALL_VARINTS_LIMIT - 1 (one or two bytes): the lengths, offset deltas and timestamp
# deltas of records being built are table lookups.
SMALL_VARINTS_LIMIT = 1 << 13
SMALL_VARINTS: tuple[bytes, ...] = tuple(_encode_zigzag(value) for value in range(SMALL_VARINTS_LIMIT))


def encode_varint(value: int) -> bytes:
    """Zigzag varint/varlong encoding of a signed 64-bit value."""
    if 0 <= value < SMALL_VARINTS_LIMIT:
        return SMALL_VARINTS[value]
    return _encode_zigzag(value)


def _short_varints() -> tuple[tuple[int, int] | None, ...]:
    """For each 16-bit little-endian window of two bytes: (value, size) of the zigzag varint starting at its
    first byte if that varint is one or two bytes long, else None."""

    def zigzag(z: int) -> int:
        return (z >> 1) ^ -(z & 1)

    one_byte = [(zigzag(low), 1) for low in range(0x80)]
    table: list[tuple[int, int] | None] = []
    for high in range(0x100):
        table += one_byte
        if high < 0x80:
            table += [(zigzag((low & 0x7F) | (high << 7)), 2) for low in range(0x80, 0x100)]
        else:
            table += [None] * 0x80
    return tuple(table)


#: SHORT_VARINTS[two bytes read little-endian]: (value, size) of the one- or two-byte varint they start, else None.
SHORT_VARINTS = _short_varints()

#: The value of every one- and two-byte varint encoding, two-byte ones ending in 0x00 (which decoders accept,
#: encoders never write) included: every window whose second byte is below 0x80 starts one.
SHORT_VARINT_VALUES: dict[bytes, int] = {
    window.to_bytes(2, "little")[:size]: value for window, (value, size) in enumerate(SHORT_VARINTS[:0x8000])
}
