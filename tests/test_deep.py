"""Deep compression (`session.deep`, `--deep`): what it changes beyond the defaults, on small
synthetic files, and that it keeps every promise (restore byte for byte, a second run is a
no-op). The real CLIs resume deep files in test_resume_contract.py; bench/deep.py checks
every corpus file."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import cli, commit_session
from format_cases import FORMAT_CASES, FormatCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import SessionBuilder, big_text, text, tool_call
from synthetic_claude import (
    ClaudeSession,
    compacted_session,
    signed_thinking,
    typical_session,
    unsigned_thinking,
)
from synthetic_claude import text as claude_text
from synthetic_codex import ENCRYPTED, compacted_rollout

from gitclaw_compress.config import defaults
from gitclaw_compress.core.compressor import compress_entry_lines
from gitclaw_compress.core.lines import MARKER_KEY, join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import is_ui_only, restore_line
from gitclaw_compress.core.stubs import STUB_PREFIX
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.claude.rules import is_turn_start
from gitclaw_compress.settings import CompressSettings

PI_PATH = ".GITCLAW/state/sessions/deep.jsonl"


def _run(data: bytes, keep: int = 1, **overrides: Any) -> list[bytes]:
    settings = dataclasses.replace(defaults().compress_settings(), keep_turns=keep, **overrides)
    lines, _ = compress_entry_lines(
        lines_from_bytes(data), settings, "s.jsonl", fmt=detect(lines_from_bytes(data), "s.jsonl")
    )
    return [line.data for line in lines]


def _kept_turn_with_a_large_read() -> bytes:
    session = SessionBuilder()
    session.user("Turn 1")
    session.assistant(tool_call("r1", "read", {"path": "a.py"}))
    session.tool_result("r1", "read", big_text("a", 300))
    session.assistant(text("Read."), stop="stop")
    session.user("Turn 2: read two files")
    session.assistant(tool_call("r2", "read", {"path": "big.py"}))
    session.tool_result("r2", "read", big_text("big", 400))  # about 16 KB
    session.assistant(tool_call("r3", "read", {"path": "small.py"}))
    session.tool_result("r3", "read", big_text("small", 50))  # about 2 KB
    session.assistant(text("Both read."), stop="stop")
    return session.data()


def test_deep_stubs_only_the_large_outputs_of_the_kept_turn() -> None:
    data = _kept_turn_with_a_large_read()
    original = data.split(b"\n")
    default, deep = _run(data), _run(data, deep=True)
    kept = next(i for i, line in enumerate(original) if b"Turn 2" in line)
    assert default[kept:] == original[kept : len(default)], "the default changed a kept turn"
    changed = [i for i in range(kept, len(deep)) if deep[i] != original[i]]
    assert len(changed) == 1
    stubbed = orjson.loads(deep[changed[0]])
    assert stubbed["message"]["toolCallId"] == "r2"
    assert stubbed["message"]["content"][0]["text"].startswith(STUB_PREFIX)
    # The marker says the line is only partly compressed: once older, it is reopened.
    assert is_ui_only(stubbed[MARKER_KEY])


def test_the_kept_turn_size_is_a_setting() -> None:
    data = _kept_turn_with_a_large_read()
    assert _run(data, deep=True, deep_kept_max_bytes=1 << 20) == _run(data, stub_ui_copies=True)


def test_deep_drops_the_thinking_of_old_turns_whole_and_keeps_the_newest() -> None:
    session = ClaudeSession()
    for turn in range(3):
        session.user(f"Question {turn}")
        session.assistant(
            signed_thinking(big_text(f"signed {turn}", 10)),
            unsigned_thinking(big_text(f"readable {turn}", 10)),
            claude_text(f"Answer {turn}"),
        )
    session.user("Last question")
    session.assistant(signed_thinking(big_text("signed last", 10)), claude_text("Last"))
    data = session.data()
    before = [orjson.loads(line) for line in data.split(b"\n")[:-1]]
    after = [orjson.loads(line) for line in _run(data, keep=0, deep=True)]
    for old, new in zip(before, after, strict=True):
        blocks = old.get("message", {}).get("content")
        if not isinstance(blocks, list) or blocks[0].get("type") != "thinking":
            continue
        if "last" in blocks[0]["thinking"]:  # the newest turn, its loop closed: a reply
            assert new["message"]["content"] == blocks[1:], "the newest turn's thinking stayed"
        else:  # signed or not, dropped whole (claude-opus-4-6 binds nothing)
            assert new["message"]["content"] == [], "an old thinking block stayed"
    # Without deep, thinking is never touched.
    default = [orjson.loads(line) for line in _run(data, keep=0)]
    assert all(
        new.get("message", {}).get("content") == old.get("message", {}).get("content")
        for old, new in zip(before, default, strict=True)
        if old["type"] == "assistant"
    )


def _bound_session(*, open_loop: bool = False, alone: bool = False) -> bytes:
    """Three turns of a model with preserved thinking; each turn reads a file (a tool loop).
    `open_loop`: the last turn stops after its tool result; `alone`: an old reply holds
    nothing but its thinking."""
    session = ClaudeSession()
    for turn in range(3):
        session.user(f"Question {turn}")
        session.assistant(signed_thinking(f"plan {turn}"), tool_use_block(f"r{turn}"))
        session.tool_result(f"r{turn}", big_text(f"file {turn}", 200), {"type": "text"})
        if open_loop and turn == 2:
            break
        session.assistant(signed_thinking(f"answer {turn}"), claude_text(f"Answer {turn}"))
        if alone and turn == 0:
            session.assistant(signed_thinking("a reply of thinking alone"))
    data = session.data().replace(b"claude-opus-4-6", b"claude-opus-5-5")
    return data


def tool_use_block(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "a.py"}}


def _thinking(lines: list[bytes]) -> list[str]:
    return [
        block["thinking"]
        for line in lines
        for block in orjson.loads(line).get("message", {}).get("content", [])
        if isinstance(block, dict) and block.get("type") == "thinking"
    ]


def test_deep_drops_every_thinking_block_of_a_bound_session_in_the_kept_turns_too() -> None:
    data = _bound_session()
    deep = _run(data, keep=1, deep=True)
    assert _thinking(deep) == [], "a bound block stayed: its prefix changed"
    assert b"file 0 line 150" not in b"".join(deep), "the old outputs stayed whole"
    # No message is left empty: each reply keeps its text or tool call.
    for line in deep:
        entry = orjson.loads(line)
        if entry["type"] == "assistant" and entry["message"]["content"] == []:
            reply = entry["message"]["id"]
            assert any(
                orjson.loads(other)["message"]["id"] == reply
                and orjson.loads(other)["message"]["content"]
                for other in deep
                if orjson.loads(other)["type"] == "assistant"
            )
    # The default keeps today's rule: nothing the model sees before the newest bound block.
    assert _thinking(_run(data, keep=1)) == _thinking(data.split(b"\n")[:-1])


@pytest.mark.parametrize("shape", ["open_loop", "alone"])
def test_deep_keeps_a_bound_prefix_whole_where_its_thinking_must_stay(shape: str) -> None:
    data = _bound_session(**{shape: True})
    original = data.split(b"\n")[:-1]
    deep = _run(data, keep=1, deep=True)
    assert _thinking(deep) == _thinking(original)
    last_bound = max(i for i, line in enumerate(original) if b"plan 2" in line)
    for old, new in zip(original[:last_bound], deep[:last_bound], strict=True):
        sent = orjson.loads(old).get("message")
        assert orjson.loads(new).get("message") == sent, "a bound block's prefix changed"


def test_deep_stubs_large_user_text_of_older_turns_only() -> None:
    session = ClaudeSession()
    pasted = big_text("pasted log", 400)  # about 16 KB
    session.user("Look at this log:\n" + pasted)
    session.assistant(claude_text("It fails at step 3."))
    session.user([claude_text("And this one:\n" + pasted)])
    session.assistant(claude_text("The same."))
    session.user("Summary", isCompactSummary=True)
    session.user("Last: " + pasted)
    session.assistant(claude_text("Done."))
    data = session.data()
    lines = data.split(b"\n")[:-1]
    assert _run(data, keep=1) == lines, "the default stubbed user text"
    deep = _run(data, keep=1, deep=True)
    first, second = (orjson.loads(deep[i])["message"]["content"] for i in (0, 2))
    assert isinstance(first, str) and first.startswith(STUB_PREFIX)
    assert "Look at this log:" in first and "gitclaw-compress show" in first
    assert len(first) < 600
    assert second[0]["type"] == "text" and second[0]["text"].startswith(STUB_PREFIX)
    assert deep[5] == lines[5], "the kept turn's text changed"


READ_NOTICE = (
    "<system-reminder>[Truncated: PARTIAL view \u2014 showing lines 1-900 of 1200.]"
    "</system-reminder>"
)


@pytest.mark.parametrize("deep", [False, True])
def test_a_stubbed_partial_read_keeps_claude_codes_notice_in_front(deep: bool) -> None:
    """Claude Code adds its own 'PARTIAL view' message on resume to a Read result cut at its
    token cap (`toolUseResult.file.truncatedByTokenCap`) unless the result's text opens with
    that notice: a stub keeps the notice first, so the resumed request has no extra message."""
    session = ClaudeSession()
    session.user("Turn 1: read the log")
    session.tool_use("toolu_r1", "Read", {"file_path": "/home/dev/project/log.md"})
    body = "\n".join(f"{n}\tline {n} of the log, long enough to count" for n in range(900))
    file = {"filePath": "/home/dev/project/log.md", "content": body, "numLines": 900}
    file |= {"startLine": 1, "totalLines": 1200, "truncatedByTokenCap": True}
    session.tool_result("toolu_r1", f"{READ_NOTICE}\n\n{body}", {"type": "text", "file": file})
    session.assistant(claude_text("Read."))
    session.user("Turn 2")
    session.assistant(claude_text("Done."))
    data = session.data()
    once = _run(data, deep=deep)
    result = orjson.loads(once[2])["message"]["content"][0]["content"]
    assert result.startswith(READ_NOTICE)
    assert STUB_PREFIX in result and len(result) < 2_000
    again = _run(b"\n".join(once), deep=deep)
    assert again == once, "a second run changed the stub"


def test_deep_archives_what_claude_code_never_sends_before_its_compact_boundary() -> None:
    data = compacted_session().data()
    lines = data.split(b"\n")[:-1]
    boundary = next(i for i, line in enumerate(lines) if b"compact_boundary" in line)
    # From the boundary on, deep does what stubUiCopies does (no output there is over 8 KiB),
    # and the kept turn's thinking goes (its loop is closed; claude-opus-4-6 binds nothing).
    default, deep = _run(data, keep=1, stub_ui_copies=True), _run(data, keep=1, deep=True)
    # (its UI-copy stubs are shorter: only what the model sees is compared)
    sent = [orjson.loads(line).get("message") for line in deep[boundary:]]
    assert sent == [_without_thinking(line) for line in default[boundary:]], (
        "deep changed what the CLI resumes with"
    )
    before = [orjson.loads(line) for line in lines[:boundary]]
    now = [orjson.loads(line) for line in deep[:boundary]]
    assert sum(map(len, deep[:boundary])) < sum(map(len, default[:boundary]))
    for old, new in zip(before, now, strict=True):
        for key in ("uuid", "parentUuid", "type", "sessionId", "isSidechain"):
            assert new.get(key) == old.get(key)
        if old["type"] in ("summary", "file-history-snapshot"):
            assert new == old, "a line Claude Code reads for itself changed"
        blocks = old.get("message", {}).get("content")
        if isinstance(blocks, list) and blocks and blocks[0].get("signature"):
            assert new["message"]["content"] in (blocks, []), "a signed block was edited"
        # What Claude Code reads for itself there (its usage totals) stays.
        for key in ("cwd", "gitBranch", "version"):
            assert new.get(key) == old.get(key)
        if old["type"] == "assistant":
            assert new["message"]["model"] == old["message"]["model"]
            assert new["message"]["usage"].items() <= old["message"]["usage"].items()


def _without_thinking(line: bytes) -> Any:
    """A line's message with its thinking blocks left out."""
    message = orjson.loads(line).get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        thinking = ("thinking", "redacted_thinking")
        message["content"] = [b for b in message["content"] if b.get("type") not in thinking]
    return message


