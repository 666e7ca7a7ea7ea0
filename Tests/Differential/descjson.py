"""Normalizes protobuf file descriptors to plain JSON-able dicts so that two
descriptor sets that cannot share a process can be compared."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

_F = descriptor_pb2.FieldDescriptorProto


def _message(m: descriptor_pb2.DescriptorProto, prefix: str, file_base: str, out: dict) -> None:
    full = prefix + m.name
    oneofs = [o.name for o in m.oneof_decl]
    out["messages"][full] = {
        "file": file_base,
        "fields": {
            f.name: {
                "number": f.number,
                "type": _F.Type.Name(f.type),
                "label": _F.Label.Name(f.label),
                "type_name": f.type_name,
                "oneof": oneofs[f.oneof_index] if f.HasField("oneof_index") else None,
                "proto3_optional": f.proto3_optional,
            }
            for f in m.field
        },
    }
    for e in m.enum_type:
        _enum(e, full + ".", file_base, out)
    for n in m.nested_type:
        _message(n, full + ".", file_base, out)


def _enum(e: descriptor_pb2.EnumDescriptorProto, prefix: str, file_base: str, out: dict) -> None:
    out["enums"][prefix + e.name] = {
        "file": file_base,
        "values": {v.name: v.number for v in e.value},
    }


def normalize(file_descriptors, package: str) -> dict:
    """Messages and enums (nested ones included) of the files in `package`,
    keyed by full name. `file` is the file's base name (trips.proto)."""
    out = {"messages": {}, "enums": {}}
    for fd in file_descriptors:
        p = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(p)
        if p.package != package:
            continue
        base = p.name.rsplit("/", 1)[-1]
        for m in p.message_type:
            _message(m, package + ".", base, out)
        for e in p.enum_type:
            _enum(e, package + ".", base, out)
    return out
