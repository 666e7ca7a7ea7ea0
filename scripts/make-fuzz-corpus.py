#!/usr/bin/env python3
"""Writes the ProtoWire fuzzer's seed corpus to Tests/Fuzz/corpus/protowire/.

Each file is one selector byte (the index into `messageTypes` in
Tests/Fuzz/ProtoWireFuzzer/main.swift) followed by an encoding of that type:
valid messages made with the official protobuf runtime, plus hand-made tricky
ones (unknown fields of every wire type, nested groups, packed and unpacked
repeated fields, merged embedded messages, non-canonical varints).

Run with the test venv: .venv/bin/python scripts/make-fuzz-corpus.py
"""

import pathlib
import struct

from google.maps import fleetengine_v1 as fe
from google.protobuf import json_format

OUT = pathlib.Path(__file__).resolve().parent.parent / "Tests/Fuzz/corpus/protowire"
TRIP, VEHICLE_LOCATION, TRIP_WAYPOINT, GET_TRIP_REQUEST = 0, 1, 2, 3
TERMINAL_LOCATION, TRAFFIC_POLYLINE, TRIP_UPDATE, STREAM_TRIP_REQUEST = 4, 5, 6, 7


def encode(cls, fields):
    return json_format.ParseDict(fields, cls.pb()()).SerializeToString()


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def tag(field, wire):
    return varint(field << 3 | wire)


def ld(field, payload):
    return tag(field, 2) + varint(len(payload)) + payload


POINT = {"latitude": 37.7749, "longitude": -122.4194}
TIME = "2025-11-21T17:50:00.123456789Z"
TERMINAL = {"point": POINT, "tripId": "trip-1", "terminalPointId": {"placeId": "ChIJ", "value": "v"},
            "terminalLocationType": "PICKUP_WAYPOINT_TYPE"}
TRAFFIC = {"speedReadingInterval": [{"startPolylinePointIndex": 0, "endPolylinePointIndex": 3, "speed": "SLOW"},
                                    {"startPolylinePointIndex": 3, "endPolylinePointIndex": 9, "speed": "TRAFFIC_JAM"}],
           "encodedPathToWaypoint": "a~l~Fjk~uOwHJy@P"}
WAYPOINT = {"location": TERMINAL, "tripId": "trip-1", "waypointType": "DROP_OFF_WAYPOINT_TYPE",
            "pathToWaypoint": [POINT, {"latitude": -33.8688, "longitude": 151.2093}],
            "encodedPathToWaypoint": "_p~iF~ps|U", "trafficToWaypoint": TRAFFIC,
            "distanceMeters": 1200, "eta": TIME, "duration": "95.5s"}
LOCATION = {"location": POINT, "horizontalAccuracy": 4.5, "heading": 270, "speedKmph": 42, "speed": 11.7,
            "updateTime": TIME, "serverTime": TIME, "locationSensor": "GPS", "isRoadSnapped": True,
            "isGpsSensorEnabled": True, "timeSinceUpdate": 3, "numStaleUpdates": 0, "rawLocation": POINT,
            "rawLocationSensor": "NETWORK", "flpHeadingDegrees": -90, "roadSnapped": True}
TRIP_FIELDS = {
    "name": "providers/p/trips/trip-1", "vehicleId": "vehicle-7", "tripStatus": "ENROUTE_TO_PICKUP",
    "tripType": "SHARED", "pickupPoint": TERMINAL, "pickupTime": TIME, "dropoffPoint": TERMINAL,
    "intermediateDestinations": [TERMINAL, TERMINAL], "intermediateDestinationIndex": 1,
    "actualPickupPoint": {"point": POINT, "timestamp": TIME, "stopTime": TIME},
    "remainingWaypoints": [WAYPOINT], "vehicleWaypoints": [WAYPOINT, WAYPOINT],
    "route": [POINT, POINT], "currentRouteSegment": "gfo}EtohhU", "currentRouteSegmentTraffic": TRAFFIC,
    "currentRouteSegmentEndPoint": WAYPOINT, "remainingDistanceMeters": 5000, "etaToFirstWaypoint": TIME,
    "remainingTimeToFirstWaypoint": "300s", "numberOfPassengers": 2, "lastLocation": LOCATION,
    "lastLocationSnappable": True, "view": "JOURNEY_SHARING_V1S",
    "attributes": [{"key": "k", "stringValue": "v"}, {"key": "n", "numberValue": -0.0}, {"key": "b", "boolValue": True}],
}
HEADER = {"languageCode": "en-US", "regionCode": "US", "sdkVersion": "1.0", "platform": "IOS", "androidApiLevel": -1}

# Unknown fields of every wire type (field numbers no message here uses), then groups nested three deep.
GROUPS = (tag(904, 3) + tag(1, 0) + b"\x01" + tag(905, 3) + tag(906, 3) + ld(2, b"\x24")
          + tag(906, 4) + tag(905, 4) + tag(904, 4))
