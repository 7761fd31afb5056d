"""What a new user meets on the agents' stores, command by command as the docs print them:
each answer true, one line, and the exit code of what happened."""

from __future__ import annotations

import os
import subprocess
import sys

from test_stores import Machine, machine

__all__ = ["machine"]  # the fixture, used by name


def run_env(machine: Machine, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=machine.home.parent,
        env={**os.environ, **env},
        capture_output=True,
        check=False,
    )


def test_a_store_done_before_an_interrupt_is_reported(machine: Machine) -> None:
    """Ctrl-C while the second store runs: the first store's lines are out already."""
    done = run_env(machine, "stores", GITCLAW_COMPRESS_INTERRUPT_AT="store-done")
    assert done.returncode == 130
    assert b"claude: compressed projects/" in done.stdout
    assert b"claude: " + str(machine.home / ".claude").encode() + b": 1 session" in done.stdout
    assert b"codex:" not in done.stdout
    assert done.stderr.endswith(b"\n") and b"interrupted" in done.stderr
