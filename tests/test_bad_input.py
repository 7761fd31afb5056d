"""Every command against every bad input: one line, the documented exit code, data untouched.

One table: each command, fed each bad input (a missing path, a directory, an empty file, a
binary file, a file of a foreign format, a session outside git, a read-only sessions folder,
an unwritable .git). No traceback may reach the user, a failure is exactly one
`gitclaw-compress: error:` line that names the file or folder, `--json` turns it into a JSON
document, and no byte of the work tree changes (compared by sha256).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result
from conftest import ON_LINUX, commit_session, git
from synthetic import typical_session

from gitclaw_compress.cli import cli

SESSIONS = ".GITCLAW/state/sessions"
GOOD = f"{SESSIONS}/issue-1.jsonl"
SMALL_SESSIONS = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}'
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # no such thing on Windows


@dataclass(frozen=True)
class Case:
    """A bad input: the folder to run in, the PATH argument, and the name the error must say."""

    cwd: Path
    path: str
    names: str


def _immutable(path: Path, on: bool) -> bool:
    """chattr +i/-i: the only way to make a folder unwritable for root."""
    done = subprocess.run(
        ["chattr", "-R", "+i" if on else "-i", str(path)], capture_output=True, check=False
    )
    return done.returncode == 0


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` (a folder) cannot be written to, by this user, even if it is root."""
    if not ON_LINUX:
        pytest.skip("needs Linux: a folder made read-only by its mode (and chattr for root)")
    modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")] if p.is_dir()}
    for folder in modes:
        folder.chmod(0o555)
    if IS_ROOT and (shutil.which("chattr") is None or not _immutable(path, True)):
        for folder, mode in modes.items():
            folder.chmod(mode)
        pytest.skip("running as root without chattr +i: cannot make a folder read-only")
    try:
        yield
    finally:
        if IS_ROOT:
            _immutable(path, False)
        for folder, mode in modes.items():
            folder.chmod(mode)


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "compression.json").write_bytes(SMALL_SESSIONS)
    commit_session(root, GOOD, typical_session(turns=4).data())
    return root


def _write(repo: Path, data: bytes) -> str:
    (repo / SESSIONS / "bad.jsonl").write_bytes(data)
    return f"{SESSIONS}/bad.jsonl"


def missing(tmp_path: Path) -> Case:
    return Case(_repo(tmp_path), f"{SESSIONS}/missing.jsonl", "missing.jsonl")


def directory(tmp_path: Path) -> Case:
    return Case(_repo(tmp_path), SESSIONS, "sessions")


def empty(tmp_path: Path) -> Case:
    repo = _repo(tmp_path)
    return Case(repo, _write(repo, b""), "bad.jsonl")


def binary(tmp_path: Path) -> Case:
    repo = _repo(tmp_path)
    return Case(repo, _write(repo, bytes(range(256)) * 64), "bad.jsonl")


def foreign(tmp_path: Path) -> Case:
    repo = _repo(tmp_path)
    return Case(repo, _write(repo, b'{"foo":1}\n{"foo":2}\n'), "bad.jsonl")


def outside_git(tmp_path: Path) -> Case:
    folder = tmp_path / "plain"
    (folder / SESSIONS).mkdir(parents=True)
    (folder / GOOD).write_bytes(typical_session(turns=4).data())
    return Case(folder, GOOD, "plain")


INPUTS: dict[str, Callable[[Path], Case]] = {
    "missing": missing,
    "directory": directory,
    "empty": empty,
    "binary": binary,
    "foreign": foreign,
    "outside-git": outside_git,
    "read-only-folder": lambda tmp_path: Case(_repo(tmp_path), GOOD, "sessions"),
    "unwritable-git": lambda tmp_path: Case(_repo(tmp_path), GOOD, ".git"),
}

# The arguments of each command; {path} is the bad input. Commands without a PATH run in
# the bad input's folder (and only meet the inputs that concern a folder).
COMMANDS: dict[str, list[str]] = {
    "compress": ["compress", "{path}"],
    "prune": ["prune", "{path}"],
    "summarize": ["summarize", "--offline", "{path}"],
    "restore": ["restore", "{path}"],
    "restore-elsewhere": ["restore", "{path}", "-o", "{elsewhere}"],
    "restore-all": ["restore", "--all"],
    "show": ["show", "{path}", "00000002"],
    "verify": ["verify", "{path}"],
    "stats": ["stats", "{path}"],
    "status": ["status", "{path}"],
    "context": ["context", "{path}"],
    "step": ["step"],
    "push": ["push"],
    "fetch": ["fetch"],
    "doctor": ["doctor"],
    "install": ["install"],
    "uninstall": ["uninstall"],
    "pre-push": ["pre-push", "origin"],  # as the hook runs it; git's stdin is empty here
}
PATHLESS = {name for name, args in COMMANDS.items() if "{path}" not in args}
FOLDER_INPUTS = {"outside-git", "read-only-folder", "unwritable-git"}

