"""`status`, `context` and `prune` on a repository that holds all four formats, run as commands.

Each session sits at its format's default location, so `--all` and discovery find it. Every
format gets a full report, with exit 0. (A format the layers could not serve would be the one
line naming the file, listed in `NOT_SERVED`, the others still reported.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, git
from synthetic import typical_session
from synthetic_claude import SESSION_ID as CLAUDE_ID
from synthetic_claude import typical_session as claude_session
from synthetic_codex import SESSION_ID as CODEX_ID
from synthetic_codex import typical_rollout
from synthetic_copilot import SESSION_ID as COPILOT_ID
from synthetic_copilot import typical_events

SESSIONS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "pi": (".GITCLAW/state/sessions/s.jsonl", lambda: typical_session(turns=3).data()),
    "claude": (
        f".claude/projects/-home-dev-project/{CLAUDE_ID}.jsonl",
        lambda: claude_session().data(),
    ),
    "codex": (
        f".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-{CODEX_ID}.jsonl",
        lambda: typical_rollout().data(),
    ),
    "copilot": (
        f".copilot/session-state/{COPILOT_ID}/events.jsonl",
        lambda: typical_events().data(),
    ),
}
PATHS = {name: path for name, (path, _) in SESSIONS.items()}
# Formats whose conversation the layers cannot read yet: one line naming the file. None now.
NOT_SERVED: dict[str, str] = {}
# Budget pruning that acts on these small files: no minimum, a small protected window.
EAGER = b'{"prune": {"minimumTokens": 0, "protectTokens": 1000}}'


def write_sessions(repo: Path) -> None:
    for path, make in SESSIONS.values():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(make())


@pytest.fixture
def four(repo: Path) -> Path:
    """A repository whose last commit holds one session of each format."""
    write_sessions(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent runs")
    return repo


def documents_by_format(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    by_path = {document["path"]: document for document in report["files"]}
    assert set(by_path) == set(PATHS.values()), sorted(by_path)
    return {name: by_path[path] for name, path in PATHS.items()}


def check_documents(documents: dict[str, dict[str, Any]], served_key: str) -> None:
    for name, document in documents.items():
        if name in NOT_SERVED:
            assert set(document) == {"path", "error"}, name
            assert document["error"].startswith(f"{PATHS[name]}: {NOT_SERVED[name]}")
            assert "\n" not in document["error"]
        else:
            assert "error" not in document, document.get("error")
            assert served_key in document, name


def test_status_all_reports_every_format(four: Path) -> None:
    done = cli("status", "--all", "--json", cwd=four)
    documents = documents_by_format(json.loads(done.stdout))
    check_documents(documents, "level")
    for name, document in documents.items():
        if name in NOT_SERVED:
            continue
        assert document["level"] == "ok" and document["messages"] > 0, name
        assert document["source"] in ("usage", "usage+estimate", "estimate")
        assert document["model"], name
        assert set(document["savings"]) == {"compress", "deep", "prune", "target"}
    assert done.stderr == b""


def test_context_all_reports_every_format(four: Path) -> None:
    done = cli("context", "--all", "--json", cwd=four)
    documents = documents_by_format(json.loads(done.stdout))
    check_documents(documents, "messages")
    for name, document in documents.items():
        if name in NOT_SERVED:
            continue
        assert document["format"] == name
        messages = document["messages"]
        assert document["totals"]["active_messages"] == len(messages) > 0
        assert {"user", "assistant", "tool"} <= {message["role"] for message in messages}
        assert [message["index"] for message in messages] == list(range(len(messages)))


@pytest.mark.parametrize("command", ["status", "context"])
def test_text_reports_every_format_once(four: Path, command: str) -> None:
    done = cli(command, "--all", cwd=four)
    out = done.stdout.decode()
    for name, path in PATHS.items():
        mine = [line for line in out.splitlines() if line.startswith(f"{path}:")]
        assert len(mine) == 1, (name, mine)
        if name in NOT_SERVED:
            assert mine[0].startswith(f"{path}: {NOT_SERVED[name]}")
    assert done.stderr == b""


@pytest.mark.parametrize("command", ["status", "context"])
def test_without_a_path_every_changed_session_is_reported(repo: Path, command: str) -> None:
    """Nothing committed yet: every session is changed against HEAD, so each is taken."""
    write_sessions(repo)
    report = json.loads(cli(command, "--json", cwd=repo).stdout)
    assert report["selected"]["reason"] == "changed"
    check_documents(documents_by_format(report), "path")


def test_without_a_path_status_reports_the_newest_session(four: Path) -> None:
    report = json.loads(cli("status", "--json", cwd=four).stdout)
    assert report["selected"]["reason"] == "newest"
    [document] = report["files"]
    assert "error" not in document and document["path"] in PATHS.values()


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_prune_dry_run_on_each_format(four: Path, name: str, tmp_path: Path) -> None:
    config = tmp_path / "eager.json"
    config.write_bytes(EAGER)
    path = PATHS[name]
    before = (four / path).read_bytes()
    done = cli("prune", "--dry-run", "--json", "--config", str(config), path, cwd=four, check=False)
    assert (four / path).read_bytes() == before
    if name in NOT_SERVED:
        assert done.returncode == 3
        assert json.loads(done.stdout)["error"].startswith(f"{path}: {NOT_SERVED[name]}")
        return
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)["files"]
    assert report["status"] == "would-compress", report
    assert report["bytes_after"] < report["bytes_before"]
    assert report["budget"]["freed_tokens"] > 0
    assert report["budget"]["decision"].startswith("budget pruning: ")
    text = cli("prune", "--dry-run", "--config", str(config), path, cwd=four)
    assert text.stdout.decode().startswith(f"would prune {path}: ")
    assert (four / path).read_bytes() == before


def test_status_prints_commands_that_a_shell_reads_back(repo: Path) -> None:
    """A path with a space is quoted once in the commands `status` prints for pasting."""
    import shlex

    path = ".GITCLAW/state/sessions/my session.jsonl"
    (repo / path).parent.mkdir(parents=True)
    (repo / path).write_bytes(typical_session(turns=2).data())
    report = json.loads(cli("status", "--json", path, cwd=repo).stdout)
    for saving in report["savings"].values():
        assert shlex.split(saving["command"])[-1] == path, saving["command"]
