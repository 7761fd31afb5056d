"""Where a round of summarizing cuts, on the conversation the agent resumes with.

The conversation is the format's (`Format.resume`): when it resumes from an earlier summary,
that summary is its first message, and this round covers the messages after it up to the
cut. A cut is only ever made at a message that is not a tool's output, and never between a
tool call and its result: every tool call before the cut has its results before the cut too.
The facts come from every message on the resume path before the cut, from the root (not only
this round's), so that a chain of rounds keeps the facts of all of them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gitclaw_compress.core.context import Context, measure_context
from gitclaw_compress.model import (
    COMPACTION,
    MESSAGE,
    SUMMARY,
    SYSTEM,
    TEXT,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Conversation,
    EntryView,
    Message,
)
from gitclaw_compress.summary.facts import is_person
from gitclaw_compress.summary.text import plural
from gitclaw_compress.tokens.estimate import TokenEstimator, estimate_messages

Resume = Callable[[Sequence[EntryView]], Conversation]  # a format's `resume`

# After an earlier compaction, the most of the conversation (that summary included) that a
# new round may leave: the summary it writes carries the earlier one and the facts of every
# round, so a round there pays only by what it removes since. When the kept turns alone hold
# more, no summary brings the conversation under this and nothing is written.
AFTER_COMPACTION_SHARE = 0.4


@dataclass(frozen=True, slots=True)
class KeepPolicy:
    """Keep the last ``turns`` turns, or else the newest ``tokens`` tokens (at least). With
    ``turns`` 0, ``requests`` asks the record for copies of the newest requests, as Codex's
    own compaction writes them (up to its 20,000 tokens; a format without that rule ignores
    it)."""

    turns: int | None = None
    tokens: int | None = None
    requests: bool = False

    def __post_init__(self) -> None:
        if (self.turns is None) == (self.tokens is None):
            raise ValueError("KeepPolicy needs exactly one of turns and tokens")
        if self.requests and self.turns != 0:
            raise ValueError("KeepPolicy copies requests only when it keeps no turn")

    def describe(self) -> str:
        if self.turns == 0 and self.requests:
            return "no turn, only copies of the newest requests"
        if self.turns == 0:
            return "nothing"
        if self.turns is not None:
            return f"the last {self.turns} turn{'s' if self.turns != 1 else ''}"
        return f"the newest {self.tokens:,} estimated tokens"


def message_text(message: Message) -> str:
    """The text parts of a message, joined by newlines."""
    return "\n".join(part.text for part in message.parts if part.kind == TEXT)


def summary_texts(path: Sequence[EntryView]) -> list[str]:
    """The text of every summary record on the resume path, oldest first."""
    return [
        message_text(message)
        for view in path
        if view.kind == COMPACTION
        for message in view.messages
        if message.role == SUMMARY
    ]


@dataclass
class SummaryPlan:
    """Where this round cuts, and what it covers. Positions index ``messages``."""

    messages: list[Message]  # the conversation the agent resumes with, in order
    path: list[EntryView]  # the resume path, root first
    start: int  # this round summarizes messages[start:cut]
    cut: int  # messages[cut] is the first kept message
    round: int
    previous: str | None  # the text of the summary the conversation opens with
    # The text of every summary record on the path, oldest first, ending with `previous`.
    earlier: list[str]
    people: frozenset[int]  # lines of the path that start a turn: what a person wrote
    turn_start: Message | None  # the person's message of the kept turn when the cut splits it
    tokens_before: int  # the context now: recorded usage plus estimates, or estimates
    tokens_before_estimated: int  # every message sent estimated
    kept_tokens: int  # estimated tokens of the messages kept after the summary
    # Estimated tokens of the agent's instructions sent before the conversation: never cut.
    instructions_tokens: int = 0
    # Messages sent before the newest record that its resume path no longer reaches.
    older: list[Message] = field(default_factory=list)

    @property
    def keeps(self) -> bool:
        """Whether any message is kept (else the summary alone stands for the conversation)."""
        return self.cut < len(self.messages)

    @property
    def first_kept(self) -> Message:
        if not self.keeps:
            raise ValueError("nothing is kept after this summary")
        return self.messages[self.cut]

    @property
    def leaf(self) -> EntryView:
        return self.path[-1]

    @property
    def summarized(self) -> list[Message]:
        """This round's messages (the previous summary excluded)."""
        return self.messages[self.start : self.cut]

    @property
    def history(self) -> list[Message]:
        """Every message on the path before the cut, from the root: the facts come from
        these (summary records excluded: their facts are recomputed)."""
        cut_line = self.first_kept.line if self.keeps else None
        out: list[Message] = []
        for view in self.path:
            if view.number == cut_line:
                break
            if view.kind == MESSAGE:
                out.extend(view.messages)
        return sorted(self.older + out, key=lambda message: message.line)


