"""Differential round trip: Python (upb) encodes seeded random messages, the
Swift testee decodes and re-encodes them, Python decodes the result, and both
Python decodings must be equal.

Besides Python's own encodings the inputs include wire-level variants Python
never writes: unknown fields (varint, fixed32, fixed64, length-delimited,
groups with nested content) at the top and inside nested messages, the same or
another message appended (merge), records in shuffled order, non-canonical
varints (padded tags and values, int32 garbage above bit 31, bools other than
1) and, for TripUpdate, updated_fields unpacked or in several packed runs.

Outputs are also compared byte for byte with Python's re-encoding of its own
decoding: the Swift encoder, like upb, writes known fields in ascending field
number order and unknown fields after them, so for inputs without unknown
fields and without appended messages the bytes must be identical.

Environment: PROTOWIRE_CONFORMANCE (the testee, required), DIFFERENTIAL_SEED.
"""

from __future__ import annotations

import random
from collections import Counter

import msggen
import wire
from difflib_proto import first_difference
from summary import report
from testee import run_frames

FE, JS = "maps.fleetengine.v1.", "journeysharing.v1."
COUNTS = {
    FE + "Trip": 2000,
    JS + "TripUpdate": 2000,
    FE + "VehicleLocation": 1500,
    FE + "TripWaypoint": 1500,
    FE + "GetTripRequest": 1000,
    FE + "TerminalLocation": 1000,
    FE + "ConsumableTrafficPolyline": 500,
    JS + "StreamTripRequest": 500,
}
MAX_REPORTED = 5

# variant name -> (weight, whether the output must be byte-identical to
# Python's re-encoding; variants with unknown fields are decided per message)
VARIANTS = {
    "plain": 46,
    "unknown": 16,
    "concat_self": 8,
    "concat_other": 8,
    "shuffled": 8,
    "overlong": 8,
    "unpacked": 6,   # TripUpdate only; "plain" elsewhere
}
MERGING = {"concat_self", "concat_other"}


def make_input(gen: msggen.Gen, cls, type_name: str):
    """Returns (variant, input bytes, has_unknown)."""
    r = gen.rng
    variant = r.choices(list(VARIANTS), weights=list(VARIANTS.values()))[0]
    if variant == "unpacked" and type_name != JS + "TripUpdate":
        variant = "plain"
    g = msggen.generate(gen, cls, unknown_rate=0.3 if variant == "unknown" else 0.0)
    msg, has_unknown = g.msg, g.has_unknown
    if variant == "unpacked" and not msg.updated_fields:
        msg.updated_fields.extend(gen.int32() for _ in range(r.randint(1, 12)))
    data = msg.SerializeToString()
    if variant == "unknown":
        extra = gen.unknown_fields(cls.DESCRIPTOR)
        recs = [rec.raw for rec in wire.records(data)]
        pos = r.choice([len(recs), len(recs), 0, r.randint(0, len(recs))])
        data = b"".join(recs[:pos]) + extra + b"".join(recs[pos:])
        has_unknown = True
    elif variant == "concat_self":
        data = data + data
    elif variant == "concat_other":
        other = msggen.generate(gen, cls, unknown_rate=0.1)
        has_unknown |= other.has_unknown
        data = data + other.msg.SerializeToString()
    elif variant == "shuffled":
        data = msggen.shuffle_records(gen, data)
    elif variant == "overlong":
        data = msggen.reencode_overlong(gen, data, cls.DESCRIPTOR)
    elif variant == "unpacked":
        data = msggen.unpack_repeated(gen, msg, "updated_fields")
    return variant, data, has_unknown


def test_differential_round_trip(generated_protos, testee_binary, seed):
    rng = random.Random(seed)
    print("\ndifferential: seed %d (set DIFFERENTIAL_SEED to reproduce)" % seed)
    total = equal = identical = 0
    must_be_identical = identical_required_ok = 0
    by_variant = Counter()
    failures: list[str] = []
    not_identical: list[str] = []

    for type_name, count in COUNTS.items():
        cls = generated_protos[type_name]
        gen = msggen.Gen(random.Random(rng.getrandbits(64)))
        cases = [make_input(gen, cls, type_name) for _ in range(count)]
        replies = run_frames(testee_binary, type_name, [data for _, data, _ in cases])
        for index, ((variant, data, has_unknown), reply) in enumerate(zip(cases, replies)):
            total += 1
            by_variant[variant] += 1
            where = "seed %d, type %s, message %d, variant %s\ninput (%d bytes): %s" % (
                seed, type_name, index, variant, len(data), data.hex())
            expected = cls.FromString(data)   # Python accepts every generated input
            if not reply.ok:
                failures.append("testee rejected a valid input: %s\n%s" % (reply.text, where))
                continue
            try:
                got = cls.FromString(reply.payload)
            except Exception as e:  # noqa: BLE001 - any parse failure is a finding
                failures.append("Python cannot parse the testee's output (%s)\n%s\noutput: %s"
                                % (e, where, reply.payload.hex()))
                continue
            if got != expected:
                failures.append("decodings differ: %s (Python's decoding of the input vs of the testee's output)\n%s\noutput: %s"
                                % (first_difference(expected, got), where, reply.payload.hex()))
                continue
            equal += 1
            canonical = expected.SerializeToString()
            same_bytes = reply.payload == canonical
            identical += same_bytes
            if not has_unknown and variant not in MERGING:
                must_be_identical += 1
                if same_bytes:
                    identical_required_ok += 1
                else:
                    not_identical.append("output is not byte-identical to Python's encoding\n%s\n"
                                         "testee: %s\npython: %s" % (where, reply.payload.hex(), canonical.hex()))

    summary = ("differential: %d messages, %d equal, %d byte-identical (%d of %d required), seed %d; variants %s"
               % (total, equal, identical, identical_required_ok, must_be_identical, seed,
                  ", ".join("%s %d" % kv for kv in sorted(by_variant.items()))))
    report(summary)
    problems = failures + not_identical
    assert not problems, "%d disagreements (first %d shown):\n\n%s" % (
        len(problems), min(len(problems), MAX_REPORTED), "\n\n".join(problems[:MAX_REPORTED]))
