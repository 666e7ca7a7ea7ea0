"""`fleetsim` against hostile clients, and `tripwatch` against a hostile server: requests that never finish,
connections that never speak, header blocks that decompress a thousandfold, clients that never read, streams
reset as fast as they open, a metrics scraper that trickles, and a server that floods its client with frames
that carry nothing.

Real processes over loopback. The attacker is Python writing HTTP/2 frame by frame (pre-encoded, with `hpack`,
blasted with non-blocking sends) from 127.0.0.2, so the per-peer limits apply to it and not to the well-behaved
client: grpcio's unary GetTrip from 127.0.0.1, each call on a new connection, several times during the attack
and once after it. Each test samples the server's resident memory from /proc every 0.2 s and its CPU time, and
prints one line of figures (`hostile <attack>: rss …, server cpu …, legit …; attacker: …`).

    FLEETSIM=.build/debug/fleetsim TRIPWATCH=.build/debug/tripwatch \\
        python -m pytest -q -s Tests/ToolsPytest/test_server_hostile.py -m "not soak"

The `soak` variants run the same attacks for minutes.
"""

from __future__ import annotations

import collections
import fcntl
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.request

import grpc
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import hpack
import pytest
from tools_support import cpu_seconds, port_of, rss_mib

UNARY_GET_TRIP = "/maps.fleetengine.v1.TripService/GetTrip"
STREAMING_GET_TRIP = "/journeysharing.v1.TripStreamService/GetTrip"
UNKNOWN_METHOD = "/x.Y/Z"  # no per-method request limit: only the request budgets and the request timeout
ATTACKER = "127.0.0.2"
# fleetsim runs its connections on two loops (its service on a third): the attacks reach connections on both,
# and the per-peer budgets they test are counted over both. The single-loop server is attacked the same ways in
# Tests/HTTP2TransportTests/ServerBoundsTests.swift.
SERVER_LOOPS = ("--server-loops", 2)
RSS_LIMIT_MIB = 256
# Every legit call made during an attack carries this gRPC deadline and must end OK within it: the attack may
# not make a well-behaved client wait longer. The calls run in a process of their own (legit_client.py), so that
# the attacker's Python, which holds its interpreter's lock while it pumps thousands of sockets, cannot delay
# them (it once did, to 1.2 s).
LEGIT_DEADLINE_SECONDS = 1.0
# An attack is cut short when the server passes this (the test fails on the RSS limit anyway), to spare the machine.
GUARD_MIB = 1024
# How long the attacks that run "for a while" last: the fast variant, and the soak one.
# The fast variants run in `make test` (whose whole run must stay under 15 minutes on two cores, beside the
# sanitizer builds); the soak ones in `make soak`.
DURATIONS = [pytest.param(5, id="5s"), pytest.param(120, id="120s", marks=pytest.mark.soak)]
FLOOD_DURATIONS = [pytest.param(4, id="4s"), pytest.param(60, id="60s", marks=pytest.mark.soak)]

# HTTP/2 (RFC 9113) on the wire.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20
SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE = 0x2, 0x4
MAX_WINDOW = (1 << 31) - 1
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">BHBBI", len(payload) >> 16, len(payload) & 0xFFFF, kind, flags, stream) + payload


def client_preface(window: int | None = None) -> bytes:
    """The connection preface and SETTINGS; with `window`, that initial stream window and the connection's."""
    settings = {SETTINGS_ENABLE_PUSH: 0}
    if window is not None:
        settings[SETTINGS_INITIAL_WINDOW_SIZE] = window
    data = PREFACE + frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in settings.items()))
    if window is not None and window > 65535:
        data += frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", window - 65535))
    return data


def request_headers(path: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
    return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "fleetsim"),
            ("content-type", "application/grpc"), ("te", "trailers"), *extra]


def grpc_message(payload: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(payload)) + payload


def trip_name(index: int) -> str:
    return "providers/demo/trips/trip-%d" % (index % 20)


def error_name(code: int) -> str:
    try:
        return h2.errors.ErrorCodes(code).name
    except ValueError:
        return hex(code)


# ---------------------------------------------------------------------------
# Measuring a process (rss_mib and cpu_seconds come from tools_support)


class Monitor:
    """Samples a process's resident memory every 0.2 s in a thread, and its CPU time over the `with` block.
    `over` is set once the process passes GUARD_MIB (or is gone): attacks stop early."""

    def __init__(self, pid: int):
        self.pid = pid
        self.samples: list[tuple[float, float]] = []  # (seconds since the start, MiB)
        self.over = threading.Event()
        self.gone = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Monitor:
        self.rss_before = rss_mib(self.pid)
        self.cpu_before = cpu_seconds(self.pid)
        self.started = time.monotonic()
        self._thread.start()
        return self

    def _sample(self) -> None:
        try:
            rss = rss_mib(self.pid)
        except (OSError, ProcessLookupError):
            self.gone = True
            self.over.set()
            return
        self.samples.append((time.monotonic() - self.started, rss))
        if rss > GUARD_MIB:
            self.over.set()

    def _run(self) -> None:
        while not self._stop.wait(0.2) and not self.gone:
            self._sample()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if not self.gone:
            self._sample()
        self.seconds = time.monotonic() - self.started
        self.cpu = cpu_seconds(self.pid) - self.cpu_before if not self.gone else float("nan")

    @property
    def peak(self) -> float:
        return max([self.rss_before, *(rss for _, rss in self.samples)])

    def growth_after(self, seconds: float) -> float:
        """How far the resident memory rose past what it was `seconds` into the attack: a bounded buffer has
        filled by then, a queue without bound keeps growing."""
        later = [rss for at, rss in self.samples if at >= seconds]
        return max(later) - later[0] if later else 0.0

    def running(self, end: float) -> bool:
        """Whether an attack that ends at `end` goes on."""
        return time.monotonic() < end and not self.over.is_set()

    def describe(self) -> str:
        return "rss %.0f→%.0f MiB, server cpu %.2f s in %.1f s%s" % (
            self.rss_before, self.peak, self.cpu, self.seconds, " (SERVER GONE)" if self.gone else "")


