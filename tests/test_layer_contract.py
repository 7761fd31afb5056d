"""The contract of the layers above the formats, checked the same way for every format.

A format is in `FORMATS` (the registry) and has synthetic cases in `format_cases.SYNTHETIC`;
that is all it takes to get every check here. A format that cannot read its conversation yet
(`view` raises `Unsupported`) is reported as an expected failure with that reason, so that
the day it can, these checks run on it.

On every synthetic case (and every corpus file of the format, for the invariants):
- `views` and `resume`: every message comes from a real line on the resume path; the path is
  in file order and so are the messages after a summary; each tool result follows the call
  it answers (by `call_id`) when that call is in the conversation; estimates are not
  negative and recorded usage is positive;
- `context`, `status` and `prune` (budget pruning and target mode) run on the file in memory,
  and what prune stubs is a line holding a completed tool result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from format_cases import SYNTHETIC, corpus_cases
from synthetic import SessionBuilder, tool_call

from gitclaw_compress.config import defaults
from gitclaw_compress.core.compressor import plan_lines
from gitclaw_compress.core.context import Context, measure_context, read_context
from gitclaw_compress.core.lines import RawLine, lines_from_bytes, parse_entry
from gitclaw_compress.formats import FORMATS
from gitclaw_compress.formats.base import Format, Unsupported
from gitclaw_compress.model import SUMMARY, TOOL, TOOL_CALL, TOOL_RESULT
from gitclaw_compress.ops.render import render_line
from gitclaw_compress.ops.status import session_status
from gitclaw_compress.settings import BudgetSettings, CompressSettings
from gitclaw_compress.tokens.estimate import get_estimator

CHARS4 = get_estimator("chars4")


def _cases(*, corpus: bool) -> list[object]:
    cases: list[object] = []
    for name in FORMATS:
        for label, make in SYNTHETIC.get(name, []):
            cases.append(pytest.param(name, make, id=f"{name}-{label}"))
        if corpus:
            for path in corpus_cases(name):
                cases.append(pytest.param(name, path.read_bytes, id=f"{name}-corpus-{path.stem}"))
    return cases


@contextmanager
def served(fmt: Format) -> Iterator[None]:
    """Run a check; a format without the ability is an expected failure, with its reason."""
    try:
        yield
    except Unsupported as error:
        pytest.xfail(f"{fmt.title}: {error}")


def context_of(fmt: Format, lines: list[RawLine]) -> Context:
    return read_context(fmt, lines, CHARS4)


@pytest.mark.parametrize(("name", "make"), _cases(corpus=True))
def test_views_and_resume_keep_their_invariants(name: str, make: Callable[[], bytes]) -> None:
    fmt = FORMATS[name]
    lines = lines_from_bytes(make())
    with served(fmt):
        context = context_of(fmt, lines)
    numbers = {line.number for line in lines}
    parsed = {line.number for line in lines if parse_entry(line.data) is not None}
    views = context.views
    assert [view.number for view in views] == sorted({view.number for view in views})
    assert {view.number for view in views} <= numbers
    conversation = context.conversation
    path = conversation.path
    assert path == sorted(set(path)) and set(path) <= {view.number for view in views}
    if conversation.compaction is not None:
        assert conversation.compaction in path
    order: list[int] = []
    calls: set[str] = set()
    every_call = {
        part.call_id
        for message in conversation.messages
        for part in message.parts
        if part.kind == TOOL_CALL
    }
    for message in conversation.messages:
        for line in message.source_lines():
            assert line in numbers, f"message from line {line}, which the file lacks"
        assert message.line in path or set(message.source_lines()) & set(path)
        assert message.tokens >= 0 and (message.usage is None or message.usage > 0)
        # Tool outputs may move up to their call (Copilot sends each right after its call,
        # whatever order they finished in); the check below pairs them instead.
        if message.role not in (SUMMARY, TOOL):
            order.append(message.line)
        for part in message.parts:
            if part.kind == TOOL_CALL and part.call_id is not None:
                calls.add(part.call_id)
            elif part.kind == TOOL_RESULT and part.call_id in every_call:
                # (a real file may hold a result whose call a lost parent cut off)
                assert part.call_id in calls, f"line {message.line}: a result before its call"
    assert order == sorted(order), "messages out of file order along the path"
    # The lines that parse are the lines a view may come from (a format may skip some).
    assert {view.number for view in views} <= parsed | {
        line.number for line in lines if line.data.strip()
    }


@pytest.mark.parametrize(("name", "make"), _cases(corpus=False))
def test_context_and_status_read_every_format(name: str, make: Callable[[], bytes]) -> None:
    fmt = FORMATS[name]
    lines = lines_from_bytes(make())
    with served(fmt):
        context = context_of(fmt, lines)
        size = measure_context(context, CHARS4)
        status = session_status(lines, defaults(), "s.jsonl", keep_turns=1, fmt=fmt)
    assert context.messages, "a synthetic case gives the model something"
    assert size.estimated == sum(message.tokens for message in context.sent()) > 0
    assert status.context_tokens == size.tokens and status.messages == len(context.messages)
    assert set(status.savings) == {"compress", "deep", "prune", "target"}
    assert status.savings["compress"].lines > 0  # every synthetic case has something to do


@pytest.mark.parametrize(("name", "make"), _cases(corpus=False))
def test_prune_stubs_only_completed_tool_results(name: str, make: Callable[[], bytes]) -> None:
    fmt = FORMATS[name]
    lines = lines_from_bytes(make())
    budget = BudgetSettings(strategy="tokens", protect_tokens=0, minimum_tokens=0, protect_turns=0)
    settings = CompressSettings(keep_turns=1, budget=budget)
    with served(fmt):
        context = context_of(fmt, lines)
        plan = plan_lines(lines, settings, session_ref="s.jsonl", fmt=fmt, estimator=CHARS4)
        target = CompressSettings(keep_turns=1, budget=BudgetSettings(target_percent=1))
        target_plan = plan_lines(lines, target, session_ref="s.jsonl", fmt=fmt, estimator=CHARS4)
    results = {  # lines that hold a completed tool result
        view.number
        for view in context.views
        if any(
            part.kind == TOOL_RESULT and part.complete
            for message in view.messages
            for part in message.parts
        )
    }
    assert plan.budget is not None and plan.budget.decision
    assert plan.pruned <= results
    assert target_plan.budget is not None and target_plan.budget.target_tokens is not None


def test_every_format_globs_are_in_the_default_session_globs() -> None:
    # The config keeps its own table so that reading it loads no format; it must hold every
    # format's globs (a format that says none yet is trivially in it).
    from gitclaw_compress.config import DEFAULT_SESSION_GLOBS

    assert FORMATS["pi"].globs
    for fmt in FORMATS.values():
        assert set(fmt.globs) <= set(DEFAULT_SESSION_GLOBS), fmt.name


@pytest.mark.parametrize(("name", "make"), _cases(corpus=False))
def test_show_renders_every_line_of_every_format(name: str, make: Callable[[], bytes]) -> None:
    fmt = FORMATS[name]
    for line in lines_from_bytes(make()):
        entry = parse_entry(line.data)
        if entry is not None:
            assert render_line(fmt, line.number, entry).strip()


def test_show_renders_a_pi_tool_result_with_what_only_the_ui_shows() -> None:
    session = SessionBuilder()
    session.user("go")
    session.assistant(tool_call("e1", "edit", {"path": "a.py", "oldText": "x", "newText": "y"}))
    number = len(session.lines) + 1
    session.tool_result("e1", "edit", "Edited 1 place", details={"diff": "-x\n+y"})
    entry = parse_entry(session.lines[-1])
    assert entry is not None
    shown = render_line(FORMATS["pi"], number, entry)
    assert shown.startswith("[tool: toolResult]\n[tool result edit id=e1]\nEdited 1 place")
    assert "--- details (shown only in the UI) ---" in shown and '"-x\\n+y"' in shown
