"""restore, verify and show in every kind of clone a user is likely to have, from a real
bare origin: full with the archive ref, one branch alone, and `--depth 1`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flow_helpers import (
    SESSIONS,
    Origin,
    commit_all,
    git,
    make_origin,
    marker_count,
    ok,
    one_line_error,
    session_bytes,
    tool,
    write,
)

SESSION = f"{SESSIONS}/issue-1.jsonl"
ARCHIVE = "refs/gitclaw/archive"
PUSH_ALL = ("main", "refs/gitclaw/*:refs/gitclaw/*")


def grow(path: Path, turns: int) -> None:
    """One agent run: the session gets new turns appended."""
    with open(path, "ab") as handle:
        handle.write(session_bytes(turns).split(b"\n", 1)[1])


@pytest.fixture
def pushed(tmp_path: Path) -> tuple[Origin, bytes]:
    """Two agent runs, each compressed, committed and pushed with the archive ref.

    The first run's lines were never committed intact (the file was new), so only the
    archive can give them back; the second run's older lines were intact at HEAD.
    """
    origin = make_origin(tmp_path)
    session = write(origin.work / SESSION, session_bytes(4))
    ok(origin.work, "step", "--keep-turns", "1")
    commit_all(origin.work, "run 1")
    origin.push(*PUSH_ALL)
    original = session_bytes(4)
    grow(session, 3)
    original += session_bytes(3).split(b"\n", 1)[1]
    ok(origin.work, "step", "--keep-turns", "1")
    commit_all(origin.work, "run 2")
    origin.push(*PUSH_ALL)
    assert b'"gitclawCompress":"3:' in session.read_bytes()  # lines naming run 1's blob
    return origin, original


def restored(clone: Path, *options: str) -> bytes:
    ok(clone, "restore", SESSION, "-o", "restored.jsonl", *options)
    return (clone / "restored.jsonl").read_bytes()


def has_archive(clone: Path) -> bool:
    return git(clone, "rev-parse", "--verify", "--quiet", ARCHIVE, check=False) != ""


def test_full_clone_with_the_archive_ref(tmp_path: Path, pushed: tuple[Origin, bytes]) -> None:
    origin, original = pushed
    clone = origin.clone(tmp_path / "full")
    git(clone, "fetch", "-q", "origin", "refs/gitclaw/*:refs/gitclaw/*")
    assert restored(clone, "--no-fetch") == original
    ok(clone, "verify", "--no-fetch")
    entry = json.loads(original.split(b"\n")[4])
    out = ok(clone, "show", SESSION, entry["id"], "--raw", "--no-fetch")
    assert out.stdout == original.split(b"\n")[4] + b"\n"


def test_branch_alone_fetches_the_archive_by_itself(
    tmp_path: Path, pushed: tuple[Origin, bytes]
) -> None:
    origin, original = pushed
    clone = origin.clone(tmp_path / "branch", "--single-branch", "--branch", "main")
    assert not has_archive(clone)
    done = tool(clone, "restore", SESSION, "-o", "restored.jsonl")
    assert done.returncode == 0, done.stderr
    assert b"fetching refs/gitclaw/archive from origin" in done.stderr
    assert (clone / "restored.jsonl").read_bytes() == original
    assert has_archive(clone)
    ok(clone, "verify", "--no-fetch")


def test_branch_alone_uses_the_commits_where_lines_were_intact(tmp_path: Path) -> None:
    """The archive ref was never pushed, yet every compressed line was committed intact
    before: restore needs nothing but the branch."""
    origin = make_origin(tmp_path)
    session = write(origin.work / SESSION, session_bytes(5))
    commit_all(origin.work, "agent run, uncompressed")
    original = session.read_bytes()
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    commit_all(origin.work, "compressed")
    origin.push("main")  # the branch only
    clone = origin.clone(tmp_path / "branch", "--single-branch", "--branch", "main")
    assert marker_count((clone / SESSION).read_bytes()) > 0
    assert restored(clone, "--no-fetch") == original
    # verify still says the payloads are on no archive ref: git gc could lose them here.
    assert tool(clone, "verify", "--no-fetch").returncode == 1


def test_depth_1_clone_fetches_what_is_missing(
    tmp_path: Path, pushed: tuple[Origin, bytes]
) -> None:
    origin, original = pushed
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    assert git(clone, "rev-parse", "--is-shallow-repository").strip() == "true"
    assert not has_archive(clone)
    ok(clone, "verify")
    assert has_archive(clone)
    assert restored(clone, "--no-fetch") == original


def test_depth_1_clone_without_fetch_prints_the_one_command(
    tmp_path: Path, pushed: tuple[Origin, bytes]
) -> None:
    origin, original = pushed
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    error = one_line_error(tool(clone, "restore", SESSION, "--no-fetch"))
    assert error.rstrip().endswith("get the archive with: gitclaw-compress fetch"), error
    assert not (clone / "restored.jsonl").exists()
    write(clone / "compression.json", b'{"archive": {"autoFetch": false}}')
    one_line_error(tool(clone, "restore", SESSION, "-o", "restored.jsonl"))
    out = ok(clone, "fetch")  # the command the error named
    assert b"fetched refs/gitclaw/archive from origin" in out.stdout
    assert restored(clone) == original


def test_verify_in_a_depth_1_clone_counts_each_missing_object_once(
    tmp_path: Path, pushed: tuple[Origin, bytes]
) -> None:
    """An object that is not in the clone at all is one problem, not also one "not reachable
    from the archive ref (git gc would lose it)" problem: the count and --json agree with
    the one cause the text names."""
    origin, _ = pushed
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    done = tool(clone, "verify", "--no-fetch", "--json")
    assert done.returncode == 1
    [report] = json.loads(done.stdout)["files"]
    problems = report["problems"]
    assert problems, done.stdout
    for problem in problems:
        assert "is not in this clone" in problem, problem
    text = tool(clone, "verify", "--no-fetch").stdout.decode()
    assert text.startswith(f"{len(problems)} problems: {SESSION} "), text


def test_clone_without_a_remote_says_how_to_add_it(
    tmp_path: Path, pushed: tuple[Origin, bytes]
) -> None:
    origin, _ = pushed
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    git(clone, "remote", "remove", "origin")
    error = one_line_error(tool(clone, "restore", SESSION))
    assert "git remote add origin URL" in error and "gitclaw-compress fetch" in error
    assert b"gitclawCompress" in (clone / SESSION).read_bytes()  # left as it was


def test_show_in_a_depth_1_clone(tmp_path: Path, pushed: tuple[Origin, bytes]) -> None:
    origin, original = pushed
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    line = original.split(b"\n")[4]
    assert line not in (clone / SESSION).read_bytes()  # a compressed tool output
    entry_id = json.loads(line)["id"]
    out = ok(clone, "show", SESSION, entry_id, "--raw")
    assert out.stdout == line + b"\n"


def test_concurrent_runs_merge_their_archives_on_push(tmp_path: Path) -> None:
    """Two CI jobs compress different sessions from the same commit and both push: the
    second push merges the archives instead of failing or dropping the first's payloads."""
    origin = make_origin(tmp_path)
    write(origin.work / f"{SESSIONS}/a.jsonl", session_bytes(4))
    write(origin.work / f"{SESSIONS}/b.jsonl", session_bytes(4, session_id="b"))
    commit_all(origin.work, "sessions")
    origin.push("main")
    originals = {}
    jobs = []
    for name in ("a", "b"):
        job = origin.clone(tmp_path / f"job-{name}", "--depth", "1")
        path = job / f"{SESSIONS}/{name}.jsonl"
        grow(path, 2)
        originals[name] = path.read_bytes()
        out = ok(job, "step", "--keep-turns", "1", "--push")
        assert "pushed to origin" in out.stdout.decode()
        jobs.append(job)
    assert "merged with the remote's archive" in out.stdout.decode()
    for name, job in zip(("a", "b"), jobs, strict=True):
        commit_all(job, f"job {name}")
        git(job, "pull", "-q", "--rebase", "origin", "main")
        git(job, "push", "-q", "origin", "HEAD:main")
    reader = origin.clone(tmp_path / "reader", "--depth", "1")
    for name in ("a", "b"):
        ok(reader, "restore", f"{SESSIONS}/{name}.jsonl")
        assert (reader / f"{SESSIONS}/{name}.jsonl").read_bytes() == originals[name]
    ok(reader, "verify")


