"""The `fleetsim` binary seen from Python's grpcio with the official message
classes (generated from Protos/): unary and streaming GetTrip, JWT auth with
HS256 and RS256, fault injection, the stats lines, and determinism across a
restart.

Every test starts its own server(s) (see conftest.py); all run in a few seconds
thanks to high speed-ups.
"""

from __future__ import annotations

import math
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from google.protobuf import unknown_fields

UNARY_GET_TRIP = "/maps.fleetengine.v1.TripService/GetTrip"
STREAMING_GET_TRIP = "/journeysharing.v1.TripStreamService/GetTrip"
CITY_CENTER = (52.3676, 4.9041)
HS256_SECRET = "fleetsim-python-tests-hs256-secret-0123456789"  # at least 32 bytes
ENROUTE = {"ENROUTE_TO_PICKUP", "ENROUTE_TO_INTERMEDIATE_DESTINATION", "ENROUTE_TO_DROPOFF"}
FINAL = {"COMPLETE", "CANCELED"}


def trip_name(index: int, provider: str = "demo") -> str:
    return "providers/%s/trips/trip-%d" % (provider, index)


def metadata(token: str | None = None, raw: str | None = None):
    if raw is not None:
        return [("authorization", raw)]
    return [("authorization", "Bearer " + token)] if token is not None else None


class Client:
    """GetTrip over a grpcio channel, with the generated message classes."""

    def __init__(self, server, pb):
        self.pb = pb
        self.unary = server.channel.unary_unary(
            UNARY_GET_TRIP, request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.Trip.FromString)
        self.unary_raw = server.channel.unary_unary(
            UNARY_GET_TRIP, request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=lambda data: data)
        self.streaming = server.channel.unary_stream(
            STREAMING_GET_TRIP, request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.TripUpdate.FromString)

    def request(self, name: str, route_format: str = "LAT_LNG_LIST_TYPE", versions_of=None):
        request = self.pb.GetTripRequest(
            name=name, view=self.pb.TripView.Value("JOURNEY_SHARING_V1S"),
            route_format_type=self.pb.PolylineFormatType.Value(route_format))
        if versions_of is not None:
            for field in ("current_route_segment_version", "remaining_waypoints_version",
                          "current_route_segment_traffic_version", "remaining_waypoints_route_version"):
                if versions_of.HasField(field):
                    getattr(request, field).CopyFrom(getattr(versions_of, field))
        return request

    def get_trip(self, name: str, route_format: str = "LAT_LNG_LIST_TYPE", versions_of=None, md=None):
        return self.unary(self.request(name, route_format, versions_of), metadata=md, timeout=10)

    def get_trip_bytes(self, name: str) -> bytes:
        return self.unary_raw(self.request(name), timeout=10)

    def unary_code(self, name: str, md=None) -> grpc.StatusCode:
        try:
            self.get_trip(name, md=md)
            return grpc.StatusCode.OK
        except grpc.RpcError as error:
            return error.code()

    def stream(self, name: str, route_format: str = "LAT_LNG_LIST_TYPE", md=None, timeout: float = 20):
        request = self.pb.StreamTripRequest(
            name=name, view=self.pb.TripView.Value("JOURNEY_SHARING_V1S"),
            route_format_type=self.pb.PolylineFormatType.Value(route_format))
        return self.streaming(request, metadata=md, timeout=timeout)

    def follow(self, name: str, route_format: str = "LAT_LNG_LIST_TYPE", md=None):
        """Reads a stream to its end: (updates, status code)."""
        call = self.stream(name, route_format, md)
        updates = []
        try:
            for update in call:
                updates.append(update)
        except grpc.RpcError as error:
            return updates, error.code()
        return updates, call.code()

    def stream_code(self, name: str, md=None) -> grpc.StatusCode:
        """The status of a stream, cancelling it (OK) once a first update arrived."""
        call = self.stream(name, md=md)
        try:
            for _ in call:
                call.cancel()
                return grpc.StatusCode.OK
        except grpc.RpcError as error:
            return error.code()
        return call.code()


def status_name(pb, trip) -> str:
    return pb.TripStatus.Name(trip.trip_status)


