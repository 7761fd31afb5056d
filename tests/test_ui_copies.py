"""`stubUiCopies`: values only the agent's UI reads are stubbed in every turn, the kept ones
too; each such line is restorable, a second run changes nothing, and once the line is older
than the kept window it gets the rest of its compression, still restorable byte for byte.

That the agent's first request is byte-identical with and without the option is checked
against the real CLIs in tests/test_agent_resume.py.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import orjson
import pytest
from flow_helpers import writing_v2_markers
from format_cases import SYNTHETIC, corpus_cases

from gitclaw_compress.core.compressor import (
    CompressSettings,
    compress_entry_lines,
    compress_lines,
    git_blob_id,
    plan_lines,
)
from gitclaw_compress.core.lines import MARKER_KEY, RawLine, join_lines, lines_from_bytes
from gitclaw_compress.core.marker import is_ui_only, restore_data
from gitclaw_compress.formats import detect

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
    return is_ui_only(orjson.loads(line.data)[MARKER_KEY])


@pytest.mark.parametrize(("name", "make"), cases())
def test_ui_copies_go_in_the_kept_turns_and_the_rest_follows_later(
    name: str, make: Callable[[], bytes]
) -> None:
    data = make()
    lines = lines_from_bytes(data)
    window = plan_lines(lines, ON, session_ref=REF, fmt=detect(lines, REF)).window_start
    out, payloads = compress_entry_lines(lines, ON, REF, fmt=detect(lines, REF))
    assert restored(out, payloads) == data
    off, _ = compress_entry_lines(
        lines, CompressSettings(keep_turns=1), REF, fmt=detect(lines, REF)
    )
    for before, after, without in zip(lines, out, off, strict=True):
        if before.number < window:  # older turns: what the option adds is UI-only too
            assert len(after.data) <= len(without.data) or ui_flagged(after) is False
        elif after.data != before.data:
            assert ui_flagged(after), f"{name}: kept line {before.number} changed beyond UI"
    # A second run changes nothing.
    again, more = compress_entry_lines(out, ON, REF, fmt=detect(out, REF))
    assert again == out and not more
    # Later, every line is older than the kept window: a UI-only line gets the rest of its
    # compression (and loses its flag), about as small as a line compressed at once, and
    # restores to the original.
    older = CompressSettings(keep_turns=0, stub_ui_copies=True)
    later, later_payloads = compress_entry_lines(out, older, REF, fmt=detect(out, REF))
    assert restored(later, {**payloads, **later_payloads}) == data
    fresh, _ = compress_entry_lines(lines, older, REF, fmt=detect(lines, REF))
    for now, direct in zip(later, fresh, strict=True):
        if ui_flagged(now):  # nothing more to do on it: the same stubs as at once
            assert len(now.data) <= len(direct.data) + len(b',"ui":true'), now.number
        else:
            assert len(now.data) <= len(direct.data) + 128, now.number  # a longer marker
    again, more = compress_entry_lines(later, older, REF, fmt=detect(later, REF))
    assert again == later and not more


def committed_run(
    lines: list[RawLine], settings: CompressSettings, blobs: dict[str, bytes]
) -> list[RawLine]:
    """A run on a file that is committed as `lines`: each line it compresses names that
    blob (a v3 marker) instead of archiving payloads; `blobs` gains the blob."""
    data = join_lines(lines)
    blob = git_blob_id(data)
    blobs[blob] = data
    plan = plan_lines(lines, settings, session_ref=REF, fmt=detect(lines, REF))
    outputs = compress_lines(lines, plan, settings, session_ref=REF, intact_blob=lambda _: blob)
    return [output.line for output in outputs]


@pytest.mark.parametrize("first", ["v3", "v2"])
@pytest.mark.parametrize(
    ("name", "make"), [(name, makers[0][1]) for name, makers in SYNTHETIC.items()]
)
def test_committed_ui_only_lines_reopen_with_a_v3_marker(
    name: str, make: Callable[[], bytes], first: str
) -> None:
    """A UI-only marker naming a committed blob (v3, or v2 as the release before v3 wrote
    it): a second run changes nothing; once older than the kept window, the line gets the
    rest of its compression and a v3 marker without the flag; every line restores."""
    data = make()
    lines = lines_from_bytes(data)
    blobs: dict[str, bytes] = {}
    if first == "v2":
        with writing_v2_markers():
            out = committed_run(lines, ON, blobs)
    else:
        out = committed_run(lines, ON, blobs)
    flagged = [line for line in out if ui_flagged(line)]
    form = b'"ui":true}' if first == "v2" else b':ui"'
    assert flagged and all(line.data.endswith(form + b"}") for line in flagged), name
    assert restored(out, blobs) == data
    with writing_v2_markers() if first == "v2" else nullcontext():
        assert committed_run(out, ON, blobs) == out
    later = committed_run(out, CompressSettings(keep_turns=0, stub_ui_copies=True), blobs)
    assert restored(later, blobs) == data
    reopened = [later[line.number - 1] for line in flagged if later[line.number - 1] != line]
    # The same lines as in a file never committed (v1 markers, payloads archived).
    out_v1, _ = compress_entry_lines(lines, ON, REF, fmt=detect(lines, REF))
    later_v1, _ = compress_entry_lines(
        out_v1, CompressSettings(keep_turns=0, stub_ui_copies=True), REF, fmt=detect(out_v1, REF)
    )
    changed_v1 = [
        line.number for line in out_v1 if ui_flagged(line) and later_v1[line.number - 1] != line
    ]
    assert [line.number for line in reopened] == changed_v1
    assert reopened or name in ("pi", "codex"), f"{name}: no UI-only line was compressed further"
    for line in reopened:
        assert b'"' + MARKER_KEY.encode() + b'":"3:' in line.data and not ui_flagged(line)


def test_the_option_stubs_something_in_the_kept_turn_of_every_format() -> None:
    """Each format's typical synthetic file holds UI-only copies in its last turn."""
    changed = {}
    for name, makers in SYNTHETIC.items():
        data = makers[0][1]()
        lines = lines_from_bytes(data)
        window = plan_lines(lines, ON, session_ref=REF, fmt=detect(lines, REF)).window_start
        out, _ = compress_entry_lines(lines, ON, REF, fmt=detect(lines, REF))
        changed[name] = sum(
            1 for line in out[window - 1 :] if ui_flagged(line) and line.number >= window
        )
    assert all(changed.values()), changed


def test_a_corpus_file_is_not_needed(tmp_path: Path) -> None:
    assert cases()  # synthetic cases always exist
