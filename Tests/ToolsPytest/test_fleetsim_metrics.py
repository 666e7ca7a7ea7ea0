"""`fleetsim --metrics-listen`: the Prometheus text format on GET /metrics, read with urllib while
grpcio makes calls, parsed by the rules of the text exposition format (every sample belongs to a
family declared by a `# TYPE` line before it; names and labels as the format allows), and the
counters checked against the calls made.

    FLEETSIM=.build/debug/fleetsim python -m pytest -q Tests/ToolsPytest/test_fleetsim_metrics.py
"""

from __future__ import annotations

import math
import re
import time
import urllib.error
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

UNARY = "maps.fleetengine.v1.TripService/GetTrip"
STREAMING = "journeysharing.v1.TripStreamService/GetTrip"
# Trips at 600x real time, every 0.05 s: a followed trip ends within seconds.
FAST = ["--speedup", 600, "--update-interval", 0.05]

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$")


def parse_prometheus_text(text: str) -> tuple[dict, dict]:
    """({family: type}, {(name, frozenset(labels)): value}), failing on anything the text format
    (version 0.0.4) does not allow: a sample before its family's TYPE line, a TYPE given twice, a
    malformed name, label set or value, a repeated series."""
    types: dict[str, str] = {}
    samples: dict = {}
    assert text.endswith("\n"), "the exposition must end with a newline"
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        where = "line %d: %r" % (number, line)
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] == "TYPE":
                assert len(parts) == 4, where
                name, kind = parts[2], parts[3]
                assert METRIC_NAME.match(name), where
                assert kind in {"counter", "gauge", "histogram", "summary", "untyped"}, where
                assert name not in types, "TYPE given twice, " + where
                types[name] = kind
            continue
        match = SAMPLE.match(line)
        assert match, where
        name, label_text, value = match.group(1), match.group(2), match.group(3)
        family = next((f for f in (name, re.sub(r"_(bucket|sum|count)$", "", name)) if f in types), None)
        assert family is not None, "sample before (or without) its TYPE line, " + where
        labels = {}
        if label_text:
            rest = label_text.rstrip(",")
            position = 0
            while position < len(rest):
                label = LABEL.match(rest, position)
                assert label, where
                assert label.group(1) not in labels, where
                labels[label.group(1)] = label.group(2)
                position = label.end()
                if position < len(rest):
                    assert rest[position] == ",", where
                    position += 1
        number_value = float(value)  # also +Inf, -Inf, NaN
        if types[family] == "counter":
            assert number_value >= 0 and not math.isnan(number_value), where
        key = (name, frozenset(labels.items()))
        assert key not in samples, "series given twice, " + where
        samples[key] = number_value
    return types, samples


class Metrics:
    def __init__(self, address: str):
        self.url = "http://%s/metrics" % address

    def scrape(self) -> tuple[dict, dict]:
        with urllib.request.urlopen(self.url, timeout=10) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return parse_prometheus_text(response.read().decode("utf-8"))

    def value(self, name: str, **labels) -> float | None:
        return self.scrape()[1].get((name, frozenset(labels.items())))

    def wait_for(self, name: str, expected: float, timeout: float = 20, **labels) -> float | None:
        end = time.monotonic() + timeout
        while True:
            value = self.value(name, **labels)
            if value == expected or time.monotonic() > end:
                return value
            time.sleep(0.05)


def start_with_metrics(fsim_start, *flags) -> tuple:
    server = fsim_start("--metrics-listen", "127.0.0.1:0", *flags)
    line = server.process.stdout.readline()
    assert line.startswith("metrics on "), line
    return server, Metrics(line.strip()[len("metrics on "):])