def test_push_with_nothing_to_push(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    out = ok(origin.work, "push")
    assert b"nothing to push" in out.stdout
    out = ok(origin.work, "fetch")
    assert b"origin has no refs/gitclaw/archive" in out.stdout


def test_archive_never_pushed_says_so_in_one_line(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    write(origin.work / SESSION, session_bytes(4))  # new: never committed intact
    ok(origin.work, "step", "--keep-turns", "1")
    commit_all(origin.work)
    origin.push("main")  # the archive ref stays behind
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    done = tool(clone, "restore", SESSION)
    assert b"fetching refs/gitclaw/archive from origin" in done.stderr
    error = done.stderr.decode().splitlines()[-1]
    assert done.returncode == 3 and error.startswith("gitclaw-compress: error: ")
    assert "nor on origin's refs/gitclaw/archive; the archive was not pushed" in error
    assert marker_count((clone / SESSION).read_bytes()) > 0  # left as it was


def test_an_unreachable_remote_is_named_by_gits_cause_not_its_advice(tmp_path: Path) -> None:
    """git ends "could not read" with two lines of advice; the message gives the cause."""
    origin = make_origin(tmp_path)
    write(origin.work / SESSION, session_bytes(4))
    ok(origin.work, "step", "--keep-turns", "1")
    git(origin.work, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    lines = {
        "push": tool(origin.work, "push").stderr.decode().splitlines()[-1],
        "fetch": tool(origin.work, "fetch").stderr.decode().splitlines()[-1],
        "doctor": next(
            line
            for line in tool(origin.work, "doctor").stdout.decode().splitlines()
            if "could not be asked" in line
        ),
    }
    for command, line in lines.items():
        assert "fatal: " in line, (command, line)
        assert "repository exists" not in line, (command, line)
