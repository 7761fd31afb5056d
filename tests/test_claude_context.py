"""Claude Code's neutral view and resume: each line's messages, and the conversation that
`FORMAT.resume` rebuilds, checked against the first request of the real CLI (2.1.332, offline
against the fake server) on every corpus file and on synthetic files of each resume rule."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_harness import corpus_transcripts, require_agent, run_resume
from synthetic_claude import (
    ClaudeSession,
    broken_session,
    compacted_session,
    images_session,
    subagent_session,
    typical_session,
)
from synthetic_claude_context import (
    attachments_session,
    branched_session,
    file_attachments_session,
    local_command_session,
    parallel_session,
    progress_session,
    unfinished_session,
)

from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats.claude import rules as claude
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    META,
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Conversation,
)

FORMAT = claude.FORMAT
API_ROLES = {USER: "user", TOOL: "user", SUMMARY: "user", ASSISTANT: "assistant", SYSTEM: "system"}


def resume_of(data: bytes) -> Conversation:
    return FORMAT.resume(list(FORMAT.views(lines_from_bytes(data))))


SYNTHETIC: dict[str, Callable[[], bytes]] = {
    "typical": lambda: typical_session().data(),
    "compacted": lambda: compacted_session().data(),
    "images": lambda: images_session().data(),
    "parallel": lambda: parallel_session().data(),
    "branched": lambda: branched_session().data(),
    "branched-explicit": lambda: branched_session(explicit=True).data(),
    "progress": lambda: progress_session().data(),
    "attachments-opus-4-5": lambda: attachments_session("claude-opus-4-5-20251101").data(),
    "attachments-new-model": lambda: attachments_session("claude-opus-4-8").data(),
    "file-attachment-opus-4-5": lambda: file_attachments_session("claude-opus-4-5-20251101").data(),
    "file-attachment-new-model": lambda: file_attachments_session("claude-opus-4-8").data(),
    # A line that does not parse: its child finds the line written just before, by time.
    "broken-line": broken_session,
    "unanswered-call-at-the-end": lambda: unfinished_session("call").data(),
    "unanswered-call-then-prompt": lambda: unfinished_session("call-then-prompt").data(),
    "ends-with-a-tool-result": lambda: unfinished_session("result").data(),
    "ends-with-a-prompt": lambda: unfinished_session("prompt").data(),
    "local-command-and-api-error": lambda: local_command_session().data(),
}


# --------------------------------------------------------------------------------------
# The view of one line
# --------------------------------------------------------------------------------------


def test_view_of_each_line_kind() -> None:
    data = compacted_session().data()
    views = list(FORMAT.views(lines_from_bytes(data)))
    kinds = {view.links["type"] for view in views}
    assert {"summary", "file-history-snapshot", "progress", "system"} <= kinds
    for view in views:
        if view.links["type"] in ("summary", "file-history-snapshot", "progress"):
            assert view.kind == META and view.messages == []
    boundary = next(v for v in views if v.kind == COMPACTION)
    assert boundary.parent is None and boundary.messages == []
    summary = next(v for v in views if v.messages and v.messages[0].role == SUMMARY)
    assert summary.parent == boundary.id and "This session is being continued" in (
        summary.messages[0].parts[0].text
    )
    thinking = [p for v in views for m in v.messages for p in m.parts if p.kind == THINKING]
    assert {p.sealed for p in thinking} == {True, False}  # signed, and an empty signature
    parts = [p for v in views for m in v.messages for p in m.parts]
    calls = {p.call_id: p for p in parts if p.kind == TOOL_CALL}
    read_call = json.loads(calls["toolu_read0"].text)
    assert read_call == {"file_path": "/home/dev/project/src/module0.py"}
    results = [p for p in parts if p.kind == TOOL_RESULT]
    read = next(p for p in results if p.call_id == "toolu_read0")
    assert read.name == "Read" and read.text.startswith("1\t")
    assert next(p for p in results if p.call_id == "toolu_bash0").error


def test_view_usage_is_what_claude_code_counts_as_context() -> None:
    views = list(FORMAT.views(lines_from_bytes(parallel_session().data())))
    replies = [m for v in views for m in v.messages if m.role == ASSISTANT]
    # input 3 + cache writes 200 + cache reads 1000 + output 40
    assert {m.usage for m in replies} == {1243}
    assert {m.model for m in replies} == {"claude-opus-4-6"}


def test_turn_start_agrees_with_is_turn_start() -> None:
    sources = [builder() for builder in SYNTHETIC.values()]
    sources += [path.read_bytes() for path in corpus_transcripts("claude")]
    for data in sources:
        for line in lines_from_bytes(data):
            entry = parse_entry(line.data)
            if entry is not None:
                view = FORMAT.view(line.number, entry)
                assert view.turn_start == FORMAT.is_turn_start(entry)


def test_api_error_replies_are_not_sent() -> None:
    session = ClaudeSession()
    session.user("Hello.")
    session.chain(
        "assistant",
        isApiErrorMessage=True,
        message={"id": "e", "role": "assistant", "model": "<synthetic>", "content": []},
    )
    assert [m.role for m in resume_of(session.data()).messages] == [USER]


# --------------------------------------------------------------------------------------
# Resume rules, without the CLI
# --------------------------------------------------------------------------------------


def test_a_split_message_is_one_message_with_its_lines() -> None:
    conversation = resume_of(parallel_session().data())
    roles = [m.role for m in conversation.messages]
    assert roles == [USER, ASSISTANT, TOOL, ASSISTANT, USER, ASSISTANT]
    reply, results = conversation.messages[1], conversation.messages[2]
    assert [p.call_id for p in reply.parts if p.kind == TOOL_CALL] == ["toolu_par_a", "toolu_par_b"]
    assert reply.lines == (2, 3, 4) and results.lines == (5, 6)
    assert [p.call_id for p in results.parts] == ["toolu_par_b", "toolu_par_a"]


def test_last_prompt_naming_an_ancestor_of_the_newest_line_gives_the_newest() -> None:
    session = branched_session()
    record = json.loads(session.lines[-1])
    record["leafUuid"] = json.loads(session.lines[1])["uuid"]  # the fork: an ancestor
    session.lines[-1] = json.dumps(record).encode()
    texts = [p.text for m in resume_of(session.data()).messages for p in m.parts]
    assert "New branch answer." in texts and "Old branch answer." not in texts


def test_compaction_sends_from_the_boundary() -> None:
    data = compacted_session().data()
    conversation = resume_of(data)
    assert conversation.compaction is not None
    assert conversation.messages[0].role == SUMMARY
    assert conversation.messages[0].line == conversation.compaction + 1
    assert conversation.model == "claude-opus-4-6"


# --------------------------------------------------------------------------------------
# Against the real CLI
# --------------------------------------------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _texts(value: object) -> list[str]:
    """Every text of a message's content, tool results' included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    if isinstance(value, dict):
        return _texts(value.get("text")) + _texts(value.get("content"))
    return []


