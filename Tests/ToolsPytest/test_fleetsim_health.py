"""The `fleetsim` process's health service and graceful shutdown, seen by real peers: the official
health client (grpcio-health-checking's grpc.health.v1 stubs over grpcio) for Check and Watch, and an
HTTP/2 client built from hyperframe and hpack (h2's own frame and header codecs) that keeps reading
its open streams after GOAWAY, as RFC 9113 §6.8 has a client do, to see the order of what a SIGTERM
sends on one connection: NOT_SERVING on the Watch stream, GOAWAY, the open streams served on through
the grace period, then ended with UNAVAILABLE, the connection closed, the final stats line, exit 0.

    FLEETSIM=.build/debug/fleetsim python -m pytest -q Tests/ToolsPytest/test_fleetsim_health.py
"""

from __future__ import annotations

import signal
import socket
import threading
import time
import urllib.request

import grpc
import hpack
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hyperframe.frame import (DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame, SettingsFrame,
                              WindowUpdateFrame)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
KNOWN_SERVICES = ["", "maps.fleetengine.v1.TripService", "journeysharing.v1.TripStreamService"]
WATCH = "/grpc.health.v1.Health/Watch"
UNARY_GET_TRIP = "/maps.fleetengine.v1.TripService/GetTrip"
STREAMING_GET_TRIP = "/journeysharing.v1.TripStreamService/GetTrip"


def health_stub(server) -> health_pb2_grpc.HealthStub:
    return health_pb2_grpc.HealthStub(server.channel)


def read_metrics_line(server) -> str:
    """The `metrics on HOST:PORT` line that follows `listening on` with --metrics-listen."""
    line = server.process.stdout.readline()
    assert line.startswith("metrics on "), line
    return line.strip()[len("metrics on "):]