def _strings(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in _strings(item, (*path, key))]
    if isinstance(value, list):
        return [s for index, item in enumerate(value) for s in _strings(item, (*path, index))]
    return []


def test_deep_stubs_before_claude_codes_compact_boundary_name_their_shape_alone() -> None:
    """No model is sent, and no CLI reads, the strings of those lines: each one over 64
    bytes becomes `[gitclaw-compress] N lines, M bytes` (an array or object it stubs:
    `M bytes`; the line's uuid and marker are
    what `show` and `restore` need), and every other is as it was."""
    data = compacted_session().data()
    lines = data.split(b"\n")[:-1]
    boundary = next(i for i, line in enumerate(lines) if b"compact_boundary" in line)
    deep = _run(data, keep=1, deep=True)
    stubs = 0
    for old, new in zip(lines[:boundary], deep[:boundary], strict=True):
        before = dict(_strings(orjson.loads(old)))
        for path, value in _strings(orjson.loads(new)):
            if path[0] == MARKER_KEY:
                continue
            if value.startswith(STUB_PREFIX):
                stubs += 1
                assert re.fullmatch(r"\[gitclaw-compress\] ([\d,]+ lines, )?[\d,]+ bytes", value)
            else:
                assert before.get(path) == value or path[-1] == "content", path
    assert stubs > 10


