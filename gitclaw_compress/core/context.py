"""What the model sees when the agent resumes a file, and how many tokens that is.

The format says what its agent sends (`Format.views` and `Format.resume`); this module only
counts: an estimate of every message from its neutral parts, and one rule for the size of
the context, "the recorded usage of the last reply plus estimates of what follows", unless
that usage is stale. Pure: lines in, facts out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitclaw_compress.core.estimator import Estimator, estimate_all
from gitclaw_compress.core.format import CoreFormat
from gitclaw_compress.core.lines import MARKER_BYTES, MARKER_KEY, RawLine, parse_entry
from gitclaw_compress.core.marker import marker_lines
from gitclaw_compress.model import Conversation, EntryView, Message
from gitclaw_compress.model_limits import ModelLimits, lookup_model, usable_tokens
from gitclaw_compress.settings import ContextSettings

LEVELS = ("ok", "warning", "critical")  # in order; level_for gives one of them
# (line number, its bytes now) -> the line before compression, None when it is not at hand:
# what the context measures compression against (read from the archive, never fetched).
OriginalLine = Callable[[int, bytes], bytes | None]


def compressed_lines(lines: Iterable[RawLine]) -> dict[int, int | None]:
    """Lines that carry a marker of this tool, with the file's length when each was
    compressed (None: an older marker that does not say)."""
    found: dict[int, int | None] = {}
    for line in lines:
        if MARKER_BYTES not in line.data:
            continue
        entry = parse_entry(line.data)
        marker = entry.get(MARKER_KEY) if entry is not None else None
        if isinstance(marker, dict | str):
            found[line.number] = marker_lines(marker)
    return found


def message_id(message: Message) -> str:
    """The id people find a message's line by: its entry id, or `L<line>`."""
    return message.entry_id if message.entry_id is not None else f"L{message.line}"


@dataclass(slots=True)
class Context:
    """The messages the agent gives the model, with their estimated tokens, and what decided
    them."""

    conversation: Conversation
    views: list[EntryView]  # every line the agent loads
    estimator: Estimator
    compressed: dict[int, int | None] = field(default_factory=dict)  # see `compressed_lines`
    # Per compressed line whose original was at hand: the estimated tokens compression took
    # out of what the line gives the model (its original's estimate minus its own).
    freed: dict[int, int] = field(default_factory=dict)

    @property
    def messages(self) -> list[Message]:
        return self.conversation.messages

    @property
    def model(self) -> str | None:
        return self.conversation.model

    @property
    def compaction(self) -> int | None:
        return self.conversation.compaction

    def sent(self) -> list[Message]:
        """The messages a provider receives (the agent keeps some it never sends)."""
        return [message for message in self.messages if message.sent]

    def is_compressed(self, message: Message) -> bool:
        return any(line in self.compressed for line in message.source_lines())

    def sent_lines(self) -> list[int]:
        """Every line a message sent comes from, in file order."""
        return sorted({line for message in self.sent() for line in message.source_lines()})

    def tokens_by_line(self) -> dict[int, int]:
        """Estimated tokens of each line that gives a message sent: what its own view gives
        the model, so that a line measured again after compression compares like for like
        (where the agent merges lines into one message, each line counts its own parts)."""
        estimated = {id(message) for message in self.messages}
        by_number = {view.number: view for view in self.views}
        by_line: dict[int, int] = {}
        for number in self.sent_lines():
            view = by_number.get(number)
            if view is None:
                continue
            by_line[number] = sum(
                message.tokens
                if id(message) in estimated
                else self.estimator.message_tokens(message)
                for message in view.messages
            )
        return by_line

    def leaf(self) -> str | None:
        """The id of the newest entry on the resume path (`L<line>` without one)."""
        if not self.conversation.path:
            return None
        number = self.conversation.path[-1]
        view = next((v for v in reversed(self.views) if v.number == number), None)
        return view.id if view is not None and view.id is not None else f"L{number}"


def read_context(
    fmt: CoreFormat,
    lines: list[RawLine],
    estimator: Estimator,
    originals: OriginalLine | None = None,
) -> Context:
    """What `fmt`'s agent sends when it resumes `lines`, each message estimated; with
    `originals`, what compression freed on each compressed line (`Context.freed`)."""
    views = list(fmt.views(lines))
    conversation = fmt.resume(views)
    estimate_all(conversation.messages, estimator)
    context = Context(conversation, views, estimator, compressed_lines(lines))
    if originals is not None and context.compressed:
        context.freed = _freed(fmt, lines, context, originals)
    return context


def _freed(
    fmt: CoreFormat, lines: list[RawLine], context: Context, originals: OriginalLine
) -> dict[int, int]:
    """Per compressed line of a message sent whose original is at hand: the tokens its
    original gives the model less the tokens it gives now, both estimated the same way."""
    sent = set(context.sent_lines())
    found: dict[int, bytes] = {}
    for line in lines:
        if line.number in context.compressed and line.number in sent:
            original = originals(line.number, line.data)
            if original is not None:
                found[line.number] = original
    if not found:
        return {}
    before_lines = [
        RawLine(line.number, found[line.number], line.newline) if line.number in found else line
        for line in lines
    ]
    before = read_context(fmt, before_lines, context.estimator).tokens_by_line()
    now = context.tokens_by_line()
    return {number: before.get(number, 0) - now.get(number, 0) for number in found}


