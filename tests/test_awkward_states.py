"""Awkward repository states: detached HEAD and no commits work; the rest fail in one line
and touch nothing."""

from __future__ import annotations

from pathlib import Path

from flow_helpers import (
    SESSIONS,
    commit_all,
    git,
    init,
    marker_count,
    ok,
    one_line_error,
    session_bytes,
    tool,
    write,
)

from gitclaw_compress.store.archive import Repository

ARCHIVE = "refs/gitclaw/archive"


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def test_detached_head_works(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    session = write(repo / SESSIONS / "s.jsonl", session_bytes(4))
    commit_all(repo)
    git(repo, "checkout", "-q", "--detach", "HEAD")
    with open(session, "ab") as handle:
        handle.write(session_bytes(3).split(b"\n", 1)[1])
    original = session.read_bytes()
    out = ok(repo, "step", "--keep-turns", "1")
    assert "1 compressed" in out.stdout.decode()
    assert marker_count(session.read_bytes()) > 0
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # still detached
    ok(repo, "restore", f"{SESSIONS}/s.jsonl", "-o", "restored.jsonl")
    assert (repo / "restored.jsonl").read_bytes() == original


def test_repository_with_no_commits_works(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    session = write(repo / SESSIONS / "s.jsonl", session_bytes(5))
    original = session.read_bytes()
    out = ok(repo, "compress", "--keep-turns", "1", "--force")
    assert "compressed" in out.stdout.decode()
    assert git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False) == ""
    assert marker_count(session.read_bytes()) > 0
    assert b'"commit":' not in session.read_bytes()  # there is no commit to point at
    ok(repo, "verify")
    ok(repo, "restore", f"{SESSIONS}/s.jsonl")
    assert session.read_bytes() == original


def test_bare_repository_is_a_one_line_error(tmp_path: Path) -> None:
    bare = init(tmp_path / "bare.git", bare=True)
    before = sorted(p.relative_to(bare).as_posix() for p in bare.rglob("*"))
    for args in (("compress",), ("step",), ("verify",), ("push",)):
        error = one_line_error(tool(bare, *args))
        assert "bare git repository" in error
        assert ("nothing was changed" in error) == (args != ("verify",)), error
    assert sorted(p.relative_to(bare).as_posix() for p in bare.rglob("*")) == before


def test_inside_the_git_directory_is_a_one_line_error(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo / SESSIONS / "s.jsonl", session_bytes(4))
    error = one_line_error(tool(repo / ".git", "compress"))
    assert "inside the .git directory" in error
    assert refs(repo) == ""


def test_session_outside_the_repository_is_a_one_line_error(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    inside = write(repo / SESSIONS / "in.jsonl", session_bytes(5))
    outside = write(tmp_path / "elsewhere" / "out.jsonl", session_bytes(5))
    commit_all(repo)
    link = repo / SESSIONS / "link.jsonl"
    link.symlink_to(outside)  # an untracked session that resolves outside the work tree
    originals = {inside: inside.read_bytes(), outside: outside.read_bytes()}

    for args in (
        ("compress", "--force", f"{SESSIONS}/in.jsonl", str(outside)),
        ("compress", "--force"),  # discovery finds the new symlink
        ("step",),
    ):
        error = one_line_error(tool(repo, *args))
        assert "outside the git repository" in error and "nothing was changed" in error, error
        for path, data in originals.items():
            assert path.read_bytes() == data
        assert refs(repo).count("refs/") == 1  # only the branch: no archive ref
    error = one_line_error(tool(tmp_path / "elsewhere", "compress", "out.jsonl"))
    assert "not inside a git repository" in error


def test_file_locked_by_another_run_is_a_one_line_error(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    first = write(repo / SESSIONS / "a.jsonl", session_bytes(5))
    second = write(repo / SESSIONS / "b.jsonl", session_bytes(5))
    commit_all(repo)
    for path in (first, second):
        with open(path, "ab") as handle:
            handle.write(session_bytes(2).split(b"\n", 1)[1])
    originals = {path: path.read_bytes() for path in (first, second)}
    holder = Repository(repo)
    rel = holder.relative(second)
    with holder.lock(rel, rel):  # another run holds b.jsonl
        for args in (
            ("compress", "--force", "--keep-turns", "1"),
            ("compress", "--force", "--keep-turns", "1", f"{SESSIONS}/a.jsonl", rel),
            ("step", "--keep-turns", "1"),
        ):
            error = one_line_error(tool(repo, *args))
            assert "locked by another gitclaw-compress run" in error, error
            assert "b.jsonl" in error
            # a.jsonl comes first and is not locked: it is untouched all the same.
            for path, data in originals.items():
                assert path.read_bytes() == data
            assert ARCHIVE not in refs(repo)
            assert not list((repo / SESSIONS).glob(".gitclaw-compress-tmp-*"))
    ok(repo, "compress", "--force", "--keep-turns", "1")  # released: it goes through
    assert marker_count(second.read_bytes()) > 0
