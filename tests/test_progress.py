"""The progress line of long runs, seen through a real pseudo-terminal: it shows from the
start of a run over many sessions (drawn before the first session is read), says what the
run does ("checking" under --dry-run), is gone when the run ends, and nothing of it reaches
a pipe, --json or a CI log."""

from __future__ import annotations

import io
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from synthetic import typical_session

from gitclaw_compress.interrupts import STAGE_ENV
from gitclaw_compress.units import human_bytes

# POSIX only: Windows skips this module (see LINUX_ONLY_MODULES in conftest.py).
fcntl = pytest.importorskip("fcntl", reason="POSIX only")
termios = pytest.importorskip("termios", reason="POSIX only")

SESSIONS = ".GITCLAW/state/sessions"
COUNT = 24
CLEAR = "\r\x1b[K"
FINDING = "finding sessions…"


@pytest.fixture
def many(repo: Path) -> Path:
    """A repository with COUNT small pi sessions, committed."""
    folder = repo / SESSIONS
    folder.mkdir(parents=True)
    for number in range(COUNT):
        (folder / f"s{number:02}.jsonl").write_bytes(typical_session(turns=2).data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent runs")
    return repo


def environment(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    return {**env, **extra}


def in_terminal(cwd: Path, *args: str, **env: str) -> tuple[int, str]:
    """Run the tool with stdin, stdout and stderr on a real pseudo-terminal (200 columns);
    everything the terminal received, as it came."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environment(**env),
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child is gone and the terminal closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return process.wait(), b"".join(chunks).decode().replace("\r\n", "\n")


def in_pipe(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment(**env),
    )


def screen(received: str) -> list[str]:
    """The lines a person is left with: a cleared line is gone."""
    lines: list[str] = []
    current = ""
    for token in re.split(f"({re.escape(CLEAR)}|\n)", received):
        if token == CLEAR:
            current = ""
        elif token == "\n":
            lines.append(current)
            current = ""
        else:
            current += token
    return [*lines, current] if current else lines


def drawn(received: str) -> list[str]:
    """Every progress line drawn, in order (a progress line never ends a line: what does is
    output printed once the line was cleared)."""
    return [part for part in received.split(CLEAR)[1:] if part and "\n" not in part]


@pytest.mark.parametrize(
    ("args", "verb"),
    [
        (("status", "--all"), "reading"),
        (("context", "--all"), "reading"),
        (("verify",), "verifying"),
        (("scan",), "scanning"),
        (("compress", "--all", "--dry-run", "--force"), "checking"),
        (("prune", "--dry-run", *(f"{SESSIONS}/s{n:02}.jsonl" for n in range(COUNT))), "checking"),
    ],
)
def test_a_long_run_shows_progress_on_a_terminal_and_nothing_in_a_pipe(
    many: Path, args: tuple[str, ...], verb: str
) -> None:
    code, received = in_terminal(many, *args)
    piped = in_pipe(many, *args)
    assert code == piped.returncode, (received, piped.stderr)
    every = drawn(received)
    # Drawn from the start: while the sessions are looked for (PATHs given: no need), then
    # before the first session is done, with the count of all of them.
    first = FINDING
    if "prune" in args:  # sessions named: none to look for
        first = f"checking 0/{COUNT} sessions, 0 B of 1.2 MB: {SESSIONS}/s00.jsonl"
    assert every and every[0] == first, every[:2]
    lines = [line for line in every if line != FINDING]
    assert lines and lines[0].startswith(f"{verb} 0/{COUNT} sessions"), lines[:3]
    assert all(line.startswith(verb) for line in lines), lines
    assert any(re.search(r"\.GITCLAW/state/sessions/s\d\d\.jsonl$", line) for line in lines)
    assert any(re.search(r"sessions, [\d.]+ K?B of [\d.]+ MB: ", line) for line in lines), lines
    # Gone at the end: the terminal is left with what a pipe gets, no more (stdout and
    # stderr are two pipes there: their order between them is not kept).
    assert sorted(screen(received)) == sorted((piped.stdout + piped.stderr).splitlines())
    assert CLEAR not in piped.stdout + piped.stderr and verb not in piped.stderr


def test_a_dry_run_says_it_checks_and_never_that_it_compresses(many: Path) -> None:
    _, received = in_terminal(many, "compress", "--all", "--dry-run", "--force")
    assert drawn(received) and not any("compressing" in line for line in drawn(received))
    _, received = in_terminal(many, "compress", "--all", "--force")
    assert drawn(received)[1].startswith(f"compressing 0/{COUNT} sessions")


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("status", "--all", "--json"), {}),
        (("verify", "--json"), {}),
        (("status", "--all"), {"CI": "true"}),
        (("verify",), {"CI": "1"}),
    ],
)
def test_no_progress_in_json_nor_in_ci(
    many: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    _, received = in_terminal(many, *args, **env)
    assert CLEAR not in received, received[:300]


def test_restore_all_shows_progress_and_leaves_its_lines(many: Path) -> None:
    in_pipe(many, "compress", "--all", "--force", "--keep-turns", "1")
    code, received = in_terminal(many, "restore", "--all")
    assert code == 0, received
    assert drawn(received)[0] == FINDING
    assert drawn(received)[1].startswith(f"restoring 0/{COUNT} sessions, 0 B of ")
    shown = screen(received)
    assert len(shown) == COUNT + 1 and shown[-1].startswith(f"restored {COUNT} sessions")


def test_an_interrupted_run_over_many_sessions_lists_them_one_per_line(many: Path) -> None:
    done = in_pipe(
        many, "compress", "--all", "--force", "--keep-turns", "1", **{STAGE_ENV: "compressed"}
    )
    assert done.returncode == 130, done.stderr
    lines = done.stderr.splitlines()
    listed = [f"compressed {SESSIONS}/s{number:02}.jsonl" for number in range(COUNT)]
    assert lines[:-1] == listed, lines
    assert lines[-1] == (
        f"gitclaw-compress: error: interrupted after compressing {COUNT} sessions (listed "
        "above); every file is either the old one or the new one"
    )


def test_a_single_large_file_shows_its_bytes_as_they_are_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compress of one file names it at once, then counts its bytes (every redraw here)."""
    path = repo / SESSIONS / "big.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(typical_session(turns=8).data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one session")
    _, received = in_terminal(repo, "compress", "--force", "--keep-turns", "1", str(path))
    size = human_bytes(len(typical_session(turns=8).data()))
    assert drawn(received)[0] == f"compressing 0/1 session, 0 B of {size}: {SESSIONS}/big.jsonl"

    from gitclaw_compress.commands import progress as terminal
    from gitclaw_compress.ops.compress import Compression

    stream = io.StringIO()
    monkeypatch.setattr(terminal, "REDRAW_SECONDS", 0.0)
    shown = terminal.TerminalProgress(stream)
    git(repo, "checkout", "--", ".")  # the session as committed, before compress
    original = path.read_bytes()
    from gitclaw_compress.config import load_config
    from gitclaw_compress.store.archive import Repository

    repository = Repository(repo)
    with Compression(repository, dry_run=True, progress=shown) as run:
        shown.begin("checking", 1, len(original))
        shown.item(f"{SESSIONS}/big.jsonl", len(original))
        run.add(path, load_config(path, repo, None), keep_turns=1, force=True)
        run.finish()
    counted = re.findall(r"checking 0/1 session, ([\d.]+ K?B) of ", stream.getvalue())
    assert len(set(counted)) > 2 and counted[-1] == size, counted[-3:]


def test_an_interrupted_restore_all_lists_what_it_restored_one_per_line(many: Path) -> None:
    in_pipe(many, "compress", "--all", "--force", "--keep-turns", "1")
    done = in_pipe(many, "restore", "--all", **{STAGE_ENV: "exit"})
    assert done.returncode == 130, done.stderr
    lines = done.stderr.splitlines()
    assert lines[:-1] == [f"restored {SESSIONS}/s{number:02}.jsonl" for number in range(COUNT)]
    assert lines[-1] == (
        f"gitclaw-compress: interrupted after restoring {COUNT} files (listed above); every "
        "file is either the old one or the new one"
    )


def test_the_stores_pass_shows_progress_on_a_terminal_and_nothing_in_a_pipe(
    tmp_path: Path,
) -> None:
    """`stores` over an agent's store: the same line as compress, nothing in a pipe."""
    home = Path(os.environ["HOME"])
    folder = home / ".pi" / "agent" / "sessions" / "--home-u-proj--"
    folder.mkdir(parents=True)
    for number in range(COUNT):
        path = folder / f"2026-01-02T10-00-{number:02}-000Z_s.jsonl"
        path.write_bytes(typical_session(turns=2).data())
        os.utime(path, (1_700_000_000, 1_700_000_000))  # long ago: at rest
    config = home / ".config" / "gitclaw-compress" / "compression.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"session": {"sizeThresholdKB": 0, "turnThresholdBeforeCompress": 1}}')
    piped = in_pipe(tmp_path, "stores", "pi", "--dry-run")
    code, received = in_terminal(tmp_path, "stores", "pi", "--dry-run")
    assert code == piped.returncode == 0, (received, piped.stderr)
    every = drawn(received)
    # The pass scans first: while it waits for the rules it says so (when it has to wait:
    # tests/test_progress.py forces that below), then it checks each session.
    waits = ("loading the secret rules", "compiling the secret rules", "scanning for secrets")
    checks = [line for line in every if not line.startswith(waits)]
    assert checks and checks[0].startswith(f"checking 0/{COUNT} sessions"), every[:2]
    assert CLEAR not in piped.stdout + piped.stderr


class Recorded:
    """A Progress that keeps what it was told, and signals its first `begin`."""

    def __init__(self) -> None:
        import threading

        self.said: list[str] = []
        self.began = threading.Event()

    def begin(self, verb: str, total: int, total_bytes: int = 0, unit: str = "session") -> None:
        self.said.append(verb)
        self.began.set()

    def item(self, name: str, size: int = 0) -> None:
        pass

    def advance(self, size: int) -> None:
        pass

    def clear(self) -> None:
        self.said.append("(cleared)")

    def end(self) -> None:
        pass


def test_a_run_that_waits_for_the_secret_rules_says_what_it_waits_for(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run on a machine waits tens of seconds while the secret rules compile:
    the progress line says so (before, the line was silent all that time). The rules are
    held back here by their own lock, so the wait is certain, not a matter of timing."""
    import threading

    from gitclaw_compress.config import load_config
    from gitclaw_compress.secrets import engine
    from gitclaw_compress.secrets.parallel import RULES_LOADING, ParallelGuard
    from gitclaw_compress.store.archive import Repository

    path = repo / SESSIONS / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(typical_session(turns=2).data())
    engine._light()  # the candidate file written: this is not the machine's first run
    monkeypatch.setattr(engine, "_light_scanner", None)  # not loaded yet
    recorded = Recorded()
    guard = ParallelGuard(
        Repository(repo), load_config(None, repo, None), enabled=True, progress=recorded
    )
    warnings: list[str] = []
    with engine._loading:  # the rules cannot load until the wait has begun
        guard.start([path])
        waiting = threading.Thread(target=guard.wait, args=(warnings,))
        waiting.start()
        assert recorded.began.wait(60)
    waiting.join()
    guard.cancel()
    assert recorded.said == [RULES_LOADING, "(cleared)"], recorded.said


def test_a_first_run_says_it_compiles_the_rules_and_about_how_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no compiled rules (a new machine, a new cache folder), the line the run shows
    while it waits names the compile and an estimate of its time; with them, the load."""
    from gitclaw_compress.secrets import engine
    from gitclaw_compress.secrets.parallel import RULES_LOADING, _waiting_for

    monkeypatch.setattr(engine, "_light_scanner", None)
    monkeypatch.setenv(engine.CACHE_ENV, str(tmp_path))
    said = _waiting_for()
    assert said.startswith("compiling the secret rules (the first two runs on a machine: about ")
    assert " s here; later runs load them" in said
    first = int(said.split("about ")[1].split(" s")[0])
    candidates = engine._candidate_path(str(tmp_path))
    candidates.parent.mkdir(parents=True, exist_ok=True)
    candidates.write_text("{}")  # the next run compiles the candidates: less
    said = _waiting_for()
    assert said.startswith("compiling the secret rules (the first two runs on a machine: ")
    assert int(said.split("about ")[1].split(" s")[0]) <= first
    engine._compiled_mark(candidates).write_text("")
    assert _waiting_for() == RULES_LOADING