def history_tokens(views: Iterable[EntryView], estimator: Estimator) -> int:
    """Estimated tokens of every message of every line, on the resume path or not."""
    return estimate_all((m for view in views for m in view.messages), estimator)


@dataclass(frozen=True, slots=True)
class ContextSize:
    """How many tokens the context holds now, and where the number comes from."""

    tokens: int
    source: str  # "usage", "usage+estimate" or "estimate"
    estimator: str
    estimated: int  # the estimate of every message sent, whatever the source
    usage_entry: str | None = None  # the reply whose usage was used (or ignored)
    usage_tokens: int | None = None
    trailing_tokens: int = 0  # estimated tokens after that reply
    note: str | None = None  # why recorded usage was not used
    usage_line: int | None = None  # the line of that reply
    # Estimated tokens that compression took out of messages the recorded usage counted
    # (compressed after the reply was written): subtracted from it, not a reason to drop it.
    compressed_tokens: int = 0

    def after_run(self, changed: Iterable[int], saved: int) -> tuple[int, str]:
        """The size `status` gives once a run has changed these lines of sent messages and
        freed `saved` estimated tokens, and its source in words. A run that compresses a
        message before the reply whose usage counts here takes what it frees off that usage,
        as `status` does after the run (`measure_context`). Never below 0."""
        if self.source == "estimate":
            return max(0, self.estimated - saved), f"estimated with {self.estimator}"
        before_reply = any(
            self.usage_line is not None and line < self.usage_line for line in changed
        )
        usage = self.usage_tokens or 0
        if before_reply and self.compressed_tokens + saved >= usage:
            # More than the usage counted in all: it cannot be its part (`measure_context`).
            return max(0, self.estimated - saved), f"estimated with {self.estimator}"
        less = " less what compression freed" if before_reply or self.compressed_tokens else ""
        trailing = self.trailing_tokens - (0 if before_reply else saved)
        after = " + estimated after it" if trailing else ""
        return max(0, self.tokens - saved), f"recorded usage{after}{less}"

    def label(self) -> str:
        """Where `tokens` comes from, with the estimate beside it where that differs: the one
        wording of `status`, `context` and `summarize` for the size of a context."""
        if self.source == "estimate":
            text = f"estimated with {self.estimator}"
            return f"{text}; {self.note}" if self.note else text
        text = f"recorded usage of entry {self.usage_entry}"
        if self.trailing_tokens:
            text += f" + {self.trailing_tokens:,} estimated with {self.estimator} after it"
        if self.compressed_tokens:
            text += (
                f" less {self.compressed_tokens:,} estimated with {self.estimator} that "
                "compression freed from the messages it counted"
            )
        if self.estimated != self.tokens:
            text += f"; estimated with {self.estimator}: {self.estimated:,}"
        return text

    def brief(self) -> str:
        """`label` without the entry and the note, for a line that holds two figures."""
        if self.source == "estimate":
            return f"estimated with {self.estimator}"
        text = "recorded usage" + (" + estimated after it" if self.trailing_tokens else "")
        if self.compressed_tokens:
            text += " less what compression freed"
        if self.estimated != self.tokens:
            text += f"; estimated with {self.estimator}: {self.estimated:,}"
        return text


def measure_context(context: Context, estimator: Estimator) -> ContextSize:
    """The last recorded usage plus estimates for what follows (pi's estimateContextTokens).

    Recorded usage is used only when it still describes the context: not when a compaction
    came after the reply that recorded it. A message before that reply that was compressed
    after the reply was written (its marker records a file at least as long as the reply's
    line number, or no length at all) was counted uncompressed: what compression freed from
    it (`Context.freed`, the estimate of its original less its own) is taken off the usage,
    so that compressing moves the figure by what it frees and nothing else. When the
    original of such a line is not at hand, or what was freed is as much as the usage
    (which then cannot have counted it), every message is estimated instead.
    """
    sent = context.sent()
    estimated = sum(message.tokens for message in sent)
    last = next((i for i in range(len(sent) - 1, -1, -1) if sent[i].usage is not None), None)
    if last is None:
        return ContextSize(estimated, "estimate", estimator.name, estimated)
    reply = sent[last]
    assert reply.usage is not None
    reply_id = message_id(reply)
    stale, freed = _stale_or_freed(context, sent[:last], reply, reply.usage, estimator.name)
    if stale is not None:
        note = f"recorded usage of entry {reply_id} ({reply.usage:,} tokens) not used: {stale}"
        return ContextSize(
            estimated, "estimate", estimator.name, estimated, reply_id, reply.usage, note=note
        )
    trailing = sum(message.tokens for message in sent[last + 1 :])
    return ContextSize(
        max(0, reply.usage + trailing - freed),
        "usage+estimate" if trailing or freed else "usage",
        estimator.name,
        estimated,
        reply_id,
        reply.usage,
        trailing,
        usage_line=reply.line,
        compressed_tokens=freed,
    )


