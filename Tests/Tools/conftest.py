"""Fixtures of the command-line tool tests: the `tripwatch` and `fleetsim`
binaries under test, running `fleetsim` servers, and service account keys.

Run from the package root:

    swift build
    TRIPWATCH=.build/debug/tripwatch FLEETSIM=.build/debug/fleetsim python -m pytest -q Tests/Tools

The fixtures are prefixed `tool_`, as the suite runs in one pytest session with
the other Python suites.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest


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
class Run:
    argv: list
    code: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return "$ %s\nexit %s after %.1f s\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(self.argv), self.code, self.seconds, self.stdout[-3000:], self.stderr[-3000:])


def run(argv: list, timeout: float = 120, input: str | None = None) -> Run:
    """Runs a tool to its end; a tool that outlives `timeout` fails the test."""
    started = time.monotonic()
    try:
        result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                                input=input)
    except subprocess.TimeoutExpired as expired:
        pytest.fail("still running after %.0f s: $ %s\nstdout:\n%s" % (
            timeout, " ".join(map(str, argv)), (expired.stdout or b"")[-2000:]), pytrace=False)
    return Run([str(a) for a in argv], result.returncode, result.stdout, result.stderr, time.monotonic() - started)


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
