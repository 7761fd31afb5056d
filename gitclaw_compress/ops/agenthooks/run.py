"""What the hook does when an agent runs it: log the event and start the pass
(`gitclaw-compress stores AGENT`) detached, unless the last one still runs (a lock the pass
holds) or started within PASS_INTERVAL; for Codex, run the `notify` program ours replaced.
The pass writes its output and its end to the log."""

from __future__ import annotations

import contextlib
import datetime
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

import orjson

from gitclaw_compress.formats import lifecycle_hook
from gitclaw_compress.ops.agenthooks.files import (
    LOG_NAME,
    STORES_COMMAND,
    lock_path,
    log_path,
    made_hooks_folder,
)
from gitclaw_compress.store.locks import try_lock
from gitclaw_compress.store.private import private_opener

LOG_LIMIT = 1 << 20  # bytes; then the log moves to hooks.log.1 and starts again
PAYLOAD_LIMIT = 1 << 20  # bytes of a payload read from stdin
PASS_NICENESS = 10  # added to the pass's nice value
# The pass takes sessions at rest (quiet for minutes): one more soon after finds little new.
# Codex runs its notify program after every turn.
PASS_INTERVAL = 300  # seconds: a hook starts no pass sooner after the last one started
CLOCK_SLACK = 2  # seconds a recorded start may lie ahead of now and still mean "just now"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_log(env: Mapping[str, str]) -> IO[bytes]:
    """The log, for appending (moved to hooks.log.1 first when it grew past LOG_LIMIT)."""
    made_hooks_folder(env)
    path = log_path(env)
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(LOG_NAME + ".1"))
    return open(path, "ab", opener=private_opener)


def log(handle: IO[bytes], agent: str, message: str) -> None:
    handle.write(f"{_now()} {agent}: {message}\n".encode())
    handle.flush()


def run_hook(
    agent: str, words: Sequence[str], stdin: IO[bytes], env: Mapping[str, str]
) -> list[str]:
    """What `gitclaw-compress hook AGENT` does: log the event, start the pass detached unless
    one runs, and return the argv to run next (Codex's previous notify program, with the
    payload), or an empty list."""
    hook = lifecycle_hook(agent)
    raw = stdin.read(PAYLOAD_LIMIT) if hook.payload_on_stdin else None
    payload_text = raw.decode("utf-8", "replace") if raw is not None else (words or [""])[-1]
    chained = [] if hook.payload_on_stdin else list(words[:-1])
    try:
        payload: object = orjson.loads(payload_text)
    except orjson.JSONDecodeError:
        payload = None
    with open_log(env) as handle:
        event = f"{hook.event}, {hook.session(payload)}"
        with open(lock_path(env, agent), "a+b", opener=private_opener) as lock:
            if not try_lock(lock):
                log(handle, agent, f"{event}: the last pass still runs; none started")
                return [*chained, payload_text] if chained else []
            since = _since_last_pass(lock)
            if since is not None and since < PASS_INTERVAL:
                log(handle, agent, f"{event}: a pass started {since:.0f}s ago; none started")
                return [*chained, payload_text] if chained else []
            lock.seek(0)
            lock.truncate()
            lock.write(f"{time.time():.3f}\n".encode())  # when the last pass started
            lock.flush()
            child = subprocess.Popen(
                [sys.executable, "-P", "-m", "gitclaw_compress", "hook", "--pass", agent],
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=handle,
                env=dict(env),
                **_detached(lock),
            )
            log(handle, agent, f"{event}: started a pass (pid {child.pid})")
    return [*chained, payload_text] if chained else []


def _detached(lock: IO[bytes]) -> dict[str, Any]:
    """How the pass outlives the hook. POSIX: a session of its own, and it inherits the
    locked file and holds it until it ends. Windows: a detached process; it cannot inherit
    the lock, so there only the interval and the store's own lock keep passes apart."""
    if os.name == "nt":
        detached = getattr(subprocess, "DETACHED_PROCESS", 0x8)
        return {"creationflags": detached | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    return {"pass_fds": (lock.fileno(),), "start_new_session": True}


def _since_last_pass(lock: IO[bytes]) -> float | None:
    """Seconds since the last pass started, as the lock file records; None: never (or a
    clock that went back)."""
    lock.seek(0)
    try:
        since = time.time() - float(lock.read(64).decode())
    except ValueError:
        return None
    if -CLOCK_SLACK < since < 0:
        return 0.0  # a start rounded up to the second (as earlier versions wrote it): just now
    return since if since >= 0 else None


def run_pass(agent: str, env: Mapping[str, str]) -> int:
    """The detached pass: `gitclaw-compress stores AGENT`, its output and exit in the log."""
    argv = [sys.executable, "-P", "-m", "gitclaw_compress", STORES_COMMAND, agent]
    with contextlib.suppress(OSError):
        os.nice(PASS_NICENESS)  # background work: the agent's next session comes first
    started = time.monotonic()
    with open_log(env) as handle, open(log_path(env), "rb") as output:
        log(handle, agent, f"pass: gitclaw-compress {STORES_COMMAND} {agent}")  # PASS_STARTED
        output.seek(0, os.SEEK_END)  # what the pass writes comes after this
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=handle, check=False, env=dict(env)
        )
        took = time.monotonic() - started
        for path, ids in _held_by_pass(output, agent):  # one line each, for doctor
            log(handle, agent, f"pass held {path} for secrets (ids {ids})")  # PASS_HELD
        log(handle, agent, f"pass ended: exit {done.returncode} after {took:.1f}s")  # PASS_ENDED
    return done.returncode


def _held_by_pass(output: IO[bytes], agent: str) -> list[tuple[str, str]]:
    """The sessions the pass held for a secret (path, ids), read back from what it wrote to
    the log: its lines for `agent` that `held_lines` made (the secret is never in them)."""
    from gitclaw_compress.secrets.held import HELD_LINE

    held = []
    prefix = f"{agent}: "
    for raw in output.read().splitlines():
        line = raw.decode("utf-8", "replace")
        if line.startswith(prefix) and (found := HELD_LINE.match(line, len(prefix))):
            held.append((found.group(1), found.group(2)))
    return held
