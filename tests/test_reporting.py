"""What the commands print: one unit convention, honest dry runs, totals, remedies once, and
the read-only commands finding sessions the way `compress` does when no path is given."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result
from flow_helpers import SESSIONS, commit_all, git, init, ok, session_bytes, write

from gitclaw_compress.cli import cli
from gitclaw_compress.core.marker import original_size
from gitclaw_compress.units import human_bytes, plural, size_change

# POSIX only: Windows skips this module (see LINUX_ONLY_MODULES in conftest.py).
pty = pytest.importorskip("pty", reason="POSIX only")

SMALL_SESSIONS = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}'


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    """Three committed sessions; issue-3 then changed (appended to) by the agent."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", SMALL_SESSIONS)
    for number in (1, 2, 3):
        write(repo / f"{SESSIONS}/issue-{number}.jsonl", session_bytes(4, session_id=f"s{number}"))
    commit_all(repo, "agent runs")
    with open(repo / f"{SESSIONS}/issue-3.jsonl", "ab") as handle:
        handle.write(session_bytes(2).split(b"\n", 1)[1])
    return repo


def test_units() -> None:
    assert [plural(1, "line"), plural(2, "line"), plural(1024, "object")] == [
        "1 line",
        "2 lines",
        "1,024 objects",
    ]
    assert [human_bytes(999), human_bytes(823_400), human_bytes(3 * 1024**2)] == [
        "999 B",
        "804.1 KB",
        "3.0 MB",
    ]
    assert size_change(804_000, 367_000) == "-54.4%"
    assert size_change(100_000, 100_000) == "0%" and size_change(0, 10) == "0%"
    assert size_change(100_000, 99_999) == "-<0.1%"  # never "-0.0%"
    assert size_change(100_000, 100_001) == "+<0.1%"


def test_status_stats_and_context_find_the_sessions_compress_would_take(
    sessions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = f"{SESSIONS}/issue-3.jsonl"
    for command in ("status", "stats", "context"):
        result = run(sessions, monkeypatch, command, "--json")
        assert result.exit_code == 0, result.output
        document = orjson.loads(result.stdout)
        assert document["selected"]["reason"] == "changed"
        assert [file["path"] for file in document["files"]] == [changed], command
        text = run(sessions, monkeypatch, command).stdout
        assert changed in text and f"{SESSIONS}/issue-1.jsonl" not in text
        one = orjson.loads(run(sessions, monkeypatch, command, "--json", changed).stdout)
        assert one == document["files"][0]  # the same document as with the path given


def test_dry_run_says_to_archive_and_all_ends_with_totals(
    sessions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {path: path.read_bytes() for path in (sessions / SESSIONS).iterdir()}
    dry = run(sessions, monkeypatch, "compress", "--all", "--dry-run")
    assert dry.exit_code == 0
    assert "would compress" in dry.stdout and "new archive objects to write" in dry.stdout
    assert dry.stdout.splitlines()[-1].startswith("total: 3 sessions, 3 would compress: ")
    assert {path: path.read_bytes() for path in before} == before
    done = run(sessions, monkeypatch, "compress", "--all")
    lines = done.stdout.splitlines()
    assert "gitclaw-compress: every session file: 3 sessions: " in done.stderr
    total_before = sum(len(data) for data in before.values())
    total_after = sum(path.stat().st_size for path in before)
    assert lines[-1] == (
        f"total: 3 sessions, 3 compressed: {human_bytes(total_before)} -> "
        f"{human_bytes(total_after)} ({size_change(total_before, total_after)}), "
        f"{lines[-1].split('), ')[1]}"
    )
    assert lines[-1].endswith(" new archive objects") and "1 lines" not in done.stdout
    for path, data in before.items():  # the Action's "original" column reads the markers
        assert original_size(path) == len(data)


def test_verify_names_the_remedy_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    origin = init(tmp_path / "origin.git", bare=True)
    repo = init(tmp_path / "work")
    git(repo, "remote", "add", "origin", origin.as_uri())
    write(repo / "compression.json", SMALL_SESSIONS)
    for number in (1, 2):
        write(repo / f"{SESSIONS}/issue-{number}.jsonl", session_bytes(4, session_id=f"s{number}"))
    assert run(repo, monkeypatch, "compress", "--all").exit_code == 0
    git(repo, "update-ref", "-d", "refs/gitclaw/archive")  # lost: never pushed, then deleted
    result = run(repo, monkeypatch, "verify", "--no-fetch")
    assert result.exit_code == 1
    problems = [line for line in result.stdout.splitlines() if line.startswith("  ")]
    assert len(problems) >= 2  # one line per file and cause (not one per line and object)
    assert not any("gitclaw-compress push" in line for line in problems)
    assert result.stdout.count("gitclaw-compress push") == 1
    # origin has no archive either: fetch would bring nothing (doctor's advice, the same)
    assert result.stdout.splitlines()[-1] == (
        "to fix: origin has no refs/gitclaw/archive to fetch either: run `gitclaw-compress "
        "push` in the clone that compressed them"
    )


def test_restore_all_shows_a_progress_bar_on_a_terminal(sessions: Path) -> None:
    """stderr a terminal (a pty): the bar is drawn there; stdout keeps one line per file."""
    originals = {path: path.read_bytes() for path in (sessions / SESSIONS).iterdir()}
    ok(sessions, "compress", "--all")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "restore", "--all"],
            cwd=sessions,
            stdout=subprocess.PIPE,
            stderr=follower,
            check=False,
            env={key: value for key, value in os.environ.items() if key != "CI"},
        )
        os.close(follower)
        drawn = b""
        with contextlib.suppress(OSError):  # EIO once everything written was read
            while chunk := os.read(leader, 65536):
                drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert drawn.startswith("\r\x1b[Kfinding sessions…".encode()), drawn
    assert b"\r\x1b[Krestoring 0/3 sessions" in drawn, drawn
    assert drawn.endswith(b"\r\x1b[K"), drawn  # taken away at the end
    assert done.stdout.decode().splitlines()[-1].startswith("restored 3 sessions: ")
    assert {path: path.read_bytes() for path in originals} == originals


@pytest.mark.parametrize("name", ["pi", "claude", "codex", "copilot"])
def test_stats_after_is_the_size_compress_gives(repo: Path, name: str) -> None:
    """Issue 32: on a committed session stats planned its own way (markers that name
    payloads, no settling with the markers that name the committed version) and its
    'after' differed from what compress then wrote. Now it is the run's own plan and
    lines, before the run and after it."""
    from format_cases import SYNTHETIC

    rel = f"{SESSIONS}/s.jsonl"
    write(repo / rel, SYNTHETIC[name][0][1]())
    commit_all(repo, "agent run")

    def stats_after() -> int:
        done = subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "stats", "--json", "--keep-turns", "1", rel],
            cwd=repo,
            capture_output=True,
            check=True,
        )
        after: int = orjson.loads(done.stdout)["bytes_after"]
        return after

    predicted = stats_after()
    ok(repo, "compress", "--force", "--keep-turns", "1", rel)
    assert (repo / rel).stat().st_size == predicted
    commit_all(repo, "compressed")
    assert stats_after() == predicted  # nothing more would change
