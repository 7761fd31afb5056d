"""Copilot CLI: the neutral view of every event, and what the real CLI sends when it resumes.

`resume` must give exactly the messages of the CLI's first chat-completions request, without
its own system prompt (first) and the new prompt (last): roles in order, tool call ids, texts.
Each case runs the real Copilot CLI offline (tests/agent_harness.py) and skips when it is not
installed; the corpus cases skip when the shared corpus is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_harness import corpus_file_params, corpus_transcripts, require_agent, run_resume
from synthetic_copilot import EVENTS_PATH, PNG, REASONING_OPAQUE, EventsBuilder, typical_events

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines
from gitclaw_compress.core.lines import join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.stubs import STUB_PREFIX
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.copilot.rules import FORMAT
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    IMAGE,
    MESSAGE,
    META,
    SUMMARY,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Conversation,
    Message,
)

# What each neutral role is in a chat-completions request: the CLI sends its summary as a user
# message.
CHAT_ROLES = {USER: "user", SUMMARY: "user", ASSISTANT: "assistant", TOOL: "tool"}


def conversation_of(data: bytes) -> Conversation:
    return FORMAT.resume(list(FORMAT.views(lines_from_bytes(data))))


def texts(message: Message, kind: str) -> list[str]:
    return [part.text for part in message.parts if part.kind == kind]


def assert_matches_request(conversation: Conversation, body: dict[str, Any]) -> None:
    """The request's messages, without the CLI's system prompt and new prompt, are ours."""
    sent = body["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["role"] == "user"
    sent = sent[1:-1]
    ours = conversation.messages
    assert [m["role"] for m in sent] == [CHAT_ROLES[m.role] for m in ours]
    for got, want in zip(sent, ours, strict=True):
        if want.role == TOOL:
            (result,) = want.parts
            assert (got["tool_call_id"], got["content"]) == (result.call_id, result.text)
        elif want.role == ASSISTANT:
            calls = [(p.call_id, p.name, p.text) for p in want.parts if p.kind == TOOL_CALL]
            assert [
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in got.get("tool_calls") or ()
            ] == calls
            assert got["content"] == ("".join(texts(want, TEXT)) or None)
        elif isinstance(got["content"], list):  # text and images
            kinds = {"text": TEXT, "image_url": IMAGE}
            assert [kinds[item["type"]] for item in got["content"]] == [p.kind for p in want.parts]
            sent_texts = [item["text"] for item in got["content"] if item["type"] == "text"]
            assert sent_texts == texts(want, TEXT)
        else:
            assert got["content"] == "".join(texts(want, TEXT))
    assert body["model"] == conversation.model


def resume_in_cli(data: bytes, tmp_path: Path) -> dict[str, Any]:
    require_agent("copilot")
    source = tmp_path / "events.jsonl"
    source.write_bytes(data)
    # Compared by structure: the run of the same bytes an earlier test made serves.
    run = run_resume("copilot", source, tmp_path=tmp_path, shared=True)
    assert run.returncode == 0 or run.problems, run.describe()
    return run.body


# --------------------------------------------------------------------------------------
# Synthetic files: what each case shows
# --------------------------------------------------------------------------------------


def edge_events() -> EventsBuilder:
    """Tool results out of order, failures with and without a message, a request without a
    completion, a completion without a request, injected prompts, bookkeeping the model never
    sees, two assistant messages in a row, and a model change."""
    events = EventsBuilder()
    events.start()
    events.user("first")
    events.event("assistant.turn_start", turnId="0", interactionId="i-1")
    events.event(
        "assistant.message",
        messageId="m1",
        content="calling",
        toolRequests=[
            {"toolCallId": f"c{n}", "name": "bash", "arguments": {"command": command}}
            for n, command in enumerate(("ls", "false", "x", "never"), 1)
        ]
        + [{"toolCallId": "c5", "name": "report_intent", "type": "function"}],
        interactionId="i-1",
        reasoningText="think first",
        reasoningOpaque="QUJD",
    )
    events.event("tool.execution_start", toolCallId="c2", toolName="bash", arguments={})
    events.event(
        "tool.execution_complete",
        toolCallId="c2",
        success=False,
        error={"message": "boom failed", "code": "failure"},
        result={"content": "partial output"},
    )
    events.event(
        "tool.execution_complete",
        toolCallId="c1",
        success=True,
        result={"content": "file1", "detailedContent": "DETAILED COPY"},
    )
    events.event("tool.execution_complete", toolCallId="c3", success=False)
    events.event("tool.execution_complete", toolCallId="c5", success=True, result={"content": ""})
    events.event(
        "tool.execution_complete", toolCallId="orphan", success=True, result={"content": "?"}
    )
    events.event("assistant.turn_end", turnId="0")
    events.event("system.message", content="SYSTEM INJECTED", role="system")
    events.event("session.info", infoType="notice", message="INFO NOTICE")
    events.event("session.model_change", previousModel="claude-sonnet-4.6", newModel="gpt-5-mini")
    events.user("second")
    events.event("assistant.message", messageId="m2", content="part one", interactionId="i-1")
    events.event(  # the model it reports is not the one the resume selects
        "assistant.message", messageId="m3", content="part two", model="claude-haiku-4.5"
    )
    events.user("Use the skill", source="skill-pdf")
    events.event("skill.invoked", name="pdf", path="/skills/pdf/SKILL.md", content="PDF SKILL")
    events.user("from another agent", source="agent-helper")
    return events


def compaction(events: EventsBuilder, summary: str, **data: Any) -> None:
    """The two events Copilot CLI writes when it compacts."""
    events.event("session.compaction_start")
    events.event(
        "session.compaction_complete",
        success=True,
        summaryContent=summary,
        preCompactionTokens=5000,
        messagesRemoved=12,
        checkpointNumber=1,
        **data,
    )


def compacted_events() -> EventsBuilder:
    """A compaction record, a failed one (ignored), then a turn after it."""
    events = typical_events()
    events.user("an agent's prompt", source="agent-helper")
    compaction(events, "SUMMARY-ONE of the work")
    events.event("session.compaction_start")
    events.event("session.compaction_complete", success=False, error="the model failed")
    events.user("after the record")
    events.turn([("view", {"path": "/a"}, {"content": "a text"})], "done after")
    return events


def chained_events() -> EventsBuilder:
    """Two records: the newest wins; its summary lists every user message before it."""
    events = compacted_events()
    compaction(events, "SUMMARY-TWO")
    events.user("after the second record")
    return events


def bare_compaction_events() -> EventsBuilder:
    """A record with no user message and no skill before it."""
    events = EventsBuilder()
    events.start()
    compaction(events, "LONE SUMMARY")
    events.user("u1")
    events.event("assistant.message", messageId="m1", content="reply", toolRequests=[])
    return events


def chunked_events() -> EventsBuilder:
    """One model call split into several assistant messages (merged unless a tool result comes
    between), chunk fields without a call id (not merged), a rewind and a truncation (the
    resume ignores both), an attached image, and an image a tool returned."""
    events = EventsBuilder()
    events.start()
    events.user("u1")
    events.event("assistant.message", messageId="a1", content="same call A", apiCallId="A")
    events.event("assistant.message", messageId="a2", content="same call B", apiCallId="A")
    events.user("u2")
    for index in range(2):
        events.event(
            "assistant.message",
            messageId=f"b{index}",
            content=f"chunk only {index}",
            chunkIndex=index,
            chunkCount=2,
        )
    events.user("u3")
    for index, name in enumerate("pq"):
        request = {"toolCallId": f"t{name}", "name": "view", "arguments": {"path": f"/{name}"}}
        events.event(
            "assistant.message",
            messageId=f"c{index}",
            content=f"split {index}",
            toolRequests=[request],
            apiCallId="C",
        )
        result = {
            "content": f"{name} out",
            "binaryResultsForLlm": [{"type": "image", "data": PNG, "mimeType": "image/png"}],
        }
        events.event("tool.execution_complete", toolCallId=f"t{name}", success=True, result=result)
    events.user("u4 to be rewound")
    rewound = events._last
    events.event("assistant.message", messageId="d1", content="", reasoningText="hm", apiCallId="D")
    events.event("assistant.message", messageId="d2", content="after thinking", apiCallId="D")
    events.event("session.snapshot_rewind", upToEventId=rewound, eventsRemoved=3)
    image = {"type": "blob", "data": PNG, "mimeType": "image/png", "displayName": "shot.png"}
    events.event("user.message", content="look", transformedContent="look!", attachments=[image])
    events.event("assistant.message", messageId="e1", content="seen")
    events.event(
        "session.truncation",
        messagesRemovedDuringTruncation=2,
        performedBy="BasicTruncator",
        postTruncationMessagesLength=3,
        postTruncationTokensInMessages=10,
        preTruncationMessagesLength=5,
        preTruncationTokensInMessages=20,
        tokenLimit=1000,
        tokensRemovedDuringTruncation=10,
    )
    events.user("u5")
    return events


def cleared_events() -> EventsBuilder:
    """A cleared context, which a resume starts after, then a record whose summary lists only
    the user messages since the clear (its initial message first) and no earlier skill."""
    events = EventsBuilder()
    events.start()
    events.user("u1 before the clear")
    events.event("skill.invoked", name="old", path="/old/SKILL.md", content="OLD SKILL")
    events.event("assistant.message", messageId="a1", content="r1")
    events.event("session.context_cleared", messagesCleared=2, initialMessage="INITIAL")
    events.user("u2")
    events.event("assistant.message", messageId="a2", content="r2")
    compaction(events, "AFTER THE CLEAR")
    events.user("u3")
    return events


def cleared_only_events() -> EventsBuilder:
    """A cleared context with no record after it: its initial message, then what follows."""
    events = cleared_events()
    del events.lines[-3:]  # the record and the message after it
    events.user("u3")
    return events


def test_a_cleared_context_is_where_the_resume_starts() -> None:
    data = cleared_only_events().data()
    conversation = conversation_of(data)
    assert conversation.compaction == 6
    sent = [(m.role, texts(m, TEXT)[0].rsplit("\n", 1)[-1]) for m in conversation.messages]
    assert sent == [(USER, "INITIAL"), (USER, "u2"), (ASSISTANT, "r2"), (USER, "u3")]


SYNTHETIC = {
    "cleared": cleared_events,
    "cleared-only": cleared_only_events,
    "chunked": chunked_events,
    "typical": typical_events,
    "edge": edge_events,
    "compacted": compacted_events,
    "chained": chained_events,
    "bare-compaction": bare_compaction_events,
}


# --------------------------------------------------------------------------------------
# The view of each event
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_turn_starts_agree_with_the_format(name: str) -> None:
    data = SYNTHETIC[name]().data()
    lines = lines_from_bytes(data)
    views = list(FORMAT.views(lines))
    assert [v.number for v in views] == [line.number for line in lines]
    for line, view in zip(lines, views, strict=True):
        entry = parse_entry(line.data)
        assert entry is not None
        assert view.turn_start == FORMAT.is_turn_start(entry)
        assert view.id == entry["id"] and view.parent == entry["parentId"]


def test_views_of_each_event_kind() -> None:
    views = {v.number: v for v in FORMAT.views(lines_from_bytes(edge_events().data()))}
    kinds = {n: (v.kind, [m.role for m in v.messages]) for n, v in views.items()}
    assert kinds[2] == (META, [])  # session.model_change
    assert views[2].model == "claude-sonnet-4.6"
    assert kinds[3] == (MESSAGE, [USER])
    assert views[3].messages[0].parts[0].text.endswith("\n\nfirst")  # transformedContent
    assistant = views[5].messages[0]
    assert [p.kind for p in assistant.parts] == [THINKING, TEXT, *[TOOL_CALL] * 5]
    thinking = assistant.parts[0]
    assert (thinking.text, thinking.sealed) == ("think first", True)
    assert assistant.parts[2].text == '{"command":"ls"}'
    assert assistant.parts[6].text == "{}"  # no arguments: the CLI sends {}
    assert kinds[6] == (META, [])  # tool.execution_start
    failed = views[7].messages[0].parts[0]
    assert (failed.kind, failed.text, failed.error) == (TOOL_RESULT, "boom failed", True)
    assert views[8].messages[0].parts[0].text == "file1"  # content, not detailedContent
    assert views[9].messages[0].parts[0].text == "Tool execution failed"
    assert [kinds[n] for n in (13, 14)] == [(META, [])] * 2  # system.message, session.info
    assert views[15].model == "gpt-5-mini"
    skill_prompt = views[19]
    assert (skill_prompt.kind, skill_prompt.turn_start) == (MESSAGE, False)
    assert kinds[20] == (META, [])  # skill.invoked


def test_a_compaction_record_is_a_compaction_and_a_failed_one_is_not() -> None:
    lines = lines_from_bytes(compacted_events().data())
    views = FORMAT.views(lines)
    records = [
        view.kind
        for view, line in zip(views, lines, strict=True)
        if json.loads(line.data)["type"] == "session.compaction_complete"
    ]
    assert records == [COMPACTION, META]


def test_resume_places_each_tool_result_after_its_call() -> None:
    conversation = conversation_of(edge_events().data())
    roles = [m.role for m in conversation.messages]
    assert roles[:8] == [USER, ASSISTANT, TOOL, TOOL, TOOL, TOOL, TOOL, USER]
    results = [m.parts[0] for m in conversation.messages[2:7]]
    assert [(r.call_id, r.name) for r in results] == [
        ("c1", "bash"),
        ("c2", "bash"),
        ("c3", "bash"),
        ("c4", "bash"),
        ("c5", "report_intent"),
    ]
    assert results[3].text.startswith("The execution of this tool")
    assert "?" not in [r.text for r in results]  # the orphan completion is dropped
    assert conversation.model == "gpt-5-mini"
    assert conversation.compaction is None


def test_resume_merges_the_messages_of_one_model_call() -> None:
    conversation = conversation_of(chunked_events().data())
    merged = [m for m in conversation.messages if len(m.source_lines()) > 1]
    assert [(texts(m, TEXT), m.lines) for m in merged] == [
        (["same call A", "same call B"], (4, 5)),
        (["after thinking"], (15, 16)),
    ]
    assert [p.kind for p in merged[1].parts] == [TEXT]  # no providerId: reasoning not replayed
    looked = [
        m for m in conversation.messages if m.role == USER and IMAGE in {p.kind for p in m.parts}
    ]
    assert [(p.kind, p.text, p.media_type) for p in looked[0].parts] == [
        (TEXT, "look!", None),
        (TEXT, "shot.png", None),
        (IMAGE, "", "image/png"),
    ]


def test_resume_keeps_reasoning_only_for_the_provider_that_made_it() -> None:
    events = EventsBuilder()
    events.start()
    events.user("u1")
    for provider in ("", "copilot-anthropic"):
        extra = {"providerId": provider} if provider else {}
        events.event(
            "assistant.message",
            messageId=f"m{provider}",
            content="answer",
            reasoningText="why",
            reasoningOpaque=REASONING_OPAQUE,
            **extra,
        )
    views = list(FORMAT.views(lines_from_bytes(events.data())))
    assert [p.kind for p in views[3].messages[0].parts] == [THINKING, TEXT]  # the line has it
    replies = conversation_of(events.data()).messages[1:]
    assert [[(p.kind, p.sealed) for p in m.parts] for m in replies] == [
        [(TEXT, False)],
        [(THINKING, True), (TEXT, False)],
    ]


def test_resume_starts_at_the_newest_record() -> None:
    data = chained_events().data()
    conversation = conversation_of(data)
    lines = lines_from_bytes(data)
    record = max(
        line.number
        for line in lines
        if b'"session.compaction_complete"' in line.data and b'"success":true' in line.data
    )
    assert conversation.compaction == record
    assert conversation.path[0] == record
    summary = conversation.messages[0]
    assert summary.role == SUMMARY and "<summary>\nSUMMARY-TWO\n</summary>" in summary.parts[0].text
    assert "SUMMARY-ONE" not in json.dumps([m.parts[0].text for m in conversation.messages])
    assert [m.role for m in conversation.messages] == [SUMMARY, USER]


# --------------------------------------------------------------------------------------
# Against the real CLI
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_resume_matches_the_real_cli(name: str, tmp_path: Path) -> None:
    data = SYNTHETIC[name]().data()
    body = resume_in_cli(data, tmp_path)
    conversation = conversation_of(data)
    assert_matches_request(conversation, body)
    if conversation.compaction is not None:
        assert body["messages"][1]["content"] == conversation.messages[0].parts[0].text


@pytest.mark.parametrize(
    "path", corpus_file_params(corpus_transcripts("copilot"), "Copilot CLI transcript")
)
def test_resume_of_corpus_file_matches_the_real_cli(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    assert_matches_request(conversation_of(data), resume_in_cli(data, tmp_path))


def test_sealed_reasoning_is_not_sent_back_in_bring_your_own_key_mode(tmp_path: Path) -> None:
    """Why the request cannot show sealed reasoning: the CLI strips it on resume."""
    body = resume_in_cli(typical_events().data(), tmp_path)
    sent = orjson.dumps(body["messages"][1:])
    assert REASONING_OPAQUE.encode() not in sent and b"Let me look at the files" not in sent
    assert all(
        set(m) <= {"role", "content", "tool_calls", "tool_call_id", "__copilotMessageSource"}
        for m in body["messages"]
    )


@pytest.mark.parametrize(
    "source",
    [*corpus_transcripts("copilot"), None],
    ids=lambda p: "typical" if p is None else p.name,
)
def test_resume_of_a_compressed_file_matches_the_real_cli(
    source: Path | None, tmp_path: Path
) -> None:
    """What `context` will show after compression is what the CLI sends: stubs included."""
    data = typical_events().data() if source is None else source.read_bytes()
    lines, _ = compress_entry_lines(
        lines_from_bytes(data),
        CompressSettings(keep_turns=1),
        EVENTS_PATH,
        fmt=detect(lines_from_bytes(data), EVENTS_PATH),
    )
    compressed = join_lines(lines)
    assert compressed != data
    conversation = conversation_of(compressed)
    assert any(part.text.startswith(STUB_PREFIX) for m in conversation.messages for part in m.parts)
    assert_matches_request(conversation, resume_in_cli(compressed, tmp_path))