def test_metrics_count_the_calls_by_method_and_status_and_the_updates_sent(fsim_start, fsim_pb):
    server, metrics = start_with_metrics(fsim_start, "--trips", 3, *FAST)
    types, _ = metrics.scrape()
    # Before any call: the families that do not depend on one are there, at zero.
    assert types["fleetsim_updates_sent_total"] == "counter"
    assert types["fleetsim_faults_injected_total"] == "counter"
    assert types["fleetsim_streams_open"] == "gauge"
    assert types["fleetsim_connections_open"] == "gauge"
    assert metrics.value("fleetsim_updates_sent_total") == 0

    get_trip = server.channel.unary_unary("/" + UNARY, request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=fsim_pb.Trip.FromString)
    stream = server.channel.unary_stream("/" + STREAMING, request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=fsim_pb.TripUpdate.FromString)
    for index in (0, 1):
        get_trip(fsim_pb.GetTripRequest(name="providers/demo/trips/trip-%d" % index), timeout=10)
    for name in ("providers/demo/trips/trip-7", "trip-1"):
        with pytest.raises(grpc.RpcError):
            get_trip(fsim_pb.GetTripRequest(name=name), timeout=10)
    updates = list(stream(fsim_pb.StreamTripRequest(name="providers/demo/trips/trip-2"), timeout=60))
    health_pb2_grpc.HealthStub(server.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    with pytest.raises(grpc.RpcError):
        server.channel.unary_unary("/made.up.Service/Method")(b"", timeout=10)

    types, samples = metrics.scrape()
    assert types["fleetsim_calls_total"] == "counter" and types["fleetsim_calls_started_total"] == "counter"

    def calls(method, code):
        return samples.get(("fleetsim_calls_total", frozenset({"method": method, "code": code}.items())), 0)

    def started(method):
        return samples.get(("fleetsim_calls_started_total", frozenset({"method": method}.items())), 0)

    assert started(UNARY) == 4
    assert calls(UNARY, "OK") == 2 and calls(UNARY, "NOT_FOUND") == 1 and calls(UNARY, "INVALID_ARGUMENT") == 1
    assert started(STREAMING) == 1 and calls(STREAMING, "OK") == 1
    assert calls("grpc.health.v1.Health/Check", "OK") == 1
    assert started("unknown") == 1 and calls("unknown", "UNIMPLEMENTED") == 1
    assert samples[("fleetsim_updates_sent_total", frozenset())] == len(updates) >= 2
    assert samples[("fleetsim_streams_open", frozenset())] == 0
    # Sampled every second: the one connection (the channel's).
    assert metrics.wait_for("fleetsim_connections_open", 1) == 1
    # Low cardinality: no label value names a trip or a path a client made up.
    for name, labels in samples:
        for key, value in labels:
            assert "providers/" not in value and "trip-" not in value and "made.up" not in value, (name, key, value)

    stats = server.stop()
    assert stats["unary"] == 4 and stats["updates"] == len(updates)


def test_open_streams_and_injected_faults(fsim_start, fsim_pb):
    server, metrics = start_with_metrics(fsim_start, "--trips", 2, "--load-rate", 20, "--fail-rate", 0.5,
                                         "--seed", 3)
    stream = server.channel.unary_stream("/" + STREAMING, request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=fsim_pb.TripUpdate.FromString)
    open_streams, failures = [], 0
    while len(open_streams) < 2:
        call = stream(fsim_pb.StreamTripRequest(name="providers/demo/trips/trip-0"), timeout=60)
        try:
            next(call)
            open_streams.append(call)
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.UNAVAILABLE
            failures += 1
        assert len(open_streams) + failures < 50
    assert metrics.wait_for("fleetsim_streams_open", 2) == 2
    assert metrics.value("fleetsim_faults_injected_total", fault="status") == failures
    assert metrics.value("fleetsim_calls_total", method=STREAMING, code="UNAVAILABLE") == failures
    assert metrics.value("fleetsim_faults_injected_total", fault="reset") == 0
    # The load generator's updates are counted (in batches, once per pass), while the streams run.
    before = metrics.value("fleetsim_updates_sent_total")
    end = time.monotonic() + 20
    while metrics.value("fleetsim_updates_sent_total") <= before:
        assert time.monotonic() < end, "no update counted in 20 s"
        time.sleep(0.05)
    for call in open_streams:
        call.cancel()
    assert metrics.wait_for("fleetsim_streams_open", 0) == 0
    assert metrics.value("fleetsim_calls_total", method=STREAMING, code="CANCELLED") == 2
    server.stop()


def test_other_paths_are_404_and_other_methods_405(fsim_start):
    server, metrics = start_with_metrics(fsim_start, "--trips", 1)
    base = metrics.url[:-len("/metrics")]
    for path in ("/", "/metricsx", "/metrics/extra"):
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(base + path, timeout=10)
        assert raised.value.code == 404, path
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(urllib.request.Request(metrics.url, data=b"x", method="POST"), timeout=10)
    assert raised.value.code == 405 and raised.value.headers["Allow"] == "GET, HEAD"
    with urllib.request.urlopen(urllib.request.Request(metrics.url, method="HEAD"), timeout=10) as response:
        assert response.status == 200 and response.read() == b""
    # A query string is not part of the path.
    with urllib.request.urlopen(metrics.url + "?x=1", timeout=10) as response:
        assert response.status == 200
    server.stop()


def test_metrics_listen_on_an_address_in_use_exits_7(fsim_start, tool_fleetsim):
    from tools_support import run
    server, metrics = start_with_metrics(fsim_start, "--trips", 1)
    taken = metrics.url.split("/")[2]
    result = run([tool_fleetsim, "--listen", "127.0.0.1:0", "--metrics-listen", taken], timeout=30)
    assert result.code == 7, result.describe()
    assert "metrics endpoint" in result.stderr
    result = run([tool_fleetsim, "--metrics-listen", "nohost"], timeout=30)
    assert result.code == 2, result.describe()
    server.stop()