def assert_no_unknown_fields(message, path: str = "trip") -> None:
    """Everything the server sent is known to the official descriptors, at every level."""
    assert len(unknown_fields.UnknownFieldSet(message)) == 0, "unknown fields in %s" % path
    for fd, value in message.ListFields():
        if fd.message_type is None:
            continue
        if fd.is_repeated:
            for i, item in enumerate(value):
                assert_no_unknown_fields(item, "%s.%s[%d]" % (path, fd.name, i))
        else:
            assert_no_unknown_fields(value, "%s.%s" % (path, fd.name))


def decode_polyline(encoded: str, precision: int = 5) -> list[tuple[float, float]]:
    """Google's encoded polyline algorithm, decoded independently of the Swift code."""
    points, index, lat, lng = [], 0, 0, 0
    factor = 10 ** precision
    while index < len(encoded):
        deltas = []
        for _ in range(2):
            shift = result = 0
            while True:
                b = ord(encoded[index]) - 63
                index += 1
                result |= (b & 0x1F) << shift
                shift += 5
                if b < 0x20:
                    break
            deltas.append(~(result >> 1) if result & 1 else result >> 1)
        lat += deltas[0]
        lng += deltas[1]
        points.append((lat / factor, lng / factor))
    return points


def apply_update(pb, state, update) -> None:
    """Folds a TripUpdate into `state` as the proto's comments say: a full trip
    replaces everything; otherwise each listed field takes its value in `trip`,
    or is cleared when `trip` does not set it."""
    if update.full_trip:
        state.CopyFrom(update.trip)
        return
    listed = set(update.updated_fields)
    by_number = pb.Trip.DESCRIPTOR.fields_by_number
    partial = pb.Trip()
    partial.CopyFrom(update.trip)
    for fd, _ in update.trip.ListFields():
        if fd.number not in listed:
            partial.ClearField(fd.name)
    for number in listed:
        if number in by_number:
            state.ClearField(by_number[number].name)
    state.MergeFrom(partial)


def near_city(lat: float, lng: float) -> bool:
    return abs(lat - CITY_CENTER[0]) < 0.1 and abs(lng - CITY_CENTER[1]) < 0.15


# ---------------------------------------------------------------------------
# Unary GetTrip

def test_unary_get_trip_parses_with_the_official_descriptors(fsim_start, fsim_pb):
    pb = fsim_pb
    # 20 s in at speed-up 30: ten minutes into the trips, most of them on the way somewhere.
    server = fsim_start("--trips", 10, "--seed", 1, "--speedup", 30, "--start-time", time.time() - 20)
    client = Client(server, pb)
    statuses = set()
    enroute = []
    for index in range(10):
        trip = client.get_trip(trip_name(index))
        assert_no_unknown_fields(trip)
        status = status_name(pb, trip)
        statuses.add(status)
        assert trip.name == trip_name(index)
        assert trip.vehicle_id == "vehicle-%d" % index
        assert status not in ("UNKNOWN_TRIP_STATUS",)
        assert pb.TripView.Name(trip.view) == "JOURNEY_SHARING_V1S"
        assert 1 <= trip.number_of_passengers <= 4
        location = trip.last_location
        assert location.HasField("location") and near_city(location.location.latitude, location.location.longitude)
        assert 0 <= location.heading.value < 360
        assert location.HasField("server_time") and location.HasField("update_time")
        for point in (trip.pickup_point.point, trip.dropoff_point.point):
            assert near_city(point.latitude, point.longitude)
        if status in ENROUTE:
            enroute.append(index)
            assert len(trip.route) >= 2 and trip.current_route_segment == ""
            assert trip.HasField("current_route_segment_version")
            assert trip.HasField("current_route_segment_traffic")
            assert trip.remaining_distance_meters.value > 0
            assert trip.remaining_waypoints and all(len(w.path_to_waypoint) >= 2 for w in trip.remaining_waypoints)
            eta = trip.eta_to_first_waypoint.ToNanoseconds()
            assert eta >= location.server_time.ToNanoseconds()
        if status == "COMPLETE":
            assert trip.HasField("actual_dropoff_point") and not trip.route and not trip.remaining_waypoints
    assert statuses <= set(pb.TripStatus.keys())
    assert enroute, "no trip on the way anywhere: %s" % statuses

    # The encoded polyline is the same route (to 1e-5 degrees) as the LatLng list.
    index = enroute[0]
    as_list = client.get_trip(trip_name(index))
    encoded = client.get_trip(trip_name(index), route_format="ENCODED_POLYLINE_TYPE")
    assert_no_unknown_fields(encoded)
    assert not encoded.route and encoded.current_route_segment
    assert all(not w.path_to_waypoint and w.encoded_path_to_waypoint for w in encoded.remaining_waypoints)
    if encoded.current_route_segment_version == as_list.current_route_segment_version:  # same leg
        decoded = decode_polyline(encoded.current_route_segment)
        assert len(decoded) == len(as_list.route)
        for (lat, lng), point in zip(decoded, as_list.route):
            assert math.isclose(lat, point.latitude, abs_tol=1.1e-5)
            assert math.isclose(lng, point.longitude, abs_tol=1.1e-5)

    # The versions of a response sent back: route, traffic and waypoints are left out while unchanged.
    again = client.get_trip(trip_name(index), versions_of=as_list)
    if again.current_route_segment_version == as_list.current_route_segment_version:
        assert not again.route and not again.HasField("current_route_segment_traffic")
        assert not again.remaining_waypoints
        assert again.HasField("last_location") and again.HasField("remaining_distance_meters")

    stats = server.stop()
    assert stats["unary"] == 10 + 3
    assert stats["not_found"] == stats["invalid_argument"] == stats["unauthenticated"] == 0


