"""Pass 2 copies a line unparsed when pass 1's `observe` said it cannot hold bulk.

For every format, on every synthetic case and every corpus file, under settings that make the
rules do the most (small thresholds, UI copies, pasted images stubbed):
- a line `observe` calls bulk-free gets no edit under any scope (before the window, UI copies
  only, and pruned under a budget policy, the only one that prunes);
- pass 2 with that knowledge writes the same bytes and payloads as pass 2 without it;
- the knowledge is real: some lines of each case are skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from format_cases import SYNTHETIC, session_params

from gitclaw_compress.core.compressor import CompressSettings, compress_lines, plan_lines
from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats import FORMATS, detect
from gitclaw_compress.formats.base import Scope
from gitclaw_compress.settings import BudgetSettings

EAGER = CompressSettings(
    keep_turns=1,
    tool_call_max_bytes=0,
    tool_result_max_bytes=0,
    stub_ui_copies=True,
    keep_user_images=False,
    bash_command_max_chars=0,
    redundancy_min_bytes=1,
)
SETTINGS = (CompressSettings(keep_turns=1), EAGER)
IDS = ["default", "eager"]
# Pass 1 as a budget policy runs it (its estimator and pruning are the budget tests').
BUDGET = CompressSettings(keep_turns=1, budget=BudgetSettings(strategy="tokens"))


@pytest.mark.parametrize(("name", "make"), session_params())
@pytest.mark.parametrize("settings", (*SETTINGS, BUDGET), ids=[*IDS, "budget"])
def test_a_line_without_bulk_gets_no_edit(
    name: str, make: Callable[[], bytes], settings: CompressSettings
) -> None:
    lines = lines_from_bytes(make())
    fmt = detect(lines, "case")
    rules = fmt.rules(settings)
    bulk_free: list[tuple[int, dict[str, object]]] = []
    for line in lines:
        entry = parse_entry(line.data)
        if entry is not None and not rules.observe(line.number, entry):
            bulk_free.append((line.number, entry))
    for number, entry in bulk_free:
        for full, prune, ui_only in (
            (True, False, False),
            (False, True, False),
            (False, False, True),
        ):
            if prune and not settings.budget.active:  # no line is pruned then
                continue
            scope = Scope(number, full, prune, "show", settings, ui_only=ui_only)
            edits = rules.edits(entry, scope)
            assert edits == [], f"line {number} ({full=}, {prune=}, {ui_only=}): {edits}"


@pytest.mark.parametrize(("name", "make"), session_params())
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
def test_skipping_bulk_free_lines_changes_no_byte(
    name: str, make: Callable[[], bytes], settings: CompressSettings
) -> None:
    lines = lines_from_bytes(make())
    plan = plan_lines(lines, settings, session_ref="s.jsonl", fmt=detect(lines, "s.jsonl"))
    assert plan.bulk is not None and len(plan.bulk) == len(lines)
    every = dataclasses.replace(plan, bulk=None)  # each line parsed and asked, as before
    skipped = [
        (out.line, out.payloads)
        for out in compress_lines(lines, plan, settings, session_ref="s.jsonl")
    ]
    asked = [
        (out.line, out.payloads)
        for out in compress_lines(lines, every, settings, session_ref="s.jsonl")
    ]
    assert skipped == asked


def test_some_lines_of_every_format_are_skipped() -> None:
    for name in FORMATS:
        for _label, make in SYNTHETIC[name]:
            lines = lines_from_bytes(make())
            plan = plan_lines(
                lines,
                CompressSettings(keep_turns=1),
                session_ref="s.jsonl",
                fmt=detect(lines, "s.jsonl"),
            )
            assert plan.bulk is not None
            if 0 in plan.bulk:
                break
        else:
            raise AssertionError(f"{name}: no synthetic line is bulk-free")
