"""Tokens never reach what the command-line tools print: `tripwatch follow
--json` (stdout, and its log lines on stderr) following trips on a `fleetsim`
that requires HS256 tokens, with tokens it refuses and tokens it accepts, and
fleetsim's own output.

Run from the package root (after `swift build`):

    FLEETSIM=.build/debug/fleetsim TRIPWATCH=.build/debug/tripwatch python -m pytest -q Tests/ToolsPytest
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

SECRET = "fleetsim-token-output-secret-0123456789abcdef"  # at least 32 bytes
OTHER_SECRET = b"another-secret-that-is-32-bytes-long!"


@pytest.fixture(scope="module")
def tripwatch_binary() -> str:
    value = os.environ.get("TRIPWATCH")
    if not value:
        pytest.fail("TRIPWATCH is not set: `swift build` and export TRIPWATCH=$PWD/.build/debug/tripwatch",
                    pytrace=False)
    path = Path(value)
    path = path if path.is_absolute() else (Path.cwd() / path).resolve()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail("TRIPWATCH=%s is not an executable file" % value, pytrace=False)
    return str(path)


def pieces(token: str) -> list[str]:
    """The token, the header value, and each of its parts long enough to mean something."""
    return [token, "Bearer " + token] + [part for part in token.split(".") if len(part) >= 8]


def follow(tripwatch: str, address: str, trip: str, mode: str, token_args: list[str]) -> subprocess.CompletedProcess:
    argv = [tripwatch, "follow", trip, "--target", address, "--plaintext", "--json", "--mode", mode,
            "--poll-interval", "0.1", "--duration", "1.5", *token_args]
    return subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60)


@pytest.mark.parametrize("mode", ["stream", "poll"])
def test_tokens_never_appear_in_tripwatch_or_fleetsim_output(mode, fsim_start, fsim_jwt, tripwatch_binary, tmp_path):
    server = fsim_start("--jwt-secret", SECRET, "--speedup", 60, "--update-interval", 0.05)
    trip_id = "trip-1"
    trip = "providers/demo/trips/" + trip_id
    refused = {
        "wrong secret": (fsim_jwt.hs256(fsim_jwt.claims(trip_id), OTHER_SECRET), 16),
        "another trip": (fsim_jwt.hs256(fsim_jwt.claims("trip-999"), SECRET.encode()), 7),
        "expired": (fsim_jwt.hs256(fsim_jwt.claims(trip_id, expires_in=-3600), SECRET.encode()), 16),
        "alg none": (fsim_jwt.unsigned(fsim_jwt.claims(trip_id)), 16),
    }
    accepted = fsim_jwt.hs256(fsim_jwt.claims(trip_id), SECRET.encode())
    outputs: list[str] = []
    tokens: list[str] = []

    for name, (token, code) in refused.items():
        result = follow(tripwatch_binary, server.address, trip, mode, ["--token", token])
        outputs += [result.stdout, result.stderr]
        tokens.append(token)
        errors = [json.loads(line) for line in result.stdout.splitlines() if '"event":"error"' in line]
        assert errors, "%s: no error event\nstdout:\n%s\nstderr:\n%s" % (name, result.stdout, result.stderr)
        assert {e["code"] for e in errors} == {code}, "%s: %r" % (name, errors)

    token_file = tmp_path / "token"
    token_file.write_text(accepted + "\n")
    for token_args in (["--token", accepted], ["--token-file", str(token_file)]):
        result = follow(tripwatch_binary, server.address, trip, mode, token_args)
        outputs += [result.stdout, result.stderr]
        events = [json.loads(line)["event"] for line in result.stdout.splitlines() if line.startswith("{")]
        assert "trip" in events and "error" not in events, result.stdout[-2000:] + result.stderr
    tokens.append(accepted)

    server.stop()
    outputs += ["\n".join(server.output), server.stderr()]
    for token in tokens:
        for piece in pieces(token):
            leaked = [text for text in outputs if piece in text]
            assert not leaked, "a piece of a token was printed:\n%s" % leaked[0][:2000]
