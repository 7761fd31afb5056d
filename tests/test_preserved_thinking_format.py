"""Claude Code and pi sessions with thinking from a model with preserved thinking: what the
agent sends before the newest such block stays byte for byte (only what no model sees is
stubbed), lines it never sends again (before Claude Code's compact boundary) compress as
before, and sessions of earlier models and other APIs compress as before. The real CLIs
against a fake API that runs the check: test_preserved_thinking_claude.py and
test_preserved_thinking_pi.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import cli, commit_session
from synthetic import typical_session as pi_session
from synthetic_claude import compacted_session, typical_session

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines
from gitclaw_compress.core.lines import RawLine, lines_from_bytes
from gitclaw_compress.core.marker import restore_data
from gitclaw_compress.formats import detect
from gitclaw_compress.preserved_thinking import binds_prefix

KEEP_ONE = CompressSettings(keep_turns=1)
DEEP = CompressSettings(keep_turns=1, deep=True)
OLD_MODEL = b'"model":"claude-opus-4-6"'


@pytest.mark.parametrize(
    ("model", "binds"),
    [
        ("claude-fable-5-1", True),
        ("claude-fable-5-2", True),
        ("claude-mythos-5-1", True),
        ("claude-mythos-5-2", True),
        ("claude-opus-5-5", True),
        ("claude-sonnet-5-5", True),
        ("claude-haiku-5-5", True),
        ("us.anthropic.claude-sonnet-5-5-v1:0", True),
        ("claude-opus-5-5@20261001", True),
        ("claude-opus-6", True),  # newer than this list: bound, to be safe
        ("some-gateway-alias", True),
        (None, True),
        ("claude-opus-5", False),
        ("claude-fable-5", False),
        ("claude-mythos-preview", False),
        ("claude-opus-4-6", False),
        ("claude-opus-4-5-20251101", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-sonnet-5-20260101", False),
        ("claude-3-5-sonnet-20241022", False),
        ("claude-3-opus-20240229", False),
        ("claude-2.1", False),
    ],
)
def test_which_models_bind_their_thinking_to_its_prefix(model: str | None, binds: bool) -> None:
    assert binds_prefix(model) is binds


def _with_model(data: bytes, model: str) -> bytes:
    return data.replace(OLD_MODEL, b'"model":"' + model.encode() + b'"')


def _compress(data: bytes, settings: CompressSettings) -> tuple[list[RawLine], list[RawLine]]:
    before = lines_from_bytes(data)
    after, payloads = compress_entry_lines(
        before, settings, "s.jsonl", fmt=detect(before, "s.jsonl")
    )
    restored = [restore_data(line.data, "s.jsonl", payloads.get) for line in after]
    assert restored == [line.data for line in before]
    return before, after


def _entry(line: RawLine) -> dict[str, Any]:
    entry = orjson.loads(line.data)
    assert isinstance(entry, dict)
    return entry


def _last_bound_thinking(lines: list[RawLine]) -> int:
    """The index of the newest line that holds signed thinking."""
    return max(
        index
        for index, line in enumerate(lines)
        if b'"type":"thinking"' in line.data and b'"signature":""' not in line.data
    )


def _changed(before: list[RawLine], after: list[RawLine], key: str) -> list[int]:
    return [
        index
        for index, (old, new) in enumerate(zip(before, after, strict=True))
        if old.data != new.data and _entry(old).get(key) != _entry(new).get(key)
    ]


def _open_loop(data: bytes, result: bytes) -> bytes:
    """The session cut after its last tool result: the newest turn's tool loop is open."""
    lines = data.split(b"\n")
    last = max(i for i, line in enumerate(lines) if result in line)
    return b"\n".join(lines[: last + 1]) + b"\n"


@pytest.mark.parametrize(
    ("settings", "open_loop"), [(KEEP_ONE, False), (DEEP, True)], ids=["default", "deep-open-loop"]
)
def test_what_claude_code_sends_before_bound_thinking_stays(
    settings: CompressSettings, open_loop: bool
) -> None:
    data = _with_model(typical_session(3).data(), "claude-opus-5-5")
    if open_loop:
        data = _open_loop(data, b'"type":"tool_result"')
    before, after = _compress(data, settings)
    last = _last_bound_thinking(before)
    assert last > len(before) // 2  # the kept turn holds signed thinking
    assert [i for i in _changed(before, after, "message") if i <= last] == []
    # What only the transcript view reads still goes.
    assert _changed(before, after, "toolUseResult") != []


def test_deep_drops_every_thinking_block_claude_code_sends_of_a_bound_session() -> None:
    data = _with_model(typical_session(3).data(), "claude-opus-5-5")
    before, after = _compress(data, DEEP)
    last = _last_bound_thinking(before)
    assert not any(b'"type":"thinking"' in line.data for line in after), "a thinking block stayed"
    # With no bound block left, what lay before the newest one compresses as usual.
    assert [
        i
        for i in _changed(before, after, "message")
        if i < last and b"tool_result" in before[i].data
    ]


@pytest.mark.parametrize("settings", [KEEP_ONE, DEEP], ids=["default", "deep"])
def test_sessions_of_earlier_models_compress_as_before(settings: CompressSettings) -> None:
    data = typical_session(3).data()
    assert OLD_MODEL in data
    before, after = _compress(data, settings)
    assert [i for i in _changed(before, after, "message") if i <= _last_bound_thinking(before)]


