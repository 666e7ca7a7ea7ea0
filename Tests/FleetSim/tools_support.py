"""Running a tool to its end, for the command-line tool tests (a module of its own: every Python
suite has a conftest.py, and pytest imports them all under the one name `conftest`)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

import pytest


@dataclass
class Run:
    argv: list
    code: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return "$ %s\nexit %s after %.1f s\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(self.argv), self.code, self.seconds, self.stdout[-3000:], self.stderr[-3000:])


def run(argv: list, timeout: float = 120, input: str | None = None) -> Run:
    """Runs a tool to its end; a tool that outlives `timeout` fails the test."""
    started = time.monotonic()
    try:
        result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                                input=input)
    except subprocess.TimeoutExpired as expired:
        pytest.fail("still running after %.0f s: $ %s\nstdout:\n%s" % (
            timeout, " ".join(map(str, argv)), (expired.stdout or b"")[-2000:]), pytrace=False)
    return Run([str(a) for a in argv], result.returncode, result.stdout, result.stderr, time.monotonic() - started)
