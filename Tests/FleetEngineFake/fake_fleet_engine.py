"""A fake Fleet Engine for following tests: grpcio, unary GetTrip only.

It serves `maps.fleetengine.v1.TripService/GetTrip` and nothing else (every
other method, such as the project's streaming GetTrip, is UNIMPLEMENTED, as
on the real Fleet Engine). Each trip name gets a scripted trip that advances
one step per successful call:

    NEW -> ENROUTE_TO_PICKUP -> ARRIVED_AT_PICKUP -> ENROUTE_TO_DROPOFF -> COMPLETE

each status lasting --calls-per-status calls, the vehicle moving a little on
every call. The trip honours current_route_segment_version,
current_route_segment_traffic_version, remaining_waypoints_version and
remaining_waypoints_route_version: what the caller's version says it already
has is left out of the answer.

    python fake_fleet_engine.py [--port 0] [--calls-per-status 2]
                                [--fail-first N --fail-code NAME]
    python fake_fleet_engine.py --generate-only

prints `listening on 127.0.0.1:PORT` once serving and, on SIGTERM or SIGINT,
one JSON line of counters (see Counters) before exiting 0.

The message classes are generated from Protos/ into generated/ next to this
file (on first use, or always with --generate-only). The PyPI package
google-maps-fleetengine defines the same messages as the regular package
google.maps.fleetengine, so the generated google/maps/fleetengine{,/v1}
directories get an __init__.py and come first on sys.path to shadow it (see
Tests/Differential/conftest.py). Only this process imports them: the pytest
process that starts it never does, so it cannot clash with the other suites'
generated modules.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOS = HERE.parent.parent / "Protos"
GENERATED = HERE / "generated"
_SHADOWING_PACKAGES = ["google/maps/fleetengine", "google/maps/fleetengine/v1"]

SERVICE = "maps.fleetengine.v1.TripService"
METHOD = "GetTrip"
UNARY_GET_TRIP = "/%s/%s" % (SERVICE, METHOD)
STATUSES = ["NEW", "ENROUTE_TO_PICKUP", "ARRIVED_AT_PICKUP", "ENROUTE_TO_DROPOFF", "COMPLETE"]
TRIP_NAME = re.compile(r"^providers/[a-z][a-z0-9-]{0,29}/trips/[^/:\\?#]{1,64}$")

# Where the scripted trip happens (Amsterdam), and its two legs' routes.
PICKUP = (52.3700, 4.9000)
DROPOFF = (52.3760, 4.9120)
START = (52.3640, 4.8940)


def generate() -> None:
    """(Re)creates generated/ from Protos/ (not the well-known types, not grpc/testing)."""
    shutil.rmtree(GENERATED, ignore_errors=True)
    GENERATED.mkdir(parents=True)
    files = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    files = [f for f in files if not f.startswith(("google/protobuf/", "grpc/"))]
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTOS), "--python_out=" + str(GENERATED), *files]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit("protoc failed:\n%s\n%s" % (" ".join(cmd), result.stderr))
    for pkg in _SHADOWING_PACKAGES:
        (GENERATED / pkg / "__init__.py").touch()


def load_messages():
    """The generated trip_api, trips and fleetengine modules (generating them first if needed)."""
    if not (GENERATED / "google/maps/fleetengine/v1/trip_api_pb2.py").exists():
        generate()
    sys.path.insert(0, str(GENERATED))
    importlib.invalidate_caches()
    trip_api = importlib.import_module("google.maps.fleetengine.v1.trip_api_pb2")
    trips = importlib.import_module("google.maps.fleetengine.v1.trips_pb2")
    common = importlib.import_module("google.maps.fleetengine.v1.fleetengine_pb2")
    if "generated" not in (sys.modules["google.maps.fleetengine"].__file__ or ""):
        raise SystemExit("the installed google.maps.fleetengine shadows the generated modules")
    return trip_api, trips, common


@dataclass
class Counters:
    calls: int = 0                  # every call received, any method
    get_trip_calls: int = 0         # unary GetTrip calls
    other_calls: int = 0            # calls to any other method (answered UNIMPLEMENTED)
    failed_calls: int = 0           # GetTrip calls failed on purpose (--fail-first)
    invalid_names: int = 0          # GetTrip calls with a malformed trip name
    versioned_requests: int = 0     # GetTrip requests carrying at least one *_version
    route_omitted: int = 0          # answers that left out a route the trip had
    waypoints_omitted: int = 0      # answers that left out remaining waypoints the trip had
    completed: int = 0              # answers with status COMPLETE


def _interpolate(a, b, t):
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)


def _path(a, b, points=8):
    return [_interpolate(a, b, i / (points - 1)) for i in range(points)]


class ScriptedTrips:
    """The scripted trips by name and the counters; thread-safe."""

    def __init__(self, pb_trips, pb_common, calls_per_status: int, fail_first: int, fail_code):
        self.pb = pb_trips
        self.common = pb_common
        self.calls_per_status = max(1, calls_per_status)
        self.fail_first = fail_first
        self.fail_code = fail_code
        self.lock = threading.Lock()
        self.counters = Counters()
        self.steps: dict[str, int] = {}
        self.base = int(time.time()) - 60  # versions and times are seconds after this

    # -- the trip at a step ------------------------------------------------

    def _ts(self, message, seconds: float) -> None:
        message.FromNanoseconds(int((self.base + seconds) * 1e9))

    def trip_at(self, name: str, step: int):
        pb = self.pb
        status_index = min(step // self.calls_per_status, len(STATUSES) - 1)
        status = STATUSES[status_index]
        trip = pb.Trip(name=name, vehicle_id="vehicle-fake", trip_status=pb.TripStatus.Value(status),
                       trip_type=self.common.TripType.Value("EXCLUSIVE"),
                       number_of_passengers=1, view=pb.TripView.Value("JOURNEY_SHARING_V1S"))
        trip.pickup_point.point.latitude, trip.pickup_point.point.longitude = PICKUP
        trip.dropoff_point.point.latitude, trip.dropoff_point.point.longitude = DROPOFF
        # Versions: one per leg (0: to the pickup, 1: waiting, 2: to the dropoff, 3: done).
        leg = {"NEW": 0, "ENROUTE_TO_PICKUP": 0, "ARRIVED_AT_PICKUP": 1, "ENROUTE_TO_DROPOFF": 2, "COMPLETE": 3}[status]
        for field in ("current_route_segment_version", "current_route_segment_traffic_version",
                      "remaining_waypoints_version", "remaining_waypoints_route_version"):
            self._ts(getattr(trip, field), 10 * leg)
        self._ts(trip.pickup_time, 100)
        self._ts(trip.dropoff_time, 200)
        # The vehicle: along the leg it drives, a bit further each step.
        progress = (step % self.calls_per_status + 1) / (self.calls_per_status + 1)
        if leg == 0:
            where = _interpolate(START, PICKUP, progress if status == "ENROUTE_TO_PICKUP" else 0)
        elif leg == 1:
            where = PICKUP
        elif leg == 2:
            where = _interpolate(PICKUP, DROPOFF, progress)
        else:
            where = DROPOFF
        trip.last_location.location.latitude, trip.last_location.location.longitude = where
        self._ts(trip.last_location.update_time, 1 + step)
        first_path = _path(START, PICKUP)
        second_path = _path(PICKUP, DROPOFF)
        if leg in (0, 2):
            for lat, lng in (first_path if leg == 0 else second_path):
                point = trip.route.add()
                point.latitude, point.longitude = lat, lng
            trip.remaining_distance_meters.value = int(1000 * (1 - progress))
            self._ts(trip.eta_to_first_waypoint, 100 if leg == 0 else 200)
        if leg < 3:
            stops = [("PICKUP_WAYPOINT_TYPE", PICKUP, first_path, 100), ("DROP_OFF_WAYPOINT_TYPE", DROPOFF, second_path, 200)]
            if leg == 2:
                stops = stops[1:]
            for index, (kind, point, path, eta) in enumerate(stops):
                waypoint = trip.remaining_waypoints.add()
                waypoint.trip_id = name.rsplit("/", 1)[-1]
                waypoint.waypoint_type = self.common.WaypointType.Value(kind)
                waypoint.location.point.latitude, waypoint.location.point.longitude = point
                self._ts(waypoint.eta, eta)
                if not (leg == 1 and index == 0):  # the stop waited at has no path left
                    for lat, lng in path:
                        p = waypoint.path_to_waypoint.add()
                        p.latitude, p.longitude = lat, lng
                    waypoint.distance_meters.value = 1000
        return trip

    # -- GetTrip -------------------------------------------------------------

    @staticmethod
    def _current(request, trip, field: str) -> bool:
        """Whether the request's `field` version is at least the trip's."""
        if not request.HasField(field):
            return False
        requested, current = getattr(request, field), getattr(trip, field)
        return (requested.seconds, requested.nanos) >= (current.seconds, current.nanos)

    def get_trip(self, request, context):
        import grpc

        with self.lock:
            self.counters.calls += 1
            self.counters.get_trip_calls += 1
            if self.counters.get_trip_calls <= self.fail_first:
                self.counters.failed_calls += 1
                number = self.counters.get_trip_calls
                fail = True
            else:
                fail = False
        if fail:
            context.abort(self.fail_code, "scripted failure %d of %d" % (number, self.fail_first))
        if not TRIP_NAME.match(request.name):
            with self.lock:
                self.counters.invalid_names += 1
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "trip name must be in the format providers/{provider_id}/trips/{trip_id}")
        with self.lock:
            step = self.steps.get(request.name, 0)
            self.steps[request.name] = step + 1
        trip = self.trip_at(request.name, step)
        versioned = any(request.HasField(f) for f in (
            "current_route_segment_version", "current_route_segment_traffic_version",
            "remaining_waypoints_version", "remaining_waypoints_route_version"))
        route_omitted = waypoints_omitted = False
        if self._current(request, trip, "current_route_segment_version"):
            route_omitted = len(trip.route) > 0 or bool(trip.current_route_segment)
            trip.ClearField("route")
            trip.ClearField("current_route_segment")
        if self._current(request, trip, "current_route_segment_traffic_version"):
            trip.ClearField("current_route_segment_traffic")
        if self._current(request, trip, "remaining_waypoints_version") and self._current(
                request, trip, "remaining_waypoints_route_version"):
            waypoints_omitted = len(trip.remaining_waypoints) > 0
            trip.ClearField("remaining_waypoints")
        with self.lock:
            self.counters.versioned_requests += int(versioned)
            self.counters.route_omitted += int(route_omitted)
            self.counters.waypoints_omitted += int(waypoints_omitted)
            self.counters.completed += int(trip.trip_status == self.pb.TripStatus.Value("COMPLETE"))
        return trip

    def other_call(self):
        with self.lock:
            self.counters.calls += 1
            self.counters.other_calls += 1

    def summary(self) -> dict:
        with self.lock:
            return asdict(self.counters)


def serve(args) -> int:
    import grpc

    trip_api, trips, common = load_messages()
    fail_code = grpc.StatusCode[args.fail_code]
    scripted = ScriptedTrips(trips, common, args.calls_per_status, args.fail_first, fail_code)
    get_trip = grpc.unary_unary_rpc_method_handler(
        scripted.get_trip, request_deserializer=trip_api.GetTripRequest.FromString,
        response_serializer=lambda trip: trip.SerializeToString())

    class Handler(grpc.GenericRpcHandler):
        def service(self, handler_call_details):
            if handler_call_details.method == UNARY_GET_TRIP:
                return get_trip
            scripted.other_call()
            return None  # grpcio answers UNIMPLEMENTED

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:%d" % args.port)
    if port == 0:
        print("cannot bind 127.0.0.1:%d" % args.port, file=sys.stderr)
        return 1
    server.start()
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print("listening on 127.0.0.1:%d" % port, flush=True)
    while not stop.wait(0.1):
        pass
    server.stop(0).wait(5)
    print(json.dumps(scripted.summary(), sort_keys=True), flush=True)
    sys.stderr.flush()
    # Not a return: grpcio can hang the interpreter's exit after a server stopped with a call in flight
    # (grpc/grpc#40834; the CI run of e09aba6 waited 15 s for it). Everything is printed; nothing is left to do.
    os._exit(0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--calls-per-status", type=int, default=2)
    parser.add_argument("--fail-first", type=int, default=0, metavar="N")
    parser.add_argument("--fail-code", default="UNAVAILABLE", metavar="NAME",
                        help="a grpc.StatusCode name, e.g. UNAVAILABLE, PERMISSION_DENIED")
    parser.add_argument("--generate-only", action="store_true", help="(re)generate the message modules and exit")
    args = parser.parse_args(argv)
    if args.generate_only:
        generate()
        return 0
    import grpc
    if args.fail_code not in grpc.StatusCode.__members__:
        parser.error("unknown --fail-code %s" % args.fail_code)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
