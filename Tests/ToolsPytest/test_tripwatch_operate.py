"""`tripwatch follow` operated as a service: `--metrics-listen` (the library's metrics in Prometheus text,
scraped with urllib and checked against what fleetsim says it sent), and SIGTERM/SIGINT (the summary line,
exit 0, the connection closed). Real processes on 127.0.0.1.

    FLEETSIM=.build/debug/fleetsim TRIPWATCH=.build/debug/tripwatch \
        python -m pytest -q Tests/ToolsPytest/test_tripwatch_operate.py
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import pytest

from test_fleetsim_metrics import Metrics, start_with_metrics

STREAMING = "journeysharing.v1.TripStreamService/GetTrip"
# Trips at 600x real time, every 0.05 s: a followed trip ends within seconds.
FAST = ["--speedup", 600, "--update-interval", 0.05]


class Tripwatch:
    """A running `tripwatch follow`, its stdout read line by line on a thread."""

    def __init__(self, argv: list):
        self.process = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def output(self) -> list[str]:
        with self._lock:
            return list(self.lines)

    def wait_for_line(self, predicate, timeout: float = 30) -> str | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in self.output():
                if predicate(line):
                    return line
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        return None

    def metrics_address(self) -> str:
        line = self.process.stderr.readline()
        assert line.startswith("metrics on "), line
        return line.strip()[len("metrics on "):]

    def stop(self, sig: int, timeout: float = 20) -> tuple[int, list[str], str]:
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("tripwatch did not exit within %.0f s of signal %d" % (timeout, sig))
        self._reader.join(timeout=5)
        return self.process.returncode, self.output(), self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def tripwatch_follow(tool_tripwatch):
    started: list[Tripwatch] = []

    def start(address: str, *arguments) -> Tripwatch:
        watch = Tripwatch([tool_tripwatch, "follow", "--target", address, "--plaintext", *arguments])
        started.append(watch)
        return watch

    yield start
    for watch in started:
        watch.kill()


def trip(index: int) -> str:
    return "providers/demo/trips/trip-%d" % index


def summary_counts(line: str) -> dict:
    """`summary: 4 trips, 3 final (…), 1 following, 0 given up, 57 updates, 3 errors` as numbers by word."""
    assert line.startswith("summary: "), line
    words = line[len("summary: "):].replace("(", "").replace(")", "").replace(",", "").split()
    counts = {}
    for number, word in zip(words, words[1:]):
        if number.isdigit():
            counts[word] = int(number)
    return counts


def test_metrics_count_what_tripwatch_followed(fsim_start, tripwatch_follow):
    server, fleet_metrics = start_with_metrics(fsim_start, "--trips", 3, *FAST)
    # Three trips that end within seconds, and one the server does not have (NOT_FOUND, retried with backoff):
    # tripwatch keeps running after the three ended, so its /metrics can be read with nothing left moving.
    watch = tripwatch_follow(server.address, "--summary", "--summary-interval", 0.2, "--metrics-listen",
                             "127.0.0.1:0", "--event-loops", 2, trip(0), trip(1), trip(2), trip(99))
    metrics = Metrics(watch.metrics_address())
    three_final = watch.wait_for_line(lambda line: line.startswith("summary: ") and " 3 final " in line, timeout=60)
    assert three_final, watch.output()

    types, _ = metrics.scrape()
    for name, kind in [("journeysharing_updates_received_total", "counter"),
                       ("journeysharing_updates_delivered_total", "counter"),
                       ("journeysharing_calls_started_total", "counter"),
                       ("journeysharing_calls_ended_total", "counter"),
                       ("journeysharing_connection_attempts_total", "counter"),
                       ("journeysharing_connection_failures_total", "counter"),
                       ("journeysharing_goaways_received_total", "counter"),
                       ("journeysharing_polls_waited_for_budget_total", "counter"),
                       ("journeysharing_connections_open", "gauge"),
                       ("journeysharing_streams_open", "gauge"),
                       ("journeysharing_trips_followed", "gauge"),
                       ("journeysharing_subscribers", "gauge"),
                       ("journeysharing_delivery_latency_seconds", "histogram"),
                       ("journeysharing_poll_round_trip_seconds", "histogram"),
                       ("journeysharing_time_to_first_update_seconds", "histogram")]:
        assert types.get(name) == kind, (name, types.get(name))

    # Every update fleetsim sent was received once (the missing trip gets none).
    sent = fleet_metrics.value("fleetsim_updates_sent_total")
    assert sent and sent > 3
    assert metrics.wait_for("journeysharing_updates_received_total", sent, method=STREAMING) == sent
    # The gauges, sampled every second: one trip still followed (the missing one), four subscribers, and the
    # connections fleetsim counts: one per event loop with trips on it (two loops, so one or two).
    assert metrics.wait_for("journeysharing_trips_followed", 1) == 1
    assert metrics.wait_for("journeysharing_subscribers", 4) == 4
    connections = fleet_metrics.value("fleetsim_connections_open")
    assert connections in (1, 2), connections
    assert metrics.wait_for("journeysharing_connections_open", connections) == connections
    assert metrics.value("journeysharing_connection_attempts_total") == connections
    assert metrics.value("journeysharing_connection_failures_total") == 0

    # Deliveries are tallied by the delivery threads and flushed into the counter once per metrics sample
    # (`metricsSampleInterval`, 1 s): scrape again until the last sample after the callbacks tripwatch counted.
    counted = summary_counts(watch.output()[-1])
    end = time.monotonic() + 5
    while True:
        _, samples = metrics.scrape()

        def total(name, **labels):
            return sum(value for (sample, sample_labels), value in samples.items()
                       if sample == name and set(labels.items()) <= set(sample_labels))

        if total("journeysharing_updates_delivered_total") >= counted["updates"] or time.monotonic() > end:
            break
        time.sleep(0.1)

    # Calls: the three trips' streams and the missing trip's attempts, each refused one ended NOT_FOUND.
    started = total("journeysharing_calls_started_total", method=STREAMING)
    assert started >= 4
    assert started == fleet_metrics.value("fleetsim_calls_started_total", method=STREAMING)
    not_found = total("journeysharing_calls_ended_total", method=STREAMING, code="NOT_FOUND")
    assert not_found >= 1
    assert total("journeysharing_calls_ended_total", method=STREAMING) <= started
    # Deliveries: at least one per trip callback tripwatch counted (plus model-state and error deliveries).
    assert total("journeysharing_updates_delivered_total") >= counted["updates"] > 0
    # One time to first update per trip that got one; latencies for the deliveries carrying a send time.
    assert total("journeysharing_time_to_first_update_seconds_count") == 3
    latencies = total("journeysharing_delivery_latency_seconds_count")
    assert 3 <= latencies <= total("journeysharing_updates_delivered_total")
    # No trip name in any label.
    assert not any("trips/" in value for (_, labels) in samples for (_, value) in labels)

    code, output, _ = watch.stop(signal.SIGTERM)
    assert code == 0
    assert summary_counts(output[-1])["final"] == 3


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_prints_the_summary_and_exits_0(fsim_start, tripwatch_follow, sig):
    # Trips in real time: still under way when the signal comes.
    server, fleet_metrics = start_with_metrics(fsim_start, "--trips", 2, "--update-interval", 0.1)
    watch = tripwatch_follow(server.address, trip(0), trip(1))
    assert watch.wait_for_line(lambda line: " trip " in line, timeout=30), watch.output()
    assert fleet_metrics.wait_for("fleetsim_streams_open", 2) == 2
    code, output, stderr = watch.stop(sig)
    assert code == 0, (output[-5:], stderr)
    # Callbacks were printed (no --summary); the summary line is the last line all the same.
    assert any(" trip " in line for line in output[:-1])
    counts = summary_counts(output[-1])
    assert counts["trips"] == 2 and counts["following"] == 2 and counts["updates"] >= 1
    # The streams were cancelled and the connection closed before tripwatch exited: fleetsim has none open.
    assert fleet_metrics.wait_for("fleetsim_streams_open", 0) == 0
    assert fleet_metrics.wait_for("fleetsim_connections_open", 0) == 0
    stats = server.stop()
    assert stats["streams"] == 2


def test_json_summary_on_sigterm(fsim_start, tripwatch_follow):
    server = fsim_start("--trips", 1, "--update-interval", 0.1)
    watch = tripwatch_follow(server.address, "--json", trip(0))
    assert watch.wait_for_line(lambda line: '"event":"trip"' in line, timeout=30), watch.output()
    code, output, _ = watch.stop(signal.SIGTERM)
    assert code == 0
    assert output[-1].startswith('{"event":"summary","trips":1,'), output[-1]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_demo_stops_on_a_signal_with_its_summary_and_exit_0(tool_tripwatch, sig):
    """`tripwatch demo` runs in a ServiceGroup too: a signal while trips are under way prints the summary and
    exits 0 (without one, --duration running out is exit 6)."""
    process = subprocess.Popen([tool_tripwatch, "demo", "--plain", "--trips", "3", "--speedup", "5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        assert first.startswith("trip-"), first
        time.sleep(1.0)
        process.send_signal(sig)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, (out[-2000:], err[-2000:])
    last = out.strip().splitlines()[-1]
    assert last.startswith("summary: 3 trips followed, 0 completed, 0 canceled, 3 unfinished, "), last