def test_malformed_names_and_unknown_trips(fsim_start, fsim_pb):
    server = fsim_start("--trips", 5, "--provider", "acme")
    client = Client(server, fsim_pb)
    assert client.unary_code(trip_name(4, "acme")) == grpc.StatusCode.OK
    for name in ("", "trips/trip-1", "providers/acme/trip-1", "providers//trips/trip-1",
                 "providers/acme/trips/", "providers/acme/trips/trip-1/extra"):
        assert client.unary_code(name) == grpc.StatusCode.INVALID_ARGUMENT, name
    for name in (trip_name(5, "acme"), trip_name(1, "demo"), "providers/acme/trips/trip-01",
                 "providers/acme/trips/nope"):
        assert client.unary_code(name) == grpc.StatusCode.NOT_FOUND, name
    assert client.stream_code("trips/trip-1") == grpc.StatusCode.INVALID_ARGUMENT
    assert client.stream_code(trip_name(9, "acme")) == grpc.StatusCode.NOT_FOUND
    stats = server.stop()
    assert stats["unary"] == 11 and stats["streams"] == 2
    assert stats["invalid_argument"] == 7 and stats["not_found"] == 5


# ---------------------------------------------------------------------------
# Streaming GetTrip

def test_streaming_get_trip_sends_full_then_partial_updates_until_the_end(fsim_start, fsim_pb):
    pb = fsim_pb
    # Speed-up 600: the trips (3–30 simulated minutes) end within a few seconds.
    server = fsim_start("--trips", 4, "--seed", 2, "--speedup", 600, "--update-interval", 0.05)
    client = Client(server, pb)
    jobs = [(0, "LAT_LNG_LIST_TYPE"), (1, "LAT_LNG_LIST_TYPE"), (2, "ENCODED_POLYLINE_TYPE"), (3, "LAT_LNG_LIST_TYPE")]
    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(lambda job: client.follow(trip_name(job[0]), job[1]), jobs))

    received = 0
    for (index, route_format), (updates, code) in zip(jobs, results):
        received += len(updates)
        assert code == grpc.StatusCode.OK, "trip-%d: %s" % (index, code)
        assert len(updates) >= 3, "trip-%d: %d updates" % (index, len(updates))
        assert [u.sequence for u in updates] == list(range(1, len(updates) + 1))
        first = updates[0]
        assert first.full_trip and not first.updated_fields and first.trip.name == trip_name(index)
        state = pb.Trip()
        statuses = []
        last_send = 0
        for position, update in enumerate(updates):
            assert_no_unknown_fields(update, "update %d" % update.sequence)
            send = update.send_time.ToNanoseconds()
            assert send >= last_send
            last_send = send
            if position > 0:
                fields = list(update.updated_fields)
                assert not update.full_trip and fields
                assert fields == sorted(set(fields))
                assert all(number in pb.Trip.DESCRIPTOR.fields_by_number for number in fields)
                # The partial trip holds only listed fields.
                assert {fd.number for fd, _ in update.trip.ListFields()} <= set(fields)
            apply_update(pb, state, update)
            status = status_name(pb, state)
            if not statuses or statuses[-1] != status:
                statuses.append(status)
            # The final state comes last, and only last.
            assert (status in FINAL) == (position == len(updates) - 1), \
                "trip-%d update %d: %s" % (index, update.sequence, status)
        assert len(statuses) >= 2, statuses
        # The trip rebuilt from the updates is the trip GetTrip returns now that it is over.
        final = client.get_trip(trip_name(index), route_format=route_format)
        assert status_name(pb, final) in FINAL
        assert state == final, "trip-%d rebuilt from %d updates differs from GetTrip" % (index, len(updates))
        assert state.SerializeToString(deterministic=True) == final.SerializeToString(deterministic=True)

    stats = server.stop()
    assert stats["streams"] == 4 and stats["completed"] == 4 and stats["open"] == 0
    assert stats["updates"] == received
    assert stats["unary"] == 4