# What each command does with each input: 0 where it has nothing to refuse (a read-only
# command in a read-only folder, stats of a session outside git), else 3, one line.
READ_ONLY_COMMANDS = {"stats", "status", "context"}
SUCCEEDS: set[tuple[str, str]] = {
    *((command, "outside-git") for command in READ_ONLY_COMMANDS),
    *((command, "read-only-folder") for command in READ_ONLY_COMMANDS | {"show", "verify"}),
    *((command, "unwritable-git") for command in READ_ONLY_COMMANDS | {"show", "verify"}),
    # Nothing compressed, nothing to prune or summarize in the small session: nothing to write.
    *((command, "read-only-folder") for command in ("restore", "prune", "summarize")),
    *((command, "read-only-folder") for command in ("restore-elsewhere", "restore-all")),
    # Nothing compressed: restore has nothing to write, and so takes no lock; restoring to
    # another file only reads the repository.
    *((command, "unwritable-git") for command in ("restore", "restore-all", "restore-elsewhere")),
    # The hook lives in .git, the archive is not pushed yet, doctor only reads.
    *((command, "read-only-folder") for command in ("push", "doctor", "install", "uninstall")),
    *((command, "unwritable-git") for command in ("push", "doctor", "uninstall")),
    # No branch pushed (empty stdin): nothing to send.
    *(("pre-push", name) for name in ("read-only-folder", "unwritable-git")),
}


# A folder is not bad input for these: it stands for the sessions under it (test_folders.py).
TAKES_FOLDERS = {"compress", "restore", "restore-elsewhere", "verify", "stats"}


def table() -> Iterator[tuple[str, str]]:
    for command in COMMANDS:
        for name in INPUTS:
            if command in PATHLESS and name not in FOLDER_INPUTS:
                continue
            if command in TAKES_FOLDERS and name == "directory":
                continue
            yield command, name


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every file of the work tree (not .git: the archive may legitimately grow)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(folder).parts
    }


def invoke(case: Case, args: list[str], monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(case.cwd)
    elsewhere = str(case.cwd.parent / "restored-elsewhere.jsonl")
    argv = [arg.format(path=case.path, elsewhere=elsewhere) for arg in args]
    return CliRunner().invoke(cli, argv, catch_exceptions=True)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(("command", "bad_input"), list(table()))
def test_bad_input_is_one_line_and_touches_nothing(
    command: str,
    bad_input: str,
    as_json: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = INPUTS[bad_input](tmp_path)
    args = COMMANDS[command] + (["--json"] if as_json else [])
    guard = {
        "read-only-folder": lambda: read_only(case.cwd / SESSIONS),
        "unwritable-git": lambda: read_only(case.cwd / ".git"),
    }.get(bad_input, contextlib.nullcontext)
    before = snapshot(case.cwd)
    with guard():
        result = invoke(case, args, monkeypatch)
    after = snapshot(case.cwd)
    shown = f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr, shown
    assert result.exception is None or isinstance(result.exception, SystemExit), shown + repr(
        result.exception
    )
    expected = 0 if (command, bad_input) in SUCCEEDS else 3
    assert result.exit_code == expected, shown
    assert after == before, "the work tree changed: " + shown
    if expected == 0:
        if as_json:
            orjson.loads(result.stdout)
        return
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitclaw-compress: error: "), shown
    # It names the file or folder at fault; a fetch without a remote names the repository.
    named = case.names if command != "fetch" else str(case.cwd.resolve())
    assert named in lines[0], shown
    assert "unexpected" not in lines[0], shown
    if as_json:
        document = orjson.loads(result.stdout)
        assert document["ok"] is False and document["exit_code"] == 3, shown
        assert named in document["error"], shown


def test_restoring_a_compressed_session_in_a_read_only_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    original = (repo / GOOD).read_bytes()
    monkeypatch.chdir(repo)
    assert CliRunner().invoke(cli, ["compress", "--keep-turns", "1", GOOD]).exit_code == 0
    compressed = snapshot(repo)
    with read_only(repo / SESSIONS):
        result = CliRunner().invoke(cli, ["restore", GOOD])
        elsewhere = tmp_path / "elsewhere.jsonl"
        copied = CliRunner().invoke(cli, ["restore", GOOD, "-o", str(elsewhere)])
        with read_only(repo / ".git"):  # no run can write: restoring elsewhere needs no lock
            unlocked = CliRunner().invoke(cli, ["restore", GOOD, "-o", str(elsewhere) + ".2"])
    assert result.exit_code == 3 and result.stderr.count("\n") == 1, result.output
    assert "sessions" in result.stderr and "Traceback" not in result.output
    assert snapshot(repo) == compressed
    assert copied.exit_code == 0, copied.output
    assert elsewhere.read_bytes() == original
    assert unlocked.exit_code == 0, unlocked.output
    assert Path(str(elsewhere) + ".2").read_bytes() == original
