"""A session that an agent is still writing to is never renamed away from the agent.

The writer is a real second process that holds the file open in append mode; the test
talks to it through pipes (append now, close now), never through sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import commit_session
from format_cases import SYNTHETIC
from synthetic import typical_session

from gitclaw_compress.cli import cli
from gitclaw_compress.interrupts import STAGE_ENV
from gitclaw_compress.store import fileio
from gitclaw_compress.store.fileio import TEMP_PREFIX

SESSION = ".GITCLAW/state/sessions/s.jsonl"
APPENDED = b'{"type":"custom","id":"%08d","parentId":null,"timestamp":"2026-02-20T12:00:00.000Z"}\n'

WRITER = """
import sys
import time
with open(sys.argv[1], "ab", buffering=0) as handle:
    print("open", flush=True)
    for command in sys.stdin:
        if command.strip() == "close":
            break
        handle.write(command.split(" ", 1)[1].encode())
        print("written", flush=True)
print("closed", flush=True)
"""


class Writer:
    """An agent-like process with the session open for appending."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.read() == "open"

    def read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def append(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("append " + line.decode())
        self.process.stdin.flush()
        assert self.read() == "written"

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("close\n")
        self.process.stdin.flush()
        assert self.read() == "closed"
        self.process.wait()


# The first synthetic session of each format (tests/format_cases.py): every test that takes
# `session` runs on all four formats.
FORMATS = {name: cases[0][1] for name, cases in SYNTHETIC.items()}


@pytest.fixture(params=list(FORMATS))
def session(repo: Path, request: pytest.FixtureRequest) -> Path:
    return commit_session(repo, SESSION, FORMATS[request.param]())


@pytest.fixture
def in_repo(repo: Path) -> Iterator[Path]:
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        yield repo
    finally:
        os.chdir(cwd)


@pytest.fixture(autouse=True)
def sigint_as_python_starts() -> Iterator[None]:
    """These tests send SIGINT to this process: its handler and the main thread's mask are
    set as a fresh interpreter has them, whatever an earlier test left behind."""
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    masked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, masked)
        signal.signal(signal.SIGINT, handler)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_writer_holding_the_file_open_keeps_every_appended_byte(
    in_repo: Path, session: Path
) -> None:
    before = session.read_bytes()
    writer = Writer(session)
    try:
        writer.append(APPENDED % 1)
        code, out, err = run("compress", "--force", "--keep-turns", "1", "--stage", SESSION)
        writer.append(APPENDED % 2)
    finally:
        writer.close()
    assert code == 0, err  # the hook must not block the commit
    assert "in use by another process" in err and "nothing was changed" in err
    assert err.count("\n") == 1, err
    assert "staged" not in out
    assert session.read_bytes() == before + APPENDED % 1 + APPENDED % 2
    # Once the agent is done, the next run compresses it, and restore gives it all back.
    code, out, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 0 and "compressed" in out, err
    code, out, _ = run("restore", SESSION, "-o", "-")
    assert out.encode() == before + APPENDED % 1 + APPENDED % 2


def lease_breaking() -> bool:
    """Whether a lease on some file is being broken by an open (see /proc/locks)."""
    return "BREAKING" in Path("/proc/locks").read_text()