def _two_compactions(*, large_last: bool = False) -> bytes:
    session = SessionBuilder()
    session.user("Turn 1: " + big_text("pasted", 10))
    session.assistant(text("Long answer. " * 40), stop="stop")
    session.entry(
        "compaction", summary="Old summary.", firstKeptEntryId="00000002", tokensBefore=900
    )
    first_kept = session.user("Turn 2: " + big_text("kept", 10))
    session.assistant(text("Kept answer. " * 40), stop="stop")
    session.entry("compaction", summary="New summary.", firstKeptEntryId=first_kept, tokensBefore=9)
    session.user("Turn 3")
    if large_last:
        session.assistant(tool_call("r3", "read", {"path": "big.py"}))
        session.tool_result("r3", "read", big_text("big", 400))  # about 16 KB
    session.assistant(text("Done."), stop="stop")
    return session.data()


def test_deep_archives_what_pi_never_sends_before_first_kept_entry() -> None:
    data = _two_compactions()
    lines = data.split(b"\n")
    deep = _run(data, keep=1, deep=True)
    assert _run(data, keep=1)[:6] == lines[:6], "the default changed user or assistant text"
    turn_1 = next(i for i, line in enumerate(lines) if b"Turn 1" in line)
    turn_2 = next(i for i, line in enumerate(lines) if b"Turn 2" in line)
    assert b"pasted" not in deep[turn_1] and STUB_PREFIX.encode() in deep[turn_1]
    assert b"Long answer" not in deep[turn_1 + 1]
    assert deep[turn_2] == lines[turn_2] and deep[turn_2 + 1] == lines[turn_2 + 1]
    assert orjson.loads(deep[turn_1])["id"] == orjson.loads(lines[turn_1])["id"]


