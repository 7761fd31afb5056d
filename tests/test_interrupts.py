"""A real SIGINT at named points of real runs: exit 130, one line, no traceback, and the
line says what is on disk ("nothing was changed" only when nothing was).

The process sends itself SIGINT at the stage named by GITCLAW_COMPRESS_INTERRUPT_AT (see
gitclaw_compress/interrupts.py): deterministic, no sleeps, no timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import commit_session, git
from format_cases import SYNTHETIC
from secret_fixtures import planted
from synthetic import typical_session

from gitclaw_compress.core.lines import MARKER_BYTES
from gitclaw_compress.interrupts import STAGE_ENV
from gitclaw_compress.store.archive import Repository

FORMATS = {name: cases[0][1] for name, cases in SYNTHETIC.items()}

SESSION = ".GITCLAW/state/sessions/s.jsonl"
COMPRESS = ("compress", "--force", "--keep-turns", "1", SESSION)
# Where each stage lies: before anything changed, or after the session was replaced.
BEFORE = ["start", "imported", "parse", "invoke", "loading", "archived"]
AFTER = ["renamed", "compressed", "exit"]


def run_at(
    repo: Path, stage: str, *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """The command interrupted at `stage`; a test of a hang sets `timeout`, which only ends
    the test and is never the answer."""
    env = {**os.environ, STAGE_ENV: stage}
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def assert_one_line_130(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


# Every stage on pi's session; on the other formats, one stage of each kind.
COMPRESS_CASES = [("pi", stage) for stage in BEFORE + AFTER] + [
    (name, stage) for name in FORMATS if name != "pi" for stage in ("archived", "renamed")
]


@pytest.mark.parametrize(("name", "stage"), COMPRESS_CASES)
def test_an_interrupted_compress_says_what_is_on_disk(repo: Path, name: str, stage: str) -> None:
    path = commit_session(repo, SESSION, FORMATS[name]())
    before = path.read_bytes()
    error = assert_one_line_130(run_at(repo, stage, *COMPRESS))
    if stage in BEFORE:
        assert "interrupted; nothing was changed" in error, error
        assert path.read_bytes() == before
    else:
        assert f"interrupted after compressing {SESSION}" in error, error
        assert "nothing was changed" not in error
        assert path.read_bytes() != before
        restored = run_at(repo, "none", "restore", SESSION, "-o", "-")
        assert restored.returncode == 0 and restored.stdout.encode() == before


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_run_killed_at_any_stage_leaves_the_old_file_or_the_new_one(
    repo: Path, name: str
) -> None:
    """SIGKILL (no handler, no cleanup) at each stage of a compress run: the file is the old
    one or the new one, the next run finishes the job, and verify and restore agree."""
    original = FORMATS[name]()
    path = commit_session(repo, SESSION, original)
    for stage in ("archived", "renamed") if name == "pi" else ("renamed",):
        killed = run_at(repo, f"{stage}:9", *COMPRESS)
        assert killed.returncode == -9, (stage, killed.stderr)
        data = path.read_bytes()
        assert data == original or MARKER_BYTES in data, stage
        assert (data == original) == (stage in ("loading", "archived")), stage
        again = run_at(repo, "none", *COMPRESS)
        assert again.returncode == 0, (stage, again.stderr)
        assert run_at(repo, "none", "verify", SESSION).returncode == 0, stage
        restored = run_at(repo, "none", "restore", SESSION, "-o", "-")
        assert restored.returncode == 0 and restored.stdout.encode() == original, stage
        git(repo, "checkout", "--", SESSION)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_second_run_on_the_same_session_is_refused_while_the_first_holds_it(
    repo: Path, name: str
) -> None:
    """Two runs race for one session: the one that does not hold the lock stops in one line
    and changes nothing (the lock is held here, so the race has one outcome)."""
    path = commit_session(repo, SESSION, FORMATS[name]())
    assert run_at(repo, "none", *COMPRESS).returncode == 0  # restore has work to do too
    before = path.read_bytes()
    with Repository(repo) as repository, repository.lock(SESSION, SESSION):
        for command in (COMPRESS, ("restore", SESSION)):
            done = run_at(repo, "none", *command)
            assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
            assert "locked by another gitclaw-compress run" in done.stderr
            assert "nothing was changed" in done.stderr
            assert path.read_bytes() == before


@pytest.mark.parametrize("stage", ["renamed", "finalizer", "exit"])
def test_an_interrupted_restore_says_what_is_on_disk(repo: Path, stage: str) -> None:
    path = commit_session(repo, SESSION, typical_session(turns=6).data())
    original = path.read_bytes()
    assert run_at(repo, "none", *COMPRESS).returncode == 0
    git(repo, "commit", "-qam", "compressed")  # v2 lines: read through blob readers
    compressed = path.read_bytes()
    error = assert_one_line_130(run_at(repo, stage, "restore", SESSION))
    if stage == "finalizer":  # a reader stopped (maybe in a finalizer) before the rename
        assert path.read_bytes() in (compressed, original)
        changed = path.read_bytes() == original
        assert ("nothing was changed" in error) != changed, error
    else:
        assert f"interrupted after restoring {SESSION}" in error, error
        assert path.read_bytes() == original


@pytest.mark.parametrize("stage", ["start", "finalizer", "exit"])
def test_an_interrupted_read_only_command_changes_nothing(repo: Path, stage: str) -> None:
    path = commit_session(repo, SESSION, typical_session(turns=6).data())
    assert run_at(repo, "none", *COMPRESS).returncode == 0
    git(repo, "commit", "-qam", "compressed")
    compressed = path.read_bytes()
    for command in (("verify", SESSION), ("restore", SESSION, "-o", "-")):
        done = run_at(repo, stage, *command)
        if stage == "finalizer" and done.returncode != 130:
            continue  # this command stopped no reader
        error = assert_one_line_130(done)
        assert "interrupted; nothing was changed" in error, error
        assert path.read_bytes() == compressed


def test_an_interrupt_while_git_writes_an_answer_ends_git_too(repo: Path) -> None:
    """SIGINT in `redact` just after `git cat-file --batch` was asked for a session version
    larger than a pipe holds: git sits in its own process group (the signal never reaches
    it), blocked writing an answer nobody reads. The reader must stop it, not wait for it
    to read a stdin it never gets back to (that hung, before)."""
    line, _secret = planted(5)["github"]
    data = typical_session(turns=6).data()
    data = data.replace(b"task 0", b"task 0: " + orjson.dumps(line)[1:-1], 1)
    path = commit_session(repo, SESSION, data)
    assert len(data) > 1 << 17  # more than a pipe's 64 KiB
    (repo / "compression.json").write_bytes(b'{"scan": {"block": false}}')
    assert run_at(repo, "none", *COMPRESS).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    compressed = path.read_bytes()
    done = run_at(repo, "object-asked", "redact", "--all", SESSION, timeout=120)
    error = assert_one_line_130(done)
    assert "interrupted; nothing was changed" in error, error
    assert path.read_bytes() == compressed


# Sends SIGINT when a module named by the test is first looked for, then runs the console
# script's main: an interrupt at that exact point of start-up, with no timing.
INTERRUPT_AT_IMPORT = """
import os, signal, sys