UNKNOWN = (tag(900, 0) + varint(150) + tag(901, 1) + struct.pack("<d", 2.5) + ld(902, b"opaque")
           + tag(903, 5) + struct.pack("<f", -1.0) + GROUPS)

trip = encode(fe.Trip, TRIP_FIELDS)
seeds = {
    "trip-full": (TRIP, trip),
    "trip-minimal": (TRIP, encode(fe.Trip, {"name": "providers/p/trips/t"})),
    "trip-empty": (TRIP, b""),
    "trip-unknown-fields": (TRIP, encode(fe.Trip, {"name": "t", "tripStatus": "NEW"}) + UNKNOWN + ld(2, b"v")),
    # pickup_point twice (merged), route as two occurrences (appended), vehicle_id twice (last wins).
    "trip-merge": (TRIP, ld(5, encode(fe.TerminalLocation, {"point": POINT})) + ld(9, b"") + ld(2, b"a")
                   + ld(5, encode(fe.TerminalLocation, {"tripId": "x"})) + ld(9, encode(fe.TerminalLocation, {})) + ld(2, b"b")),
    "vehicle-location-full": (VEHICLE_LOCATION, encode(fe.VehicleLocation, LOCATION)),
    # heading -1 (a ten-byte int32 inside Int32Value), a NaN speed and a -0.0 latitude.
    "vehicle-location-edge-values": (VEHICLE_LOCATION, ld(2, tag(1, 0) + varint(-1)) + ld(6, tag(1, 1) + struct.pack("<d", float("nan")))
                                     + ld(1, tag(1, 1) + struct.pack("<d", -0.0))),
    "trip-waypoint-full": (TRIP_WAYPOINT, encode(fe.TripWaypoint, WAYPOINT)),
    "get-trip-request-full": (GET_TRIP_REQUEST, encode(fe.GetTripRequest, {
        "header": HEADER, "name": "providers/p/trips/trip-1", "view": "JOURNEY_SHARING_V1S",
        "currentRouteSegmentVersion": TIME, "remainingWaypointsVersion": TIME, "routeFormatType": "ENCODED_POLYLINE_TYPE",
        "currentRouteSegmentTrafficVersion": TIME, "remainingWaypointsRouteVersion": TIME})),
    # Enum values the messages do not name: view 99, route_format_type -1.
    "get-trip-request-open-enums": (GET_TRIP_REQUEST, tag(11, 0) + varint(99) + tag(8, 0) + varint(-1)),
    "terminal-location-full": (TERMINAL_LOCATION, encode(fe.TerminalLocation, TERMINAL)),
    "terminal-location-groups": (TERMINAL_LOCATION, encode(fe.TerminalLocation, {"point": POINT}) + GROUPS),
    "traffic-polyline-full": (TRAFFIC_POLYLINE, encode(fe.ConsumableTrafficPolyline, TRAFFIC)),
    # A speed reading interval whose varints are padded to non-minimal lengths.
    "traffic-polyline-padded-varints": (TRAFFIC_POLYLINE, ld(1, b"\x08\x83\x80\x00\x10\x89\x80\x80\x00\x18\x82\x00")),
    "trip-update-full": (TRIP_UPDATE, ld(1, trip) + tag(2, 0) + b"\x01" + ld(3, b"".join(varint(n) for n in (1, 3, 16)))
                         + tag(4, 0) + varint(1) + ld(5, tag(1, 0) + varint(1763747400) + tag(2, 0) + varint(5000))),
    # A delta: updated_fields unpacked, then packed, then unpacked again; a sequence number past 2^32.
    "trip-update-delta-mixed": (TRIP_UPDATE, ld(1, encode(fe.Trip, {"tripStatus": "ENROUTE_TO_DROPOFF"}))
                                + tag(3, 0) + varint(3) + ld(3, varint(16) + varint(-1)) + tag(3, 0) + varint(20)
                                + tag(4, 0) + varint(1 << 40)),
    "trip-update-unknown-fields": (TRIP_UPDATE, tag(4, 0) + varint(7) + UNKNOWN),
    "stream-trip-request-full": (STREAM_TRIP_REQUEST, ld(1, encode(fe.RequestHeader, HEADER)) + ld(2, b"providers/p/trips/trip-1")
                                 + tag(3, 0) + varint(1) + tag(4, 0) + varint(2)),
    "stream-trip-request-minimal": (STREAM_TRIP_REQUEST, ld(2, b"providers/p/trips/t")),
}

OUT.mkdir(parents=True, exist_ok=True)
for old in OUT.glob("*.bin"):
    old.unlink()
for name, (selector, payload) in seeds.items():
    (OUT / f"{selector}-{name}.bin").write_bytes(bytes([selector]) + payload)
print(f"wrote {len(seeds)} seeds to {OUT}")
