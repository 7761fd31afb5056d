"""`step`, the orchestrator's one command, and `compress --stage`."""

from __future__ import annotations

import json
from pathlib import Path

from flow_helpers import (
    SESSIONS,
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
from synthetic_claude import typical_session as claude_session

from gitclaw_compress.action import summary_markdown
from gitclaw_compress.ops.flow import FlowResult
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.units import human_bytes


def test_step_prints_one_line_and_leaves_the_archive_ready_to_push(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    session = write(origin.work / f"{SESSIONS}/a.jsonl", session_bytes(5))
    out = ok(origin.work, "step", "--keep-turns", "1")
    line = out.stdout.decode()
    assert line.count("\n") == 1
    # Nothing sends the archive here (no hook, no --push): one warning line says so.
    warning = out.stderr.decode()
    assert warning.count("\n") == 1 and "run `gitclaw-compress install`" in warning, warning
    assert line.startswith("gitclaw-compress: 1 session (changed against HEAD): 1 compressed, ")
    before, after = human_bytes(len(session_bytes(5))), human_bytes(session.stat().st_size)
    assert f"{before} -> {after} (" in line
    assert line.rstrip().endswith("push it with: gitclaw-compress push")
    assert git(origin.work, "status", "--porcelain", "--untracked-files=all").startswith("??")
    assert git(origin.bare, "for-each-ref") == ""  # nothing pushed yet
    assert git(origin.work, "rev-parse", "refs/gitclaw/archive")
    out = ok(origin.work, "push")
    assert out.stdout == b"pushed refs/gitclaw/archive to origin\n"
    assert git(origin.bare, "for-each-ref", "refs/gitclaw/archive") != ""


def test_step_push_and_json(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    write(origin.work / f"{SESSIONS}/a.jsonl", session_bytes(5))
    out = ok(origin.work, "step", "--keep-turns", "1", "--push", "--json")
    document = json.loads(out.stdout)
    assert document["selected"]["reason"] == "changed"
    assert document["archive"]["pushed"] is True
    tip = git(origin.bare, "rev-parse", "refs/gitclaw/archive").strip()
    assert document["archive"]["tip"] == tip
    [report] = document["files"]
    assert report["status"] == "compressed" and report["kept_turns"] == 1
    assert report["objects"] > 0 and report["bytes_after"] < report["bytes_before"]


def test_step_push_that_fails_after_compressing_says_what_was_changed(tmp_path: Path) -> None:
    """The sessions are rewritten before the push: its failure must not read as if nothing
    had changed, and it must say how to send the archive later."""
    origin = make_origin(tmp_path)
    session = write(origin.work / f"{SESSIONS}/a.jsonl", session_bytes(5))
    git(origin.work, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    done = tool(origin.work, "step", "--keep-turns", "1", "--push")
    err = one_line_error(done)
    assert "compressed 1 session (refs/gitclaw/archive holds what they dropped)" in err, err
    assert "but it was not pushed: git push origin refs/gitclaw/archive failed" in err, err
    assert err.rstrip().endswith("run `gitclaw-compress push`"), err
    assert "nothing was changed" not in err
    assert marker_count(session.read_bytes()) > 0  # as the line says: compressed

    git(origin.work, "remote", "set-url", "origin", origin.bare.as_uri())
    again = ok(origin.work, "step", "--keep-turns", "1", "--push")
    assert "nothing to compress" in again.stdout.decode()
    assert again.stdout.decode().rstrip().endswith("; pushed to origin")
    assert git(origin.bare, "rev-parse", "refs/gitclaw/archive") == git(
        origin.work, "rev-parse", "refs/gitclaw/archive"
    )
    repeat = ok(origin.work, "step", "--keep-turns", "1", "--push")
    assert repeat.stdout.decode().rstrip().endswith("; origin has it already")


def test_step_with_nothing_to_do_still_prints_one_line(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    write(origin.work / f"{SESSIONS}/a.jsonl", session_bytes(2))
    out = ok(origin.work, "step")
    assert out.stdout.decode().count("\n") == 1
    assert "nothing to compress (1 below-threshold)" in out.stdout.decode()


def test_compress_stage_adds_only_what_it_rewrote(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    big = write(origin.work / f"{SESSIONS}/big.jsonl", session_bytes(5))
    small = write(origin.work / f"{SESSIONS}/small.jsonl", session_bytes(1))
    notes = write(origin.work / "notes.txt", b"not staged\n")
    commit_all(origin.work)
    for path in (big, small, notes):
        with open(path, "ab") as handle:
            handle.write(b"\n")
    out = ok(origin.work, "compress", "--keep-turns", "1", "--force", "--stage")
    assert b"staged .GITCLAW/state/sessions/big.jsonl" in out.stdout
    status = git(origin.work, "status", "--porcelain").splitlines()
    assert f"M  {SESSIONS}/big.jsonl" in status
    assert f" M {SESSIONS}/small.jsonl" in status and " M notes.txt" in status
    staged = git(origin.work, "show", f":{SESSIONS}/big.jsonl").encode()
    assert marker_count(staged) > 0 and staged == big.read_bytes()


def test_step_counts_each_format_in_a_mixed_run(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    write(origin.work / f"{SESSIONS}/a.jsonl", session_bytes(5))
    claude = ".claude/projects/-home-dev-demo/0b6c3f3e-2a8c-4a53-9d2f-3c1e4b5a6d7e.jsonl"
    write(origin.work / claude, claude_session(turns=3).data())
    out = ok(origin.work, "step", "--keep-turns", "1", "--all")
    line = out.stdout.decode()
    assert line.startswith("gitclaw-compress: 2 sessions (")
    assert ": 2 compressed, " in line and "by format: pi 1 of 1, Claude Code 1 of 1, " in line
    document = json.loads(ok(origin.work, "step", "--keep-turns", "1", "--all", "--json").stdout)
    assert document["formats"] == {
        "pi": {"sessions": 1, "compressed": 0},
        "claude": {"sessions": 1, "compressed": 0},
    }
    result = FlowResult(reports=[_report("a.jsonl", "pi"), _report("c.jsonl", "claude")])
    table = summary_markdown(result, "")
    assert "| compressed | Claude Code |" in table
    assert "| 2 compressed (1 pi, 1 Claude Code) | 1 pi, 1 Claude Code |" in table


def _report(path: str, fmt: str) -> FileReport:
    return FileReport(path, "compressed", 2000, 1000, format=fmt, objects=1)
