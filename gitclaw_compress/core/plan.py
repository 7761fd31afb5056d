"""Pass 1: read every line once, find the turns and the kept window, let the format gather
what it needs and say which lines can hold bulk; with a budget policy, pick the candidates."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from gitclaw_compress.core.estimator import Estimator
from gitclaw_compress.core.format import CoreFormat, FileRules
from gitclaw_compress.core.lines import MARKER_KEY, LineCounts, RawLine
from gitclaw_compress.model import TOOL_RESULT, call_names
from gitclaw_compress.settings import BudgetSettings, CompressSettings

if TYPE_CHECKING:  # the context model is loaded only when a budget policy runs
    from gitclaw_compress.core.context import Budget, Context, ContextSize


@dataclass(slots=True)
class BudgetPlan:
    """What the token-aware policies decided (see `scan` and `settle`)."""

    context: Context
    size: ContextSize  # the context now
    budget: Budget  # the model's usable context
    floor: int  # lines from here on (the newest protect_turns turns) are never touched
    protected_entry: str | None  # oldest entry of the protected newest protect_tokens tokens
    candidates: tuple[int, ...]  # tool outputs budget pruning may stub (line numbers)
    target_tokens: int | None = None  # target mode: the context to reach
    freed_tokens: int = 0  # estimated context tokens the chosen policy frees
    settled: bool = False
    decision: str = ""  # what was decided, in words
    # The context `status` gives once the run is done, and its source in words (as its
    # "context then" says them: `ContextSize.after_run`).
    tokens_after: int | None = None
    source_after: str = ""
    reached: bool | None = None  # target mode: whether the target is reached
    # Target mode out of reach: estimated tokens left, by what keeps them (`held_by`).
    held: dict[str, Any] | None = None
    out_of_reach: str = ""  # `held` in words

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.budget.model,
            "usable_tokens": self.budget.usable,
            "context_tokens": self.size.tokens,
            "source": self.size.source,
            "estimator": self.size.estimator,
            "estimated_tokens": self.size.estimated,
            "context_label": self.size.brief(),
            "protected_from_entry": self.protected_entry,
            "target_tokens": self.target_tokens,
            "freed_tokens": self.freed_tokens,
            "context_tokens_after": self.tokens_after,
            "context_source_after": self.source_after,
            "target_reached": self.reached,
            "held_by": self.held,
            "out_of_reach": self.out_of_reach,
            "decision": self.decision,
        }

    def unchanged(self) -> None:
        """Nothing is compressed: the context then is the context now."""
        self.tokens_after, self.source_after = self.size.after_run((), 0)


@dataclass(slots=True)
class SessionPlan:
    """What pass 1 learned. Line numbers are 1-based.

    Lines before `window_start` get every compression; lines in `pruned` (tool outputs the
    budget policy chose) get their output stubbed wherever they are.
    """

    format: CoreFormat
    rules: FileRules  # the format's per-file state, filled in pass 1
    window_start: int  # lines from here on are the kept window, byte for byte
    turns: int
    kept_turns: int
    counts: LineCounts
    pruned: frozenset[int] = frozenset()
    budget: BudgetPlan | None = None
    # Lines nested deeper than orjson.dumps goes (255 levels): passed through untouched.
    too_deep: list[int] = field(default_factory=list)
    ui_copies: bool = False  # stub_ui_copies: pass 2 sees the kept window's lines too
    # Deep: lines before the window and before the agent's newest compaction record that
    # its resume never sends (the format's own `resume` says which are sent).
    superseded: frozenset[int] = frozenset()
    # Byte N-1 is 0 when pass 1 found that line N cannot hold bulk (it did not parse, or the
    # format's `observe` said so): pass 2 copies it unparsed. None: every line may.
    bulk: bytearray | None = None

    @property
    def touches_anything(self) -> bool:
        return self.window_start > 2 or bool(self.pruned) or self.ui_copies

    @property
    def preserved_thinking(self) -> list[int] | None:
        """[first, last]: the lines before the kept window where what the model sees stays,
        because thinking bound to its prefix (preserved thinking) comes after them."""
        span = self.rules.preserved_thinking_span()
        budget = self.budget
        if span is not None and budget is not None and budget.target_tokens is None:
            return list(span)  # budget pruning picks outputs anywhere it does not protect
        if span is None or span[0] >= self.window_start:
            return None
        return [span[0], min(span[1], self.window_start - 1)]

    @property
    def needs_settling(self) -> bool:
        """Whether `settle` must measure a trial run before pass 2 (budget policies only)."""
        budget = self.budget
        if budget is None or budget.settled:
            return False
        return bool(budget.candidates) or budget.target_tokens is not None


def scan(
    lines: Iterable[RawLine],
    settings: CompressSettings,
    fmt: CoreFormat,
    estimator: Estimator | None = None,
) -> SessionPlan:
    """Pass 1: find the turns, and let the format see every line.

    With a budget policy (`settings.budget.active`) on a format that supports it, it also
    reads what the model sees and how many tokens that is, counted by `estimator` (the one
    `settings.budget.estimator` names, handed by the caller), and picks the candidates;
    `settle` then decides (see there). Not split: its loop runs once per line of the file
    with every lookup bound to a local and `parse_entry` inlined, where a helper called per
    line would cost more than the pass's own work on a short line.
    """
    budget = settings.budget
    if not budget.active:
        estimator = None
    elif estimator is None:
        raise ValueError(f"a budget policy needs its estimator ({budget.estimator}) handed in")
    rules = fmt.rules(settings)
    seen: list[RawLine] = []  # what the budget and deep read after the pass
    counts = LineCounts()
    turn_starts: list[int] = []
    too_deep: list[int] = []
    bulk = bytearray()
    keep_lines = estimator is not None or settings.deep
    count, observe, is_turn_start = counts.observe, rules.observe, fmt.is_turn_start
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    flag, marker_key = bulk.append, MARKER_KEY
    for line in lines:
        try:  # parse_entry, inlined: this loop runs once per line of the file
            entry = loads(line.data)
        except decode_error:
            entry = None
        else:
            if not isinstance(entry, dict):
                entry = None
        count(line, entry)
        if keep_lines:
            seen.append(line)
        if entry is None:
            flag(0)
            continue
        if is_turn_start(entry):
            turn_starts.append(line.number)
        try:
            # A marked line may be reopened (UI copies stubbed in the kept window): pass 2
            # reads it whatever the format says.
            flag(observe(line.number, entry) or marker_key in entry)
        except orjson.JSONEncodeError:  # orjson.loads reads deeper than dumps writes
            too_deep.append(line.number)
            flag(1)
    keep = settings.keep_turns
    plan = SessionPlan(
        format=fmt,
        rules=rules,
        window_start=_window_start(counts.lines, turn_starts, keep),
        turns=len(turn_starts),
        kept_turns=min(keep, len(turn_starts)),
        counts=counts,
        too_deep=too_deep,
        ui_copies=settings.ui_copies,
        bulk=bulk if len(bulk) == counts.lines else None,
    )
    if settings.deep:
        plan.superseded = superseded_lines(fmt, seen, plan.window_start)
    if estimator is not None:
        _plan_budget(plan, seen, turn_starts, budget, estimator)
    return plan


def _window_start(lines: int, turn_starts: list[int], keep: int) -> int:
    """The first line of the newest `keep` turns, kept byte for byte."""
    if keep == 0:
        return lines + 1
    if len(turn_starts) > keep:
        return turn_starts[-keep]
    return 1


def superseded_lines(fmt: CoreFormat, lines: list[RawLine], window_start: int) -> frozenset[int]:
    """Lines before `window_start` and before the compaction record the agent resumes from
    whose messages its resume never sends (none when it resumes from no such record, or the
    format cannot rebuild what it resumes with)."""
    from gitclaw_compress.core.format import Unsupported

    try:
        conversation = fmt.resume(list(fmt.views(lines)))
    except Unsupported:
        return frozenset()
    if conversation.compaction is None:
        return frozenset()
    sent = {
        number
        for message in conversation.messages
        if message.sent
        for number in message.source_lines()
    }
    end = min(conversation.compaction, window_start)
    return frozenset(line.number for line in lines[: end - 1] if line.number not in sent)


def _plan_budget(
    plan: SessionPlan,
    lines: list[RawLine],
    user_lines: list[int],
    settings: BudgetSettings,
    estimator: Estimator,
) -> None:
    from gitclaw_compress.core.context import message_id, sized_context

    context, size, budget = sized_context(
        plan.format,
        lines,
        estimator,
        settings.originals,
        settings.model_overrides,
        settings.reserve_tokens,
    )
    floor = _floor(plan.counts.lines, user_lines, settings.protect_turns)
    # Walk back from the newest message: the newest protect_tokens tokens are protected, and
    # so is the message that crosses the line; older completed tool outputs are candidates.
    sent = context.sent()
    total = 0
    oldest_protected = len(sent)
    for index in range(len(sent) - 1, -1, -1):
        total += sent[index].tokens
        if total > settings.protect_tokens:
            break
        oldest_protected = index
    protected_entry = message_id(sent[oldest_protected]) if oldest_protected < len(sent) else None
    older = {line for message in sent[:oldest_protected] for line in message.source_lines()}
    outputs = _tool_outputs(context, older, floor, settings.protected_tools)
    # What the model sees before preserved thinking stays (the format's rules keep it).
    bound = plan.rules.preserved_thinking_span() or (0, -1)
    candidates = tuple(number for number in outputs if not bound[0] <= number <= bound[1])
    kept_bound = len(outputs) - len(candidates)
    plan.budget = BudgetPlan(context, size, budget, floor, protected_entry, ())
    if settings.target_percent is not None:
        _target_mode(plan, plan.budget, settings.target_percent)
        return
    if settings.strategy == "tokens":
        plan.window_start = 1
    tokens_now = context.tokens_by_line()
    upper = sum(tokens_now.get(number, 0) for number in candidates)
    if not candidates or upper < settings.minimum_tokens:  # also with minimum_tokens 0
        plan.budget.settled = True
        plan.budget.unchanged()
        plan.budget.decision = below_minimum(upper, len(candidates), settings, kept_bound)
        return
    plan.budget.candidates = candidates


def _floor(lines: int, user_lines: list[int], turns: int) -> int:
    """The first line of the newest `turns` turns, which the budget policies never touch."""
    if turns == 0:
        return lines + 1
    if len(user_lines) >= turns:
        return user_lines[-turns]
    return 1


def _target_mode(plan: SessionPlan, budget: BudgetPlan, percent: int) -> None:
    """Target mode's target; settled already when the context is within it."""
    plan.window_start = 1  # target mode picks its own cut in `settle`
    size, usable = budget.size, budget.budget.usable
    target = usable * percent // 100
    budget.target_tokens = target
    if size.tokens <= target:
        budget.settled = True
        budget.reached = True
        budget.unchanged()
        budget.decision = (
            f"target mode: the context, {size.tokens:,} tokens ({size.brief()}), is "
            f"within the target {target:,} ({percent}% of {usable:,} usable): nothing to do"
        )


