"""tripwatch and fleetsim as a user runs them (fixtures tool_* in conftest.py): exit codes, names from files and
standard input, giving up, `get` as proto3 JSON, service-account tokens and
`fleetsim token`, against `fleetsim` processes on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import re
import socket
import time
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from tools_support import run

ROOT = Path(__file__).resolve().parent.parent.parent
NAMES = ["providers/demo/trips/trip-%d" % i for i in range(3)]
# Trips at 600x real time, every 0.1 s: the three of seed 1 end within about a minute.
FAST = ["--trips", "3", "--speedup", "600", "--update-interval", "0.1"]


def release_version() -> str:
    match = re.search(r'static let version = "([0-9.]+)"', (ROOT / "Sources/Primitives/Release.swift").read_text())
    assert match
    return match.group(1)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def claims(token: str) -> tuple[dict, dict]:
    def part(text: str) -> dict:
        return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    header, payload, _ = token.split(".")
    return part(header), part(payload)


# ---------------------------------------------------------------------------
# Versions and usage

def test_every_tool_prints_the_release_version_which_is_the_changelogs_newest(tool_tripwatch, tool_fleetsim):
    version = release_version()
    changelog = re.search(r"^## ([0-9.]+) ", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert changelog and changelog.group(1) == version, "CHANGELOG's newest entry is not %s" % version
    for tool in (tool_tripwatch, tool_fleetsim, Path(tool_tripwatch).with_name("grpc-interop-client"),
                 Path(tool_tripwatch).with_name("protowire-conformance")):
        result = run([tool, "--version"], timeout=30)
        assert result.code == 0 and result.stdout.strip() == version, result.describe()


@pytest.mark.parametrize("argv", [["follow", "--bogus"], ["get"], ["follow", "x", "--give-up-after", "0"]])
def test_tripwatch_usage_errors_exit_2(tool_tripwatch, argv):
    result = run([tool_tripwatch, *argv], timeout=30)
    assert result.code == 2, result.describe()
    assert result.stderr.strip(), result.describe()


@pytest.mark.parametrize("argv", [["--bogus"], ["--trips", "x"], ["token"], ["token", "--server"]])
def test_fleetsim_usage_errors_exit_2(tool_fleetsim, argv):
    result = run([tool_fleetsim, *argv], timeout=30)
    assert result.code == 2, result.describe()


def test_fleetsim_on_a_port_in_use_exits_7(tool_fleetsim, tool_server):
    server = tool_server("--trips", "1")
    result = run([tool_fleetsim, "--listen", server.address, "--trips", "1"], timeout=30)
    assert result.code == 7, result.describe()
    assert "fleetsim:" in result.stderr


# ---------------------------------------------------------------------------
# follow

@pytest.mark.parametrize("json_output", [False, True])
def test_a_malformed_trip_name_exits_3_at_once_and_follows_nothing(tool_tripwatch, tool_server, json_output):
    server = tool_server("--trips", "1")
    argv = [tool_tripwatch, "follow", NAMES[0], "trip-0", "--target", server.address, "--plaintext"]
    result = run(argv + (["--json"] if json_output else []), timeout=30)
    assert result.code == 3, result.describe()
    assert result.seconds < 20, result.describe()
    assert 'malformed trip name "trip-0"' in result.stderr, result.describe()
    if json_output:
        first = json.loads(result.stdout.splitlines()[0])
        assert first["event"] == "error" and first["trip"] == "trip-0", first
        assert first["code"] == 3 and first["name"] == "INVALID_ARGUMENT" and first["domain"] == "io.grpc", first
    assert NAMES[0] not in result.stdout, "a trip was followed:\n" + result.describe()


def test_against_a_closed_port_follow_gives_up_after_the_give_up_time(tool_tripwatch):
    argv = [tool_tripwatch, "follow", NAMES[0], "--target", "127.0.0.1:%d" % closed_port(), "--plaintext",
            "--give-up-after", "3", "--json"]
    result = run(argv, timeout=60)
    assert result.code == 4, result.describe()
    assert result.seconds >= 3, result.describe()
    assert "gave up on 1 of 1 trip(s)" in result.stderr and "UNAVAILABLE" in result.stderr, result.describe()
    events = [json.loads(line) for line in result.stdout.splitlines()]
    errors = [e for e in events if e["event"] == "error"]
    assert errors and all(e["code"] == 14 and e["name"] == "UNAVAILABLE" for e in errors), result.describe()
    assert not [e for e in events if e["event"] == "trip"], result.describe()


def test_finite_trips_are_followed_to_the_end_and_follow_exits_0_by_itself(tool_tripwatch, tool_server):
    server = tool_server(*FAST)
    result = run([tool_tripwatch, "follow", *NAMES, "--target", server.address, "--plaintext", "--json"],
                 timeout=240)
    assert result.code == 0, result.describe()
    events = [json.loads(line) for line in result.stdout.splitlines()]
    finals = {e["trip"] for e in events if e["event"] == "tripStatus" and e["status"] in ("COMPLETE", "CANCELED")}
    assert finals == set(NAMES), result.describe()
    assert not [e for e in events if e["event"] == "error"], result.describe()


def test_names_from_a_file_and_from_standard_input_with_a_summary(tool_tripwatch, tool_server, tmp_path):
    server = tool_server(*FAST)
    trips_file = tmp_path / "trips.txt"
    trips_file.write_text("# the first two\n%s\n\n%s  # and a comment\n" % (NAMES[0], NAMES[1]))
    result = run([tool_tripwatch, "follow", "-", "--trips-file", str(trips_file), "--target", server.address,
                  "--plaintext", "--summary", "--summary-interval", "2"], input=NAMES[2] + "\n" + NAMES[0] + "\n",
                 timeout=240)
    assert result.code == 0, result.describe()
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("summary: ") for line in lines), result.describe()
    assert re.match(r"summary: 3 trips, 3 final \(\d+ completed, \d+ canceled\), 0 following, 0 given up, "
                    r"[1-9]\d* updates, 0 errors", lines[-1]), result.describe()


@pytest.mark.parametrize("code, exit_code", [("NOT_FOUND", 5), ("UNAVAILABLE", 4)])
def test_a_duration_that_saw_only_errors_is_a_failure(tool_tripwatch, tool_server, code, exit_code):
    server = tool_server("--trips", "1", "--fail-rate", "1", "--fail-code", code)
    result = run([tool_tripwatch, "follow", NAMES[0], "--target", server.address, "--plaintext", "--duration", "2",
                  "--summary"], timeout=60)
    assert result.code == exit_code, result.describe()
    assert "only errors" in result.stderr and code in result.stderr, result.describe()


def test_a_refused_trip_is_given_up_with_exit_5(tool_tripwatch, tool_server):
    server = tool_server("--trips", "1", "--fail-rate", "1", "--fail-code", "PERMISSION_DENIED")
    result = run([tool_tripwatch, "follow", NAMES[0], "--target", server.address, "--plaintext",
                  "--give-up-after", "2", "--summary"], timeout=60)
    assert result.code == 5, result.describe()
    assert "PERMISSION_DENIED" in result.stderr and "gave up" in result.stderr, result.describe()


def test_tls_against_a_cleartext_server_hints_at_plaintext(tool_tripwatch, tool_server):
    server = tool_server("--trips", "1")
    result = run([tool_tripwatch, "follow", NAMES[0], "--target", server.address, "--give-up-after", "2",
                  "--summary"], timeout=60)
    assert result.code == 4, result.describe()
    assert "add --plaintext" in result.stderr, result.describe()


# ---------------------------------------------------------------------------
# get

def test_get_prints_the_trip_as_proto3_json_equal_to_pythons(tool_tripwatch, tool_server, fsim_pb):
    # Trips that started a day ago have ended: the trip no longer changes between two calls.
    server = tool_server("--trips", "3", "--start-time", str(time.time() - 86400))
    result = run([tool_tripwatch, "get", NAMES[1], "--target", server.address, "--plaintext"], timeout=60)
    assert result.code == 0, result.describe()
    ours = json.loads(result.stdout)

    pb = fsim_pb
    request = pb.GetTripRequest(name=NAMES[1], view=pb.GetTripRequest.DESCRIPTOR.fields_by_name["view"]
                                .enum_type.values_by_name["JOURNEY_SHARING_V1S"].number)
    with grpc.insecure_channel(server.address) as channel:
        call = channel.unary_unary("/maps.fleetengine.v1.TripService/GetTrip",
                                   request_serializer=lambda r: r.SerializeToString(),
                                   response_deserializer=pb.Trip.FromString)
        trip = call(request, timeout=10)
    theirs = json.loads(json_format.MessageToJson(trip))
    assert ours == theirs
    assert ours["name"] == NAMES[1] and ours["tripStatus"] in ("COMPLETE", "CANCELED")


def test_get_of_an_unknown_trip_exits_1_with_the_status(tool_tripwatch, tool_server):
    server = tool_server("--trips", "1")
    result = run([tool_tripwatch, "get", "providers/demo/trips/nope", "--target", server.address, "--plaintext"],
                 timeout=60)
    assert result.code == 1, result.describe()
    assert "NOT_FOUND" in result.stderr and result.stdout == "", result.describe()


# ---------------------------------------------------------------------------
# Tokens

def test_service_account_tokens_are_accepted_and_another_trips_token_is_refused(
        tool_tripwatch, tool_fleetsim, tool_server, tool_service_account):
    account = tool_service_account
    server = tool_server(*FAST, "--jwt-public-key", account.public_key)
    target = ["--target", server.address, "--plaintext"]
    # fleetsim token signs with the same key: Fleet Engine's claims, the account's kid.
    token = run([tool_fleetsim, "token", "--trip", NAMES[1], "--service-account-file", account.key_file], timeout=30)
    assert token.code == 0, token.describe()
    header, payload = claims(token.stdout.strip())
    assert header == {"alg": "RS256", "kid": account.key_id, "typ": "JWT"}, header
    assert payload["iss"] == payload["sub"] == account.email, payload
    assert payload["aud"] == "https://fleetengine.googleapis.com/", payload
    assert payload["exp"] - payload["iat"] == 3600 and payload["authorization"] == {"tripid": "trip-1"}, payload

    # Trip 1's token for trip 0: PERMISSION_DENIED.
    refused = run([tool_tripwatch, "get", NAMES[0], *target, "--token", token.stdout.strip()], timeout=60)
    assert refused.code == 1, refused.describe()
    assert "PERMISSION_DENIED" in refused.stderr, refused.describe()
    assert token.stdout.strip() not in refused.stdout + refused.stderr

    # Minted by tripwatch itself, per trip and for every trip.
    accepted = run([tool_tripwatch, "get", NAMES[0], *target, "--service-account-file", account.key_file],
                   timeout=60)
    assert accepted.code == 0, accepted.describe()
    assert json.loads(accepted.stdout)["name"] == NAMES[0]
    followed = run([tool_tripwatch, "follow", *NAMES, *target, "--service-account-file", account.key_file,
                    "--token-scope", "server", "--summary"], timeout=240)
    assert followed.code == 0, followed.describe()
    assert "3 final" in followed.stdout.splitlines()[-1], followed.describe()


def test_fleetsim_token_with_a_secret_file_is_accepted_by_a_fleetsim_with_the_same_file(
        tool_tripwatch, tool_fleetsim, tool_server, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("a-secret-of-at-least-thirty-two-bytes-for-hs256\n")
    server = tool_server("--trips", "1", "--jwt-secret-file", secret)
    token = run([tool_fleetsim, "token", "--trip", NAMES[0], "--jwt-secret-file", secret], timeout=30)
    assert token.code == 0, token.describe()
    token_file = tmp_path / "token"
    token_file.write_text(token.stdout)
    ok = run([tool_tripwatch, "get", NAMES[0], "--target", server.address, "--plaintext", "--token-file", token_file],
             timeout=60)
    assert ok.code == 0, ok.describe()
    other = tmp_path / "other-secret"
    other.write_text("another-secret-of-at-least-thirty-two-bytes-!!\n")
    forged = run([tool_fleetsim, "token", "--server", "--jwt-secret-file", other], timeout=30)
    refused = run([tool_tripwatch, "get", NAMES[0], "--target", server.address, "--plaintext", "--token",
                   forged.stdout.strip()], timeout=60)
    assert refused.code == 1 and "UNAUTHENTICATED" in refused.stderr, refused.describe()


def test_unreadable_key_and_token_files_exit_3(tool_tripwatch, tool_fleetsim, tmp_path):
    missing = tmp_path / "missing.json"
    for argv in ([tool_tripwatch, "get", NAMES[0], "--service-account-file", missing],
                 [tool_tripwatch, "follow", NAMES[0], "--token-file", missing],
                 [tool_tripwatch, "follow", "--trips-file", missing],
                 [tool_fleetsim, "--jwt-secret-file", missing],
                 [tool_fleetsim, "token", "--server", "--service-account-file", missing]):
        result = run(argv, timeout=30)
        assert result.code == 3, result.describe()


# ---------------------------------------------------------------------------
# raw-call

def test_raw_call_reads_the_request_from_a_file_or_standard_input(tool_tripwatch, tool_server, fsim_pb, tmp_path):
    server = tool_server("--trips", "1", "--start-time", str(time.time() - 86400))
    request = fsim_pb.GetTripRequest(name=NAMES[0]).SerializeToString()
    request_file = tmp_path / "request.bin"
    request_file.write_bytes(request)
    base = [tool_tripwatch, "raw-call", server.address, "/maps.fleetengine.v1.TripService/GetTrip", "--plaintext"]
    outputs = []
    for extra, stdin in ((["--data-hex", request.hex()], None), (["-d", "@%s" % request_file], None),
                         (["-d", "@-"], request)):
        result = subprocess_run_bytes(base + extra, stdin)
        assert result[0] == 0, result
        outputs.append(json.loads(result[1].splitlines()[0])["message_hex"])
    assert outputs[0] == outputs[1] == outputs[2]
    assert fsim_pb.Trip.FromString(bytes.fromhex(outputs[0])).name == NAMES[0]
    bad = run(base + ["-d", "inline"], timeout=30)
    assert bad.code == 2, bad.describe()


def subprocess_run_bytes(argv, stdin: bytes | None):
    import subprocess
    result = subprocess.run([str(a) for a in argv], input=stdin, capture_output=True, timeout=60)
    return result.returncode, result.stdout.decode(), result.stderr.decode()
