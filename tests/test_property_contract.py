"""restore(compress(x)) == x for generated transcripts of every format.

Each format of `format_cases.FORMAT_CASES` names its hypothesis strategy (format_strategies.py),
built from its synthetic builder: a random number of turns and tool calls, tool outputs of
random sizes and unicode, images, and sealed reasoning (signed thinking, encrypted or opaque
reasoning). On each generated file, compressed in memory at a random --keep-turns with random
size limits:
- the format is recognized, and the line count and every newline stay;
- restoring every changed line from its payloads gives the input byte for byte;
- every value the format calls sealed is unchanged, on every line;
- the last N turns are byte-identical;
- a second run changes nothing.
The example counts stay modest: the pi-only `test_property.py` goes deeper for pi.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from format_cases import FORMAT_CASES, FormatCase
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines, plan_lines
from gitclaw_compress.core.lines import join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.formats import FORMATS, detect

EXAMPLES = 50

LIMITS = [(500, 1000), (0, 0), (50, 64)]


def test_every_format_has_a_case() -> None:
    assert sorted(case.name for case in FORMAT_CASES) == sorted(FORMATS)


def check_round_trip(name: str, data: bytes, keep: int, limits: tuple[int, int]) -> None:
    config = CompressSettings(
        keep_turns=keep,
        tool_call_max_bytes=limits[0],
        tool_result_max_bytes=limits[1],
        redundancy_min_bytes=64,
    )
    original = lines_from_bytes(data)
    fmt = detect(original, "s.jsonl")
    assert fmt.name == name
    window = plan_lines(original, config, session_ref="s.jsonl", fmt=fmt).window_start
    lines, payloads = compress_entry_lines(
        original, config, "s.jsonl", fmt=detect(original, "s.jsonl")
    )
    assert len(lines) == len(original)
    assert join_lines(restore_line(line, "s", payloads.get) for line in lines) == data
    for before, after in zip(original, lines, strict=True):
        assert after.newline == before.newline
        if before.number >= window:
            assert after.data == before.data, f"line {before.number} is in the kept turns"
        entry_before, entry_after = parse_entry(before.data), parse_entry(after.data)
        if entry_before is not None:
            assert entry_after is not None, f"line {before.number} no longer parses"
            assert list(fmt.sealed(entry_before)) == list(fmt.sealed(entry_after))
    again, more = compress_entry_lines(lines, config, "s.jsonl", fmt=detect(lines, "s.jsonl"))
    assert join_lines(again) == join_lines(lines) and not more


def _property(case: FormatCase) -> Callable[..., None]:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=case.strategy(), keep=st.integers(0, 2), limits=st.sampled_from(LIMITS))
    def run(data: bytes, keep: int, limits: tuple[int, int]) -> None:
        check_round_trip(case.name, data, keep, limits)

    return run


@pytest.mark.parametrize("case", [pytest.param(case, id=case.name) for case in FORMAT_CASES])
def test_restore_of_compress_is_identity_for_every_format(case: FormatCase) -> None:
    _property(case)()
