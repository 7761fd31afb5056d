"""A repository that mixes formats: `status` and `context` report every session, and a
session whose format cannot be served is one line naming the file, the others still reported.

Written so that it passes while Claude Code cannot be read this way (its one line) and keeps
passing once it can (a full report).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, commit_session
from synthetic import typical_session
from synthetic_claude import SESSION_ID
from synthetic_claude import typical_session as claude_session

PI_SESSION = ".GITCLAW/state/sessions/s.jsonl"
CLAUDE_SESSION = f".claude/projects/-home-dev-project/{SESSION_ID}.jsonl"


@pytest.fixture
def mixed(repo: Path) -> Path:
    commit_session(repo, PI_SESSION, typical_session(turns=2).data())
    commit_session(repo, CLAUDE_SESSION, claude_session(turns=2).data())
    return repo


def by_path(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {document["path"]: document for document in documents}


def check_claude(document: dict[str, Any], served: str) -> None:
    """Claude Code's document: either the full report (`served` names one of its keys) or
    the one error line naming the file."""
    if "error" in document:
        assert set(document) == {"path", "error"}
        assert document["error"].startswith(f"{CLAUDE_SESSION}: Claude Code transcripts: ")
        assert "\n" not in document["error"]
    else:
        assert served in document


@pytest.mark.parametrize(("command", "served"), [("status", "level"), ("context", "messages")])
def test_every_session_of_a_mixed_repository_is_reported(
    mixed: Path, command: str, served: str
) -> None:
    done = cli(command, "--all", "--json", cwd=mixed)
    report = json.loads(done.stdout)
    documents = by_path(report["files"])
    assert set(documents) == {PI_SESSION, CLAUDE_SESSION}
    assert served in documents[PI_SESSION] and "error" not in documents[PI_SESSION]
    check_claude(documents[CLAUDE_SESSION], served)
    human = cli(command, "--all", cwd=mixed)
    assert human.returncode == 0
    out = human.stdout.decode()
    assert out.count(f"{PI_SESSION}:") == 1
    claude_lines = [line for line in out.splitlines() if line.startswith(f"{CLAUDE_SESSION}:")]
    assert len(claude_lines) == 1
    if "error" in documents[CLAUDE_SESSION]:
        assert claude_lines == [documents[CLAUDE_SESSION]["error"]]
    assert human.stderr == b""


@pytest.mark.parametrize("command", ["status", "context"])
def test_without_a_path_the_sessions_compress_would_take_are_reported(
    mixed: Path, command: str
) -> None:
    report = json.loads(cli(command, "--json", cwd=mixed).stdout)
    documents = by_path(report["files"])
    assert documents, report
    for path, document in documents.items():
        if path == CLAUDE_SESSION:
            check_claude(document, "path")
        else:
            assert "error" not in document


def test_a_single_session_that_cannot_be_served_is_an_error(mixed: Path) -> None:
    done = cli("status", "--json", PI_SESSION, cwd=mixed)
    assert json.loads(done.stdout)["path"] == PI_SESSION
    claude = cli("status", CLAUDE_SESSION, cwd=mixed, check=False)
    if claude.returncode != 0:
        assert claude.returncode == 3
        [line] = claude.stderr.decode().strip().splitlines()
        assert line.startswith(f"gitclaw-compress: error: {CLAUDE_SESSION}: Claude Code ")


def test_a_path_and_all_together_are_refused(mixed: Path) -> None:
    done = cli("status", "--all", PI_SESSION, cwd=mixed, check=False)
    assert done.returncode == 3 and b"not both" in done.stderr


def test_the_summary_stage_skips_a_format_that_cannot_summarize(mixed: Path) -> None:
    from gitclaw_compress.config import parse_config
    from gitclaw_compress.store.archive import Repository
    from gitclaw_compress.summary.stage import maybe_summarize

    config = parse_config(
        b'{"summary": {"enabled": true, "whenLevel": "warning", "blockCommitOnFailure": true}}', "c"
    )
    repo = Repository(mixed)
    before = (mixed / CLAUDE_SESSION).read_bytes()
    outcome = maybe_summarize(repo, mixed / CLAUDE_SESSION, config)  # never raises
    assert (mixed / CLAUDE_SESSION).read_bytes() == before or outcome.report is not None
    assert outcome.warning is not None or outcome.level is not None  # skipped, or measured
    if outcome.warning is not None:
        assert outcome.warning.startswith(f"summary stage skipped: {CLAUDE_SESSION}: Claude Code")
        assert not outcome.ran
