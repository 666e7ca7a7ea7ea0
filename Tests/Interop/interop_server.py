"""A grpcio (gRPC C-core) server of grpc.testing.TestService, the peer of the
Swift grpc-interop-client in Tests/Interop.

It implements the server features of grpc's interop-test-descriptions.md the
way grpc-go's and C++'s interop servers do, and no more leniently:

- EmptyCall returns Empty.
- UnaryCall answers a payload of `response_size` zero bytes (COMPRESSABLE only),
  or ends with `response_status` when its code is not 0 (Echo Status).
- StreamingOutputCall sends one response per `response_parameters` entry
  (`size` zero bytes, after waiting `interval_us`), then OK; it neither echoes
  metadata nor ends with `response_status`.
- StreamingInputCall answers the sum of the request payload sizes at half-close.
- FullDuplexCall answers each request's `response_parameters` as it arrives,
  ends with a request's `response_status` (Echo Status), and OK at half-close.
- HalfDuplexCall answers once the client half-closed.
- UnimplementedCall and the whole UnimplementedService are not registered, so
  they end UNIMPLEMENTED.
- Echo Metadata (`x-grpc-test-echo-initial` as initial metadata,
  `x-grpc-test-echo-trailing-bin` as trailing metadata) on UnaryCall and
  FullDuplexCall only, as grpc-go and C++ do.
- CompressedRequest: a request (UnaryCall, StreamingInputCall) with
  `expect_compressed` set fails INVALID_ARGUMENT when its compressed flag does
  not match: true and sent uncompressed, or false and sent compressed (C++'s
  check). To see the flag, the server runs with grpcio's per-message
  decompression off and decodes requests itself: gzip (RFC 1952) and deflate
  (RFC 1950), as grpc-core names them; a body that does not decompress is
  INTERNAL.
- CompressedResponse: UnaryCall with `response_compressed` true answers gzip,
  false uncompressed; StreamingOutputCall and FullDuplexCall compress exactly
  the responses whose parameters ask for it.

Usage (from the package root; the stubs are generated on first use):

    python Tests/Interop/interop_server.py --port 0 [--use_tls true --cert C --key K]
        [--keepalive-policy MIN_PING_INTERVAL_MS:MAX_STRIKES] [--exit-on-stdin-eof]

It binds 127.0.0.1 only and prints `listening on 127.0.0.1:PORT` as its first
stdout line. One line per call goes to stderr.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib
from concurrent import futures
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent.parent
PROTOS = PACKAGE_ROOT / "Protos"
GENERATED = HERE / "generated"
PROTO_FILES = ["grpc/testing/empty.proto", "grpc/testing/messages.proto", "grpc/testing/test.proto"]

# The name the TLS test server's certificate is for: the interop default of the
# clients' --server_host_override (upstream's server1.pem is for *.test.google.fr).
OVERRIDE_NAME = "foo.test.google.fr"

ECHO_INITIAL = "x-grpc-test-echo-initial"
ECHO_TRAILING = "x-grpc-test-echo-trailing-bin"


def generate_stubs(out_dir: Path = GENERATED) -> None:
    """Compiles Protos/grpc/testing/*.proto into out_dir (recreated)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", str(PROTOS),
           "--python_out=" + str(out_dir), "--grpc_python_out=" + str(out_dir), *PROTO_FILES]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("protoc failed:\n%s\n%s" % (" ".join(cmd), result.stderr))


def import_stubs(out_dir: Path = GENERATED):
    """Returns (empty_pb2, messages_pb2, test_pb2_grpc), generating them if needed.

    The generated modules live in the Python package `grpc.testing`, but `grpc`
    is the installed grpcio package, which has no `testing` subpackage. Adding
    out_dir/grpc to `grpc.__path__` makes `grpc.testing` resolve to the
    generated directory without touching grpcio itself.
    """
    if not (out_dir / "grpc" / "testing" / "test_pb2_grpc.py").is_file():
        generate_stubs(out_dir)
    import grpc
    extra = str(out_dir / "grpc")
    if extra not in grpc.__path__:
        grpc.__path__.append(extra)
    importlib.invalidate_caches()
    empty_pb2 = importlib.import_module("grpc.testing.empty_pb2")
    messages_pb2 = importlib.import_module("grpc.testing.messages_pb2")
    test_pb2_grpc = importlib.import_module("grpc.testing.test_pb2_grpc")
    return empty_pb2, messages_pb2, test_pb2_grpc


def log(*parts) -> None:
    print("[interop_server]", *parts, file=sys.stderr, flush=True)


def decode_request(grpc, context, raw: bytes, message_type):
    """Parses one raw request message, decompressing it first when it is compressed;
    returns (message, was_compressed). With per-message decompression off, the bytes
    are as the client framed them: a gzip member (1f 8b) or a zlib stream (78 xx, a
    checksum at the end) is a compressed message; no request of grpc.testing starts
    with either byte (its first field number is at most 8)."""
    compressed = False
    body = raw
    try:
        if raw[:2] == b"\x1f\x8b":
            body, compressed = gzip.decompress(raw), True
        elif raw[:1] == b"\x78" and len(raw) >= 6 and (raw[0] * 256 + raw[1]) % 31 == 0:
            body, compressed = zlib.decompress(raw), True
    except (OSError, EOFError, zlib.error) as e:
        context.abort(grpc.StatusCode.INTERNAL, "request message does not decompress: %s" % e)
    message = message_type()
    message.ParseFromString(body)
    return message, compressed


def make_handlers(grpc, empty_pb2, messages_pb2):
    """The TestService methods as generic handlers taking raw request bytes, so each
    request's compressed flag can be checked (CompressedRequest)."""
    codes = {c.value[0]: c for c in grpc.StatusCode}

    def echo_metadata(context) -> None:
        md = context.invocation_metadata()
        initial = [(k, v) for k, v in md if k == ECHO_INITIAL]
        trailing = [(k, v) for k, v in md if k == ECHO_TRAILING]
        if initial:
            context.send_initial_metadata(initial[:1])
        if trailing:
            context.set_trailing_metadata(trailing[:1])

    def maybe_fail(request, context) -> None:
        """Echo Status: ends the call with request.response_status when its code is not 0."""
        if request.HasField("response_status") and request.response_status.code != 0:
            code = codes.get(request.response_status.code, grpc.StatusCode.UNKNOWN)
            log("  ending with", code.name, repr(request.response_status.message))
            context.abort(code, request.response_status.message)

    def check_compression(request, compressed: bool, context) -> None:
        """CompressedRequest, as C++'s CheckExpectedCompression: only when the field is set."""
        if not request.HasField("expect_compressed"):
            return
        if request.expect_compressed.value and not compressed:
            log("  expected a compressed request, got an uncompressed one")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Expected compressed request, got uncompressed.")
        if not request.expect_compressed.value and compressed:
            log("  expected an uncompressed request, got a compressed one")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Expected uncompressed request, got compressed.")

    def payload(context, payload_type: int, size: int):
        if payload_type != messages_pb2.COMPRESSABLE:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "payload type %d is not supported" % payload_type)
        return messages_pb2.Payload(type=messages_pb2.COMPRESSABLE, body=b"\x00" * size)

    def sleep_while_active(context, seconds: float) -> bool:
        """Sleeps, waking early when the call ends; True if still active."""
        end = time.monotonic() + seconds
        while context.is_active():
            left = end - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))
        return False

    def stream_responses(request, context):
        """One response per ResponseParameters, each compressed exactly when it asks to be."""
        params = list(request.response_parameters)
        if any(p.compressed.value for p in params):
            context.set_compression(grpc.Compression.Gzip)
        for p in params:
            if p.interval_us > 0 and not sleep_while_active(context, p.interval_us / 1e6):
                log("  client went away")
                return
            if not p.compressed.value:
                context.disable_next_message_compression()
            yield messages_pb2.StreamingOutputCallResponse(payload=payload(context, request.response_type, p.size))

    def describe(context, method: str) -> None:
        keys = sorted({k for k, _ in context.invocation_metadata()})
        log(method, "from", context.peer(), "metadata", keys)

    def empty_call(raw, context):
        describe(context, "EmptyCall")
        decode_request(grpc, context, raw, empty_pb2.Empty)
        return empty_pb2.Empty()

    def unary_call(raw, context):
        describe(context, "UnaryCall")
        request, compressed = decode_request(grpc, context, raw, messages_pb2.SimpleRequest)
        echo_metadata(context)
        check_compression(request, compressed, context)
        maybe_fail(request, context)
        if request.HasField("response_compressed") and request.response_compressed.value:
            context.set_compression(grpc.Compression.Gzip)
        return messages_pb2.SimpleResponse(payload=payload(context, request.response_type, request.response_size))

    def streaming_output_call(raw, context):
        describe(context, "StreamingOutputCall")
        request, _ = decode_request(grpc, context, raw, messages_pb2.StreamingOutputCallRequest)
        yield from stream_responses(request, context)

    def streaming_input_call(request_iterator, context):
        describe(context, "StreamingInputCall")
        total = 0
        for raw in request_iterator:
            request, compressed = decode_request(grpc, context, raw, messages_pb2.StreamingInputCallRequest)
            check_compression(request, compressed, context)
            total += len(request.payload.body)
        return messages_pb2.StreamingInputCallResponse(aggregated_payload_size=total)

    def full_duplex_call(request_iterator, context):
        describe(context, "FullDuplexCall")
        echo_metadata(context)
        for raw in request_iterator:
            request, _ = decode_request(grpc, context, raw, messages_pb2.StreamingOutputCallRequest)
            maybe_fail(request, context)
            yield from stream_responses(request, context)

    def half_duplex_call(request_iterator, context):
        describe(context, "HalfDuplexCall")
        requests = [decode_request(grpc, context, raw, messages_pb2.StreamingOutputCallRequest)[0]
                    for raw in request_iterator]
        for request in requests:
            yield from stream_responses(request, context)

    def raw(b):
        return b

    def serialize(message):
        return message.SerializeToString()

    methods = {
        "EmptyCall": grpc.unary_unary_rpc_method_handler(empty_call, raw, serialize),
        "UnaryCall": grpc.unary_unary_rpc_method_handler(unary_call, raw, serialize),
        "CacheableUnaryCall": grpc.unary_unary_rpc_method_handler(unary_call, raw, serialize),
        "StreamingOutputCall": grpc.unary_stream_rpc_method_handler(streaming_output_call, raw, serialize),
        "StreamingInputCall": grpc.stream_unary_rpc_method_handler(streaming_input_call, raw, serialize),
        "FullDuplexCall": grpc.stream_stream_rpc_method_handler(full_duplex_call, raw, serialize),
        "HalfDuplexCall": grpc.stream_stream_rpc_method_handler(half_duplex_call, raw, serialize),
    }
    return grpc.method_handlers_generic_handler("grpc.testing.TestService", methods)


def parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError("expected true or false, got %r" % text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks one")
    parser.add_argument("--use_tls", type=parse_bool, nargs="?", const=True, default=False)
    parser.add_argument("--cert", help="PEM certificate chain (with --use_tls)")
    parser.add_argument("--key", help="PEM private key (with --use_tls)")
    parser.add_argument("--keepalive-policy", metavar="MIN_INTERVAL_MS:MAX_STRIKES",
                        help="the server's ping policy (grpc.http2.min_ping_interval_without_data_ms and "
                             "grpc.http2.max_ping_strikes); default grpcio's (5 minutes, 2 strikes)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when stdin closes (the test process that started the server ended)")
    args = parser.parse_args(argv)
    if args.use_tls and not (args.cert and args.key):
        parser.error("--use_tls needs --cert and --key")

    empty_pb2, messages_pb2, _ = import_stubs()
    import grpc

    # Per-message decompression off: the handlers see each request as framed and can tell
    # whether it was compressed (CompressedRequest); they decompress it themselves.
    options = [("grpc.per_message_decompression", 0)]
    if args.keepalive_policy:
        interval, strikes = (int(x) for x in args.keepalive_policy.split(":"))
        options += [("grpc.http2.min_ping_interval_without_data_ms", interval),
                    ("grpc.http2.max_ping_strikes", strikes)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=options,
                         handlers=[make_handlers(grpc, empty_pb2, messages_pb2)])
    address = "127.0.0.1:%d" % args.port
    if args.use_tls:
        creds = grpc.ssl_server_credentials(
            [(Path(args.key).read_bytes(), Path(args.cert).read_bytes())])
        port = server.add_secure_port(address, creds)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        print("cannot bind %s" % address, file=sys.stderr)
        return 1
    server.start()
    print("listening on 127.0.0.1:%d" % port, flush=True)
    log("serving", "TLS" if args.use_tls else "h2c", "on port", port)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_on_stdin_eof:
        def watch_stdin() -> None:
            while sys.stdin.buffer.read(4096):
                pass
            stop.set()
        threading.Thread(target=watch_stdin, daemon=True).start()
    stop.wait()
    server.stop(grace=0.5).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
