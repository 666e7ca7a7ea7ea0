"""Differential proto3 JSON: Python (upb) builds seeded random messages of every
type FleetEngineMessages declares and prints them with
`google.protobuf.json_format.MessageToJson`; the Swift testee
(`protowire-conformance --json`) decodes their encodings and prints its JSON.

For each message the two JSON texts must parse to exactly the same value:
same types (a number with a fraction is not an integer), floats equal bit for
bit (-0.0 is not 0.0), members in the same order. The texts are also compared
byte for byte: Swift's default output (indent 2, UTF-8 strings) against
`MessageToJson(msg, ensure_ascii=False)`; with --proto-names --ascii against
`MessageToJson(msg, preserving_proto_field_name=True)` (Python's defaults
otherwise); with --indent 0 against Python's JSON re-dumped with compact
separators.

Where MessageToJson raises (a Timestamp or Duration outside the range the
mapping allows, a FieldMask path that cannot be camel-cased), the testee must
refuse the same message, and its lenient mode (--json-lenient) must still print
valid JSON for it. The generator keeps most timestamps, durations and field
mask paths valid so that the rest of each message is compared, and leaves a
few invalid so that refusals are exercised. Unknown fields are merged into a
fifth of the inputs; JSON drops them.

Environment: PROTOWIRE_CONFORMANCE (the testee, required), DIFFERENTIAL_SEED.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
from collections import Counter

from google.protobuf import descriptor, json_format
# Registers google.protobuf.FieldMask, which no generated module imports.
from google.protobuf import field_mask_pb2  # noqa: F401

import msggen
from summary import report
from testee import run_frames

FE, JS, PB = "maps.fleetengine.v1.", "journeysharing.v1.", "google.protobuf."
# Messages per type. CI runs 1,000 of each (30,000 messages, 90,000 comparisons, about 30 s);
# DIFFERENTIAL_SCALE multiplies that for a longer search (3 is what this suite ran before CI had to get shorter).
SCALE = float(os.environ.get("DIFFERENTIAL_SCALE", "1"))
COUNTS = {
    FE + "Trip": 1000,
    JS + "TripUpdate": 1000,
    FE + "VehicleLocation": 1000,
    FE + "TripWaypoint": 1000,
    FE + "GetTripRequest": 1000,
    JS + "StreamTripRequest": 1000,
    FE + "RequestHeader": 1000,
    FE + "TerminalLocation": 1000,
    FE + "TerminalPointId": 1000,
    FE + "StopLocation": 1000,
    FE + "TripAttribute": 1000,
    FE + "VehicleAttribute": 1000,
    FE + "ConsumableTrafficPolyline": 1000,
    FE + "SpeedReadingInterval": 1000,
    FE + "TrafficPolylineData": 1000,
    FE + "VisualTrafficReportPolylineRendering": 1000,
    FE + "VisualTrafficReportPolylineRendering.RoadStretch": 1000,
    "google.type.LatLng": 1000,
    PB + "Timestamp": 1000,
    PB + "Duration": 1000,
    PB + "FieldMask": 1000,
    PB + "DoubleValue": 1000,
    PB + "FloatValue": 1000,
    PB + "Int64Value": 1000,
    PB + "UInt64Value": 1000,
    PB + "Int32Value": 1000,
    PB + "UInt32Value": 1000,
    PB + "BoolValue": 1000,
    PB + "StringValue": 1000,
    PB + "BytesValue": 1000,
}
COUNTS = {name: max(1, round(count * SCALE)) for name, count in COUNTS.items()}
MAX_REPORTED = 5
INVALID_RATE = 0.03          # timestamps, durations and field mask paths left as generated (mostly invalid)
UNKNOWN_RATE = 0.2           # inputs with unknown fields merged in

TIMESTAMP_MIN, TIMESTAMP_MAX = -62135596800, 253402300799
DURATION_MAX = 315576000000
_CPP = descriptor.FieldDescriptor


# ----- input generation ------------------------------------------------------


def _nanos(r: random.Random) -> int:
    """Nanos that need 0, 3, 6 or 9 fractional digits."""
    kind = r.random()
    if kind < 0.25:
        return 0
    if kind < 0.5:
        return r.randint(0, 999) * 1_000_000
    if kind < 0.75:
        return r.randint(0, 999_999) * 1_000
    return r.choice([1, 999_999_999, r.randint(0, 999_999_999)])


def _valid_timestamp(r: random.Random, ts) -> None:
    roll = r.random()
    if roll < 0.2:
        ts.seconds = r.choice([TIMESTAMP_MIN, TIMESTAMP_MAX, 0, -1, 1, 951782400, 4107542400, -2208988800])
    elif roll < 0.5:
        ts.seconds = r.randint(1_500_000_000, 2_000_000_000)
    else:
        ts.seconds = r.randint(TIMESTAMP_MIN, TIMESTAMP_MAX)
    ts.nanos = _nanos(r)


def _valid_duration(r: random.Random, d) -> None:
    roll = r.random()
    if roll < 0.2:
        seconds = r.choice([0, 1, -1, DURATION_MAX, -DURATION_MAX, 59, 3600])
    elif roll < 0.6:
        seconds = r.randint(-100_000, 100_000)
    else:
        seconds = r.randint(-DURATION_MAX, DURATION_MAX)
    nanos = _nanos(r)
    if seconds < 0 or (seconds == 0 and r.random() < 0.5):
        nanos = -nanos
    d.seconds, d.nanos = seconds, nanos


_PATH_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789" + "ßéµŉǰ"   # full uppercase mappings: SS, É, Μ, ʼN, J̌


def _valid_path(r: random.Random) -> str:
    parts = []
    for _ in range(r.randint(1, 4)):
        word = "".join(r.choices(_PATH_LETTERS, k=r.randint(1, 8)))
        parts.append(word)
    # An underscore is followed by a word, and words start with a letter when they follow one.
    path = parts[0]
    for word in parts[1:]:
        sep = r.choice(["_", "_", "."])
        if sep == "_" and not word[0].islower():
            word = "a" + word
        path += sep + word
    return path


def _random_float32(r: random.Random) -> float:
    return struct.unpack("<f", struct.pack("<I", r.getrandbits(32)))[0]


def _random_nan(r: random.Random) -> float:
    bits = 0x7FF0_0000_0000_0000 | (r.getrandbits(51) + 1) | (r.getrandbits(1) << 63)
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def adjust(r: random.Random, msg) -> None:
    """Makes most timestamps, durations and field mask paths valid; puts random
    bit patterns into floats and now and then a NaN into a double."""
    name = msg.DESCRIPTOR.full_name
    if name == PB + "Timestamp":
        if r.random() >= INVALID_RATE:
            _valid_timestamp(r, msg)
        return
    if name == PB + "Duration":
        if r.random() >= INVALID_RATE:
            _valid_duration(r, msg)
        return
    if name == PB + "FieldMask":
        if r.random() >= INVALID_RATE * 3:
            del msg.paths[:]
            msg.paths.extend(_valid_path(r) for _ in range(r.choice([0, 1, 1, 2, 3, 7])))
        return
    for field, value in msg.ListFields():
        if field.cpp_type == _CPP.CPPTYPE_MESSAGE:
            for sub in (value if field.is_repeated else [value]):
                adjust(r, sub)
        elif field.cpp_type == _CPP.CPPTYPE_FLOAT and not field.is_repeated and r.random() < 0.5:
            setattr(msg, field.name, _random_float32(r))
        elif field.cpp_type == _CPP.CPPTYPE_DOUBLE and not field.is_repeated and r.random() < 0.03:
            setattr(msg, field.name, _random_nan(r))


def make_input(gen: msggen.Gen, cls):
    """Returns (Python message, input bytes)."""
    r = gen.rng
    with_unknown = r.random() < UNKNOWN_RATE
    msg = msggen.generate(gen, cls, unknown_rate=0.4 if with_unknown else 0.0).msg
    adjust(r, msg)
    data = msg.SerializeToString()
    if with_unknown:
        data += gen.unknown_fields(cls.DESCRIPTOR)
    return cls.FromString(data), data


# ----- comparison --------------------------------------------------------------


def strict_difference(a, b, path="$"):
    """The first place where two parsed JSON values differ, or None: types must
    match exactly, floats bit for bit, object members in the same order."""
    if type(a) is not type(b):
        return "%s: %s %r vs %s %r" % (path, type(a).__name__, a, type(b).__name__, b)
    if isinstance(a, dict):
        if list(a) != list(b):
            return "%s: members %s vs %s" % (path, list(a), list(b))
        for key in a:
            d = strict_difference(a[key], b[key], "%s.%s" % (path, key))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d elements" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = strict_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if isinstance(a, float):
        if struct.pack("<d", a) != struct.pack("<d", b):
            return "%s: %r vs %r" % (path, a, b)
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


def python_json(msg, **kwargs):
    """MessageToJson's text, or None where it raises for a value the mapping cannot represent."""
    try:
        return json_format.MessageToJson(msg, **kwargs)
    except (ValueError, json_format.Error):
        return None