class LegitCalls:
    """A well-behaved client: unary GetTrip with grpcio from 127.0.0.1, every `interval` s while the attack runs,
    each call on a new connection (a client arriving during the attack), in a process of its own
    (legit_client.py). Latencies and codes; `call` makes one more call from this process, after the attack."""

    def __init__(self, address: str, pb, interval: float = 0.25):
        self.address = address
        self.parse = pb.Trip.FromString
        self.requests = [pb.GetTripRequest(name=trip_name(i)).SerializeToString() for i in range(20)]
        self.interval = interval
        self.results: list[tuple[float, str]] = []
        self._process: subprocess.Popen | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)

    def call(self, index: int = 0) -> tuple[float, str]:
        started = time.monotonic()
        with grpc.insecure_channel(self.address, options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
            try:
                trip = channel.unary_unary(UNARY_GET_TRIP, response_deserializer=self.parse)(
                    self.requests[index % 20], timeout=LEGIT_DEADLINE_SECONDS)
                code = "OK" if trip.name == trip_name(index) else "WRONG_TRIP"
            except grpc.RpcError as error:
                code = error.code().name
        return time.monotonic() - started, code

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            seconds, code = line.split()
            self.results.append((float(seconds), code))

    def __enter__(self) -> LegitCalls:
        generated = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated")
        self._process = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "legit_client.py"),
             generated, self.address, str(self.interval), str(LEGIT_DEADLINE_SECONDS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        # The attack starts once the client is ready (grpcio warmed up).
        ready = self._process.stdout.readline()
        assert ready == "ready\n", "legit_client.py did not start: %r" % ready
        self._reader.start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.close()  # the client ends after its call under way
        try:
            self._process.wait(timeout=LEGIT_DEADLINE_SECONDS + 10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join()

    def describe(self) -> str:
        if not self.results:
            return "legit: no call"
        seconds = [s for s, _ in self.results]
        failed = collections.Counter(code for _, code in self.results if code != "OK")
        return "legit %d calls max %.3f s median %.3f s%s" % (
            len(seconds), max(seconds), statistics.median(seconds),
            ", FAILED %s" % dict(failed) if failed else "")

    def check(self) -> None:
        assert len(self.results) >= 3, "only %d legit calls were made during the attack" % len(self.results)
        bad = [(round(s, 3), code) for s, code in self.results if code != "OK"]
        assert not bad, "legit calls failed (or missed their %.0f s deadline) during the attack: %s of %d" % (
            LEGIT_DEADLINE_SECONDS, bad[:10], len(self.results))

    def recovered(self, within: float = 10.0) -> tuple[float, str]:
        """A call after the attack: the first OK one within `within` s (the server may take a moment to see
        the attacker's connections close), or the last failure."""
        end = time.monotonic() + within
        while True:
            result = self.call()
            if result[1] == "OK" or time.monotonic() > end:
                return result
            time.sleep(0.2)


def report_and_check(name: str, server, monitor: Monitor, legit: LegitCalls, attacker: str) -> None:
    """Prints the figures of an attack, then checks what every attack must leave: a live server below the RSS
    limit, legit calls OK within their deadline during the attack, and one OK after it."""
    after = legit.recovered()
    print("hostile %s: %s, %s, after %.3f s %s; attacker: %s"
          % (name, monitor.describe(), legit.describe(), after[0], after[1], attacker))
    assert server.process.poll() is None and not monitor.gone, "fleetsim ended (%s):\n%s" % (
        server.process.returncode, server.stderr()[-3000:])
    assert monitor.peak < RSS_LIMIT_MIB, "fleetsim reached %.0f MiB" % monitor.peak
    legit.check()
    assert after[1] == "OK", "no legit call succeeded after the attack (%s)" % after[1]


# ---------------------------------------------------------------------------
# The attacker's connections

def attacker_socket(port: int, source: str = ATTACKER, timeout: float = 10.0) -> socket.socket:
    """A non-blocking TCP connection from `source` to 127.0.0.1:`port`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # The local port is picked at connect, by the whole 4-tuple: thousands of short connections (closed by
        # the server, leaving TIME_WAIT) would run out of ports picked at bind.
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source, 0))
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class Wire:
    """One attacker connection, HTTP/2 written frame by frame (h2's state machine is too slow to open thousands
    of streams a second, and too correct to send what an attacker sends). The server's frames are handled as far
    as the tests need: SETTINGS and PING acknowledged (unless `silent`), flow-control windows followed, GOAWAY,
    RST_STREAM and grpc-status recorded, DATA counted and never given its window back."""

    def __init__(self, port: int, window: int | None = None, preface: bool = True, silent: bool = False):
        self.sock = attacker_socket(port)
        self.silent = silent
        self.closed_at: float | None = None  # when the server closed (or reset) the connection
        self.stalled = False  # a send did not complete in time: the server stopped reading
        self.frames_seen = 0
        self.goaway: int | None = None
        self.statuses: dict[int, str] = {}
        self.answered_at: dict[int, float] = {}
        self.resets: dict[int, int] = {}
        self.data_received = 0
        self.encoder, self.decoder = hpack.Encoder(), hpack.Decoder()
        self.next_stream = 1
        self.send_window, self.initial_window = 65535, 65535
        self.stream_windows: dict[int, int] = {}
        self._inbox = bytearray()
        self._replies = bytearray()
        self._block: tuple[int, int, bytearray] | None = None  # a header block awaiting CONTINUATION
        self._repeat: tuple[list, bytes] | None = None
        if preface:
            self.send(client_preface(window))

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    @property
    def usable(self) -> bool:
        return not self.closed and not self.stalled and self.goaway is None

    # Sending

    def send(self, data: bytes, deadline: float | None = None) -> bool:
        """Sends all of `data` by `deadline` (10 s from now by default). A send that cannot finish marks the
        connection stalled (a frame may be cut: nothing more is sent on it), one the server refused closed."""
        if self.closed or self.stalled:
            return False
        deadline = time.monotonic() + 10 if deadline is None else deadline
        view = memoryview(data)
        poller = None
        while view:
            try:
                view = view[self.sock.send(view):]
            except BlockingIOError:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    self.stalled = True
                    return False
                if poller is None:
                    poller = select.poll()
                    poller.register(self.sock, select.POLLOUT)
                poller.poll(min(wait, 0.5) * 1000)
            except OSError:
                self._closed()
                return False
        return True

    def open(self, headers: list, message: bytes | None = None, end_stream: bool = True) -> tuple[int, bytes]:
        """A new stream: its HEADERS, and a DATA frame of `message` (which the windows must allow)."""
        stream = self.next_stream
        self.next_stream += 2
        self.stream_windows[stream] = self.initial_window
        block = self._block_for(headers)
        if message is None:
            return stream, frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream, block)
        return stream, frame(HEADERS, END_HEADERS, stream, block) + self.data(stream, message, end_stream)

    def _block_for(self, headers: list) -> bytes:
        """`headers` encoded by this connection's encoder. A block that changed no dynamic table entry (the
        list's second encoding: every field is in the table by then) refers to the table only, and is reused
        for the same list from then on."""
        if self._repeat is not None and self._repeat[0] == headers:
            return self._repeat[1]
        entries = list(self.encoder.header_table.dynamic_entries)
        block = self.encoder.encode(headers)
        self._repeat = (list(headers), block) if list(self.encoder.header_table.dynamic_entries) == entries else None
        return block

    def window(self, stream: int) -> int:
        return min(self.send_window, self.stream_windows.get(stream, 0))

    def data(self, stream: int, payload: bytes, end_stream: bool = False, max_frame: int = 16384) -> bytes:
        """DATA frames of `payload`, taken from the windows."""
        self.send_window -= len(payload)
        self.stream_windows[stream] = self.stream_windows.get(stream, 0) - len(payload)
        chunks = [payload[i:i + max_frame] for i in range(0, len(payload), max_frame)] or [b""]
        return b"".join(frame(DATA, END_STREAM if end_stream and i == len(chunks) - 1 else 0, stream, chunk)
                        for i, chunk in enumerate(chunks))

    # Receiving

    def receive(self) -> bool:
        """Handles what has arrived, without waiting; whether the connection is still open."""
        while not self.closed:
            try:
                data = self.sock.recv(1 << 18)
            except BlockingIOError:
                break
            except OSError:
                self._closed()
                break
            if not data:
                self._closed()
                break
            self._inbox += data
            self._parse()
        if self._replies and not self.silent:
            replies, self._replies = bytes(self._replies), bytearray()
            self.send(replies)
        return not self.closed

    def wait_for_settings(self, timeout: float = 5.0) -> bool:
        """Reads until the server's first frames (its SETTINGS, and the window it opens) have arrived."""
        end = time.monotonic() + timeout
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        while not self.frames_seen and not self.closed and time.monotonic() < end:
            poller.poll(50)
            self.receive()
        return self.frames_seen > 0

    def unread_bytes(self) -> int:
        """Bytes the server sent that wait in this socket's receive queue."""
        if self.closed:
            return 0
        buffer = fcntl.ioctl(self.sock, termios.FIONREAD, b"\0\0\0\0")
        return struct.unpack("i", buffer)[0]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def _closed(self) -> None:
        if self.closed_at is None:
            self.closed_at = time.monotonic()

    def _parse(self) -> None:
        inbox, position = self._inbox, 0
        while len(inbox) - position >= 9:
            length = int.from_bytes(inbox[position:position + 3], "big")
            if len(inbox) - position - 9 < length:
                break
            kind, flags = inbox[position + 3], inbox[position + 4]
            stream = int.from_bytes(inbox[position + 5:position + 9], "big") & 0x7FFFFFFF
            payload = bytes(inbox[position + 9:position + 9 + length])
            position += 9 + length
            self.frames_seen += 1
            self._frame(kind, flags, stream, payload)
        del inbox[:position]

    def _frame(self, kind: int, flags: int, stream: int, payload: bytes) -> None:
        if kind == DATA:
            self.data_received += len(payload)
        elif kind == HEADERS:
            if flags & PADDED:
                payload = payload[1:len(payload) - payload[0]]
            if flags & PRIORITY:
                payload = payload[5:]
            self._block = (stream, flags, bytearray(payload))
            if flags & END_HEADERS:
                self._headers_complete()
        elif kind == CONTINUATION and self._block is not None:
            self._block[2].extend(payload)
            if flags & END_HEADERS:
                self._headers_complete()
        elif kind == RST_STREAM:
            self.resets[stream] = struct.unpack(">I", payload[:4])[0]
            self.answered_at.setdefault(stream, time.monotonic())
        elif kind == SETTINGS and not flags & ACK:
            for offset in range(0, len(payload) - 5, 6):
                code, value = struct.unpack(">HI", payload[offset:offset + 6])
                if code == SETTINGS_INITIAL_WINDOW_SIZE:
                    for s in self.stream_windows:
                        self.stream_windows[s] += value - self.initial_window
                    self.initial_window = value
            self._replies += frame(SETTINGS, ACK, 0)
        elif kind == PING and not flags & ACK:
            self._replies += frame(PING, ACK, 0, payload)
        elif kind == GOAWAY:
            self.goaway = struct.unpack(">I", payload[4:8])[0]
        elif kind == WINDOW_UPDATE:
            increment = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
            if stream == 0:
                self.send_window += increment
            elif stream in self.stream_windows:
                self.stream_windows[stream] += increment

    def _headers_complete(self) -> None:
        stream, flags, block = self._block
        self._block = None
        fields = dict(self.decoder.decode(bytes(block)))
        if "grpc-status" in fields:
            self.statuses[stream] = fields["grpc-status"]
            self.answered_at.setdefault(stream, time.monotonic())


def pump(wires: list[Wire], until: float, done=lambda: False) -> None:
    """Handles what arrives on `wires` until the time `until`, `done()`, or every wire closed."""
    poller, by_fd = select.poll(), {}
    for wire in wires:
        if not wire.closed:
            poller.register(wire.sock, select.POLLIN)
            by_fd[wire.sock.fileno()] = wire
    while by_fd and not done():
        wait = until - time.monotonic()
        if wait < 0:
            break
        for fd, _ in poller.poll(min(wait, 0.05) * 1000):
            if not by_fd[fd].receive():
                poller.unregister(fd)
                del by_fd[fd]


def connect_many(port: int, count: int, **options) -> tuple[list[Wire], int]:
    """`count` wires, and how many connects failed."""
    wires, failed = [], 0
    for _ in range(count):
        try:
            wires.append(Wire(port, **options))
        except OSError:
            failed += 1
    return wires, failed


def tally(wires: list[Wire]) -> str:
    """What the attacker saw: connections the server closed, GOAWAYs, grpc-statuses, resets."""
    goaways = collections.Counter(error_name(w.goaway) for w in wires if w.goaway is not None)
    statuses = collections.Counter(s for w in wires for s in w.statuses.values())
    resets = collections.Counter(error_name(c) for w in wires for c in w.resets.values())
    return "%d connections, %d closed by the server (%d before any frame), GOAWAY %s, grpc-status %s, RST_STREAM %s" % (
        len(wires), sum(w.closed for w in wires), sum(w.closed and not w.frames_seen for w in wires),
        dict(goaways), dict(statuses), dict(resets))


def close_all(wires: list[Wire]) -> None:
    for wire in wires:
        wire.close()


# ---------------------------------------------------------------------------
# Attacks on fleetsim

@pytest.mark.parametrize("path", [UNARY_GET_TRIP, UNKNOWN_METHOD], ids=["get-trip", "unknown-method"])
def test_request_byte_starvation(fsim_start, fsim_pb, path):
    """4 connections × 4 streams, each announcing a 4 MiB − 1 message and sending it as fast as the windows
    allow, never ending it; an answered stream is replaced (at most one new stream per connection every 10 ms)
    for 4 s. GetTrip requests above 4 KiB are refused at the length prefix; on a method with no such limit the
    per-connection and per-peer request budgets refuse what goes over them (RESOURCE_EXHAUSTED) and the request
    timeout ends the rest (DEADLINE_EXCEEDED)."""
    request_timeout, attack_seconds = 2, 3
    server = fsim_start(*SERVER_LOOPS, "--trips", 20, "--request-timeout", request_timeout)
    length = (4 << 20) - 1
    announce, body = b"\x00" + struct.pack(">I", length), bytes(256 << 10)
    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        wires, _ = connect_many(port_of(server.address), 4, window=MAX_WINDOW)
        for wire in wires:
            wire.wait_for_settings()
        waiting: dict[Wire, set[int]] = {wire: set() for wire in wires}  # streams not answered yet
        left: dict[tuple[Wire, int], int] = {}  # bytes of each stream's message not sent yet
        opened: dict[tuple[Wire, int], float] = {}
        sent = 0
        end = time.monotonic() + attack_seconds
        while monitor.running(end + request_timeout + 2):
            now = time.monotonic()
            for wire, streams in waiting.items():
                streams -= {stream for stream in streams if stream in wire.answered_at or not wire.usable}
                last = max((opened[wire, stream] for stream in streams), default=0.0)
                if now < end and wire.usable and len(streams) < 4 and now - last >= 0.01:
                    stream, frames = wire.open(request_headers(path), announce, end_stream=False)
                    if wire.send(frames):
                        streams.add(stream)
                        opened[wire, stream], left[wire, stream] = now, length
                for stream in streams:
                    size = min(left[wire, stream], wire.window(stream), len(body))
                    if size > 0 and wire.send(wire.data(stream, body[:size])):
                        left[wire, stream] -= size
                        sent += size
            if now >= end and not any(waiting.values()):
                break
            pump(wires, time.monotonic() + (0.01 if now >= end else 0.001))
        answered = [(wire.statuses.get(stream), wire.answered_at[stream] - at)
                    for (wire, stream), at in opened.items() if stream in wire.answered_at]
        unanswered = sum(1 for wire, stream in opened if stream not in wire.answered_at and wire.usable)
        close_all(wires)
    codes = collections.Counter(code for code, _ in answered)
    slowest = max((seconds for _, seconds in answered), default=float("nan"))
    report_and_check("request-starvation %s" % path, server, monitor, legit,
                     "%.1f MiB sent on %d streams; %d answered (grpc-status %s, the slowest %.2f s after its "
                     "HEADERS), %d never; %s" % (sent / (1 << 20), len(opened), len(answered), dict(codes), slowest,
                                                unanswered, tally(wires)))
    assert unanswered == 0, "%d unfinished requests were never answered" % unanswered
    if path == UNARY_GET_TRIP:
        assert set(codes) == {"8"}, codes  # at the length prefix
        assert slowest < 1.0
    else:
        assert set(codes) <= {"8", "4"}, codes
        assert codes["8"] >= 4, "the request budgets refused only %d requests" % codes["8"]
        assert codes["4"] >= 1, "no request was ended by the request timeout"
        assert slowest < request_timeout + 2


def test_slowloris_idle_connections(fsim_start, fsim_pb):
    """1,030 connections from one address that send nothing: those beyond the per-peer cap are closed at once,
    the rest when the handshake timeout passes."""
    handshake_timeout = 3
    server = fsim_start(*SERVER_LOOPS, "--trips", 20, "--handshake-timeout", handshake_timeout)
    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        wires, failed = connect_many(port_of(server.address), 1030, preface=False, silent=True)
        connected = time.monotonic()
        pump(wires, connected + 1.5)
        at_once = sum(w.closed for w in wires)
        pump(wires, connected + handshake_timeout + 3)
        open_left = sum(not w.closed for w in wires)
        close_all(wires)
    last = max((w.closed_at - connected for w in wires if w.closed), default=float("nan"))
    report_and_check("slowloris-idle", server, monitor, legit,
                     "%d connected (%d connects failed), %d closed within 1.5 s, %d still open after %.0f s, "
                     "last closed %.2f s after connecting; %s"
                     % (len(wires), failed, at_once, open_left, handshake_timeout + 3, last, tally(wires)))
    assert at_once >= 1030 - 64 - 30, "only %d connections closed at once" % at_once
    assert open_left == 0, "%d silent connections outlived the handshake timeout" % open_left


def test_slowloris_unfinished_headers(fsim_start, fsim_pb):
    """1,030 connections that each send the preface, SETTINGS and one request's HEADERS, then nothing: beyond
    the per-peer cap they are closed at once; the others' requests time out (DEADLINE_EXCEEDED), after which
    the connections are idle and closed."""
    server = fsim_start(*SERVER_LOOPS, "--trips", 20, "--handshake-timeout", 2, "--request-timeout", 2, "--idle-timeout", 3)
    blob = client_preface() + frame(HEADERS, END_HEADERS, 1, hpack.Encoder().encode(request_headers(UNARY_GET_TRIP)))
    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        started = time.monotonic()
        wires, failed = connect_many(port_of(server.address), 1030, preface=False)
        for wire in wires:
            wire.send(blob)  # the wire's own encoder is not used: the block came from an encoder of its own
        pump(wires, started + 10, done=lambda: all(w.closed for w in wires))
        close_all(wires)
    open_left = sum(not w.closed for w in wires)
    last = max((w.closed_at - started for w in wires if w.closed), default=float("nan"))
    report_and_check("slowloris-headers", server, monitor, legit,
                     "%d connected (%d connects failed), %d still open after 10 s, last closed %.2f s after the "
                     "first connect; %s" % (len(wires), failed, open_left, last, tally(wires)))
    assert open_left == 0, "%d connections with an unfinished request outlived 10 s" % open_left


def test_hpack_header_bomb(fsim_start, fsim_pb):
    """60 connections × 1,000 streams of HEADERS, never ended, each with a 3.8 KB header the encoder puts in the
    dynamic table once and then names by index: 1.1 MB on the wire that decode to 250 MB of header lists. The
    header budgets (per peer, server-wide) refuse what goes over them."""
    server = fsim_start(*SERVER_LOOPS, "--trips", 20, "--request-timeout", 2)
    encoder = hpack.Encoder()
    headers = request_headers(UNARY_GET_TRIP, ("x-bomb", "b" * 3800))
    first, repeat = encoder.encode(headers), encoder.encode(headers)
    assert encoder.encode(headers) == repeat and len(repeat) < 32, "the bomb is not in the dynamic table"
    blob = client_preface() + frame(HEADERS, END_HEADERS, 1, first) + b"".join(
        frame(HEADERS, END_HEADERS, stream, repeat) for stream in range(3, 2000, 2))
    decoded = sum(len(n) + len(v) + 32 for n, v in headers) * 1000 * 60
    every, failed, sent = [], 0, 0
    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        end = time.monotonic() + 5
        # The attacker comes back with 60 new connections whenever the server has closed all of its last ones.
        while time.monotonic() < end:
            wires, failed_now = connect_many(port_of(server.address), 60, preface=False)
            failed += failed_now
            for wire in wires:
                wire.send(blob)  # encoded above, with an encoder of its own
            pump(wires, end)
            sent += sum(1 for wire in wires if wire.frames_seen)  # the blobs the server took in
            close_all(wires)
            every += wires
            time.sleep(0.01)
    report_and_check("hpack-bomb", server, monitor, legit,
                     "%.1f MB sent on connections the server read, %.0f MB of header lists; %d connects failed; %s"
                     % (len(blob) * sent / 1e6, decoded / 60 * sent / 1e6, failed, tally(every)))


@pytest.mark.parametrize("seconds", DURATIONS)
def test_non_reading_client_pipelining_unary_calls(fsim_start, fsim_pb, seconds):
    """One connection with the largest windows sends unary GetTrip requests (40 bytes, each answered with 2 to 6
    KB) as fast as the server's limits allow, and never reads the answers: the server stops reading it once its
    unsent output passes the bound, instead of queueing answers."""
    # 900 a second: under --stream-opens-per-second (1000), and (answered within a second) under
    # SETTINGS_MAX_CONCURRENT_STREAMS (1000), which a client that never reads cannot otherwise keep track of.
    rate = 900
    server = fsim_start(*SERVER_LOOPS, "--trips", 20)
    messages = [grpc_message(fsim_pb.GetTripRequest(name=trip_name(i)).SerializeToString()) for i in range(20)]
    headers = request_headers(UNARY_GET_TRIP)
    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        wire = Wire(port_of(server.address), window=MAX_WINDOW)
        wire.wait_for_settings()  # the last read: from here on it never reads
        sent, started, end = 0, time.monotonic(), time.monotonic() + seconds
        blocked_at = None
        while monitor.running(end) and wire.usable and wire.send_window > 64 * 1024:
            now = time.monotonic()
            due = min(int((now - started) * rate) - sent, 200)
            if due <= 0:
                time.sleep(0.005)
                continue
            if wire.send(b"".join(wire.open(headers, messages[(sent + i) % 20])[1] for i in range(due)), deadline=end):
                sent += due
            elif wire.stalled:
                blocked_at = now - started
        while monitor.running(end):  # the server stopped reading (or closed): hold on
            time.sleep(0.1)
        unread = wire.unread_bytes()
        wire.close()
    growth = monitor.growth_after(seconds / 2)
    report_and_check("non-reader-unary", server, monitor, legit,
                     "%d requests sent in %.0f s, %s, %s, %.1f MiB unread in its socket; the server grew %.1f MiB "
                     "in the second half" % (
                         sent, seconds, "a send blocked from %.1f s on (the server stopped reading)" % blocked_at
                         if blocked_at is not None else "no send blocked",
                         "connection closed by the server" if wire.closed else "connection open", unread / (1 << 20),
                         growth))
    assert growth < 8, "fleetsim kept growing (%.1f MiB in the second half): the answers queue without bound" % growth


@pytest.mark.parametrize("seconds", DURATIONS)
def test_non_reading_client_streaming_calls(fsim_start, fsim_pb, seconds):
    """2 connections × 500 streaming GetTrip calls, updates every 0.25 s, with the largest windows and never
    read: the server's output to them stays bounded."""
    server = fsim_start(*SERVER_LOOPS, "--trips", 20, "--speedup", 5, "--update-interval", 0.25)
    messages = [grpc_message(fsim_pb.StreamTripRequest(name=trip_name(i)).SerializeToString()) for i in range(20)]
    headers = request_headers(STREAMING_GET_TRIP)
    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        end = time.monotonic() + seconds
        wires, _ = connect_many(port_of(server.address), 2, window=MAX_WINDOW)
        for wire in wires:
            wire.wait_for_settings()  # the last read
            wire.send(b"".join(wire.open(headers, messages[i % 20])[1] for i in range(500)), deadline=end)
        while monitor.running(end):
            time.sleep(0.1)
        unread = sum(w.unread_bytes() for w in wires)
        close_all(wires)
    growth = monitor.growth_after(seconds / 2)
    report_and_check("non-reader-streaming", server, monitor, legit,
                     "1,000 streams for %.0f s, %.1f MiB unread in its sockets, %d sends blocked, %d closed; the "
                     "server grew %.1f MiB in the second half" % (seconds, unread / (1 << 20),
                                                                  sum(w.stalled for w in wires),
                                                                  sum(w.closed for w in wires), growth))
    assert growth < 8, "fleetsim kept growing (%.1f MiB in the second half): the updates queue without bound" % growth


@pytest.mark.parametrize("seconds", DURATIONS)
def test_rapid_reset_with_reconnects(fsim_start, fsim_pb, seconds):
    """Two attackers open unary GetTrip streams and reset them at once (HEADERS, DATA, RST_STREAM), as fast as
    they can; when the server ends a connection they open the next at once."""
    server = fsim_start(*SERVER_LOOPS, "--trips", 20)
    port = port_of(server.address)
    message = grpc_message(fsim_pb.GetTripRequest(name=trip_name(0)).SerializeToString())
    headers = request_headers(UNARY_GET_TRIP)
    cancel = struct.pack(">I", h2.errors.ErrorCodes.CANCEL)
    counts = collections.Counter()
    goaways = collections.Counter()
    lock = threading.Lock()

    def attack(end: float, monitor: Monitor) -> None:
        mine, codes = collections.Counter(), collections.Counter()
        while monitor.running(end):
            try:
                wire = Wire(port)
            except OSError:
                mine["connects failed"] += 1
                time.sleep(0.001)
                continue
            mine["connections"] += 1
            while wire.usable and monitor.running(end):
                batch = []
                for _ in range(100):
                    with_data = wire.send_window > 4096
                    stream, frames = wire.open(headers, message if with_data else None, end_stream=True)
                    batch.append(frames + frame(RST_STREAM, 0, stream, cancel))
                if wire.send(b"".join(batch), deadline=min(end, time.monotonic() + 2)):
                    mine["streams"] += 100
                wire.receive()
            if wire.goaway is not None:
                codes[error_name(wire.goaway)] += 1
            if wire.closed and not wire.frames_seen:
                mine["closed before any frame"] += 1
            mine["stalled"] += wire.stalled
            wire.close()
        with lock:
            counts.update(mine)
            goaways.update(codes)

    with Monitor(server.process.pid) as monitor, LegitCalls(server.address, fsim_pb) as legit:
        end = time.monotonic() + seconds
        attackers = [threading.Thread(target=attack, args=(end, monitor)) for _ in range(2)]
        for thread in attackers:
            thread.start()
        for thread in attackers:
            thread.join()
    report_and_check("rapid-reset", server, monitor, legit, "%d streams opened and reset on %d connections "
                     "(%d closed before any frame, %d stalled 2 s on a send, %d connects failed), GOAWAY %s"
                     % (counts["streams"], counts["connections"], counts["closed before any frame"],
                        counts["stalled"], counts["connects failed"], dict(goaways)))


class Trickle:
    """Clients from ATTACKER that send `request` one byte every `interval` s, in a thread; a client the server
    closes is replaced by a new one that starts over."""

    def __init__(self, port: int, request: bytes, clients: int = 4, interval: float = 1.5):
        self.port, self.request, self.interval = port, request, interval
        self.clients = [[attacker_socket(port), 0] for _ in range(clients)]  # [socket, bytes sent]
        self.closed_by_server = self.connects_failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Trickle:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        for sock, _ in self.clients:
            sock.close()

    def _run(self) -> None:
        while True:
            for client in self.clients:
                sock, sent = client
                try:
                    gone = sock.recv(4096) == b""  # an answer (an error, say) is read and ignored
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                try:
                    gone = gone or sock.send(self.request[sent % len(self.request):][:1]) != 1
                except OSError:
                    gone = True
                client[1] += 1
                if gone:
                    self.closed_by_server += 1
                    sock.close()
                    try:
                        client[:] = [attacker_socket(self.port), 0]
                    except OSError:
                        self.connects_failed += 1
                        client[:] = [socket.socket(), 0]  # fails at once, and is replaced on the next round
            if self._stop.wait(self.interval):
                return


def scrape(url: str) -> tuple[float, str]:
    """GET `url` with a 1 s timeout: (seconds, OK or what went wrong)."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            outcome = "OK" if response.status == 200 and b"fleetsim_" in response.read() else "BAD ANSWER"
    except OSError as error:
        outcome = type(error).__name__
    return time.monotonic() - started, outcome


def test_metrics_slowloris(fsim_start):
    """Four clients trickle a request to /metrics one byte every 1.5 s (starting over when the server closes
    them); meanwhile every scrape (1 s timeout) succeeds."""
    server = fsim_start(*SERVER_LOOPS, "--trips", 20, "--metrics-listen", "127.0.0.1:0")
    line = server.process.stdout.readline()
    assert line.startswith("metrics on "), line
    metrics_address = line.strip()[len("metrics on "):]
    url = "http://%s/metrics" % metrics_address
    scrapes: list[tuple[float, str]] = []
    with Monitor(server.process.pid) as monitor, \
            Trickle(port_of(metrics_address), b"GET /metrics HTTP/1.1\r\nHost: fleetsim\r\n\r\n") as trickle:
        end = time.monotonic() + 6
        while time.monotonic() < end:
            scrapes.append(scrape(url))
            time.sleep(0.2)
    after = scrape(url)
    failed = collections.Counter(outcome for _, outcome in scrapes if outcome != "OK")
    seconds = [s for s, _ in scrapes]
    print("hostile metrics-slowloris: %s, %d scrapes max %.3f s median %.3f s%s, after %.3f s %s; attacker: 4 "
          "trickling clients, %d closed by the server (%d connects failed)"
          % (monitor.describe(), len(scrapes), max(seconds), statistics.median(seconds),
             ", FAILED %s" % dict(failed) if failed else "", after[0], after[1], trickle.closed_by_server,
             trickle.connects_failed))
    assert not failed, "scrapes failed while clients trickled: %s of %d" % (dict(failed), len(scrapes))
    assert after[1] == "OK", "no scrape succeeded after the trickling stopped (%s)" % after[1]
    assert monitor.peak < RSS_LIMIT_MIB


# ---------------------------------------------------------------------------
# tripwatch against a hostile server

EMPTY_MESSAGES = b"\x00\x00\x00\x00\x00" * 3276  # 5-byte gRPC messages of length 0, 16,380 bytes
INFORMATIONAL_BLOCK = b"\x08\x03100"  # `:status: 100`, a literal without indexing: the HPACK tables stay as they are


class FloodingServer:
    """A gRPC server (h2c; h2 in server mode) on 127.0.0.1 that answers every request by flooding it: `empty-data`
    sends response HEADERS and then empty DATA frames, `empty-messages` response HEADERS and then gRPC messages of
    length 0 (as far as the client's windows allow), `informational` 1xx HEADERS only (a 1xx may not follow the
    final response). Records what the client did about it."""

    def __init__(self, mode: str):
        self.mode = mode
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.first_request = threading.Event()
        self.connections = 0
        self.requests = 0
        self.frames = 0
        self.resets = collections.Counter()
        self.goaways = collections.Counter()  # (error code, debug data) of the client's GOAWAYs
        self._sockets: list[socket.socket] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def stop(self) -> None:
        self._stop.set()
        for sock in self._sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked sending to a client that stopped reading
            except OSError:
                pass
        for thread in self._threads:
            thread.join(10)
        self.listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except socket.timeout:
                continue
            self.connections += 1
            self._sockets.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _burst(self, conn: h2.connection.H2Connection, stream: int) -> bytes:
        if self.mode == "empty-data":
            self.frames += 1000
            return frame(DATA, 0, stream, b"") * 1000
        if self.mode == "informational":
            self.frames += 1000
            return frame(HEADERS, END_HEADERS, stream, INFORMATIONAL_BLOCK) * 1000
        for _ in range(16):  # empty-messages, within the windows
            size = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size) // 5 * 5
            if size < 5:
                break
            conn.send_data(stream, EMPTY_MESSAGES[:size])
            self.frames += 1
        return b""

    def _handle(self, conn: h2.connection.H2Connection, event, flooding: set[int]) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self.requests += 1
            self.first_request.set()
            if self.mode != "informational":
                conn.send_headers(event.stream_id, [(":status", "200"), ("content-type", "application/grpc")])
            flooding.add(event.stream_id)
        elif isinstance(event, h2.events.DataReceived):
            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.resets[error_name(event.error_code)] += 1
            flooding.discard(event.stream_id)
        elif isinstance(event, h2.events.ConnectionTerminated):
            debug = (event.additional_data or b"").decode(errors="replace")[:100]
            self.goaways[error_name(event.error_code), debug] += 1
            flooding.clear()

    def _serve(self, sock: socket.socket) -> None:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        flooding: set[int] = set()
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        try:
            sock.sendall(conn.data_to_send())
            while not self._stop.is_set():
                if poller.poll(0 if flooding else 100):
                    data = sock.recv(1 << 16)
                    if not data:
                        return
                    for event in conn.receive_data(data):
                        self._handle(conn, event, flooding)
                out = conn.data_to_send()
                for stream in list(flooding):
                    out += self._burst(conn, stream) + conn.data_to_send()
                if out:
                    sock.sendall(out)
        except (OSError, h2.exceptions.H2Error):
            return
        finally:
            sock.close()


@pytest.mark.parametrize("seconds", FLOOD_DURATIONS)
@pytest.mark.parametrize("mode", ["empty-data", "empty-messages", "informational"])
def test_tripwatch_against_a_flooding_server(tool_tripwatch, tmp_path, mode, seconds):
    """`tripwatch follow` (streaming, h2c) against a server that floods its stream with frames that carry
    nothing: tripwatch ends the stream (or the connection) with an error saying so (`… in a row`), and even
    retrying and flooded again uses under half a core."""
    server = FloodingServer(mode)
    stdout_path, stderr_path = tmp_path / "tripwatch.out", tmp_path / "tripwatch.err"
    argv = [tool_tripwatch, "follow", "--target", "127.0.0.1:%d" % server.port, "--plaintext", "--mode", "stream",
            "--json", "--give-up-after", str(seconds * 10), trip_name(0)]
    try:
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            process = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
        try:
            assert server.first_request.wait(20), "tripwatch never called the server"
            cpu_before, started = cpu_seconds(process.pid), time.monotonic()
            time.sleep(seconds)
            cpu = cpu_seconds(process.pid) - cpu_before
            elapsed = time.monotonic() - started
            process.send_signal(signal.SIGTERM)
            code = process.wait(20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    finally:
        server.stop()
    output = stdout_path.read_text(errors="replace") + stderr_path.read_text(errors="replace")
    errors = [line for line in output.splitlines() if "in a row" in line]
    print("hostile server %s: tripwatch cpu %.2f s in %.1f s (%.2f core), exit %s, %d connections, %d requests, "
          "%d flood frames, client RST_STREAM %s, GOAWAY %s, %d output lines (%.1f MB), %d saying 'in a row'%s"
          % (mode, cpu, elapsed, cpu / elapsed, code, server.connections, server.requests, server.frames,
             dict(server.resets), dict(server.goaways), output.count("\n"), len(output) / 1e6, len(errors),
             " e.g. %s" % errors[0][:200] if errors else ""))
    assert cpu / elapsed < 0.5, "tripwatch used %.2f of a core while flooded" % (cpu / elapsed)
    assert errors, "tripwatch did not report the flood (no 'in a row' in its output):\n%s" % output[-2000:]


def run_bounded(argv: list[str], seconds: float = 5, max_rss_mib: float = 512) -> tuple[int | None, float, str]:
    """Runs a tool that should exit at once: (exit status, or None when killed after `seconds` or on passing
    `max_rss_mib` (one reading /dev/zero grows fast), seconds, standard error)."""
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reader = threading.Thread(target=lambda: setattr(process, "stderr_text", process.stderr.read()), daemon=True)
    reader.start()
    code = None
    while time.monotonic() - started < seconds:
        code = process.poll()
        if code is not None:
            break
        try:
            if rss_mib(process.pid) > max_rss_mib:
                break
        except (OSError, ProcessLookupError):
            pass
        time.sleep(0.02)
    elapsed = time.monotonic() - started
    if code is None:
        process.kill()
        process.wait()
    reader.join(5)
    return code, elapsed, getattr(process, "stderr_text", "")


def test_key_files_that_are_no_small_regular_file(tool_tripwatch, tool_fleetsim, tmp_path):
    """A key or secret file that is a device, a FIFO or a 300 MB (sparse) file is refused at once, naming the
    problem, instead of read for ever (or into memory)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as file:
        file.truncate(300 * 1000 * 1000)
    follow = [tool_tripwatch, "follow", "--target", "127.0.0.1:1", "--plaintext", trip_name(0),
              "--service-account-file"]
    serve = [tool_fleetsim, "--listen", "127.0.0.1:0", "--jwt-secret-file"]
    cases = [(follow, "/dev/zero", "not a regular file"), (follow, fifo, "not a regular file"),
             (follow, sparse, "larger than 65536 bytes"), (serve, "/dev/zero", "not a regular file"),
             (serve, fifo, "not a regular file")]
    failures = []
    for argv, path, expected in cases:
        code, seconds, stderr = run_bounded([str(a) for a in argv] + [str(path)])
        if code is None or code == 0 or expected not in stderr:
            failures.append("$ %s %s\n%s after %.1f s, stderr: %s" % (
                " ".join(map(str, argv)), path, "killed" if code is None else "exit %s" % code, seconds, stderr[-500:]))
    print("hostile key files: %d of %d refused at once" % (len(cases) - len(failures), len(cases)))
    assert not failures, "\n".join(failures)
