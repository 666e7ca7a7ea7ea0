"""The scripted HTTP/2 responses of the conformance suite, and the outcome a
correct gRPC client must report for each.

A client calls `/conformance.Cases/<name>`; h2conf_server.py answers by
playing that case's `script`, a list of the actions below, exactly. The
expectations follow /work/shared/research/grpc-conformance.md (section A's
rule numbers are quoted as "rule N"), not any one implementation:

- `grpc-status`, when present, decides the status (rule 20); only without it
  does the HTTP status decide (rule 21: 400 INTERNAL, 401 UNAUTHENTICATED,
  403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429/502/503/504 UNAVAILABLE,
  431 INTERNAL, anything else UNKNOWN, 200 included).
- A content-type that is missing or not application/grpc[+...|;...] with no
  grpc-status is mapped from the HTTP status like the line above, so `text/html`
  with :status 200 is UNKNOWN (rules 19 and 21, C10; grpc-go, grpc-java and
  C-core agree).
- Unary cardinality violations (zero or two messages with OK) are INTERNAL,
  as go, java and node do (the project's pick in section F).
- RST_STREAM codes map as rule 33; an unknown RST code is INTERNAL (section F).

Nothing here does I/O; the server and the tests both import this module.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

# --- gRPC status codes ------------------------------------------------------

OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND = 0, 1, 2, 3, 4, 5
ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION = 6, 7, 8, 9
ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS = 10, 11, 12, 13, 14, 15
UNAUTHENTICATED = 16

CODE_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

# --- HTTP/2 error codes (RFC 9113 section 7) ---------------------------------

NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM, INADEQUATE_SECURITY = 0x7, 0x8, 0xB, 0xC

SERVICE = "conformance.Cases"


def path_of(name: str) -> str:
    return "/%s/%s" % (SERVICE, name)


def msg(payload: bytes, flag: int = 0, length: int | None = None) -> bytes:
    """A gRPC length-prefixed message: flag byte, 4-byte big-endian length
    (`length` overrides the real one), payload."""
    return struct.pack(">BI", flag, len(payload) if length is None else length) + payload


# --- Script actions -------------------------------------------------------------

@dataclass(frozen=True)
class Headers:
    """A HEADERS frame with :status, an optional content-type and extra
    fields; with end_stream it is a Trailers-Only response."""
    status: int = 200
    content_type: str | None = "application/grpc"
    extra: tuple = ()
    end_stream: bool = False


@dataclass(frozen=True)
class Data:
    """DATA frames carrying `payload`: in frames of `frame_size` bytes if set
    (else as few as flow control allows), each with `pad` padding bytes."""
    payload: bytes
    end_stream: bool = False
    frame_size: int | None = None
    pad: int = 0


@dataclass(frozen=True)
class Trailers:
    """The closing HEADERS block (END_STREAM). grpc_status None leaves it out."""
    grpc_status: str | None = "0"
    grpc_message: str | None = None
    extra: tuple = ()


@dataclass(frozen=True)
class Rst:
    """RST_STREAM on the call's stream; `raw` writes the frame bytes directly
    (h2 refuses to reset a stream it considers closed)."""
    code: int
    raw: bool = False


@dataclass(frozen=True)
class GoAway:
    """GOAWAY written as raw bytes, so that h2 keeps serving the stream.
    last_stream: "below" (the stream id minus 2, at least 0), "stream" (the
    call's own id), or an int."""
    last_stream: object = "stream"
    code: int = NO_ERROR
    debug: bytes = b""


@dataclass(frozen=True)
class Ping:
    """A PING from the server; the client must ACK it."""


@dataclass(frozen=True)
class WaitForPingAcks:
    timeout: float = 2.0


@dataclass(frozen=True)
class Sleep:
    """Waits, still reading the client's frames (a client RST ends the script)."""
    seconds: float


@dataclass(frozen=True)
class WaitForClientReset:
    """Waits up to `timeout` s for the client to reset the stream."""
    timeout: float = 3.0


@dataclass(frozen=True)
class Close:
    """Closes the TCP connection (no GOAWAY; TLS without close_notify)."""


@dataclass(frozen=True)
class Raw:
    """Bytes written as they are, after what h2 has queued: garbage where a frame belongs."""
    data: bytes


@dataclass(frozen=True)
class RawFrame:
    """One frame written as raw bytes: a 9-byte header (the length field says `length`,
    by default the payload's real length) and `payload`. stream: "stream" (the call's
    own id) or an int."""
    type: int
    payload: bytes = b""
    flags: int = 0
    stream: object = "stream"
    length: int | None = None


@dataclass(frozen=True)
class WaitForClientClose:
    """Reads until the client closes the connection (EOF) or `timeout` s pass; the
    record says whether it did (`client_eof`) and the GOAWAY it sent first."""
    timeout: float = 5.0


# --- Cases -----------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    code: int                      # the status code the client must report
    script: tuple
    streaming: bool = False        # call it as server-streaming (raw-call --server-streaming)
    message: str | None = None     # exact status message, when checked
    messages: tuple | None = None  # exact messages (bytes) the client must deliver, in order
    timeout: float = 5.0           # the client's --timeout
    trailers: tuple = ()           # (name, str | bytes) the client must expose as trailing metadata
    headers: tuple = ()            # (name, str) the client must expose as initial metadata
    client_rst: int | None = None  # the RST_STREAM code the client must send (checked by the server)
    pings: bool = False            # every server PING must be ACKed
    message_contains: str | None = None  # a piece the status message must hold (case-insensitive)
    client_closes: bool = False    # the client must close the connection (seen by the server as EOF)
    answer_at_once: bool = False   # play the script without waiting for the request's END_STREAM
    first_connection_script: tuple | None = None  # played instead of `script` on the first connection asking
    note: str = ""

    @property
    def path(self) -> str:
        return path_of(self.name)


GRPC = "application/grpc"
M1 = bytes.fromhex("0a0b68656c6c6f20776f726c64")                 # field 1 = "hello world"
M_A, M_B, M_C = b"\x08\x01", b"\x08\x02\x12\x03abc", b"\x08\x03"  # three small streamed messages
LONG = bytes(range(40))                                           # 40 bytes, all distinct
BIG = bytes(i * 7 % 251 for i in range(1 << 20))                  # 1 MiB: beyond every default window
BIN = b"\x01\x02\x03\xff"
OVERSIZED = 5 << 20                                               # 5 MiB > the 4 MiB default limit
# Garbage where frames belong. Read as a frame header, the first 9 bytes announce a payload far
# above SETTINGS_MAX_FRAME_SIZE (16,384): a connection error at once, whatever follows.
HTTP1_GARBAGE = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n"
RANDOM_GARBAGE = bytes([0xA7]) + random.Random(7).randbytes(255)  # first byte nonzero: length >= 2^16
BIG_HEADER = "h" * (20 * 1024)                                   # 20 KiB > the 16 KiB default header list limit
DATA, HEADERS, SETTINGS, WINDOW_UPDATE = 0x0, 0x1, 0x4, 0x8


def ok_response(*messages: bytes) -> tuple:
    return (Headers(), Data(b"".join(msg(m) for m in messages)), Trailers("0"))


def trailers_only(grpc_status: str, grpc_message: str | None = None, status: int = 200,
                  content_type: str | None = GRPC, extra: tuple = ()) -> Headers:
    fields = [("grpc-status", grpc_status)]
    if grpc_message is not None:
        fields.append(("grpc-message", grpc_message))
    return Headers(status, content_type, tuple(fields) + extra, end_stream=True)


def http_error(status: int, content_type: str | None, body: bytes | None) -> tuple:
    """What a proxy sends: no grpc-status at all."""
    if body is None:
        return (Headers(status, content_type, end_stream=True),)
    return (Headers(status, content_type), Data(body, end_stream=True))


CASES: list[Case] = [
    # -- basic shapes (rule 17)
    Case("trailers_only_ok", OK, (trailers_only("0"),), streaming=True, messages=(),
         note="Trailers-Only OK on a server stream: zero messages, OK"),
    Case("trailers_only_error", NOT_FOUND, (trailers_only("5", "trip not found"),),
         message="trip not found"),
    Case("unary_ok", OK, ok_response(M1), messages=(M1,)),
    Case("server_streaming_three", OK,
         (Headers(), Data(msg(M_A)), Data(msg(M_B)), Data(msg(M_C)), Trailers("0")),
         streaming=True, messages=(M_A, M_B, M_C)),

    # -- no grpc-status: the HTTP status decides (rule 21)
    Case("http_400", INTERNAL, http_error(400, GRPC, None)),
    Case("http_401", UNAUTHENTICATED, http_error(401, None, None)),
    Case("http_403", PERMISSION_DENIED, http_error(403, "text/html", b"<h1>Forbidden</h1>")),
    Case("http_404", UNIMPLEMENTED, http_error(404, "text/plain", b"no route")),
    Case("http_429", UNAVAILABLE, http_error(429, GRPC, None)),
    Case("http_431", INTERNAL, http_error(431, "text/plain", None)),
    Case("http_500", UNKNOWN, http_error(500, "text/html", b"<h1>Internal Server Error</h1>")),
    Case("http_502", UNAVAILABLE, http_error(502, "text/html", b"<h1>Bad Gateway</h1>")),
    Case("http_503", UNAVAILABLE, http_error(503, None, None)),
    Case("http_504", UNAVAILABLE, http_error(504, "text/plain", b"upstream timeout")),
    Case("http_200_trailers_without_grpc_status", UNKNOWN,
         (Headers(), Data(msg(M1)), Trailers(None, extra=(("x-note", "no status"),))),
         note="a complete response whose trailers lack grpc-status"),
    Case("http_200_headers_only_without_grpc_status", UNKNOWN,
         (Headers(200, GRPC, end_stream=True),)),
    Case("http_503_with_grpc_status", RESOURCE_EXHAUSTED,
         (trailers_only("8", "slow down", status=503),),
         message="slow down", note="grpc-status wins over :status (rule 20)"),

    # -- grpc-status parsing (rule 22)
    Case("grpc_status_unparsable", UNKNOWN, (trailers_only("abc"),)),
    Case("grpc_status_17", UNKNOWN, (trailers_only("17"),)),

    # -- grpc-message decoding (rule 23)
    Case("grpc_message_percent_encoded", FAILED_PRECONDITION,
         (trailers_only("9", "%E2%82%AC 100%25"),), message="\u20ac 100%"),
    Case("grpc_message_invalid_escape", ABORTED,
         (trailers_only("10", "50%ZZ off %4 %41%"),), message="50%ZZ off %4 A%",
         note="invalid escapes kept raw, valid ones decoded"),

    # -- RST_STREAM (rules 33 and 34)
    Case("rst_no_error_after_headers", INTERNAL, (Headers(), Rst(NO_ERROR))),
    Case("rst_no_error_during_data", INTERNAL, (Headers(), Data(msg(LONG)[:20]), Rst(NO_ERROR)),
         messages=(), note="half a message, then RST: nothing is delivered"),
    Case("rst_no_error_after_data", INTERNAL, (Headers(), Data(msg(M1)), Rst(NO_ERROR))),
    Case("rst_protocol_error", INTERNAL, (Headers(), Rst(PROTOCOL_ERROR))),
    Case("rst_internal_error", INTERNAL, (Rst(INTERNAL_ERROR),), note="before any HEADERS"),
    Case("rst_flow_control_error", INTERNAL, (Headers(), Data(msg(M1)), Rst(FLOW_CONTROL_ERROR))),
    Case("rst_refused_stream", UNAVAILABLE, (Rst(REFUSED_STREAM),),
         note="a transparent retry meets the same answer, so UNAVAILABLE either way"),
    Case("rst_cancel", CANCELLED, (Headers(), Rst(CANCEL))),
    Case("rst_enhance_your_calm", RESOURCE_EXHAUSTED, (Headers(), Rst(ENHANCE_YOUR_CALM))),
    Case("rst_inadequate_security", PERMISSION_DENIED, (Rst(INADEQUATE_SECURITY),)),
    Case("rst_unknown_code", INTERNAL, (Headers(), Rst(0x42, raw=True)),
         note="an RST code HTTP/2 does not define (section F: INTERNAL)"),
    Case("rst_after_trailers", OK, ok_response(M1) + (Rst(NO_ERROR, raw=True),),
         messages=(M1,), note="the status of the complete trailers stays (rule 34)"),

    # -- GOAWAY (rules 38 and 39)
    Case("goaway_below_stream", UNAVAILABLE, (GoAway("below"), Sleep(0.5), Close()),
         note="the stream is above last_stream_id: never processed"),
    Case("goaway_at_stream_then_finish", OK, (GoAway("stream"),) + ok_response(M1),
         messages=(M1,), note="the stream is at last_stream_id: it runs on"),
    Case("goaway_twice_then_finish", OK,
         (GoAway(2**31 - 1), Headers(), Data(msg(M1)), GoAway("stream"), Trailers("0")),
         messages=(M1,), note="graceful shutdown: 2^31-1 first, then the real id"),

    # -- message framing (rules 13, 26, 28, 29)
    Case("one_byte_data_frames", OK, (Headers(), Data(msg(LONG), frame_size=1), Trailers("0")),
         messages=(LONG,), note="45 DATA frames of 1 byte; the prefix is split too"),
    Case("several_messages_one_frame", OK,
         (Headers(), Data(msg(M_A) + msg(M_B) + msg(M_C)), Trailers("0")),
         streaming=True, messages=(M_A, M_B, M_C)),
    Case("message_straddles_frames", OK,
         (Headers(), Data(msg(M_A) + msg(M_B)[:3]), Data(msg(M_B)[3:] + msg(M_C)[:1]),
          Data(msg(M_C)[1:]), Trailers("0")),
         streaming=True, messages=(M_A, M_B, M_C)),
    Case("zero_length_message", OK, ok_response(b""), messages=(b"",)),
    Case("large_message_flow_control", OK, ok_response(BIG), messages=(BIG,), timeout=15.0,
         note="1 MiB: the server waits for the client's WINDOW_UPDATEs"),
    Case("padded_data_frames", OK, (Headers(), Data(msg(LONG), frame_size=5, pad=255), Trailers("0")),
         messages=(LONG,), note="padding counts against flow control"),
    Case("oversized_message", RESOURCE_EXHAUSTED,
         (Headers(), Data(msg(b"\x00" * 1024, length=OVERSIZED)), WaitForClientReset(3.0), Trailers("0")),
         client_rst=CANCEL, note="the prefix announces 5 MiB; the client must refuse before buffering"),
    Case("truncated_message_at_end", INTERNAL,
         (Headers(), Data(msg(b"abcde", length=10)), Trailers("0")),
         note="the stream ends with 5 of 10 announced bytes"),
    Case("compressed_flag_without_encoding", INTERNAL,
         (Headers(), Data(msg(M1, flag=1)), Trailers("0"))),
    Case("compressed_flag_invalid", INTERNAL, (Headers(), Data(msg(M1, flag=2)), Trailers("0"))),
    Case("data_end_stream_without_trailers", INTERNAL, (Headers(), Data(msg(M1), end_stream=True)),
         note="rule 31"),

    # -- content-type (rules 19 and 20; C10)
    Case("content_type_text_html_200", UNKNOWN,
         (Headers(200, "text/html"), Data(b"<html>hello</html>", end_stream=True)),
         note="C10: a 200 that is not gRPC and has no grpc-status maps from :status as "
              "http-grpc-status-mapping.md says: UNKNOWN, as grpc-go, grpc-java and C-core report it"),
    Case("content_type_missing_200", UNKNOWN,
         (Headers(200, None), Data(b"not grpc", end_stream=True)),
         note="C10: no content-type at all and no grpc-status: UNKNOWN too"),
    Case("content_type_text_html_503", UNAVAILABLE,
         (Headers(503, "text/html"), Data(b"<html>busy</html>", end_stream=True))),
    Case("content_type_bad_with_grpc_status", UNIMPLEMENTED,
         (trailers_only("12", "no such method", content_type="text/plain"),),
         message="no such method", note="grpc-status wins over the content-type"),
    Case("content_type_missing_with_grpc_status", UNIMPLEMENTED,
         (trailers_only("12", content_type=None),), note="grpc-swift #926 (Envoy)"),
    Case("content_type_grpc_proto", OK,
         (Headers(200, "application/grpc+proto"), Data(msg(M1)), Trailers("0")), messages=(M1,)),
    Case("content_type_grpc_parameters", OK,
         (Headers(200, "application/grpc;charset=utf-8"), Data(msg(M1)), Trailers("0")), messages=(M1,)),

    # -- connection and timing (rules 18, 37, 40, 42)
    Case("headers_then_close", UNAVAILABLE, (Headers(), Sleep(0.1), Close())),
    Case("streaming_two_then_close", UNAVAILABLE,
         (Headers(), Data(msg(M_A) + msg(M_B)), Sleep(0.2), Close()),
         streaming=True, messages=(M_A, M_B), note="messages received before the failure are delivered"),
    Case("informational_100_then_ok", OK,
         (Headers(100, None),) + ok_response(M1), messages=(M1,), note="1xx skipped (rule 18)"),
    Case("pings_interleaved", OK,
         (Ping(), Headers(), Ping(), Data(msg(M1)), Ping(), WaitForPingAcks(), Trailers("0")),
         messages=(M1,), pings=True),
    Case("deadline_exceeded", DEADLINE_EXCEEDED, (Sleep(3.0),) + ok_response(M1), timeout=0.5,
         client_rst=CANCEL, note="client --timeout 0.5, the server answers after 3 s"),

    # -- unary cardinality (rule 30; INTERNAL as go/java/node)
    Case("unary_two_messages", INTERNAL, ok_response(M1, M1)),
    Case("unary_zero_messages", INTERNAL, (Headers(), Trailers("0"))),

    # -- metadata (rules 24 and 25)
    Case("headers_custom_metadata", OK,
         (Headers(extra=(("x-route", "a1"),)), Data(msg(M1)), Trailers("0")),
         messages=(M1,), headers=(("x-route", "a1"),)),
    Case("trailers_custom_metadata", OK,
         (Headers(), Data(msg(M1)),
          Trailers("0", extra=(("x-trip-tag", "pickup"), ("x-padded-bin", "AQID/w=="),
                               ("x-unpadded-bin", "AQID/w")))),
         messages=(M1,),
         trailers=(("x-trip-tag", "pickup"), ("x-padded-bin", BIN), ("x-unpadded-bin", BIN)),
         note="-bin values arrive padded and unpadded; both decode to 01 02 03 ff"),
    Case("trailers_only_custom_metadata", NOT_FOUND,
         (trailers_only("5", "gone", extra=(("x-trip-tag", "gone"),)),),
         message="gone", trailers=(("x-trip-tag", "gone"),),
         note="a Trailers-Only block's metadata is trailing metadata"),

    # -- a hostile server: garbage and broken frames are connection errors; the client sends
    #    GOAWAY, closes the connection and fails the call UNAVAILABLE, saying why
    Case("garbage_before_headers", UNAVAILABLE, (Raw(RANDOM_GARBAGE), WaitForClientClose()),
         message_contains="protocol error", client_closes=True,
         note="random bytes where the response's HEADERS belong"),
    Case("garbage_after_headers", UNAVAILABLE, (Headers(), Raw(HTTP1_GARBAGE), WaitForClientClose()),
         message_contains="protocol error", client_closes=True,
         note="an HTTP/1.1 response after the HTTP/2 response headers"),
    Case("garbage_mid_message", UNAVAILABLE,
         (Headers(), Data(msg(M_A) + msg(LONG)[:20]), Raw(RANDOM_GARBAGE), WaitForClientClose()),
         streaming=True, messages=(M_A,), message_contains="protocol error", client_closes=True,
         note="the whole message before the garbage is delivered; the cut one is not"),
    Case("frame_length_above_max_frame_size", UNAVAILABLE,
         (Headers(), RawFrame(DATA, msg(b"\x00" * 16_380)), WaitForClientClose()),
         message_contains="protocol error", client_closes=True,
         note="a 16,385-byte DATA frame: above the 16,384 the client allows (FRAME_SIZE_ERROR)"),
    Case("settings_frame_bad_length", UNAVAILABLE,
         (Headers(), RawFrame(SETTINGS, b"\x00" * 5, stream=0), WaitForClientClose()),
         message_contains="protocol error", client_closes=True,
         note="a SETTINGS payload that is not a multiple of 6 bytes (FRAME_SIZE_ERROR)"),
    Case("window_update_overflow", UNAVAILABLE,
         (Headers(), RawFrame(WINDOW_UPDATE, struct.pack(">I", 0x7FFF_FFFF), stream=0), WaitForClientClose()),
         message_contains="protocol error", client_closes=True,
         note="the connection send window above 2^31-1 (FLOW_CONTROL_ERROR)"),
    Case("frame_cut_short_then_close", UNAVAILABLE,
         (Headers(), RawFrame(DATA, msg(LONG)[:10], length=1000), Sleep(0.2), Close()),
         messages=(), note="a DATA frame announcing 1,000 bytes, 10 sent (half a message), then the "
                           "connection closes"),
    Case("length_prefix_ffffffff", RESOURCE_EXHAUSTED,
         (Headers(), Data(msg(M_A) + msg(b"\x00" * 16, length=0xFFFF_FFFF)), WaitForClientReset(3.0),
          Trailers("0")),
         streaming=True, messages=(M_A,), client_rst=CANCEL,
         note="a prefix announcing 4 GiB - 1: refused from the prefix alone, the stream reset"),
    Case("headers_above_header_list_limit", RESOURCE_EXHAUSTED,
         (Headers(extra=(("x-big", BIG_HEADER),)), Data(msg(M1)), Trailers("0")),
         message_contains="header list",
         note="20 KiB of response headers against the client's SETTINGS_MAX_HEADER_LIST_SIZE of 16 KiB"),
    Case("trailers_above_header_list_limit", RESOURCE_EXHAUSTED,
         (Headers(), Data(msg(M1)), Trailers("0", extra=(("x-big", BIG_HEADER),))),
         message_contains="header list"),
]

# Cases of the pool test (test_hostile_connection_is_closed_others_unaffected), not run on their own.
POOL_CASES: list[Case] = [
    Case("hostile_on_first_connection", OK,
         (Headers(), Data(msg(M_A)), Sleep(0.6), Data(msg(M_B)), Sleep(0.6), Data(msg(M_C)), Trailers("0")),
         streaming=True, messages=(M_A, M_B, M_C),
         first_connection_script=(Headers(), Data(msg(M_A)), Sleep(0.3), Raw(RANDOM_GARBAGE),
                                  WaitForClientClose()),
         note="the first connection asking turns hostile mid-stream; calls on the others run on"),
    Case("slow_stream", OK,
         (Headers(), Data(msg(M_A)), Sleep(0.3), Data(msg(M_B)), Trailers("0")),
         streaming=True, messages=(M_A, M_B), note="holds its stream open a while (the stream-limit test)"),
    Case("hold_request", OK, (Sleep(2.0),) + ok_response(M1) + (WaitForClientReset(3.0),), answer_at_once=True,
         note="the Swift writer back-pressure test: with --request-window the request stays blocked; "
              "after 2 s the server answers OK"),
    Case("accepts_identity_only", OK,
         (Headers(extra=(("grpc-accept-encoding", "identity"),)), Data(msg(M1)), Trailers("0")),
         messages=(M1,), note="the Swift negotiation test: the server says it accepts no compression"),
    Case("complete_before_request_sent", OK, ok_response(M1) + (WaitForClientReset(3.0),),
         messages=(M1,), client_rst=NO_ERROR, answer_at_once=True,
         note="C53b: run by a server that gives each request stream a 16-byte window and never more; the "
              "whole response and OK trailers arrive while the client still holds request bytes: it must end "
              "its side with RST_STREAM(NO_ERROR) (RFC 9113 section 8.1), freeing the stream"),
]

BY_NAME = {c.name: c for c in CASES + POOL_CASES}
assert len(BY_NAME) == len(CASES) + len(POOL_CASES), "duplicate case names"
