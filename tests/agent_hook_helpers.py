"""Helpers for the tests of the agents' own hooks (`install --agents`) and stores: what the
hook logged, waiting for the detached processes it starts without sleeping (pidfd), and a
live process that holds a session open for writing."""

from __future__ import annotations

import hashlib
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import synthetic
import synthetic_claude
import synthetic_codex
import synthetic_copilot

from gitclaw_compress.ops.agenthooks.files import log_path

WAIT_SECONDS = 180  # a guard against a hung process, not a measurement
# Our hook's command line, as the agent runs it (argv), or through a shell (`sh -c "…"`).
HOOK_WORDS = (b"gitclaw_compress\0hook\0", b"gitclaw_compress hook ")


def log_lines(env: dict[str, str]) -> list[str]:
    path = log_path(env)
    return path.read_text().splitlines() if path.exists() else []


def ours(pid: int, home: Path) -> bool:
    """Whether process `pid` is one of our hooks or passes (`hook --pass`) run with this
    HOME."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone
        return False
    wanted = f"HOME={home}".encode()
    return any(words in command for words in HOOK_WORDS) and wanted in environ.split(b"\0")


def started(pid: int) -> bytes | None:
    """When process `pid` started (clock ticks since boot), None when it is gone: with its
    pid, what tells it from a later process given the same pid (pid_max may be 32768 on a
    busy machine), and what stays when it execs another program (Codex's previous notify)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()[19]


def hook_processes(home: Path) -> list[tuple[int, bytes]]:
    """Our hook and pass processes that run with this HOME (an agent may start ours detached,
    and not wait for it), each with when it started."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and ours(int(name), home) and (since := started(int(name))):
            found.append((int(name), since))
    return found


def wait_for_pid(pid: int, since: bytes) -> None:
    """Until process `pid`, started at `since`, has ended (not necessarily a child, and
    whatever it exec'd since). The pidfd holds on to the process found with that pid, and
    its start is checked only once it is held: a pid handed to another process meanwhile is
    never waited for."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if started(pid) == since:
            ready, _, _ = select.select([handle], [], [], WAIT_SECONDS)
            assert ready, f"process {pid} still runs after {WAIT_SECONDS}s"
    finally:
        os.close(handle)


def wait_for_hooks(env: dict[str, str]) -> list[str]:
    """Wait until no hook or pass of ours runs under env's HOME; the log's lines then. A
    hook starts its pass (exec'd) before it ends, and a pass writes its last line before it
    ends: once none is left, every line is written."""
    home = Path(env["HOME"])
    while running := hook_processes(home):
        for pid, since in running:
            wait_for_pid(pid, since)
    return log_lines(env)


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@contextmanager
def held_open(path: Path) -> Iterator[None]:
    """While inside: another process holds `path` open for writing, as a running agent does."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; f = open(sys.argv[1], 'ab'); print('open', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == b"open\n"
        yield
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()


def session_bytes(agent: str) -> bytes:
    """A small synthetic session of `agent`, whole: what a store holds at rest."""
    if agent == "claude":
        return synthetic_claude.typical_session(4).data()
    if agent == "codex":
        return synthetic_codex.typical_rollout(4).data()
    if agent == "copilot":
        return synthetic_copilot.typical_events().data()
    return synthetic.typical_session(6).data()


def run_agent(argv: list[str], work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One real agent CLI run in `work`, offline, with no input; it must succeed."""
    ran = subprocess.run(
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, f"{argv[0]}: {ran.stderr[-3000:]}"
    return ran