def test_lines_before_the_compact_boundary_are_never_sent_and_still_compress() -> None:
    data = _with_model(compacted_session().data(), "claude-fable-5-1")
    before, after = _compress(data, KEEP_ONE)
    boundary = next(i for i, line in enumerate(before) if b"compact_boundary" in line.data)
    changed = _changed(before, after, "message")
    assert [i for i in changed if i < boundary] != []
    assert [i for i in changed if boundary < i <= _last_bound_thinking(before)] == []


def test_a_boundary_that_keeps_a_segment_freezes_everything_before_bound_thinking() -> None:
    data = _with_model(compacted_session().data(), "claude-fable-5-1")
    kept = b'"compactMetadata":{"trigger":"manual","preTokens":123456'
    assert kept in data
    data = data.replace(kept, kept + b',"preservedSegment":{"headUuid":"a","tailUuid":"b"}')
    before, after = _compress(data, KEEP_ONE)
    assert [
        i for i in _changed(before, after, "message") if i <= _last_bound_thinking(before)
    ] == []


def _message_without_details(line: RawLine) -> object:
    message = _entry(line).get("message")
    if isinstance(message, dict):
        return {key: value for key, value in message.items() if key != "details"}
    return message


@pytest.mark.parametrize(
    ("settings", "open_loop"), [(KEEP_ONE, False), (DEEP, True)], ids=["default", "deep-open-loop"]
)
def test_pi_keeps_what_it_sends_before_bound_thinking(
    settings: CompressSettings, open_loop: bool
) -> None:
    data = _with_model(pi_session(4).data(), "claude-opus-5-5")
    if open_loop:
        data = _open_loop(data, b'"role":"toolResult"')
    before, after = _compress(data, settings)
    last = max(i for i, line in enumerate(before) if b'"thinkingSignature":"' in line.data)
    assert last > len(before) * 3 // 4
    sent_changed = [
        i
        for i, (old, new) in enumerate(zip(before[: last + 1], after, strict=False))
        if _message_without_details(old) != _message_without_details(new)
    ]
    assert sent_changed == []
    # pi's UI-only `details` (an edit's diff) still goes.
    assert _changed(before, after, "message") != []


def test_deep_empties_every_thinking_block_pi_sends_of_a_bound_session() -> None:
    data = _with_model(pi_session(4).data(), "claude-opus-5-5")
    before, after = _compress(data, DEEP)
    assert not any(
        b'"thinkingSignature":"' in line.data and b'"thinkingSignature":""' not in line.data
        for line in after
    )
    assert [
        i
        for i, (old, new) in enumerate(zip(before, after, strict=True))
        if b'"toolResult"' in old.data and old.data != new.data
    ]


def test_pi_sessions_of_earlier_models_and_other_apis_compress_as_before() -> None:
    for data in (pi_session(4).data(), pi_session(4, api="openai-responses").data()):
        before, after = _compress(data, KEEP_ONE)
        changed = [
            i
            for i, (old, new) in enumerate(zip(before, after, strict=True))
            if _message_without_details(old) != _message_without_details(new)
        ]
        assert len(changed) > 5


SUMMARIZE_CASES = [
    pytest.param(
        lambda: typical_session(3).data(), ".claude/projects/-home-dev-project/s.jsonl", id="claude"
    ),
    pytest.param(lambda: pi_session(4).data(), ".pi/sessions/s.jsonl", id="pi"),
]


@pytest.mark.parametrize(("make", "where"), SUMMARIZE_CASES)
def test_summarize_never_puts_a_summary_in_front_of_bound_thinking(
    make: Callable[[], bytes], where: str, repo: Path
) -> None:
    """The summary replaces what the kept turns' thinking is bound to: summarize says why
    it writes nothing, unless nothing is kept (Claude Code) or the model does not bind."""
    bound = commit_session(repo, where, _with_model(make(), "claude-fable-5-2"))
    before = bound.read_bytes()
    done = cli("summarize", "--offline", "--keep-turns", "1", str(bound), cwd=repo)
    assert b"preserved thinking" in done.stdout
    assert bound.read_bytes() == before
    earlier = commit_session(repo, where.replace("s.jsonl", "e.jsonl"), make())
    cli("summarize", "--offline", "--keep-turns", "1", str(earlier), cwd=repo)
    assert earlier.read_bytes() != make()
    if "claude" in where:
        cli("summarize", "--offline", "--keep-turns", "0", str(bound), cwd=repo)
        assert bound.read_bytes().startswith(before) and bound.read_bytes() != before


def test_a_line_kept_for_bound_thinking_compresses_once_it_is_no_longer_sent() -> None:
    """Its marker stays open (UI-only), so after a compaction Claude Code sends nothing
    before, the next run stubs what the model no longer sees; restore is still the file."""
    first = _with_model(typical_session(2).data(), "claude-opus-5-5")
    before = lines_from_bytes(first)
    lines, payloads = compress_entry_lines(
        before, KEEP_ONE, "s.jsonl", fmt=detect(before, "s.jsonl")
    )
    frozen = _changed(before, lines, "toolUseResult")  # stubbed UI copies, message kept
    assert frozen and _changed(before, lines, "message") == []
    later = _with_model(compacted_session().data(), "claude-opus-5-5")
    assert later.startswith(first)  # the same two turns, then /compact and one more
    appended = b"".join(line.encode() for line in lines) + later[len(first) :]
    again, more = compress_entry_lines(
        lines_from_bytes(appended),
        KEEP_ONE,
        "s.jsonl",
        fmt=detect(lines_from_bytes(appended), "s.jsonl"),
    )
    reopened = _changed(lines, again[: len(lines)], "message")
    assert set(frozen) & set(reopened)
    archive = {**payloads, **more}
    restored = [restore_data(line.data, "s.jsonl", archive.get) for line in again]
    assert b"\n".join(restored) + b"\n" == later