# Each configuration: testee flags, Python's reference text from the message, and
# whether that text must match byte for byte (it always must parse to the same value).
CONFIGS = {
    "default": (["--json"],
                lambda m: python_json(m, ensure_ascii=False)),
    "proto-names+ascii": (["--json", "--proto-names", "--ascii"],
                          lambda m: python_json(m, preserving_proto_field_name=True)),
    "compact": (["--json", "--indent", "0"],
                lambda m: None if (t := python_json(m)) is None
                else json.dumps(json.loads(t), separators=(",", ":"), ensure_ascii=False)),
}


def test_json_matches_python(generated_protos, testee_binary, seed):
    rng = random.Random(seed)
    print("\njson: seed %d (set DIFFERENTIAL_SEED to reproduce)" % seed)
    failures: list[str] = []
    totals = Counter()
    for type_name, count in COUNTS.items():
        cls = generated_protos[type_name]
        gen = msggen.Gen(random.Random(rng.getrandbits(64)))
        cases = [make_input(gen, cls) for _ in range(count)]
        frames = [data for _, data in cases]
        stats = Counter()
        refused_frames: list[tuple[int, bytes]] = []
        for config, (flags, reference) in CONFIGS.items():
            replies = run_frames(testee_binary, type_name, frames, flags)
            for index, ((msg, data), reply) in enumerate(zip(cases, replies)):
                where = "seed %d, type %s, message %d, config %s\ninput (%d bytes): %s" % (
                    seed, type_name, index, config, len(data), data.hex())
                expected_text = reference(msg)
                stats["compared"] += 1
                if expected_text is None:
                    if reply.ok or not reply.text.startswith("refused: "):
                        failures.append("Python's MessageToJson raises, the testee answered %s: %s\n%s"
                                        % ("JSON" if reply.ok else "an error", reply.text[:500], where))
                        continue
                    stats["refused by both"] += 1
                    if config == "default":
                        refused_frames.append((index, data))
                    continue
                if not reply.ok:
                    failures.append("the testee refused (%s), Python printed:\n%s\n%s"
                                    % (reply.text, expected_text[:2000], where))
                    continue
                try:
                    got = json.loads(reply.text)
                except ValueError as e:
                    failures.append("the testee's output is not JSON (%s):\n%s\n%s" % (e, reply.text[:2000], where))
                    continue
                difference = strict_difference(json.loads(expected_text), got)
                if difference:
                    failures.append("parsed JSON differs at %s\n%s\ntestee: %s\npython: %s"
                                    % (difference, where, reply.text[:2000], expected_text[:2000]))
                    continue
                stats["equal"] += 1
                if reply.text != expected_text:
                    failures.append("same value, different text\n%s\ntestee: %r\npython: %r"
                                    % (where, reply.text[:2000], expected_text[:2000]))
                    continue
                stats["byte-identical"] += 1
        # What Python refuses, the lenient mode still prints as JSON.
        if refused_frames:
            replies = run_frames(testee_binary, type_name, [d for _, d in refused_frames], ["--json-lenient"])
            for (index, data), reply in zip(refused_frames, replies):
                where = "seed %d, type %s, message %d (lenient)\ninput: %s" % (seed, type_name, index, data.hex())
                try:
                    json.loads(reply.text)
                    ok = reply.ok
                except ValueError:
                    ok = False
                if not ok:
                    failures.append("lenient output is not JSON: %s\n%s" % (reply.text[:2000], where))
                else:
                    stats["lenient JSON"] += 1
        report("json %s: %d messages x %d configurations, %d equal, %d byte-identical, %d refused by both "
               "(%d printed leniently)"
               % (type_name, count, len(CONFIGS), stats["equal"], stats["byte-identical"],
                  stats["refused by both"], stats["lenient JSON"]))
        totals["messages"] += count
        totals.update(stats)
    report("json: %d types, %d messages, %d comparisons, %d equal, %d byte-identical, %d refused by both, "
           "%d disagreements, seed %d"
           % (len(COUNTS), totals["messages"], totals["compared"], totals["equal"], totals["byte-identical"],
              totals["refused by both"], len(failures), seed))
    assert not failures, "%d disagreements (first %d shown):\n\n%s" % (
        len(failures), min(len(failures), MAX_REPORTED), "\n\n".join(failures[:MAX_REPORTED]))


