"""Running a tool to its end, for the command-line tool tests (a module of its own: every Python
suite has a conftest.py, and pytest imports them all under the one name `conftest`)."""

from __future__ import annotations

import os
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


# ---------------------------------------------------------------------------
# Measuring a process and naming its address (the attack tests')

def port_of(address: str) -> int:
    """The port of HOST:PORT."""
    return int(address.rsplit(":", 1)[1])


def rss_mib(pid: int) -> float:
    """The resident memory of process `pid`, in MiB, from /proc/PID/status."""
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise ProcessLookupError("no VmRSS for %d" % pid)


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid`, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
