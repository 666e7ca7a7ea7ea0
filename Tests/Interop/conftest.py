"""Session fixtures of the interop tests: stubs, test certificates, grpcio
servers and the client under test.

Run from the package root:

    swift build --product grpc-interop-client
    GRPC_INTEROP_CLIENT=.build/debug/grpc-interop-client python -m pytest -q Tests/Interop

GRPC_INTEROP_CLIENT is an executable, or a command line (split like a shell
would) such as "python Tests/Interop/interop_reference_client.py".
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import interop_server  # noqa: E402
from interop_server import OVERRIDE_NAME  # noqa: E402

# generated/grpc/testing/test_pb2*.py are stubs, not tests.
collect_ignore = ["generated"]


# ---------------------------------------------------------------------------
# Certificates (openssl CLI)

def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("openssl %s failed:\n%s" % (" ".join(args), result.stderr))


def make_ca(directory: Path, name: str, common_name: str) -> tuple[Path, Path]:
    """A self-signed CA: returns (cert, key)."""
    cert, key = directory / (name + ".pem"), directory / (name + ".key")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "30",
             "-keyout", key.name, "-out", cert.name, "-subj", "/O=JourneySharing tests/CN=" + common_name,
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-addext", "subjectKeyIdentifier=hash", cwd=directory)
    return cert, key


def make_leaf(directory: Path, name: str, ca: tuple[Path, Path], sans: list[str]) -> tuple[Path, Path]:
    """A server certificate for `sans` (e.g. "DNS:localhost", "IP:127.0.0.1")
    signed by `ca`: returns (cert, key)."""
    cert, key, csr, ext = (directory / (name + s) for s in (".pem", ".key", ".csr", ".ext"))
    ext.write_text(
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
        "subjectAltName = %s\n" % ", ".join(sans))
    common_name = sans[0].split(":", 1)[1]
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key.name, "-out", csr.name,
             "-subj", "/O=JourneySharing tests/CN=" + common_name, cwd=directory)
    _openssl("x509", "-req", "-in", csr.name, "-CA", str(ca[0]), "-CAkey", str(ca[1]),
             "-CAcreateserial", "-days", "30", "-sha256", "-extfile", ext.name, "-out", cert.name,
             cwd=directory)
    return cert, key


@dataclass(frozen=True)
class Certs:
    ca: Path            # the test CA the client is given with --ca_file
    localhost: tuple    # (cert, key) for DNS:localhost, IP:127.0.0.1
    override: tuple     # (cert, key) for foo.test.google.fr and *.test.google.fr
    rogue_ca: Path      # a CA the client does not know
    rogue: tuple        # (cert, key) for foo.test.google.fr signed by rogue_ca


@pytest.fixture(scope="session")
def interop_certs(tmp_path_factory) -> Certs:
    d = tmp_path_factory.mktemp("interop-certs")
    ca = make_ca(d, "ca", "JourneySharing interop test CA")
    rogue_ca = make_ca(d, "rogue-ca", "Unknown CA")
    return Certs(
        ca=ca[0],
        localhost=make_leaf(d, "localhost", ca, ["DNS:localhost", "IP:127.0.0.1"]),
        override=make_leaf(d, "override", ca, ["DNS:" + OVERRIDE_NAME, "DNS:*.test.google.fr"]),
        rogue_ca=rogue_ca[0],
        rogue=make_leaf(d, "rogue", rogue_ca, ["DNS:" + OVERRIDE_NAME, "DNS:*.test.google.fr"]),
    )


# ---------------------------------------------------------------------------
# Servers

@pytest.fixture(scope="session")
def interop_stubs():
    """Compiles Protos/grpc/testing into generated/ once per session."""
    interop_server.generate_stubs()
    return interop_server.GENERATED


@dataclass
class RunningServer:
    name: str
    port: int
    process: subprocess.Popen
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def start_server(name: str, log_dir: Path, extra_args: list[str]) -> RunningServer:
    log = log_dir / (name + ".log")
    process = subprocess.Popen(
        [sys.executable, str(HERE / "interop_server.py"), "--port", "0", *extra_args],
        stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
    first = process.stdout.readline()  # blocks until the server prints or dies
    if not first.startswith("listening on 127.0.0.1:"):
        process.kill()
        process.wait()
        raise RuntimeError("interop server %s did not start (%r):\n%s"
                           % (name, first, log.read_text(errors="replace")))
    return RunningServer(name, int(first.rsplit(":", 1)[1]), process, log)


def stop_server(server: RunningServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def interop_server_factory(interop_stubs, tmp_path_factory):
    """Starts named servers once each; stops them all at the end of the session."""
    log_dir = tmp_path_factory.mktemp("interop-servers")
    running: dict[str, RunningServer] = {}

    def get(name: str, extra_args: list[str]) -> RunningServer:
        if name not in running:
            running[name] = start_server(name, log_dir, extra_args)
        return running[name]

    yield get
    for server in running.values():
        stop_server(server)


def _tls_args(pair) -> list[str]:
    return ["--use_tls", "true", "--cert", str(pair[0]), "--key", str(pair[1])]


@pytest.fixture(scope="session")
def interop_server_h2c(interop_server_factory) -> RunningServer:
    return interop_server_factory("h2c", [])


@pytest.fixture(scope="session")
def interop_server_tls(interop_server_factory, interop_certs) -> RunningServer:
    """TLS with the certificate for foo.test.google.fr signed by the test CA."""
    return interop_server_factory("tls", _tls_args(interop_certs.override))


@pytest.fixture(scope="session")
def interop_server_tls_localhost(interop_server_factory, interop_certs) -> RunningServer:
    """TLS with the certificate for localhost / 127.0.0.1 signed by the test CA."""
    return interop_server_factory("tls-localhost", _tls_args(interop_certs.localhost))


@pytest.fixture(scope="session")
def interop_server_tls_rogue(interop_server_factory, interop_certs) -> RunningServer:
    """TLS with a certificate for foo.test.google.fr signed by an unknown CA."""
    return interop_server_factory("tls-rogue", _tls_args(interop_certs.rogue))


# ---------------------------------------------------------------------------
# The client under test

@pytest.fixture(scope="session")
def interop_client() -> list[str]:
    """The command of the client under test, from GRPC_INTEROP_CLIENT."""
    value = os.environ.get("GRPC_INTEROP_CLIENT")
    if not value:
        pytest.fail(
            "GRPC_INTEROP_CLIENT is not set. Build the Swift interop client and point the variable at it:\n"
            "    swift build --product grpc-interop-client\n"
            "    export GRPC_INTEROP_CLIENT=$PWD/.build/debug/grpc-interop-client\n"
            "(or, to check the suite itself: GRPC_INTEROP_CLIENT=\"python Tests/Interop/interop_reference_client.py\")",
            pytrace=False)
    if Path(value).is_file():
        command = [value]
    else:
        command = shlex.split(value)
    exe = Path(command[0])
    if exe.parent != Path(".") or exe.is_file():  # a path, not a name looked up on PATH
        exe = exe if exe.is_absolute() else (Path.cwd() / exe).resolve()
        if not exe.is_file() or not os.access(exe, os.X_OK):
            pytest.fail("GRPC_INTEROP_CLIENT=%s: %s is not an executable file" % (value, exe), pytrace=False)
        command[0] = str(exe)
    return command


@dataclass
class ClientRun:
    argv: list
    returncode: int
    output: str
    seconds: float

    def describe(self, server: RunningServer | None = None) -> str:
        text = "$ %s\nexit %s after %.2f s\n--- client output ---\n%s" % (
            " ".join(shlex.quote(a) for a in self.argv), self.returncode, self.seconds, self.output)
        if server is not None:
            text += "\n--- server %s log (tail) ---\n%s" % (server.name, server.log_tail())
        return text


def run_client(command: list[str], args: list[str], timeout: float = 60.0) -> ClientRun:
    argv = [*command, *args]
    start = time.monotonic()
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", timeout=timeout)
        code, output = result.returncode, result.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        code, output = "timeout(%ss)" % timeout, out
    return ClientRun(argv, code, output, time.monotonic() - start)


@pytest.fixture(scope="session")
def interop_run(interop_client):
    """run(args, timeout=60) -> ClientRun: runs the client under test with args."""
    def run(args: list[str], timeout: float = 60.0) -> ClientRun:
        return run_client(interop_client, args, timeout)
    return run
