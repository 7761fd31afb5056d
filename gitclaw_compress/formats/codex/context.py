"""What Codex CLI sends its model when it resumes a rollout (each line's view is `view.py`).

Codex (checked with 0.169.0 and 0.171.0) sends the Responses API an `input` array. On resume
it is built from the rollout alone: `session_meta.base_instructions` as the first developer
item, then the `response_item` payloads in file order, each one input item, with three
rewrites:

- a `compacted` line replaces everything before it with its `replacement_history`, items as
  recorded (a sealed `compaction` item stays that item), or, when it has none, with the
  earlier real user messages and its `message` as a user message after the summary prefix;
- `event_msg` `thread_rolled_back` drops the newest `num_turns` user turns, with the
  contextual messages written just before each dropped prompt;
- calls without an output get an "aborted" output right after them; outputs without a call
  are dropped. `system` messages and item types Codex does not know are never sent.

Every other line (`event_msg`, `turn_context`, Codex's own bookkeeping) is for its UI.
So one `Message` is one input item; the items of a `compacted` line share its `line`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitclaw_compress.core import stubs
from gitclaw_compress.formats.codex.view import (
    LINE_TYPE,
    OUTPUT_BUDGET,
    REPLACES,
    ROLLBACK,
    SUMMARY_PREFIX,
)
from gitclaw_compress.model import (
    COMPACTION,
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
    Part,
)

ABORTED_OUTPUT = "aborted"  # what Codex sends for a call whose output it never recorded
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
# Messages Codex injects as context, not typed by a person: a rollback trims them with the
# prompt they precede, and they never start a turn.
CONTEXT_USER_PREFIXES = (
    "# agents.md instructions",
    "<user_instructions>",
    "<environment_context>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<hook_prompt",
)
CONTEXT_DEVELOPER_PREFIXES = (
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<multi_agent_mode>",
    "<environments_instructions>",
    "<plugins_instructions>",
    "<skills_instructions>",
    "<personality_spec>",
    "<token_budget>",
    "<context_window>",
    "<context_window_guidance>",
    "<rollout_budget>",
    "<realtime_conversation>",
)

# Codex cuts a long tool output in its middle when it records it for the model: to its
# truncation policy (turn_context `truncation_policy`; its models' default is 10,000 tokens)
# plus 20%, at 4 bytes a token.
DEFAULT_OUTPUT_BUDGET = 10_000 * 4 * 12 // 10


def is_context(message: Message) -> bool:
    """Context Codex injected (AGENTS.md, environment, permissions, …), not a person's words."""
    prefixes: tuple[str, ...]
    if message.role == USER:
        prefixes = CONTEXT_USER_PREFIXES
    elif message.role == SYSTEM:
        prefixes = CONTEXT_DEVELOPER_PREFIXES
    else:
        return False
    return any(
        part.kind == TEXT and part.text.lstrip().lower().startswith(prefixes)
        for part in message.parts
    )


def is_user_turn(message: Message) -> bool:
    """A user message that opens a turn in the history Codex rebuilds (rollbacks count these)."""
    return message.role in (USER, SUMMARY) and bool(message.parts) and not is_context(message)


def truncated(text: str, budget: int) -> str:
    """`text` cut in its middle to about `budget` bytes, as Codex sends a long output."""
    size = len(text.encode())
    if size <= budget:
        return text
    ratio = budget / size
    head = text[: int(len(text) * ratio / 2)]
    tail = text[len(text) - int(len(text) * ratio / 2) :]
    cut = (size - budget + 3) // 4
    return f"{head}…{cut} tokens truncated…{tail}"


def call_ids(message: Message, kind: str) -> list[str]:
    return [part.call_id for part in message.parts if part.kind == kind and part.call_id]


@dataclass(slots=True)
class Sent:
    """One input item of the rebuilt history: its message, and the response item it is sent
    as where the caller asked for them (a summary record copies those verbatim)."""

    message: Message
    item: dict[str, Any] | None = None


def _drop_user_turns(history: list[Sent], turns: int) -> list[Sent]:
    """Codex's rollback: cut at the newest `turns` user turns, and the context just above."""
    starts = [index for index, sent in enumerate(history) if is_user_turn(sent.message)]
    if turns <= 0 or not starts:
        return history
    cut = starts[0] if turns >= len(starts) else starts[-turns]
    while cut > starts[0] and is_context(history[cut - 1].message):
        cut -= 1
    return history[:cut]


