"""Shared fixtures of the differential tests.

Run from the package root:

    swift build --product protowire-conformance
    PROTOWIRE_CONFORMANCE=.build/debug/protowire-conformance \
        python -m pytest -q -s Tests/Differential
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import summary

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent.parent
PROTOS = PACKAGE_ROOT / "Protos"
GENERATED = HERE / "generated"

# The package defines maps.fleetengine.v1.* under the Python package
# google.maps.fleetengine (a regular package of google-maps-fleetengine) and
# registers the same message names in the default descriptor pool under other
# file names. Modules generated from Protos/ would clash with both, so this
# process never imports google.maps.fleetengine_v1 (test_descriptors.py reads
# it in a subprocess), and the generated google/maps/fleetengine{,/v1}
# directories get an __init__.py so that they, first on sys.path, shadow the
# installed package.
_SHADOWING_PACKAGES = ["google/maps/fleetengine", "google/maps/fleetengine/v1"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # Under `-s` the lines were already printed as they came.
    if summary.lines and config.getoption("capture") != "no":
        terminalreporter.section("differential summaries")
        for line in summary.lines:
            terminalreporter.write_line(line)


def proto_files() -> list[Path]:
    return sorted(PROTOS.rglob("*.proto"))


@pytest.fixture(scope="session")
def generated_protos():
    """Generates Python modules from Protos/ into generated/ (recreated on
    every run), puts the directory first on sys.path and returns a
    `Protos` object giving message classes by full name."""
    shutil.rmtree(GENERATED, ignore_errors=True)
    GENERATED.mkdir(parents=True)
    files = [str(p.relative_to(PROTOS)) for p in proto_files()]
    # The well-known types come from the installed protobuf package; generating
    # them would only create shadowed duplicates. grpc/testing/ holds the interop
    # protos (no Fleet Engine message): as Python they would form `grpc.testing`,
    # which the installed grpcio package `grpc` hides, and Tests/Interop compiles
    # them itself.
    to_generate = [f for f in files if not f.startswith(("google/protobuf/", "grpc/"))]
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTOS),
           "--python_out=" + str(GENERATED), *to_generate]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail("protoc failed on Protos/:\n%s\n%s" % (" ".join(cmd), result.stderr))
    for pkg in _SHADOWING_PACKAGES:
        (GENERATED / pkg / "__init__.py").touch()
    sys.path.insert(0, str(GENERATED))
    importlib.invalidate_caches()
    if "google.maps.fleetengine" in sys.modules and "generated" not in (sys.modules["google.maps.fleetengine"].__file__ or ""):
        pytest.fail("google.maps.fleetengine (the PyPI package) was imported into the test process; "
                    "its descriptors clash with the generated ones")
    modules = []
    for f in to_generate:
        name = f[: -len(".proto")].replace("/", ".") + "_pb2"
        modules.append(importlib.import_module(name))
    return Protos(modules)


class Protos:
    """Message classes and descriptors of the generated modules."""

    def __init__(self, modules):
        self.modules = modules
        self.classes = {}
        for mod in modules:
            for name in mod.DESCRIPTOR.message_types_by_name:
                self._add(getattr(mod, name))

    def _add(self, cls):
        self.classes[cls.DESCRIPTOR.full_name] = cls
        for nested in cls.DESCRIPTOR.nested_types:
            self._add(getattr(cls, nested.name))

    def __getitem__(self, full_name: str):
        if full_name in self.classes:
            return self.classes[full_name]
        from google.protobuf import symbol_database
        return symbol_database.Default().GetSymbol(full_name)


@pytest.fixture(scope="session")
def testee_binary() -> str:
    """Path of the protowire-conformance executable, from PROTOWIRE_CONFORMANCE."""
    path = os.environ.get("PROTOWIRE_CONFORMANCE")
    if not path:
        pytest.fail(
            "PROTOWIRE_CONFORMANCE is not set. Build the testee and point the variable at it:\n"
            "    swift build --product protowire-conformance\n"
            "    export PROTOWIRE_CONFORMANCE=$PWD/.build/debug/protowire-conformance",
            pytrace=False)
    p = Path(path)
    if not p.is_absolute():
        p = (Path.cwd() / p).resolve()
    if not p.is_file() or not os.access(p, os.X_OK):
        pytest.fail(
            "PROTOWIRE_CONFORMANCE=%s is not an executable file. Build it with "
            "`swift build --product protowire-conformance`." % path, pytrace=False)
    return str(p)


@pytest.fixture(scope="session")
def seed() -> int:
    return int(os.environ.get("DIFFERENTIAL_SEED", "20240611"))
