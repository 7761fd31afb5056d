"""The prompt that asks an LLM for a continuation summary, and earlier summaries read back."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from gitclaw_compress.model import ASSISTANT, IMAGE, SUMMARY, THINKING, TOOL, USER, Message
from gitclaw_compress.summary.facts import (
    FACTS_HEADING,
    Facts,
    images_of,
    is_person,
    render_facts,
    text_of,
    tool_calls,
    tool_result,
)
from gitclaw_compress.summary.plan import SummaryPlan
from gitclaw_compress.summary.text import (
    arguments_of,
    cut_text,
    json_text,
    one_line,
    trim_middle,
)

HEADER_PREFIX = "Continuation summary, round "
EXTRACTIVE_NOTE = (
    "This summary is EXTRACTIVE: gitclaw-compress built it without an LLM, only from facts "
    "extracted from the transcript (requests, replies, files, tool calls, errors, quoted "
    "sentences). It does not interpret the work; the messages kept after it show the "
    "current state."
)
SECTIONS = (
    "What was accomplished",
    "Current work",
    "Files and key changes",
    "Next steps",
    "Decisions and context needed to continue",
)
SYSTEM_PROMPT = (
    "You write continuation summaries of an AI coding agent's session. The agent will "
    "continue the work from your summary and the most recent messages alone. Output only the "
    "summary, in the requested format. Do not continue the conversation and do not answer "
    "questions asked in it."
)

# Bounds on the conversation text of the prompt.
USER_TEXT_CHARS = 4_000
ASSISTANT_TEXT_CHARS = 4_000
THINKING_CHARS = 1_000
ARGUMENT_CHARS = 200
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class PromptLimits:
    tool_result_chars: int = 2_000
    max_input_tokens: int = 60_000


# --------------------------------------------------------------------------------------
# Earlier summaries
# --------------------------------------------------------------------------------------


def unwrapped(summary: str) -> str:
    """A summary this tool wrote, without the words its agent puts before it when it sends it
    (Codex's prefix, Copilot CLI's `<summary>` tag); any other text as it is."""
    at = summary.find(HEADER_PREFIX)
    if at > 0 and summary[at - 1] in "\n>":
        return summary[at:]
    return summary


def summary_body(summary: str) -> str:
    """A summary without the header line and the facts this tool appends (an agent's own
    summaries, and any other text, come back whole)."""
    text = unwrapped(summary)
    if text.startswith(HEADER_PREFIX):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        if text.startswith(EXTRACTIVE_NOTE):
            text = text[len(EXTRACTIVE_NOTE) :]
    at = text.rfind(f"\n{FACTS_HEADING} (deterministic")
    if at < 0 and text.lstrip().startswith(f"{FACTS_HEADING} (deterministic"):
        at = 0
    if at >= 0:
        text = text[:at]
    return text.strip().removesuffix("---").strip()


def is_extractive(summary: str) -> bool:
    """Whether this tool wrote `summary` without an LLM (its second line says so)."""
    text = unwrapped(summary)
    return text.startswith(HEADER_PREFIX) and f"\n{EXTRACTIVE_NOTE}" in text


def previous_summary(plan: SummaryPlan) -> str | None:
    if plan.previous is None or not plan.previous.strip():
        return None
    return summary_body(plan.previous)


def latest_llm_summary(plan: SummaryPlan) -> tuple[int, str] | None:
    """The body of the newest summary on the path that an LLM wrote (ours or the agent's),
    with its round number; extractive summaries are skipped, their facts are recomputed.
    The path holds the newest records of the file (it may start at the newest), so the
    newest summary on it is round ``plan.round - 1``, the one before it one less."""
    for back, summary in enumerate(reversed(plan.earlier), start=1):
        if is_extractive(summary):
            continue
        body = summary_body(summary)
        if body:
            return plan.round - back, body
    return None


# --------------------------------------------------------------------------------------
# The conversation as text
# --------------------------------------------------------------------------------------


def _format_arguments(arguments: object) -> str:
    if not isinstance(arguments, dict):
        return cut_text(json_text(arguments), ARGUMENT_CHARS)
    return ", ".join(
        f"{key}={trim_middle(json_text(value), ARGUMENT_CHARS)}" for key, value in arguments.items()
    )


def _with_images(text: str, message: Message) -> str:
    images = images_of(message)
    return text + f"\n[{images} image(s)]" if images else text


def serialize_message(
    message: Message, limits: PromptLimits, people: Collection[int] | None = None
) -> list[str]:
    """One message as tagged text lines, with long parts trimmed (tool results above all)."""
    parts: list[str] = []
    if message.role == TOOL:
        result = tool_result(message)
        text = _with_images(text_of(message), message)
        status = " (error)" if result is not None and result.error else ""
        name = (result.name if result is not None else None) or "tool"
        body = trim_middle(text.strip(), limits.tool_result_chars) or "(no output)"
        parts.append(f"[Tool result {name}{status}]: {body}")
    elif message.role == ASSISTANT:
        if message.failed:
            parts.append(f"[Assistant request failed]: {one_line(message.error or 'error')}")
        thinking = "\n".join(p.text for p in message.parts if p.kind == THINKING).strip()
        if thinking:
            parts.append(f"[Assistant thinking]: {trim_middle(thinking, THINKING_CHARS)}")
        text = text_of(message).strip()
        if text:
            parts.append(f"[Assistant]: {trim_middle(text, ASSISTANT_TEXT_CHARS)}")
        calls = [
            f"{call.name}({_format_arguments(arguments_of(call.text))})"
            for call in tool_calls(message)
        ]
        if calls:
            parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
    elif is_person(message, people):
        text = _with_images(text_of(message), message)
        if text.strip():
            parts.append(f"[User]: {trim_middle(text.strip(), USER_TEXT_CHARS)}")
    elif message.role in (USER, SUMMARY) or any(p.kind == IMAGE for p in message.parts):
        text = text_of(message).strip()
        if text:
            parts.append(f"[Context]: {trim_middle(text, USER_TEXT_CHARS)}")
    return parts


def serialize_conversation(
    messages: Sequence[Message], limits: PromptLimits, people: Collection[int] | None = None
) -> str:
    """The messages as text, within ``limits.max_input_tokens`` (about 4 characters each):
    when too long, the oldest quarter of the budget and the newest rest are kept."""
    parts: list[str] = []
    for message in messages:
        parts.extend(serialize_message(message, limits, people))
    budget = limits.max_input_tokens * CHARS_PER_TOKEN
    total = sum(len(p) + 2 for p in parts)
    if total <= budget:
        return "\n\n".join(parts)
    head: list[str] = []
    used = 0
    for part in parts:
        if used + len(part) + 2 > budget // 4:
            break
        head.append(part)
        used += len(part) + 2
    tail: list[str] = []
    for part in reversed(parts[len(head) :]):
        if used + len(part) + 2 > budget:
            break
        tail.append(part)
        used += len(part) + 2
    tail.reverse()
    omitted = len(parts) - len(head) - len(tail)
    note = (
        f"[... {omitted} messages omitted to fit summary.maxInputTokens; the extracted facts "
        "cover them ...]"
    )
    return "\n\n".join([*head, note, *tail])


def build_prompt(
    plan: SummaryPlan, facts: Facts, limits: PromptLimits, max_tokens: int
) -> tuple[str, str]:
    """``(system, user)`` prompts that ask for this round's continuation summary."""
    previous = previous_summary(plan)
    resumes = (
        "The agent will resume from your summary plus the most recent messages, which it keeps "
        "word for word; "
        if plan.keeps
        else "The agent will resume from your summary alone (the last request is attached "
        "to it word for word), so say in Current work where the work on that request stands; "
    )
    pieces = [
        f"Write round {plan.round} of the continuation summary of an AI coding agent's session. "
        + resumes
        + "the messages in <conversation> are dropped from its context and replaced by your "
        "summary.",
        f'<extracted-facts round="{plan.round}">\n{render_facts(facts, plan.round)}\n'
        "</extracted-facts>",
    ]
    if previous is not None:
        pieces.append(
            f'<previous-summary round="{plan.round - 1}">\n{previous}\n</previous-summary>'
        )
    conversation = serialize_conversation(plan.summarized, limits, plan.people)
    pieces.append(f"<conversation>\n{conversation}\n</conversation>")
    if plan.turn_start is not None:
        request = text_of(plan.turn_start)
        pieces.append(
            "The kept messages start in the middle of a turn. The request of that turn was:\n"
            f"<current-request>\n{trim_middle(request.strip(), USER_TEXT_CHARS)}\n"
            "</current-request>"
        )
    sections = "\n".join(f"## {name}" for name in SECTIONS)
    rules = [
        "Write the summary in Markdown with exactly these sections, in this order:",
        sections,
        "",
        "Rules:",
    ]
    if previous is not None:
        rules.append(
            f"- This is round {plan.round}. Integrate the previous summary with the new "
            "conversation: keep what is still true, move finished work to what was "
            "accomplished, update the current work and next steps. Do not repeat it as a "
            "separate block."
        )
    rules += [
        "- Keep exact file paths, commands, identifiers and error messages.",
        "- The extracted facts are attached to your summary word for word (the original "
        "task, files, tool usage, errors): refer to them, do not copy them out.",
        "- Tool results above were trimmed; do not guess what was cut.",
        f"- Be concise: stay well under {max_tokens} tokens.",
    ]
    pieces.append("\n".join(rules))
    return SYSTEM_PROMPT, "\n\n".join(pieces)
