"""gRPC client conformance: `tripwatch raw-call` against the scripted HTTP/2
server (h2conf_server.py), one call per case of h2conf_cases.py, over h2c and
over TLS.

Run from the package root:

    swift build --product tripwatch
    TRIPWATCH=.build/debug/tripwatch python -m pytest -q Tests/Conformance

TRIPWATCH is an executable, or a command line (split like a shell would).
The client is run as

    tripwatch raw-call 127.0.0.1:PORT /conformance.Cases/<case> --plaintext --timeout T [--server-streaming]
    tripwatch raw-call 127.0.0.1:PORT /conformance.Cases/<case> --ca-file CA --timeout T [--server-streaming]

and must print, on stdout and nothing else there, zero or more lines
`{"message_hex": "..."}` (one per message received, in order) and then one line
`{"status": {"code": N, "name": "...", "message": "...", "domain": "io.grpc"},
"headers": {...}, "trailers": {...}}`; exit 0 when the status is OK, 1 for any
other status, 2 for usage errors. Metadata maps a name to a string or to a list
of strings; a `-bin` value may be shown as base64 (padded or not) or hex.

The server reports what the client sent, so the suite also checks the request
headers (rules 6 to 10, 13, 15 of grpc-conformance.md) and the RST_STREAM(CANCEL)
a client owes on a deadline and on an oversized message (rules 28 and 37).

The last tests run servers of their own: one that answers with garbage instead
of its SETTINGS, TLS servers that do not agree on ALPN h2, one with a small
SETTINGS_MAX_CONCURRENT_STREAMS, one whose first connection turns hostile
while calls on other connections of the same channel go on, and one that
answers in full while it holds the request back with a 16-byte window (C53b:
the client must end its side with RST_STREAM(NO_ERROR)).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import h2conf_cases as cases  # noqa: E402
from h2conf_server import make_test_certs  # noqa: E402

H2C_CASES = list(cases.CASES)
TLS_CASES = list(cases.CASES)  # every case runs over TLS too
WIRE_CASES = [c for c in cases.CASES if c.client_rst is not None or c.pings or c.client_closes]
TIMEOUT_RE = re.compile(r"^[0-9]{1,8}[HMSmun]$")
TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


# ---------------------------------------------------------------------------
# The scripted servers

class ScriptedServer:
    """One h2conf_server.py process; collects its `record` lines."""

    def __init__(self, name: str, log_dir: Path, extra_args: list[str]):
        self.name = name
        self.log = log_dir / ("h2conf-%s.log" % name)
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "h2conf_server.py"), "--port", "0", *extra_args],
            stdout=subprocess.PIPE, stderr=self.log.open("w"), text=True)
        first = self.process.stdout.readline()
        if not first.startswith("listening on 127.0.0.1:"):
            self.process.kill()
            self.process.wait()
            raise RuntimeError("h2conf server %s did not start (%r):\n%s"
                               % (name, first, self.log.read_text(errors="replace")))
        self.port = int(first.rsplit(":", 1)[1])
        self.records: list[dict] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("record "):
                with self._cond:
                    self.records.append(json.loads(line[len("record "):]))
                    self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.records)

    def wait_record(self, case_name: str, since: int, timeout: float) -> dict | None:
        """The first record of `case_name` after index `since`, waiting up to timeout."""
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                for r in self.records[since:]:
                    if r.get("case") == case_name:
                        return r
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def h2conf_certs(tmp_path_factory):
    return make_test_certs(tmp_path_factory.mktemp("h2conf-certs"))


@pytest.fixture(scope="module")
def h2conf_servers(tmp_path_factory, h2conf_certs):
    log_dir = tmp_path_factory.mktemp("h2conf-logs")
    ca, cert, key = h2conf_certs
    servers = {}
    try:
        servers["h2c"] = ScriptedServer("h2c", log_dir, [])
        servers["tls"] = ScriptedServer("tls", log_dir, ["--cert", str(cert), "--key", str(key)])
        yield servers
    finally:
        for s in servers.values():
            s.stop()


# ---------------------------------------------------------------------------
# The client under test

@pytest.fixture(scope="module")
def tripwatch() -> list[str]:
    value = os.environ.get("TRIPWATCH")
    if not value:
        pytest.fail(
            "TRIPWATCH is not set. Build tripwatch and point the variable at it:\n"
            "    swift build --product tripwatch\n"
            "    export TRIPWATCH=$PWD/.build/debug/tripwatch",
            pytrace=False)
    command = [value] if Path(value).is_file() else shlex.split(value)
    exe = Path(command[0])
    if exe.parent != Path(".") or exe.is_file():
        exe = exe if exe.is_absolute() else (Path.cwd() / exe).resolve()
        if not exe.is_file() or not os.access(exe, os.X_OK):
            pytest.fail("TRIPWATCH=%s: %s is not an executable file" % (value, exe), pytrace=False)
        command[0] = str(exe)
    return command


@dataclass
class CallResult:
    argv: list
    returncode: object       # int, or "timeout"
    stdout: str
    stderr: str
    seconds: float
    record: dict | None      # what the server saw, if it saw the call
    server: ScriptedServer

    def describe(self) -> str:
        return ("$ %s\nexit %s after %.2f s\n--- stdout ---\n%s\n--- stderr ---\n%s\n"
                "--- server saw ---\n%s\n--- server log (tail) ---\n%s" % (
                    " ".join(shlex.quote(a) for a in self.argv), self.returncode, self.seconds,
                    _clip(self.stdout), _clip(self.stderr),
                    json.dumps(self.record)[:2000] if self.record else "(no record)",
                    self.server.log_tail()))


def _clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... (%d more characters)" % (len(text) - limit)


_results: dict[tuple[str, str], CallResult] = {}


def call(tripwatch, servers, certs, transport: str, case: cases.Case) -> CallResult:
    """Runs the client on one case (once per transport; later calls reuse the result)."""
    key = (transport, case.name)
    if key in _results:
        return _results[key]
    server = servers[transport]
    argv = [*tripwatch, "raw-call", "127.0.0.1:%d" % server.port, case.path]
    argv += ["--plaintext"] if transport == "h2c" else ["--ca-file", str(certs[0])]
    argv += ["--timeout", "%g" % case.timeout]
    if case.streaming:
        argv.append("--server-streaming")
    since = server.mark()
    start = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                           timeout=case.timeout + 15)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        code, out, err = "timeout", text(e.stdout), text(e.stderr)
    seconds = time.monotonic() - start
    # The server writes its record when the script ends or the client resets.
    script_time = sum(a.seconds for a in case.script if isinstance(a, cases.Sleep)) + 4.0
    record = server.wait_record(case.name, since, timeout=script_time if case.client_rst else 2.0)
    result = CallResult(argv, code, out, err, seconds, record, server)
    _results[key] = result
    return result


# ---------------------------------------------------------------------------
# Reading the client's output

class OutputError(AssertionError):
    pass


def parse_output(stdout: str) -> tuple[list[bytes], dict]:
    messages, final = [], None
    for n, line in enumerate(stdout.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise OutputError("stdout line %d is not JSON: %r" % (n, line[:200]))
        if not isinstance(obj, dict):
            raise OutputError("stdout line %d is not a JSON object" % n)
        if "message_hex" in obj:
            if final is not None:
                raise OutputError("a message line follows the status line (line %d)" % n)
            try:
                messages.append(bytes.fromhex(obj["message_hex"]))
            except (TypeError, ValueError):
                raise OutputError("line %d: message_hex is not hex" % n)
        elif "status" in obj:
            if final is not None:
                raise OutputError("two status lines (line %d)" % n)
            final = obj
        else:
            raise OutputError("stdout line %d is neither a message nor the status: %r" % (n, line[:200]))
    if final is None:
        raise OutputError("no status line on stdout")
    return messages, final


def metadata_values(metadata, name: str) -> list:
    if not isinstance(metadata, dict):
        return []
    for key, value in metadata.items():
        if key.lower() == name:
            return value if isinstance(value, list) else [value]
    return []


def bin_matches(shown, expected: bytes) -> bool:
    if not isinstance(shown, str):
        return False
    b64 = base64.b64encode(expected).decode()
    return shown in (b64, b64.rstrip("=")) or shown.lower() == expected.hex()


def check_metadata(metadata, expected: tuple, what: str) -> list[str]:
    problems = []
    for name, value in expected:
        values = metadata_values(metadata, name)
        if isinstance(value, bytes):
            ok = any(bin_matches(v, value) for v in values)
        else:
            ok = value in values
        if not ok:
            problems.append("%s %s: expected %r, got %r" % (what, name, value, values or "(absent)"))
    return problems


def short(m: bytes) -> str:
    return m.hex() if len(m) <= 24 else "%s...(%d bytes)" % (m[:12].hex(), len(m))


def check_case(case: cases.Case, result: CallResult) -> None:
    assert result.returncode != "timeout", "the client hung:\n" + result.describe()
    assert result.returncode != 2, "the client reported a usage error:\n" + result.describe()
    try:
        messages, final = parse_output(result.stdout)
    except OutputError as e:
        pytest.fail("%s\n%s" % (e, result.describe()), pytrace=False)
    status = final.get("status") or {}
    problems = []
    code = status.get("code")
    if code != case.code:
        problems.append("status code %r (%s), expected %d (%s)" % (
            code, status.get("name"), case.code, cases.CODE_NAMES[case.code]))
    elif status.get("name") != cases.CODE_NAMES[case.code]:
        problems.append("status name %r, expected %r" % (status.get("name"), cases.CODE_NAMES[case.code]))
    if case.code != cases.OK and code == case.code and status.get("domain") != "io.grpc":
        problems.append("error domain %r, expected 'io.grpc'" % status.get("domain"))
    expected_exit = 0 if case.code == cases.OK else 1
    if result.returncode != expected_exit:
        problems.append("exit status %r, expected %d" % (result.returncode, expected_exit))
    if case.message is not None and status.get("message") != case.message:
        problems.append("status message %r, expected %r" % (status.get("message"), case.message))
    if case.message_contains is not None and case.message_contains.lower() not in (status.get("message") or "").lower():
        problems.append("status message %r does not say %r" % (status.get("message"), case.message_contains))
    if case.messages is not None and messages != list(case.messages):
        problems.append("messages [%s], expected [%s]" % (
            ", ".join(map(short, messages)), ", ".join(map(short, case.messages))))
    problems += check_metadata(final.get("trailers"), case.trailers, "trailer")
    problems += check_metadata(final.get("headers"), case.headers, "header")
    if problems:
        pytest.fail("%s (%s)\n  - %s\n%s" % (case.name, case.note or "see h2conf_cases.py",
                                            "\n  - ".join(problems), result.describe()), pytrace=False)


# ---------------------------------------------------------------------------
# Tests

@pytest.mark.parametrize("case", H2C_CASES, ids=lambda c: c.name)
def test_h2c(case, tripwatch, h2conf_servers, h2conf_certs):
    check_case(case, call(tripwatch, h2conf_servers, h2conf_certs, "h2c", case))


@pytest.mark.parametrize("case", TLS_CASES, ids=lambda c: c.name)
def test_tls(case, tripwatch, h2conf_servers, h2conf_certs):
    check_case(case, call(tripwatch, h2conf_servers, h2conf_certs, "tls", case))


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_request_headers(transport, tripwatch, h2conf_servers, h2conf_certs):
    """What the client sends (rules 6-10, 13, 15), seen on the unary_ok call."""
    case = cases.BY_NAME["unary_ok"]
    result = call(tripwatch, h2conf_servers, h2conf_certs, transport, case)
    record = result.record
    assert record is not None, "the server saw no call:\n" + result.describe()
    headers = record["request_headers"]
    names = [k for k, _ in headers]
    fields = {}
    for k, v in headers:
        fields.setdefault(k, v)
    problems = []
    expected_pseudo = {":method": "POST", ":scheme": "http" if transport == "h2c" else "https",
                       ":path": case.path, ":authority": "127.0.0.1:%d" % result.server.port}
    for k, v in expected_pseudo.items():
        if fields.get(k) != v:
            problems.append("%s is %r, expected %r" % (k, fields.get(k), v))
    if fields.get("te") != "trailers":
        problems.append("te is %r, expected 'trailers'" % fields.get("te"))
    ct = fields.get("content-type") or ""
    if not re.match(r"^application/grpc($|[+;])", ct):
        problems.append("content-type is %r, expected application/grpc" % ct)
    timeout = fields.get("grpc-timeout")
    regular = [k for k in names if not k.startswith(":")]
    if timeout is None:
        problems.append("no grpc-timeout although --timeout %g was given" % case.timeout)
    else:
        if not TIMEOUT_RE.match(timeout):
            problems.append("grpc-timeout %r is not 1-8 digits and a unit" % timeout)
        else:
            seconds = int(timeout[:-1]) * TIMEOUT_UNITS[timeout[-1]]
            if not 0 < seconds <= case.timeout:
                problems.append("grpc-timeout %r (%g s) is not within (0, %g] s" % (timeout, seconds, case.timeout))
        if regular and regular[0] != "grpc-timeout":
            problems.append("grpc-timeout must follow the pseudo-headers directly (rule 7); order: %s" % names)
    if "grpc-encoding" in fields and fields["grpc-encoding"] != "identity":
        body = bytes.fromhex(record["request_body_hex"])
        if body[:1] != b"\x01":
            problems.append("grpc-encoding %r sent for an uncompressed request" % fields["grpc-encoding"])
    if not record["request_ended"]:
        problems.append("the request never ended (no END_STREAM)")
    body = bytes.fromhex(record["request_body_hex"])
    if len(body) < 5 or record["request_body_len"] != 5 + int.from_bytes(body[1:5], "big"):
        problems.append("the request body (%d bytes) is not exactly one length-prefixed message"
                        % record["request_body_len"])
    elif body[0] != 0:
        problems.append("the request's compressed flag is %d" % body[0])
    assert not problems, "\n  - ".join(["request headers:"] + problems) + "\n" + result.describe()


@pytest.mark.parametrize("transport", ["h2c", "tls"])
@pytest.mark.parametrize("case", WIRE_CASES, ids=lambda c: c.name)
def test_client_frames(case, transport, tripwatch, h2conf_servers, h2conf_certs):
    """The frames the client owes: RST_STREAM(CANCEL) on a deadline or an
    oversized message (rules 28, 37), ACKs of the server's PINGs (rule 40), and
    GOAWAY and a closed connection after a connection error the server caused."""
    result = call(tripwatch, h2conf_servers, h2conf_certs, transport, case)
    record = result.record
    assert record is not None, "the server saw no call:\n" + result.describe()
    if case.client_rst is not None:
        assert record["client_rst"] == case.client_rst, (
            "the client must reset the stream with %d, the server saw %r\n%s"
            % (case.client_rst, record["client_rst"], result.describe()))
    if case.pings:
        assert record["ping_acks"] == record["pings_sent"], (
            "%d of %d PINGs ACKed\n%s" % (record["ping_acks"], record["pings_sent"], result.describe()))
    if case.client_closes:
        assert record["client_eof"], "the client left the broken connection open\n" + result.describe()
        goaway = record["client_goaway"]
        assert goaway is not None and goaway["code"] != cases.NO_ERROR, (
            "the client closed without a GOAWAY naming the error (got %r)\n%s" % (goaway, result.describe()))


# ---------------------------------------------------------------------------
# Hostile servers and limits: servers of their own

def run_client(tripwatch, server: ScriptedServer, path: str, extra: list[str], timeout: float = 30.0):
    argv = [*tripwatch, "raw-call", "127.0.0.1:%d" % server.port, path, *extra]
    start = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        code = "timeout"
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    return CallResult(argv, code, out, err, time.monotonic() - start, None, server)


def output_lines(result: CallResult) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def connection_records(server: ScriptedServer, since: int = 0, count: int = 1, timeout: float = 10.0) -> list[dict]:
    """The connection records after index `since`, waiting up to `timeout` for `count` of them."""
    end = time.monotonic() + timeout
    with server._cond:
        while True:
            found = [r for r in server.records[since:] if r.get("event") == "connection"]
            left = end - time.monotonic()
            if len(found) >= count or left <= 0:
                return found
            server._cond.wait(left)


@pytest.fixture(scope="module")
def own_servers(tmp_path_factory, h2conf_certs):
    """Starts ScriptedServers on demand (name -> extra args); stops them all at the end."""
    log_dir = tmp_path_factory.mktemp("h2conf-own-logs")
    started: list[ScriptedServer] = []

    def start(name: str, args: list[str]) -> ScriptedServer:
        server = ScriptedServer(name, log_dir, args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_garbage_instead_of_server_settings(transport, tripwatch, own_servers, h2conf_certs):
    """Random bytes where the server's SETTINGS belong: the call fails UNAVAILABLE saying
    why, the client sends GOAWAY and closes the connection, and exits normally."""
    ca, cert, key = h2conf_certs
    args = ["--preface", "garbage"] + ([] if transport == "h2c" else ["--cert", str(cert), "--key", str(key)])
    server = own_servers("garbage-preface-" + transport, args)
    tls_args = ["--plaintext"] if transport == "h2c" else ["--ca-file", str(ca)]
    result = run_client(tripwatch, server, cases.path_of("unary_ok"), tls_args + ["--timeout", "5"])
    assert result.returncode == 1, "expected exit 1 (a failed call), not a crash or hang\n" + result.describe()
    status = output_lines(result)[-1]["status"]
    assert status["code"] == cases.UNAVAILABLE, result.describe()
    assert "protocol error" in status["message"].lower(), result.describe()
    records = connection_records(server)
    assert records and records[0]["client_eof"], "the client did not close the connection\n" + result.describe()
    assert records[0]["client_goaway"] is not None and records[0]["client_goaway"]["code"] != cases.NO_ERROR, (
        "no GOAWAY with an error code from the client: %r\n%s" % (records[0], result.describe()))


@pytest.mark.parametrize("alpn", ["none", "http/1.1"])
def test_tls_without_alpn_h2_is_refused(alpn, tripwatch, own_servers, h2conf_certs):
    """A TLS server that does not agree on ALPN h2 (none offered, or only http/1.1):
    the handshake verifies, but the client refuses the connection before any HTTP/2."""
    ca, cert, key = h2conf_certs
    server = own_servers("alpn-" + alpn.replace("/", ""), ["--cert", str(cert), "--key", str(key), "--alpn", alpn])
    since = server.mark()
    result = run_client(tripwatch, server, cases.path_of("unary_ok"), ["--ca-file", str(ca), "--timeout", "5"])
    assert result.returncode == 1, result.describe()
    status = output_lines(result)[-1]["status"]
    assert status["code"] == cases.UNAVAILABLE, result.describe()
    assert "alpn" in status["message"].lower(), result.describe()
    records = connection_records(server, since)
    assert records, "the server saw no connection\n" + result.describe()
    assert all(r.get("client_sent_bytes") == 0 for r in records), (
        "the client sent HTTP/2 without ALPN h2: %r\n%s" % (records, result.describe()))
    assert server.wait_record("unary_ok", since, 0.5) is None


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_client_stays_within_max_concurrent_streams(transport, tripwatch, own_servers, h2conf_certs):
    """A server allowing 2 streams per connection (h2 enforces it: one more is a
    connection error): 8 calls in flight never put a third stream on a connection,
    more connections are opened instead, and every call ends OK."""
    ca, cert, key = h2conf_certs
    args = ["--max-concurrent-streams", "2"] + ([] if transport == "h2c" else ["--cert", str(cert), "--key", str(key)])
    server = own_servers("stream-limit-" + transport, args)
    tls_args = ["--plaintext"] if transport == "h2c" else ["--ca-file", str(ca)]
    result = run_client(tripwatch, server, cases.path_of("slow_stream"),
                        tls_args + ["--timeout", "20", "--server-streaming", "--concurrency", "8", "--repeat", "16"],
                        timeout=60)
    assert result.returncode == 0, result.describe()
    statuses = [line["status"]["code"] for line in output_lines(result) if "status" in line]
    assert statuses == [cases.OK] * 16, result.describe()
    # The client has closed its connections: the server writes a record for each.
    end = time.monotonic() + 10
    while time.monotonic() < end and sum(1 for r in server.records if r.get("case") == "slow_stream") < 16:
        time.sleep(0.05)
    conns = {r["conn"] for r in server.records if r.get("case") == "slow_stream"}
    records = connection_records(server, count=len(conns))
    assert conns and {r["conn"] for r in records} == conns, (conns, records)
    assert all(r["client_protocol_error"] is None for r in records), records
    assert max(r["peak_open_streams"] for r in records) == 2, records
    assert len(records) >= 4, "8 calls at 2 streams per connection need 4 connections: %r" % records


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_hostile_connection_is_closed_others_unaffected(transport, tripwatch, own_servers, h2conf_certs):
    """Two calls on one channel, on two connections (the server allows one stream
    each). The first connection turns hostile mid-stream (garbage): its call fails
    UNAVAILABLE and the client closes that connection with a GOAWAY; the call on the
    other connection, in flight meanwhile, gets all three messages and OK."""
    ca, cert, key = h2conf_certs
    args = ["--max-concurrent-streams", "1"] + ([] if transport == "h2c" else ["--cert", str(cert), "--key", str(key)])
    server = own_servers("hostile-pool-" + transport, args)
    tls_args = ["--plaintext"] if transport == "h2c" else ["--ca-file", str(ca)]
    case = cases.BY_NAME["hostile_on_first_connection"]
    result = run_client(tripwatch, server, case.path,
                        tls_args + ["--timeout", "10", "--server-streaming", "--concurrency", "2", "--repeat", "2"])
    assert result.returncode == 1, "one call fails, the process exits normally\n" + result.describe()
    lines = output_lines(result)
    finals = {line["call"]: line["status"] for line in lines if "status" in line}
    assert sorted(finals) == [0, 1], result.describe()
    failed = [call for call, status in finals.items() if status["code"] != cases.OK]
    assert len(failed) == 1, result.describe()
    hostile_call = failed[0]
    healthy_call = 1 - hostile_call
    assert finals[hostile_call]["code"] == cases.UNAVAILABLE, result.describe()
    assert "protocol error" in finals[hostile_call]["message"].lower(), result.describe()
    healthy_messages = [bytes.fromhex(line["message_hex"]) for line in lines
                        if line.get("call") == healthy_call and "message_hex" in line]
    assert healthy_messages == list(case.messages), result.describe()

    # Whichever connection's request arrived first turned hostile (not necessarily the first accepted).
    assert server.wait_record(case.name, 0, 5.0) is not None, result.describe()
    assert server.wait_record(case.name, 1, 5.0) is not None, result.describe()
    records = [r for r in server.records if r.get("case") == case.name]
    hostiles = [r for r in records if r["first_connection_script"]]
    assert len(hostiles) == 1, "%r\n%s" % (records, result.describe())
    hostile = hostiles[0]
    assert hostile["client_eof"], "the client left the hostile connection open\n" + result.describe()
    assert hostile["client_goaway"] is not None and hostile["client_goaway"]["code"] != cases.NO_ERROR
    healthy = [r for r in records if r["conn"] != hostile["conn"]]
    assert len(healthy) == 1 and healthy[0]["script_completed"], (
        "the other connection's call did not run to its end: %r\n%s" % (healthy, result.describe()))


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_complete_response_while_request_blocked(transport, tripwatch, own_servers, h2conf_certs):
    """C53b (RFC 9113 section 8.1): the server sends its whole response and OK trailers while the
    client's request is still held by flow control (a 16-byte stream window, never widened, against
    a 200-byte request). The client reports OK and ends its side with RST_STREAM(NO_ERROR) instead of
    leaving the stream open; with one stream allowed per connection, that is what lets the second and
    third calls run on the connection at all."""
    ca, cert, key = h2conf_certs
    args = ["--request-window", "16", "--max-concurrent-streams", "1"]
    args += [] if transport == "h2c" else ["--cert", str(cert), "--key", str(key)]
    server = own_servers("early-status-" + transport, args)
    tls_args = ["--plaintext"] if transport == "h2c" else ["--ca-file", str(ca)]
    case = cases.BY_NAME["complete_before_request_sent"]
    result = run_client(tripwatch, server, case.path,
                        tls_args + ["--timeout", "10", "--data-hex", "ab" * 200, "--repeat", "3"], timeout=60)
    assert result.returncode == 0, result.describe()
    lines = output_lines(result)
    assert [line["status"]["code"] for line in lines if "status" in line] == [cases.OK] * 3, result.describe()
    assert [bytes.fromhex(line["message_hex"]) for line in lines if "message_hex" in line] == [cases.M1] * 3
    end = time.monotonic() + 5
    while time.monotonic() < end and sum(1 for r in server.records if r.get("case") == case.name) < 3:
        time.sleep(0.05)
    records = [r for r in server.records if r.get("case") == case.name]
    assert len(records) == 3, "the server did not see three calls: %r\n%s" % (records, result.describe())
    for record in records:
        assert not record["request_ended"], "the request was not held by flow control: %r" % record
        assert record["request_body_len"] <= 16, record
        assert record["client_rst"] == cases.NO_ERROR, (
            "the client must end its side with RST_STREAM(NO_ERROR), the server saw %r\n%s"
            % (record["client_rst"], result.describe()))
    assert len({r["conn"] for r in records}) == 1, "the calls should share one connection: %r" % records


# ---------------------------------------------------------------------------
# The summary line

class _Summary:
    """Counts this module's results; prints one line at the end when all passed."""

    def __init__(self, module_file: str):
        self.module_file = module_file
        self.passed = {"h2c": 0, "tls": 0}
        self.failed = 0
        self.tests = 0

    def _ours(self, nodeid: str) -> bool:
        return nodeid.split("::", 1)[0].endswith("Conformance/test_conformance.py")

    def pytest_runtest_logreport(self, report):
        if not self._ours(report.nodeid):
            return
        if report.failed or (report.skipped and report.when != "teardown"):
            self.failed += 1
        elif report.when == "call" and report.passed:
            self.tests += 1
            name = report.nodeid.split("::", 1)[1]
            if name.startswith("test_h2c["):
                self.passed["h2c"] += 1
            elif name.startswith("test_tls["):
                self.passed["tls"] += 1

    def pytest_terminal_summary(self, terminalreporter):
        if self.failed == 0 and self.tests == self.expected and self.tests > 0:
            terminalreporter.write_line("conformance: %d cases over h2c, %d over TLS, all passed"
                                        % (self.passed["h2c"], self.passed["tls"]))


@pytest.fixture(scope="module", autouse=True)
def _conformance_summary(request):
    plugin = _Summary(__file__)
    plugin.expected = sum(1 for item in request.session.items if plugin._ours(item.nodeid))
    request.config.pluginmanager.register(plugin, "h2conf-summary")
    yield
