"""A FIFO, a device or a socket given as a session (or a config) is refused in one line that
says what it is, before anything opens it: reading a FIFO nobody writes waits for ever
(`scan` and `show` hung on one)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import commit_session
from synthetic import typical_session

SESSION = ".GITCLAW/state/sessions/s.jsonl"
COMMANDS = [
    ("scan",),
    ("status",),
    ("verify",),
    ("restore",),
    ("compress",),
    ("stats",),
    ("context",),
    ("summarize",),
    ("prune",),
    ("redact", "--all"),
]


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A hang is the failure: the timeout only ends the test, it is never the answer.
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def assert_refused(done: subprocess.CompletedProcess[str], name: str, kind: str) -> None:
    from gitclaw_compress.cli import READ_ONLY

    assert done.returncode == 3, (done.returncode, done.stderr)
    # A command that never changes anything does not say that it changed nothing.
    tail = "" if done.args[3] in READ_ONLY else "; nothing was changed"
    assert done.stderr == f"gitclaw-compress: error: {name}: {kind}{tail}\n"


@pytest.fixture
def fifo(repo: Path) -> Path:
    commit_session(repo, SESSION, typical_session(turns=2).data())
    path = repo / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(repo: Path) -> Iterator[Path]:
    path = repo / "sock.jsonl"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield path
    server.close()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command[0])
def test_a_fifo_is_refused_by_every_command(repo: Path, fifo: Path, command: tuple[str]) -> None:
    done = run(repo, *command, fifo.name)
    assert_refused(done, fifo.name, "a named pipe (FIFO), not a session file")


def test_a_fifo_given_to_show_or_as_the_config_is_refused(repo: Path, fifo: Path) -> None:
    assert_refused(
        run(repo, "show", fifo.name, "L1"), fifo.name, "a named pipe (FIFO), not a session file"
    )
    done = run(repo, "status", "--config", fifo.name, SESSION)
    assert_refused(done, fifo.name, "a named pipe (FIFO), not a config file")


def test_a_device_and_a_socket_are_refused(repo: Path, unix_socket: Path) -> None:
    for command in ("scan", "status"):
        assert_refused(
            run(repo, command, os.devnull), os.devnull, "a character device, not a session file"
        )
        done = run(repo, command, unix_socket.name)
        assert_refused(done, unix_socket.name, "a socket, not a session file")