@dataclass(frozen=True, slots=True)
class NoSummary:
    """Why there is nothing to summarize (`refused`: there is, but writing it would break
    the session)."""

    reason: str
    refused: bool = False
    # `not-smaller`: there is something to summarize, but the round would not shrink the
    # conversation enough to be written (see AFTER_COMPACTION_SHARE).
    status: str = "nothing-to-summarize"


def leaves_too_much(kept: int, conversation: int) -> bool:
    """Whether `kept` estimated tokens of a conversation after a compaction are more than a
    new round may leave."""
    return kept > AFTER_COMPACTION_SHARE * conversation


def valid_cuts(messages: Sequence[Message], *, ids: bool = True) -> list[bool]:
    """For each position, whether the kept messages may start there: any message but a tool's
    output, where no tool call before it has a result at or after it, and (`ids`: the format
    links by id) that has an id for its record to name."""
    calls: dict[str, int] = {}
    blocked = [0] * (len(messages) + 1)  # a difference array of positions that split a call
    for position, message in enumerate(messages):
        for part in message.parts:
            if part.call_id is None:
                continue
            if part.kind == TOOL_CALL:
                calls[part.call_id] = position
            elif part.kind == TOOL_RESULT:
                called = calls.get(part.call_id)
                if called is not None and called < position:
                    blocked[called + 1] += 1
                    blocked[position + 1] -= 1
    valid: list[bool] = []
    running = 0
    for position, message in enumerate(messages):
        running += blocked[position]
        candidate = message.role != TOOL and not (ids and message.entry_id is None)
        valid.append(candidate and running == 0)
    return valid


def person_lines(views: Sequence[EntryView]) -> frozenset[int]:
    """The lines of the messages a person wrote. A turn-start line is one, unless it gives the
    model nothing (an agent that records the prompt it sends and, beside it, an event that the
    person typed it): then the newest user message before it. A record that carries user
    messages after its summary (kept requests copied into it) counts as theirs."""
    user_lines = sorted(
        message.line
        for view in views
        if view.kind == MESSAGE
        for message in view.messages
        if message.role == USER
    )
    people: set[int] = set()
    for view in views:
        if view.kind == COMPACTION and any(m.role == USER for m in view.messages):
            people.add(view.number)
        if not view.turn_start:
            continue
        if view.messages:
            people.add(view.number)
        elif before := bisect_right(user_lines, view.number):
            people.add(user_lines[before - 1])
    return frozenset(people)


def earlier_messages(resume: Resume, views: Sequence[EntryView], record: int) -> list[Message]:
    """Every message the agent sent before the record on line `record`, through the records
    before it, each once (an agent may copy kept messages into its record: those are not)."""
    conversation = resume([view for view in views if view.number < record])
    older = (
        earlier_messages(resume, views, conversation.compaction)
        if conversation.compaction is not None
        else []
    )
    records = {view.number for view in views if view.kind == COMPACTION}
    seen = {message.line for message in older}
    return older + [
        message
        for message in conversation.messages
        if message.line not in records and message.line not in seen
    ]


