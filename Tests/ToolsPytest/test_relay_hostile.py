"""The `tripwatch relay run` process against hostile watchers and careless operators, beside well-behaved
ones: watchers that never read, one caller naming thousands of trips, secrets on command lines and in URLs.

Real processes over loopback: a nats-server with JetStream, fleetsim, the relay; the hostile peer is Python's
h2 (sending exactly what the test scripts), the well-behaved one `tripwatch follow`. Each test measures the
relay from /proc (resident memory) and from what the well-behaved watcher got.

    TRIPWATCH=.build/debug/tripwatch FLEETSIM=.build/debug/fleetsim \\
        python -m pytest -q Tests/ToolsPytest/test_relay_hostile.py
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
from tools_support import rss_mib

STREAMING_GET_TRIP = "/journeysharing.v1.TripStreamService/GetTrip"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def nats_url(tmp_path):
    """A nats-server with JetStream on a free port of 127.0.0.1; its URL."""
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    port = free_port()
    process = subprocess.Popen(
        [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(tmp_path / "nats"), "-l",
         str(tmp_path / "nats.log")])
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield "nats://127.0.0.1:%d" % port
    process.terminate()
    process.wait(timeout=15)


class Relay:
    """A running `tripwatch relay run`."""

    def __init__(self, tripwatch: str, tmp_path: Path, *flags: str):
        self.stderr_path = tmp_path / ("relay-%d.stderr" % time.monotonic_ns())
        argv = [tripwatch, "relay", "run", "--listen", "127.0.0.1:0", "--stats-interval", "1", *flags]
        with self.stderr_path.open("w") as stderr:
            self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True)
        first = self.process.stdout.readline()
        if not first.startswith("listening on "):
            self.process.kill()
            raise AssertionError("relay did not start: %r\n%s" % (first, self.stderr()))
        self.address = first.strip()[len("listening on "):]
        self.port = int(self.address.rsplit(":", 1)[1])

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        return out


def grpc_request(name: str) -> bytes:
    """A StreamTripRequest naming `name` (field 2), framed for gRPC."""
    encoded = name.encode()
    message = bytes([0x12, len(encoded)]) + encoded
    return b"\x00" + struct.pack(">I", len(message)) + message


class HostileClient:
    """An h2 client that opens streams and, unless told, never reads: no WINDOW_UPDATE, a window of 0."""

    def __init__(self, port: int, window: int = 0):
        self.sock = socket.create_connection(("127.0.0.1", port))
        config = h2.config.H2Configuration(client_side=True)
        self.conn = h2.connection.H2Connection(config)
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
                                         h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100_000})
        self.conn.initiate_connection()
        self.flush()
        self.streams: list[int] = []

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def watch(self, name: str) -> int:
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, [
            (":method", "POST"), (":scheme", "http"), (":path", STREAMING_GET_TRIP),
            (":authority", "relay"), ("content-type", "application/grpc"), ("te", "trailers"),
        ])
        self.conn.send_data(stream, grpc_request(name), end_stream=True)
        self.streams.append(stream)
        return stream

    def read_events(self, seconds: float) -> list:
        """Reads for `seconds` (acknowledging nothing but what h2 must), returning the events."""
        self.sock.settimeout(0.1)
        events = []
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            events += self.conn.receive_data(data)
            self.flush()
        return events

    def close(self) -> None:
        self.sock.close()


def submit(tripwatch: str, nats_url: str, trips: list[str]) -> None:
    result = subprocess.run([tripwatch, "relay", "submit", "--nats", nats_url, *trips], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_watchers_that_never_read_stay_bounded_and_are_ended(tool_tripwatch, tool_server, nats_url, tmp_path):
    """200 watchers that never read, beside one that does: the relay's memory stays bounded, the reader gets
    its trip to the end, the non-readers are ended with RESOURCE_EXHAUSTED after the stall timeout."""
    sim = tool_server("--trips", "20", "--provider", "hostile", "--speedup", "40", "--update-interval", "0.1",
                      "--stats-interval", "0")
    relay = Relay(tool_tripwatch, tmp_path, "--nats", nats_url, "--provider", "hostile", "--target", sim.address,
                  "--plaintext", "--mode", "stream", "--insecure-no-auth", "--watcher-buffer-limit", "8192",
                  "--watcher-stall-timeout", "4")
    try:
        trips = ["providers/hostile/trips/trip-%d" % index for index in range(20)]
        submit(tool_tripwatch, nats_url, trips)
        hostile = HostileClient(relay.port)
        for index in range(200):
            hostile.watch(trips[index % 20])
        hostile.flush()
        baseline = rss_mib(relay.process.pid)
        good = subprocess.run(
            [tool_tripwatch, "follow", "--target", relay.address, "--plaintext", "--mode", "stream", "--json",
             "--until-complete", "--duration", "60", trips[0]],
            capture_output=True, text=True, timeout=90)
        peak = rss_mib(relay.process.pid)
        assert good.returncode == 0, good.stderr
        assert '"status":"COMPLETE"' in good.stdout or '"status":"CANCELED"' in good.stdout, good.stdout[-500:]
        # Past the stall timeout the non-readers are ended: reset with ENHANCE_YOUR_CALM (RESOURCE_EXHAUSTED for
        # gRPC), since a status would wait behind the data they do not take.
        events = hostile.read_events(8)
        resets = [event for event in events if isinstance(event, h2.events.StreamReset)]
        calm = [event for event in resets if event.error_code == 0xB]
        assert len(calm) >= 150, "only %d of 200 non-reading watchers were ended (%s)" % (
            len(calm), sorted({type(event).__name__ for event in events}))
        print("relay-hostile: non-readers: rss %.0f MiB before, %.0f MiB peak; %d reset ENHANCE_YOUR_CALM"
              % (baseline, peak, len(calm)))
        assert peak - baseline < 64, "the relay grew %.0f MiB" % (peak - baseline)
        hostile.close()
    finally:
        relay.stop()


def test_ten_thousand_names_from_one_caller(tool_tripwatch, tool_server, nats_url, tmp_path):
    """One connection naming 10,000 trips nobody follows: a bounded number are joined and enqueued, the rest are
    RESOURCE_EXHAUSTED at once, memory stays bounded, and a well-behaved watcher still follows its trip."""
    sim = tool_server("--trips", "2", "--provider", "flood", "--speedup", "40", "--update-interval", "0.2",
                      "--stats-interval", "0")
    relay = Relay(tool_tripwatch, tmp_path, "--nats", nats_url, "--provider", "flood", "--target", sim.address,
                  "--plaintext", "--mode", "stream", "--insecure-no-auth", "--max-concurrent-streams", "20000",
                  "--max-joins-per-caller", "200", "--submit-burst", "50", "--submits-per-second", "1")
    try:
        baseline = rss_mib(relay.process.pid)
        hostile = HostileClient(relay.port, window=1 << 20)
        events = []
        for index in range(10_000):
            hostile.watch("providers/flood/trips/nobody-%d" % index)
            if index % 200 == 0:
                hostile.flush()
                # The server's WINDOW_UPDATEs let the requests go on.
                events += hostile.read_events(0.05)
        hostile.flush()
        events += hostile.read_events(10)
        # A refusal is a Trailers-Only response: one HEADERS frame with grpc-status, ending the stream.
        with_status = [event for event in events
                       if isinstance(event, (h2.events.TrailersReceived, h2.events.ResponseReceived))]
        exhausted = sum(1 for event in with_status
                        if (b"grpc-status", b"8") in event.headers or ("grpc-status", "8") in event.headers)
        peak = rss_mib(relay.process.pid)
        assert exhausted >= 9_700, "only %d of 10,000 refused" % exhausted
        good = subprocess.run(
            [tool_tripwatch, "follow", "--target", relay.address, "--plaintext", "--mode", "stream", "--json",
             "--until-complete", "--duration", "60", "providers/flood/trips/trip-0"],
            capture_output=True, text=True, timeout=90)
        assert good.returncode == 0, good.stderr
        print("relay-hostile: 10,000 names: %d RESOURCE_EXHAUSTED at once; rss %.0f MiB before, %.0f MiB peak"
              % (exhausted, baseline, peak))
        assert peak - baseline < 128, "the relay grew %.0f MiB" % (peak - baseline)
        hostile.close()
    finally:
        relay.stop()


def test_no_secret_reaches_the_relay_commands_output(tool_tripwatch, tmp_path):
    """A NATS password in a URL, or in a token file, never shows: not in trace logs, not in errors."""
    password = "Pa55-never-printed-%d" % time.time_ns()
    closed = free_port()
    url = "nats://relay:%s@127.0.0.1:%d" % (password, closed)
    run = subprocess.run(
        [tool_tripwatch, "relay", "run", "--nats", url, "--provider", "p", "--insecure-no-auth", "--listen",
         "127.0.0.1:0", "--log-level", "trace", "--duration", "3", "--target", "127.0.0.1:1", "--plaintext"],
        capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "not ready" in run.stderr or "NATS" in run.stderr
    assert password not in run.stdout + run.stderr
    submit = subprocess.run([tool_tripwatch, "relay", "submit", "--nats", url, "providers/p/trips/t"],
                            capture_output=True, text=True, timeout=60)
    assert submit.returncode != 0
    assert "127.0.0.1:%d" % closed in submit.stderr and password not in submit.stderr, submit.stderr
    token_file = tmp_path / "token"
    token_file.write_text(password)
    with_token = subprocess.run(
        [tool_tripwatch, "relay", "submit", "--nats", "nats://127.0.0.1:%d" % closed, "--nats-token-file",
         str(token_file), "providers/p/trips/t"], capture_output=True, text=True, timeout=60)
    assert with_token.returncode != 0 and password not in with_token.stderr
    # A key file that is no regular file is refused at once, not read for ever.
    fifo = tmp_path / "fifo"
    import os
    os.mkfifo(fifo)
    refused = subprocess.run(
        [tool_tripwatch, "relay", "submit", "--nats", "nats://127.0.0.1:%d" % closed, "--nats-token-file",
         str(fifo), "providers/p/trips/t"], capture_output=True, text=True, timeout=20)
    assert refused.returncode == 3 and "not a regular file" in refused.stderr, refused.stderr


def test_metrics_and_health_of_a_relay(tool_tripwatch, tool_server, nats_url, tmp_path):
    """--metrics-listen serves the relay's metrics; the gRPC port answers grpc.health.v1 SERVING once ready."""
    sim = tool_server("--trips", "2", "--provider", "ops", "--speedup", "60", "--update-interval", "0.2",
                      "--stats-interval", "0")
    relay = Relay(tool_tripwatch, tmp_path, "--nats", nats_url, "--provider", "ops", "--target", sim.address,
                  "--plaintext", "--mode", "stream", "--insecure-no-auth", "--metrics-listen", "127.0.0.1:0")
    try:
        metrics_line = relay.process.stdout.readline()
        assert metrics_line.startswith("metrics on "), metrics_line
        metrics_address = metrics_line.strip()[len("metrics on "):]
        submit(tool_tripwatch, nats_url, ["providers/ops/trips/trip-0"])
        deadline = time.time() + 60
        body = ""
        while time.time() < deadline:
            body = urllib.request.urlopen("http://%s/metrics" % metrics_address, timeout=5).read().decode()
            if 'journeysharing_relay_follow_requests_total{outcome="acked"} 1' in body:
                break
            time.sleep(0.5)
        for name in ["journeysharing_relay_trips_held", "journeysharing_relay_publishes_total",
                     "journeysharing_relay_publish_latency_seconds", 'outcome="taken"']:
            assert name in body, name
        assert 'journeysharing_relay_follow_requests_total{outcome="acked"} 1' in body, body[-2000:]
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc
        with grpc.insecure_channel(relay.address) as channel:
            response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
            assert response.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        relay.stop()
