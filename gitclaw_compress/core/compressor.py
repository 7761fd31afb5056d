"""The pure core: raw lines in; lines, and the payloads they dropped, out.

Two passes over the lines. `scan` finds the turns, the window of recent turns to keep, and
which tool outputs are redundant. `compress_lines` rewrites entries before the window by
splicing small JSON values over large ones, and appends a marker that records, for each
splice, the path and the git object id of the original bytes, plus the sha256 of the whole
original line and the number of lines the file had then. When the caller knows a committed
(or staged) blob of the session that holds the original line at the same line number, the
marker (v3) names that blob and line instead, and no payload is archived. `marker.restore_data`
reverses both byte for byte.

By job: `core.plan` is pass 1 (`scan`), `core.rewrite` pass 2 (`compress_lines`, the splices
and the marker), `core.spans` finds the values' bytes in a line; this module runs them
together (`plan_lines`, `compress_entry_lines`) and settles the budget policies on a trial
pass 2 (`settle`, `measure_run`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitclaw_compress.core.estimator import Estimator
from gitclaw_compress.core.format import CoreFormat
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.core.marker import UI_ONLY_KEY
from gitclaw_compress.core.plan import BudgetPlan, SessionPlan, below_minimum, scan
from gitclaw_compress.core.rewrite import (
    IntactBlob,
    IntactCommit,
    ObjectId,
    OutputLine,
    Payload,
    compress_lines,
    git_blob_id,
    git_blob_id_sha256,
)
from gitclaw_compress.core.stubs import encode_stub as encode_stub
from gitclaw_compress.model import THINKING, USER
from gitclaw_compress.settings import STRATEGIES as STRATEGIES
from gitclaw_compress.settings import BudgetSettings, CompressSettings

OUT_OF_REACH = "the target is out of reach: "


def _no_object_id(data: bytes) -> str:
    return ""


@dataclass(slots=True)
class RunMeasure:
    """What a pass 2 under some plan would do, measured without writing anything."""

    bytes_before: int = 0
    bytes_after: int = 0
    lines_changed: int = 0
    savings: dict[int, int] = field(default_factory=dict)  # line -> context tokens freed

    @property
    def tokens_saved(self) -> int:
        return sum(self.savings.values())


def measure_run(
    lines: Iterable[RawLine],
    plan: SessionPlan,
    settings: CompressSettings,
    *,
    session_ref: str,
    estimator: Estimator,
    tokens_now: Mapping[int, int],
    object_id: ObjectId = _no_object_id,
    intact_commit: IntactCommit | None = None,
    intact_blob: IntactBlob | None = None,
) -> RunMeasure:
    """Run pass 2 without output: bytes, changed lines, and the context tokens each line frees.

    `tokens_now` maps the lines of the messages in the context to their estimated tokens;
    other lines free bytes but no context tokens. With the default `object_id` the byte
    counts are off by the length of the ids in the markers (40 characters each).
    """
    measure = RunMeasure()
    for result in compress_lines(
        lines,
        plan,
        settings,
        session_ref=session_ref,
        object_id=object_id,
        intact_commit=intact_commit,
        intact_blob=intact_blob,
    ):
        measure.bytes_after += len(result.line.encode())
        if not result.changed:
            measure.bytes_before += len(result.line.encode())
            continue
        measure.bytes_before += result.original_size + result.line.newline
        measure.lines_changed += 1
        number = result.line.number
        if number in tokens_now:
            entry = parse_entry(result.line.data)
            view = plan.format.view(number, entry) if entry is not None else None
            after = (
                sum(estimator.message_tokens(message) for message in view.messages)
                if view is not None
                else 0
            )
            measure.savings[number] = tokens_now[number] - after
    return measure


def settle(
    plan: SessionPlan,
    lines: Iterable[RawLine],
    settings: CompressSettings,
    *,
    session_ref: str,
    object_id: ObjectId = _no_object_id,
    intact_commit: IntactCommit | None = None,
    intact_blob: IntactBlob | None = None,
) -> SessionPlan:
    """Pass 1b for the budget policies: measure what a trial run frees, then decide.

    - Budget pruning stubs its candidates only if together they free at least
      `minimum_tokens` (measured, stubs included); otherwise nothing is pruned.
    - Target mode compresses whole lines oldest first, stopping at the first line after which
      the context is at or under the target; never at or after the floor.

    Returns a new plan for pass 2; the same stubs follow, since pass 2 runs the same code.
    Given the `object_id`, `intact_commit` and `intact_blob` pass 2 gets, the trial measures
    the very stubs and markers it writes, so the context it says follows is the one `status`
    then gives.
    """
    budget = plan.budget
    if budget is None or not plan.needs_settling:
        return plan
    options = settings.budget
    target_mode = budget.target_tokens is not None
    if target_mode:  # every compression before the floor
        trial = dataclasses.replace(plan, window_start=budget.floor, pruned=frozenset())
    else:  # the candidates' outputs only
        trial = dataclasses.replace(plan, window_start=1, pruned=frozenset(budget.candidates))
    savings = measure_run(
        lines,
        trial,
        settings,
        session_ref=session_ref,
        estimator=budget.context.estimator,
        tokens_now=budget.context.tokens_by_line(),
        object_id=object_id,
        intact_commit=intact_commit,
        intact_blob=intact_blob,
    ).savings
    decided = dataclasses.replace(plan, budget=dataclasses.replace(budget, settled=True))
    if target_mode:
        return _settle_target(decided, budget, options, savings)
    return _settle_pruning(decided, budget, options, savings)


def _settle_target(
    decided: SessionPlan, budget: BudgetPlan, options: BudgetSettings, savings: Mapping[int, int]
) -> SessionPlan:
    """Target mode's decision: the first line after which the context is at or under the
    target (with the recorded usage's excess freed), and what holds it out of reach if none."""
    assert decided.budget is not None and budget.target_tokens is not None
    size, target = budget.size, budget.target_tokens
    # The figure compared with the target is the one `status` gives once the run is
    # done: compressing a message before the reply whose recorded usage counts now makes
    # that usage stale, and `status` then estimates every message.
    # Recorded usage over the target is what the provider counted: the run frees at
    # least that much, even where the estimate `status` falls back to is lower.
    excess = max(0, size.tokens - target) if size.source != "estimate" else 0
    freed, cut, changed = 0, budget.floor, list[int]()
    after, source = size.after_run((), 0)
    for number in sorted(savings):
        freed += savings[number]
        changed.append(number)
        after, source = size.after_run(changed, freed)
        if after <= target and freed >= excess:
            cut = number + 1
            break
    reached = after <= target
    decided.window_start = cut
    decided.budget.freed_tokens = freed
    decided.budget.tokens_after, decided.budget.source_after = after, source
    decided.budget.reached = reached
    decision = (
        f"target mode: target {target:,} tokens ({options.target_percent}% of "
        f"{budget.budget.usable:,} usable); compressing the lines before {cut} frees "
        f"{freed:,} tokens (estimated with {options.estimator})"
    )
    if excess:
        decision += f"; the recorded usage ({size.tokens:,}) was {excess:,} over the target" + (
            "" if freed >= excess else f", and the run frees only {freed:,} of it"
        )
    if not reached:
        held = held_by(budget, savings)
        decided.budget.held = held
        decided.budget.out_of_reach = describe_held(held, options)
        decision += f"; {OUT_OF_REACH}{decided.budget.out_of_reach}"
    decided.budget.decision = decision
    return decided


def _settle_pruning(
    decided: SessionPlan, budget: BudgetPlan, options: BudgetSettings, savings: Mapping[int, int]
) -> SessionPlan:
    """Budget pruning's decision: the candidates that free something, if together they free
    at least `minimum_tokens`; otherwise nothing is pruned."""
    assert decided.budget is not None
    freed = sum(savings.get(number, 0) for number in budget.candidates)
    if freed < options.minimum_tokens:
        decided.budget.decision = below_minimum(freed, len(budget.candidates), options)
        return decided
    chosen = frozenset(number for number in budget.candidates if savings.get(number, 0) > 0)
    decided.pruned = chosen
    decided.budget.freed_tokens = freed
    after, source = budget.size.after_run(chosen, freed)
    decided.budget.tokens_after, decided.budget.source_after = after, source
    decided.budget.decision = (
        f"budget pruning: {len(chosen)} tool output(s) outside the newest "
        f"{options.protect_tokens:,} tokens pruned, {freed:,} tokens freed (estimated with "
        f"{options.estimator}; minimum {options.minimum_tokens:,})"
    )
    return decided


def held_by(budget: BudgetPlan, savings: Mapping[int, int]) -> dict[str, Any]:
    """What is left of the context once every line before the floor is compressed, in
    estimated tokens, by what keeps it: the kept turns, a prefix that signed thinking of a
    model with preserved thinking binds (sent byte for byte), what people typed, the rest."""
    context = budget.context
    bound_line, bound_model = 0, None
    for message in context.sent():
        if any(part.kind == THINKING and part.bound for part in message.parts):
            bound_line = max(message.source_lines())
            bound_model = message.model or context.model
    roles = {view.number: view.messages[0].role for view in context.views if view.messages}
    held = {"kept_turns": 0, "preserved_thinking": 0, "user_text": 0, "older": 0}
    for number, tokens in context.tokens_by_line().items():
        left = tokens - savings.get(number, 0)
        if number >= budget.floor:
            held["kept_turns"] += left
        elif number <= bound_line:
            held["preserved_thinking"] += left
        elif roles.get(number) == USER:
            held["user_text"] += left
        else:
            held["older"] += left
    return {**held, "preserved_thinking_model": bound_model if bound_line else None}


def describe_held(held: Mapping[str, Any], options: BudgetSettings) -> str:
    """`held_by` in one clause, largest first, naming only what holds something."""
    words = {
        "kept_turns": f"the newest {options.protect_turns} turn(s) kept (prune.protectTurns)",
        "preserved_thinking": "messages before preserved thinking of "
        f"{held.get('preserved_thinking_model') or 'an unknown model'} (sent byte for byte)",
        "user_text": "what the user typed",
        "older": "older messages compressed as far as they go",
    }
    held_now = ((held[key], what) for key, what in words.items() if held[key] > 0)
    parts = sorted(held_now, reverse=True)
    if not parts:
        return "nothing is left to compress"
    listed = ", ".join(f"{tokens:,} tokens in {what}" for tokens, what in parts)
    return f"what is left (estimated with {options.estimator}) is {listed}"


def plan_lines(
    lines: list[RawLine],
    settings: CompressSettings,
    *,
    session_ref: str,
    fmt: CoreFormat,
    estimator: Estimator | None = None,
    object_id: ObjectId = _no_object_id,
    intact_commit: IntactCommit | None = None,
    intact_blob: IntactBlob | None = None,
) -> SessionPlan:
    """Both planning passes over lines in memory, in the format and with the estimator (for
    a budget policy) the caller hands; `object_id`, `intact_commit` and `intact_blob` as
    pass 2 will get them (see `settle`)."""
    plan = scan(lines, settings, fmt, estimator)
    if plan.needs_settling:
        plan = settle(
            plan,
            lines,
            settings,
            session_ref=session_ref,
            object_id=object_id,
            intact_commit=intact_commit,
            intact_blob=intact_blob,
        )
    return plan


def compress_entry_lines(
    lines: list[RawLine],
    settings: CompressSettings,
    session_ref: str,
    *,
    fmt: CoreFormat,
    estimator: Estimator | None = None,
) -> tuple[list[RawLine], dict[str, bytes]]:
    """In-memory convenience: every pass over a list; returns lines and payloads by oid."""
    plan = plan_lines(lines, settings, session_ref=session_ref, fmt=fmt, estimator=estimator)
    out: list[RawLine] = []
    payloads: dict[str, bytes] = {}
    for result in compress_lines(lines, plan, settings, session_ref=session_ref):
        out.append(result.line)
        for payload in result.payloads:
            payloads[payload.oid] = payload.data
    return out, payloads


__all__ = [
    "STRATEGIES",
    "UI_ONLY_KEY",
    "BudgetPlan",
    "BudgetSettings",
    "CompressSettings",
    "Entry",
    "IntactBlob",
    "IntactCommit",
    "ObjectId",
    "OutputLine",
    "Payload",
    "RunMeasure",
    "SessionPlan",
    "compress_entry_lines",
    "compress_lines",
    "git_blob_id",
    "git_blob_id_sha256",
    "measure_run",
    "plan_lines",
    "scan",
    "settle",
]
