"""Wire-format helpers for the differential tests: encode and walk protobuf
binary records independently of any protobuf runtime, so the tests can build
encodings Python's serializer never produces and can tell which inputs carry a
known field with the wrong wire type.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
MAX_FIELD_NUMBER = (1 << 29) - 1

_T = descriptor_pb2.FieldDescriptorProto
VARINT_TYPES = {
    _T.TYPE_INT32, _T.TYPE_INT64, _T.TYPE_UINT32, _T.TYPE_UINT64,
    _T.TYPE_SINT32, _T.TYPE_SINT64, _T.TYPE_BOOL, _T.TYPE_ENUM,
}
I32_TYPES = {_T.TYPE_FIXED32, _T.TYPE_SFIXED32, _T.TYPE_FLOAT}
I64_TYPES = {_T.TYPE_FIXED64, _T.TYPE_SFIXED64, _T.TYPE_DOUBLE}


def varint(value: int, min_len: int = 1) -> bytes:
    """Encodes `value` (negative ints as 64-bit two's complement) as a varint,
    padded with redundant continuation bytes to at least `min_len` bytes."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value or len(out) + 1 < min_len:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field: int, wire_type: int, min_len: int = 1) -> bytes:
    return varint((field << 3) | wire_type, min_len)


def len_field(field: int, payload: bytes) -> bytes:
    return tag(field, LEN) + varint(len(payload)) + payload


class WireError(Exception):
    pass


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    for i in range(10):
        if pos >= end:
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result & ((1 << 64) - 1), pos
    raise WireError("varint longer than 10 bytes")


@dataclass
class Record:
    """One top-level field record: `raw` is its complete encoding."""
    field: int
    wire_type: int
    start: int          # offset of the tag
    value_start: int    # offset after the tag (for LEN: of the length prefix)
    payload_start: int  # LEN: first payload byte; others: = value_start
    end: int            # offset after the record (after the end-group tag for groups)
    raw: bytes


def skip_group(buf: bytes, pos: int, end: int, field: int, depth: int) -> int:
    """Returns the offset after the end-group tag matching `field`."""
    if depth > 200:
        raise WireError("nesting too deep")
    while True:
        if pos >= end:
            raise WireError("unterminated group")
        key, pos = read_varint(buf, pos, end)
        wt, num = key & 7, key >> 3
        if wt == EGROUP:
            if num != field:
                raise WireError("mismatched end group")
            return pos
        pos = skip_value(buf, pos, end, num, wt, depth + 1)


# upb (Python's parser) accepts field number 0 inside unknown groups, though
# not directly in a message. skip_value records where it saw one here.
FIELD0_IN_GROUP: list[int] = []


def skip_value(buf: bytes, pos: int, end: int, field: int, wt: int, depth: int) -> int:
    """Skips the value of a record whose tag ended at `pos`; depth > 0 means
    inside a group."""
    if field > MAX_FIELD_NUMBER or (field == 0 and depth == 0):
        raise WireError("bad field number %d" % field)
    if field == 0:
        FIELD0_IN_GROUP.append(pos)
    if wt == VARINT:
        return read_varint(buf, pos, end)[1]
    if wt == I64:
        if pos + 8 > end:
            raise WireError("truncated fixed64")
        return pos + 8
    if wt == I32:
        if pos + 4 > end:
            raise WireError("truncated fixed32")
        return pos + 4
    if wt == LEN:
        n, pos = read_varint(buf, pos, end)
        if n > end - pos:
            raise WireError("length past end")
        return pos + n
    if wt == SGROUP:
        return skip_group(buf, pos, end, field, depth)
    raise WireError("bad wire type %d" % wt)


def records(buf: bytes, start: int = 0, end: int | None = None) -> list[Record]:
    """Splits a message encoding into its top-level records."""
    end = len(buf) if end is None else end
    out = []
    pos = start
    while pos < end:
        rec_start = pos
        key, pos = read_varint(buf, pos, end)
        wt, num = key & 7, key >> 3
        if wt == EGROUP:
            raise WireError("unmatched end group")
        value_start = pos
        payload_start = pos
        if wt == LEN:
            _, payload_start = read_varint(buf, pos, end)
        pos = skip_value(buf, pos, end, num, wt, 0)
        out.append(Record(num, wt, rec_start, value_start, payload_start, pos, bytes(buf[rec_start:pos])))
    return out


def allowed_wire_types(field: descriptor_pb2.FieldDescriptorProto) -> set[int]:
    repeated = field.label == _T.LABEL_REPEATED
    if field.type in VARINT_TYPES:
        return {VARINT, LEN} if repeated else {VARINT}
    if field.type in I32_TYPES:
        return {I32, LEN} if repeated else {I32}
    if field.type in I64_TYPES:
        return {I64, LEN} if repeated else {I64}
    return {LEN}


@dataclass
class Site:
    """A place inside an encoding, found by `walk`."""
    kind: str           # "string" (payload of a known string field) or "len" (a length prefix)
    offset: int         # string: first payload byte; len: first byte of the length varint
    length: int         # payload length
    field: int
    depth: int


def has_field0_in_group(buf: bytes, desc) -> bool:
    """Whether a well-formed encoding holds a field number 0 inside an unknown
    group (which upb accepts and stricter parsers reject)."""
    del FIELD0_IN_GROUP[:]
    walk(buf, desc)
    return bool(FIELD0_IN_GROUP)


def walk(buf: bytes, desc, sites: list[Site] | None = None, depth: int = 0,
         start: int = 0, end: int | None = None) -> list[str]:
    """Walks an encoding of message `desc` (a Python Descriptor), descending
    into known message fields. Returns descriptions of known fields that
    arrived with a wire type their declaration does not allow; appends string
    payload and length-prefix locations to `sites`. Raises WireError if the
    bytes are not well-formed."""
    end = len(buf) if end is None else end
    wrong = []
    by_number = {f.number: f for f in desc.fields}
    for rec in records(buf, start, end):
        f = by_number.get(rec.field)
        if rec.wire_type == LEN and sites is not None:
            sites.append(Site("len", rec.value_start, rec.end - rec.payload_start, rec.field, depth))
        if f is None:
            continue
        proto = _field_proto(f)
        if rec.wire_type not in allowed_wire_types(proto):
            wrong.append("%s field %d (%s) with wire type %d" % (desc.full_name, f.number, f.name, rec.wire_type))
            continue
        if proto.type == _T.TYPE_STRING and sites is not None:
            sites.append(Site("string", rec.payload_start, rec.end - rec.payload_start, rec.field, depth))
        if proto.type == _T.TYPE_MESSAGE:
            wrong += walk(buf, f.message_type, sites, depth + 1, rec.payload_start, rec.end)
    return wrong


_FIELD_PROTO_CACHE: dict = {}


def _field_proto(f) -> descriptor_pb2.FieldDescriptorProto:
    """The FieldDescriptorProto of a Python FieldDescriptor (label and type as data)."""
    key = (f.containing_type.full_name, f.number)
    p = _FIELD_PROTO_CACHE.get(key)
    if p is None:
        msg_proto = descriptor_pb2.DescriptorProto()
        f.containing_type.CopyToProto(msg_proto)
        for fp in msg_proto.field:
            _FIELD_PROTO_CACHE[(f.containing_type.full_name, fp.number)] = fp
        p = _FIELD_PROTO_CACHE[key]
    return p


def field_proto(f) -> descriptor_pb2.FieldDescriptorProto:
    return _field_proto(f)


def double_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]
