"""Copilot CLI: budget pruning stubs the chosen tool outputs, even inside the kept turns.

The core is driven directly (the budget policy is wired to this format at the merge): the plan
prunes every tool completion, the kept window covers the whole file, and only the outputs
change; the real CLI then resumes the file with every tool pair intact.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
from agent_harness import require_agent, run_resume
from synthetic_copilot import EVENTS_PATH, typical_events
from test_copilot_conversation import assert_matches_request, conversation_of

from gitclaw_compress.core.compressor import CompressSettings, compress_lines, plan_lines
from gitclaw_compress.core.lines import MARKER_KEY, join_lines, lines_from_bytes
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.core.stubs import STUB_PREFIX
from gitclaw_compress.formats.copilot.rules import FORMAT
from gitclaw_compress.model import TOOL

SETTINGS = CompressSettings(keep_turns=10)  # every turn kept: only pruning changes anything


def prune(data: bytes, numbers: frozenset[int]) -> tuple[bytes, dict[str, bytes]]:
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, SETTINGS, session_ref=EVENTS_PATH, fmt=FORMAT)
    assert plan.window_start <= 2  # nothing before the kept window
    plan = dataclasses.replace(plan, pruned=numbers)
    out, payloads = [], {}
    for result in compress_lines(lines, plan, SETTINGS, session_ref=EVENTS_PATH):
        out.append(result.line)
        payloads.update({payload.oid: payload.data for payload in result.payloads})
    return join_lines(out), payloads


def tool_output_lines(data: bytes) -> frozenset[int]:
    views = FORMAT.views(lines_from_bytes(data))
    return frozenset(v.number for v in views if [m.role for m in v.messages] == [TOOL])


def without_outputs(line: bytes) -> object:
    """A line's event without its marker and its tool output (content and UI copies)."""
    event = orjson.loads(line)
    event.pop(MARKER_KEY, None)
    result = event["data"].get("result")
    if isinstance(result, dict):
        for key in ("content", "detailedContent", "contents"):
            result.pop(key, None)
    return event


def test_pruning_stubs_only_the_chosen_outputs_inside_the_kept_turns() -> None:
    data = typical_events().data()
    chosen = tool_output_lines(data)
    pruned, payloads = prune(data, chosen)
    before, after = data.split(b"\n"), pruned.split(b"\n")
    assert len(before) == len(after)
    changed = {n for n, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b}
    assert changed and changed <= chosen
    stubbed = 0
    for number in changed:
        assert without_outputs(after[number - 1]) == without_outputs(before[number - 1])
        content = orjson.loads(after[number - 1])["data"]["result"]["content"]
        original = orjson.loads(before[number - 1])["data"]["result"]["content"]
        stubbed += content.startswith(STUB_PREFIX)
        assert content.startswith(STUB_PREFIX) or content == original
    assert stubbed >= 4  # the large outputs, kept turns or not
    # small outputs too: a stub that would not save its marker's bytes is left alone
    small = [orjson.loads(after[n - 1])["data"]["result"]["content"] for n in sorted(chosen)]
    assert "Created" in small
    restored = join_lines(
        restore_line(line, "s", payloads.get) for line in lines_from_bytes(pruned)
    )
    assert restored == data


def test_lines_not_chosen_stay_byte_identical() -> None:
    data = typical_events().data()
    chosen = sorted(tool_output_lines(data))[:1]
    pruned, _ = prune(data, frozenset(chosen))
    before, after = data.split(b"\n"), pruned.split(b"\n")
    assert [n for n, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b] == chosen


def test_the_real_cli_resumes_a_pruned_file_with_every_tool_pair(tmp_path: Path) -> None:
    require_agent("copilot")
    data = typical_events().data()
    pruned, _ = prune(data, tool_output_lines(data))
    source = tmp_path / "events.jsonl"
    source.write_bytes(pruned)
    body = run_resume("copilot", source, tmp_path=tmp_path).check().body
    conversation = conversation_of(pruned)
    assert_matches_request(conversation, body)
    sent = body["messages"]
    calls = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    answers = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert calls == answers and len(set(calls)) == len(calls)
    stubbed = [m for m in sent if m["role"] == "tool" and m["content"].startswith(STUB_PREFIX)]
    assert len(stubbed) >= 3
    assert len(orjson.dumps(body)) < len(data)
