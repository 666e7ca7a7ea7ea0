"""Seeded random messages, driven by the descriptors of the generated modules,
plus wire-level variants of their encodings that Python's serializer never
produces."""

from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

import wire

_T = descriptor_pb2.FieldDescriptorProto

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT32_MAX, UINT64_MAX = (1 << 32) - 1, (1 << 64) - 1

SPECIAL_DOUBLES = [
    0.0, -0.0, 1.0, -1.0, math.inf, -math.inf,
    5e-324, -5e-324,                      # smallest subnormals
    2.2250738585072009e-308,              # largest subnormal
    2.2250738585072014e-308,              # smallest normal
    1.7976931348623157e308, -1.7976931348623157e308,
    0.1, 37.422, -122.084, 90.0, -180.0,
]
SPECIAL_FLOATS = [0.0, -0.0, math.inf, -math.inf, 1.401298464324817e-45, 3.4028234663852886e38, 0.5]

_ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-_.: ",
    "äöüßéèêçñÅØÆœ€£¥©®°±µ",                     # 2- and 3-byte UTF-8
    "東京都渋谷区道玄坂日本語中文한국어ไทยعربيעבריתहिन्दी",  # 3-byte, RTL, combining
    "😀🚕🚗🛺🏁📍🗺️👩‍👩‍👧‍👦🇯🇵🇩🇪",                       # 4-byte, ZWJ sequences, flags
    "\u0000\u0001\u007f\u0080\u07ff\u0800\uffff\U00010000\U0010ffff\u200b\ufeff\u0301",  # boundaries
]


