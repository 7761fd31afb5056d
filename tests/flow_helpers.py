"""Helpers for the commit-flow tests: real git repositories, origins, clones, sessions.

The hermetic environment (own HOME, GIT_CONFIG_NOSYSTEM, fixed author and dates) comes from
the autouse fixture `hermetic_git` in conftest.py; every process these helpers start
inherits it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS
from synthetic import typical_session

from gitclaw_compress.core import rewrite

PROJECT = Path(__file__).resolve().parent.parent
HISTORY = CORPUS / "pi-history"

needs_history = pytest.mark.skipif(
    not HISTORY.is_dir(), reason=f"session histories not found at {HISTORY} (shared corpus)"
)

SESSIONS = ".GITCLAW/state/sessions"


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def tool(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run gitclaw-compress as a user or a hook does: a separate process, exit code kept."""
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
        env=env,
    )


def ok(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = tool(cwd, *args)
    if done.returncode != 0:
        raise AssertionError(
            f"gitclaw-compress {' '.join(args)}: exit {done.returncode}: "
            f"{done.stderr.decode()}{done.stdout.decode()}"
        )
    return done


def one_line_error(done: subprocess.CompletedProcess[bytes]) -> str:
    """The error of a failed run, checked to be exactly one `gitclaw-compress: error:` line."""
    assert done.returncode == 3, (done.returncode, done.stderr)
    err = done.stderr.decode()
    assert err.startswith("gitclaw-compress: error: "), err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    return err


def init(path: Path, *, bare: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main", *(["--bare"] if bare else []))
    return path


def commit_all(repo: Path, message: str = "agent run") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@dataclass
class Origin:
    bare: Path
    work: Path

    @property
    def url(self) -> str:
        return self.bare.as_uri()  # file:// so that --depth works

    def push(self, *refs: str) -> None:
        git(self.work, "push", "-q", "origin", *refs)

    def clone(self, dest: Path, *options: str) -> Path:
        git(dest.parent, "clone", "-q", *options, self.url, dest.name)
        return dest


def make_origin(tmp: Path) -> Origin:
    """A bare repository acting as origin, and a working clone of it on branch main."""
    bare = init(tmp / "origin.git", bare=True)
    work = tmp / "work"
    git(tmp, "clone", "-q", bare.as_uri(), work.name)
    git(work, "checkout", "-q", "-B", "main")
    return Origin(bare, work)


def session_bytes(
    turns: int = 6, *, last_stamp: str | None = None, session_id: str | None = None
) -> bytes:
    """A typical session; `last_stamp` sets the timestamp of its last entry."""
    lines = typical_session(turns=turns).data().split(b"\n")[:-1]
    if session_id is not None:
        header = orjson.loads(lines[0])
        header["id"] = session_id
        lines[0] = orjson.dumps(header)
    if last_stamp is not None:
        last = orjson.loads(lines[-1])
        last["timestamp"] = last_stamp
        lines[-1] = orjson.dumps(last)
    return b"".join(line + b"\n" for line in lines)


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def same_mtime(*paths: Path, when: int = 1_700_000_000) -> None:
    """Every file gets the same mtime, as in a fresh CI checkout."""
    for path in paths:
        os.utime(path, ns=(when * 10**9, when * 10**9))


def marker_count(data: bytes) -> int:
    """The markers of a file: JSON objects (v1, v2) and strings (v3)."""
    return data.count(b'"gitclawCompress":{') + data.count(b'"gitclawCompress":"')


def v3_count(data: bytes) -> int:
    return data.count(b'"gitclawCompress":"3:')


def v2_marker(
    blob: str, line: int, sha256: bytes, size: int, lines: int, *, ui_only: bool = False
) -> dict[str, object]:
    """The marker the release before v3 wrote where compress now writes a v3 one."""
    marker: dict[str, object] = {
        "v": 2,
        "sha256": sha256.hex(),
        "size": size,
        "intact": {"blob": blob, "line": line},
        "lines": lines,
    }
    if ui_only:
        marker["ui"] = True
    return marker


@contextmanager
def writing_v2_markers() -> Iterator[None]:
    """compress, run in this process, writes v2 markers where it writes v3 ones: files as
    the release before v3 wrote them (byte for byte: the same fields in the same order)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rewrite, "intact_marker", v2_marker)
        yield


def shim_bin(folder: Path) -> Path:
    """A folder with a `gitclaw-compress` executable for shell calls, as an agent has."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "gitclaw-compress"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gitclaw_compress "$@"\n')
    script.chmod(0o755)
    return folder


def path_with(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
    return env


def project_snapshot(dest: Path) -> tuple[Path, str]:
    """This project's files as they are now (committed or not), committed in a fresh repo.

    pre-commit and the action install the tool from a git repository or a folder; a copy
    keeps builds out of the real work tree and tests what is in it, uncommitted changes too.
    """
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT,
        capture_output=True,
        check=True,
    ).stdout
    init(dest)
    for name in listed.decode().split("\0"):
        source = PROJECT / name
        if not name or not source.is_file() or name.startswith("tests/"):
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return dest, commit_all(dest, "snapshot")


PRE_COMMIT_BIN = Path(sys.executable).with_name("pre-commit")
# For test modules that run the real pre-commit (a dev dependency, so present in CI).
needs_pre_commit = pytest.mark.skipif(
    not PRE_COMMIT_BIN.exists() and shutil.which("pre-commit") is None,
    reason="pre-commit is not installed (pip install -e '.[dev]')",
)


def pre_commit_exe() -> str:
    return str(PRE_COMMIT_BIN) if PRE_COMMIT_BIN.exists() else "pre-commit"


def json_strings(value: object) -> list[str]:
    """Every string of a JSON value, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in json_strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in json_strings(item)]
    return []
