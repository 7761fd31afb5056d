"""Claude Code transcripts: each field kind compressed (or kept), each stub of the JSON type it
replaces, broken lines untouched, and what the commands show of them. The CLI flow, the
default globs and the corpus after gc are in test_cli_contract.py, for every format."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result
from conftest import commit_session
from synthetic import typical_session as pi_session
from synthetic_claude import (
    PNG,
    SESSION_ID,
    SIGNATURE,
    ClaudeSession,
    broken_session,
    compacted_session,
    images_session,
    text,
    typical_session,
)

from gitclaw_compress.cli import cli
from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines, plan_lines
from gitclaw_compress.core.lines import MARKER_KEY, Entry, RawLine, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_data
from gitclaw_compress.core.stubs import STUB_PREFIX, is_stub
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.claude import rules as claude
from gitclaw_compress.formats.pi import rules as pi

KEEP_ONE = CompressSettings(keep_turns=1)
SESSION = f".claude/projects/-home-dev-project/{SESSION_ID}.jsonl"


def compressed(data: bytes, settings: CompressSettings = KEEP_ONE) -> list[RawLine]:
    lines, _ = compress_entry_lines(
        lines_from_bytes(data), settings, "s.jsonl", fmt=detect(lines_from_bytes(data), "s.jsonl")
    )
    return lines


def entries(lines: list[RawLine]) -> list[Entry]:
    return [entry for line in lines if (entry := parse_entry(line.data)) is not None]


def result_of(items: list[Entry], call_id: str) -> Entry:
    """The user line that holds the tool_result of `call_id`."""
    for entry in items:
        content = (entry.get("message") or {}).get("content")
        if isinstance(content, list) and any(
            block.get("tool_use_id") == call_id for block in content if isinstance(block, dict)
        ):
            return entry
    raise AssertionError(f"no result of {call_id}")


def call_of(items: list[Entry], call_id: str) -> dict[str, Any]:
    """The input of the tool_use `call_id`."""
    for entry in items:
        for block in (entry.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("id") == call_id:
                return dict(block["input"])
    raise AssertionError(f"no call {call_id}")


def value_at(entry: object, path: list[Any]) -> object:
    for part in path:
        entry = entry[part]  # type: ignore[index]
    return entry


def stubbed_paths(before: list[RawLine], after: list[RawLine]) -> Iterator[tuple[Any, Any]]:
    """(original value, stub) for every splice the markers record."""
    for old, new in zip(before, after, strict=True):
        entry = parse_entry(new.data)
        if entry is None or MARKER_KEY not in entry:
            continue
        original = parse_entry(old.data)
        for part in entry[MARKER_KEY]["parts"]:
            yield value_at(original, part["path"]), value_at(entry, part["path"])


def test_every_kind_before_the_last_turn_is_stubbed_and_keeps_its_json_type() -> None:
    session = typical_session(turns=2)
    before = lines_from_bytes(session.data())
    after = compressed(session.data())
    new = entries(after)

    read = result_of(new, "toolu_read0")
    assert read["message"]["content"][0]["content"].startswith(
        f"{STUB_PREFIX} Output of Read '/home/dev/project/src/module0.py' elided: 120 lines"
    )
    assert is_stub(read["toolUseResult"]["file"]["content"])
    assert read["toolUseResult"]["file"]["filePath"] == "/home/dev/project/src/module0.py"
    assert read["toolUseResult"]["file"]["numLines"] == 120
    assert read["toolUseResult"]["type"] == "text"

    edit_input = call_of(new, "toolu_edit0")
    assert is_stub(edit_input["old_string"]) and is_stub(edit_input["new_string"])
    assert edit_input["file_path"] == "/home/dev/project/src/module0.py"
    assert edit_input["replace_all"] is False
    edit = result_of(new, "toolu_edit0")["toolUseResult"]
    for key in ("originalFile", "oldString", "newString"):
        assert is_stub(edit[key]), key
    assert edit["structuredPatch"] == []  # an empty diff, never a wrong one
    assert edit["filePath"] == "/home/dev/project/src/module0.py"  # the renderer needs it
    assert edit["userModified"] is False

    command = call_of(new, "toolu_bash0")["command"]
    assert command.startswith("python -m pytest -q tests/test_0.py") and STUB_PREFIX in command
    bash = result_of(new, "toolu_bash0")
    block = bash["message"]["content"][0]
    assert is_stub(block["content"]) and "(the tool failed)" in block["content"]
    assert block["is_error"] is True
    assert is_stub(bash["toolUseResult"]["stdout"])
    assert bash["toolUseResult"]["stderr"] == "" and bash["toolUseResult"]["interrupted"] is False

    shot = result_of(new, "toolu_shot0")
    (stub_block,) = shot["message"]["content"][0]["content"]
    assert stub_block["type"] == "text" and "image image/png" in stub_block["text"]
    (ui_block,) = shot["toolUseResult"]
    assert ui_block["type"] == "text" and "image image/png" in ui_block["text"]

    assert is_stub(call_of(new, "toolu_task0")["prompt"])
    assert call_of(new, "toolu_task0")["description"] == "Search"
    (progress,) = [
        e for e in new if e["type"] == "progress" and e["parentToolUseID"] == "toolu_task0"
    ]
    data = progress["data"]
    assert data["type"] == "agent_progress" and data["agentId"] == "a000000"
    assert data["normalizedMessages"] == []
    assert is_stub(data["prompt"])
    assert data["message"]["uuid"] == "inner-0"
    (inner,) = data["message"]["message"]["content"]
    assert inner["type"] == "text" and is_stub(inner["text"])
    task = result_of(new, "toolu_task0")
    assert [b["type"] for b in task["message"]["content"][0]["content"]] == ["text"]
    assert task["toolUseResult"]["status"] == "completed"
    assert [b["type"] for b in task["toolUseResult"]["content"]] == ["text"]

    thinking = [
        e["message"]["content"][0]
        for e in new
        if e["type"] == "assistant" and e["message"]["content"][0]["type"] == "thinking"
    ]
    signed, unsigned = thinking[0], thinking[1]
    assert signed["signature"] == SIGNATURE and "signed reasoning 0 line 19" in signed["thinking"]
    # Unsigned thinking is sent back as the model's own thoughts: never a stub there.
    assert unsigned["thinking"].startswith("unsigned reasoning 0") and unsigned["signature"] == ""
    assert thinking[3]["thinking"].startswith("unsigned reasoning 1")  # the kept turn

    # Every splice keeps the JSON type; nothing of the last turn changed.
    pairs = list(stubbed_paths(before, after))
    assert len(pairs) >= 19  # every kind but thinking, which is never touched
    for original, stub in pairs:
        assert type(stub) is type(original), (original, stub)
    window = plan_lines(
        before, KEEP_ONE, session_ref="s.jsonl", fmt=detect(before, "s.jsonl")
    ).window_start
    assert window > 1
    assert [line.data for line in before[window - 1 :]] == [
        line.data for line in after[window - 1 :]
    ]
    # User and assistant text, and signed thinking lines, are byte for byte the same.
    for old, new_line in zip(before, after, strict=True):
        entry = parse_entry(old.data)
        assert entry is not None
        content = (entry.get("message") or {}).get("content")
        first = content[0] if isinstance(content, list) else {}
        if (
            isinstance(content, str)
            or first.get("type") == "text"
            or first.get("signature") == SIGNATURE
        ):
            assert new_line.data == old.data, old.number


def test_small_values_are_kept() -> None:
    session = ClaudeSession()
    session.user("Tiny task")
    session.tool_use("toolu_1", "Bash", {"command": "ls", "description": "List"})
    session.tool_result("toolu_1", "a\nb", {"stdout": "a\nb", "stderr": ""})
    session.user("Next")
    session.assistant(text("Done"))
    assert compressed(session.data()) == lines_from_bytes(session.data())


def test_old_images_are_stubbed_a_persons_kept_only_when_asked() -> None:
    session = images_session()
    after = compressed(session.data())
    new = entries(after)
    pasted, meta = new[0], next(e for e in new if e.get("isMeta"))
    first = pasted["message"]["content"]
    assert first[0] == text("What is wrong on this page?")
    assert first[1]["type"] == "text" and "User image elided" in first[1]["text"]
    assert claude.is_turn_start(pasted)  # still a turn: same window on the next run
    (meta_block,) = meta["message"]["content"]
    assert meta_block["type"] == "text" and "Tool image elided: image/png" in meta_block["text"]
    read = result_of(new, "toolu_img")
    assert [b["type"] for b in read["message"]["content"][0]["content"]] == ["text"]
    assert is_stub(read["toolUseResult"]["file"]["base64"])
    assert read["toolUseResult"]["file"]["type"] == "image/png"
    assert PNG.encode() not in b"".join(line.data for line in after[1:])

    kept = entries(
        compressed(session.data(), CompressSettings(keep_turns=1, keep_user_images=True))
    )
    assert kept[0]["message"]["content"][1]["source"]["data"] == PNG


def test_thinking_signed_or_not_and_redacted_thinking_are_never_touched() -> None:
    session = ClaudeSession()
    session.user("Think")
    session.assistant(
        {"type": "thinking", "thinking": "x" * 2000, "signature": ""},
        {"type": "redacted_thinking", "data": "E" * 3000},
        text("Thought."),
    )
    session.user("Again")
    session.assistant(text("Sure."))
    data = session.data()
    assert compressed(data, CompressSettings(keep_turns=1, strip_thinking=False)) == (
        lines_from_bytes(data)
    )
    after = entries(compressed(data))
    assert after[1]["message"]["content"][0]["thinking"] == "x" * 2000
    assert after[2]["message"]["content"][0] == {"type": "redacted_thinking", "data": "E" * 3000}


def test_a_glued_line_junk_and_a_missing_final_newline_stay_as_they_are() -> None:
    data = broken_session()
    before = lines_from_bytes(data)
    glued = before[3].data
    assert parse_entry(glued) is None and b'}{"type":"summary"' in glued
    after, payloads = compress_entry_lines(
        before, KEEP_ONE, "s.jsonl", fmt=detect(before, "s.jsonl")
    )
    assert after[3].data == glued and after[5].data == b"not json at all"
    assert not after[-1].newline and b"".join(line.encode() for line in after)[-1:] == b"}"
    assert sum(line.data != old.data for line, old in zip(after, before, strict=True)) > 5
    restored = [restore_data(line.data, "s.jsonl", payloads.get) for line in after]
    assert restored == [line.data for line in before]


def test_turns_start_where_a_person_typed() -> None:
    session = compacted_session()
    items = entries(lines_from_bytes(session.data()))
    starts = [e for e in items if claude.is_turn_start(e)]
    assert [e["message"]["content"] for e in starts] == [
        "Please fix module 0.",
        "Please fix module 1.",
        "Please fix module 9.",
    ]
    summary = next(e for e in items if e.get("isCompactSummary"))
    assert not claude.is_turn_start(summary)
    boundary = next(e for e in items if e.get("subtype") == "compact_boundary")
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"]
    assert not claude.is_turn_start(result_of(items, "toolu_read0"))


def test_detection_tells_claude_from_pi() -> None:
    ours = lines_from_bytes(typical_session().data())
    assert detect(ours, "c").name == "claude"
    assert detect(lines_from_bytes(pi_session().data()), "p").name == "pi"
    only_summaries = b'{"type":"summary","summary":"x","leafUuid":"u1"}\n' * 3
    assert detect(lines_from_bytes(only_summaries), "s").name == "claude"
    state = b'{"type":"permission-mode","permissionMode":"default","sessionId":"s1"}\n' * 20
    assert detect(lines_from_bytes(state + typical_session().data()), "m").name == "claude"
    assert not pi.FORMAT.recognize(entries(ours))
    assert not claude.FORMAT.recognize(entries(lines_from_bytes(pi_session().data())))


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_commands_on_a_committed_transcript(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = typical_session(turns=3).data()
    path = commit_session(repo, SESSION, original)
    monkeypatch.chdir(repo)
    done = run("compress", "--keep-turns", "1", "--force", SESSION)
    assert done.exit_code == 0, done.output
    assert "compressed" in done.stdout and "kept the last 1 of 3 turns" in done.stdout
    # (the rerun, verify, show by line and restore after gc: test_cli_contract.py)
    # `show` by the uuid every stub names prints the original line.
    read = result_of(entries(lines_from_bytes(original)), "toolu_read0")
    assert read["uuid"] in path.read_text()
    shown = run("show", SESSION, read["uuid"], "--raw")
    assert shown.exit_code == 0, shown.output
    assert orjson.loads(shown.stdout_bytes) == read
    stats = run("stats", SESSION)
    assert stats.exit_code == 0, stats.output
    for kind in ("toolUseResult", "tool_result text", "tool_use input", "progress", "stubs"):
        assert re.search(rf"^{re.escape(kind)}\s+[\d,]+", stats.stdout, re.M), kind


def test_pass_two_reads_again_only_the_calls_large_enough_to_stub() -> None:
    """Without deep, an assistant line is flagged for pass 2 only if a call of it is larger
    than toolCallMaxBytes (all pass 2 could stub there); every line compressed was flagged."""
    session = typical_session()
    session.tool_use("small_call", "Read", {"file_path": "src/a.ts"})
    session.tool_result("small_call", "ok", {"type": "text"})
    session.user("last turn")
    lines = lines_from_bytes(session.data())
    fmt = detect(lines, SESSION)
    plan = plan_lines(lines, KEEP_ONE, session_ref=SESSION, fmt=fmt)
    assert plan.bulk is not None
    flagged = {number for number, flag in enumerate(plan.bulk, start=1) if flag}
    changed = {
        line.number
        for line, new in zip(lines, compressed(session.data()), strict=True)
        if line != new
    }
    assert changed and changed <= flagged
    small = [line.number for line in lines if b'"id":"small_call"' in line.data.replace(b" ", b"")]
    assert len(small) == 1 and small[0] not in flagged
