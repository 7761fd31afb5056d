"""Run a command and measure it: wall time and the peak resident memory of its process tree's
largest process (from `wait4`, so it is that command's alone, not the bench's)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measured:
    argv: list[str]
    seconds: float
    peak_rss: int  # bytes
    returncode: int
    output: bytes

    def check(self) -> Measured:
        if self.returncode != 0:
            tail = self.output[-3000:].decode("utf-8", "replace")
            raise SystemExit(f"{self.argv[:4]} exited with {self.returncode}:\n{tail}")
        return self


def run_measured(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float | None = None
) -> Measured:
    """`argv` run to its end (killed after `timeout` seconds), its stdout and stderr kept."""
    with tempfile.TemporaryFile() as output:
        start = time.monotonic()
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=output
        )
        deadline = None if timeout is None else start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG if deadline else 0)
            if pid:
                break
            if deadline is not None and time.monotonic() > deadline:
                process.kill()
                deadline = None
            time.sleep(0.2)
        seconds = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        return Measured(argv, seconds, usage.ru_maxrss * 1024, process.returncode, output.read())


def mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"
