"""A well-behaved gRPC client in a process of its own, for the attack tests (`test_server_hostile.py`).

Unary GetTrip with grpcio, each call on a new connection and with a deadline, every `interval` s until its stdin
closes; first a line `ready` once grpcio is warmed up (its first channel in a process costs it up to half a
second, which the first call would otherwise count), then one line per call on stdout: `<seconds> <status code
name>` (`WRONG_TRIP` when the answer names another trip). A process of its own: the attacker's Python holds its interpreter's lock while it pumps thousands of
sockets, and a client sharing that lock would measure the attacker, not the server.

    python legit_client.py GENERATED_DIR ADDRESS INTERVAL DEADLINE
"""

from __future__ import annotations

import sys
import threading
import time

UNARY_GET_TRIP = "/maps.fleetengine.v1.TripService/GetTrip"


def trip_name(index: int) -> str:
    return "providers/demo/trips/trip-%d" % (index % 20)


def main() -> None:
    generated, address, interval, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    sys.path.insert(0, generated)
    import grpc
    from google.maps.fleetengine.v1 import trip_api_pb2, trips_pb2

    requests = [trip_api_pb2.GetTripRequest(name=trip_name(i)).SerializeToString() for i in range(20)]
    stop = threading.Event()

    def wait_for_stdin_to_close() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_stdin_to_close, daemon=True).start()
    with grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
    print("ready", flush=True)
    index = 0
    while not stop.is_set():
        started = time.monotonic()
        with grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
            try:
                trip = channel.unary_unary(UNARY_GET_TRIP, response_deserializer=trips_pb2.Trip.FromString)(
                    requests[index % 20], timeout=deadline)
                code = "OK" if trip.name == trip_name(index) else "WRONG_TRIP"
            except grpc.RpcError as error:
                code = error.code().name
        print("%.4f %s" % (time.monotonic() - started, code), flush=True)
        index += 1
        stop.wait(interval)


if __name__ == "__main__":
    main()
