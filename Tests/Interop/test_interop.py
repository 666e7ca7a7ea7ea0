"""The Swift grpc-interop-client against a grpcio TestService server, over
h2c and TLS, plus checks that TLS verification is on by default.

Every case of grpc's interop-test-descriptions.md that runs without Google's
cloud is run, with the methods the spec names (FullDuplexCall where it says so),
the four compression cases included. The server (interop_server.py) is as
strict as grpc-go's and C++'s: it echoes metadata and status only on UnaryCall
and FullDuplexCall, and checks each request's compressed flag against
`expect_compressed`. A case passes when the client exits 0.
"""

from __future__ import annotations

import pytest

from interop_server import OVERRIDE_NAME

CASES = [
    "empty_unary",
    "large_unary",
    "client_compressed_unary",
    "server_compressed_unary",
    "client_streaming",
    "client_compressed_streaming",
    "server_streaming",
    "server_compressed_streaming",
    "ping_pong",
    "empty_stream",
    "custom_metadata",
    "status_code_and_message",
    "special_status_message",
    "unimplemented_method",
    "unimplemented_service",
    "cancel_after_begin",
    "cancel_after_first_response",
    "timeout_on_sleeping_server",
]

# A client that hangs instead of failing is a failure too.
CLIENT_TIMEOUT = 60.0
FAILING_CLIENT_TIMEOUT = 30.0


def base_args(port: int, case: str, host: str = "127.0.0.1") -> list[str]:
    return ["--server_host", host, "--server_port", str(port), "--test_case", case]


def tls_args(ca, override: str | None = OVERRIDE_NAME) -> list[str]:
    args = ["--use_tls", "true", "--use_test_ca", "true", "--ca_file", str(ca)]
    if override:
        args += ["--server_host_override", override]
    return args


@pytest.mark.parametrize("case", CASES)
def test_interop_h2c(case, interop_run, interop_server_h2c):
    run = interop_run(base_args(interop_server_h2c.port, case), timeout=CLIENT_TIMEOUT)
    assert run.returncode == 0, run.describe(interop_server_h2c)


@pytest.mark.parametrize("case", CASES)
def test_interop_tls(case, interop_run, interop_server_tls, interop_certs):
    run = interop_run(base_args(interop_server_tls.port, case) + tls_args(interop_certs.ca),
                      timeout=CLIENT_TIMEOUT)
    assert run.returncode == 0, run.describe(interop_server_tls)


# --- TLS verification: positive controls -----------------------------------

def test_tls_name_from_server_host(interop_run, interop_server_tls_localhost, interop_certs):
    """No override: the client checks the certificate against --server_host
    (here `localhost`, a DNS name in the certificate)."""
    server = interop_server_tls_localhost
    run = interop_run(base_args(server.port, "empty_unary", host="localhost")
                      + tls_args(interop_certs.ca, override=None), timeout=CLIENT_TIMEOUT)
    assert run.returncode == 0, run.describe(server)


def test_tls_ip_address_san(interop_run, interop_server_tls_localhost, interop_certs):
    """No override and an IP literal as --server_host: verified against the
    certificate's IP:127.0.0.1 subjectAltName (no SNI is sent for an IP)."""
    server = interop_server_tls_localhost
    run = interop_run(base_args(server.port, "empty_unary")
                      + tls_args(interop_certs.ca, override=None), timeout=CLIENT_TIMEOUT)
    assert run.returncode == 0, run.describe(server)


# --- TLS verification: these connections must fail -------------------------

def calls_logged(server) -> int:
    return sum(1 for line in server.log.read_text(errors="replace").splitlines() if " from " in line)


def assert_rejected(run, server, calls_before: int) -> None:
    assert isinstance(run.returncode, int), "the client hung instead of failing:\n" + run.describe(server)
    assert run.returncode != 0, ("the client accepted a certificate it must reject:\n"
                                 + run.describe(server))
    assert calls_logged(server) == calls_before, (
        "the server saw a call although the handshake should have failed:\n" + run.describe(server))


def test_tls_rejects_name_mismatch(interop_run, interop_server_tls_localhost, interop_certs):
    """The certificate is for localhost / 127.0.0.1, the client expects foo.test.google.fr."""
    server = interop_server_tls_localhost
    before = calls_logged(server)
    run = interop_run(base_args(server.port, "empty_unary") + tls_args(interop_certs.ca),
                      timeout=FAILING_CLIENT_TIMEOUT)
    assert_rejected(run, server, before)


def test_tls_rejects_name_mismatch_without_override(interop_run, interop_server_tls, interop_certs):
    """The certificate is for foo.test.google.fr, the client dials 127.0.0.1
    with no override, so it must verify 127.0.0.1 (not in the certificate)."""
    server = interop_server_tls
    before = calls_logged(server)
    run = interop_run(base_args(server.port, "empty_unary") + tls_args(interop_certs.ca, override=None),
                      timeout=FAILING_CLIENT_TIMEOUT)
    assert_rejected(run, server, before)


def test_tls_rejects_unknown_ca(interop_run, interop_server_tls_rogue, interop_certs):
    """The name matches but the certificate is signed by a CA the client was not given."""
    server = interop_server_tls_rogue
    before = calls_logged(server)
    run = interop_run(base_args(server.port, "empty_unary") + tls_args(interop_certs.ca),
                      timeout=FAILING_CLIENT_TIMEOUT)
    assert_rejected(run, server, before)


def test_tls_rejects_test_ca_without_use_test_ca(interop_run, interop_server_tls, interop_certs):
    """Without --use_test_ca the client trusts the system roots only, which do
    not include the test CA."""
    server = interop_server_tls
    before = calls_logged(server)
    run = interop_run(base_args(server.port, "empty_unary")
                      + ["--use_tls", "true", "--server_host_override", OVERRIDE_NAME],
                      timeout=FAILING_CLIENT_TIMEOUT)
    assert_rejected(run, server, before)
