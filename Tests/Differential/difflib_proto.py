"""Locating the first difference between two Python protobuf messages, for
failure messages that point at a field rather than dump two whole trips."""

from __future__ import annotations

import math


def _fmt(v) -> str:
    if isinstance(v, float) and v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    s = repr(v)
    return s if len(s) <= 200 else s[:200] + "..."


def first_difference(a, b, path: str = "") -> str | None:
    """A description of the first difference between messages a and b (None
    if they are equal, unknown fields included)."""
    if a == b:
        return None
    desc = a.DESCRIPTOR
    for f in desc.fields:
        p = "%s.%s" % (path, f.name) if path else f.name
        va, vb = getattr(a, f.name), getattr(b, f.name)
        is_msg = f.message_type is not None
        if f.is_repeated:
            la, lb = list(va), list(vb)
            if len(la) != len(lb):
                return "%s: %d elements vs %d" % (p, len(la), len(lb))
            for i, (x, y) in enumerate(zip(la, lb)):
                if is_msg:
                    d = first_difference(x, y, "%s[%d]" % (p, i))
                    if d:
                        return d
                elif x != y or _fmt(x) != _fmt(y):
                    return "%s[%d]: %s vs %s" % (p, i, _fmt(x), _fmt(y))
            continue
        if is_msg:
            ha, hb = a.HasField(f.name), b.HasField(f.name)
            if ha != hb:
                return "%s: present %s vs %s" % (p, ha, hb)
            if ha:
                d = first_difference(va, vb, p)
                if d:
                    return d
            continue
        if f.containing_oneof is not None and a.HasField(f.name) != b.HasField(f.name):
            return "%s: oneof member set %s vs %s" % (p, a.HasField(f.name), b.HasField(f.name))
        if va != vb or _fmt(va) != _fmt(vb):
            return "%s: %s vs %s" % (p, _fmt(va), _fmt(vb))
    ua, ub = _unknown(a), _unknown(b)
    if ua != ub:
        return "%s: unknown fields %s vs %s" % (path or "<top>", _fmt(ua), _fmt(ub))
    return "%s: messages differ (no field-level difference found)" % (path or "<top>")


def _unknown(m) -> list:
    """The message's own unknown fields, as comparable data."""
    from google.protobuf import unknown_fields

    def conv(fs):
        return [(u.field_number, u.wire_type, conv(u.data) if u.wire_type == 3 else u.data) for u in fs]
    return conv(unknown_fields.UnknownFieldSet(m))
