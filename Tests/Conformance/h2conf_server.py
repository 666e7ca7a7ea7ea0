"""A scripted HTTP/2 server on the Python `h2` library: for each request to
`/conformance.Cases/<name>` it plays that case's exact frame sequence from
h2conf_cases.py.

    python Tests/Conformance/h2conf_server.py [--port 0] [--cert C --key K]

It binds 127.0.0.1 and speaks h2c with prior knowledge, or TLS with ALPN h2
when given --cert and --key. The first stdout line is
`listening on 127.0.0.1:PORT`; after it comes one line per finished stream,
`record {json}`, telling what the client sent (request headers, whether it
ended its side, the RST_STREAM code it sent, PING ACKs, whether it closed the
connection), and one per closed connection, `record {"event": "connection", ...}`
(the most streams the client had open on it at once, its GOAWAY, whether it
closed the connection or broke HTTP/2). Diagnostics go to stderr. An unknown
case name is answered Trailers-Only UNIMPLEMENTED.

Options for the hostile-server and limit tests: --max-concurrent-streams N
announces SETTINGS_MAX_CONCURRENT_STREAMS in the first SETTINGS; --preface
garbage sends garbage instead of the server's SETTINGS on every connection;
--alpn PROTOCOL (or `none`) offers that ALPN protocol instead of h2;
--request-window N announces SETTINGS_INITIAL_WINDOW_SIZE N and never returns
window for request bytes (a client sending more than N bytes stays blocked).

Frames h2 refuses to send (GOAWAY while still serving, RST_STREAM on a stream
it has closed, unknown error codes) are written as raw bytes after flushing
what h2 has queued, so their order on the wire is the script's order.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame, RstStreamFrame

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h2conf_cases as cases  # noqa: E402

REQUEST_END_WAIT = 2.0     # how long to wait for the request's END_STREAM before playing
SEND_WINDOW_WAIT = 10.0    # how long to wait for the client's WINDOW_UPDATE


def log(*parts) -> None:
    print("[h2conf_server]", *parts, file=sys.stderr, flush=True)


_record_lock = threading.Lock()


def emit_record(record: dict) -> None:
    with _record_lock:
        sys.stdout.write("record " + json.dumps(record) + "\n")
        sys.stdout.flush()


@dataclass
class StreamState:
    stream_id: int
    headers: list
    ended: bool = False            # the client's END_STREAM arrived
    reset: int | None = None       # the client's RST_STREAM code
    body: bytearray = field(default_factory=bytearray)

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None


class ScriptAborted(Exception):
    pass


_first_connection_lock = threading.Lock()
_first_connection_of_case: dict[str, int] = {}


def first_connection_asking(case_name: str, conn_id: int) -> bool:
    """Whether `conn_id` is the first connection to ask for `case_name` in this process."""
    with _first_connection_lock:
        return _first_connection_of_case.setdefault(case_name, conn_id) == conn_id


def raw_frame(action: "cases.RawFrame", stream_id: int) -> bytes:
    """The 9-byte frame header (length, type, flags, stream id) and payload of a RawFrame action."""
    sid = stream_id if action.stream == "stream" else int(action.stream)
    length = len(action.payload) if action.length is None else action.length
    return struct.pack(">I", length)[1:] + struct.pack(">BBI", action.type, action.flags, sid) + action.payload


class Connection:
    def __init__(self, sock: socket.socket, conn_id: int, tls: bool, alpn: str | None,
                 max_concurrent_streams: int | None = None, request_window: int | None = None):
        self.sock = sock
        self.conn_id = conn_id
        self.tls = tls
        self.alpn = alpn
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        self.h2 = h2.connection.H2Connection(config=config)
        initial_values = {}
        if max_concurrent_streams is not None:
            # In the first SETTINGS frame, and enforced from the start (h2 raises TooManyStreamsError).
            initial_values[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = max_concurrent_streams
        if request_window is not None:
            initial_values[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] = request_window
        if initial_values:
            self.h2.local_settings = h2.settings.Settings(client=False, initial_values=initial_values)
        self.return_window = request_window is None
        self.streams: dict[int, StreamState] = {}
        self.pending: deque[int] = deque()
        self.closed = False
        self.pings_sent = 0
        self.ping_acks = 0
        self.client_goaway: dict | None = None
        self.client_eof = False            # the client closed the connection (FIN, or RST with bytes unread)
        self.client_protocol_error: str | None = None
        self.peak_open_streams = 0

    # -- I/O ----------------------------------------------------------------

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.write(data)

    def write(self, data: bytes) -> None:
        try:
            self.sock.settimeout(SEND_WINDOW_WAIT)
            self.sock.sendall(data)
        except OSError as e:
            log("conn %d: write failed: %s" % (self.conn_id, e))
            self.closed = True

    def write_raw(self, data: bytes) -> None:
        self.flush()
        if not self.closed:
            self.write(data)

    def pump(self, timeout: float) -> None:
        """Reads what arrives within `timeout` and handles it."""
        if self.closed:
            time.sleep(timeout)
            return
        try:
            self.sock.settimeout(timeout)
            data = self.sock.recv(1 << 16)
        except (socket.timeout, ssl.SSLWantReadError):
            return
        except ConnectionResetError as e:
            # A client that closes its socket with some of our bytes still unread (garbage it stopped
            # reading at) makes its kernel answer with RST instead of FIN: closed all the same.
            log("conn %d: client closed the connection (reset: %s)" % (self.conn_id, e))
            self.client_eof = True
            self.closed = True
            return
        except OSError as e:
            log("conn %d: read failed: %s" % (self.conn_id, e))
            self.closed = True
            return
        if not data:
            log("conn %d: client closed the connection" % self.conn_id)
            self.client_eof = True
            self.closed = True
            return
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            log("conn %d: client broke HTTP/2: %r" % (self.conn_id, e))
            self.client_protocol_error = repr(e)
            self.flush()  # h2 queued a GOAWAY
            self.close()
            return
        for event in events:
            self.on_event(event)
        self.flush()

    def close(self) -> None:
        if not self.closed or self.sock.fileno() != -1:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
        self.closed = True

    def on_event(self, event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self.streams[event.stream_id] = StreamState(event.stream_id, list(event.headers))
            self.pending.append(event.stream_id)
            self.peak_open_streams = max(self.peak_open_streams, self.h2.open_inbound_streams)
        elif isinstance(event, h2.events.DataReceived):
            st = self.streams.get(event.stream_id)
            if st is not None:
                st.body += event.data
            if self.return_window:
                try:
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                except h2.exceptions.StreamClosedError:
                    pass
        elif isinstance(event, h2.events.StreamEnded):
            if event.stream_id in self.streams:
                self.streams[event.stream_id].ended = True
        elif isinstance(event, h2.events.StreamReset):
            if event.remote_reset and event.stream_id in self.streams:
                self.streams[event.stream_id].reset = int(event.error_code)
                log("conn %d: client reset stream %d with %d"
                    % (self.conn_id, event.stream_id, int(event.error_code)))
        elif isinstance(event, h2.events.PingAckReceived):
            self.ping_acks += 1
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.client_goaway = {"code": int(event.error_code), "last_stream_id": event.last_stream_id}
            log("conn %d: client sent GOAWAY %s" % (self.conn_id, self.client_goaway))

    # -- serving -------------------------------------------------------------

    def run(self) -> None:
        self.h2.initiate_connection()
        self.flush()
        while not self.closed:
            if self.pending:
                self.serve(self.streams[self.pending.popleft()])
            else:
                self.pump(0.5)
        self.close()
        self.emit_connection_record()

    def run_garbage_preface(self) -> None:
        """Garbage instead of the server's SETTINGS, then waits for the client to close."""
        self.write(cases.RANDOM_GARBAGE)
        self.wait_for_client_close(5.0)
        self.close()
        self.emit_connection_record(preface="garbage")

    def wait_for_client_close(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.closed and time.monotonic() < end:
            self.pump(min(0.05, max(0.0, end - time.monotonic())))

    def emit_connection_record(self, **extra) -> None:
        emit_record({
            "event": "connection", "conn": self.conn_id, "tls": self.tls, "alpn": self.alpn,
            "peak_open_streams": self.peak_open_streams, "client_goaway": self.client_goaway,
            "client_eof": self.client_eof, "client_protocol_error": self.client_protocol_error, **extra,
        })

    def serve(self, st: StreamState) -> None:
        path = st.header(":path") or ""
        name = path[len("/%s/" % cases.SERVICE):] if path.startswith("/%s/" % cases.SERVICE) else None
        case = cases.BY_NAME.get(name)
        deadline = time.monotonic() + (0 if case is not None and case.answer_at_once else REQUEST_END_WAIT)
        while not (st.ended or st.reset is not None or self.closed) and time.monotonic() < deadline:
            self.pump(0.05)
        log("conn %d stream %d: %s (request ended: %s)" % (self.conn_id, st.stream_id, path, st.ended))
        completed, error, played_first = False, None, False
        try:
            if case is None:
                self.play(st, (cases.trailers_only("12", "unknown conformance case %s" % path),))
            elif case.first_connection_script is not None and first_connection_asking(name, self.conn_id):
                played_first = True
                self.play(st, case.first_connection_script)
            else:
                self.play(st, case.script)
            completed = True
        except ScriptAborted as e:
            error = str(e)
            log("conn %d stream %d: script stopped: %s" % (self.conn_id, st.stream_id, e))
        except h2.exceptions.H2Error as e:
            error = "h2: %r" % e
            log("conn %d stream %d: h2 refused: %r" % (self.conn_id, st.stream_id, e))
        self.flush()
        emit_record({
            "case": name, "path": path, "conn": self.conn_id, "stream": st.stream_id,
            "tls": self.tls, "alpn": self.alpn, "request_headers": st.headers,
            "request_ended": st.ended, "request_body_hex": bytes(st.body[:4096]).hex(),
            "request_body_len": len(st.body), "client_rst": st.reset,
            "pings_sent": self.pings_sent, "ping_acks": self.ping_acks,
            "script_completed": completed, "error": error, "first_connection_script": played_first,
            "client_eof": self.client_eof, "client_goaway": self.client_goaway,
        })

    def check_alive(self, st: StreamState) -> None:
        if st.reset is not None:
            raise ScriptAborted("client reset the stream (%d)" % st.reset)
        if self.closed:
            raise ScriptAborted("connection closed")

    def wait(self, st: StreamState, seconds: float, until=lambda: False) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            self.check_alive(st)
            self.pump(min(0.05, max(0.0, end - time.monotonic())))

    def play(self, st: StreamState, script) -> None:
        sid = st.stream_id
        for action in script:
            if not isinstance(action, (cases.Rst, cases.GoAway, cases.Close, cases.WaitForClientClose)):
                self.check_alive(st)
            if isinstance(action, cases.Headers):
                fields = [(":status", str(action.status))]
                if action.content_type is not None:
                    fields.append(("content-type", action.content_type))
                fields += list(action.extra)
                self.h2.send_headers(sid, fields, end_stream=action.end_stream)
            elif isinstance(action, cases.Data):
                self.send_data(st, action)
            elif isinstance(action, cases.Trailers):
                fields = []
                if action.grpc_status is not None:
                    fields.append(("grpc-status", action.grpc_status))
                if action.grpc_message is not None:
                    fields.append(("grpc-message", action.grpc_message))
                fields += list(action.extra)
                self.h2.send_headers(sid, fields, end_stream=True)
            elif isinstance(action, cases.Rst):
                if action.raw:
                    self.write_raw(RstStreamFrame(sid, error_code=action.code).serialize())
                elif st.reset is None:
                    self.h2.reset_stream(sid, error_code=action.code)
            elif isinstance(action, cases.GoAway):
                last = action.last_stream
                if last == "below":
                    last = max(0, sid - 2)
                elif last == "stream":
                    last = sid
                self.write_raw(GoAwayFrame(0, last_stream_id=last, error_code=action.code,
                                           additional_data=action.debug).serialize())
            elif isinstance(action, cases.Ping):
                self.h2.ping(os.urandom(8))
                self.pings_sent += 1
            elif isinstance(action, cases.WaitForPingAcks):
                self.flush()
                self.wait(st, action.timeout, until=lambda: self.ping_acks >= self.pings_sent)
            elif isinstance(action, cases.Sleep):
                self.flush()
                self.wait(st, action.seconds)
            elif isinstance(action, cases.WaitForClientReset):
                self.flush()
                try:
                    self.wait(st, action.timeout)
                except ScriptAborted:
                    return  # the reset came, as hoped: nothing more to send
            elif isinstance(action, cases.Close):
                self.flush()
                self.close()
                return
            elif isinstance(action, cases.Raw):
                self.write_raw(action.data)
            elif isinstance(action, cases.RawFrame):
                self.write_raw(raw_frame(action, sid))
            elif isinstance(action, cases.WaitForClientClose):
                self.flush()
                self.wait_for_client_close(action.timeout)
                return
            else:
                raise TypeError("unknown action %r" % (action,))
            self.flush()

    def send_data(self, st: StreamState, action: "cases.Data") -> None:
        """Sends action.payload in DATA frames, waiting for flow-control window."""
        sid = st.stream_id
        overhead = action.pad + 1 if action.pad else 0
        data = memoryview(action.payload)
        if not data:
            self.h2.send_data(sid, b"", end_stream=action.end_stream)
            return
        while data:
            if action.frame_size:
                want = min(action.frame_size, len(data))
            else:
                want = min(len(data), self.h2.max_outbound_frame_size - overhead)
            deadline = time.monotonic() + SEND_WINDOW_WAIT
            while True:
                self.check_alive(st)
                window = self.h2.local_flow_control_window(sid) - overhead
                if window >= want or (not action.frame_size and window > 0):
                    break
                if time.monotonic() > deadline:
                    raise ScriptAborted("no flow-control window from the client for %.0f s" % SEND_WINDOW_WAIT)
                self.flush()
                self.pump(0.05)
            n = want if action.frame_size else min(want, window)
            chunk, data = data[:n], data[n:]
            self.h2.send_data(sid, bytes(chunk), end_stream=action.end_stream and not data,
                              pad_length=action.pad if action.pad else None)
            self.flush()


def handle(client: socket.socket, conn_id: int, tls_context: ssl.SSLContext | None,
           options: argparse.Namespace) -> None:
    alpn = None
    try:
        if tls_context is not None:
            client.settimeout(5.0)
            try:
                client = tls_context.wrap_socket(client, server_side=True)
            except (ssl.SSLError, OSError) as e:
                log("conn %d: TLS handshake failed: %s" % (conn_id, e))
                client.close()
                return
            alpn = client.selected_alpn_protocol()
            if alpn != "h2":
                log("conn %d: the client did not negotiate ALPN h2 (got %r); closing" % (conn_id, alpn))
                # Whether the client sent anything (it should not: HTTP/2 was not agreed).
                client.settimeout(2.0)
                try:
                    sent = client.recv(1 << 16)
                except (OSError, ssl.SSLError):
                    sent = b""
                emit_record({"event": "connection", "conn": conn_id, "tls": True, "alpn": alpn,
                             "client_sent_bytes": len(sent)})
                client.close()
                return
        connection = Connection(client, conn_id, tls_context is not None, alpn, options.max_concurrent_streams,
                                options.request_window)
        if options.preface == "garbage":
            connection.run_garbage_preface()
        else:
            connection.run()
    except Exception as e:  # keep serving other connections
        log("conn %d: crashed: %r" % (conn_id, e))
        try:
            client.close()
        except OSError:
            pass


def make_test_certs(directory: Path) -> tuple[Path, Path, Path]:
    """Writes a test CA and a server certificate for DNS:localhost and
    IP:127.0.0.1 into `directory` with the openssl CLI: returns (ca, cert, key)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        r = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("openssl %s failed:\n%s" % (" ".join(args), r.stderr))

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "30",
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/O=JourneySharing tests/CN=h2conf test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-addext", "subjectKeyIdentifier=hash")
    (directory / "server.ext").write_text(
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
        "subjectAltName = DNS:localhost, IP:127.0.0.1\n")
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/O=JourneySharing tests/CN=localhost")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "30", "-sha256", "-extfile", "server.ext", "-out", "server.pem")
    return directory / "ca.pem", directory / "server.pem", directory / "server.key"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="scripted HTTP/2 server for gRPC client conformance")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks one")
    parser.add_argument("--cert", help="PEM certificate chain: serve TLS with ALPN h2")
    parser.add_argument("--key", help="PEM private key (with --cert)")
    parser.add_argument("--max-concurrent-streams", type=int,
                        help="announce and enforce SETTINGS_MAX_CONCURRENT_STREAMS")
    parser.add_argument("--request-window", type=int,
                        help="announce SETTINGS_INITIAL_WINDOW_SIZE and never return window for request bytes")
    parser.add_argument("--preface", choices=["settings", "garbage"], default="settings",
                        help="garbage: send random bytes instead of the server's SETTINGS")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="exit when stdin closes (the test process that started the server ended)")
    parser.add_argument("--alpn", default="h2",
                        help="the ALPN protocol offered with TLS (default h2; 'none' offers none)")
    args = parser.parse_args(argv)
    if bool(args.cert) != bool(args.key):
        parser.error("--cert and --key go together")

    tls_context = None
    if args.cert:
        tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls_context.minimum_version = ssl.TLSVersion.TLSv1_2
        tls_context.load_cert_chain(args.cert, args.key)
        if args.alpn != "none":
            tls_context.set_alpn_protocols([args.alpn])

    listener = socket.create_server(("127.0.0.1", args.port))
    listener.listen(64)
    print("listening on 127.0.0.1:%d" % listener.getsockname()[1], flush=True)
    log("serving %s, %d cases" % ("TLS" if tls_context else "h2c", len(cases.CASES)))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if args.exit_on_stdin_eof:
        def watch_stdin() -> None:
            while sys.stdin.buffer.read(4096):
                pass
            os._exit(0)
        threading.Thread(target=watch_stdin, daemon=True).start()

    for conn_id in itertools.count(1):
        try:
            client, _ = listener.accept()
        except KeyboardInterrupt:
            return 0
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=handle, args=(client, conn_id, tls_context, args), daemon=True).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
