"""Deep compression (`session.deep`, `--deep`): what it changes beyond the defaults, on small
synthetic files, and that it keeps every promise (restore byte for byte, a second run is a
no-op). The real CLIs resume deep files in test_resume_contract.py; bench/deep.py checks
every corpus file."""

from __future__ import annotations

import dataclasses
import json
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
from gitclaw_compress.settings import CompressSettings

PI_PATH = ".GITCLAW/state/sessions/deep.jsonl"


def _run(data: bytes, keep: int = 1, **overrides: Any) -> list[bytes]:
    settings = dataclasses.replace(defaults().compress_settings(), keep_turns=keep, **overrides)
    lines, _ = compress_entry_lines(lines_from_bytes(data), settings, "s.jsonl")
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


def test_deep_drops_readable_thinking_of_old_turns_and_keeps_signed_and_newest() -> None:
    session = ClaudeSession()
    for turn in range(3):
        session.user(f"Question {turn}")
        session.assistant(
            signed_thinking(big_text(f"signed {turn}", 10)),
            unsigned_thinking(big_text(f"readable {turn}", 10)),
            claude_text(f"Answer {turn}"),
        )
    session.user("Last question")
    session.assistant(unsigned_thinking(big_text("readable last", 10)), claude_text("Last"))
    data = session.data()
    before = [orjson.loads(line) for line in data.split(b"\n")[:-1]]
    after = [orjson.loads(line) for line in _run(data, keep=0, deep=True)]
    for old, new in zip(before, after, strict=True):
        blocks = old.get("message", {}).get("content")
        if not isinstance(blocks, list) or blocks[0].get("type") != "thinking":
            continue
        readable, newest = not blocks[0]["signature"], "readable last" in blocks[0]["thinking"]
        if readable and not newest:
            assert new["message"]["content"] == [], "a readable old block stayed"
        else:
            assert new["message"]["content"] == blocks, "a signed or newest block changed"
    # Without deep, thinking is never touched.
    default = [orjson.loads(line) for line in _run(data, keep=0)]
    assert all(
        new.get("message", {}).get("content") == old.get("message", {}).get("content")
        for old, new in zip(before, default, strict=True)
        if old["type"] == "assistant"
    )


def test_deep_archives_what_claude_code_never_sends_before_its_compact_boundary() -> None:
    data = compacted_session().data()
    lines = data.split(b"\n")[:-1]
    boundary = next(i for i, line in enumerate(lines) if b"compact_boundary" in line)
    # From the boundary on, deep does what stubUiCopies does (no output there is over 8 KiB).
    default, deep = _run(data, keep=1, stub_ui_copies=True), _run(data, keep=1, deep=True)
    assert deep[boundary:] == default[boundary:], "deep changed what the CLI resumes with"
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
            assert new["message"]["content"] == blocks, "a signed block changed"


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
    lines, payloads = compress_entry_lines(original, chosen, "s.jsonl")
    assert len(lines) == len(original)
    assert join_lines(restore_line(line, "s", payloads.get) for line in lines) == data
    assert all(
        parse_entry(a.data) is not None
        for a, b in zip(lines, original, strict=True)
        if parse_entry(b.data) is not None
    )
    again, more = compress_entry_lines(lines, chosen, "s.jsonl")
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