# ---------------------------------------------------------------------------
# Auth

def _auth_cases(fsim_jwt, sign, forged: list[tuple[str, str]]):
    """(label, name, metadata, expected code) for a server that verifies with `sign`'s key.
    `forged` are (label, token) pairs the server must refuse as UNAUTHENTICATED."""
    own = sign(fsim_jwt.claims("trip-1"))
    other = sign(fsim_jwt.claims("trip-2"))
    every = sign(fsim_jwt.claims("*"))
    expired = sign(fsim_jwt.claims("trip-1", expires_in=-3600))
    no_trip = sign(fsim_jwt.claims(None))
    unknown = trip_name(99)
    malformed = "providers/demo/trip-1"
    U, P, I, N, OK = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                      grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.OK)
    cases = [
        ("missing header", trip_name(1), None, U),
        ("not a Bearer token", trip_name(1), metadata(raw="Basic dXNlcjpwYXNz"), U),
        ("garbage token", trip_name(1), metadata("garbage"), U),
        ("expired", trip_name(1), metadata(expired), U),
        ("no tripid claim", trip_name(1), metadata(no_trip), U),
        *((label, trip_name(1), metadata(token), U) for label, token in forged),
        ("another trip's token", trip_name(1), metadata(other), P),
        ("the trip's token", trip_name(1), metadata(own), OK),
        ("a token for every trip", trip_name(1), metadata(every), OK),
        ("malformed name", malformed, metadata(every), I),
        ("unknown trip", unknown, metadata(every), N),
        ("other provider", "providers/other/trips/trip-1", metadata(own), N),
        # The order: token, name's form, the token's trip, existence.
        ("malformed name, no token", malformed, None, U),
        ("malformed name, another trip's token", malformed, metadata(other), I),
        ("unknown trip, another trip's token", unknown, metadata(other), P),
    ]
    stream_cases = [
        ("missing header", trip_name(1), None, U),
        ("expired", trip_name(1), metadata(expired), U),
        ("another trip's token", trip_name(1), metadata(other), P),
        ("the trip's token", trip_name(1), metadata(own), OK),
        ("malformed name", malformed, metadata(every), I),
        ("unknown trip", unknown, metadata(every), N),
    ]
    return cases, stream_cases


def _check_auth(server, pb, cases, stream_cases):
    client = Client(server, pb)
    failures = []
    for label, name, md, expected in cases:
        code = client.unary_code(name, md)
        if code != expected:
            failures.append("unary %s: %s, expected %s" % (label, code, expected))
    for label, name, md, expected in stream_cases:
        code = client.stream_code(name, md)
        if code != expected:
            failures.append("stream %s: %s, expected %s" % (label, code, expected))
    assert not failures, "\n".join(failures)

    # The final stats line counts every refusal by class.
    stats = server.stop()
    expected = {}
    for _, _, _, code in [*cases, *stream_cases]:
        expected[code] = expected.get(code, 0) + 1
    assert stats["unauthenticated"] == expected[grpc.StatusCode.UNAUTHENTICATED]
    assert stats["permission_denied"] == expected[grpc.StatusCode.PERMISSION_DENIED]
    assert stats["invalid_argument"] == expected[grpc.StatusCode.INVALID_ARGUMENT]
    assert stats["not_found"] == expected[grpc.StatusCode.NOT_FOUND]
    assert stats["unary"] == len(cases) and stats["streams"] == len(stream_cases)
    assert stats["fault_status"] == 0