def _tool_outputs(
    context: Context, older: set[int], floor: int, protected_tools: frozenset[str]
) -> list[int]:
    """The lines among `older`, before `floor` and not compressed yet, that hold a completed
    tool result of a tool not protected: what budget pruning may stub."""
    tools = call_names(context.views)  # a result's line may name no tool: its call does
    return [
        view.number
        for view in context.views
        if view.number in older
        and view.number < floor
        and view.number not in context.compressed
        and any(
            part.kind == TOOL_RESULT
            and part.complete
            and (part.name or tools.get(part.call_id or "", "")) not in protected_tools
            for message in view.messages
            for part in message.parts
        )
    ]


def below_minimum(freed: int, outputs: int, settings: BudgetSettings, bound: int = 0) -> str:
    # The verdict first, one wording for every format and reader: nothing is pruned.
    newest = f"the newest {settings.protect_tokens:,} tokens"
    if outputs:
        why = (
            f"{outputs} tool output(s) outside {newest} would free only {freed:,} tokens, "
            f"under the minimum {settings.minimum_tokens:,}"
        )
    elif bound:
        why = f"no completed tool output outside {newest} that preserved thinking does not keep"
    else:
        why = (
            f"no completed tool output outside {newest} and the newest "
            f"{settings.protect_turns} turn(s)"
        )
    if bound:  # older outputs that preserved thinking keeps as the model saw them
        why += f"; {bound} kept for preserved thinking"
    return f"budget pruning: nothing to prune ({why})"
