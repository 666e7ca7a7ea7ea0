"""A grpcio (gRPC C-core) server of grpc.testing.TestService, the peer of the
Swift grpc-interop-client in Tests/Interop.

It behaves as grpc's interop-test-descriptions.md asks of a server:

- EmptyCall returns Empty.
- UnaryCall / CacheableUnaryCall answer a payload of `response_size` zero bytes,
  or end with `response_status` when its code is not 0.
- StreamingOutputCall sends one response per `response_parameters` entry
  (`size` zero bytes, after waiting `interval_us`), then ends with
  `response_status` if set.
- StreamingInputCall, FullDuplexCall and HalfDuplexCall work too (the Swift
  client does not call them; the reference client does).
- UnimplementedCall and the whole UnimplementedService end UNIMPLEMENTED.
- Every method echoes the request metadata `x-grpc-test-echo-initial` as
  initial metadata and `x-grpc-test-echo-trailing-bin` as trailing metadata.

Usage (from the package root; the stubs are generated on first use):

    python Tests/Interop/interop_server.py --port 0 [--use_tls true --cert C --key K]

It binds 127.0.0.1 only and prints `listening on 127.0.0.1:PORT` as its first
stdout line. One line per call goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import signal
import subprocess
import sys
import threading
import time
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


def make_servicer(grpc, empty_pb2, messages_pb2, test_pb2_grpc):
    codes = {c.value[0]: c for c in grpc.StatusCode}

    def echo_metadata(context) -> None:
        md = context.invocation_metadata()
        initial = [(k, v) for k, v in md if k == ECHO_INITIAL]
        trailing = [(k, v) for k, v in md if k == ECHO_TRAILING]
        if initial:
            context.send_initial_metadata(initial)
        if trailing:
            context.set_trailing_metadata(trailing)

    def maybe_fail(request, context) -> None:
        """Ends the call with request.response_status when it asks for a non-OK code."""
        if request.HasField("response_status") and request.response_status.code != 0:
            code = codes.get(request.response_status.code, grpc.StatusCode.UNKNOWN)
            log("  ending with", code.name, repr(request.response_status.message))
            context.abort(code, request.response_status.message)

    def payload(size: int):
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
        params = list(request.response_parameters)
        if any(p.compressed.value for p in params):
            context.set_compression(grpc.Compression.Gzip)
        for p in params:
            if p.interval_us > 0 and not sleep_while_active(context, p.interval_us / 1e6):
                log("  client went away")
                return
            if not p.compressed.value:
                context.disable_next_message_compression()
            yield messages_pb2.StreamingOutputCallResponse(payload=payload(p.size))

    def describe(context, method: str) -> None:
        keys = sorted({k for k, _ in context.invocation_metadata()})
        log(method, "from", context.peer(), "metadata", keys)

    class TestService(test_pb2_grpc.TestServiceServicer):
        def EmptyCall(self, request, context):
            describe(context, "EmptyCall")
            echo_metadata(context)
            return empty_pb2.Empty()

        def UnaryCall(self, request, context):
            describe(context, "UnaryCall")
            echo_metadata(context)
            maybe_fail(request, context)
            # The Python server cannot tell whether the request was compressed,
            # so expect_compressed is not checked (client_compressed_unary is
            # not run against it).
            if request.response_compressed.value:
                context.set_compression(grpc.Compression.Gzip)
            return messages_pb2.SimpleResponse(payload=payload(request.response_size))

        def CacheableUnaryCall(self, request, context):
            return self.UnaryCall(request, context)

        def StreamingOutputCall(self, request, context):
            describe(context, "StreamingOutputCall")
            echo_metadata(context)
            yield from stream_responses(request, context)
            maybe_fail(request, context)

        def StreamingInputCall(self, request_iterator, context):
            describe(context, "StreamingInputCall")
            echo_metadata(context)
            total = sum(len(r.payload.body) for r in request_iterator)
            return messages_pb2.StreamingInputCallResponse(aggregated_payload_size=total)

        def FullDuplexCall(self, request_iterator, context):
            describe(context, "FullDuplexCall")
            echo_metadata(context)
            for request in request_iterator:
                maybe_fail(request, context)
                yield from stream_responses(request, context)

        def HalfDuplexCall(self, request_iterator, context):
            describe(context, "HalfDuplexCall")
            echo_metadata(context)
            requests = list(request_iterator)
            for request in requests:
                maybe_fail(request, context)
                yield from stream_responses(request, context)

        def UnimplementedCall(self, request, context):
            describe(context, "UnimplementedCall")
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "UnimplementedCall is not implemented")

    return TestService()


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
    args = parser.parse_args(argv)
    if args.use_tls and not (args.cert and args.key):
        parser.error("--use_tls needs --cert and --key")

    empty_pb2, messages_pb2, test_pb2_grpc = import_stubs()
    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    test_pb2_grpc.add_TestServiceServicer_to_server(
        make_servicer(grpc, empty_pb2, messages_pb2, test_pb2_grpc), server)
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
    stop.wait()
    server.stop(grace=0.5).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