def test_hs256_auth_errors(fsim_start, fsim_pb, fsim_jwt, fsim_rsa_keys):
    secret = HS256_SECRET.encode()
    sign = lambda claims: fsim_jwt.hs256(claims, secret)  # noqa: E731
    claims = fsim_jwt.claims("trip-1")
    unsigned = fsim_jwt.unsigned(claims)
    genuine = sign(claims).split(".")
    widened = sign(fsim_jwt.claims("*")).split(".")
    forged = [
        ("wrong secret", fsim_jwt.hs256(claims, b"another-secret-that-is-32-bytes-long!")),
        ("alg none", unsigned),
        ("RS256 token", fsim_jwt.rs256(claims, fsim_rsa_keys.private_key)),
        ("tampered claims", ".".join([genuine[0], widened[1], genuine[2]])),
    ]
    cases, stream_cases = _auth_cases(fsim_jwt, sign, forged)
    server = fsim_start("--jwt-secret", HS256_SECRET, "--speedup", 30)
    _check_auth(server, fsim_pb, cases, stream_cases)


def test_rs256_auth_errors(fsim_start, fsim_pb, fsim_jwt, fsim_rsa_keys):
    sign = lambda claims: fsim_jwt.rs256(claims, fsim_rsa_keys.private_key)  # noqa: E731
    claims = fsim_jwt.claims("trip-1")
    public_pem = fsim_rsa_keys.public_key.read_bytes()
    forged = [
        ("another RSA key", fsim_jwt.rs256(claims, fsim_rsa_keys.other_private_key)),
        # Algorithm confusion: HS256 keyed with the server's public key.
        ("HS256 keyed with the public key", fsim_jwt.hs256(claims, public_pem)),
        ("HS256 token", fsim_jwt.hs256(claims, HS256_SECRET.encode())),
    ]
    cases, stream_cases = _auth_cases(fsim_jwt, sign, forged)
    server = fsim_start("--jwt-public-key", fsim_rsa_keys.public_key, "--speedup", 30)
    _check_auth(server, fsim_pb, cases, stream_cases)


# ---------------------------------------------------------------------------
# Faults and stats

def test_fail_rate_injects_the_fail_code_before_auth(fsim_start, fsim_pb):
    server = fsim_start("--fail-rate", 1, "--fail-code", "ABORTED", "--jwt-secret", HS256_SECRET)
    client = Client(server, fsim_pb)
    for name in (trip_name(1), trip_name(99), "not a trip name"):
        assert client.unary_code(name) == grpc.StatusCode.ABORTED, name
    try:
        client.get_trip(trip_name(2))
        raise AssertionError("GetTrip succeeded")
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.ABORTED
        assert error.details() == "injected failure"
    updates, code = client.follow(trip_name(1))
    assert code == grpc.StatusCode.ABORTED and not updates
    stats = server.stop()
    assert stats["fault_status"] == 5
    assert stats["unary"] == 4 and stats["streams"] == 1 and stats["updates"] == 0
    assert stats["unauthenticated"] == stats["not_found"] == stats["invalid_argument"] == 0


def test_latency_delays_every_call_and_is_counted(fsim_start, fsim_pb):
    server = fsim_start("--latency", 0.3, "--trips", 3)
    client = Client(server, fsim_pb)
    assert client.unary_code(trip_name(0)) == grpc.StatusCode.OK
    assert client.unary_code(trip_name(7)) == grpc.StatusCode.NOT_FOUND
    assert client.stream_code(trip_name(1)) == grpc.StatusCode.OK
    stats = server.stop()
    assert stats["fault_delayed"] == 3
    assert stats["unary"] == 2 and stats["streams"] == 1 and stats["not_found"] == 1
    assert stats["fault_status"] == stats["fault_resets"] == 0


