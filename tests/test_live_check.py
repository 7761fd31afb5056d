"""Live writers on every platform's path, run here: the operating system asked through
psutil without the Linux lease (with the open files' modes, as on Linux; every open counting,
as on macOS and Windows), and the path where no open file can be listed, where the agents'
own facts decide (store/live.py, ops/stores.live_sessions).

The writers are real processes: a plain one holding the file open for appending, and the
real `codex` holding its rollout open while it waits for a model that never answers.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
from agent_harness import place_codex, place_copilot, require_agent
from agent_hook_helpers import held_open, session_bytes, wait_for_hooks
from conftest import commit_session, linux_only
from format_cases import SYNTHETIC
from test_live_writers import APPENDED, Writer

from gitclaw_compress.formats.shared.home import AgentHome
from gitclaw_compress.ops.stores import live_sessions, runs
from gitclaw_compress.store import fileio, live

SESSION = ".GITCLAW/state/sessions/s.jsonl"
OLD = time.time() - 3600  # an hour ago: at rest for stores.quietMinutes (5)
WAIT_SECONDS = 180  # a guard against a hung process, not a measurement
THRESHOLD_ZERO = {"session": {"sizeThresholdKB": 0, "turnThresholdBeforeCompress": 1}}


def env_with(check: str | None, **extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env.pop(live.FORCE_ENV, None)
    if check is not None:
        env[live.FORCE_ENV] = check
    return env


def run(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_each_check_says_in_one_line_what_it_can_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = {}
    for forced in live.FORCED:
        monkeypatch.setenv(live.FORCE_ENV, forced)
        lines[forced] = live.check().line()
    platform = live.platform_name()
    assert lines["psutil"] == f"live-writer check: open files ({platform})"
    assert lines["any-mode"] == f"live-writer check: open files, read and write alike ({platform})"
    assert lines["processes"].startswith(f"live-writer check: none ({platform}: open files")
    assert "keeps its file open is rewritten while it runs" in lines["processes"]
    assert "neither open files nor processes" in lines["none"]
    assert all("\n" not in line for line in lines.values())
    assert (live.platform_name("darwin"), live.platform_name("win32")) == ("macOS", "Windows")
    monkeypatch.delenv(live.FORCE_ENV)
    if sys.platform.startswith("linux"):
        assert live.check().line() == "live-writer check: lease + open files (Linux)"


@pytest.mark.parametrize("check", ["psutil", "any-mode"])
def test_a_plain_writer_holding_the_file_open_is_never_rewritten(repo: Path, check: str) -> None:
    """Without the lease, the OS's list of open files alone keeps the writer's bytes; the
    lease is not taken (checked in the kernel's own list of leases, where there is one)."""
    session = commit_session(repo, SESSION, SYNTHETIC["pi"][0][1]())
    before = session.read_bytes()
    env = env_with(check)
    writer = Writer(session)
    try:
        writer.append(APPENDED % 1)
        done = run(repo, "compress", "--force", "--keep-turns", "1", SESSION, env=env)
        writer.append(APPENDED % 2)
    finally:
        writer.close()
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"in use by another process (process {writer.process.pid})" in done.stderr
    assert session.read_bytes() == before + APPENDED % 1 + APPENDED % 2
    done = run(repo, "compress", "--force", "--keep-turns", "1", SESSION, env=env)
    assert done.returncode == 0 and "compressed" in done.stdout, done.stderr


@linux_only("/proc/locks lists the leases held")
def test_the_forced_path_takes_no_lease(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from click.testing import CliRunner

    from gitclaw_compress.cli import cli as command

    original = commit_session(repo, SESSION, SYNTHETIC["pi"][0][1]()).read_bytes()
    leases: dict[str, bool] = {}

    def look(target: Path) -> None:
        mine = [row for row in Path("/proc/locks").read_text().splitlines() if "LEASE" in row]
        leases[os.environ.get(live.FORCE_ENV, "default")] = any(
            f" {os.getpid()} " in row for row in mine
        )

    monkeypatch.chdir(repo)
    monkeypatch.setattr(fileio, "before_rename", look)
    for forced in (None, "psutil"):
        if forced is not None:
            monkeypatch.setenv(live.FORCE_ENV, forced)
        result = CliRunner().invoke(command, ["compress", "--force", "--keep-turns", "1", SESSION])
        assert result.exit_code == 0, result.output
        (repo / SESSION).write_bytes(original)  # again the uncompressed one
    assert leases == {"default": True, "psutil": False}


def test_every_open_counts_where_the_mode_cannot_be_told(repo: Path) -> None:
    """macOS's and Windows' rule: a reader keeps the file for one run more; Linux's list of
    modes lets a reader's file be compressed."""
    session = commit_session(repo, SESSION, SYNTHETIC["pi"][0][1]())
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; f = open(sys.argv[1], 'rb'); print(1, flush=True); sys.stdin.read()",
            str(session),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stdin is not None
    try:
        assert reader.stdout.readline() == b"1\n"
        held = run(
            repo, "compress", "--force", "--keep-turns", "1", SESSION, env=env_with("any-mode")
        )
        read = run(
            repo, "compress", "--force", "--keep-turns", "1", SESSION, env=env_with("psutil")
        )
    finally:
        reader.stdin.close()
        reader.wait()
        reader.stdout.close()
    assert held.returncode == 0 and "in use by another process" in held.stderr, held.stderr
    assert read.returncode == 0 and "compressed" in read.stdout, read.stderr


def home_of_codex(root: Path, keeps_open: bool = True) -> AgentHome:
    return AgentHome(
        "codex",
        root,
        ("sessions/**/*.jsonl",),
        None,
        ("codex", "@openai/codex"),
        keeps_open=keeps_open,
    )


def test_without_open_files_an_agent_that_keeps_its_file_open_holds_its_store(
    tmp_path: Path,
) -> None:
    """The rule where no open file can be listed, by the agent's facts, each way."""
    rollout = tmp_path / "sessions" / "rollout-a.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(b"{}\n")
    codex = live.Running(1, ["/usr/lib/node_modules/@openai/codex/bin/codex.js", "exec"], "")
    other = live.Running(2, ["C:\\Program Files\\Git\\usr\\bin\\bash.exe"], "")
    home = home_of_codex(tmp_path)
    assert live_sessions(home, [codex], open_files_listed=False) == {rollout}
    assert live_sessions(home, None, open_files_listed=False) == {rollout}  # cannot tell
    assert live_sessions(home, [other], open_files_listed=False) == set()
    assert live_sessions(home, [codex], open_files_listed=True) == set()  # the list tells
    assert live_sessions(home_of_codex(tmp_path, False), [codex], False) == set()
    assert runs(home, ["C:\\Users\\u\\AppData\\Roaming\\npm\\codex.cmd", "exec"])
    assert runs(home, ["codex"]) and not runs(home, ["codexer"])


def test_copilot_marks_the_session_it_runs(tmp_path: Path) -> None:
    """Copilot CLI keeps `inuse.<pid>.hold` beside the events of the session it runs: that
    session is live while that process runs, on every platform."""
    from gitclaw_compress.formats.copilot.home import home

    root = tmp_path / ".copilot"
    events = root / "session-state" / "s-1" / "events.jsonl"
    events.parent.mkdir(parents=True)
    events.write_bytes(b"{}\n")
    (events.parent / "inuse.4242.hold").write_bytes(b"")
    copilot = home({"HOME": str(tmp_path)})
    running = live.Running(4242, ["copilot"], "")
    assert live_sessions(copilot, [running], open_files_listed=True) == {events}
    assert live_sessions(copilot, [], open_files_listed=True) == set()  # a stale mark
    assert live_sessions(copilot, None, open_files_listed=True) == {events}  # cannot tell


# The real codex, holding its rollout open


@contextlib.contextmanager
def silent_model() -> Iterator[str]:
    """A model server that takes every connection and never answers: the agent waits for
    it, with its session open, until the test ends it."""
    listener = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                taken.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in taken:
            connection.close()


def end_tree(process: subprocess.Popen[bytes]) -> None:
    """Ask the agent and its children to end (Copilot CLI then removes the marks it keeps
    in its shared package cache), and kill whatever still runs after the guard time."""
    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(True)]
    except psutil.Error:
        tree = []
    for member in tree:
        with contextlib.suppress(psutil.Error):
            member.terminate()
    _, alive = psutil.wait_procs(tree, timeout=WAIT_SECONDS)
    for member in alive:
        with contextlib.suppress(psutil.Error):
            member.kill()
    process.wait()


@pytest.fixture
def codex_running(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, Path]]:
    """The real `codex` resuming a rollout of its store, waiting for the model: its env,
    the rollout it holds open, and another rollout of the store at rest."""
    require_agent("codex")
    transcript = tmp_path / "rollout.jsonl"
    transcript.write_bytes(session_bytes("codex"))
    with silent_model() as url:
        where = place_codex(transcript, tmp_path, url, "next")
        resting = where.placed.with_name(where.placed.name.replace("rollout-", "rollout-0"))
        resting.write_bytes(session_bytes("codex"))
        for path in (where.placed, resting):
            os.utime(path, (OLD, OLD))
        config = Path(where.env["HOME"]) / ".config" / "gitclaw-compress" / "compression.json"
        config.parent.mkdir(parents=True)
        config.write_bytes(orjson.dumps(THRESHOLD_ZERO))
        codex = subprocess.Popen(
            where.argv,
            cwd=where.workdir,
            env=where.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv(live.FORCE_ENV, "psutil")
                while not live.writers(where.placed):  # until codex holds it open
                    assert codex.poll() is None, "codex ended before it opened its rollout"
                    assert time.monotonic() < deadline, "codex never opened its rollout"
            env = {**where.env, "XDG_CONFIG_HOME": str(config.parent.parent)}
            env["GITCLAW_COMPRESS_RULE_CACHE"] = os.environ["GITCLAW_COMPRESS_RULE_CACHE"]
            yield env, where.placed, resting
        finally:
            end_tree(codex)


def stores(env: dict[str, str], check: str | None, *args: str) -> dict[str, Any]:
    done = run(Path(env["HOME"]), "stores", "codex", "--json", *args, env=env_with(check, **env))
    assert done.returncode == 0, done.stderr
    parsed = orjson.loads(done.stdout)
    [store] = parsed["stores"]
    assert isinstance(store, dict)
    return {**store, "live_check": parsed["live_check"]}


@linux_only("the hook's pass is waited for through /proc and pidfd")
def test_the_real_codex_keeps_its_rollout_whatever_the_check(
    codex_running: tuple[dict[str, str], Path, Path],
) -> None:
    env, held, resting = codex_running
    before = {path: path.read_bytes() for path in (held, resting)}
    rel = str(held.relative_to(Path(env["CODEX_HOME"]))).replace(os.sep, "/")
    rest_rel = str(resting.relative_to(Path(env["CODEX_HOME"]))).replace(os.sep, "/")
    # No check at all, or no list of open files: codex runs, so none of its rollouts.
    for check in ("none", "processes"):
        found = stores(env, check, "--dry-run")
        assert sorted(found["in_use"]) == sorted([rel, rest_rel]), found
        assert "none" in str(found["live_check"])
    done = run(Path(env["HOME"]), "compress", str(held), env=env_with("processes", **env))
    assert done.returncode == 0 and done.stderr.count("\n") == 1, done.stderr
    assert "its agent is running and this machine cannot tell" in done.stderr
    # Linux's list of open files (no lease), and every open counting (macOS, Windows):
    # the rollout codex holds is left alone, counted once; the other one is compressed.
    for check in ("any-mode", "psutil"):
        found = stores(env, check)
        assert found["in_use"] == [rel], found
        assert "open files" in str(found["live_check"])
    # Not rewritten: what codex appended (its new turn) follows the bytes it resumed.
    assert held.read_bytes().startswith(before[held])
    assert resting.read_bytes() != before[resting]
    restored = run(Path(env["HOME"]), "restore", str(resting), "-o", "-", env=env_with(None, **env))
    assert restored.stdout.encode() == before[resting]
    # The agent hook (Codex's notify) starts a pass that leaves it alone too.
    hook = [sys.executable, "-m", "gitclaw_compress", "hook", "codex", '{"type": "x"}']
    subprocess.run(hook, env=env_with("psutil", **env), check=True, capture_output=True)
    lines = wait_for_hooks(env)
    assert any("codex: pass ended: exit 0" in line for line in lines), lines
    assert held.read_bytes().startswith(before[held])


@linux_only("the hook's pass is waited for through /proc and pidfd")
@pytest.mark.parametrize("check", ["psutil", "any-mode"])
def test_a_plain_writer_keeps_a_store_session_from_stores_and_the_hook(
    tmp_path: Path, check: str
) -> None:
    home = Path(os.environ["HOME"])
    held = home / ".claude" / "projects" / "-home-u-proj" / "0e0c2e0a-1111-4222-8333-4444.jsonl"
    resting = held.with_name("8f1c2e0a-1111-4222-8333-4444.jsonl")
    held.parent.mkdir(parents=True)
    for path in (held, resting):
        path.write_bytes(session_bytes("claude"))
        os.utime(path, (OLD, OLD))
    config = home / ".config" / "gitclaw-compress" / "compression.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(orjson.dumps(THRESHOLD_ZERO))
    before = held.read_bytes()
    env = env_with(check)
    with held_open(held):
        done = run(tmp_path, "stores", "claude", "--json", env=env)
        assert done.returncode == 0, done.stderr
        [store] = orjson.loads(done.stdout)["stores"]
        assert store["in_use"] == [str(held.relative_to(home / ".claude"))]  # once
        assert [file["status"] for file in store["files"]] == ["compressed"]
        text = run(tmp_path, "stores", "claude", env=env).stdout
        alike = ", read and write alike" if check == "any-mode" else ""
        platform = live.platform_name()
        first = f"gitclaw-compress: live-writer check: open files{alike} ({platform})"
        assert text.splitlines()[0] == first  # no lease: every run says it
        assert "1 in use by a running agent (left alone)" in text
        payload = '{"session_id": "s-1", "transcript_path": "/x.jsonl", "reason": "other"}'
        hook = [sys.executable, "-m", "gitclaw_compress", "hook", "claude"]
        subprocess.run(hook, input=payload, text=True, env=env, check=True)
        lines = wait_for_hooks(env)
    assert any("claude: pass ended: exit 0" in line for line in lines), lines
    assert held.read_bytes() == before
    assert resting.read_bytes() != before


def test_the_real_copilot_marks_the_session_it_runs_and_stores_leaves_it(
    tmp_path: Path,
) -> None:
    """Copilot CLI appends to events.jsonl by its path, and marks the session it runs with
    `inuse.<pid>.hold`: with no list of open files, that mark and its running process keep
    the session; once the process is gone, its leftover mark does not."""
    require_agent("copilot")
    transcript = tmp_path / "events.jsonl"
    transcript.write_bytes(session_bytes("copilot"))
    with silent_model() as url:
        where = place_copilot(transcript, tmp_path, url, "next")
        os.utime(where.placed, (OLD, OLD))
        before = where.placed.read_bytes()
        home = Path(where.env["HOME"])
        config = home / ".config" / "gitclaw-compress" / "compression.json"
        config.parent.mkdir(parents=True)
        config.write_bytes(orjson.dumps(THRESHOLD_ZERO))
        env = {**where.env, "XDG_CONFIG_HOME": str(config.parent.parent)}
        env["GITCLAW_COMPRESS_RULE_CACHE"] = os.environ["GITCLAW_COMPRESS_RULE_CACHE"]
        rel = str(where.placed.relative_to(home / ".copilot")).replace(os.sep, "/")
        copilot = subprocess.Popen(
            where.argv,
            cwd=where.workdir,
            env=where.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while not list(where.placed.parent.glob("inuse.*.hold")):
                assert copilot.poll() is None, "copilot ended before it marked its session"
                assert time.monotonic() < deadline, "copilot never marked its session"
            for check in ("processes", "none"):
                done = run(home, "stores", "copilot", "--json", env=env_with(check, **env))
                assert done.returncode == 0, done.stderr
                [store] = orjson.loads(done.stdout)["stores"]
                assert store["in_use"] == [rel], store
        finally:
            end_tree(copilot)
    assert where.placed.read_bytes().startswith(before)
    # Ended: the session is no longer in use, whether or not its mark was left behind
    # (written by copilot just now, it would wait for the quiet minutes).
    os.utime(where.placed, (OLD, OLD))
    done = run(home, "stores", "copilot", "--json", env=env_with("processes", **env))
    [store] = orjson.loads(done.stdout)["stores"]
    assert store["in_use"] == [] and store["files"][0]["status"] == "compressed", store
