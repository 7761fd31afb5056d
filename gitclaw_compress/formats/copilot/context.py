"""What Copilot CLI sends its model when it resumes an events.jsonl (checked with 1.0.102).

The resume replays the events in file order (not the `parentId` chain: many of those point at
ids the file does not hold). Into the chat-completions request go:
- `user.message`: its `transformedContent` (the text with the CLI's wrapping), else `content`;
  injected prompts (`source` "skill-…", "agent-…") too;
  an attached inline image (`attachments[]` of type "blob") follows as its name and the image;
- `assistant.message`: `content` and the `toolRequests[]` as tool calls (missing arguments
  become `{}`); an empty one is sent as an empty assistant message; messages in a row from
  one model call (the same `apiCallId`, no tool result between) are sent as one. Reasoning
  (`reasoningOpaque`, `reasoningText`, `encryptedContent`) is session-bound: the CLI replays it
  only to the provider named in `providerId` (never in bring-your-own-key mode), so `resume`
  keeps it only where that is recorded;
- right after each assistant message, one tool message per tool request, in request order,
  whatever the order of the `tool.execution_complete` events: `result.content` on success
  (`detailedContent` and `contents[]` only feed the timeline), `error.message` on failure (or
  "Tool execution failed"), and for a request without a completion the CLI's own
  "interrupted" text. A completion whose call was never requested is dropped.
Nothing else reaches the model: `skill.invoked`, `system.message`, `session.*` events and
`tool.execution_start` are bookkeeping (`session.snapshot_rewind` and `session.truncation`
too: the resume still sends what they name). The model is the newest `session.model_change`
`newModel` (or `session.resume` `selectedModel`).

The newest successful `session.compaction_complete` is where the resume starts: the CLI sends
one user message that it builds from every person's and agent's message before the record (by
`content`, without the wrapping), the record's `summaryContent`, and the newest skill invoked
before it; then the events after the record. A `session.context_cleared` starts it too, with
its `initialMessage` (if any) as the first user message; it also empties the list of user
messages and the skill a later summary names. Copilot CLI persists no usage of its own
(`assistant.usage` is ephemeral), so the view records none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from gitclaw_compress.formats.copilot.view import (
    API_CALL,
    CLEARED,
    LISTED,
    PROVIDER,
    SKILL_CONTENT,
    SKILL_NAME,
    SKILL_PATH,
    SUMMARY_TEXT,
)
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    META,
    SUMMARY,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    Conversation,
    EntryView,
    Message,
    Part,
)

# What the CLI sends for a tool request whose completion the file never recorded.
INTERRUPTED_TOOL_TEXT = "The execution of this tool, or a previous tool was interrupted."

# The user message Copilot CLI builds from a compaction record, piece by piece.
SUMMARY_HEAD = "Some of the conversation history has been summarized to free up context.\n\n"
SUMMARY_USERS = (
    "You were originally given instructions from a user over one or more turns. "
    "Here were the user messages:\n"
)
SUMMARY_BODY = "Here is a summary of the prior context:\n<summary>\n{summary}\n</summary>\n"
SUMMARY_SKILL = (
    "\n\n<invoked_skills>\n## Most recent skill: {name}\nPath: {path}\n\n"
    "Continue to follow these instructions:\n\n{content}\n</invoked_skills>"
)


def newest_compaction(views: Sequence[EntryView]) -> int | None:
    """The index in `views` of the record the resume starts from, if any."""
    for index in range(len(views) - 1, -1, -1):
        if views[index].kind == COMPACTION:
            return index
    return None


def summary_message(views: Sequence[EntryView], record: int) -> str:
    """The user message Copilot CLI sends for the compaction record at `views[record]`."""
    listed: list[str] = []
    skill: Mapping[str, str] = {}
    for view in views[:record]:
        if CLEARED in view.links:  # a cleared context forgets both
            listed, skill = [], {}
        if LISTED in view.links:
            listed.append(view.links[LISTED])
        if SKILL_CONTENT in view.links:
            skill = view.links
    text = SUMMARY_HEAD
    if listed:
        text += SUMMARY_USERS
        text += "".join(f"<user_message>\n{content}\n</user_message>\n" for content in listed)
        text += "\n"
    text += SUMMARY_BODY.format(summary=views[record].links.get(SUMMARY_TEXT, ""))
    if skill:
        text += SUMMARY_SKILL.format(
            name=skill[SKILL_NAME], path=skill[SKILL_PATH], content=skill[SKILL_CONTENT]
        )
    return text


def resume(views: Sequence[EntryView]) -> Conversation:
    """The messages Copilot CLI sends when it resumes these views, in order.

    Without its own system prompt (first) and the new prompt (last), which it adds itself.
    """
    model = None
    window = None  # the newest recorded for the model selected now
    for view in views:
        if view.kind == META and view.model and view.model != model:
            # a selection (an assistant message only reports its own model): another model's
            # window no longer holds
            model, window = view.model, None
        window = view.context_window or window
    record = newest_compaction(views)
    start = 0 if record is None else record + 1
    messages: list[Message] = []
    if record is not None and CLEARED in views[record].links:
        messages.extend(views[record].messages)
    elif record is not None:
        view = views[record]
        text = summary_message(views, record)
        messages.append(Message(SUMMARY, [Part(TEXT, text)], view.number, entry_id=view.id))
    live = views[start:]
    results = _results_by_call(live)
    for message in _merged_chunks(live):
        messages.append(message)
        if message.role == ASSISTANT:
            messages.extend(_answers(message, message.line, results))
    path = [view.number for view in views[0 if record is None else record :]]
    compaction = None if record is None else views[record].number
    return Conversation(
        messages=messages, path=path, compaction=compaction, model=model, context_window=window
    )


def _merged_chunks(views: Sequence[EntryView]) -> Iterator[Message]:
    """User and assistant messages in order; assistant messages in a row from one model call
    (the same `apiCallId`, with no tool result between) become one, as the CLI sends them."""
    pending: Message | None = None
    pending_call: str | None = None
    for view in views:
        for sent in view.messages:
            message = _as_resumed(sent, view.links)
            call = view.links.get(API_CALL) if message.role == ASSISTANT else None
            if call is not None and call == pending_call and pending is not None:
                pending = Message(
                    ASSISTANT,
                    [*pending.parts, *message.parts],
                    pending.line,
                    entry_id=pending.entry_id,
                    model=pending.model or message.model,
                    lines=(*pending.source_lines(), message.line),
                )
                continue
            if pending is not None:
                yield pending
            # a tool result is placed after its call later, but it still ends a run of chunks
            pending = None if message.role == TOOL else message
            pending_call = call
    if pending is not None:
        yield pending


def _as_resumed(message: Message, links: Mapping[str, str]) -> Message:
    """A message as the resume sends it: reasoning only where the provider that made it is
    recorded (the CLI replays it to that provider alone; older files never record one)."""
    if message.role != ASSISTANT or PROVIDER in links:
        return message
    parts = [part for part in message.parts if part.kind != THINKING]
    return message if len(parts) == len(message.parts) else replace(message, parts=parts)


def _results_by_call(views: Sequence[EntryView]) -> dict[str, list[Message]]:
    """Tool messages by call id, oldest first (a call id may answer more than one request)."""
    results: dict[str, list[Message]] = {}
    for view in views:
        for message in view.messages:
            if message.role == TOOL and message.parts and message.parts[0].call_id:
                results.setdefault(message.parts[0].call_id, []).append(message)
    return results


def _answers(call: Message, line: int, results: dict[str, list[Message]]) -> Iterator[Message]:
    """The tool messages the CLI puts right after an assistant message: one per tool call."""
    for part in call.parts:
        if part.kind != TOOL_CALL or part.call_id is None:
            continue
        found = [m for m in results.get(part.call_id, ()) if m.line > line]
        if found:
            answer = found[0]
            results[part.call_id].remove(answer)
            result = answer.parts[0]
            named = Part(
                TOOL_RESULT, result.text, name=part.name, call_id=part.call_id, error=result.error
            )
            yield Message(TOOL, [named], answer.line, entry_id=answer.entry_id)
        else:
            interrupted = Part(
                TOOL_RESULT, INTERRUPTED_TOOL_TEXT, name=part.name, call_id=part.call_id, error=True
            )
            yield Message(TOOL, [interrupted], line, entry_id=call.entry_id)