def _valid_at_or_before(valid: list[bool], position: int, start: int) -> int | None:
    """The nearest valid cut at or before ``position`` that leaves something to summarize."""
    for candidate in range(position, start, -1):
        if valid[candidate]:
            return candidate
    return None


def plan_summary(
    context: Context, keep: KeepPolicy, estimator: TokenEstimator, resume: Resume | None = None
) -> SummaryPlan | NoSummary:
    """Choose this round's cut on the conversation of ``context`` (estimated already).
    ``resume`` (the format's) finds the messages sent before the newest record that the resume
    path no longer reaches, for the facts."""
    on_path = set(context.conversation.path)
    path = [view for view in context.views if view.number in on_path]
    messages = context.messages
    ids = any(view.id is not None for view in path)
    if (refused := _refused_before(path, messages, ids)) is not None:
        return refused
    people = person_lines(context.views)
    # The agent's own instructions (sent first, from outside the conversation) are not cut.
    lead = next((i for i, m in enumerate(messages) if m.role != SYSTEM), len(messages) - 1)
    opens_with_summary = context.compaction is not None and messages[lead].role == SUMMARY
    start = lead + 1 if opens_with_summary else lead
    cut = _choose_cut(context, keep, estimator, ids, start, lead, people, opens_with_summary)
    if isinstance(cut, NoSummary):
        return cut
    if any(part.bound for message in messages[cut:] if message.sent for part in message.parts):
        return BINDS_THINKING
    size = measure_context(context, estimator)
    previous = message_text(messages[lead]) if opens_with_summary else None
    earlier = summary_texts(path)
    if previous is not None and earlier[-1:] != [previous]:
        # An agent that writes the summary in a message after its record (Claude Code).
        earlier.append(previous)
    plan = SummaryPlan(
        messages=messages,
        path=path,
        start=start,
        cut=cut,
        # Every record the file has, not only those on the resume path (which starts at the
        # newest record in some agents): the round number says how many came before.
        round=sum(1 for view in context.views if view.kind == COMPACTION) + 1,
        previous=previous,
        earlier=earlier,
        people=people,
        turn_start=None,
        tokens_before=size.tokens,
        tokens_before_estimated=estimate_messages(messages, estimator),
        kept_tokens=sum(message.tokens for message in messages[cut:]),
        instructions_tokens=sum(message.tokens for message in messages[:lead]),
    )
    if resume is not None and context.compaction is not None:
        reached = {view.number for view in path}
        plan.older = [
            message
            for message in earlier_messages(resume, context.views, context.compaction)
            if message.line not in reached
        ]
    if cut < len(messages) and not is_person(messages[cut], people):
        plan.turn_start = next((m for m in reversed(plan.history) if is_person(m, people)), None)
    return _refused_after(plan, keep, opens_with_summary) or plan


def _choose_cut(
    context: Context,
    keep: KeepPolicy,
    estimator: TokenEstimator,
    ids: bool,
    start: int,
    lead: int,
    people: frozenset[int],
    opens_with_summary: bool,
) -> int | NoSummary:
    """Where `plan_summary` cuts: by the turns or the tokens `keep` keeps, at a valid cut
    after ``start``; a NoSummary says why there is none."""
    messages = context.messages
    where = "since the last summary" if opens_with_summary else "in the session"
    valid = valid_cuts(messages, ids=ids)
    cut: int | NoSummary | None
    if keep.turns is not None:
        # An agent that merges the first kept request into the summary message (Claude Code
        # sends consecutive user messages as one) still has that turn.
        merged = opens_with_summary and any(
            line in people for line in messages[lead].source_lines()
        )
        cut = _cut_by_turns(messages, keep, valid, start, people, merged, where)
    else:
        cut = _cut_by_tokens(context, keep, valid, start, estimator, where)
    if cut is None:
        return NoSummary("no place to cut that keeps every tool call with its result")
    return cut