def assert_first_request_matches(conversation: Conversation, body: dict[str, Any]) -> None:
    """The request holds `resume`'s messages, in order, then the CLI's own: the new prompt
    with its reminders (a user message, and a system one on new models). When the transcript
    ends with tool calls that have no result, the CLI first answers them with results of its
    own ("[Tool call interrupted: ...]"); when it ends with a user message (or so answered
    calls), the CLI answers it with "No response requested." (and adds "Continue from where
    you left off." after a tool result). A system message with no content that only carries
    `output_config` (the effort 2.1.332 states after the first user message of a session
    that resumes from a summary record of ours) is the CLI's too, and holds no text."""
    sent = [m for m in body["messages"] if not settings_only(m)]
    ours = conversation.messages
    roles = [API_ROLES[m.role] for m in ours]
    compared = len(ours)
    assert [m["role"] for m in sent[:compared]] == roles
    added = sent[compared:]
    open_calls = [p.call_id for p in ours[-1].parts if p.kind == TOOL_CALL] if ours else []
    if open_calls and roles[-1] == "assistant":
        answers = _blocks(added[0])
        assert [b.get("tool_use_id") for b in answers] == open_calls
        assert all("Tool call interrupted" in json.dumps(b) for b in answers)
        roles, added = [*roles, "user"], added[1:]
    if roles and roles[-1] == "user":
        assert added[0]["role"] == "assistant"
        assert "No response requested." in json.dumps(added[0])
        added = added[1:]
    assert [m["role"] for m in added] in (["user"], ["user", "system"])
    assert "next" in json.dumps(added[0])
    for mine, theirs in zip(ours[:compared], sent, strict=False):
        blocks = _blocks(theirs)
        calls = [p.call_id for p in mine.parts if p.kind == TOOL_CALL]
        assert calls == [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [p.call_id for p in mine.parts if p.kind == TOOL_RESULT]
        assert results == [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        thoughts = [p for p in mine.parts if p.kind == THINKING]
        assert len(thoughts) == len([b for b in blocks if "thinking" in str(b.get("type"))])
        sent_text = "\n".join(_texts(theirs.get("content")))
        for part in mine.parts:
            if part.kind == TEXT and part.text.strip():
                assert part.text.strip()[:200] in sent_text


def settings_only(message: dict[str, Any]) -> bool:
    """A message Claude Code adds that carries settings and no content."""
    return (
        message.get("role") == "system"
        and message.get("content") == []
        and ("output_config" in message)
    )


def _resume_in_cli(data: bytes, tmp_path: Path) -> dict[str, Any]:
    require_agent("claude")
    source = tmp_path / "session.jsonl"
    source.write_bytes(data)
    # Compared by structure: the run of the same bytes an earlier test made serves.
    run = run_resume("claude", source, tmp_path=tmp_path, shared=True).check()
    assert len(run.llm_requests) == 1
    return run.body


def _corpus_params() -> list[Any]:
    files = corpus_transcripts("claude")
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no ../shared/corpus"))]
    return [pytest.param(path, id=path.name) for path in files]


@pytest.mark.parametrize("path", _corpus_params())
def test_corpus_resume_matches_the_cli(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    body = _resume_in_cli(data, tmp_path)
    assert_first_request_matches(resume_of(data), body)


@pytest.mark.parametrize("name", list(SYNTHETIC))
def test_synthetic_resume_matches_the_cli(name: str, tmp_path: Path) -> None:
    data = SYNTHETIC[name]()
    body = _resume_in_cli(data, tmp_path)
    conversation = resume_of(data)
    assert_first_request_matches(conversation, body)
    raw = json.dumps(body)
    if name.startswith("branched"):
        assert "Old branch answer." in raw and "New branch" not in raw
    if name == "compacted":
        assert "an early question" not in raw and conversation.compaction is not None


def test_a_file_of_sidechain_lines_is_the_subagents_own_conversation(tmp_path: Path) -> None:
    """A subagent's own file: every line is a sidechain. Claude Code finds no conversation to
    resume in it (it exits 1 without a request); the conversation is the subagent's own chain,
    what the subagent sent its model, so that status, context and prune serve it."""
    data = subagent_session().data()
    conversation = resume_of(data)
    assert conversation.messages and conversation.messages[0].role == "user"
    assert conversation.path == sorted(conversation.path)
    require_agent("claude")
    source = tmp_path / "subagent.jsonl"
    source.write_bytes(data)
    run = run_resume("claude", source, tmp_path=tmp_path)
    assert run.returncode == 1 and run.llm_requests == []
    assert "No conversation found" in run.stderr
