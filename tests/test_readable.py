"""What a person reads: every command takes --json or refuses it in one line, counts say
what they count, and no suggestion names a command that would do nothing."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import cli, commit_session, git
from synthetic import typical_session

from gitclaw_compress.cli import COMMANDS
from gitclaw_compress.cli import cli as main

SESSION = ".GITCLAW/state/sessions/s.jsonl"


@pytest.fixture
def session(repo: Path) -> Path:
    return commit_session(repo, SESSION, typical_session(turns=6).data())


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_takes_json(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    if command.hidden:  # run by an agent, which reads its stdout: nothing to print
        pytest.skip(f"{name} is run by the agents, not by people")
    shown = CliRunner().invoke(main, [name, "--help"])
    assert shown.exit_code == 0 and "--json" in shown.output


@pytest.mark.parametrize(
    "args",
    [("restore", SESSION, "-o", "-", "--json"), ("show", SESSION, "L2", "--raw", "--json")],
)
def test_json_that_cannot_be_kept_is_refused_in_one_line(
    repo: Path, session: Path, args: tuple[str, ...]
) -> None:
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    done = cli(*args, cwd=repo, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().count("\n") == 1 and "--json" in done.stderr.decode()
    assert json.loads(done.stdout)["ok"] is False  # the refusal, in JSON, is all of stdout


def test_counts_say_what_they_count(repo: Path, session: Path) -> None:
    """compress counts the archive objects it wrote (none: every original is in a commit),
    verify the archive objects the lines read back from: not "0 objects" then "1 object"."""
    said = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    assert "lines compressed, 0 new archive objects;" in said, said
    checked = cli("verify", SESSION, cwd=repo).stdout.decode()
    assert "compressed lines, read back from 1 archive object)" in checked, checked


def test_status_suggests_no_command_that_does_nothing(repo: Path, session: Path) -> None:
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    shown = cli("status", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    row = next(line for line in shown.splitlines() if line.startswith("  compress "))
    assert row == "  compress would change nothing", shown
    nothing = [line for line in shown.splitlines() if "would change nothing" in line]
    assert nothing and not [line for line in nothing if "gitclaw-compress" in line], shown


@pytest.mark.parametrize("kind", ["claude", "pi-compaction"])
def test_context_table_holds_its_columns(repo: Path, kind: str) -> None:
    """36-character uuids (Claude Code) and long roles (pi's compactionSummary) widen
    their column instead of pushing the row's other cells out of line."""
    if kind == "claude":
        from synthetic_claude import typical_session as claude_session

        path = ".claude/projects/-p/5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11.jsonl"
        commit_session(repo, path, claude_session(turns=2).data())
    else:
        from synthetic import compaction_session

        path = SESSION
        commit_session(repo, path, compaction_session().data())
    messages = json.loads(cli("context", "--json", path, cwd=repo).stdout)["messages"]
    shown = cli("context", path, cwd=repo).stdout.decode().splitlines()
    header, rows = shown[1], shown[2 : 2 + len(messages)]
    assert max(len(m["entry_id"] or "") for m in messages) >= 8 or kind != "claude"
    assert any(len(m["source_role"]) > 10 for m in messages) or kind != "pi-compaction"
    starts = {
        len(row) - len(message["preview"]) for row, message in zip(rows, messages, strict=True)
    }
    assert len(starts) == 1, rows  # every preview starts in the same column
    assert header.index("preview") == starts.pop()


TELEPORTED = ".claude/projects/-p/5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11.jsonl"


def test_a_file_of_claude_code_state_lines_alone_is_recognised_and_reported_once(
    repo: Path,
) -> None:
    """Claude Code writes one-line files such as {"type":"teleported-from",…}: no warning
    on any run over every session, one line from compress, its reason in --json."""
    line = {"type": "teleported-from", "sessionId": "5f0c2a61", "remoteSessionId": "r1"}
    commit_session(repo, TELEPORTED, json.dumps(line).encode() + b"\n")
    commit_session(repo, SESSION, typical_session(turns=2).data())
    for args in (("compress", "--all"), ("status", "--all"), ("scan",), ("verify",)):
        done = cli(*args, cwd=repo, check=False)
        assert b"warning" not in done.stderr and b"not a " not in done.stderr, (args, done)
    said = cli("compress", "--all", "--dry-run", cwd=repo).stdout.decode()
    assert said.count(TELEPORTED) == 1
    assert f"unchanged {TELEPORTED}: no conversation (only teleported-from lines)" in said
    files = json.loads(cli("compress", "--all", "--json", cwd=repo).stdout)["files"]
    report = next(one for one in files if one["path"] == TELEPORTED)
    assert (report["status"], report["reason"]) == (
        "unchanged",
        "no conversation (only teleported-from lines)",
    )


@pytest.mark.parametrize("staged", [False, True])
def test_redact_changes_the_index_only_when_something_was_staged_and_says_why(
    repo: Path, staged: bool
) -> None:
    """Nothing staged: the index (HEAD's copy) is left alone, `git status` shows the file
    modified in the work tree only. A staged copy that holds the secret: redacted there too,
    and redact says so and why."""
    from secret_fixtures import planted

    line, _ = next(value for value in planted(3).values() if value[0])
    builder = typical_session(turns=2)
    builder.user(f"here: {line}")
    (repo / "compression.json").write_text('{"scan": {"block": false}}')
    path = commit_session(repo, SESSION, builder.data())
    if staged:
        path.write_bytes(path.read_bytes() + builder.data().splitlines(keepends=True)[-1])
        git(repo, "add", SESSION)
    done = cli("redact", SESSION, "--all", cwd=repo)
    state = git(repo, "status", "--porcelain", "--", SESSION)[:2]
    said = done.stdout.decode()
    document = json.loads(cli("redact", SESSION, "--all", "--json", cwd=repo).stdout)
    if staged:
        assert state == "M " or state == "MM", state
        assert f"{SESSION}: index changed: the staged version held the secrets too" in said
    else:
        assert state == " M", state  # the work tree alone changed
        assert "index" not in said
    assert document["index_changed"] is False  # the second run found nothing left to redact
