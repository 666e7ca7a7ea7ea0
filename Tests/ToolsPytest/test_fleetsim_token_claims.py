"""FleetSim checks a token's claims as Fleet Engine does, with a grpcio client:
a token signed with the right key but failing one check (aud, iss, sub, iat,
exp, lifetime, --jwt-issuer) is UNAUTHENTICATED and the status details name
the check, never the token; compliant tokens pass.

    FLEETSIM=.build/debug/fleetsim python -m pytest -q Tests/ToolsPytest/test_fleetsim_token_claims.py
"""

from __future__ import annotations

import time

import grpc
import pytest

SECRET = "fleetsim-token-claim-tests-secret-0123456789"  # at least 32 bytes
ACCOUNT = "fleetsim-tests@example.iam.gserviceaccount.com"
UNARY = "/maps.fleetengine.v1.TripService/GetTrip"
STREAMING = "/journeysharing.v1.TripStreamService/GetTrip"
TRIP = "providers/demo/trips/trip-1"


def get_trip_request() -> bytes:
    """GetTripRequest { name: TRIP } (field 3)."""
    return bytes([0x1A, len(TRIP)]) + TRIP.encode()


def stream_trip_request() -> bytes:
    """StreamTripRequest { name: TRIP } (field 2)."""
    return bytes([0x12, len(TRIP)]) + TRIP.encode()


def call(server, token: str, streaming: bool = False) -> tuple[grpc.StatusCode, str]:
    md = [("authorization", "Bearer " + token)]
    try:
        if streaming:
            next(iter(server.channel.unary_stream(STREAMING)(stream_trip_request(), metadata=md, timeout=20)))
        else:
            server.channel.unary_unary(UNARY)(get_trip_request(), metadata=md, timeout=20)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as error:
        return error.code(), error.details() or ""


def now() -> int:
    return int(time.time())


# (label, claims to change, words the refusal names)
REFUSALS = [
    ("no aud", lambda: {"aud": None}, "no aud claim"),
    ("another aud", lambda: {"aud": "https://example.com/"}, 'aud is not "https://fleetengine.googleapis.com/"'),
    ("two audiences", lambda: {"aud": ["https://fleetengine.googleapis.com/", "https://example.com/"]}, "aud is not"),
    ("no iss", lambda: {"iss": None}, "no iss claim"),
    ("empty iss", lambda: {"iss": ""}, "no iss claim"),
    ("no sub", lambda: {"sub": None}, "no sub claim"),
    ("iss and sub differ", lambda: {"sub": "rider"}, "iss and sub differ"),
    ("no iat", lambda: {"iat": None}, "no iat claim"),
    ("no exp", lambda: {"exp": None}, "no exp claim"),
    ("100-year lifetime", lambda: {"iat": now() - 60, "exp": now() - 60 + 100 * 365 * 86400},
     "more than 3600 s"),
    ("an hour and a second", lambda: {"iat": now() - 60, "exp": now() - 60 + 3601}, "lifetime (exp - iat) is 3601 s"),
    ("issued two minutes ahead", lambda: {"iat": now() + 120, "exp": now() + 1200}, "in the future"),
    ("expired", lambda: {"iat": now() - 1800, "exp": now() - 60}, "expired"),
]


@pytest.mark.parametrize("label,change,check", REFUSALS, ids=[case[0] for case in REFUSALS])
def test_a_token_failing_one_claim_check_is_refused(label, change, check, fsim_start, fsim_jwt):
    server = fsim_start("--jwt-secret", SECRET, "--trips", 3)
    token = fsim_jwt.hs256(fsim_jwt.claims("trip-1", **change()), SECRET.encode())
    for streaming in (False, True):
        code, details = call(server, token, streaming)
        assert code == grpc.StatusCode.UNAUTHENTICATED, (label, streaming, code, details)
        assert check in details, (label, details)
        assert not any(part in details for part in token.split(".") if len(part) >= 8)
    stats = server.stop()
    assert stats["unauthenticated"] == 2


def test_compliant_tokens_pass(fsim_start, fsim_jwt):
    server = fsim_start("--jwt-secret", SECRET, "--trips", 3)
    tokens = [
        fsim_jwt.claims("trip-1"),
        fsim_jwt.claims("*", iat=now() - 60, exp=now() - 60 + 3600),  # an hour exactly
        fsim_jwt.claims("trip-1", iat=now() + 10, exp=now() + 600),  # issued within the 30 s leeway
        fsim_jwt.claims("trip-1", aud=["https://fleetengine.googleapis.com/"]),  # a one-element array
    ]
    for claims in tokens:
        assert call(server, fsim_jwt.hs256(claims, SECRET.encode())) == (grpc.StatusCode.OK, ""), claims
    assert call(server, fsim_jwt.hs256(tokens[0], SECRET.encode()), streaming=True)[0] == grpc.StatusCode.OK
    # The trip check is unchanged: a compliant token for another trip is PERMISSION_DENIED.
    code, _ = call(server, fsim_jwt.hs256(fsim_jwt.claims("trip-2"), SECRET.encode()))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    stats = server.stop()
    assert stats["unauthenticated"] == 0 and stats["permission_denied"] == 1


def test_jwt_issuer_flag(fsim_start, fsim_jwt, fsim_rsa_keys):
    server = fsim_start("--jwt-public-key", fsim_rsa_keys.public_key, "--jwt-issuer", ACCOUNT, "--trips", 3)
    own = fsim_jwt.rs256(fsim_jwt.claims("trip-1"), fsim_rsa_keys.private_key)
    other_account = "someone-else@example.iam.gserviceaccount.com"
    other = fsim_jwt.rs256(fsim_jwt.claims("trip-1", iss=other_account, sub=other_account),
                           fsim_rsa_keys.private_key)
    assert call(server, own) == (grpc.StatusCode.OK, "")
    code, details = call(server, other)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "iss is not the expected issuer" in details, details
    server.stop()