def test_compress_deep_restores_byte_for_byte_and_runs_once(repo: Path) -> None:
    data = _two_compactions(large_last=True)
    path = commit_session(repo, PI_PATH, data)
    done = cli("compress", "--force", "--keep-turns", "1", "--deep", "--json", PI_PATH, cwd=repo)
    report = json.loads(done.stdout)["files"][0]
    assert report["status"] == "compressed"
    first = path.read_bytes()
    assert cli("compress", "--force", "--keep-turns", "1", "--deep", PI_PATH, cwd=repo)
    assert path.read_bytes() == first, "a second deep run changed the file"
    assert cli("restore", PI_PATH, "-o", "-", cwd=repo).stdout == data
    assert cli("verify", PI_PATH, cwd=repo).returncode == 0
    # The kept turn's large read is a stub that names the command giving it back.
    stubbed = next(line for line in first.split(b"\n") if b'"toolCallId":"r3"' in line)
    assert b"big line 200" not in stubbed  # the preview shows the head and the tail
    entry_id = orjson.loads(stubbed)["id"]
    assert b"big line 200" in cli("show", PI_PATH, entry_id, cwd=repo).stdout


def test_session_deep_in_compression_json_is_the_flag(repo: Path) -> None:
    data = _kept_turn_with_a_large_read()
    flagged = commit_session(repo, ".GITCLAW/state/sessions/a.jsonl", data)
    cli("compress", "--force", "--keep-turns", "1", "--deep", str(flagged), cwd=repo)
    config = repo / "deep.json"
    config.write_text('{"session": {"deep": true}}')
    keyed = commit_session(repo, ".GITCLAW/state/sessions/b.jsonl", data)
    cli("compress", "--force", "--keep-turns", "1", "--config", str(config), str(keyed), cwd=repo)
    assert keyed.read_bytes().replace(b"b.jsonl", b"a.jsonl") == flagged.read_bytes()
    assert len(flagged.read_bytes()) < len(data)


