#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora to Tests/Fuzz/corpus/<target>/ (see scripts/build-fuzzer.sh).

protowire: one selector byte (the index into `messageTypes` in
  Tests/Fuzz/ProtoWireFuzzer/main.swift) followed by an encoding of that type:
  valid messages made with the official protobuf runtime, plus hand-made tricky
  ones (unknown fields of every wire type, nested groups, packed and unpacked
  repeated fields, merged embedded messages, non-canonical varints).
grpc-framing: a configuration byte, a count of chunk sizes, a response body of
  length-prefixed messages (some gzip- or deflate-compressed, some broken: truncated,
  corrupt, with trailing bytes, inflating past the limit), then the chunk sizes
  (Tests/Fuzz/GRPCFramingFuzzer/main.swift).
trip-merge: a trip-ID byte, then records of op, 2-byte length and a TripUpdate
  encoding: whole trips, progress updates, route and waypoint changes, shared
  trips with other riders' waypoints (Tests/Fuzz/TripMergeFuzzer/main.swift).

Run with the test venv: .venv/bin/python scripts/make-fuzz-corpus.py
"""

import gzip as gzip_module
import pathlib
import struct
import zlib

from google.maps import fleetengine_v1 as fe
from google.protobuf import json_format

from google.protobuf import duration_pb2, field_mask_pb2, timestamp_pb2, wrappers_pb2
from google.type import latlng_pb2

CORPUS = pathlib.Path(__file__).resolve().parent.parent / "Tests/Fuzz/corpus"
# Indices into the ProtoWire fuzzer's `messageTypes`.
TRIP, VEHICLE_LOCATION, TRIP_WAYPOINT, GET_TRIP_REQUEST = 0, 1, 2, 3
TERMINAL_LOCATION, TRAFFIC_POLYLINE, TRIP_UPDATE, STREAM_TRIP_REQUEST = 4, 5, 6, 7
REQUEST_HEADER, SPEED_READING_INTERVAL, TRAFFIC_POLYLINE_DATA, TRAFFIC_RENDERING = 8, 9, 10, 11
ROAD_STRETCH, TERMINAL_POINT_ID, STOP_LOCATION, TRIP_ATTRIBUTE, VEHICLE_ATTRIBUTE = 12, 13, 14, 15, 16
TIMESTAMP, DURATION, LAT_LNG, FIELD_MASK = 17, 18, 19, 20
DOUBLE_VALUE, FLOAT_VALUE, INT64_VALUE, UINT64_VALUE, INT32_VALUE, UINT32_VALUE = 21, 22, 23, 24, 25, 26
BOOL_VALUE, STRING_VALUE, BYTES_VALUE = 27, 28, 29


def encode(cls, fields):
    return json_format.ParseDict(fields, cls.pb()()).SerializeToString()


def encode_pb(message_class, fields):
    """`encode` for plain protobuf classes (well-known types, google.type)."""
    return json_format.ParseDict(fields, message_class()).SerializeToString()


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
RENDERING = {"roadStretch": [{"style": "SLOWER_TRAFFIC", "offsetMeters": 10, "lengthMeters": 250},
                            {"style": "TRAFFIC_JAM", "offsetMeters": 260, "lengthMeters": 40}]}
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
    "request-header-full": (REQUEST_HEADER, encode(fe.RequestHeader, dict(
        HEADER, osVersion="17.1", deviceModel="iPhone15,2", sdkType="CONSUMER", mapsSdkVersion="8.0",
        navSdkVersion="5.0", manufacturer="Apple", traceId="trace-1"))),
    # Platform and SDK type values the enums do not name; a negative API level (ten-byte varint).
    "request-header-open-enums": (REQUEST_HEADER, tag(6, 0) + varint(42) + tag(9, 0) + varint(-3) + tag(11, 0) + varint(-1)),
    "speed-reading-interval-full": (SPEED_READING_INTERVAL, encode(fe.SpeedReadingInterval, TRAFFIC["speedReadingInterval"][1])),
    "speed-reading-interval-extreme": (SPEED_READING_INTERVAL, tag(1, 0) + varint(-(1 << 31)) + tag(2, 0) + varint((1 << 31) - 1)
                                       + tag(3, 0) + varint(7)),
    "traffic-polyline-data-full": (TRAFFIC_POLYLINE_DATA, encode(fe.TrafficPolylineData, {"trafficRendering": RENDERING})),
    "traffic-rendering-full": (TRAFFIC_RENDERING, encode(fe.VisualTrafficReportPolylineRendering, RENDERING)),
    # road_stretch repeated across two runs with an unknown field between them.
    "traffic-rendering-split": (TRAFFIC_RENDERING, ld(1, tag(1, 0) + b"\x01") + tag(7, 0) + b"\x05" + ld(1, tag(3, 0) + b"\x10")),
    "road-stretch-full": (ROAD_STRETCH, encode(fe.VisualTrafficReportPolylineRendering.RoadStretch, RENDERING["roadStretch"][0])),
    "terminal-point-id-place": (TERMINAL_POINT_ID, encode(fe.TerminalPointId, {"placeId": "ChIJ", "value": "v"})),
    # The oneof set twice: the generated id (last) wins.
    "terminal-point-id-oneof-twice": (TERMINAL_POINT_ID, ld(2, b"place") + ld(3, b"generated") + ld(4, b"v")),
    "stop-location-full": (STOP_LOCATION, encode(fe.StopLocation, {"point": POINT, "timestamp": TIME, "stopTime": TIME})),
    "trip-attribute-string": (TRIP_ATTRIBUTE, encode(fe.TripAttribute, {"key": "k", "stringValue": "v"})),
    "trip-attribute-number-nan": (TRIP_ATTRIBUTE, ld(1, b"n") + tag(4, 1) + struct.pack("<d", float("nan"))),
    "trip-attribute-oneof-switch": (TRIP_ATTRIBUTE, ld(1, b"b") + tag(4, 1) + struct.pack("<d", 1.5) + tag(3, 0) + b"\x01"),
    "vehicle-attribute-full": (VEHICLE_ATTRIBUTE, encode(fe.VehicleAttribute, {"key": "k", "value": "v", "numberValue": -0.0})),
    "vehicle-attribute-bool": (VEHICLE_ATTRIBUTE, encode(fe.VehicleAttribute, {"key": "k", "boolValue": True})),
    "timestamp-full": (TIMESTAMP, encode_pb(timestamp_pb2.Timestamp, TIME)),
    # Out of the well-known type's range: negative nanos, seconds past year 9999.
    "timestamp-out-of-range": (TIMESTAMP, tag(1, 0) + varint(1 << 40) + tag(2, 0) + varint(-1)),
    "duration-full": (DURATION, encode_pb(duration_pb2.Duration, "-95.500000001s")),
    "lat-lng-full": (LAT_LNG, encode_pb(latlng_pb2.LatLng, POINT)),
    "lat-lng-infinities": (LAT_LNG, tag(1, 1) + struct.pack("<d", float("inf")) + tag(2, 1) + struct.pack("<d", float("-inf"))),
    "field-mask-full": (FIELD_MASK, encode_pb(field_mask_pb2.FieldMask, "tripStatus,lastLocation.location")),
    "double-value": (DOUBLE_VALUE, encode_pb(wrappers_pb2.DoubleValue, 2.5)),
    "float-value-nan": (FLOAT_VALUE, tag(1, 5) + struct.pack("<f", float("nan"))),
    "int64-value": (INT64_VALUE, encode_pb(wrappers_pb2.Int64Value, str(-(1 << 63)))),
    "uint64-value": (UINT64_VALUE, encode_pb(wrappers_pb2.UInt64Value, str((1 << 64) - 1))),
    "int32-value": (INT32_VALUE, encode_pb(wrappers_pb2.Int32Value, -(1 << 31))),
    # A uint32 written as a 64-bit varint: the high bits are dropped.
    "uint32-value-wide": (UINT32_VALUE, tag(1, 0) + varint((1 << 40) + 7)),
    "bool-value": (BOOL_VALUE, encode_pb(wrappers_pb2.BoolValue, True)),
    # Bool from a multi-byte varint.
    "bool-value-wide": (BOOL_VALUE, tag(1, 0) + b"\x80\x01"),
    "string-value": (STRING_VALUE, encode_pb(wrappers_pb2.StringValue, "h\u00e9llo \U0001F697")),
    "string-value-invalid-utf8": (STRING_VALUE, ld(1, b"\xff\xfe")),
    "bytes-value": (BYTES_VALUE, encode_pb(wrappers_pb2.BytesValue, "AAEC/w==")),
}



# --- grpc-framing ---------------------------------------------------------------------------------

LIMITS = [0, 1, 5, 16, 100, 1000, 65536, 4 << 20]  # the fuzzer's Configuration.limits
OK_TRAILERS, DATA_END_STREAM, CLOSED_NO_ERROR, CLOSED_CANCEL = 0, 1, 2, 3


def frame(message, flag=0, length=None):
    return bytes([flag]) + struct.pack(">I", len(message) if length is None else length) + message


# The declared grpc-encoding, bits 6-7 of the configuration byte: none, gzip, deflate, unsupported.
NO_ENCODING, GZIP, DEFLATE, UNSUPPORTED = 0, 1, 2, 3


def framing(body, sizes=(), limit=4 << 20, unary=False, ending=OK_TRAILERS, gzip=False, encoding=None):
    if encoding is None:
        encoding = GZIP if gzip else NO_ENCODING
    config = LIMITS.index(limit) | (8 if unary else 0) | ending << 4 | encoding << 6
    return bytes([config, len(sizes)]) + body + bytes(sizes)


def gz(data):
    return gzip_module.compress(data, mtime=0)


def zl(data):
    return zlib.compress(data)


update_full = seeds["trip-update-full"][1]
update_delta = seeds["trip-update-delta-mixed"][1]
three = frame(update_full) + frame(b"") + frame(update_delta)
framing_seeds = {
    "streaming-whole": framing(three),
    "streaming-bytewise": framing(three, sizes=[1]),
    "streaming-prefix-split": framing(three, sizes=[3, 4, 2, 200]),
    "streaming-odd-chunks": framing(three, sizes=[7, 0, 13, 1, 64]),
    "streaming-empty-body": framing(b""),
    "streaming-empty-messages": framing(frame(b"") * 4, sizes=[5, 0, 2]),
    "unary-one": framing(frame(update_full), sizes=[9, 100], unary=True),
    "unary-two": framing(frame(b"a") + frame(b"b"), unary=True),
    "unary-none": framing(b"", unary=True),
    "compressed-with-encoding": framing(frame(b"x") + frame(b"\x1f\x8b", flag=1), gzip=True),
    "compressed-without-encoding": framing(frame(b"\x1f\x8b", flag=1), sizes=[2]),
    "invalid-flag": framing(frame(b"ok") + frame(b"x", flag=0x80), sizes=[8]),
    "at-limit": framing(frame(bytes(16)) + frame(bytes(17)), limit=16, sizes=[21, 3]),
    "limit-zero": framing(frame(b"") + frame(b"z"), limit=0),
    "huge-length": framing(frame(b"", length=0xFFFFFFFF), sizes=[1]),
    "truncated-prefix": framing(frame(b"abc") + b"\x00\x00", ending=CLOSED_NO_ERROR),
    "truncated-body": framing(frame(b"abcdef")[:8], ending=OK_TRAILERS, sizes=[6]),
    "data-end-stream": framing(frame(b"abc") + frame(b"de"), ending=DATA_END_STREAM, sizes=[4]),
    "reset-cancel": framing(frame(b"abc"), ending=CLOSED_CANCEL, limit=100),
    "unary-end-stream-partial": framing(frame(b"abc")[:6], unary=True, ending=DATA_END_STREAM),
    # Compressed messages: valid ones mixed with plain ones, split anywhere.
    "gzip-mixed": framing(frame(gz(update_full), flag=1) + frame(b"plain") + frame(gz(b""), flag=1),
                          encoding=GZIP, sizes=[3, 17, 40]),
    "deflate-mixed": framing(frame(zl(update_delta), flag=1) + frame(b"") + frame(zl(b"x" * 300), flag=1),
                             encoding=DEFLATE, sizes=[11]),
    "gzip-unary": framing(frame(gz(update_full), flag=1), encoding=GZIP, unary=True, sizes=[1]),
    # Inflating past the limit: 100 KiB of zeros in about 120 bytes, against a 1000-byte limit.
    "gzip-bomb": framing(frame(b"ok") + frame(gz(bytes(100_000)), flag=1) + frame(b"after"), encoding=GZIP, limit=1000),
    "deflate-bomb": framing(frame(zl(bytes(70_000)), flag=1), encoding=DEFLATE, limit=65536, sizes=[64]),
    "gzip-at-limit": framing(frame(gz(bytes(100)), flag=1) + frame(gz(bytes(101)), flag=1), encoding=GZIP, limit=100),
    # Broken compressed bodies: truncated, a flipped checksum byte, trailing bytes, the other wrapper.
    "gzip-truncated": framing(frame(gz(b"hello gRPC")[:-3], flag=1), encoding=GZIP),
    "gzip-bad-checksum": framing(frame(gz(b"hello gRPC")[:-5] + b"\x00" + gz(b"hello gRPC")[-4:], flag=1),
                                 encoding=GZIP),
    "gzip-trailing-bytes": framing(frame(gz(b"hello") + b"\x00", flag=1), encoding=GZIP),
    "deflate-declared-gzip-sent": framing(frame(gz(b"hello"), flag=1), encoding=DEFLATE),
    "gzip-empty-body": framing(frame(b"", flag=1), encoding=GZIP),
    # A compressed message under an encoding the client does not support, and under identity/none.
    "compressed-unsupported": framing(frame(b"plain") + frame(gz(b"x"), flag=1), encoding=UNSUPPORTED),
    "compressed-no-encoding-valid-gzip": framing(frame(gz(b"x"), flag=1), encoding=NO_ENCODING, sizes=[2, 1]),
}


# --- trip-merge -----------------------------------------------------------------------------------

def trip_update(trip=None, full=False, fields=(), sequence=0, send_seconds=None):
    out = b""
    if trip is not None:
        out += ld(1, trip)
    if full:
        out += tag(2, 0) + b"\x01"
    if fields:
        out += ld(3, b"".join(varint(n) for n in fields))
    if sequence:
        out += tag(4, 0) + varint(sequence)
    if send_seconds is not None:
        out += ld(5, tag(1, 0) + varint(send_seconds))
    return out


APPLY, TWICE, POLL = 0, 1, 2


def merge(*records, foreign_trip_id=False):
    out = bytes([1 if foreign_trip_id else 0])
    for op, update in records:
        out += bytes([op]) + struct.pack("<H", len(update)) + update
    return out


def at(lat, lng):
    return {"latitude": lat, "longitude": lng}


def traffic(*intervals):
    return {"speedReadingInterval": [{"startPolylinePointIndex": a, "endPolylinePointIndex": b, "speed": s}
                                     for a, b, s in intervals]}


def waypoint(trip_id, kind, path=None, encoded=None, meters=None, eta=None, intervals=()):
    fields = {"location": {"point": POINT, "tripId": trip_id}, "tripId": trip_id, "waypointType": kind}
    if path:
        fields["pathToWaypoint"] = path
    if encoded:
        fields["encodedPathToWaypoint"] = encoded
    if meters is not None:
        fields["distanceMeters"] = meters
    if eta:
        fields["eta"] = eta
    if intervals:
        fields["trafficToWaypoint"] = traffic(*intervals)
    return fields


# A shared trip: this rider's pickup, another rider's stop, an intermediate stop (encoded path),
# a stop without a trip ID, and the dropoff; paths and traffic on every leg.
SHARED_WAYPOINTS = [
    waypoint("trip-1", "PICKUP_WAYPOINT_TYPE", path=[at(37.77, -122.41), at(37.78, -122.42)], meters=300,
             eta="2025-11-21T18:00:00Z", intervals=[(0, 1, "NORMAL")]),
    waypoint("trip-2", "PICKUP_WAYPOINT_TYPE", path=[at(37.78, -122.42), at(37.79, -122.43), at(37.80, -122.44)],
             meters=500, eta="2025-11-21T18:05:00Z", intervals=[(0, 2, "SLOW")]),
    waypoint("trip-1", "INTERMEDIATE_DESTINATION_WAYPOINT_TYPE", encoded="_p~iF~ps|U_ulLnnqC_mqNvxq`@", meters=700,
             eta="2025-11-21T18:10:00Z", intervals=[(0, 1, "TRAFFIC_JAM"), (1, 2, "NORMAL")]),
    waypoint("", "INTERMEDIATE_DESTINATION_WAYPOINT_TYPE", path=[at(37.81, -122.45)], meters=100),
    waypoint("trip-1", "DROP_OFF_WAYPOINT_TYPE", path=[at(37.82, -122.46), at(37.83, -122.47)], meters=900,
             eta="2025-11-21T18:20:00Z", intervals=[(0, 1, "SLOW")]),
]
SHARED_TRIP = dict(TRIP_FIELDS, tripType="SHARED", tripStatus="ENROUTE_TO_PICKUP", remainingWaypoints=SHARED_WAYPOINTS,
                   route=[], currentRouteSegment="_p~iF~ps|U_ulLnnqC", dropoffTime=TIME)
shared = encode(fe.Trip, SHARED_TRIP)
LOCATION_2 = dict(LOCATION, location=at(37.7755, -122.4188), heading=265)


def progress(sequence, **fields):
    """A vehicle-progress update: the fields given (Trip JSON names), and their numbers."""
    numbers = {"lastLocation": 11, "remainingDistanceMeters": 12, "etaToFirstWaypoint": 13,
               "numberOfPassengers": 10, "lastLocationSnappable": 26, "remainingTimeToFirstWaypoint": 27}
    return trip_update(encode(fe.Trip, fields), fields=[numbers[name] for name in fields], sequence=sequence,
                       send_seconds=1763747400 + sequence)


nan_location = ld(11, ld(1, tag(1, 1) + struct.pack("<d", float("nan")) + tag(2, 1) + struct.pack("<d", -0.0)))
merge_seeds = {
    "full-then-progress": merge(
        (APPLY, trip_update(trip, full=True, sequence=1)),
        (APPLY, progress(2, lastLocation=LOCATION_2, remainingDistanceMeters=4200)),
        (APPLY, progress(3, etaToFirstWaypoint="2025-11-21T17:55:00Z", remainingTimeToFirstWaypoint="240s")),
        (APPLY, progress(4, numberOfPassengers=3, lastLocationSnappable=False))),
    "shared-trip-changes": merge(
        (APPLY, trip_update(shared, full=True, sequence=1)),
        (APPLY, progress(2, lastLocation=LOCATION, remainingDistanceMeters=250)),
        # The vehicle passes the pickup: status, waypoints and the route change together.
        (APPLY, trip_update(encode(fe.Trip, {"tripStatus": "ENROUTE_TO_DROPOFF", "remainingWaypoints": SHARED_WAYPOINTS[1:],
                                             "currentRouteSegment": "gfo}EtohhU", "actualPickupPoint": {"point": POINT}}),
                            fields=[3, 16, 21, 22], sequence=3)),
        (TWICE, progress(4, remainingDistanceMeters=100)),
        (APPLY, trip_update(encode(fe.Trip, {"tripStatus": "COMPLETE"}), fields=[3, 16, 21, 12], sequence=5))),
    "shared-trip-foreign-id": merge((APPLY, trip_update(shared, full=True, sequence=1)),
                                    (APPLY, progress(2, remainingDistanceMeters=10)), foreign_trip_id=True),
    "polled-then-streamed": merge(
        (POLL, trip_update(shared)),
        (APPLY, progress(7, lastLocation=LOCATION_2)),
        (POLL | TWICE, trip_update(trip)),
        (APPLY, trip_update(None, fields=[9, 21, 28, 16], sequence=8))),
    # Updates before any whole trip, a field number Trip does not declare, the reserved 18, a negative one.
    "partial-first": merge(
        (APPLY, trip_update(encode(fe.Trip, {"vehicleId": "v"}), fields=[2, 18, 99, -1], sequence=1)),
        (APPLY, progress(2, lastLocation=LOCATION)),
        (APPLY, trip_update(None, full=True, sequence=3))),
    "nan-location-twice": merge(
        (APPLY, trip_update(trip, full=True, sequence=1)),
        (TWICE, trip_update(nan_location, fields=[11], sequence=2))),
    "canceled": merge(
        (APPLY, trip_update(shared, full=True, sequence=1)),
        (APPLY, trip_update(encode(fe.Trip, {"tripStatus": "CANCELED"}), fields=[3], sequence=2)),
        (APPLY, trip_update(encode(fe.Trip, {"tripStatus": "NEW"}), fields=[3, 11], sequence=3))),
    # Traffic indices near Int32's bounds on the last leg, whose indices shift by the earlier legs' points.
    "traffic-indices-near-max": merge((APPLY, trip_update(encode(fe.Trip, dict(SHARED_TRIP, remainingWaypoints=SHARED_WAYPOINTS[:4] + [
        waypoint("trip-1", "DROP_OFF_WAYPOINT_TYPE", path=[at(1, 2)], intervals=[(2**31 - 100, 2**31 - 10, "SLOW"),
                                                                                 (-2**31, -2**31 + 5, "NORMAL")])])),
        full=True, sequence=1))),
    # Regression: shifting these past Int32.max trapped (TripSnapshot's remaining-route traffic).
    "traffic-index-overflow": merge((APPLY, trip_update(encode(fe.Trip, dict(SHARED_TRIP, remainingWaypoints=SHARED_WAYPOINTS[:4] + [
        waypoint("trip-1", "DROP_OFF_WAYPOINT_TYPE", path=[at(1, 2)], intervals=[(2**31 - 1, 2**31 - 1, "SLOW")])])),
        full=True, sequence=1))),
    "unknown-fields": merge(
        (APPLY, trip_update(trip + UNKNOWN, full=True, sequence=1)),
        (APPLY, trip_update(UNKNOWN, fields=[1, 2], sequence=2) + UNKNOWN)),
}


def write(target, files):
    out = CORPUS / target
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.bin"):
        old.unlink()
    for name, content in files.items():
        (out / f"{name}.bin").write_bytes(content)
    print(f"wrote {len(files)} seeds to {out}")


write("protowire", {f"{selector}-{name}": bytes([selector]) + payload for name, (selector, payload) in seeds.items()})
write("grpc-framing", framing_seeds)
write("trip-merge", merge_seeds)
