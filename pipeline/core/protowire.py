"""Protobuf's wire format, by hand, for what this project does with an ONNX file without importing onnx: walk its
top-level fields to find a torn or foreign file before any model loads it (source.check_onnx), and cut part of a
model (measures/_onnx_part.py). A message is a run of fields, each a key (field number << 3 | wire type) and a
value: a varint, 8 or 4 fixed bytes, or a length and that many bytes."""
from __future__ import annotations

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
FIXED = {FIXED64: 8, FIXED32: 4}
LONGEST_VARINT = 10  # bytes of a 64-bit value


class Torn(ValueError):
    """A message that ends inside a field, or holds a wire type no ONNX writer uses."""


def varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at `at`, and where what follows it starts."""
    value = shift = 0
    for i in range(at, min(len(data), at + LONGEST_VARINT)):
        value |= (data[i] & 0x7F) << shift
        if data[i] < 0x80:
            return value, i + 1
        shift += 7
    raise Torn(f"no whole varint at byte {at}")


def fields(data: bytes) -> list[tuple[int, int | bytes, bytes]]:
    """Each field of a message: (number, its varint or its bytes, the field as written, key included)."""
    out, at = [], 0
    while at < len(data):
        start = at
        key, at = varint(data, at)
        wire = key & 7
        if wire == VARINT:
            value, at = varint(data, at)
        elif wire == LEN or wire in FIXED:
            size, at = varint(data, at) if wire == LEN else (FIXED[wire], at)
            if at + size > len(data):
                raise Torn(f"a field of {size} bytes at byte {start} runs past the end ({len(data)} bytes)")
            value, at = data[at:at + size], at + size
        else:
            raise Torn(f"wire type {wire} at byte {start}: not a protobuf message ONNX writes")
        out.append((key >> 3, value, data[start:at]))
    return out


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, body: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message."""
    return encode_varint(number << 3 | LEN) + encode_varint(len(body)) + body