def test_float_formatting_exhaustive_exponents(generated_protos, testee_binary):
    """FloatValue across every binary exponent (subnormals to the largest
    float) and around the powers of ten, where the number of digits
    ToShortestFloat needs changes: same text as Python's."""
    cls = generated_protos[PB + "FloatValue"]
    r = random.Random(7)
    values = []
    for exponent in range(0, 255):
        for _ in range(12):
            bits = (exponent << 23) | r.getrandbits(23)
            values.append(struct.unpack("<f", struct.pack("<I", bits))[0])
        values.append(struct.unpack("<f", struct.pack("<I", exponent << 23))[0])
        values.append(struct.unpack("<f", struct.pack("<I", (exponent << 23) | 0x7FFFFF))[0])
    for power in range(-45, 39):
        x = struct.unpack("<f", struct.pack("<f", 10.0 ** power))[0] if 10.0 ** power < 3.4e38 else 3.4e38
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        for delta in range(-3, 4):
            if 0 <= bits + delta < 0x7F800000:
                values.append(struct.unpack("<f", struct.pack("<I", bits + delta))[0])
    values += [-v for v in values[::5]] + [math.inf, -math.inf, math.nan, -0.0]
    msgs = [cls(value=v) for v in values]
    replies = run_frames(testee_binary, cls.DESCRIPTOR.full_name, [m.SerializeToString() for m in msgs], ["--json"])
    bad = []
    for msg, reply in zip(msgs, replies):
        expected = json_format.MessageToJson(msg)
        if not reply.ok or reply.text != expected or strict_difference(json.loads(expected), json.loads(reply.text)):
            bad.append("%r (bits %08x): testee %r, python %r" % (
                msg.value, struct.unpack("<I", struct.pack("<f", msg.value))[0], reply.text, expected))
    report("json floats: %d FloatValues across all exponents and powers of ten, %d differ" % (len(msgs), len(bad)))
    assert not bad, "\n".join(bad[:MAX_REPORTED])
