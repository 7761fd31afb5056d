"""Copilot CLI's own compaction record, written by `summary_record` and resumed by the real CLI.

Copilot CLI 1.0.102 sends nothing from before a `session.compaction_complete`: a record can
carry the summary alone, so a request that keeps turns is refused with the reason (the
evidence is in docs/formats.md). The tests append the record with a plain summary, resume the
file in the real CLI offline and read its first request.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_harness import corpus_file_params, corpus_transcripts, require_agent, run_resume
from synthetic_copilot import typical_events
from test_copilot_conversation import assert_matches_request, conversation_of

from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats.base import Unsupported
from gitclaw_compress.formats.copilot.rules import FORMAT
from gitclaw_compress.model import COMPACTION, SUMMARY, USER, SummaryRequest

SUMMARY_TEXT = "A plain test summary: the build was fixed in app.ts and checked twice."
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def summary_request(
    data: bytes, summary: str = SUMMARY_TEXT, first_kept: int = 0
) -> SummaryRequest:
    """A request that keeps nothing after the summary unless `first_kept` says otherwise."""
    last = len(lines_from_bytes(data))
    return SummaryRequest(
        summary=summary,
        first_kept=first_kept or last + 1,
        leaf=last,
        tokens_before=54321,
        timestamp="2026-03-05T10:00:00.000Z",
    )


def with_record(data: bytes, summary: str = SUMMARY_TEXT) -> bytes:
    record = FORMAT.summary_record(lines_from_bytes(data), summary_request(data, summary))
    return data + b"".join(line + b"\n" for line in record)


def turn_starts(data: bytes) -> list[int]:
    return [
        line.number
        for line in lines_from_bytes(data)
        if FORMAT.is_turn_start(parse_entry(line.data) or {})
    ]


def test_a_summary_that_keeps_turns_is_refused_with_the_reason() -> None:
    data = typical_events().data()
    kept = turn_starts(data)[-1]
    with pytest.raises(Unsupported) as refused:
        FORMAT.summary_record(lines_from_bytes(data), summary_request(data, first_kept=kept))
    assert refused.value.ability == "a summary that keeps turns"
    assert "lists every earlier user message, so no turn can be kept" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_record_is_two_events_in_the_cli_shape_after_the_last_one() -> None:
    data = typical_events().data()
    summary = "line one\u2028line two"  # a raw U+2028 would end the line for the CLI
    record = FORMAT.summary_record(lines_from_bytes(data), summary_request(data, summary))
    assert len(record) == 2 and all(b"\n" not in line for line in record)
    assert "\u2028".encode() not in b"".join(record)
    start, complete = (orjson.loads(line) for line in record)
    ids = {orjson.loads(line.data)["id"] for line in lines_from_bytes(data)}
    last_id = orjson.loads(lines_from_bytes(data)[-1].data)["id"]
    assert (start["type"], start["data"], start["parentId"]) == (
        "session.compaction_start",
        {},
        last_id,
    )
    assert (complete["type"], complete["parentId"]) == ("session.compaction_complete", start["id"])
    assert complete["data"]["success"] is True and complete["data"]["summaryContent"] == summary
    assert complete["data"]["preCompactionTokens"] == 54321
    assert all(UUID4.match(event["id"]) for event in (start, complete))
    assert start["id"] != complete["id"] and not {start["id"], complete["id"]} & ids
    assert [list(event) for event in (start, complete)] == [
        ["type", "data", "id", "timestamp", "parentId"]
    ] * 2
    view = FORMAT.view(99, complete)
    assert view.kind == COMPACTION
    # the same request gives the same record: a rerun changes nothing
    again = FORMAT.summary_record(lines_from_bytes(data), summary_request(data, summary))
    assert again == record


def test_resume_honours_the_record() -> None:
    data = with_record(typical_events().data())
    conversation = conversation_of(data)
    assert conversation.compaction == len(lines_from_bytes(data))
    (summary,) = conversation.messages
    assert (
        summary.role == SUMMARY
        and f"<summary>\n{SUMMARY_TEXT}\n</summary>" in summary.parts[0].text
    )


def corpus_with_four_turns() -> list[Path]:
    return [
        path for path in corpus_transcripts("copilot") if len(turn_starts(path.read_bytes())) >= 4
    ]


def resumed(data: bytes, tmp_path: Path, name: str, shared: bool = False) -> dict[str, Any]:
    """With `shared`, the run of the same bytes another test made (agent_harness): for the
    original, compared with the summarized file by size only."""
    source = tmp_path / name
    source.write_bytes(data)
    return run_resume("copilot", source, tmp_path=tmp_path, shared=shared).check().body


def check_resumes_from_the_record(data: bytes, tmp_path: Path) -> tuple[int, ...]:
    """Resume with and without the record; returns the request sizes, then the sizes of
    their messages after the system prompt."""
    require_agent("copilot")
    before = resumed(data, tmp_path, "before.jsonl", shared=True)
    recorded = with_record(data)
    after = resumed(recorded, tmp_path, "after.jsonl")
    messages = after["messages"]
    assert SUMMARY_TEXT in messages[1]["content"]
    assert [m["role"] for m in messages] == ["system", "user", "user"]  # summary, new prompt
    sent = orjson.dumps(messages)
    call_ids = re.findall(rb'"toolCallId":"([^"]+)"', data)
    assert call_ids and not any(call_id in sent for call_id in call_ids)
    assert_matches_request(conversation_of(recorded), after)
    assert messages[1]["content"] == conversation_of(recorded).messages[0].parts[0].text
    # The CLI's system prompt and tool definitions are the same in both: compare the rest too.
    sizes = len(orjson.dumps(before)), len(orjson.dumps(after))
    conversation = [len(orjson.dumps(body["messages"][1:])) for body in (before, after)]
    assert conversation[1] <= 0.4 * conversation[0], conversation
    return (*sizes, *conversation)


@pytest.mark.parametrize(
    "path", corpus_file_params(corpus_with_four_turns(), "Copilot CLI transcript of four turns")
)
def test_the_real_cli_resumes_a_corpus_file_from_the_record(path: Path, tmp_path: Path) -> None:
    before, after, *messages = check_resumes_from_the_record(path.read_bytes(), tmp_path)
    assert after <= 0.4 * before
    print(f"{path.name}: request {before:,} -> {after:,} bytes, messages {messages}")


def test_the_real_cli_resumes_a_synthetic_file_from_the_record(tmp_path: Path) -> None:
    before, after, *messages = check_resumes_from_the_record(typical_events().data(), tmp_path)
    print(f"typical: request {before:,} -> {after:,} bytes, messages {messages}")


def test_a_second_record_chained_after_the_first_is_the_one_resumed(tmp_path: Path) -> None:
    require_agent("copilot")
    events = typical_events()
    first = with_record(events.data(), "FIRST SUMMARY")
    events.lines = [line for line in first.split(b"\n") if line]
    events._last = orjson.loads(events.lines[-1])["id"]
    events.user("One more request after the first record")
    events.turn([("view", {"path": "/after"}, {"content": "after text"})], "Seen.")
    second = with_record(events.data(), "SECOND SUMMARY")
    body = resumed(second, tmp_path, "chained.jsonl")
    conversation = conversation_of(second)
    assert_matches_request(conversation, body)
    text = body["messages"][1]["content"]
    assert "SECOND SUMMARY" in text and "FIRST SUMMARY" not in text
    assert "One more request after the first record" in text  # listed, as the CLI lists it
    assert [m.role for m in conversation.messages] == [SUMMARY]
    assert conversation.messages[0].parts[0].text == text
    assert USER not in [m.role for m in conversation.messages]


def copies_after(data: bytes, first: int) -> bytes:
    """Copies of the events from line `first` on, appended with new ids in a new chain: the
    only way to put a kept tail after a record, which `summary_record` refuses."""
    lines = lines_from_bytes(data)
    parent = orjson.loads(lines[-1].data)["id"]
    copied = []
    for number, line in enumerate(lines[first - 1 :], first):
        event = orjson.loads(line.data)
        if event["type"].startswith("session."):
            continue
        event["id"] = f"00000000-0000-4000-8000-c0b1{len(lines):04x}{number:04x}"
        event["parentId"], parent = parent, event["id"]
        copied.append(orjson.dumps(event) + b"\n")
    return data + b"".join(copied)


def test_why_a_kept_tail_cannot_follow_the_record(tmp_path: Path) -> None:
    """The evidence for the refusal: the CLI sends copies placed after a record (tool pairs
    intact), but its summary lists every user message before the record, the kept one too,
    so that request reaches the model twice, and once more with each chained record."""
    require_agent("copilot")
    data = typical_events().data()
    kept = turn_starts(data)[-1]
    once = copies_after(with_record(data), kept)
    body = resumed(once, tmp_path, "once.jsonl")
    listed = "<user_message>\nCheck once more\n</user_message>"
    sent = [m["content"] or "" for m in body["messages"]]
    assert sent[1].count(listed) == 1 and sent[2].endswith("\n\nCheck once more")
    calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    assert calls == [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert_matches_request(conversation_of(once), body)  # resume reads such a file right
    twice_kept = turn_starts(once)[-1]
    chained = copies_after(with_record(once, "SECOND"), twice_kept)
    body = resumed(chained, tmp_path, "chained.jsonl")
    assert body["messages"][1]["content"].count(listed) == 2