def user_item(text: str) -> dict[str, Any]:
    """A user message as Codex writes it in a replacement history."""
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _rebuilt_after_summary(history: list[Sent], summary: list[Message]) -> list[Sent]:
    """A `compacted` line without replacement history: the newest real user messages (up to
    Codex's budget, bytes / 4 per token) and then the summary."""
    kept: list[Sent] = []
    budget = COMPACT_USER_MESSAGE_MAX_TOKENS
    for sent in reversed(history):
        message = sent.message
        if message.role not in (USER, SUMMARY) or is_context(message) or budget <= 0:
            continue
        text = "\n".join(part.text for part in message.parts if part.kind == TEXT and part.text)
        if not text or text.startswith(SUMMARY_PREFIX + "\n"):
            continue
        tokens = (len(text.encode()) + 3) // 4
        if tokens > budget:
            text = stubs.first_last(text, budget * 4)
        kept.append(Sent(Message(USER, [Part(TEXT, text)], message.line), user_item(text)))
        budget -= tokens
    rebuilt = [Sent(m, user_item("\n".join(texts_of(m)))) for m in summary]
    return [*reversed(kept), *rebuilt]


def texts_of(message: Message) -> list[str]:
    return [part.text for part in message.parts if part.kind == TEXT]


def _paired(history: list[Sent]) -> list[Sent]:
    """Every call gets an output (an "aborted" one right after it); orphan outputs go."""
    called = {call for sent in history for call in call_ids(sent.message, TOOL_CALL)}
    answered = {call for sent in history for call in call_ids(sent.message, TOOL_RESULT)}
    paired: list[Sent] = []
    for sent in history:
        message = sent.message
        results = call_ids(message, TOOL_RESULT)
        if message.role == TOOL and results and not set(results) & called:
            continue
        paired.append(sent)
        for call in call_ids(message, TOOL_CALL):
            if call not in answered:
                name = next(p.name for p in message.parts if p.call_id == call)
                aborted = Part(TOOL_RESULT, ABORTED_OUTPUT, name=name, call_id=call)
                paired.append(Sent(Message(TOOL, [aborted], message.line)))
    return paired


@dataclass(slots=True)
class Replay:
    instructions: list[Message]
    history: list[Sent]  # before Codex pairs calls and outputs
    compaction: int | None
    model: str | None
    output_budget: int = DEFAULT_OUTPUT_BUDGET
    context_window: int | None = None  # the newest one recorded


# For each line, the response items its view's messages are sent as, in order.
ItemsByLine = Mapping[int, Sequence[dict[str, Any]]]


def replay(views: Sequence[EntryView], items: ItemsByLine | None = None) -> Replay:
    """Codex's resume walk over the lines, oldest first."""
    instructions: list[Message] = []
    history: list[Sent] = []
    compaction: int | None = None
    model: str | None = None
    budget = DEFAULT_OUTPUT_BUDGET
    window: int | None = None
    # The model of each user turn, to find the newest one a rollback leaves.
    turn_models: list[str | None] = []

    def sent(view: EntryView) -> list[Sent]:
        sources = items.get(view.number, ()) if items is not None else ()
        return [
            Sent(message, sources[index] if index < len(sources) else None)
            for index, message in enumerate(view.messages)
        ]

    for view in views:
        line_type = view.links.get(LINE_TYPE)
        if line_type == "session_meta" and not instructions:
            instructions = list(view.messages)
        elif line_type == "response_item":
            history.extend(sent(view))
        elif view.kind == COMPACTION:
            compaction = view.number
            if view.links.get(REPLACES) == "history":
                history = sent(view)
            else:
                history = _rebuilt_after_summary(history, list(view.messages))
        elif ROLLBACK in view.links:
            turns = int(view.links[ROLLBACK])
            history = _drop_user_turns(history, turns)
            del turn_models[max(len(turn_models) - turns, 0) :]
        elif view.model is not None:
            model = view.model
        if OUTPUT_BUDGET in view.links:
            budget = int(view.links[OUTPUT_BUDGET])
        window = view.context_window or window
        if view.turn_start:
            turn_models.append(model)
    newest = next((m for m in reversed(turn_models) if m), None) or model
    return Replay(instructions, history, compaction, newest, budget, window)


def _cut_outputs(message: Message, budget: int) -> Message:
    """The message with its long tool outputs cut as Codex sends them (a copy: the views
    keep what the line holds)."""
    if not any(p.kind == TOOL_RESULT and len(p.text.encode()) > budget for p in message.parts):
        return message
    parts = [
        dataclasses.replace(part, text=truncated(part.text, budget))
        if part.kind == TOOL_RESULT
        else part
        for part in message.parts
    ]
    return dataclasses.replace(message, parts=parts)


def rebuild(views: Sequence[EntryView]) -> Conversation:
    """The input items Codex sends when it resumes these lines, before its own new turn."""
    walk = replay(views)
    messages = [*walk.instructions, *(sent.message for sent in _paired(walk.history))]
    messages = [_cut_outputs(message, walk.output_budget) for message in messages]
    path = sorted({line for message in messages for line in message.source_lines()})
    return Conversation(
        messages=messages,
        path=path,
        compaction=walk.compaction,
        model=walk.model,
        context_window=walk.context_window,
    )
