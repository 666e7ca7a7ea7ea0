"""The reverse direction: malformed input.

(a) Seeded mutations of valid encodings (truncation, flipped, inserted and
deleted bytes, broken length prefixes, invalid UTF-8 in string fields, groups
nested around the recursion limit, changed wire types). Python (upb) is the
reference:
  - input Python rejects -> the testee must reject it, with an error text;
  - input the testee accepts -> Python must parse the testee's output, and if
    Python accepted the input too, the two decodings must be equal;
  - input Python accepts but the testee rejects -> allowed only for the one
    documented strictness: a KNOWN field arriving with a wire type its
    declaration cannot have (upb keeps it as an unknown field). Counted apart.
(b) Fixed malformed inputs, each rejected with an error text naming the kind
of problem, and inputs at the limits, which must be accepted.

Environment: PROTOWIRE_CONFORMANCE (the testee, required), DIFFERENTIAL_SEED.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

import msggen
import wire
from difflib_proto import first_difference
from summary import report
from testee import run_frames

FE, JS = "maps.fleetengine.v1.", "journeysharing.v1."
MUTATIONS_PER_TYPE = {
    FE + "Trip": 1200,
    JS + "TripUpdate": 1000,
    FE + "VehicleLocation": 700,
    FE + "TripWaypoint": 700,
    FE + "GetTripRequest": 500,
    FE + "TerminalLocation": 500,
    FE + "ConsumableTrafficPolyline": 400,
    JS + "StreamTripRequest": 400,
}
MAX_REPORTED = 5

# upb (Python's parser) accepts a field number 0 inside an unknown group,
# though not directly in a message. Field number 0 is invalid everywhere in
# the wire format, protobuf C++ rejects it too, and so does ProtoWire: this is
# the second documented way the testee is stricter than upb, counted apart.
FIELD0_IN_UNKNOWN_GROUP_MAY_BE_REJECTED = True
INTERESTING_BYTES = [0x00, 0x01, 0x03, 0x04, 0x06, 0x07, 0x0B, 0x0C, 0x0E, 0x0F, 0x7F, 0x80, 0xBF, 0xC0, 0xED, 0xF4, 0xFF]


def nested_groups(field: int, depth: int, inner: bytes = b"") -> bytes:
    return wire.tag(field, wire.SGROUP) * depth + inner + wire.tag(field, wire.EGROUP) * depth


def unused_field(desc, rng) -> int:
    used = {f.number for f in desc.fields}
    while True:
        n = rng.choice([rng.randint(1, 60), rng.randint(1, wire.MAX_FIELD_NUMBER)])
        if n not in used:
            return n


class Mutator:
    def __init__(self, rng: random.Random, desc):
        self.rng = rng
        self.desc = desc

    def mutate(self, data: bytes) -> tuple[str, bytes]:
        ops = [self.rng.choice(self.OPS) for _ in range(self.rng.choice([1, 1, 1, 2]))]
        names = []
        for op in ops:
            name, data = op(self, data)
            names.append(name)
        return "+".join(names), data

    def truncate(self, data):
        if not data:
            return "truncate", data
        return "truncate", data[: self.rng.randrange(len(data))]

    def flip(self, data):
        if not data:
            return "flip", data
        b = bytearray(data)
        for _ in range(self.rng.randint(1, 3)):
            i = self.rng.randrange(len(b))
            b[i] ^= self.rng.choice([0x80, 0x01, 0x07, 0xFF, self.rng.randint(1, 255)])
        return "flip", bytes(b)

    def insert(self, data):
        i = self.rng.randint(0, len(data))
        junk = bytes(self.rng.choice(INTERESTING_BYTES + [self.rng.randint(0, 255)])
                     for _ in range(self.rng.randint(1, 4)))
        return "insert", data[:i] + junk + data[i:]

    def delete(self, data):
        if not data:
            return "delete", data
        i = self.rng.randrange(len(data))
        return "delete", data[:i] + data[i + self.rng.randint(1, 4):]

    def _sites(self, data, kind):
        sites: list[wire.Site] = []
        try:
            wire.walk(data, self.desc, sites)
        except wire.WireError:
            return []
        return [s for s in sites if s.kind == kind]

    def break_length(self, data):
        sites = self._sites(data, "len")
        if not sites:
            return self.flip(data)
        s = self.rng.choice(sites)
        _, after = wire.read_varint(data, s.offset, len(data))
        new_len = self.rng.choice([s.length + 1, s.length + 2, s.length - 1, s.length + 100,
                                   (1 << 31) - 1, 1 << 31, (1 << 32) + s.length, (1 << 64) - 1, 0])
        new_len = max(new_len, 0)
        return "break_length", data[: s.offset] + wire.varint(new_len) + data[after:]

    def bad_utf8(self, data):
        sites = [s for s in self._sites(data, "string") if s.length > 0]
        if not sites:
            return self.flip(data)
        s = self.rng.choice(sites)
        bad = self.rng.choice([b"\xff", b"\xfe", b"\x80", b"\xc0", b"\xc0\x80", b"\xc3\x28", b"\xed\xa0\x80",
                               b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80", b"\xe2\x82"])
        bad = bad[: s.length]
        i = s.offset + self.rng.randint(0, s.length - len(bad))
        return "bad_utf8", data[:i] + bad + data[i + len(bad):]

    def deep_nesting(self, data):
        depth = self.rng.randint(95, 105)
        field = unused_field(self.desc, self.rng)
        inner = self.rng.choice([b"", wire.tag(1, wire.VARINT) + b"\x01", wire.len_field(2, b"xyz")])
        blob = nested_groups(field, depth, inner)
        message_fields = [f for f in self.desc.fields if f.message_type is not None]
        if message_fields and self.rng.random() < 0.4:
            f = self.rng.choice(message_fields)   # one level deeper, inside a known submessage
            blob = wire.len_field(f.number, nested_groups(unused_field(f.message_type, self.rng), depth, inner))
        try:
            recs = wire.records(data)
        except wire.WireError:
            return "deep_nesting", data + blob
        i = self.rng.randint(0, len(recs))
        return "deep_nesting", b"".join(r.raw for r in recs[:i]) + blob + b"".join(r.raw for r in recs[i:])

    def change_wire_type(self, data):
        try:
            recs = wire.records(data)
        except wire.WireError:
            return self.flip(data)
        if not recs:
            return self.flip(data)
        rec = self.rng.choice(recs)
        wt = self.rng.choice([w for w in range(8) if w != rec.wire_type])
        new_tag = wire.tag(rec.field, wt)
        return "change_wire_type", data[: rec.start] + new_tag + data[rec.value_start:]

    OPS = [truncate, truncate, flip, flip, insert, delete, break_length, break_length,
           bad_utf8, bad_utf8, deep_nesting, change_wire_type]


def python_parse(cls, data):
    try:
        return cls.FromString(data), None
    except Exception as e:  # noqa: BLE001 - DecodeError and friends
        return None, str(e)


def test_mutated_inputs(generated_protos, testee_binary, seed):
    rng = random.Random(seed ^ 0x5EED)
    print("\nrejections: seed %d (set DIFFERENTIAL_SEED to reproduce)" % seed)
    stats = Counter()
    by_op = Counter()
    problems: list[str] = []
    for type_name, count in MUTATIONS_PER_TYPE.items():
        cls = generated_protos[type_name]
        gen = msggen.Gen(random.Random(rng.getrandbits(64)))
        mut = Mutator(gen.rng, cls.DESCRIPTOR)
        cases = []
        for _ in range(count):
            base = msggen.generate(gen, cls, unknown_rate=gen.rng.choice([0.0, 0.3])).msg.SerializeToString()
            op, data = mut.mutate(base)
            cases.append((op, data))
        replies = run_frames(testee_binary, type_name, [data for _, data in cases])
        for index, ((op, data), reply) in enumerate(zip(cases, replies)):
            stats["total"] += 1
            by_op.update(op.split("+"))
            where = "seed %d, type %s, mutation %d (%s)\ninput (%d bytes): %s" % (
                seed, type_name, index, op, len(data), data.hex())
            py_msg, py_err = python_parse(cls, data)
            if not reply.ok and not reply.payload:
                problems.append("testee rejected with an empty error text\n" + where)
                continue
            if py_msg is None:
                if reply.ok:
                    problems.append("Python rejects (%s) but the testee accepts\n%s\ntestee output: %s"
                                    % (py_err, where, reply.payload.hex()))
                else:
                    stats["both rejected"] += 1
                continue
            if not reply.ok:
                try:
                    wrong = wire.walk(data, cls.DESCRIPTOR)
                except wire.WireError:
                    wrong = []
                if wrong:
                    stats["testee stricter (wrong wire type)"] += 1
                elif wire.has_field0_in_group(data, cls.DESCRIPTOR):
                    stats["field 0 in unknown group"] += 1
                    if not FIELD0_IN_UNKNOWN_GROUP_MAY_BE_REJECTED:
                        problems.append("Python accepts but the testee rejects (%s): the input has field number 0 "
                                        "inside an unknown group, which upb accepts\n%s" % (reply.text, where))
                else:
                    problems.append("Python accepts but the testee rejects (%s), and no known field has a wrong wire type\n%s"
                                    % (reply.text, where))
                continue
            out, out_err = python_parse(cls, reply.payload)
            if out is None:
                problems.append("Python cannot parse the testee's output (%s)\n%s\ntestee output: %s"
                                % (out_err, where, reply.payload.hex()))
                continue
            if out != py_msg:
                problems.append("both accept, decodings differ: %s\n%s\ntestee output: %s"
                                % (first_difference(py_msg, out), where, reply.payload.hex()))
                continue
            stats["both accepted, equal"] += 1
    report("rejections: %d mutated inputs, %d rejected by both, %d accepted by both and equal, "
           "%d rejected only by the testee (known field, wrong wire type), "
           "%d rejected only by the testee (field number 0 in an unknown group), %d disagreements, seed %d; "
           "mutations applied: %s"
           % (stats["total"], stats["both rejected"], stats["both accepted, equal"],
              stats["testee stricter (wrong wire type)"], stats["field 0 in unknown group"], len(problems), seed,
              ", ".join("%s %d" % kv for kv in sorted(by_op.items()))))
    assert stats["total"] >= 5000
    assert not problems, "%d disagreements (first %d shown):\n\n%s" % (
        len(problems), min(len(problems), MAX_REPORTED), "\n\n".join(problems[:MAX_REPORTED]))


# ----- (b) fixed cases ------------------------------------------------------

TRUNC = r"truncat"
VARINT = r"varint"
LENGTH = r"length"
WIRETYPE = r"wire type"
FIELD0 = r"field number 0|field 0\b"
UTF8 = r"utf-?8"
DEPTH = r"nest|depth|recurs"
GROUP = r"group"


# Trip does not use field 18; TerminalLocation (pickup_point) uses 1-5 only, so
# groups of field 15 are unknown there.
TRIP_UNUSED = 18
_G_START, _G_END = wire.tag(TRIP_UNUSED, wire.SGROUP), wire.tag(TRIP_UNUSED, wire.EGROUP)


def _in_pickup_point(inner: bytes) -> bytes:
    """A Trip whose pickup_point (field 5, a TerminalLocation) holds `inner`."""
    return wire.len_field(5, inner)


REJECTED_CASES = [
    # (id, type, input, error text pattern)
    ("truncated-varint", "Trip", bytes.fromhex("5080"), TRUNC),
    ("truncated-varint-10-bytes-started", "Trip", bytes.fromhex("50ffffffffffffffffff"), TRUNC),
    ("truncated-tag", "Trip", bytes.fromhex("80"), TRUNC),
    ("truncated-fixed64", "Trip", wire.tag(TRIP_UNUSED, wire.I64) + b"\x01\x02", TRUNC),
    ("truncated-fixed32", "Trip", wire.tag(TRIP_UNUSED, wire.I32) + b"\x01", TRUNC),
    ("truncated-packed-varint", "TripUpdate", bytes.fromhex("1a0180"), TRUNC + "|" + VARINT),
    ("varint-11-bytes", "Trip", bytes.fromhex("50" + "ff" * 10 + "01"), VARINT),
    ("varint-11-bytes-unknown-field", "Trip", bytes.fromhex("f807" + "80" * 10 + "00"), VARINT),
    ("tag-6-bytes", "Trip", bytes.fromhex("d0808080800005"), VARINT + "|tag"),
    ("length-past-end", "Trip", bytes.fromhex("0a056162"), LENGTH),
    ("length-past-end-nested", "Trip", _in_pickup_point(bytes.fromhex("0a0509")), LENGTH),
    ("length-2^32", "Trip", bytes.fromhex("0a8080808010") + b"abc", LENGTH),
    ("length-2^64-1", "Trip", bytes.fromhex("0affffffffffffffffff01"), LENGTH),
    ("wire-type-6", "Trip", bytes.fromhex("0e01"), WIRETYPE),
    ("wire-type-7", "Trip", bytes.fromhex("0f01"), WIRETYPE),
    ("wire-type-6-unknown-field", "Trip", bytes.fromhex("f60700"), WIRETYPE),
    ("wire-type-7-in-group", "Trip", _G_START + bytes.fromhex("0f") + _G_END, WIRETYPE),
    ("field-number-0-varint", "Trip", bytes.fromhex("0001"), FIELD0),
    ("field-number-0-len", "VehicleLocation", bytes.fromhex("0200"), FIELD0),
    ("field-number-0-nested", "Trip", _in_pickup_point(bytes.fromhex("0001")), FIELD0),
    ("invalid-utf8-trip-name-ff", "Trip", bytes.fromhex("0a01ff"), UTF8),
    ("invalid-utf8-trip-name-bad-continuation", "Trip", bytes.fromhex("0a02c328"), UTF8),
    ("invalid-utf8-trip-name-surrogate", "Trip", bytes.fromhex("0a03eda080"), UTF8),
    ("invalid-utf8-trip-name-overlong-nul", "Trip", bytes.fromhex("0a02c080"), UTF8),
    ("invalid-utf8-trip-name-above-10ffff", "Trip", bytes.fromhex("0a04f4908080"), UTF8),
    ("invalid-utf8-trip-name-truncated-sequence", "Trip", bytes.fromhex("0a04616263e2"), UTF8),
    ("invalid-utf8-nested-trip-id", "Trip", _in_pickup_point(bytes.fromhex("2202ff61")), UTF8),
    ("invalid-utf8-update-trip-name", "TripUpdate", wire.len_field(1, bytes.fromhex("0a01c1")), UTF8),
    ("recursion-101-groups", "Trip", nested_groups(TRIP_UNUSED, 101), DEPTH),
    ("recursion-1000-groups", "Trip", nested_groups(TRIP_UNUSED, 1000), DEPTH),
    ("recursion-100-groups-in-submessage", "Trip", _in_pickup_point(nested_groups(15, 100)), DEPTH),
    ("unmatched-end-group", "Trip", bytes.fromhex("0c"), GROUP),
    ("unmatched-end-group-unknown-field", "Trip", _G_END, GROUP),
    ("end-group-other-field", "Trip", _G_START + wire.tag(19000, wire.EGROUP), GROUP),
    ("end-group-in-submessage", "Trip", _in_pickup_point(bytes.fromhex("7c")), GROUP),
    ("unterminated-group", "Trip", _G_START, GROUP + "|" + TRUNC),
    ("group-ends-with-submessage", "Trip", _in_pickup_point(bytes.fromhex("7b")) + _G_END, GROUP + "|" + TRUNC),
]

ACCEPTED_CASES = [
    ("100-groups", "Trip", nested_groups(TRIP_UNUSED, 100)),
    ("99-groups-in-submessage", "Trip", _in_pickup_point(nested_groups(15, 99))),
    ("10-byte-varint", "Trip", bytes.fromhex("50ffffffffffffffffff01")),
    ("10-byte-varint-high-bits-ignored", "Trip", bytes.fromhex("50ffffffffffffffffff7f")),
    ("int32-5-bytes-high-bits", "Trip", bytes.fromhex("50ffffffff7f")),
    ("padded-5-byte-tag", "Trip", bytes.fromhex("d08080800005")),
    ("bool-2", "Trip", bytes.fromhex("d00102")),
    ("field-2^29-1", "Trip", bytes.fromhex("f8ffffff0f05")),
    ("empty", "Trip", b""),
    ("empty-submessage", "Trip", bytes.fromhex("2a00")),
    ("valid-utf8-max", "Trip", wire.len_field(1, "\U0010ffff\u0000\ud7ff\ue000".encode())),
    ("packed-and-unpacked", "TripUpdate", bytes.fromhex("1803") + wire.len_field(3, bytes.fromhex("01ffffffffffffffffff01")) + bytes.fromhex("1804")),
]


def _full(name: str) -> str:
    return (JS if name in ("TripUpdate", "StreamTripRequest") else FE) + name


def test_fixed_rejections(generated_protos, testee_binary):
    by_type: dict[str, list] = {}
    for case in REJECTED_CASES:
        by_type.setdefault(_full(case[1]), []).append(case)
    problems = []
    n = 0
    for type_name, cases in by_type.items():
        cls = generated_protos[type_name]
        replies = run_frames(testee_binary, type_name, [c[2] for c in cases])
        for (case_id, _, data, pattern), reply in zip(cases, replies):
            n += 1
            py_msg, _ = python_parse(cls, data)
            assert py_msg is None, "test bug: Python accepts case %s" % case_id
            if reply.ok:
                problems.append("%s (%s, input %s): accepted, output %s" % (case_id, type_name, data.hex()[:200], reply.payload.hex()[:200]))
            elif not re.search(pattern, reply.text, re.IGNORECASE):
                problems.append("%s (%s, input %s): rejected, but the error text %r does not match /%s/"
                                % (case_id, type_name, data.hex()[:200], reply.text, pattern))
    report("fixed rejections: %d cases, %d problems" % (n, len(problems)))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case_id,short_type,data", ACCEPTED_CASES, ids=[c[0] for c in ACCEPTED_CASES])
def test_fixed_acceptances(generated_protos, testee_binary, case_id, short_type, data):
    type_name = _full(short_type)
    cls = generated_protos[type_name]
    expected = cls.FromString(data)
    (reply,) = run_frames(testee_binary, type_name, [data])
    assert reply.ok, "%s: testee rejected %s: %s" % (case_id, data.hex()[:400], reply.text)
    got = cls.FromString(reply.payload)
    assert got == expected, "%s: decodings differ: %s; output %s" % (
        case_id, first_difference(expected, got), reply.payload.hex()[:400])


def test_field0_in_unknown_group(generated_protos, testee_binary):
    """upb accepts field number 0 inside an unknown group. The testee must do
    the same, unless FIELD0_IN_UNKNOWN_GROUP_MAY_BE_REJECTED says the stricter
    behaviour is accepted, in which case it must reject with a clear text."""
    type_name = FE + "Trip"
    cls = generated_protos[type_name]
    data = _G_START + bytes.fromhex("0001") + _G_END + bytes.fromhex("0a0161")
    expected = cls.FromString(data)
    (reply,) = run_frames(testee_binary, type_name, [data])
    if FIELD0_IN_UNKNOWN_GROUP_MAY_BE_REJECTED:
        assert not reply.ok and re.search(FIELD0, reply.text), reply
        return
    assert reply.ok, ("Python accepts %s (field number 0 inside unknown group %d) but the testee rejects it: %s"
                      % (data.hex(), TRIP_UNUSED, reply.text))
    got = cls.FromString(reply.payload)
    assert got == expected, first_difference(expected, got)
