"""Fixtures of the FleetSim client tests: the `fleetsim` binary under test,
message classes generated from Protos/, running servers, and JWT signers.

Run from the package root:

    swift build --product fleetsim
    FLEETSIM=.build/debug/fleetsim python -m pytest -q Tests/ToolsPytest

The suite runs in one pytest session with Tests/Differential, Tests/Interop
and Tests/Conformance: its fixtures are prefixed `fsim_`, and it shares the
generated maps.fleetengine.v1 modules with Tests/Differential when that suite
imported them first (both are generated from the same Protos/).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

FSIM_HERE = Path(__file__).resolve().parent
FSIM_PACKAGE_ROOT = FSIM_HERE.parent.parent
FSIM_PROTOS = FSIM_PACKAGE_ROOT / "Protos"
FSIM_GENERATED = FSIM_HERE / "generated"

# generated/ holds protoc output, not tests.
collect_ignore = ["generated"]

# As in Tests/Differential/conftest.py: the PyPI package google-maps-fleetengine
# is a regular package google.maps.fleetengine whose descriptors clash with
# those generated from Protos/, so the generated google/maps/fleetengine{,/v1}
# directories get an __init__.py and, first on sys.path, shadow it. Nothing here
# imports google.maps.fleetengine_v1.
_FSIM_SHADOWING_PACKAGES = ["google/maps/fleetengine", "google/maps/fleetengine/v1"]
_FSIM_MODULES = [
    "google.maps.fleetengine.v1.fleetengine_pb2",
    "google.maps.fleetengine.v1.trips_pb2",
    "google.maps.fleetengine.v1.trip_api_pb2",
    "journeysharing.v1.trip_stream_pb2",
]

UNARY_GET_TRIP = "/maps.fleetengine.v1.TripService/GetTrip"
STREAMING_GET_TRIP = "/journeysharing.v1.TripStreamService/GetTrip"


def pytest_configure(config):
    # The hostile-peer attacks that run for minutes (test_server_hostile.py); `make test` leaves them out.
    config.addinivalue_line("markers", "soak: a long-running (minutes) hostile-peer test; deselect with -m 'not soak'")


# ---------------------------------------------------------------------------
# Generated message classes

def _fsim_generate() -> None:
    """Compiles Protos/ (except the well-known types and the interop protos,
    exactly the set Tests/Differential compiles) into generated/."""
    shutil.rmtree(FSIM_GENERATED, ignore_errors=True)
    FSIM_GENERATED.mkdir(parents=True)
    files = sorted(str(p.relative_to(FSIM_PROTOS)) for p in FSIM_PROTOS.rglob("*.proto"))
    to_generate = [f for f in files if not f.startswith(("google/protobuf/", "grpc/"))]
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", str(FSIM_PROTOS),
           "--python_out=" + str(FSIM_GENERATED), *to_generate]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail("protoc failed on Protos/:\n%s\n%s" % (" ".join(cmd), result.stderr), pytrace=False)
    for package in _FSIM_SHADOWING_PACKAGES:
        (FSIM_GENERATED / package / "__init__.py").touch()


@pytest.fixture(scope="session")
def fsim_pb() -> SimpleNamespace:
    """The message classes and enums the tests use, generated from Protos/."""
    # Modules another suite already imported (from its own generated/) are used as they are: importing
    # them again from here would register the same descriptors twice.
    if any(name not in sys.modules for name in _FSIM_MODULES):
        _fsim_generate()
        sys.path.insert(0, str(FSIM_GENERATED))
        importlib.invalidate_caches()
    modules = [importlib.import_module(name) for name in _FSIM_MODULES]
    package = sys.modules["google.maps.fleetengine"]
    if "generated" not in (getattr(package, "__file__", None) or ""):
        pytest.fail("google.maps.fleetengine (the PyPI package) was imported into the test process; "
                    "its descriptors clash with the generated ones", pytrace=False)
    fleetengine, trips, trip_api, trip_stream = modules
    return SimpleNamespace(
        Trip=trips.Trip,
        TripStatus=trips.TripStatus,
        TripView=trips.TripView,
        GetTripRequest=trip_api.GetTripRequest,
        PolylineFormatType=fleetengine.PolylineFormatType,
        StreamTripRequest=trip_stream.StreamTripRequest,
        TripUpdate=trip_stream.TripUpdate,
    )


# ---------------------------------------------------------------------------
# The binary under test and its servers

@pytest.fixture(scope="session")
def fsim_binary() -> str:
    """Path of the fleetsim executable, from FLEETSIM."""
    value = os.environ.get("FLEETSIM")
    if not value:
        pytest.fail(
            "FLEETSIM is not set. Build the simulated Fleet Engine and point the variable at it:\n"
            "    swift build --product fleetsim\n"
            "    export FLEETSIM=$PWD/.build/debug/fleetsim",
            pytrace=False)
    path = Path(value)
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail("FLEETSIM=%s is not an executable file. Build it with `swift build --product fleetsim`."
                    % value, pytrace=False)
    return str(path)


@dataclass
class FleetSimServer:
    """A running `fleetsim` and a grpcio channel to it."""
    argv: list
    process: subprocess.Popen
    address: str
    stderr_path: Path
    channel: grpc.Channel
    output: list = field(default_factory=list)   # stdout lines after `listening on`
    final_stats: dict | None = None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> dict:
        """Stops the server with `sig` and returns the counters of its final `stats:` line."""
        if self.final_stats is not None:
            return self.final_stats
        self.channel.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            rest, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            rest, _ = self.process.communicate()
            raise AssertionError("fleetsim did not exit within %.0f s of signal %d:\n%s"
                                 % (timeout, sig, self.stderr()))
        self.output.extend(rest.splitlines())
        stats_lines = [line for line in self.output if line.startswith("stats: ")]
        if self.process.returncode != 0 or not stats_lines:
            raise AssertionError("fleetsim exited %s without a final stats line; stdout:\n%s\nstderr:\n%s"
                                 % (self.process.returncode, "\n".join(self.output), self.stderr()))
        self.final_stats = fsim_parse_stats(stats_lines[-1])
        return self.final_stats

    def kill(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def fsim_parse_stats(line: str) -> dict:
    """`stats: unary=3 streams=1 …` as {"unary": 3, "streams": 1, …}."""
    assert line.startswith("stats: "), line
    pairs = (item.split("=", 1) for item in line[len("stats: "):].split())
    return {key: int(value) for key, value in pairs}


@pytest.fixture(scope="session")
def fsim_stats_parser():
    """The `stats:` line parser (a fixture: every Python suite has a conftest.py, all imported as `conftest`)."""
    return fsim_parse_stats


@pytest.fixture
def fsim_start(fsim_binary, tmp_path):
    """start(*flags) -> FleetSimServer: runs `fleetsim --listen 127.0.0.1:0 *flags`
    and waits for its `listening on` line. Servers still running at the end of
    the test are killed."""
    servers: list[FleetSimServer] = []

    def start(*flags: str) -> FleetSimServer:
        argv = [fsim_binary, "--listen", "127.0.0.1:0", *map(str, flags)]
        stderr_path = tmp_path / ("fleetsim-%d.stderr" % len(servers))
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True)
        first = process.stdout.readline()  # blocks until the server prints or dies
        if not first.startswith("listening on "):
            process.kill()
            process.communicate()
            pytest.fail("fleetsim did not start (%r)\n$ %s\n%s"
                        % (first, " ".join(argv), stderr_path.read_text(errors="replace")), pytrace=False)
        address = first.strip()[len("listening on "):]
        server = FleetSimServer(argv, process, address, stderr_path, grpc.insecure_channel(address))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


# ---------------------------------------------------------------------------
# JWTs

def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class FleetSimJWT:
    """Signs JWTs like a Fleet Engine token minter: HS256 with hmac, RS256 with
    `openssl dgst -sha256 -sign`."""

    @staticmethod
    def claims(trip_id: str | None = "*", expires_in: float = 3600, **extra) -> dict:
        """Fleet Engine consumer claims; `trip_id=None` leaves out authorization.tripid. As Fleet
        Engine (and FleetSim) require: aud is Fleet Engine's, iss = sub (a service account), and at
        most an hour between iat and exp. `extra` replaces or adds claims; a value of None removes one."""
        now = int(time.time())
        exp = now + int(expires_in)
        claims = {
            "iss": "fleetsim-tests@example.iam.gserviceaccount.com",
            "sub": "fleetsim-tests@example.iam.gserviceaccount.com",
            "aud": "https://fleetengine.googleapis.com/",
            "iat": max(exp - 3600, min(now, exp) - 60),
            "exp": exp,
            "authorization": {"tripid": trip_id} if trip_id is not None else {"vehicleid": "vehicle-1"},
        }
        claims.update(extra)
        return {name: value for name, value in claims.items() if value is not None}

    @staticmethod
    def _signing_input(alg: str, claims: dict) -> str:
        header = {"alg": alg, "typ": "JWT"}
        return "%s.%s" % (_b64url(json.dumps(header, separators=(",", ":")).encode()),
                          _b64url(json.dumps(claims, separators=(",", ":")).encode()))

    def unsigned(self, claims: dict) -> str:
        """An `alg: none` token, which no server may accept."""
        return self._signing_input("none", claims) + "."

    def hs256(self, claims: dict, secret: bytes) -> str:
        signing_input = self._signing_input("HS256", claims)
        signature = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
        return signing_input + "." + _b64url(signature)

    def rs256(self, claims: dict, private_key: Path) -> str:
        signing_input = self._signing_input("RS256", claims)
        result = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(private_key)],
                                input=signing_input.encode("ascii"), capture_output=True)
        if result.returncode != 0:
            raise RuntimeError("openssl dgst -sign failed:\n%s" % result.stderr.decode(errors="replace"))
        return signing_input + "." + _b64url(result.stdout)


@pytest.fixture(scope="session")
def fsim_jwt() -> FleetSimJWT:
    return FleetSimJWT()


@dataclass(frozen=True)
class FleetSimRSAKeys:
    private_key: Path        # signs tokens the server accepts
    public_key: Path         # given to fleetsim with --jwt-public-key
    other_private_key: Path  # an unrelated key


def _fsim_openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("openssl %s failed:\n%s" % (" ".join(args), result.stderr))


@pytest.fixture(scope="session")
def fsim_rsa_keys(tmp_path_factory) -> FleetSimRSAKeys:
    """Two 2048-bit RSA keys made with the openssl CLI, and the first one's public key."""
    d = tmp_path_factory.mktemp("fleetsim-rsa")
    for name in ("signer", "other"):
        _fsim_openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                      "-out", name + ".key", cwd=d)
    _fsim_openssl("pkey", "-in", "signer.key", "-pubout", "-out", "signer.pub.pem", cwd=d)
    return FleetSimRSAKeys(d / "signer.key", d / "signer.pub.pem", d / "other.key")


