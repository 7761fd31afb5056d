"""Session discovery for `compress` and `step` with no path: never by mtime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from flow_helpers import (
    SESSIONS,
    commit_all,
    git,
    init,
    marker_count,
    ok,
    one_line_error,
    same_mtime,
    session_bytes,
    tool,
    write,
)

from gitclaw_compress.cli import cli
from gitclaw_compress.commands import progress as progress_module
from gitclaw_compress.config import load_config
from gitclaw_compress.ops import discovery
from gitclaw_compress.store.archive import Repository

AGENT_FOLDERS = (
    ".GITCLAW",
    ".GITOPENCLAW",
    ".github-minimum-intelligence",
    ".issue-intelligence",
    ".forgejo-intelligence",
    "my-agent",
)


def chosen(repo: Path, *args: str) -> tuple[list[str], str]:
    """The files `compress` would take, and why (a dry run: nothing is written)."""
    out = ok(repo, "compress", "--dry-run", "--force", "--keep-turns", "1", "--json", *args)
    document = json.loads(out.stdout)
    return [entry["path"] for entry in document["files"]], document["selected"]["reason"]


@pytest.fixture
def crowded(tmp_path: Path) -> tuple[Path, list[Path]]:
    """Six committed sessions with one mtime; the last one has the newest last entry."""
    repo = init(tmp_path / "repo")
    paths = []
    for number in range(6):
        stamp = f"2026-03-0{number + 1}T10:00:00.000Z"
        paths.append(
            write(repo / SESSIONS / f"s{number}.jsonl", session_bytes(4, last_stamp=stamp))
        )
    commit_all(repo)
    same_mtime(*paths)
    return repo, paths


def test_changed_session_wins_among_equal_mtimes(crowded: tuple[Path, list[Path]]) -> None:
    repo, paths = crowded
    before = {path: path.read_bytes() for path in paths}
    with open(paths[2], "ab") as handle:  # the agent's run: an older session grows
        handle.write(session_bytes(2).split(b"\n", 1)[1])
    same_mtime(*paths)
    assert chosen(repo) == ([f"{SESSIONS}/s2.jsonl"], "changed")
    ok(repo, "compress", "--keep-turns", "1", "--force")
    for path in paths:
        if path == paths[2]:
            assert marker_count(path.read_bytes()) > 0
        else:
            assert path.read_bytes() == before[path], path


def test_staged_and_untracked_sessions_are_changed(crowded: tuple[Path, list[Path]]) -> None:
    repo, paths = crowded
    new = write(repo / SESSIONS / "new.jsonl", session_bytes(3, last_stamp="2020-01-01T00:00Z"))
    assert chosen(repo) == ([f"{SESSIONS}/new.jsonl"], "changed")
    with open(paths[0], "ab") as handle:
        handle.write(b"\n")
    git(repo, "add", paths[0].relative_to(repo).as_posix())
    same_mtime(new, *paths)
    assert chosen(repo) == ([f"{SESSIONS}/new.jsonl", f"{SESSIONS}/s0.jsonl"], "changed")


def test_clean_tree_takes_the_newest_last_entry_not_the_newest_mtime(
    crowded: tuple[Path, list[Path]],
) -> None:
    repo, paths = crowded
    same_mtime(*paths)
    same_mtime(paths[0], when=1_800_000_000)  # the oldest session has the newest mtime
    assert chosen(repo) == ([f"{SESSIONS}/s5.jsonl"], "newest")


def test_a_changed_mapping_file_names_the_session(crowded: tuple[Path, list[Path]]) -> None:
    repo, _ = crowded
    # The session lives outside sessions.globs; only the mapping file leads to it.
    elsewhere = write(repo / ".GITCLAW/runs/issue-7.jsonl", session_bytes(3))
    write(repo / ".GITCLAW/state/issues/7.json", b'{"issueNumber":7}')
    commit_all(repo)
    mapping = {
        "issueNumber": 7,
        "sessionPath": ".GITCLAW/runs/issue-7.jsonl",
        "updatedAt": "2026-01-01T00:00:00.000Z",
    }
    write(repo / ".GITCLAW/state/issues/7.json", json.dumps(mapping).encode())
    same_mtime(elsewhere)
    assert chosen(repo) == ([".GITCLAW/runs/issue-7.jsonl"], "changed")


def test_newest_mapping_file_wins_over_newest_session_on_a_clean_tree(
    crowded: tuple[Path, list[Path]],
) -> None:
    repo, _ = crowded
    for number, (session, updated) in enumerate(
        [("s1", "2026-05-01T00:00:00Z"), ("s3", "2026-05-02T00:00:00Z")], start=1
    ):
        mapping = {
            "issueNumber": number,
            "sessionPath": f"{SESSIONS}/{session}.jsonl",
            "updatedAt": updated,
        }
        write(repo / f".GITCLAW/state/issues/{number}.json", json.dumps(mapping).encode())
    commit_all(repo)
    assert chosen(repo) == ([f"{SESSIONS}/s3.jsonl"], "mapping")
    assert chosen(repo, "--issue", "1") == ([f"{SESSIONS}/s1.jsonl"], "issue")
    error = one_line_error(tool(repo, "compress", "--issue", "9"))
    assert "no mapping file for issue 9" in error


def test_an_issue_mapping_that_names_no_session_says_why(tmp_path: Path) -> None:
    """`--issue N` stops in one line that names the mapping file and what is wrong with it
    (it said "names no session file" whatever the cause, and the cause went unprinted)."""
    repo = init(tmp_path / "repo")
    write(repo / f"{SESSIONS}/s.jsonl", session_bytes(3))
    issues = ".GITCLAW/state/issues"
    cases = {
        "1": (b"not json", f"{issues}/1.json: not valid JSON"),
        "2": (b'{"issueNumber":2}', f"{issues}/2.json: no sessionPath string"),
        "3": (
            b'{"issueNumber":3,"sessionPath":".GITCLAW/state/sessions/gone.jsonl"}',
            f"{issues}/3.json: sessionPath .GITCLAW/state/sessions/gone.jsonl does not exist",
        ),
        "4": (
            b'{"issueNumber":4,"sessionPath":"../elsewhere.jsonl"}',
            f"{issues}/4.json: sessionPath ../elsewhere.jsonl is outside the repository",
        ),
    }
    for number, (content, _) in cases.items():
        write(repo / f"{issues}/{number}.json", content)
    commit_all(repo)
    before = (repo / f"{SESSIONS}/s.jsonl").read_bytes()
    for number, (_, reason) in cases.items():
        error = one_line_error(tool(repo, "compress", "--issue", number))
        assert f"issue {number}: {reason}; pass the session path instead" in error, error
    assert (repo / f"{SESSIONS}/s.jsonl").read_bytes() == before


def test_every_agent_folder_is_found_and_others_are_not(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    expected = []
    for folder in AGENT_FOLDERS:
        rel = f"{folder}/state/sessions/{folder.strip('.')}.jsonl"
        write(repo / rel, session_bytes(2))
        expected.append(rel)
    deep = "my-agent/state/archive/2026/sessions/deep.jsonl"
    write(repo / deep, session_bytes(2))
    expected.append(deep)
    for stray in (
        ".GITCLAW/sessions/not-state.jsonl",
        ".GITCLAW/state/sessions/sub/too-deep.jsonl",
        "a/b/state/sessions/two-levels.jsonl",
        ".GITCLAW/state/sessions/notes.txt",
    ):
        write(repo / stray, session_bytes(2))
    commit_all(repo)
    files, reason = chosen(repo, "--all")
    assert reason == "all"
    assert files == sorted(expected)


def test_non_session_changed_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo / SESSIONS / "real.jsonl", session_bytes(3))
    write(repo / SESSIONS / "junk.jsonl", b'{"type":"not-a-header"}\n')
    done = ok(repo, "compress", "--dry-run", "--force", "--keep-turns", "1", "--json")
    document = json.loads(done.stdout)
    assert [entry["path"] for entry in document["files"]] == [f"{SESSIONS}/real.jsonl"]
    assert any(
        "junk.jsonl: not a session transcript of a supported format" in w
        for w in document["warnings"]
    )


def test_verify_with_no_path_skips_a_non_session_file_with_a_warning(tmp_path: Path) -> None:
    """As compress, status, stats, context and scan do: one stray file where sessions live
    must not stop verify from checking the others (it stopped with exit 3), nor count as a
    session in doctor."""
    repo = init(tmp_path / "repo")
    write(repo / SESSIONS / "real.jsonl", session_bytes(3))
    write(repo / SESSIONS / "junk.jsonl", b'{"type":"not-a-header"}\n')
    done = ok(repo, "verify")
    assert done.stdout.decode().splitlines() == [f"ok: {SESSIONS}/real.jsonl (no compressed line)"]
    assert (
        f"warning: {SESSIONS}/junk.jsonl: not a session transcript of a supported format"
        in done.stderr.decode()
    )
    doctor = tool(repo, "doctor")
    assert "\nsessions:      1 session, 0 compressed," in doctor.stdout.decode(), doctor.stdout
    assert (
        f"warning: {SESSIONS}/junk.jsonl: not a session transcript of a supported format"
        in doctor.stderr.decode()
    )
    (repo / SESSIONS / "real.jsonl").unlink()
    done = tool(repo, "verify")
    assert done.returncode == 3
    assert (
        done.stderr.decode()
        .splitlines()[-1]
        .startswith("gitclaw-compress: error: no session files found under ")
    ), done.stderr


def test_nothing_to_find_is_not_an_error(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    done = ok(repo, "compress")
    assert b"no session to compress" in done.stdout
    step = ok(repo, "step")
    assert step.stdout.decode().count("\n") == 1


def test_last_timestamp_reads_backwards_past_blank_and_broken_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "TAIL_CHUNK", 5)  # lines longer than a chunk
    path = write(
        tmp_path / "s.jsonl",
        session_bytes(2, last_stamp="2026-07-01T12:00:00.5+02:00") + b"\n{broken\n\n",
    )
    stamp = discovery.last_timestamp(path)
    assert stamp is not None and stamp.isoformat() == "2026-07-01T12:00:00.500000+02:00"
    lines = path.read_bytes().split(b"\n")
    assert list(discovery._lines_from_end(path)) == lines[::-1]
    assert discovery.parse_time(1771587860000) is not None
    assert discovery.parse_time("yesterday") is None
    assert discovery.parse_time(True) is None


@pytest.mark.parametrize("tty", [True, False])
def test_all_shows_a_progress_bar_only_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    repo = init(tmp_path / "repo")
    for number in range(3):
        write(repo / SESSIONS / f"s{number}.jsonl", session_bytes(3))
    commit_all(repo)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(progress_module, "shows_progress", lambda as_json=False: tty)
    result = CliRunner().invoke(cli, ["compress", "--all", "--force", "--keep-turns", "1"])
    assert result.exit_code == 0, result.output
    assert ("compressing" in result.stderr) is tty
    assert result.stdout.count("compressed .GITCLAW") == 3


def test_sessions_are_the_files_git_tracks_or_would_add(tmp_path: Path) -> None:
    """Discovery asks git, so ignored folders (node_modules, build output) are never
    walked or taken, nor are files deleted from the work tree; an untracked session that
    is not ignored is taken."""
    repo = init(tmp_path / "repo")
    tracked = write(repo / SESSIONS / "tracked.jsonl", session_bytes(3))
    deleted = write(repo / SESSIONS / "gone.jsonl", session_bytes(3))
    write(repo / ".gitignore", b"vendor/\n")
    commit_all(repo)
    deleted.unlink()
    untracked = write(repo / SESSIONS / "untracked.jsonl", session_bytes(3))
    write(repo / "vendor" / SESSIONS / "ignored.jsonl", session_bytes(3))
    write(repo / "vendor" / "x" / "subagents" / "agent-1.jsonl", session_bytes(3))
    config = load_config(None, repo, None)
    found = discovery.all_sessions(Repository(repo), config)
    assert found == sorted([tracked, untracked])
