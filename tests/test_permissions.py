"""Sessions whose permissions say something: one that cannot be read (`chmod 000`) is named
as unreadable by every read-only command; one made read-only (`chmod 444`) is never rewritten;
a rewritten file keeps its mode and its group."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import commit_session, git
from synthetic import typical_session

SESSION = ".GITCLAW/state/sessions/issue-1.jsonl"
NOBODY = 65534


def as_user(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[bytes]:
    """Run the tool as a user without special rights: root reads every file, so as root
    the command runs as uid/gid 65534 (setpriv), which then owns the repository."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*prefix, sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        check=False,
    )


def skip_unless_the_user_can_run_the_tool() -> None:
    """As root, the tests switch to uid 65534: skip, saying why, when no user can be
    switched to (no setpriv, or a container that forbids it), or when that user cannot
    import this checkout (it sits under a folder of mode 700, say)."""
    if os.geteuid() != 0:
        return
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: every file is readable")
    probe = as_user(["--version"], Path("/"), Path("/"))
    if probe.returncode != 0:
        lines = probe.stderr.decode(errors="replace").strip().splitlines() or ["no output"]
        pytest.skip(
            f"uid {NOBODY} cannot run gitclaw-compress from this checkout "
            f"(exit {probe.returncode}: {lines[-1]}); a checkout under a folder it cannot "
            "read, or a system that forbids switching users"
        )


@pytest.fixture
def user_repo() -> Iterator[Path]:
    """A committed, compressed session in a repository the user running the tool owns."""
    skip_unless_the_user_can_run_the_tool()
    top = Path(tempfile.mkdtemp(prefix="gitclaw-perm-"))
    try:
        top.chmod(0o755)
        repo = top / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        commit_session(repo, SESSION, typical_session(turns=6).data())
        done = subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "compress", "--force", SESSION],
            cwd=repo,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(top)], check=True)
        yield repo
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize(
    "args",
    [
        ["stats", SESSION],
        ["stats", "--json", SESSION],
        ["verify", SESSION],
        ["show", SESSION, "00000004"],
        ["restore", "-o", "-", SESSION],
        ["context", SESSION],
        ["status", SESSION],
    ],
    ids=lambda args: "-".join(word for word in args if word != SESSION),
)
def test_a_session_that_cannot_be_read_is_named_as_such(user_repo: Path, args: list[str]) -> None:
    (user_repo / SESSION).chmod(0o000)
    done = as_user(args, user_repo, user_repo.parent)
    err = done.stderr.decode()
    assert done.returncode == 3, (done.returncode, err)
    assert err.count("\n") == 1 and err.startswith("gitclaw-compress: error: "), err
    assert "cannot read it" in err, err
    assert "needs to write" not in err, err


def test_a_read_only_session_is_not_rewritten(repo: Path) -> None:
    path = commit_session(repo, SESSION, typical_session(turns=6).data())
    before = path.read_bytes()
    path.chmod(0o444)
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--force", SESSION],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 3 and err.count("\n") == 1, err
    assert "read-only (mode 444)" in err and "chmod u+w" in err and "nothing was changed" in err
    assert path.read_bytes() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    path.chmod(0o644)  # the user's answer: it is compressed now, then made read-only again
    assert (
        subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "compress", "--force", SESSION], cwd=repo
        ).returncode
        == 0
    )
    path.chmod(0o444)
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "restore", SESSION],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 3 and b"read-only (mode 444)" in done.stderr
    assert path.read_bytes() != before  # still the compressed file


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file another group needs root here")
def test_a_rewritten_session_keeps_its_mode_and_group(repo: Path) -> None:
    path = commit_session(repo, SESSION, typical_session(turns=6).data())
    os.chown(path, -1, NOBODY)
    path.chmod(0o640)
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--force", SESSION],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0 and b"compressed" in done.stdout, done.stderr
    after = path.stat()
    assert after.st_gid == NOBODY and stat.S_IMODE(after.st_mode) == 0o640


@pytest.mark.parametrize(("mode", "shown"), [(0o000, "000"), (0o040, "040"), (0o444, "444")])
def test_the_read_only_refusal_prints_the_mode_as_chmod_takes_it(
    tmp_path: Path, mode: int, shown: str
) -> None:
    """`chmod 000` (which root can still read) is shown `mode 000`, not `mode 0`."""
    from gitclaw_compress.errors import GitClawError
    from gitclaw_compress.store.fileio import refuse_read_only

    path = tmp_path / "session.jsonl"
    path.write_bytes(b"{}\n")
    path.chmod(mode)
    with pytest.raises(GitClawError, match=f"read-only \\(mode {shown}\\)"):
        refuse_read_only(path)
