"""When the originals of compressed sessions live only in this clone's archive and nothing
is set up to send it (our pre-push hook, pre-commit's push-archive hook, `--push`, the
Action's push, or `archive.localOnly` on purpose), `compress` and `step` say so in one line
with the command that fixes it; with CI=true (a runner that is thrown away) it is an error,
exit 3, before anything is written. A run whose every original a commit of the branch holds
(a committed session) leaves nothing that only the archive keeps: it says nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

from flow_helpers import SESSIONS, commit_all, git, make_origin, session_bytes, tool, write

THRESHOLD_ZERO = b'{"session": {"sizeThresholdKB": 0}}'
LOCAL_ONLY = b'{"session": {"sizeThresholdKB": 0}, "archive": {"localOnly": true}}'
WARNING = "gitclaw-compress: warning: the originals of 1 compressed session are only in"


def cloned_session(
    tmp_path: Path, config: bytes = THRESHOLD_ZERO, *, committed: bool = False
) -> tuple[Path, Path]:
    """A clone with a session: never committed (its originals go to the archive alone), or
    `committed` (the branch holds them)."""
    work = make_origin(tmp_path).work
    write(work / "compression.json", config)
    commit_all(work, "config")
    session = write(work / SESSIONS / "a.jsonl", session_bytes(6))
    if committed:
        commit_all(work)
    return work, session


def ci() -> dict[str, str]:
    return {**os.environ, "CI": "true"}


def test_compress_and_step_say_that_nothing_sends_the_archive(tmp_path: Path) -> None:
    work, session = cloned_session(tmp_path)
    done = tool(work, "compress", "--keep-turns", "1", str(session))
    assert done.returncode == 0
    warning = done.stderr.decode()
    assert warning.startswith(WARNING) and warning.count("\n") == 1, warning
    assert "run `gitclaw-compress install`" in warning and "archive.localOnly" in warning
    write(session, session_bytes(6))
    done = tool(work, "step", "--keep-turns", "1")
    assert done.returncode == 0 and done.stderr.decode().startswith(WARNING), done.stderr


def test_a_way_to_send_it_silences_the_line(tmp_path: Path) -> None:
    work, session = cloned_session(tmp_path)
    done = tool(work, "step", "--keep-turns", "1", "--push")  # this run sends it
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    write(session, session_bytes(6))
    assert tool(work, "install").returncode == 0  # git push sends it from now on
    done = tool(work, "compress", "--keep-turns", "1", "--force", str(session))
    assert done.returncode == 0 and done.stderr == b"", done.stderr


def test_archive_local_only_keeps_it_here_on_purpose(tmp_path: Path) -> None:
    work, session = cloned_session(tmp_path, LOCAL_ONLY)
    done = tool(work, "compress", "--keep-turns", "1", str(session), env=ci())
    assert done.returncode == 0 and done.stderr == b"", done.stderr


def test_in_ci_it_is_an_error_before_anything_is_written(tmp_path: Path) -> None:
    work, session = cloned_session(tmp_path)
    before = session.read_bytes()
    done = tool(work, "compress", "--keep-turns", "1", str(session), env=ci())
    error = done.stderr.decode()
    assert done.returncode == 3 and error.count("\n") == 1, error
    assert error.startswith("gitclaw-compress: error: CI=true: the originals of 1 compressed")
    assert "nothing was changed" in error and "step --push" in error
    assert session.read_bytes() == before
    assert git(work, "rev-parse", "--verify", "--quiet", "refs/gitclaw/archive", check=False) == ""
    done = tool(work, "step", "--keep-turns", "1", "--push", env=ci())
    assert done.returncode == 0 and done.stderr == b"", done.stderr


def test_a_run_the_branch_history_covers_says_nothing_even_in_ci(tmp_path: Path) -> None:
    """Issue 32: the line (and with CI=true exit 3) came after a run that wrote 0 new
    archive objects, whose every original a commit of the branch holds; a fresh clone of
    the pushed branch restores it byte for byte, with no archive at all."""
    work, session = cloned_session(tmp_path, committed=True)
    original = session.read_bytes()
    done = tool(work, "compress", "--keep-turns", "1", str(session), env=ci())
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert b"0 new archive objects" in done.stdout
    assert session.read_bytes() != original
    commit_all(work, "compressed")
    git(work, "push", "-q", "origin", "main")  # the branch, not the archive
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", (tmp_path / "origin.git").as_uri(), fresh.name)
    rel = session.relative_to(work)
    done = tool(fresh, "restore", "--no-fetch", "-o", "-", str(rel))
    assert done.returncode == 0 and done.stdout == original, done.stderr
    # Lines appended since the commit have their originals only in the archive: said again.
    write(session, session.read_bytes() + session_bytes(6).split(b"\n", 1)[1])
    commit_all(work, "more turns")
    write(session, session.read_bytes() + session_bytes(3).split(b"\n", 1)[1])
    done = tool(work, "compress", "--keep-turns", "1", str(session))
    assert done.returncode == 0 and done.stderr.decode().startswith(WARNING), done.stderr


def doctor_problems(work: Path) -> list[str]:
    done = tool(work, "doctor", "--json")
    problems: list[str] = json.loads(done.stdout)["problems"]
    return problems


def test_doctor_counts_only_the_sessions_whose_originals_only_the_archive_keeps(
    tmp_path: Path,
) -> None:
    """With no remote for the archive, doctor's line that a fresh clone could not restore a
    session is about the sessions with originals that only the archive keeps, by the rule
    the warning of `compress` uses (store/intact.py `only_in_archive`): a committed session
    compressed, whose every original a commit of the branch holds, is none. Before, doctor
    said a fresh clone could not restore it."""
    work, session = cloned_session(tmp_path, committed=True)
    assert tool(work, "compress", "--keep-turns", "1", str(session)).returncode == 0
    commit_all(work, "compressed a")
    git(work, "remote", "remove", "origin")
    assert doctor_problems(work) == []
    # Compressed before its first commit: its originals only the archive keeps.
    other = write(work / SESSIONS / "b.jsonl", session_bytes(6))
    assert tool(work, "compress", "--keep-turns", "1", str(other)).returncode == 0
    commit_all(work, "b")
    (problem,) = doctor_problems(work)
    assert problem.startswith(
        "2 compressed sessions here, 1 with originals only in refs/gitclaw/archive, but no "
        "remote 'origin' to send it to: a fresh clone could not restore that one "
        "(the other restores from the branch history); "
    ), problem
