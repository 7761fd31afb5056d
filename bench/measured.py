"""Run a command and measure it: wall time and its peak resident memory.

The peak is what GNU time reports for the command (`%M`, from `wait4`). Not `wait4` on our own
child: Linux starts a child's peak at its parent's size when it forks, so a bench that holds
hundreds of MB would be counted in every command it runs. `time` itself is small."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# git for a bench: no system config, a fixed author (the benches make their own HOME).
HERMETIC_GIT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


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
    """`argv` run to its end (killed, with its process group, after `timeout` seconds), its
    stdout and stderr kept."""
    with tempfile.TemporaryFile() as output, tempfile.NamedTemporaryFile("r") as peak:
        start = time.monotonic()
        process = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M", "-o", peak.name, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        seconds = time.monotonic() - start
        output.seek(0)
        lines = peak.read().split()
        kilobytes = int(lines[-1]) if lines and lines[-1].isdigit() else 0
        return Measured(argv, seconds, kilobytes * 1024, process.returncode, output.read())


def mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"