def test_a_dry_run_says_what_deep_would_make_of_the_file(repo: Path) -> None:
    data = _kept_turn_with_a_large_read()
    path = commit_session(repo, PI_PATH, data)
    done = cli("compress", "--dry-run", "--force", "--keep-turns", "1", PI_PATH, cwd=repo)
    line = done.stdout.decode()
    assert line.startswith(f"would compress {PI_PATH}: ") and "; with --deep: " in line
    report = json.loads(
        cli(
            "compress", "--dry-run", "--force", "--keep-turns", "1", "--json", PI_PATH, cwd=repo
        ).stdout
    )["files"][0]
    assert report["deep_bytes_after"] < report["bytes_after"] < len(data)
    assert path.read_bytes() == data
    cli("compress", "--force", "--keep-turns", "1", "--deep", PI_PATH, cwd=repo)
    assert path.stat().st_size == report["deep_bytes_after"]


def two_compactions_rollout() -> bytes:
    """A Codex rollout compacted twice: the older record's replacement history is never read."""
    builder = compacted_rollout()
    builder.line(
        "compacted",
        {
            "message": "summary of the first four turns",
            "replacement_history": [
                {"type": "message", "role": "user", "content": [_input("newest history")]},
                {"type": "compaction", "encrypted_content": ENCRYPTED},
            ],
        },
    )
    builder.full_turn(5)
    builder.full_turn(6)
    return builder.data()


def _input(text: str) -> dict[str, str]:
    return {"type": "input_text", "text": text}


def test_deep_empties_an_older_codex_replacement_history_only() -> None:
    data = two_compactions_rollout()
    lines = data.split(b"\n")
    deep = _run(data, keep=1, deep=True)
    records = [i for i, line in enumerate(lines) if b'"type":"compacted"' in line]
    older, newest = (orjson.loads(deep[i]) for i in records)
    assert older["payload"]["replacement_history"] == []
    assert deep[records[1]] == lines[records[1]], "the record Codex resumes from changed"
    assert newest["payload"]["replacement_history"][1]["encrypted_content"] == ENCRYPTED
    # The default never touches a compacted record.
    assert _run(data, keep=1)[records[0]] == lines[records[0]]


def _deep_round_trip(name: str, data: bytes, keep: int, kept_max: int) -> None:
    chosen = dataclasses.replace(
        CompressSettings(keep_turns=keep, redundancy_min_bytes=64),
        deep=True,
        deep_kept_max_bytes=kept_max,
    )
    original = lines_from_bytes(data)
    assert detect(original, "s.jsonl").name == name
    lines, payloads = compress_entry_lines(
        original, chosen, "s.jsonl", fmt=detect(original, "s.jsonl")
    )
    assert len(lines) == len(original)
    assert join_lines(restore_line(line, "s", payloads.get) for line in lines) == data
    assert all(
        parse_entry(a.data) is not None
        for a, b in zip(lines, original, strict=True)
        if parse_entry(b.data) is not None
    )
    again, more = compress_entry_lines(lines, chosen, "s.jsonl", fmt=detect(lines, "s.jsonl"))
    assert join_lines(again) == join_lines(lines) and not more


@pytest.mark.parametrize("case", [pytest.param(case, id=case.name) for case in FORMAT_CASES])
def test_restore_of_a_deep_run_is_identity_for_every_format(case: FormatCase) -> None:
    """Generated transcripts of every format (format_strategies.py), compressed deep at a
    random --keep-turns and kept-turn size: restored byte for byte, and a second run is a
    no-op."""

    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=case.strategy(), keep=st.integers(0, 2), kept_max=st.sampled_from([0, 300]))
    def run(data: bytes, keep: int, kept_max: int) -> None:
        _deep_round_trip(case.name, data, keep, kept_max)

    run()


def test_deep_keeps_the_usage_counts_claude_code_reads_in_older_turns() -> None:
    session = ClaudeSession()
    for turn in range(2):
        session.user(f"Question {turn}")
        session.assistant(claude_text(f"Answer {turn}"))
    data = session.data()
    full = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 80475,
        "cache_creation": {"ephemeral_5m_input_tokens": 32, "ephemeral_1h_input_tokens": 0},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "inference_geo": "",
        "iterations": [],
        "speed": "standard",
    }
    data = data.replace(b'{"input_tokens":10,"output_tokens":5}', orjson.dumps(full))
    lines = data.split(b"\n")[:-1]
    assert _run(data, keep=1) == lines
    deep = [orjson.loads(line) for line in _run(data, keep=1, deep=True)]
    counts = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 80475}
    assert deep[1]["message"]["usage"] == counts, "an old reply kept more than the counts"
    assert deep[3]["message"]["usage"] == full, "the kept turn's usage changed"


