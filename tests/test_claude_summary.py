"""Claude Code's own compaction record (`FORMAT.summary_record`): appended to corpus and
synthetic files, resumed in the real CLI (2.1.197, offline), which must send the summary, then
the kept tail with every tool pair and sealed thinking intact, and nothing summarized."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_harness import (
    claude_interactive_screen,
    corpus_transcripts,
    require_agent,
    require_tmux,
    run_resume,
)
from fake_llm_sse import request_size, sealed_reasoning, tool_call_ids
from synthetic_claude import compacted_session, typical_session
from synthetic_claude_context import branched_session, parallel_session
from test_claude_context import assert_first_request_matches, resume_of

from gitclaw_compress.core.context import read_context
from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.claude import rules as claude
from gitclaw_compress.model import SUMMARY, TEXT, TOOL_CALL, USER, SummaryRequest
from gitclaw_compress.summary.plan import (
    AFTER_COMPACTION_SHARE,
    KeepPolicy,
    NoSummary,
    plan_summary,
)
from gitclaw_compress.tokens.estimate import get_estimator

FORMAT = claude.FORMAT
SUMMARY_TEXT = "TEST SUMMARY {n}: the user asked for fixes and the assistant made them."


def request_keeping(data: bytes, turns: int, n: int = 1) -> SummaryRequest:
    """A request that keeps the last `turns` turns of the resumed conversation."""
    views = list(FORMAT.views(lines_from_bytes(data)))
    conversation = FORMAT.resume(views)
    on_path = set(conversation.path)
    starts = [v.number for v in views if v.turn_start and v.number in on_path]
    return SummaryRequest(
        summary=SUMMARY_TEXT.format(n=n),
        first_kept=starts[-turns],
        leaf=conversation.path[-1],
        tokens_before=123_456,
        timestamp="2026-11-23T12:00:00.000Z",
    )


def append_record(data: bytes, request: SummaryRequest) -> bytes:
    record = FORMAT.summary_record(lines_from_bytes(data), request)
    body = data if data.endswith(b"\n") or not data else data + b"\n"
    return body + b"".join(line + b"\n" for line in record)


def messages_size(body: dict[str, Any]) -> int:
    return len(json.dumps(body["messages"], ensure_ascii=False).encode())


def turns_of(data: bytes) -> int:
    views = list(FORMAT.views(lines_from_bytes(data)))
    return sum(1 for v in views if v.turn_start)


def _resume(data: bytes, tmp_path: Path, name: str, shared: bool = False) -> Any:
    """`shared`: the resume of the same bytes another test made, for a run compared by
    structure (agent_harness.run_resume)."""
    require_agent("claude")
    source = tmp_path / f"{name}.jsonl"
    source.write_bytes(data)
    return run_resume("claude", source, tmp_path=tmp_path / name, shared=shared).check()


def _user_texts_before(data: bytes, line: int) -> list[str]:
    """What a person typed before `line` on the resumed path (long enough to be unique)."""
    views = list(FORMAT.views(lines_from_bytes(data)))
    on_path = set(FORMAT.resume(views).path)
    return [
        part.text
        for view in views
        if view.turn_start and view.number < line and view.number in on_path
        for message in view.messages
        for part in message.parts
        if part.kind == TEXT and len(part.text) > 20
    ]


# (transcript, turns kept). Two turns of the parallel session keep a message whose second
# tool call hangs off the walked path: a kept segment walked from its tail loses that pair,
# so the record lists the kept lines as well (checked: the CLI then sends both calls).
SOURCES: dict[str, tuple[Callable[[], bytes], int]] = {
    "synthetic-4-turns": (lambda: typical_session(4).data(), 1),
    "synthetic-parallel": (lambda: parallel_session(6).data(), 2),
}


def newest_turns_share(data: bytes, body: dict[str, Any], turns: int) -> float:
    """The share of the messages the real CLI sent (bytes) that the newest `turns` turns
    hold: from the message that carries the oldest of their requests or, when fewer turns
    began after the last summary (a turn the summary cut in two), from the message after it."""
    views = list(FORMAT.views(lines_from_bytes(data)))
    conversation = FORMAT.resume(views)
    on_path = set(conversation.path)
    requests = [
        part.text
        for view in views
        if view.turn_start and view.number in on_path
        for message in view.messages
        for part in message.parts
        if part.kind == TEXT
    ]
    sent = [json.dumps(message) for message in body["messages"]]
    if len(requests) < turns:
        assert conversation.messages[0].role == SUMMARY
        summary = conversation.messages[0].parts[0].text
        assert json.dumps(summary)[1:-1][:300] in sent[0]
        start = 1
    else:
        wanted = json.dumps(requests[-turns])[1:-1][:300]
        start = max(i for i, text in enumerate(sent) if wanted in text)
    return sum(len(text) for text in sent[start:]) / sum(len(text) for text in sent)


def _params() -> list[Any]:
    params = [pytest.param(name, None, id=name) for name in SOURCES]  # kept: see SOURCES
    for path in corpus_transcripts("claude"):
        if turns_of(path.read_bytes()) >= 4:
            params.append(pytest.param(path.name, path, id=path.name))
    return params


@pytest.mark.parametrize(("name", "path"), _params())
def test_the_cli_resumes_from_the_record(name: str, path: Path | None, tmp_path: Path) -> None:
    builder, keep = SOURCES.get(name, (lambda: b"", 1))
    data = path.read_bytes() if path is not None else builder()
    estimator = get_estimator("chars4")
    context = read_context(FORMAT, lines_from_bytes(data), estimator)
    plan = plan_summary(context, KeepPolicy(turns=keep), estimator, FORMAT.resume)
    if isinstance(plan, NoSummary):
        # summarize writes nothing here and says why: the newest turns hold the bytes. The
        # real CLI's request shows it: they are more than a round may leave.
        assert plan.status == "not-smaller" or "turns since the last summary" in plan.reason
        before = _resume(data, tmp_path, "before", shared=True)
        assert newest_turns_share(data, before.body, keep) > AFTER_COMPACTION_SHARE, plan.reason
        return
    request = request_keeping(data, keep)
    summarized = append_record(data, request)
    assert summarized.startswith(data.rstrip(b"\n"))  # lines appended only
    before = _resume(data, tmp_path, "before", shared=True)
    after = _resume(summarized, tmp_path, "after")
    raw = after.request["raw"]
    assert SUMMARY_TEXT.format(n=1) in raw
    for text in _user_texts_before(data, request.first_kept):
        assert json.dumps(text)[1:-1][:300] not in raw, "a summarized message was sent"
    # The kept tail: its tool calls, each with its result (the fake server checks pairs), and
    # its sealed thinking byte for byte: the newest ones of the full resume.
    conversation = resume_of(summarized)
    kept_calls = [p.call_id for m in conversation.messages for p in m.parts if p.kind == TOOL_CALL]
    assert tool_call_ids(after.body) == kept_calls
    assert (
        kept_calls
        == tool_call_ids(before.body)[len(tool_call_ids(before.body)) - len(kept_calls) :]
    )
    sealed_after = sealed_reasoning(after.body)
    sealed_before = sealed_reasoning(before.body)
    assert sealed_after == sealed_before[len(sealed_before) - len(sealed_after) :]
    assert conversation.messages[0].role == SUMMARY
    assert_first_request_matches(conversation, after.body)
    # The messages: the CLI's own system prompt and tool list (about 100 KB) are the same.
    assert messages_size(after.body) <= 0.4 * messages_size(before.body)
    assert request_size(after.request) < request_size(before.request)


def test_the_interactive_ui_shows_the_record(tmp_path: Path) -> None:
    require_tmux()
    require_agent("claude")
    data = typical_session(4).data()
    source = tmp_path / "summarized.jsonl"
    source.write_bytes(append_record(data, request_keeping(data, 1)))
    screen = claude_interactive_screen(source, tmp_path=tmp_path, expect="Please fix module 3.")
    assert "Conversation compacted" in screen and "Please fix module 0." not in screen


def test_a_second_record_resumes_from_the_newest(tmp_path: Path) -> None:
    data = typical_session(5).data()
    once = append_record(data, request_keeping(data, 2, n=1))
    twice = append_record(once, request_keeping(once, 1, n=2))
    run = _resume(twice, tmp_path, "twice")
    raw = run.request["raw"]
    assert SUMMARY_TEXT.format(n=2) in raw and SUMMARY_TEXT.format(n=1) not in raw
    conversation = resume_of(twice)
    assert conversation.compaction == len(once.splitlines()) + 1
    assert_first_request_matches(conversation, run.body)


def test_a_cut_inside_a_turn_keeps_the_tool_pairs(tmp_path: Path) -> None:
    data = typical_session(4).data()
    request = request_keeping(data, 1)
    # Start the kept tail at the second tool result of the last turn: the record keeps from
    # the assistant message that made that call.
    views = list(FORMAT.views(lines_from_bytes(data)))
    results = [
        v.number for v in views if v.number > request.first_kept and v.links.get("tool_results")
    ]
    cut = SummaryRequest(
        summary=request.summary,
        first_kept=results[1],
        leaf=request.leaf,
        tokens_before=request.tokens_before,
        timestamp=request.timestamp,
    )
    summarized = append_record(data, cut)
    run = _resume(summarized, tmp_path, "cut")
    conversation = resume_of(summarized)
    assert conversation.messages[1].role != USER
    assert_first_request_matches(conversation, run.body)


def test_record_fields() -> None:
    data = typical_session(4).data()
    request = request_keeping(data, 1)
    boundary, summary = (
        json.loads(line) for line in FORMAT.summary_record(lines_from_bytes(data), request)
    )
    taken = {json.loads(line).get("uuid") for line in data.splitlines()}
    for record in (boundary, summary):
        assert str(uuid.UUID(record["uuid"])) == record["uuid"] and record["uuid"] not in taken
        assert record["sessionId"] == "5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11"
        assert record["cwd"] == "/home/dev/project" and record["version"] == "2.1.197"
        assert record["timestamp"] == request.timestamp
    assert boundary["parentUuid"] is None and boundary["subtype"] == "compact_boundary"
    last = json.loads(data.splitlines()[-1])["uuid"]
    assert boundary["logicalParentUuid"] == last
    metadata = boundary["compactMetadata"]
    assert metadata["preTokens"] == request.tokens_before
    segment, listed = metadata["preservedSegment"], metadata["preservedMessages"]
    assert segment["anchorUuid"] == listed["anchorUuid"] == summary["uuid"]
    assert segment["headUuid"] == listed["uuids"][0] and segment["tailUuid"] == last
    assert summary["parentUuid"] == boundary["uuid"] and summary["isCompactSummary"] is True
    assert summary["message"] == {"role": "user", "content": request.summary}


def test_nothing_to_resume_is_refused() -> None:
    with pytest.raises(GitClawError):
        FORMAT.summary_record(
            lines_from_bytes(b'{"type":"summary","summary":"x","leafUuid":"y"}\n'),
            SummaryRequest("s", 1, 1, 0, "2026-11-23T12:00:00.000Z"),
        )


def test_a_record_after_claude_codes_own_compaction(tmp_path: Path) -> None:
    """A file Claude Code compacted itself (a plain boundary): the new record keeps the last
    turn and drops the old summary, which the new one replaces."""
    data = compacted_session().data()
    summarized = append_record(data, request_keeping(data, 1, n=3))
    run = _resume(summarized, tmp_path, "recompacted")
    raw = run.request["raw"]
    assert SUMMARY_TEXT.format(n=3) in raw and "This session is being continued" not in raw
    assert "Please fix module 9." in raw
    assert_first_request_matches(resume_of(summarized), run.body)


def test_a_first_kept_line_off_the_conversation_is_refused() -> None:
    data = branched_session().data()
    new_branch = next(
        number
        for number, line in enumerate(data.splitlines(), start=1)
        if b"New branch question." in line
    )
    request = request_keeping(data, 1)
    off_path = SummaryRequest(
        request.summary, new_branch, request.leaf, request.tokens_before, request.timestamp
    )
    with pytest.raises(GitClawError, match=f"line {new_branch} is not on the conversation"):
        FORMAT.summary_record(lines_from_bytes(data), off_path)
