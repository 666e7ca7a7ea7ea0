"""`tripwatch follow` against a fake Fleet Engine that has only the unary
GetTrip (fake_fleet_engine.py, run as a subprocess): auto mode falls back to
polling without reporting UNIMPLEMENTED, sends the *_version fields and keeps
what the server leaves out, reports scripted failures as io.grpc errors and
still follows the trip to COMPLETE; an invalid trip name fails locally.

Run from the package root:

    swift build --product tripwatch
    TRIPWATCH=.build/debug/tripwatch python -m pytest -q Tests/FleetEngineFake

This process never imports the generated message modules (only the fake's
process does), so it runs in one pytest session with the other suites.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest

FEFAKE_HERE = Path(__file__).resolve().parent
FEFAKE_SCRIPT = FEFAKE_HERE / "fake_fleet_engine.py"
FEFAKE_TRIP = "providers/fake/trips/t1"
FEFAKE_STATUSES = ["NEW", "ENROUTE_TO_PICKUP", "ARRIVED_AT_PICKUP", "ENROUTE_TO_DROPOFF", "COMPLETE"]

@pytest.fixture(scope="session")
def fefake_tripwatch() -> str:
    """The tripwatch executable, from TRIPWATCH."""
    path = os.environ.get("TRIPWATCH")
    if not path:
        pytest.fail(
            "TRIPWATCH is not set. Build tripwatch and point the variable at it:\n"
            "    swift build --product tripwatch\n"
            "    export TRIPWATCH=$PWD/.build/debug/tripwatch", pytrace=False)
    p = Path(path)
    if not p.is_absolute():
        p = (Path.cwd() / p).resolve()
    if not p.is_file() or not os.access(p, os.X_OK):
        pytest.fail("TRIPWATCH=%s is not an executable file; build it with `swift build --product tripwatch`."
                    % path, pytrace=False)
    return str(p)


@pytest.fixture(scope="session")
def fefake_generated() -> None:
    """Generates the fake's message modules once per session (in a subprocess)."""
    result = subprocess.run([sys.executable, str(FEFAKE_SCRIPT), "--generate-only"],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        pytest.fail("generating the fake's message modules failed:\n%s%s" % (result.stdout, result.stderr))


class FakeFleetEngine:
    """A running fake_fleet_engine.py: its port, and its summary once stopped."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen(
            [sys.executable, str(FEFAKE_SCRIPT), "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.stderr = ""
        self.summary: dict | None = None
        ready = threading.Event()

        def read_stdout():
            for line in self.process.stdout:
                self.lines.append(line.rstrip("\n"))
                if line.startswith("listening on "):
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=read_stdout, daemon=True)
        self.reader.start()
        if not ready.wait(30) or not any(l.startswith("listening on ") for l in self.lines):
            self.process.kill()
            _, err = self.process.communicate(timeout=10)
            raise AssertionError("the fake did not start: %s\n%s" % (self.lines, err))
        address = next(l for l in self.lines if l.startswith("listening on ")).split()[-1]
        self.target = address
        self.port = int(address.rsplit(":", 1)[1])

    def stop(self) -> dict:
        """SIGTERM, then the JSON summary it printed."""
        if self.summary is not None:
            return self.summary
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError("the fake did not stop on SIGTERM")
        self.reader.join(timeout=10)
        self.stderr = self.process.stderr.read()
        self.process.stderr.close()
        assert self.process.returncode == 0, "fake exited %s: %s" % (self.process.returncode, self.stderr)
        summaries = [l for l in self.lines if l.startswith("{")]
        assert summaries, "no summary line: %s %s" % (self.lines, self.stderr)
        self.summary = json.loads(summaries[-1])
        return self.summary


@pytest.fixture
def fefake_server(fefake_generated):
    """Starts fakes with the given arguments; stops them after the test."""
    started: list[FakeFleetEngine] = []

    def start(*args: str) -> FakeFleetEngine:
        fake = FakeFleetEngine(*args)
        started.append(fake)
        return fake

    yield start
    for fake in started:
        if fake.summary is None and fake.process.poll() is None:
            try:
                fake.stop()
            except AssertionError:
                pass


def fefake_follow(tripwatch: str, target: str, *names: str, extra=(), timeout: float = 90):
    """Runs `tripwatch follow`; returns (exit code, JSON lines, stderr)."""
    cmd = [tripwatch, "follow", *names, "--target", target, "--plaintext", "--json", *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = []
    for line in result.stdout.splitlines():
        line = line.strip()
        if line:
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                raise AssertionError("not a JSON line: %r\nstderr: %s" % (line, result.stderr))
    return result.returncode, lines, result.stderr


FOLLOW_TO_THE_END = ["--mode", "auto", "--poll-interval", "0.1", "--until-complete", "--duration", "30"]


def test_auto_mode_polls_with_versions_to_complete(fefake_tripwatch, fefake_server):
    fake = fefake_server()
    code, lines, stderr = fefake_follow(fefake_tripwatch, fake.target, FEFAKE_TRIP, extra=FOLLOW_TO_THE_END)
    summary = fake.stop()
    assert code == 0, stderr
    assert all(l["trip"] == FEFAKE_TRIP for l in lines)
    statuses = [l["status"] for l in lines if l["event"] == "tripStatus"]
    # Every step is a poll 0.1 s after the last, so each status is seen, in order, COMPLETE once.
    assert statuses == FEFAKE_STATUSES, statuses
    # No error at all: in particular the missing streaming method (UNIMPLEMENTED) is not reported.
    errors = [l for l in lines if l["event"] == "error"]
    assert errors == [], errors
    assert not any("UNIMPLEMENTED" in json.dumps(l) for l in lines)
    states = [l["state"] for l in lines if l["event"] == "modelState"]
    assert states == ["active", "inactive"]
    assert lines[0]["event"] == "modelState" and lines[-1]["event"] == "modelState"
    # Every trip line names what changed; the first names everything present.
    trips = [l for l in lines if l["event"] == "trip"]
    assert all(t["updatedPropertyFields"] for t in trips)
    assert {"tripName", "tripStatus", "activeRoute", "remainingWaypoints"} <= set(trips[0]["updatedPropertyFields"])
    # The route was left out of answers whose version was current, and kept: it changes only with the leg
    # (set at the start, gone at the pickup, the second leg's, gone at the end).
    routes = [l for l in lines if l["event"] == "activeRoute"]
    assert [len(r["points"]) for r in routes] == [8, 0, 8, 0], routes
    # The fake: the stream was tried once, then unary calls carrying versions, some answered without route.
    assert summary["other_calls"] == 1, summary
    assert summary["get_trip_calls"] == 2 * 4 + 1, summary
    assert summary["versioned_requests"] >= summary["get_trip_calls"] - 1, summary
    assert summary["route_omitted"] >= 1, summary
    assert summary["waypoints_omitted"] >= 1, summary
    assert summary["completed"] == 1, summary
    assert summary["failed_calls"] == 0 and summary["invalid_names"] == 0, summary


def test_failures_are_reported_and_following_completes(fefake_tripwatch, fefake_server):
    fake = fefake_server("--fail-first", "3", "--fail-code", "UNAVAILABLE")
    code, lines, stderr = fefake_follow(fefake_tripwatch, fake.target, FEFAKE_TRIP, extra=FOLLOW_TO_THE_END)
    summary = fake.stop()
    assert code == 0, stderr
    errors = [l for l in lines if l["event"] == "error"]
    assert len(errors) == 3, errors
    for error in errors:
        assert error["domain"] == "io.grpc", error
        assert error["code"] == 14, error
        assert error["name"] == "UNAVAILABLE", error
        assert "scripted failure" in error["message"], error
    # The errors come before any trip, and following goes on to the end.
    first_trip = next(i for i, l in enumerate(lines) if l["event"] == "trip")
    assert all(i < first_trip for i, l in enumerate(lines) if l["event"] == "error")
    statuses = [l["status"] for l in lines if l["event"] == "tripStatus"]
    assert statuses == FEFAKE_STATUSES, statuses
    assert [l["state"] for l in lines if l["event"] == "modelState"] == ["active", "inactive"]
    assert summary["failed_calls"] == 3, summary
    assert summary["get_trip_calls"] == 3 + 2 * 4 + 1, summary
    assert summary["other_calls"] == 1, summary


def test_permission_denied_is_reported_with_its_code(fefake_tripwatch, fefake_server):
    fake = fefake_server("--fail-first", "2", "--fail-code", "PERMISSION_DENIED")
    code, lines, stderr = fefake_follow(fefake_tripwatch, fake.target, FEFAKE_TRIP, extra=FOLLOW_TO_THE_END)
    fake.stop()
    assert code == 0, stderr
    errors = [l for l in lines if l["event"] == "error"]
    assert [(e["domain"], e["code"], e["name"]) for e in errors] == [("io.grpc", 7, "PERMISSION_DENIED")] * 2
    assert [l["status"] for l in lines if l["event"] == "tripStatus"][-1] == "COMPLETE"


def test_an_invalid_trip_name_fails_locally(fefake_tripwatch, fefake_server):
    """tripwatch rejects a malformed name before any call (exit 3, INVALID_INPUT), and nothing reaches the server."""
    fake = fefake_server()
    code, lines, stderr = fefake_follow(fefake_tripwatch, fake.target, "trip-7", extra=["--duration", "1"])
    # Let anything (wrongly) sent arrive before asking the fake.
    time.sleep(0.2)
    summary = fake.stop()
    assert code == 3, (code, stderr)
    assert 'malformed trip name "trip-7"' in stderr and "providers/{provider}/trips/{trip}" in stderr, stderr
    assert not any(l["event"] == "trip" for l in lines), lines
    assert summary["calls"] == 0, summary


def test_the_fake_answers_other_methods_unimplemented(fefake_server):
    """The fake itself, through a raw grpcio channel (no message classes here)."""
    fake = fefake_server()
    with grpc.insecure_channel(fake.target) as channel:
        stream = channel.unary_stream("/journeysharing.v1.TripStreamService/GetTrip",
                                      request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as raised:
            list(stream(b"", timeout=10))
        assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
        unary = channel.unary_unary("/maps.fleetengine.v1.TripService/GetTrip",
                                    request_serializer=lambda b: b, response_deserializer=lambda b: b)
        # An empty GetTripRequest: no name.
        with pytest.raises(grpc.RpcError) as raised:
            unary(b"", timeout=10)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # name = "providers/fake/trips/t2" (field 3, length-delimited): a trip comes back.
        name = b"providers/fake/trips/t2"
        answer = unary(b"\x1a" + bytes([len(name)]) + name, timeout=10)
        assert name in answer
    summary = fake.stop()
    assert summary["other_calls"] == 1 and summary["get_trip_calls"] == 2 and summary["invalid_names"] == 1, summary