def test_codex_stubs_the_ui_copy_of_an_old_mcp_result_by_default() -> None:
    from synthetic_codex import RolloutBuilder, listing

    rollout = RolloutBuilder()
    turn = rollout.start_turn("Look up the issue")
    call = rollout.call_id()
    body = listing("issue body")
    rollout.item("function_call", name="mcp__linear__get_issue", arguments="{}", call_id=call)
    rollout.item("function_call_output", call_id=call, output=body)
    rollout.event(
        "mcp_tool_call_end",
        call_id=call,
        invocation={"server": "linear", "tool": "get_issue", "arguments": {"id": "LAF-17"}},
        result={"Ok": {"content": [{"type": "text", "text": body}], "isError": False}},
    )
    rollout.reply(turn, "Found it.")
    rollout.full_turn(2)
    data = rollout.data()
    after = _run(data, keep=1)
    end = next(orjson.loads(line) for line in after if b"mcp_tool_call_end" in line)
    block = end["payload"]["result"]["Ok"]["content"][0]
    assert block["type"] == "text" and block["text"].startswith(STUB_PREFIX)
    assert end["payload"]["invocation"]["arguments"] == {"id": "LAF-17"}
    assert end["payload"]["result"]["Ok"]["isError"] is False


def test_deep_stubs_what_old_attachments_send_and_keeps_the_kept_turns() -> None:
    session = ClaudeSession()
    body = big_text("notes", 80)
    file = {"type": "text", "file": {"filePath": "/p/notes.md", "content": body}}
    for turn in range(2):
        session.user(f"Read @notes.md ({turn})")
        session.chain(
            "attachment", attachment={"type": "file", "filename": "/p/notes.md", "content": file}
        )
        session.chain(
            "attachment",
            attachment={"type": "hook_success", "hookEvent": "SessionStart", "content": body},
        )
        session.assistant(claude_text(f"Read {turn}."))
    data = session.data()
    lines = data.split(b"\n")[:-1]
    assert _run(data, keep=1) == lines, "the default touched an attachment"
    deep = [orjson.loads(line) for line in _run(data, keep=1, deep=True)]
    old_file, old_hook = deep[1]["attachment"], deep[2]["attachment"]
    stub = old_file["content"]["file"]["content"]
    # Claude Code names the file it read just before the content ("Called the Read tool with
    # the following input"): the stub is its shape, `show` and its first line.
    assert stub.startswith(f"{STUB_PREFIX} 80 lines, ") and "Read '" not in stub
    assert stub.endswith("\nnotes line 0: lorem ipsum dolor sit amet")
    assert old_file["content"]["file"]["filePath"] == "/p/notes.md"
    assert old_hook["content"].startswith(STUB_PREFIX) and old_hook["hookEvent"] == "SessionStart"
    assert [orjson.dumps(entry) for entry in deep[4:]] == lines[4:], "a kept attachment changed"


def test_deep_stubs_are_shorter_than_the_defaults() -> None:
    data = compacted_session().data()
    default, deep = _run(data, keep=1), _run(data, keep=1, deep=True)

    def stub_bytes(lines: list[bytes]) -> int:
        return sum(
            len(text)
            for line in lines
            for text in json.dumps(orjson.loads(line)).split('"')
            if text.startswith(STUB_PREFIX)
        )

    assert 0 < stub_bytes(deep) < stub_bytes(default)


def test_deep_stubs_of_older_claude_code_turns_name_the_uuid_alone() -> None:
    """`show UUID` finds a Claude Code line in every session: an older turn's stub under deep
    names the uuid alone, and a tool output's stub leaves out the call (the model sees it
    just before); the kept turn's stubs keep the session's path."""
    session = typical_session(3)
    deep = _run(session.data(), keep=1, deep=True)
    starts = [i for i, line in enumerate(deep) if is_turn_start(orjson.loads(line))]
    stubs = {
        kept: [
            text
            for line in (deep[starts[-1] :] if kept else deep[: starts[-1]])
            for text in json.dumps(orjson.loads(line)).split('"')
            if text.startswith(STUB_PREFIX)
        ]
        for kept in (False, True)
    }
    older = stubs[False]
    assert older
    for stub in older:
        assert re.search(r"gitclaw-compress show [0-9a-f-]{36}\b", stub), stub
        assert "s.jsonl" not in stub and "Output of" not in stub, stub
    assert stubs[True] and all("s.jsonl" in stub for stub in stubs[True])


