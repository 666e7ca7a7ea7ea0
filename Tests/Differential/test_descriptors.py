"""Protos/google/maps/fleetengine/v1 agrees with the google-maps-fleetengine
PyPI package: every message and enum we declare exists there with the same
fields (name, number, type, label, type name, oneof) and enum values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import descjson
from summary import report

HERE = Path(__file__).resolve().parent
PACKAGE = "maps.fleetengine.v1"


def package_descriptors() -> dict:
    """The package's descriptors, read in a subprocess (they clash with ours)."""
    result = subprocess.run([sys.executable, str(HERE / "dump_package_descriptors.py")],
                            capture_output=True, text=True, cwd=HERE)
    assert result.returncode == 0, "dumping the package's descriptors failed:\n" + result.stderr
    return json.loads(result.stdout)


def test_descriptors_match_package(generated_protos):
    ours = descjson.normalize([m.DESCRIPTOR for m in generated_protos.modules], PACKAGE)
    theirs = package_descriptors()
    problems = []
    for full, mine in sorted(ours["messages"].items()):
        other = theirs["messages"].get(full)
        if other is None:
            problems.append("message %s (in our %s) does not exist in the package" % (full, mine["file"]))
            continue
        if mine["file"] != other["file"]:
            problems.append("message %s: ours is in %s, the package's in %s" % (full, mine["file"], other["file"]))
        for name in sorted(set(mine["fields"]) | set(other["fields"])):
            a, b = mine["fields"].get(name), other["fields"].get(name)
            if a is None:
                problems.append("%s.%s: missing in Protos/ (package: %s)" % (full, name, b))
            elif b is None:
                problems.append("%s.%s: not in the package (ours: %s)" % (full, name, a))
            elif a != b:
                diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
                problems.append("%s.%s differs (ours, package): %s" % (full, name, diff))
    for full, mine in sorted(ours["enums"].items()):
        other = theirs["enums"].get(full)
        if other is None:
            problems.append("enum %s does not exist in the package" % full)
        elif mine["values"] != other["values"]:
            problems.append("enum %s values differ: ours %s, package %s" % (full, mine["values"], other["values"]))
        elif mine["file"] != other["file"]:
            problems.append("enum %s: ours is in %s, the package's in %s" % (full, mine["file"], other["file"]))
    n_fields = sum(len(m["fields"]) for m in ours["messages"].values())
    n_values = sum(len(e["values"]) for e in ours["enums"].values())
    report("descriptors: %d messages (%d fields), %d enums (%d values) checked against google-maps-fleetengine, %d problems"
           % (len(ours["messages"]), n_fields, len(ours["enums"]), n_values, len(problems)))
    assert not problems, "\n".join(problems)


def test_complete_files_are_complete(generated_protos):
    """header, traffic, fleetengine and trips are declared whole: nothing the
    package defines in those files is missing from ours."""
    ours = descjson.normalize([m.DESCRIPTOR for m in generated_protos.modules], PACKAGE)
    theirs = package_descriptors()
    complete = {"header.proto", "traffic.proto", "fleetengine.proto", "trips.proto"}
    missing = [full for kind in ("messages", "enums") for full, d in theirs[kind].items()
               if d["file"] in complete and full not in ours[kind]]
    assert not missing, "defined by the package but missing from Protos/: %s" % missing


def test_service_and_subset_files(generated_protos):
    """trip_api.proto carries GetTripRequest and TripService.GetTrip only;
    vehicles.proto the two traffic-rendering messages only."""
    ours = descjson.normalize([m.DESCRIPTOR for m in generated_protos.modules], PACKAGE)
    by_file = {}
    for full, d in ours["messages"].items():
        by_file.setdefault(d["file"], set()).add(full)
    assert by_file["trip_api.proto"] == {PACKAGE + ".GetTripRequest"}
    assert by_file["vehicles.proto"] == {
        PACKAGE + ".VisualTrafficReportPolylineRendering",
        PACKAGE + ".VisualTrafficReportPolylineRendering.RoadStretch",
        PACKAGE + ".TrafficPolylineData",
    }
    trip_api = next(m for m in generated_protos.modules if m.DESCRIPTOR.name.endswith("/trip_api.proto"))
    service = trip_api.DESCRIPTOR.services_by_name["TripService"]
    assert [m.name for m in service.methods] == ["GetTrip"]
    method = service.methods_by_name["GetTrip"]
    assert method.input_type.full_name == PACKAGE + ".GetTripRequest"
    assert method.output_type.full_name == PACKAGE + ".Trip"
    assert not method.client_streaming and not method.server_streaming
