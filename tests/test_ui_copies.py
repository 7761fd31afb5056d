"""`stubUiCopies`: values only the agent's UI reads are stubbed in every turn, the kept ones
too; each such line is restorable, a second run changes nothing, and once the line is older
than the kept window it gets the rest of its compression, still restorable byte for byte.

That the agent's first request is byte-identical with and without the option is checked
against the real CLIs in tests/test_agent_resume.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from format_cases import SYNTHETIC, corpus_cases

from gitclaw_compress.core.compressor import (
    UI_ONLY_KEY,
    CompressSettings,
    compress_entry_lines,
    plan_lines,
)
from gitclaw_compress.core.lines import MARKER_KEY, RawLine, join_lines, lines_from_bytes
from gitclaw_compress.core.marker import restore_data

REF = "s.jsonl"
ON = CompressSettings(keep_turns=1, stub_ui_copies=True)


def cases() -> list[object]:
    params: list[object] = []
    for name, makers in SYNTHETIC.items():
        params.extend(pytest.param(name, maker, id=f"{name}-{label}") for label, maker in makers)
        params.extend(
            pytest.param(name, path.read_bytes, id=f"{name}-corpus-{path.stem}")
            for path in corpus_cases(name)
        )
    return params


def restored(lines: list[RawLine], payloads: dict[str, bytes]) -> bytes:
    return join_lines(
        RawLine(line.number, restore_data(line.data, "x", payloads.get), line.newline)
        for line in lines
    )


def ui_flagged(line: RawLine) -> bool:
    if MARKER_KEY.encode() not in line.data:
        return False
    return orjson.loads(line.data)[MARKER_KEY].get(UI_ONLY_KEY) is True


@pytest.mark.parametrize(("name", "make"), cases())
def test_ui_copies_go_in_the_kept_turns_and_the_rest_follows_later(
    name: str, make: Callable[[], bytes]
) -> None:
    data = make()
    lines = lines_from_bytes(data)
    window = plan_lines(lines, ON, session_ref=REF).window_start
    out, payloads = compress_entry_lines(lines, ON, REF)
    assert restored(out, payloads) == data
    off, _ = compress_entry_lines(lines, CompressSettings(keep_turns=1), REF)
    for before, after, without in zip(lines, out, off, strict=True):
        if before.number < window:  # older turns: what the option adds is UI-only too
            assert len(after.data) <= len(without.data) or ui_flagged(after) is False
        elif after.data != before.data:
            assert ui_flagged(after), f"{name}: kept line {before.number} changed beyond UI"
    # A second run changes nothing.
    again, more = compress_entry_lines(out, ON, REF)
    assert again == out and not more
    # Later, every line is older than the kept window: a UI-only line gets the rest of its
    # compression (and loses its flag), about as small as a line compressed at once, and
    # restores to the original.
    older = CompressSettings(keep_turns=0, stub_ui_copies=True)
    later, later_payloads = compress_entry_lines(out, older, REF)
    assert restored(later, {**payloads, **later_payloads}) == data
    fresh, _ = compress_entry_lines(lines, older, REF)
    for now, direct in zip(later, fresh, strict=True):
        if ui_flagged(now):  # nothing more to do on it: the same stubs as at once
            assert len(now.data) <= len(direct.data) + len(b',"ui":true'), now.number
        else:
            assert len(now.data) <= len(direct.data) + 128, now.number  # a longer marker
    again, more = compress_entry_lines(later, older, REF)
    assert again == later and not more


def test_the_option_stubs_something_in_the_kept_turn_of_every_format() -> None:
    """Each format's typical synthetic file holds UI-only copies in its last turn."""
    changed = {}
    for name, makers in SYNTHETIC.items():
        data = makers[0][1]()
        lines = lines_from_bytes(data)
        window = plan_lines(lines, ON, session_ref=REF).window_start
        out, _ = compress_entry_lines(lines, ON, REF)
        changed[name] = sum(
            1 for line in out[window - 1 :] if ui_flagged(line) and line.number >= window
        )
    assert all(changed.values()), changed


def test_a_corpus_file_is_not_needed(tmp_path: Path) -> None:
    assert cases()  # synthetic cases always exist