def _unbound_turns(*, open_loop: bool) -> bytes:
    """Four turns of a model without preserved thinking, with signed and readable thinking,
    each block of a reply on its own line (as Claude Code writes them). `open_loop`: the
    last turn stops at a tool call."""
    session = ClaudeSession()
    for turn in range(3):
        session.user(f"Question {turn}")
        session.assistant(
            signed_thinking(f"thought {turn}"),
            unsigned_thinking(big_text(f"readable {turn}", 10)),
            claude_text(f"Answer {turn}"),
        )
    session.user("Question 3")
    last = tool_use_block("r3") if open_loop else claude_text("Answer 3")
    session.assistant(signed_thinking("thought 3"), last)
    return session.data()


def test_deep_drops_the_kept_turns_thinking_of_a_model_that_binds_nothing_once_closed() -> None:
    """Without preserved thinking, a kept turn whose tool loop is closed loses its thinking,
    signed or not, whole: on resume a new prompt follows, and the Messages API strips an
    earlier turn's thinking for such a model anyway. Nothing else of the kept turns changes,
    and no message is left empty."""
    data = _unbound_turns(open_loop=False)
    lines = data.split(b"\n")[:-1]
    deep = _run(data, keep=2, deep=True)
    assert _thinking(deep) == []
    assert deep[-1] == lines[-1], "the kept reply's text changed"
    thinking_alone = orjson.loads(deep[-2])
    assert thinking_alone["message"]["content"] == []
    assert thinking_alone["message"]["id"] == orjson.loads(deep[-1])["message"]["id"]
    # The default keeps the kept turns byte for byte.
    assert _run(data, keep=2)[-5:] == lines[-5:]
    _deep_round_trip("claude", data, keep=2, kept_max=8192)


def test_deep_keeps_the_thinking_of_an_open_tool_loop_of_a_model_that_binds_nothing() -> None:
    data = _unbound_turns(open_loop=True)
    lines = data.split(b"\n")[:-1]
    deep = _run(data, keep=2, deep=True)
    # The newest turn's loop is open: its thinking stays; the kept turn before it is closed.
    assert _thinking(deep) == ["thought 3"]
    assert deep[-2:] == lines[-2:]
    _deep_round_trip("claude", data, keep=2, kept_max=8192)


def _tool_output_stubs(lines: list[bytes]) -> list[str]:
    return [
        block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
        for line in lines
        for block in (orjson.loads(line).get("message") or {}).get("content") or []
        if isinstance(block, dict) and block.get("type") == "tool_result"
        if STUB_PREFIX in json.dumps(block.get("content"))
    ]


def test_deep_tool_output_stubs_of_older_turns_are_shape_show_and_first_line() -> None:
    """An older turn's tool output under deep: its shape, `show` and first line (the call is
    just before it, `is_error` beside it); a kept turn's large one keeps head and tail."""
    session = ClaudeSession()
    for turn, lines in enumerate((300, 3000)):  # the second, kept, over 8 KiB
        session.user(f"Turn {turn}")
        session.tool_use(f"toolu_{turn}", "Bash", {"command": f"seq {lines}"})
        output = "\n".join(f"out {turn} line {n}" for n in range(lines))
        session.tool_result(f"toolu_{turn}", output, {"stdout": "(the UI's copy)"})
        session.assistant(claude_text(f"Done {turn}."))
    data = session.data()
    deep = _run(data, keep=1, deep=True)
    start = next(i for i, line in enumerate(deep) if b"Turn 1" in line)
    (older,) = _tool_output_stubs(deep[:start])
    head, first = older.split("\n")
    assert re.fullmatch(
        rf"{re.escape(STUB_PREFIX)} 300 lines, [\d,]+ bytes elided\. gitclaw-compress show "
        r"[0-9a-f-]{36}",
        head,
    ), head
    assert first == "out 0 line 0"
    (kept,) = _tool_output_stubs(deep[start:])
    assert "out 1 line 0" in kept and "out 1 line 2999" in kept and "lines omitted" in kept