def test_sigterm_prints_final_stats_matching_the_calls(fsim_start, fsim_pb):
    server = fsim_start("--trips", 3, "--seed", 4, "--speedup", 600, "--update-interval", 0.05)
    client = Client(server, fsim_pb)
    for index in range(3):
        client.get_trip(trip_name(index))
    assert client.unary_code(trip_name(3)) == grpc.StatusCode.NOT_FOUND
    assert client.unary_code("trip-1") == grpc.StatusCode.INVALID_ARGUMENT
    updates, code = client.follow(trip_name(0))
    assert code == grpc.StatusCode.OK
    stats = server.stop(signal.SIGTERM)
    assert server.process.returncode == 0
    server_counters = {"connections", "connections_open", "connections_refused", "connections_closed_idle",
                       "accept_pauses", "requests_refused", "request_bytes", "peak_request_bytes", "calls_started",
                       "peer_connections_refused", "handshakes_timed_out", "requests_timed_out",
                       "connections_rate_limited", "header_bytes", "read_pauses"}
    assert {key: value for key, value in stats.items() if key not in server_counters} == {
        "unary": 5, "streams": 1, "open": 0, "updates": len(updates), "completed": 1,
        "unauthenticated": 0, "permission_denied": 0, "invalid_argument": 1, "not_found": 1,
        "fault_status": 0, "fault_resets": 0, "fault_goaways": 0, "fault_drops": 0, "fault_delayed": 0,
    }
    # The server's own counters follow: one connection (the channel's), nothing refused or held.
    assert set(stats) >= server_counters
    assert stats["connections"] == 1 and stats["connections_refused"] == stats["connections_closed_idle"] == 0
    assert stats["accept_pauses"] == stats["requests_refused"] == stats["request_bytes"] == 0
    assert stats["calls_started"] == 6 and stats["header_bytes"] == 0
    assert stats["peer_connections_refused"] == stats["handshakes_timed_out"] == stats["requests_timed_out"] == 0
    assert stats["connections_rate_limited"] == stats["read_pauses"] == 0
    # The stats line is the last line; before it, only the `listening on` line was printed.
    assert server.output[-1].startswith("stats: ") and len(server.output) == 1


def test_sigterm_right_after_the_listening_line_still_prints_stats(fsim_start):
    # The `listening on` line means ready: a SIGTERM sent the moment it is read must not kill the server
    # before its signal handler is installed.
    for _ in range(20):
        stats = fsim_start("--trips", 1).stop(signal.SIGTERM)
        assert stats["unary"] == 0 and stats["streams"] == 0


# ---------------------------------------------------------------------------
# Determinism across a restart

def test_a_restarted_server_continues_the_same_trips(fsim_start, fsim_pb):
    pb = fsim_pb
    # With seed 5, 65 s (650 simulated seconds) in, trip-3 is on its way to the drop-off (the leg began
    # about 8 s ago and ends in about 25 s), and other trips are over.
    start_time = time.time() - 65
    flags = ("--start-time", repr(start_time), "--seed", 5, "--speedup", 10, "--trips", 12)

    def run():
        server = fsim_start(*flags)
        client = Client(server, pb)
        trip = client.get_trip(trip_name(3))
        finals = {}
        for index in range(12):
            raw = client.get_trip_bytes(trip_name(index))
            if status_name(pb, pb.Trip.FromString(raw)) == "COMPLETE":
                finals[index] = raw
        server.stop()
        return trip, finals

    first, first_finals = run()
    time.sleep(0.3)
    second, second_finals = run()

    # The same trip, further along.
    assert status_name(pb, first) == status_name(pb, second) == "ENROUTE_TO_DROPOFF"
    for field in ("name", "vehicle_id", "pickup_point", "dropoff_point", "intermediate_destinations",
                  "trip_type", "number_of_passengers", "current_route_segment_version", "route",
                  "remaining_waypoints_version", "dropoff_time"):
        assert getattr(first, field) == getattr(second, field), field
    assert second.last_location.server_time.ToNanoseconds() > first.last_location.server_time.ToNanoseconds()
    assert second.last_location.location != first.last_location.location
    assert second.remaining_distance_meters.value < first.remaining_distance_meters.value

    # Trips that were already over are byte for byte the same.
    assert first_finals, "no trip was COMPLETE"
    assert set(second_finals) >= set(first_finals)
    for index, raw in first_finals.items():
        assert second_finals[index] == raw, "trip-%d" % index