def test_an_append_between_the_last_check_and_the_rename_is_not_lost(
    in_repo: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent that opens the file for each append does so at the worst moment."""
    before = session.read_bytes()
    appender: list[subprocess.Popen[bytes]] = []

    def append_now(target: Path) -> None:
        # Not in session's folder: temp files live where `git add -A` never looks.
        assert not list(target.parent.glob(TEMP_PREFIX + "*"))
        appender.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; open(sys.argv[1], 'ab').write(sys.argv[2].encode())",
                    str(target),
                    (APPENDED % 3).decode(),
                ]
            )
        )
        # Wait until its open is blocked on our lease, or it is done (no lease here).
        while appender[0].poll() is None and not lease_breaking():
            pass

    monkeypatch.setattr(fileio, "before_rename", append_now)
    code, out, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert appender[0].wait() == 0
    monkeypatch.setattr(fileio, "before_rename", None)
    data = session.read_bytes()
    if data.startswith(before):  # the rename was taken back: the writer kept the old file
        assert data == before + APPENDED % 3
        assert code == 0 and "in use by another process" in err, err
    else:  # the append landed before the lease (no leases here): it is in the new file
        assert data.endswith(APPENDED % 3)
        code, out, _ = run("restore", SESSION, "-o", "-")
        assert out.encode() == before + APPENDED % 3


@pytest.mark.parametrize("other_thread", [False, True], ids=["alone", "beside-a-thread"])
def test_an_interrupt_after_the_rename_says_the_file_was_compressed(
    in_repo: Path,
    session: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    other_thread: bool,
) -> None:
    """The SIGINT comes at the injection point just after the rename (held back until the
    rename's block ends, where its handler runs): deterministic, whatever the load.

    Beside another live thread that does not block SIGINT (as the secret scan's thread was
    while it loaded its rules on a loaded machine), a signal sent to the process went to
    that thread, and its handler ran in the main thread wherever it was, inside the block:
    the test points now send to the main thread, and the scan's thread blocks SIGINT."""
    stop = threading.Event()
    neighbour = threading.Thread(target=stop.wait, daemon=True)
    if other_thread:
        neighbour.start()
        request.addfinalizer(stop.set)
    before = session.read_bytes()
    monkeypatch.setenv(STAGE_ENV, "renamed")
    code, _, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    monkeypatch.delenv(STAGE_ENV)
    assert code == 130
    assert "interrupted after compressing" in err and "nothing was changed" not in err, err
    assert session.read_bytes() != before
    code, out, _ = run("restore", SESSION, "-o", "-")
    assert out.encode() == before
    assert not list((in_repo / ".git" / "gitclaw-compress" / "tmp").iterdir())


def test_an_interrupt_before_the_archive_commit_changes_nothing_and_says_so(
    in_repo: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitclaw_compress.store.archive import ArchiveWriter

    before = session.read_bytes()
    original_commit = ArchiveWriter.commit

    def interrupted(self: ArchiveWriter, message: str) -> str | None:
        os.kill(os.getpid(), signal.SIGTERM)  # SIGTERM unwinds like Ctrl-C
        return original_commit(self, message)

    monkeypatch.setattr(ArchiveWriter, "commit", interrupted)
    code, _, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 130 and "interrupted; nothing was changed" in err, err
    assert session.read_bytes() == before
    assert not list((in_repo / ".git" / "gitclaw-compress" / "tmp").iterdir())
    assert not list(session.parent.glob(TEMP_PREFIX + "*"))


def test_a_killed_fast_import_is_one_line_and_changes_nothing(
    in_repo: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitclaw_compress.store.archive import ArchiveWriter

    before = session.read_bytes()
    original_start = ArchiveWriter._start

    # Killed as soon as it runs: before the first payload, or, when every line references
    # a committed blob (v2 markers), before the archive commit.
    def start_then_kill(self: ArchiveWriter) -> subprocess.Popen[bytes]:
        process = original_start(self)
        if process.poll() is None:
            process.kill()  # SIGKILL to the child alone, as a fault campaign does
            process.wait()
        return process

    monkeypatch.setattr(ArchiveWriter, "_start", start_then_kill)
    code, _, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 3, err
    assert err.count("\n") == 1 and "git fast-import failed" in err, err
    assert "killed by signal 9" in err and "nothing was changed" in err, err
    assert session.read_bytes() == before


def test_temp_files_of_killed_runs_are_removed_by_the_next_run(
    in_repo: Path, session: Path
) -> None:
    tmp = in_repo / ".git" / "gitclaw-compress" / "tmp"
    tmp.mkdir(parents=True)
    stale = tmp / (fileio._temp_prefix(session) + "killed")
    stale.write_bytes(b"half written")
    other = tmp / (fileio._temp_prefix(session.with_name("other.jsonl")) + "running")
    other.write_bytes(b"another session's run")
    code, _, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 0, err
    assert not stale.exists() and other.exists()
    stale.write_bytes(b"a killed in-place restore")
    code, _, err = run("restore", SESSION)
    assert code == 0, err
    assert not stale.exists() and other.exists()


def test_an_interrupt_while_fast_import_finishes_is_reported_without_internals(
    in_repo: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after fast-import's input was closed: aborting must not write to it again."""
    from gitclaw_compress.store.archive import ArchiveWriter

    before = session.read_bytes()
    original_finish = ArchiveWriter._finish
    calls: list[int] = []

    def interrupted_finish(self: ArchiveWriter, process: subprocess.Popen[bytes]) -> None:
        calls.append(1)
        if len(calls) == 1:
            assert process.stdin is not None
            process.stdin.close()
            raise KeyboardInterrupt
        original_finish(self, process)

    monkeypatch.setattr(ArchiveWriter, "_finish", interrupted_finish)
    code, _, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 130 and err == "gitclaw-compress: interrupted; nothing was changed\n", err
    assert session.read_bytes() == before
    assert len(calls) == 2  # abort finished fast-import cleanly


def test_a_keep_file_left_by_a_fast_import_that_gc_cut_short_does_not_fail_the_next_run(
    in_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git gc --prune=now` during a run can remove fast-import's temp pack after fast-import
    wrote the pack's .keep: the run fails in one line and the .keep stays, alone. The next
    run writes the same objects; within the same second that is the same pack, whose .keep
    fast-import cannot create. The clock is fixed here, so that the pack is the same."""
    monkeypatch.setattr(time, "time", lambda: 1_771_587_860.0)
    session = in_repo / SESSION  # never committed: every payload goes to fast-import
    session.parent.mkdir(parents=True)
    # Over fast-import's unpack limit (100 objects), so that it writes a pack.
    session.write_bytes(typical_session(turns=14).data())
    before = session.read_bytes()
    code, _, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 0, err
    packs = in_repo / ".git" / "objects" / "pack"
    written = list(packs.glob("pack-*.pack"))
    assert len(written) == 1
    # The state the cut-short run leaves: no archive, the old session, the .keep alone.
    subprocess.run(["git", "update-ref", "-d", "refs/gitclaw/archive"], check=True)
    for suffix in (".pack", ".idx", ".rev"):
        written[0].with_suffix(suffix).unlink(missing_ok=True)
    written[0].with_suffix(".keep").write_bytes(b"fast-import version 2.39.5\n")
    session.write_bytes(before)
    code, out, err = run("compress", "--force", "--keep-turns", "1", SESSION)
    assert code == 0 and "compressed" in out, err
    code, out, _ = run("restore", SESSION, "-o", "-")
    assert out.encode() == before
