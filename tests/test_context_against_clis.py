"""The `context --json` COMMAND against the first request of each real agent CLI.

For every corpus file of each format (pi, Claude Code, Codex, Copilot CLI), and one synthetic
file per format so that the check runs without the corpus, the file is committed into a
hermetic repository and `context --json` is run on it, as a user runs it. The messages it
lists as sent must be, in number and in order, the messages the real CLI sends when it
resumes the same file (offline, against the fake server), less what the CLI adds itself (its
system prompt, its new turn). The list is also the format's `resume`, message for message,
so the request checks of each format's own tests (texts, tool call ids) apply to what the
command printed.

Each CLI case skips when that CLI is not installed (fails under CI); corpus cases skip when
the shared corpus is absent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codex_requests import compare, item_role
from codex_requests import resume_in_cli as codex_resume
from conftest import cli, git
from fake_llm_sse import conversation
from format_cases import corpus_cases
from pi_harness import chain_reaches_root, require_pi, run_pi_resume
from synthetic import typical_session
from synthetic_claude import typical_session as claude_session
from synthetic_codex import typical_rollout
from synthetic_copilot import typical_events
from test_claude_context import API_ROLES, assert_first_request_matches
from test_claude_context import _resume_in_cli as claude_resume
from test_copilot_conversation import CHAT_ROLES, assert_matches_request
from test_copilot_conversation import resume_in_cli as copilot_resume

from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats import FORMATS
from gitclaw_compress.model import SUMMARY, THINKING, USER, Conversation, Message

# Where each format's file is committed ({stem}: the source file's name without .jsonl).
LAYOUT = {
    "pi": ".GITCLAW/state/sessions/{stem}.jsonl",
    "claude": ".claude/projects/-repo/{stem}.jsonl",
    "codex": ".codex/sessions/2026/03/30/rollout-{stem}.jsonl",
    "copilot": ".copilot/session-state/{stem}/events.jsonl",
}
SYNTHETIC: dict[str, Callable[[], bytes]] = {
    "pi": lambda: typical_session(turns=3).data(),
    "claude": lambda: claude_session().data(),
    "codex": lambda: typical_rollout().data(),
    "copilot": lambda: typical_events().data(),
}


def cases() -> list[Any]:
    found = []
    for name in LAYOUT:
        found.append(pytest.param(name, None, id=f"{name}-synthetic"))
        found += [pytest.param(name, path, id=f"{name}-{path.stem}") for path in corpus_cases(name)]
    return found


def command_messages(repo: Path, name: str, stem: str, data: bytes) -> list[dict[str, Any]]:
    """The messages `context --json` lists as sent, for the file committed at its place."""
    relpath = LAYOUT[name].format(stem=stem)
    (repo / relpath).parent.mkdir(parents=True, exist_ok=True)
    (repo / relpath).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    report = json.loads(cli("context", "--json", relpath, cwd=repo).stdout)
    assert report["format"] == name
    messages: list[dict[str, Any]] = report["messages"]
    return [message for message in messages if message["sent"]]


def resumed(name: str, data: bytes) -> Conversation:
    fmt = FORMATS[name]
    return fmt.resume(list(fmt.views(lines_from_bytes(data))))


def same_as_resume(listed: list[dict[str, Any]], conversation_: Conversation) -> None:
    """The command lists the format's `resume`: the same messages, from the same lines."""
    sent = [message for message in conversation_.messages if message.sent]
    assert [(m["role"], m["line"]) for m in listed] == [(m.role, m.line) for m in sent]


def chat_roles(listed: list[dict[str, Any]]) -> list[str]:
    """The command's roles as a chat-completions request names them (a summary is sent as a
    user message)."""
    return [CHAT_ROLES[message["role"]] for message in listed]


def check_pi(listed: list[dict[str, Any]], source: Path, tmp_path: Path) -> None:
    """pi over chat completions: its system prompt, the context, the new prompt."""
    require_pi()
    validate = chain_reaches_root(source)
    run = run_pi_resume(
        source, tmp_path=tmp_path, api="openai-completions", validate=validate, shared=True
    )
    [body] = run.bodies
    sent = body["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["role"] == USER
    assert [message["role"] for message in sent[1:-1]] == chat_roles(listed)


def check_claude(listed: list[dict[str, Any]], data: bytes, tmp_path: Path) -> None:
    """Claude Code's Messages request: the context, then the CLI's new turn (which `assert_
    first_request_matches` checks); a tool's output is sent in a user message."""
    body = claude_resume(data, tmp_path)
    assert_first_request_matches(resumed("claude", data), body)
    sent = body["messages"]
    assert len(sent) > len(listed)
    assert [m["role"] for m in sent[: len(listed)]] == [API_ROLES[m["role"]] for m in listed]


def codex_item_role(message: Message) -> str:
    """The role of the input item Codex sends for one message of `resume`: a summary is the
    `compaction` item of a replacement history as it was (sealed), else a user message."""
    if message.role != SUMMARY:
        return message.role
    return SUMMARY if any(part.kind == THINKING and part.sealed for part in message.parts) else USER


def check_codex(listed: list[dict[str, Any]], data: bytes, tmp_path: Path) -> None:
    """Codex's Responses input: the rollout's items (base instructions first), then its new
    turn (context messages and the prompt), which `compare` checks."""
    body = codex_resume(data, tmp_path).body
    ours = resumed("codex", data)
    assert compare(ours, body) == []
    items = conversation(body)
    assert len(items) > len(listed)
    theirs = [item_role(item) for item in items[: len(listed)]]
    sent = [message for message in ours.messages if message.sent]
    assert [m["role"] for m in listed] == [m.role for m in sent]
    assert theirs == [codex_item_role(message) for message in sent]


def check_copilot(listed: list[dict[str, Any]], data: bytes, tmp_path: Path) -> None:
    """Copilot over chat completions: its system prompt, the context, the new prompt."""
    body = copilot_resume(data, tmp_path)
    assert_matches_request(resumed("copilot", data), body)
    assert [message["role"] for message in body["messages"][1:-1]] == chat_roles(listed)


@pytest.mark.parametrize(("name", "source"), cases())
def test_context_lists_what_the_cli_sends(
    name: str, source: Path | None, repo: Path, tmp_path: Path
) -> None:
    data = SYNTHETIC[name]() if source is None else source.read_bytes()
    stem = "synthetic" if source is None else source.stem
    listed = command_messages(repo, name, stem, data)
    assert listed, "the command lists no message"
    same_as_resume(listed, resumed(name, data))
    if name == "pi":
        if source is None:
            source = tmp_path / "synthetic.jsonl"
            source.write_bytes(data)
        check_pi(listed, source, tmp_path)
    elif name == "claude":
        check_claude(listed, data, tmp_path)
    elif name == "codex":
        check_codex(listed, data, tmp_path / "codex")
    else:
        check_copilot(listed, data, tmp_path)