def _stale_or_freed(
    context: Context, before: list[Message], reply: Message, usage: int, estimator: str
) -> tuple[str | None, int]:
    """Why the recorded `usage` of `reply` no longer describes the context (None when it
    does), and what compression freed since from the messages `before` it that it counted."""
    compaction = context.compaction
    if compaction is not None and reply.line < compaction:
        return "it was recorded before the compaction", 0
    later = [message for message in before if _compressed_after(context, message, reply)]
    compressed = {
        line for message in later for line in message.source_lines() if line in context.compressed
    }
    freed = sum(context.freed.get(line, 0) for line in compressed)
    if not compressed <= context.freed.keys():
        return (
            f"{len(later)} earlier message(s) were compressed after it, and it counted them "
            "before they were; their originals are not at hand to take off what "
            "compression freed"
        ), freed
    if freed >= usage:  # a usage that cannot have counted what was freed
        return (
            f"{len(later)} earlier message(s) were compressed after it, and what that "
            f"freed ({freed:,} tokens estimated with {estimator}) is more than it counted"
        ), freed
    return None, freed


def _compressed_after(context: Context, message: Message, reply: Message) -> bool:
    """Whether `message` was compressed when the file already held `reply` (or when is not
    recorded): the usage of `reply` then counts it uncompressed."""
    for line in message.source_lines():
        if line in context.compressed:
            length = context.compressed[line]
            if length is None or length >= reply.line:
                return True
    return False


RECORDED = "recorded"  # Budget.limits_source of a window the agent wrote into the session


@dataclass(frozen=True, slots=True)
class Budget:
    """The model's limits and the usable context, as the session's model gets them."""

    model: str | None
    limits_source: str  # "override", "recorded", "builtin:<family>" or "fallback"
    context_window: int
    max_output: int
    usable: int

    def window_source(self) -> str:
        """Where the window comes from, in words (`status` prints it beside the window)."""
        if self.limits_source == RECORDED:
            return "recorded by the agent"
        if self.limits_source == "override":
            return "models.overrides"
        if self.limits_source.startswith("builtin:"):
            return f"default for {self.limits_source.removeprefix('builtin:')}"
        return "default for an unknown model"


def budget_for(
    model: str | None, overrides: Any, reserve: int, recorded_window: int | None = None
) -> Budget:
    """The limits of the session's model: a configured override first, then the window the
    agent recorded in the session (Codex's `model_context_window`, Copilot CLI's
    `tokenLimit`), then the built-in table's default for the model's family."""
    limits, source = lookup_model(model or "", overrides)
    if recorded_window is not None and source != "override":
        limits = ModelLimits(recorded_window, min(limits.max_output, recorded_window))
        source = RECORDED
    return Budget(
        model,
        source,
        limits.context_window,
        limits.max_output,
        usable_tokens(limits, reserve),
    )


def level_for(tokens: int, usable: int, warning_percent: int, critical_percent: int) -> str:
    """ok, warning (at or above warning_percent of usable) or critical (critical_percent)."""
    if usable <= 0:
        return "critical"
    share = tokens * 100 / usable
    if share >= critical_percent:
        return "critical"
    if share >= warning_percent:
        return "warning"
    return "ok"


@dataclass(frozen=True, slots=True)
class Fullness:
    """How full the context the agent resumes with is, against the usable tokens of its model."""

    context: Context
    size: ContextSize
    budget: Budget
    percent: float
    level: str  # ok | warning | critical


def sized_context(
    fmt: CoreFormat,
    lines: list[RawLine],
    estimator: Estimator,
    originals: OriginalLine | None,
    model_overrides: Mapping[str, Any],
    reserve_tokens: int,
) -> tuple[Context, ContextSize, Budget]:
    """The context the agent resumes with, its size and the model's budget for it: what
    `status`'s fullness and budget pruning both start from."""
    context = read_context(fmt, lines, estimator, originals)
    size = measure_context(context, estimator)
    budget = budget_for(
        context.model, model_overrides, reserve_tokens, context.conversation.context_window
    )
    return context, size, budget


def context_fullness(
    lines: list[RawLine],
    fmt: CoreFormat,
    settings: ContextSettings,
    estimator: Estimator,
    originals: OriginalLine | None = None,
) -> Fullness:
    """The context, its size and its level, with the settings' reserve, model overrides and
    level percentages. `status` reports it; the summary stage of `compress` runs at
    `summary.whenLevel` of it. The caller hands the format and the estimator (the one
    `settings.estimator` names); `originals` gives the compressed lines' originals (see
    `measure_context`)."""
    context, size, budget = sized_context(
        fmt, lines, estimator, originals, settings.model_overrides, settings.reserve_tokens
    )
    level = level_for(
        size.tokens,
        budget.usable,
        settings.warning_percent,
        settings.critical_percent,
    )
    percent = round(size.tokens * 100 / budget.usable, 1) if budget.usable else 100.0
    return Fullness(context, size, budget, percent, level)
