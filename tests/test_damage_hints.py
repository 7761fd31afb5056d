"""Damage hints that tell the truth and give the fix that works here: the git command that
brings back the intact version (run for real), one line per cause in `verify`, and a
`doctor` that advises `fetch` only where the remote has something to fetch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from flow_helpers import SESSIONS, commit_all, git, make_origin, session_bytes, write
from format_cases import SYNTHETIC

SESSION = f"{SESSIONS}/issue-1.jsonl"


def tool(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def damage_a_compressed_line(path: Path, *, cut_the_last_line: bool) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if b"elided" in line)
    lines[number] = lines[number].replace(b"elided", b"elidex", 1)
    path.write_bytes(b"".join(lines[:-1] if cut_the_last_line else lines))


@pytest.fixture
def compressed(repo: Path) -> tuple[Path, bytes]:
    original = session_bytes(6)
    write(repo / SESSION, original)
    commit_all(repo, "agent run")
    done = tool(repo, "compress", "--force", "--keep-turns", "1", SESSION)
    assert done.returncode == 0, done.stderr
    return repo, original


@pytest.mark.parametrize("where", ["committed", "staged"])
def test_a_refused_restore_names_the_cause_and_the_git_command_that_fixes_it(
    compressed: tuple[Path, bytes], where: str
) -> None:
    repo, original = compressed
    if where == "committed":
        commit_all(repo, "compressed")
    else:
        git(repo, "add", SESSION)
    damage_a_compressed_line(repo / SESSION, cut_the_last_line=True)
    if where == "committed":
        git(repo, "add", SESSION)  # the damage is staged too: only HEAD is intact
    done = tool(repo, "restore", SESSION)
    assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
    message = done.stderr
    assert "lines were cut or joined" in message and "nothing was restored" in message
    assert "restore takes it from there" not in message
    fix = (
        f"git checkout HEAD -- {SESSION}" if where == "committed" else f"git checkout -- {SESSION}"
    )
    assert f"`{fix}` brings it back" in message, message
    subprocess.run(["sh", "-c", fix], cwd=repo, check=True)  # the fix, pasted
    assert tool(repo, "verify", SESSION).returncode == 0
    assert tool(repo, "restore", SESSION).returncode == 0
    assert (repo / SESSION).read_bytes() == original


def test_a_damaged_line_restore_can_repair_says_so(compressed: tuple[Path, bytes]) -> None:
    repo, original = compressed
    commit_all(repo, "compressed")
    damage_a_compressed_line(repo / SESSION, cut_the_last_line=False)
    done = tool(repo, "verify", SESSION)
    assert done.returncode == 1
    assert "the staged version holds it intact (restore takes it from there)" in done.stdout
    assert tool(repo, "restore", SESSION).returncode == 0
    assert (repo / SESSION).read_bytes() == original


def never_pushed_archive(tmp_path: Path) -> tuple[Path, Path]:
    """A session compressed before it was ever committed (its payloads are only in the
    archive), pushed without the archive; and a fresh clone of it."""
    origin = make_origin(tmp_path)
    write(origin.work / SESSION, session_bytes(8))
    assert tool(origin.work, "compress", "--force", SESSION).returncode == 0
    commit_all(origin.work, "compressed")
    git(origin.work, "push", "-q", "origin", "main")
    return origin.work, origin.clone(tmp_path / "fresh")


def test_verify_in_a_fresh_clone_prints_one_line_per_cause(tmp_path: Path) -> None:
    _, clone = never_pushed_archive(tmp_path)
    done = tool(clone, "verify", "--no-fetch")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{int(lines[0].split()[0])} problems: {SESSION}"), lines
    assert len(lines) <= 4, done.stdout  # the file, at most two causes, the fix
    assert any("archived object … is not in this clone" in line for line in lines)
    # origin has no archive: fetch would find nothing (issue 32), and doctor says so too
    fix = (
        "origin has no refs/gitclaw/archive to fetch either: run `gitclaw-compress push` in "
        "the clone that compressed them"
    )
    assert lines[-1] == f"to fix: {fix}", done.stdout
    assert f"cannot be restored from this clone; {fix}" in tool(clone, "doctor").stdout


def test_verify_and_doctor_give_one_fix_and_it_works(tmp_path: Path) -> None:
    """The advice for archived objects that are not here comes from one function, for the
    remote as it stands: once origin has the archive both say fetch, and fetch fixes it."""
    work, clone = never_pushed_archive(tmp_path)
    assert tool(work, "push").returncode == 0
    fix = "get the archive with: gitclaw-compress fetch"
    done = tool(clone, "verify", "--no-fetch")
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == f"to fix: {fix}", done.stdout
    assert f"cannot be restored from this clone; {fix}" in tool(clone, "doctor").stdout
    restore = tool(clone, "restore", "--no-fetch", SESSION)
    assert restore.returncode == 3 and restore.stderr.rstrip().endswith(fix), restore.stderr
    assert tool(clone, "fetch").returncode == 0
    assert tool(clone, "verify", "--no-fetch").returncode == 0


def test_doctor_advises_fetch_only_where_it_helps_and_names_the_path_once(
    tmp_path: Path,
) -> None:
    work, clone = never_pushed_archive(tmp_path)
    done = tool(clone, "doctor")
    assert done.returncode == 1
    assert f"{SESSION}: {SESSION}" not in done.stdout
    assert "gitclaw-compress fetch" not in done.stdout, done.stdout
    assert "origin has no refs/gitclaw/archive to fetch either" in done.stdout
    assert "run `gitclaw-compress push` in the clone that compressed them" in done.stdout
    assert tool(work, "push").returncode == 0  # now the remote has it: fetch helps
    done = tool(clone, "doctor")
    assert done.returncode == 1
    assert "cannot be restored from this clone; get the archive with: gitclaw-compress fetch" in (
        done.stdout
    )
    assert tool(clone, "fetch").returncode == 0
    assert tool(clone, "doctor").returncode == 0


def test_the_remotes_archive_is_found_by_its_exact_name(compressed: tuple[Path, bytes]) -> None:
    """`git ls-remote REMOTE REF` also lists refs whose names only end like REF: a copy kept
    at refs/backup/refs/gitclaw/archive is not the archive (it sorts first, and doctor took
    its tip for the archive's)."""
    repo, _ = compressed
    origin = make_origin(repo.parent / "elsewhere")
    git(repo, "remote", "add", "origin", origin.url)
    git(repo, "push", "-q", "origin", "HEAD:refs/backup/refs/gitclaw/archive")
    found = json.loads(tool(repo, "doctor", "--json").stdout)["archive"]
    assert (found["state"], found["remote_tip"]) == ("missing", None), found
    assert tool(repo, "push").returncode == 0
    found = json.loads(tool(repo, "doctor", "--json").stdout)["archive"]
    assert found["state"] == "up-to-date" and found["remote_tip"] == found["local_tip"], found


def _damage(data: bytes, how: str) -> tuple[bytes, int]:
    """One byte changed on one line of a compressed file: in a stub's text, in an unmarked
    line, or in a marker's object id. The new bytes and the line's number."""
    lines = data.split(b"\n")
    for index, line in enumerate(lines[1:], 1):
        marked = b'"gitclawCompress"' in line
        if how == "stub" and marked and b"elided" in line:
            lines[index] = line.replace(b"elided", b"elidex", 1)
        elif how == "kept" and not marked and b'"type"' in line and index > 2:
            lines[index] = line.replace(b'"type"', b'"typf"', 1)
        elif how == "marker" and marked and b'"oid":"' in line:
            at = line.index(b'"oid":"') + len(b'"oid":"')
            flipped = b"1" if line[at : at + 1] == b"0" else b"0"
            lines[index] = line[:at] + flipped + line[at + 1 :]
        else:
            continue
        return b"\n".join(lines), index + 1
    raise AssertionError(f"no line to damage by {how}")


@pytest.mark.parametrize("how", ["stub", "kept", "marker"])
@pytest.mark.parametrize("name", list(SYNTHETIC))
def test_damage_to_a_file_never_committed_names_its_line(repo: Path, name: str, how: str) -> None:
    """Issue 32: with no staged or committed version to compare with, verify and restore
    named the first marker's line ("carries a marker, but the file differs…") for a byte
    changed in a stub or a kept line, and a damaged marker as an archived object "not in
    this clone", which also started a fetch. The record of what compress wrote holds each
    line's digest: the damaged line is named, and nothing is fetched."""
    rel = "s.jsonl"
    write(repo / rel, SYNTHETIC[name][0][1]())
    git(repo, "remote", "add", "origin", str(repo.parent / "no-such-origin"))
    done = tool(repo, "compress", "--force", "--keep-turns", "1", rel)
    assert done.returncode == 0, done.stderr
    damaged, number = _damage((repo / rel).read_bytes(), how)
    (repo / rel).write_bytes(damaged)
    verified = tool(repo, "verify", rel)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    problems = verified.stdout.splitlines()[1:]
    cause = (
        "the line differs from what gitclaw-compress wrote"
        if how == "kept"
        else "the line carries a gitclawCompress marker, but differs from what gitclaw-compress "
        "wrote there (a compressed line was altered, or a line with a marker was copied, moved "
        "or inserted)"
    )
    said = f"{rel}:{number}: {cause}, and no staged or committed version holds it intact"
    assert problems == [f"  {said}"], verified.stdout
    assert "origin" not in verified.stdout + verified.stderr
    restored = tool(repo, "restore", rel)
    assert restored.returncode == 3, restored.stderr
    assert restored.stderr == f"gitclaw-compress: error: {said}; nothing was restored\n"
    assert (repo / rel).read_bytes() == damaged
