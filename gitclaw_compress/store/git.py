"""The one way this package runs a short git command: no traceback, one line on failure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gitclaw_compress.errors import GitClawError

# Objects and the ref must be on disk before the session file is replaced.
DURABLE = ("-c", "core.fsync=committed", "-c", "core.fsyncMethod=fsync")


class GitFailureError(GitClawError):
    """A git child process failed or died: the command could not do its job (exit 3)."""


def failure_detail(stderr: bytes | str, code: int) -> str:
    """The line of a failed git child's stderr that names the cause: its last `fatal:` or
    `error:` line (not the "…and the repository exists." advice after it), else its last line."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if fatal:  # the cause, not "dumping crash report to …" after it
        return fatal[-1]
    if lines:
        return lines[-1]
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}"


def git_failure(command: str, stderr: bytes | str, code: int, where: str = "") -> GitClawError:
    """One line for a git child that failed: the command, its cause, no traceback."""
    return GitFailureError(f"git {command} failed{where}: {failure_detail(stderr, code)}")


# Work trees whose git dir lies outside them (an agent's store and the archive the tool
# keeps for it elsewhere): every git child run there is told where its git dir is.
_OUTSIDE_GIT_DIRS: dict[Path, Path] = {}


def link_work_tree(work_tree: Path, git_dir: Path) -> None:
    """From now on, git run in `work_tree` uses `git_dir` (GIT_DIR and GIT_WORK_TREE)."""
    _OUTSIDE_GIT_DIRS[work_tree] = git_dir


def git_env(cwd: Path) -> dict[str, str] | None:
    """The environment of a git child run in `cwd`: None (inherit) unless its git dir lies
    outside the work tree."""
    git_dir = _OUTSIDE_GIT_DIRS.get(cwd)
    if git_dir is None:
        return None
    return {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(cwd)}


def run_git(
    root: Path, *args: str, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=root,
            input=input,
            capture_output=True,
            check=False,
            env=git_env(root),
        )
    except FileNotFoundError:
        raise GitClawError("git is not installed or not on PATH") from None


def git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    done = run_git(root, *args, input=input)
    if check and done.returncode != 0:
        raise git_failure(args[0], done.stderr, done.returncode, f" in {root}")
    return done.stdout


def rev_parse_in(cwd: Path, *args: str) -> list[str] | None:
    done = run_git(cwd, "rev-parse", *args)
    if done.returncode == 0:
        return done.stdout.decode().splitlines()
    if any(sign in done.stderr for sign in (b"not a git repository", b"work tree")):
        return None  # the caller words these for the user
    if not done.stderr.strip():
        return None
    raise git_failure("rev-parse", done.stderr, done.returncode, f" in {cwd}")
