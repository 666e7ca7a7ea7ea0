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
Only unary and server-streaming calls are used; the spec's bidi halves of
custom_metadata and status_code_and_message, and the bidi cases
timeout_on_sleeping_server and cancel_after_first_response, use
StreamingOutputCall instead (see grpc-conformance.md, section B).
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


def custom_metadata(stub, channel):
    metadata = ((ECHO_INITIAL, "test_initial_metadata_value"), (ECHO_TRAILING, b"\xab\xab\xab"))

    def check(initial, trailing):
        expect((ECHO_INITIAL, "test_initial_metadata_value") in list(initial),
               "initial metadata %r" % (initial,))
        expect((ECHO_TRAILING, b"\xab\xab\xab") in list(trailing), "trailing metadata %r" % (trailing,))

    request = messages_pb2.SimpleRequest(response_size=314159, payload=zeros(271828))
    response, call = stub.UnaryCall.with_call(request, metadata=metadata, timeout=DEADLINE)
    expect(len(response.payload.body) == 314159, "unary payload size")
    check(call.initial_metadata(), call.trailing_metadata())

    stream = stub.StreamingOutputCall(
        messages_pb2.StreamingOutputCallRequest(
            response_parameters=[messages_pb2.ResponseParameters(size=314159)], payload=zeros(271828)),
        metadata=metadata, timeout=DEADLINE)
    sizes = [len(r.payload.body) for r in stream]
    expect(sizes == [314159], "streaming sizes %s" % sizes)
    check(stream.initial_metadata(), stream.trailing_metadata())


def _status_cases(stub, code: int, message: str):
    status = messages_pb2.EchoStatus(code=code, message=message)
    expect_status(lambda: stub.UnaryCall(messages_pb2.SimpleRequest(response_status=status),
                                         timeout=DEADLINE),
                  grpc.StatusCode.UNKNOWN, message)
    expect_status(lambda: list(stub.StreamingOutputCall(
        messages_pb2.StreamingOutputCallRequest(response_status=status), timeout=DEADLINE)),
        grpc.StatusCode.UNKNOWN, message)


def status_code_and_message(stub, channel):
    _status_cases(stub, 2, "test status message")


def special_status_message(stub, channel):
    _status_cases(stub, 2, SPECIAL_MESSAGE)


def unimplemented_method(stub, channel):
    expect_status(lambda: stub.UnimplementedCall(empty_pb2.Empty(), timeout=DEADLINE),
                  grpc.StatusCode.UNIMPLEMENTED)


def unimplemented_service(stub, channel):
    other = test_pb2_grpc.UnimplementedServiceStub(channel)
    expect_status(lambda: other.UnimplementedCall(empty_pb2.Empty(), timeout=DEADLINE),
                  grpc.StatusCode.UNIMPLEMENTED)


def timeout_on_sleeping_server(stub, channel):
    # The spec's FullDuplexCall with a 1 ms deadline; here a server stream whose
    # first response comes after 10 s, with a 1 ms deadline.
    request = messages_pb2.StreamingOutputCallRequest(
        response_parameters=[messages_pb2.ResponseParameters(size=31415, interval_us=10_000_000)],
        payload=zeros(27182))
    expect_status(lambda: list(stub.StreamingOutputCall(request, timeout=0.001)),
                  grpc.StatusCode.DEADLINE_EXCEEDED)


def cancel_after_first_response(stub, channel):
    # The spec's FullDuplexCall; here a server stream cancelled after its first
    # response, while the second is 10 s away.
    request = messages_pb2.StreamingOutputCallRequest(response_parameters=[
        messages_pb2.ResponseParameters(size=31415),
        messages_pb2.ResponseParameters(size=9, interval_us=10_000_000)])
    call = stub.StreamingOutputCall(request, timeout=DEADLINE)
    first = next(call)
    expect(len(first.payload.body) == 31415, "first response size")
    call.cancel()
    expect_status(lambda: next(call), grpc.StatusCode.CANCELLED)


CASES = {f.__name__: f for f in [
    empty_unary, large_unary, server_streaming, custom_metadata, status_code_and_message,
    special_status_message, unimplemented_method, unimplemented_service,
    timeout_on_sleeping_server, cancel_after_first_response]}


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