def _refused_before(
    path: Sequence[EntryView], messages: Sequence[Message], ids: bool
) -> NoSummary | None:
    """Why a session has no place for a compaction entry at its end, before any cut."""
    if not path or not messages:
        return NoSummary("the session has no entries")
    if path[-1].kind == COMPACTION:
        return NoSummary("the session already ends with a compaction entry")
    if ids and path[-1].id is None:
        return NoSummary("the last entry has no id for a compaction entry to follow")
    return None


# Thinking of a model with preserved thinking is bound to everything sent before it: behind
# a summary the provider refuses it (docs/preserved-thinking.md).
BINDS_THINKING = NoSummary(
    "its model binds the thinking in the kept turns to everything sent before it "
    "(preserved thinking): with a summary in its place, the API would refuse the "
    "next request; nothing was written. `--keep-turns 0` summarizes a whole "
    "Claude Code session instead (a pi session cannot keep 0 turns)",
    refused=True,
)


def _cut_by_turns(
    messages: Sequence[Message],
    keep: KeepPolicy,
    valid: list[bool],
    start: int,
    people: frozenset[int],
    merged: bool,
    where: str,
) -> int | NoSummary | None:
    """Where the kept turns begin: at the request that many turns from the end (a request
    `merged` into the summary message counts as a turn)."""
    turns_kept = keep.turns
    assert turns_kept is not None
    users = [i for i in range(start, len(messages)) if is_person(messages[i], people)]
    turns = len(users) + merged
    # No turn began since the last summary: the agent compacted in the middle of the newest
    # one, and a new summary of that turn's rest would save little of it.
    if turns <= turns_kept or not turns:
        verb = "are" if turns_kept else "is"
        return NoSummary(f"{plural(turns, 'turn')} {where}, and {keep.describe()} {verb} kept")
    # Keeping no turn keeps nothing: the summary alone, where the agent's record allows.
    if turns_kept == 0:
        return len(messages)
    return _valid_at_or_before(valid, users[-turns_kept], start)


def _cut_by_tokens(
    context: Context,
    keep: KeepPolicy,
    valid: list[bool],
    start: int,
    estimator: TokenEstimator,
    where: str,
) -> int | NoSummary | None:
    """Where the newest tokens the policy keeps begin."""
    tokens_kept = keep.tokens
    assert tokens_kept is not None
    messages = context.messages
    kept = 0
    for position in range(len(messages) - 1, start, -1):
        kept += messages[position].tokens
        if kept >= tokens_kept:
            return _valid_at_or_before(valid, position, start)
    if kept >= tokens_kept:
        return None  # nothing to keep, and no message to cut at
    # The context's own size beside it, as `status` gives it: one fact, one figure (the
    # kept tokens are estimated by definition; recorded usage may say more).
    size = measure_context(context, estimator)
    return NoSummary(
        f"the messages a summary could replace {where} fit in {keep.describe()}, which "
        f"are kept: {kept:,} tokens estimated with {estimator.name} (the whole context, "
        f"as `status` gives it: {size.tokens:,} tokens, {size.brief()})"
    )


def _refused_after(
    plan: SummaryPlan, keep: KeepPolicy, opens_with_summary: bool
) -> NoSummary | None:
    """Why a planned round is not made: nothing left to summarize, or a new summary that
    would leave most of what was sent since the last one."""
    if not plan.summarized:
        return NoSummary("no messages before the cut that are not summarized already")
    conversation = plan.tokens_before_estimated - plan.instructions_tokens
    if opens_with_summary and leaves_too_much(plan.kept_tokens, conversation):
        return NoSummary(
            f"the kept part ({keep.describe()}) holds {plan.kept_tokens / conversation:.0%} of "
            f"the {conversation:,} estimated tokens sent since the last summary (that summary "
            f"included), so a new summary would leave more than "
            f"{AFTER_COMPACTION_SHARE:.0%} of them; keep fewer turns or tokens; "
            "nothing was written",
            status="not-smaller",
        )
    return None