def counter(metrics_address: str, name: str, **labels) -> float:
    """One sample's value from /metrics (0 when absent)."""
    text = urllib.request.urlopen("http://%s/metrics" % metrics_address, timeout=10).read().decode()
    wanted = ",".join('%s="%s"' % item for item in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, value = line.rsplit(" ", 1)
        metric, _, rest = series.partition("{")
        if metric == name and ",".join(sorted(rest.rstrip("}").split(","))) == wanted:
            return float(value)
    return 0.0


# ---------------------------------------------------------------------------
# Check and Watch with the official client

def test_check_reports_serving_for_the_server_and_both_trip_services(fsim_start):
    server = fsim_start("--trips", 1)
    stub = health_stub(server)
    for service in KNOWN_SERVICES:
        response = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert response.status == SERVING, service
    server.stop()


@pytest.mark.parametrize("service", ["grpc.health.v1.Health", "maps.fleetengine.v1.VehicleService", "nope"])
def test_check_of_an_unknown_service_is_not_found(fsim_start, service):
    server = fsim_start("--trips", 1)
    with pytest.raises(grpc.RpcError) as raised:
        health_stub(server).Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    server.stop()


def test_watch_of_an_unknown_service_is_service_unknown_and_stays_open(fsim_start):
    server = fsim_start("--trips", 1)
    watch = health_stub(server).Watch(health_pb2.HealthCheckRequest(service="nope"), timeout=30)
    assert next(watch).status == SERVICE_UNKNOWN
    # Still open half a second later: only our cancel ends it.
    timer = threading.Timer(0.5, watch.cancel)
    timer.start()
    with pytest.raises(grpc.RpcError) as raised:
        next(watch)
    timer.join()
    assert raised.value.code() == grpc.StatusCode.CANCELLED
    server.stop()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_watch_sees_serving_then_not_serving_when_the_process_is_told_to_stop(fsim_start, sig):
    server = fsim_start("--trips", 1)
    stub = health_stub(server)
    watches = [stub.Watch(health_pb2.HealthCheckRequest(service=service), timeout=30) for service in KNOWN_SERVICES]
    for watch in watches:
        assert next(watch).status == SERVING
    server.process.send_signal(sig)
    for watch in watches:
        assert next(watch).status == NOT_SERVING
        # Nothing else is open, so the drain ends at once, and the watches with it.
        with pytest.raises(grpc.RpcError) as raised:
            next(watch)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
        assert raised.value.details() == "server shutting down"
    # stop() after the signal: it reads the final stats line and checks the exit status (0).
    stats = server.stop(sig)
    assert stats["open"] == 0 and stats["connections_open"] == 0


# ---------------------------------------------------------------------------
# The SIGTERM sequence on one connection

def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


class FrameClient:
    """An HTTP/2 client on hyperframe and hpack that records every frame it receives, in order,
    answers SETTINGS and PING, returns every DATA byte to the flow-control windows, and keeps reading
    after GOAWAY until the server closes the connection."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.buffer = b""
        self.frames: list = []            # (Frame, decoded headers or None)
        self.closed = False
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize())

    def request(self, stream_id: int, path: str, message: bytes) -> None:
        headers = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "fleetsim"),
                   ("content-type", "application/grpc"), ("te", "trailers")]
        self.sock.sendall(HeadersFrame(stream_id, data=self.encoder.encode(headers), flags=["END_HEADERS"]).serialize()
                          + DataFrame(stream_id, data=grpc_frame(message), flags=["END_STREAM"]).serialize())

    def _read_frame(self) -> bool:
        while len(self.buffer) < 9 or len(self.buffer) < 9 + int.from_bytes(self.buffer[:3], "big"):
            try:
                received = self.sock.recv(65536)
            except ConnectionResetError:
                received = b""
            if not received:
                self.closed = True
                return False
            self.buffer += received
        frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
        frame.parse_body(memoryview(self.buffer[9:9 + length]))
        self.buffer = self.buffer[9 + length:]
        headers = None
        if isinstance(frame, HeadersFrame):
            assert "END_HEADERS" in frame.flags, "CONTINUATION is not expected for these small headers"
            headers = {name: value for name, value in self.decoder.decode(frame.data)}
        elif isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
            self.sock.sendall(SettingsFrame(0, flags=["ACK"]).serialize())
        elif isinstance(frame, PingFrame) and "ACK" not in frame.flags:
            self.sock.sendall(PingFrame(0, opaque_data=frame.opaque_data, flags=["ACK"]).serialize())
        elif isinstance(frame, DataFrame) and frame.flow_controlled_length:
            self.sock.sendall(WindowUpdateFrame(0, window_increment=frame.flow_controlled_length).serialize()
                              + WindowUpdateFrame(frame.stream_id,
                                                  window_increment=frame.flow_controlled_length).serialize())
        self.frames.append((frame, headers))
        return True

    def read_until(self, condition, timeout: float = 30) -> bool:
        self.sock.settimeout(timeout)
        end = time.monotonic() + timeout
        while not condition():
            if self.closed or time.monotonic() > end:
                return condition()
            try:
                self._read_frame()
            except socket.timeout:
                return condition()
        return True

    def messages(self, stream_id: int, frames=None) -> list[bytes]:
        data = b"".join(f.data for f, _ in (frames or self.frames)
                        if isinstance(f, DataFrame) and f.stream_id == stream_id)
        out = []
        while len(data) >= 5:
            length = int.from_bytes(data[1:5], "big")
            out.append(data[5:5 + length])
            data = data[5 + length:]
        return out

    def index(self, predicate) -> int | None:
        return next((i for i, (frame, headers) in enumerate(self.frames) if predicate(frame, headers)), None)


def test_sigterm_sends_not_serving_then_goaway_serves_open_streams_through_the_grace_period_then_ends_them(
        fsim_start, fsim_pb):
    # Load generation: the stream gets an update every 50 ms and never ends by itself.
    server = fsim_start("--trips", 1, "--load-rate", 20, "--drain-timeout", 1.5)
    client = FrameClient(int(server.address.rsplit(":", 1)[1]))
    watch_id, trip_id = 1, 3
    client.request(watch_id, WATCH, health_pb2.HealthCheckRequest(service="").SerializeToString())
    request = fsim_pb.StreamTripRequest(name="providers/demo/trips/trip-0")
    client.request(trip_id, STREAMING_GET_TRIP, request.SerializeToString())
    assert client.read_until(lambda: len(client.messages(watch_id)) >= 1 and len(client.messages(trip_id)) >= 3)
    assert health_pb2.HealthCheckResponse.FromString(client.messages(watch_id)[0]).status == SERVING
    before = len(client.frames)

    server.process.send_signal(signal.SIGTERM)
    assert client.read_until(lambda: client.closed, timeout=30), "the connection was not closed"
    after = client.frames[before:]

    def at(predicate) -> int:
        index = next((i for i, (frame, headers) in enumerate(after) if predicate(frame, headers)), None)
        assert index is not None, "missing: %s" % [type(f).__name__ for f, _ in after]
        return index

    not_serving = at(lambda f, h: isinstance(f, DataFrame) and f.stream_id == watch_id
                     and health_pb2.HealthCheckResponse.FromString(f.data[5:]).status == NOT_SERVING)
    goaway = at(lambda f, h: isinstance(f, GoAwayFrame))
    trip_end = at(lambda f, h: isinstance(f, HeadersFrame) and f.stream_id == trip_id)
    watch_end = at(lambda f, h: isinstance(f, HeadersFrame) and f.stream_id == watch_id)
    assert not_serving < goaway < trip_end, [type(f).__name__ for f, _ in after]
    goaway_frame = after[goaway][0]
    assert goaway_frame.error_code == 0 and goaway_frame.last_stream_id >= trip_id
    # The open stream is served on during the grace period, after the GOAWAY.
    served_after_goaway = client.messages(trip_id, after[goaway + 1:trip_end])
    assert len(served_after_goaway) >= 3, "%d updates after GOAWAY" % len(served_after_goaway)
    for end in (trip_end, watch_end):
        frame, trailers = after[end]
        assert "END_STREAM" in frame.flags
        assert trailers["grpc-status"] == "14" and trailers["grpc-message"] == "server shutting down", trailers

    stats = server.stop()
    assert server.process.returncode == 0
    assert stats["open"] == 0 and stats["connections_open"] == 0
    assert server.output[-1].startswith("stats: ")


def test_a_call_in_flight_at_sigterm_finishes_and_the_drain_does_not_wait_out_its_grace_period(fsim_start, fsim_pb):
    # Every call is answered 1 s late; the grace period (60 s) is far longer than stop()'s wait (20 s).
    server = fsim_start("--trips", 2, "--latency", 1, "--drain-timeout", 60, "--metrics-listen", "127.0.0.1:0")
    metrics = read_metrics_line(server)
    get_trip = server.channel.unary_unary(UNARY_GET_TRIP, request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=fsim_pb.Trip.FromString)
    future = get_trip.future(fsim_pb.GetTripRequest(name="providers/demo/trips/trip-1"), timeout=30)
    # The call has reached the service (and is being delayed) before the signal.
    end = time.monotonic() + 20
    while counter(metrics, "fleetsim_calls_started_total", method=UNARY_GET_TRIP[1:]) < 1:
        assert time.monotonic() < end, "the call never reached the server"
        time.sleep(0.02)
    server.process.send_signal(signal.SIGTERM)
    assert future.result(timeout=30).name == "providers/demo/trips/trip-1"
    stats = server.stop(timeout=20)
    assert stats["unary"] == 1 and stats["fault_delayed"] == 1
