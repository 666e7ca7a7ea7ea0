"""A grpcio interop client with the flags and test cases the Swift
grpc-interop-client implements: the reference for what each case sends and
checks, and a way to check interop_server.py and test_interop.py themselves.

    python Tests/Interop/interop_reference_client.py --server_host 127.0.0.1 \
        --server_port P --test_case large_unary \
        [--use_tls true --use_test_ca true --ca_file CA --server_host_override foo.test.google.fr]

    # the whole interop suite with this client standing in for the Swift one:
    GRPC_INTEROP_CLIENT="python Tests/Interop/interop_reference_client.py" \
        python -m pytest -q Tests/Interop

Exit status 0 when the case passes, 1 when it fails, 2 on bad flags.
Every case uses the methods interop-test-descriptions.md names (FullDuplexCall
where it says so). grpcio's Python client cannot do two things the spec asks:
send one message of a compressed call uncompressed (client_compressed_streaming's
second message), and see the compressed flag of a response
(server_compressed_*: only sizes are checked). client_compressed_streaming
therefore fails with this client, saying so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interop_server import ECHO_INITIAL, ECHO_TRAILING, import_stubs, parse_bool  # noqa: E402

empty_pb2, messages_pb2, test_pb2_grpc = import_stubs()
import grpc  # noqa: E402

DEADLINE = 20.0
SPECIAL_MESSAGE = "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n"


class CaseFailed(Exception):
    pass


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise CaseFailed(what)


def expect_status(call_fn, code, message=None):
    try:
        call_fn()
    except grpc.RpcError as e:
        expect(e.code() == code, "expected %s, got %s: %r" % (code.name, e.code().name, e.details()))
        if message is not None:
            expect(e.details() == message, "expected message %r, got %r" % (message, e.details()))
        return e
    raise CaseFailed("expected %s, the call succeeded" % code.name)


def zeros(n: int):
    return messages_pb2.Payload(type=messages_pb2.COMPRESSABLE, body=b"\x00" * n)


def empty_unary(stub, channel):
    response = stub.EmptyCall(empty_pb2.Empty(), timeout=DEADLINE)
    expect(isinstance(response, empty_pb2.Empty), "no Empty response")


def large_unary(stub, channel):
    request = messages_pb2.SimpleRequest(response_type=messages_pb2.COMPRESSABLE,
                                         response_size=314159, payload=zeros(271828))
    response = stub.UnaryCall(request, timeout=DEADLINE)
    expect(len(response.payload.body) == 314159, "payload of %d bytes" % len(response.payload.body))


def server_streaming(stub, channel):
    sizes = [31415, 9, 2653, 58979]
    request = messages_pb2.StreamingOutputCallRequest(
        response_type=messages_pb2.COMPRESSABLE,
        response_parameters=[messages_pb2.ResponseParameters(size=s) for s in sizes])
    got = [len(r.payload.body) for r in stub.StreamingOutputCall(request, timeout=DEADLINE)]
    expect(got == sizes, "response sizes %s, expected %s" % (got, sizes))


def large_request(**fields):
    return messages_pb2.SimpleRequest(response_size=314159, payload=zeros(271828), **fields)


def client_compressed_unary(stub, channel):
    probe = large_request(expect_compressed=messages_pb2.BoolValue(value=True))
    expect_status(lambda: stub.UnaryCall(probe, timeout=DEADLINE), grpc.StatusCode.INVALID_ARGUMENT)
    response = stub.UnaryCall(probe, timeout=DEADLINE, compression=grpc.Compression.Gzip)
    expect(len(response.payload.body) == 314159, "step 2 payload size")
    plain = large_request(expect_compressed=messages_pb2.BoolValue(value=False))
    response = stub.UnaryCall(plain, timeout=DEADLINE)
    expect(len(response.payload.body) == 314159, "step 3 payload size")


def server_compressed_unary(stub, channel):
    for compressed in (True, False):
        request = large_request(response_compressed=messages_pb2.BoolValue(value=compressed))
        response = stub.UnaryCall(request, timeout=DEADLINE)
        expect(len(response.payload.body) == 314159, "payload size (response_compressed %s)" % compressed)


def client_streaming(stub, channel):
    sizes = [27182, 8, 1828, 45904]
    requests = (messages_pb2.StreamingInputCallRequest(payload=zeros(n)) for n in sizes)
    response = stub.StreamingInputCall(requests, timeout=DEADLINE)
    expect(response.aggregated_payload_size == 74922, "aggregated size %d" % response.aggregated_payload_size)


def client_compressed_streaming(stub, channel):
    probe = messages_pb2.StreamingInputCallRequest(
        payload=zeros(27182), expect_compressed=messages_pb2.BoolValue(value=True))
    expect_status(lambda: stub.StreamingInputCall(iter([probe]), timeout=DEADLINE),
                  grpc.StatusCode.INVALID_ARGUMENT)
    raise CaseFailed("step 2 needs one uncompressed message in a compressed call, "
                     "which grpcio's Python client cannot send")


def server_compressed_streaming(stub, channel):
    request = messages_pb2.StreamingOutputCallRequest(response_parameters=[
        messages_pb2.ResponseParameters(size=31415, compressed=messages_pb2.BoolValue(value=True)),
        messages_pb2.ResponseParameters(size=92653, compressed=messages_pb2.BoolValue(value=False))])
    sizes = [len(r.payload.body) for r in stub.StreamingOutputCall(request, timeout=DEADLINE)]
    expect(sizes == [31415, 92653], "response sizes %s" % sizes)


class Pinger:
    """Yields the next request only once the previous response arrived (ping_pong)."""

    def __init__(self, requests):
        import queue
        self.requests = list(requests)
        self.ready = queue.Queue()
        self.ready.put(True)

    def __iter__(self):
        for request in self.requests:
            if not self.ready.get(timeout=DEADLINE):
                return
            yield request


def ping_pong(stub, channel):
    steps = [(31415, 27182), (9, 8), (2653, 1828), (58979, 45904)]
    pinger = Pinger(messages_pb2.StreamingOutputCallRequest(
        response_parameters=[messages_pb2.ResponseParameters(size=size)], payload=zeros(body))
        for size, body in steps)
    sizes = []
    for response in stub.FullDuplexCall(iter(pinger), timeout=DEADLINE):
        sizes.append(len(response.payload.body))
        pinger.ready.put(True)
    expect(sizes == [s for s, _ in steps], "response sizes %s" % sizes)


def empty_stream(stub, channel):
    responses = list(stub.FullDuplexCall(iter([]), timeout=DEADLINE))
    expect(responses == [], "%d responses" % len(responses))


def custom_metadata(stub, channel):
    metadata = ((ECHO_INITIAL, "test_initial_metadata_value"), (ECHO_TRAILING, b"\xab\xab\xab"))

    def check(initial, trailing, step):
        expect((ECHO_INITIAL, "test_initial_metadata_value") in list(initial),
               "%s: initial metadata %r" % (step, initial))
        expect((ECHO_TRAILING, b"\xab\xab\xab") in list(trailing), "%s: trailing metadata %r" % (step, trailing))

    response, call = stub.UnaryCall.with_call(large_request(), metadata=metadata, timeout=DEADLINE)
    expect(len(response.payload.body) == 314159, "step 1 (UnaryCall) payload size")
    check(call.initial_metadata(), call.trailing_metadata(), "step 1 (UnaryCall)")

    stream = stub.FullDuplexCall(
        iter([messages_pb2.StreamingOutputCallRequest(
            response_parameters=[messages_pb2.ResponseParameters(size=314159)], payload=zeros(271828))]),
        metadata=metadata, timeout=DEADLINE)
    sizes = [len(r.payload.body) for r in stream]
    expect(sizes == [314159], "step 2 (FullDuplexCall) sizes %s" % sizes)
    check(stream.initial_metadata(), stream.trailing_metadata(), "step 2 (FullDuplexCall)")


def _status_cases(stub, code: int, message: str, duplex: bool):
    status = messages_pb2.EchoStatus(code=code, message=message)
    expect_status(lambda: stub.UnaryCall(messages_pb2.SimpleRequest(response_status=status),
                                         timeout=DEADLINE),
                  grpc.StatusCode.UNKNOWN, message)
    if duplex:
        expect_status(lambda: list(stub.FullDuplexCall(
            iter([messages_pb2.StreamingOutputCallRequest(response_status=status)]), timeout=DEADLINE)),
            grpc.StatusCode.UNKNOWN, message)


def status_code_and_message(stub, channel):
    _status_cases(stub, 2, "test status message", duplex=True)


def special_status_message(stub, channel):
    _status_cases(stub, 2, SPECIAL_MESSAGE, duplex=False)


def unimplemented_method(stub, channel):
    expect_status(lambda: stub.UnimplementedCall(empty_pb2.Empty(), timeout=DEADLINE),
                  grpc.StatusCode.UNIMPLEMENTED)


def unimplemented_service(stub, channel):
    other = test_pb2_grpc.UnimplementedServiceStub(channel)
    expect_status(lambda: other.UnimplementedCall(empty_pb2.Empty(), timeout=DEADLINE),
                  grpc.StatusCode.UNIMPLEMENTED)


def cancel_after_begin(stub, channel):
    import threading
    hold = threading.Event()

    def requests():
        hold.wait(DEADLINE)
        return
        yield  # a generator that sends nothing until cancelled

    future = stub.StreamingInputCall.future(requests(), timeout=DEADLINE)
    future.cancel()
    hold.set()
    expect(future.cancelled(), "the call was not cancelled")


def timeout_on_sleeping_server(stub, channel):
    import threading
    hold = threading.Event()

    def requests():
        yield messages_pb2.StreamingOutputCallRequest(payload=zeros(27182))
        hold.wait(DEADLINE)

    try:
        expect_status(lambda: list(stub.FullDuplexCall(requests(), timeout=0.001)),
                      grpc.StatusCode.DEADLINE_EXCEEDED)
    finally:
        hold.set()


def cancel_after_first_response(stub, channel):
    import threading
    hold = threading.Event()

    def requests():
        yield messages_pb2.StreamingOutputCallRequest(
            response_parameters=[messages_pb2.ResponseParameters(size=31415)], payload=zeros(27182))
        hold.wait(DEADLINE)

    call = stub.FullDuplexCall(requests(), timeout=DEADLINE)
    first = next(call)
    expect(len(first.payload.body) == 31415, "first response size")
    call.cancel()
    hold.set()
    expect_status(lambda: next(call), grpc.StatusCode.CANCELLED)


CASES = {f.__name__: f for f in [
    empty_unary, large_unary, client_compressed_unary, server_compressed_unary, client_streaming,
    client_compressed_streaming, server_streaming, server_compressed_streaming, ping_pong, empty_stream,
    custom_metadata, status_code_and_message, special_status_message, unimplemented_method,
    unimplemented_service, cancel_after_begin, cancel_after_first_response, timeout_on_sleeping_server]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="grpcio interop client (reference)")
    parser.add_argument("--server_host", default="localhost")
    parser.add_argument("--server_port", type=int, required=True)
    parser.add_argument("--test_case", required=True, choices=sorted(CASES))
    parser.add_argument("--use_tls", type=parse_bool, nargs="?", const=True, default=False)
    parser.add_argument("--use_test_ca", type=parse_bool, nargs="?", const=True, default=False)
    parser.add_argument("--ca_file", help="PEM roots used when --use_test_ca is true")
    parser.add_argument("--server_host_override", help="TLS name and :authority")
    args = parser.parse_args(argv)

    target = "%s:%d" % (args.server_host, args.server_port)
    if args.use_tls:
        roots = None
        if args.use_test_ca:
            if not args.ca_file:
                parser.error("--use_test_ca needs --ca_file (no test CA is built in)")
            roots = Path(args.ca_file).read_bytes()
        options = []
        if args.server_host_override:
            options.append(("grpc.ssl_target_name_override", args.server_host_override))
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(roots), options=options)
    else:
        options = []
        if args.server_host_override:
            options.append(("grpc.default_authority", args.server_host_override))
        channel = grpc.insecure_channel(target, options=options)

    with channel:
        stub = test_pb2_grpc.TestServiceStub(channel)
        try:
            CASES[args.test_case](stub, channel)
        except CaseFailed as e:
            print("FAIL %s: %s" % (args.test_case, e), flush=True)
            return 1
        except grpc.RpcError as e:
            print("FAIL %s: %s %r" % (args.test_case, e.code().name, e.details()), flush=True)
            return 1
    print("PASS %s" % args.test_case, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
