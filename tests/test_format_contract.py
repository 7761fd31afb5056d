"""The contract every agent format keeps, checked the same way for each one.

On every synthetic case and every corpus file of the format, compressed in memory at
--keep-turns 1 with no size threshold:
- the file is recognized as its format;
- the line count, each line's newline and every unparsed line stay byte for byte;
- the kept turn is byte-identical;
- every value the format calls sealed (ids, links, types, signed reasoning) is unchanged;
- every changed line is one line of JSON without raw U+2028/U+2029;
- each changed line restores byte for byte from its payloads;
- a second run changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from format_cases import SYNTHETIC, session_params

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines, plan_lines
from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_data
from gitclaw_compress.formats import FORMATS, detect
from gitclaw_compress.formats.base import TITLES

SETTINGS = CompressSettings(keep_turns=1)


@pytest.mark.parametrize(("name", "make"), session_params())
def test_format_contract(name: str, make: Callable[[], bytes]) -> None:
    data = make()
    original = lines_from_bytes(data)
    fmt = detect(original, "case")
    assert fmt.name == name
    plan = plan_lines(original, SETTINGS, session_ref="s.jsonl", fmt=fmt)
    compressed, payloads = compress_entry_lines(
        original, SETTINGS, "s.jsonl", fmt=detect(original, "s.jsonl")
    )
    assert len(compressed) == len(original)
    changed = 0
    for before, after in zip(original, compressed, strict=True):
        assert after.newline == before.newline
        if after.data == before.data:
            continue
        changed += 1
        where = f"line {before.number}"
        assert before.number < plan.window_start, f"{where} is in the kept turn"
        entry_before, entry_after = parse_entry(before.data), parse_entry(after.data)
        assert entry_before is not None and entry_after is not None, where
        assert list(fmt.sealed(entry_before)) == list(fmt.sealed(entry_after)), where
        assert b"\n" not in after.data
        assert "\u2028".encode() not in after.data and "\u2029".encode() not in after.data
        assert restore_data(after.data, where, payloads.get) == before.data
    again, more = compress_entry_lines(
        compressed, SETTINGS, "s.jsonl", fmt=detect(compressed, "s.jsonl")
    )
    assert [line.data for line in again] == [line.data for line in compressed]
    assert not more
    # Every synthetic case is built to have something to compress before its last turn.
    assert changed or "corpus" in str(make), "nothing was compressed"


def test_every_format_has_syntheticsession_params() -> None:
    assert sorted(SYNTHETIC) == sorted(FORMATS)


def test_every_format_has_its_title_in_the_light_table() -> None:
    # Counts lines name formats from TITLES without loading them: same names, same order.
    assert list(TITLES) == list(FORMATS)
    assert all(FORMATS[name].title == title for name, title in TITLES.items())


def test_an_unknown_format_is_one_clear_error() -> None:
    from gitclaw_compress.errors import GitClawError

    with pytest.raises(GitClawError, match=r"^x.jsonl: not a session transcript of a supported"):
        detect(lines_from_bytes(b'{"foo":1}\n{"bar":2}\n'), "x.jsonl")