class Gen:
    """Random values for one message generation run."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def string(self) -> str:
        r = self.rng
        roll = r.random()
        if roll < 0.05:
            return ""
        if roll < 0.08:
            n = r.randint(200, 3000)       # long: multi-byte length prefix
        else:
            n = r.randint(1, 24)
        alphabets = r.sample(_ALPHABETS, r.randint(1, len(_ALPHABETS)))
        pool = "".join(alphabets)
        return "".join(r.choices(pool, k=n))

    def trip_name(self) -> str:
        return "providers/%s/trips/%s" % (self.string()[:20] or "p", self.string()[:30] or "t")

    def int32(self) -> int:
        r = self.rng
        roll = r.random()
        if roll < 0.3:
            return r.choice([0, 1, -1, 127, 128, -128, 16383, 16384, INT32_MIN, INT32_MAX, INT32_MIN + 1])
        if roll < 0.6:
            return r.randint(-1000, 100000)
        return r.randint(INT32_MIN, INT32_MAX)

    def int64(self) -> int:
        r = self.rng
        roll = r.random()
        if roll < 0.3:
            return r.choice([0, 1, -1, INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX, 1 << 32, -(1 << 32),
                             253402300799, -62135596800])
        if roll < 0.6:
            return r.randint(-62135596800, 253402300799)
        return r.randint(INT64_MIN, INT64_MAX)

    def uint32(self) -> int:
        return self.rng.choice([0, 1, UINT32_MAX, self.rng.randint(0, UINT32_MAX)])

    def uint64(self) -> int:
        return self.rng.choice([0, 1, UINT64_MAX, 1 << 63, self.rng.randint(0, UINT64_MAX), self.rng.randint(0, 1000)])

    def double(self) -> float:
        r = self.rng
        roll = r.random()
        if roll < 0.35:
            return r.choice(SPECIAL_DOUBLES)
        if roll < 0.75:
            return r.uniform(-180.0, 180.0)
        while True:  # any bit pattern but NaN
            x = struct.unpack("<d", r.getrandbits(64).to_bytes(8, "little"))[0]
            if not math.isnan(x):
                return x

    def float32(self) -> float:
        r = self.rng
        if r.random() < 0.4:
            return r.choice(SPECIAL_FLOATS)
        return struct.unpack("<f", struct.pack("<f", r.uniform(-1e6, 1e6)))[0]

    def enum(self, enum_desc) -> int:
        r = self.rng
        roll = r.random()
        if roll < 0.85:
            return r.choice(enum_desc.values).number
        # Proto3 enums are open: any int32 is a valid value.
        return r.choice([INT32_MIN, -1, INT32_MAX, 9, 100000, r.randint(INT32_MIN, INT32_MAX)])

    def scalar(self, field):
        t = wire.field_proto(field).type
        if t == _T.TYPE_STRING:
            if field.name == "name" and field.containing_type.name in ("Trip", "GetTripRequest", "StreamTripRequest") \
                    and self.rng.random() < 0.5:
                return self.trip_name()
            return self.string()
        if t == _T.TYPE_BYTES:
            return self.rng.randbytes(self.rng.randint(0, 40))
        if t in (_T.TYPE_INT32, _T.TYPE_SINT32, _T.TYPE_SFIXED32):
            return self.int32()
        if t in (_T.TYPE_INT64, _T.TYPE_SINT64, _T.TYPE_SFIXED64):
            return self.int64()
        if t in (_T.TYPE_UINT32, _T.TYPE_FIXED32):
            return self.uint32()
        if t in (_T.TYPE_UINT64, _T.TYPE_FIXED64):
            return self.uint64()
        if t == _T.TYPE_DOUBLE:
            return self.double()
        if t == _T.TYPE_FLOAT:
            return self.float32()
        if t == _T.TYPE_BOOL:
            return self.rng.random() < 0.5
        if t == _T.TYPE_ENUM:
            return self.enum(field.enum_type)
        raise AssertionError("unhandled field type %s" % t)

    def repeated_count(self, field) -> int:
        r = self.rng
        if field.message_type is not None and field.message_type.full_name == "google.type.LatLng" \
                and r.random() < 0.04:
            return 200                              # a long route
        roll = r.random()
        if roll < 0.3:
            return 0
        if roll < 0.85:
            return r.randint(1, 3)
        return r.randint(4, 20)

    def unknown_fields(self, desc, depth: int = 0) -> bytes:
        """1-4 encoded fields with numbers `desc` does not use (desc None: any)."""
        r = self.rng
        used = {f.number for f in desc.fields} if desc is not None else set()
        out = bytearray()
        for _ in range(r.randint(1, 4)):
            while True:
                num = r.choice([r.randint(1, 40), r.randint(1, 2000), r.randint(1, wire.MAX_FIELD_NUMBER),
                                wire.MAX_FIELD_NUMBER, 18999, 19000])
                if num not in used:
                    break
            kind = r.choice(["varint", "fixed32", "fixed64", "len", "group"] if depth < 3
                            else ["varint", "fixed32", "fixed64", "len"])
            if kind == "varint":
                out += wire.tag(num, wire.VARINT) + wire.varint(r.choice(
                    [0, 1, UINT64_MAX, INT32_MIN, r.getrandbits(64), r.randint(0, 300)]))
            elif kind == "fixed32":
                out += wire.tag(num, wire.I32) + r.randbytes(4)
            elif kind == "fixed64":
                out += wire.tag(num, wire.I64) + r.randbytes(8)
            elif kind == "len":
                payload = r.choice([b"", r.randbytes(r.randint(1, 30)), self.string().encode(),
                                    self.unknown_fields(None, depth + 1)])
                out += wire.len_field(num, payload)
            else:
                inner = self.unknown_fields(None, depth + 1) if r.random() < 0.8 else b""
                out += wire.tag(num, wire.SGROUP) + inner + wire.tag(num, wire.EGROUP)
        return bytes(out)


@dataclass
class Generated:
    msg: object            # the Python message
    has_unknown: bool      # whether any (nested) unknown field was merged in


def populate(gen: Gen, msg, depth: int = 0, unknown_rate: float = 0.0) -> bool:
    """Fills `msg` at random; returns whether unknown fields were merged in."""
    r = gen.rng
    desc = msg.DESCRIPTOR
    density = r.choice([0.15, 0.5, 0.85, 1.0])
    has_unknown = False
    oneof_fields = {f.name for o in desc.oneofs for f in o.fields}
    for oneof in desc.oneofs:
        if r.random() < density:
            f = r.choice(oneof.fields)
            if f.message_type is not None:
                has_unknown |= populate(gen, getattr(msg, f.name), depth + 1, unknown_rate)
                getattr(msg, f.name).SetInParent()
            else:
                setattr(msg, f.name, gen.scalar(f))   # default values stay present in a oneof
    for f in desc.fields:
        if f.name in oneof_fields or r.random() >= density:
            continue
        repeated = wire.field_proto(f).label == _T.LABEL_REPEATED
        if f.message_type is not None:
            if depth > 8:
                continue
            if repeated:
                container = getattr(msg, f.name)
                for _ in range(gen.repeated_count(f)):
                    has_unknown |= populate(gen, container.add(), depth + 1, unknown_rate)
            else:
                sub = getattr(msg, f.name)
                sub.SetInParent()                     # present even if left empty
                if r.random() < 0.9:
                    has_unknown |= populate(gen, sub, depth + 1, unknown_rate)
        elif repeated:
            getattr(msg, f.name).extend(gen.scalar(f) for _ in range(gen.repeated_count(f)))
        else:
            setattr(msg, f.name, gen.scalar(f))
    if unknown_rate and r.random() < unknown_rate:
        msg.MergeFromString(gen.unknown_fields(desc))
        has_unknown = True
    return has_unknown


def generate(gen: Gen, cls, unknown_rate: float = 0.0) -> Generated:
    msg = cls()
    has_unknown = populate(gen, msg, 0, unknown_rate)
    return Generated(msg, has_unknown)


# ----- wire-level variants -------------------------------------------------


def reencode_overlong(gen: Gen, data: bytes, desc) -> bytes:
    """Re-encodes the top-level records of `data` with non-canonical but valid
    varints: padded tags (up to 5 bytes) and, for varint fields, padded values
    (up to 10 bytes), int32/enum values with garbage above bit 31 and bools
    other than 0/1. Unknown records are kept verbatim."""
    r = gen.rng
    by_number = {f.number: f for f in desc.fields}
    out = bytearray()
    for rec in wire.records(data):
        f = by_number.get(rec.field)
        if f is None or r.random() < 0.3:
            out += rec.raw
            continue
        t = wire.field_proto(f).type
        tag_bytes = wire.tag(rec.field, rec.wire_type, r.randint(1, 5))
        if rec.wire_type != wire.VARINT:
            out += tag_bytes + data[rec.value_start:rec.end]
            continue
        value, _ = wire.read_varint(data, rec.value_start, rec.end)
        if t == _T.TYPE_BOOL and value:
            value = r.choice([1, 2, 255, UINT64_MAX, r.getrandbits(64) | 1])
        elif t in (_T.TYPE_INT32, _T.TYPE_ENUM) and r.random() < 0.5:
            value = (value & UINT32_MAX) | (r.getrandbits(32) << 32)  # parsers keep the low 32 bits
        n = len(wire.varint(value))
        out += tag_bytes + wire.varint(value, r.randint(n, 10))
    return bytes(out)


def shuffle_records(gen: Gen, data: bytes) -> bytes:
    recs = wire.records(data)
    gen.rng.shuffle(recs)
    return b"".join(rec.raw for rec in recs)


def unpack_repeated(gen: Gen, msg, field_name: str) -> bytes:
    """Encodes `msg` with the repeated varint field `field_name` written
    unpacked (one tag per element), mixed now and then with packed runs, and
    placed at a random position among the other records."""
    r = gen.rng
    field = msg.DESCRIPTOR.fields_by_name[field_name]
    values = list(getattr(msg, field_name))
    rest = type(msg)()
    rest.CopyFrom(msg)
    rest.ClearField(field_name)
    parts = [rec.raw for rec in wire.records(rest.SerializeToString())]
    chunks = []
    i = 0
    while i < len(values):
        if r.random() < 0.25:
            n = r.randint(1, len(values) - i)
            payload = b"".join(wire.varint(v) for v in values[i:i + n])
            chunks.append(wire.len_field(field.number, payload))
            i += n
        else:
            chunks.append(wire.tag(field.number, wire.VARINT) + wire.varint(values[i]))
            i += 1
    if r.random() < 0.2:
        chunks.append(wire.len_field(field.number, b""))   # an empty packed run
    pos = r.randint(0, len(parts))
    return b"".join(parts[:pos] + chunks + parts[pos:])
