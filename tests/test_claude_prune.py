"""Budget pruning for Claude Code: a line the budget policy chose has its tool results stubbed,
wherever it is (here inside the kept turns), and nothing else; the real CLI resumes the pruned
file with every tool pair intact. The core is driven directly with a plan that prunes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
from agent_harness import require_agent, run_resume
from fake_llm_sse import request_size, sealed_reasoning, tool_call_ids
from synthetic_claude import typical_session

from gitclaw_compress.core.compressor import CompressSettings, compress_lines, plan_lines
from gitclaw_compress.core.lines import join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.core.stubs import is_stub
from gitclaw_compress.formats.claude import rules as claude

REF = ".claude/projects/-home-dev-project/s.jsonl"
KEEP_ALL = CompressSettings(keep_turns=100)


def _result_lines(data: bytes) -> list[int]:
    """Lines that hold a tool result."""
    numbers = []
    for line in lines_from_bytes(data):
        entry = parse_entry(line.data)
        content = (entry or {}).get("message", {}).get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            numbers.append(line.number)
    return numbers


def prune(data: bytes, numbers: list[int]) -> tuple[bytes, dict[str, bytes]]:
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, KEEP_ALL, session_ref=REF, fmt=claude.FORMAT)
    assert plan.window_start <= 2  # every turn is kept: only the pruning touches lines
    plan = dataclasses.replace(plan, pruned=frozenset(numbers))
    out, payloads = [], {}
    for result in compress_lines(lines, plan, KEEP_ALL, session_ref=REF):
        out.append(result.line)
        payloads.update({p.oid: p.data for p in result.payloads})
    return join_lines(out), payloads


def test_pruning_stubs_only_the_chosen_tool_outputs() -> None:
    data = typical_session(2).data()
    chosen = _result_lines(data)[-3:]  # inside the last turn
    pruned, payloads = prune(data, chosen)
    before, after = data.split(b"\n"), pruned.split(b"\n")
    assert len(before) == len(after)
    for number, (old, new) in enumerate(zip(before, after, strict=True), start=1):
        if number not in chosen:
            assert old == new, f"line {number} changed"
            continue
        original, stubbed = orjson.loads(old), orjson.loads(new)
        blocks = stubbed["message"]["content"]
        for old_block, block in zip(original["message"]["content"], blocks, strict=True):
            assert block["tool_use_id"] == old_block["tool_use_id"]
            assert block.get("is_error") == old_block.get("is_error")
            content = block["content"]
            assert type(content) is type(old_block["content"])
            text = content if isinstance(content, str) else content[0]["text"]
            assert is_stub(text)
        # The renderer's copy, ids and links stay.
        for key in ("toolUseResult", "uuid", "parentUuid", "sessionId"):
            assert stubbed[key] == original[key]
    restored = join_lines(
        restore_line(line, "s", payloads.get) for line in lines_from_bytes(pruned)
    )
    assert restored == data


def test_a_pruned_file_resumes_with_every_tool_pair(tmp_path: Path) -> None:
    require_agent("claude")
    data = typical_session(2).data()
    pruned, _ = prune(data, _result_lines(data))
    runs = []
    for name, content in (("before", data), ("after", pruned)):
        source = tmp_path / f"{name}.jsonl"
        source.write_bytes(content)
        runs.append(run_resume("claude", source, tmp_path=tmp_path / name).check())
    before, after = runs
    assert tool_call_ids(after.body) == tool_call_ids(before.body)
    assert sealed_reasoning(after.body) == sealed_reasoning(before.body)
    assert len(after.body["messages"]) == len(before.body["messages"])
    assert request_size(after.request) < request_size(before.request)
