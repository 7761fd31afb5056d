"""The text of a summary: a header (round, how it was made), the body, and the facts."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from gitclaw_compress.model import ASSISTANT, Message
from gitclaw_compress.summary.facts import (
    TASK_MAX_CHARS,
    Facts,
    is_person,
    label,
    render_facts,
    text_of,
    tool_calls,
)
from gitclaw_compress.summary.plan import SummaryPlan
from gitclaw_compress.summary.prompt import EXTRACTIVE_NOTE, HEADER_PREFIX, latest_llm_summary
from gitclaw_compress.summary.text import SNIPPET_CHARS, cut_text, one_line, trim_middle

MAX_OUTLINE_TURNS = 12


# With no message kept, the last request is quoted up to the bound on the original task's:
# the agent resumes from the summary alone, and the request is its current task.
LAST_REQUEST_CHARS = 1000


def header(plan: SummaryPlan, how: str) -> str:
    after = (
        "the messages after it are kept word for word."
        if plan.keeps
        else "no message after it is kept: the last request is quoted under Current work."
    )
    return (
        f"{HEADER_PREFIX}{plan.round} ({how}; gitclaw-compress). It covers "
        f"{len(plan.summarized)} entries up to entry {label(plan.messages[plan.cut - 1])}; " + after
    )


def _turns(messages: Sequence[Message], people: Collection[int]) -> list[list[Message]]:
    turns: list[list[Message]] = []
    for message in messages:
        if is_person(message, people) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _last_reply(turn: list[Message]) -> str | None:
    for message in reversed(turn):
        if message.role == ASSISTANT:
            text = text_of(message).strip()
            if text:
                return text
    return None


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def extractive_summary(plan: SummaryPlan, facts: Facts) -> str:
    """A summary built from the transcript and the facts alone, without an LLM."""
    turns = _turns(plan.history, plan.people)
    out = [f"{header(plan, 'extractive, no LLM')}\n{EXTRACTIVE_NOTE}"]
    earlier = latest_llm_summary(plan)
    if earlier is not None:
        number, body = earlier
        out.append(f"## Earlier summary (round {number}, written by an LLM)\n\n{body}")
    lines = ["## What was accomplished"]
    lines.append(
        f"{facts.user_messages} user messages, {facts.assistant_messages} assistant messages "
        f"and {facts.tool_calls} tool calls before the cut; {len(facts.files)} files were "
        "written or edited (listed in the facts below). Each request, with the assistant's "
        "last reply to it:"
    )
    shown = turns[-MAX_OUTLINE_TURNS:]
    if len(turns) > len(shown):
        lines.append(f"- ({len(turns) - len(shown)} earlier turns not listed)")
    for turn in shown:
        first = turn[0]
        request = (
            one_line(text_of(first), SNIPPET_CHARS)
            if is_person(first, plan.people)
            else "(no request)"
        )
        calls = sum(len(tool_calls(m)) for m in turn)
        reply = _last_reply(turn)
        lines.append(
            f"- (entry {label(first)}) {request} [{calls} tool calls] → "
            + (f'"{one_line(reply, 300)}"' if reply else "(no reply text)")
        )
    out.append("\n".join(lines))
    current = ["## Current work"]
    if turns:
        last = turns[-1]
        first = last[0]
        if is_person(first, plan.people):
            bound = LAST_REQUEST_CHARS if plan.keeps else TASK_MAX_CHARS
            request = trim_middle(text_of(first).strip(), bound)
            current.append(
                f"The last request before the cut (entry {label(first)}):\n\n{_quote(request)}"
            )
        reply = _last_reply(last)
        if reply:
            current.append(f"The assistant's last words before the cut:\n\n{cut_text(reply, 1500)}")
    if plan.turn_start is not None:
        current.append(
            "The kept messages below continue this turn: the cut falls in the middle of it."
        )
    out.append("\n\n".join(current))
    below = "the kept messages below and " if plan.keeps else ""
    out.append(
        f"## Next steps\nNot inferred (extractive summary): continue from {below}the last request."
    )
    out.append(render_facts(facts, plan.round))
    return "\n\n".join(out)


def llm_summary(plan: SummaryPlan, facts: Facts, text: str, *, model: str, provider: str) -> str:
    """The LLM's summary under a header, with the facts appended; with nothing kept after
    it, the last request too, word for word (the task the agent resumes with)."""
    how = f"written by {model} via {provider}"
    parts = [header(plan, how), text.strip()]
    last = None if plan.keeps else last_request(plan)
    if last is not None:
        entry, request = last
        parts.append(f"## The last request (entry {entry})\n\n{_quote(request)}")
    return "\n\n".join(parts) + f"\n\n---\n\n{render_facts(facts, plan.round)}"


def last_request(plan: SummaryPlan) -> tuple[str, str] | None:
    """The entry and text of the last request a person made before the cut, cut to the bound
    on the original task's."""
    for message in reversed(plan.history):
        if is_person(message, plan.people) and (text := text_of(message).strip()):
            return label(message), trim_middle(text, TASK_MAX_CHARS)
    return None