AT = sys.argv.pop(1)

class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Hook())
from gitclaw_compress.entry import main
main()
"""


@pytest.mark.parametrize(
    "module", ["dataclasses", "json", "click", "gitclaw_compress.commands.status"]
)
def test_an_interrupt_inside_the_start_up_imports_is_one_line_and_130(
    repo: Path, module: str
) -> None:
    """orjson's init imports dataclasses and json (and uuid, datetime) and does not check that
    they came: a KeyboardInterrupt there left it half made, and the process died of a
    segfault (exit -11, no message). Signals now wait until the imports are done."""
    commit_session(repo, SESSION, typical_session(turns=2).data())
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT_IMPORT, module, "status", SESSION],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    error = assert_one_line_130(done)
    assert "interrupted; nothing was changed" in error, error


@pytest.mark.parametrize("name", ["pi", "claude"])
def test_a_ctrl_c_that_leaves_the_import_lock_held_still_ends_the_run(
    repo: Path, name: str
) -> None:
    """Issue 32: a Ctrl-C landed in the import machinery's module-lock callback (a
    finalizer), which swallowed it and left the global import lock held by the main
    thread; the scan thread then waited on its next import forever and the main thread
    joined it: the run never ended. The test point does exactly that, just after the scan
    thread started. Now the scan thread imports nothing and the wait for it ends on the
    recorded interrupt: exit 130, one line, nothing changed."""
    path = commit_session(repo, SESSION, FORMATS[name]())
    before = path.read_bytes()
    done = run_at(repo, "scan-started:import-lock", *COMPRESS, timeout=120)
    error = assert_one_line_130(done)
    assert "interrupted; nothing was changed" in error, error
    assert path.read_bytes() == before


# Runs the console script's main and prints every module a thread other than the main one
# imported (the audit event fires only for a module not loaded yet: one that takes a lock).
THREAD_IMPORTS = """
import sys, threading

imported = []

def hook(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        imported.append(args[0])

sys.addaudithook(hook)
sys.argv[0] = "gitclaw-compress"
from gitclaw_compress.entry import main
try:
    main()
finally:
    print("thread imports:", imported)
"""


@pytest.mark.parametrize("name", list(FORMATS))
def test_the_scan_thread_imports_nothing(repo: Path, name: str) -> None:
    """Every module the scan beside the compression runs (the engine, the rules, a finding's
    report) is imported by the main thread before the thread starts, with signals held."""
    line, _secret = planted(3)["github"]
    data = FORMATS[name]().replace(b'"text":"', b'"text":"' + orjson.dumps(line)[1:-1], 1)
    assert orjson.dumps(line)[1:-1] in data
    commit_session(repo, SESSION, data)
    (repo / "compression.json").write_bytes(b'{"scan": {"block": false}}')
    done = subprocess.run(
        [sys.executable, "-c", THREAD_IMPORTS, *COMPRESS],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "secret" in done.stderr  # the scan ran and found the planted one
    assert "thread imports: []" in done.stdout, done.stdout
