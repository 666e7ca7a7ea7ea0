"""Client for the `protowire-conformance` testee.

Protocol: the testee runs as `protowire-conformance --type FULL.MESSAGE.NAME`
and reads frames from stdin until EOF, each a little-endian u32 length and that
many bytes. For each frame it writes one status byte (0 parsed, 1 rejected), a
little-endian u32 length, then the re-encoded message (status 0) or a UTF-8
error text (status 1), and flushes.

With `--json` the reply to a parsed frame is the message's proto3 JSON (UTF-8)
instead of its re-encoding, and status 1 also answers a message the JSON
mapping cannot represent (the text then starts with `refused: `).

One process serves one message type. Frames are written by a writer thread
while the caller reads replies, so neither side can block the other on a full
pipe.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import threading
from dataclasses import dataclass

PARSED, REJECTED = 0, 1
REPLY_TIMEOUT = float(os.environ.get("PROTOWIRE_REPLY_TIMEOUT", "60"))


@dataclass
class Reply:
    status: int
    payload: bytes

    @property
    def ok(self) -> bool:
        return self.status == PARSED

    @property
    def text(self) -> str:
        return self.payload.decode("utf-8", errors="replace")


class TesteeFailure(AssertionError):
    """The testee broke the protocol: crashed, hung, or wrote garbage."""


class _Reader:
    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def read_exactly(self, n: int, what: str) -> bytes:
        while len(self.buf) < n:
            ready, _, _ = select.select([self.fd], [], [], REPLY_TIMEOUT)
            if not ready:
                raise TesteeFailure("no %s within %.0f s (testee hung?)" % (what, REPLY_TIMEOUT))
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise TesteeFailure("testee closed its output while a %s was expected" % what)
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


def run_frames(binary: str, type_name: str, frames: list[bytes], flags: list[str] = ()) -> list[Reply]:
    """Streams `frames` through one testee process for `type_name` (started with
    the extra command-line `flags`, e.g. `--json`) and returns one reply per
    frame. Raises TesteeFailure (naming the frame index and its hex) if the
    testee crashes, hangs or breaks the protocol."""
    proc = subprocess.Popen(
        [binary, "--type", type_name, *flags],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    stderr_chunks: list[bytes] = []
    write_error: list[BaseException] = []

    def writer():
        try:
            for frame in frames:
                proc.stdin.write(struct.pack("<I", len(frame)) + frame)
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:  # the testee died; the reader reports it
            write_error.append(e)
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def drain_stderr():
        for chunk in iter(lambda: proc.stderr.read(4096), b""):
            stderr_chunks.append(chunk)

    threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=drain_stderr, daemon=True)]
    for t in threads:
        t.start()
    reader = _Reader(proc.stdout.fileno())
    replies: list[Reply] = []
    try:
        for i, frame in enumerate(frames):
            try:
                head = reader.read_exactly(5, "reply header")
                status, length = head[0], struct.unpack("<I", head[1:])[0]
                if status not in (PARSED, REJECTED):
                    raise TesteeFailure("status byte %d is neither 0 nor 1" % status)
                payload = reader.read_exactly(length, "reply payload of %d bytes" % length)
            except TesteeFailure as e:
                proc.kill()
                proc.wait()
                for t in threads:
                    t.join(timeout=5)
                raise TesteeFailure(
                    "%s --type %s: %s at frame %d (exit status %s)\ninput hex: %s\nstderr: %s" % (
                        binary, type_name, e, i, proc.returncode, frame.hex(),
                        b"".join(stderr_chunks).decode("utf-8", "replace")[-2000:])) from None
            replies.append(Reply(status, payload))
        extra = b""
        ready, _, _ = select.select([reader.fd], [], [], 5)
        if ready:
            extra = bytes(reader.buf) + os.read(reader.fd, 1 << 16)
        elif reader.buf:
            extra = bytes(reader.buf)
        if extra:
            raise TesteeFailure("%s --type %s wrote %d bytes after the last reply: %s" % (
                binary, type_name, len(extra), extra[:64].hex()))
        code = proc.wait(timeout=REPLY_TIMEOUT)
        if code != 0:
            raise TesteeFailure("%s --type %s exited with status %d after all frames\nstderr: %s" % (
                binary, type_name, code, b"".join(stderr_chunks).decode("utf-8", "replace")[-2000:]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for t in threads:
            t.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    return replies