# ---------------------------------------------------------------------------
# The command-line tools, tripwatch and fleetsim as a user runs them (test_tools_cli.py)

from tools_support import Run, run  # noqa: E402,F401


def _binary(variable: str, product: str) -> str:
    value = os.environ.get(variable)
    if not value:
        pytest.fail("%s is not set: swift build --product %s; export %s=$PWD/.build/debug/%s"
                    % (variable, product, variable, product), pytrace=False)
    path = Path(value)
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail("%s=%s is not an executable file" % (variable, value), pytrace=False)
    return str(path)


@pytest.fixture(scope="session")
def tool_tripwatch() -> str:
    return _binary("TRIPWATCH", "tripwatch")


@pytest.fixture(scope="session")
def tool_fleetsim() -> str:
    return _binary("FLEETSIM", "fleetsim")


@dataclass
class Server:
    process: subprocess.Popen
    address: str
    port: int

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.communicate()
        return self.process.returncode


@pytest.fixture
def tool_server(tool_fleetsim, tmp_path):
    """server(*flags) -> Server: `fleetsim --listen 127.0.0.1:0 *flags`, stopped after the test."""
    servers: list[Server] = []

    def start(*flags) -> Server:
        argv = [tool_fleetsim, "--listen", "127.0.0.1:0", *map(str, flags)]
        stderr = (tmp_path / ("fleetsim-%d.stderr" % len(servers))).open("w")
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True)
        first = process.stdout.readline()
        if not first.startswith("listening on "):
            process.kill()
            process.communicate()
            pytest.fail("fleetsim did not start: %r ($ %s)" % (first, " ".join(argv)), pytrace=False)
        address = first.strip()[len("listening on "):]
        server = Server(process, address, int(address.rsplit(":", 1)[1]))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@dataclass
class ServiceAccount:
    email: str
    key_id: str
    key_file: Path
    public_key: Path


@pytest.fixture(scope="session")
def tool_service_account(tmp_path_factory) -> ServiceAccount:
    """A Google service account JSON key made with the openssl CLI, and its public key."""
    directory = tmp_path_factory.mktemp("service-account")
    for args in (["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"],
                 ["pkey", "-in", "key.pem", "-pubout", "-out", "public.pem"]):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)
    email = "tripwatch-tests@journeysharing-tests.iam.gserviceaccount.com"
    key_id = uuid.uuid4().hex
    key_file = directory / "key.json"
    key_file.write_text(json.dumps({
        "type": "service_account", "project_id": "journeysharing-tests", "private_key_id": key_id,
        "private_key": (directory / "key.pem").read_text(), "client_email": email,
        "client_id": "1", "token_uri": "https://oauth2.googleapis.com/token"}))
    return ServiceAccount(email, key_id, key_file, directory / "public.pem")
