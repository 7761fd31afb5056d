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

import hashlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from gitclaw_compress.core.lines import Entry
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    EDIT,
    IMAGE,
    MESSAGE,
    META,
    READ,
    SUMMARY,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    WRITE,
    Conversation,
    EntryView,
    Message,
    Part,
    SummaryRequest,
)

USER_MESSAGE = "user.message"
ASSISTANT_MESSAGE = "assistant.message"
TOOL_START = "tool.execution_start"
TOOL_COMPLETE = "tool.execution_complete"
SKILL_INVOKED = "skill.invoked"
MODEL_CHANGE = "session.model_change"
SESSION_RESUME = "session.resume"
COMPACTION_START = "session.compaction_start"
COMPACTION_COMPLETE = "session.compaction_complete"
CONTEXT_CLEARED = "session.context_cleared"
TRUNCATION = "session.truncation"
# Events whose `tokenLimit` is the model's context window (checked with 1.0.102's
# schemas/session-events.schema.json; its usage_info events carry one too, but are never
# written to the file).
WINDOW_EVENTS = (COMPACTION_START, COMPACTION_COMPLETE, TRUNCATION)

# A user.message from a hidden skill prompt: sent, but not listed in a compaction's summary.
SKILL_SOURCE_PREFIX = "skill-"
# What the CLI sends for a failed tool without an error message, and for a tool request whose
# completion the file never recorded.
FAILED_TOOL_TEXT = "Tool execution failed"
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

# Keys of EntryView.links, private to this module.
LISTED = "listed"  # a user message's `content`, as a compaction summary lists it
SKILL_NAME, SKILL_PATH, SKILL_CONTENT = "skill.name", "skill.path", "skill.content"
SUMMARY_TEXT = "summary"  # a compaction record's summaryContent
API_CALL = "apiCallId"  # the model call an assistant message came from
PROVIDER = "providerId"  # the provider that made an assistant message (its reasoning is for it)
CLEARED = "cleared"  # a cleared context: the resume starts after it, like after a compaction


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _arguments(request: Mapping[str, Any]) -> str:
    arguments = request.get("arguments")
    return orjson.dumps({} if arguments is None else arguments).decode()


def view_event(number: int, entry: Entry, data: dict[str, Any], turn_start: bool) -> EntryView:
    """The neutral view of one Copilot CLI event (`data` is its `data` object)."""
    entry_id = entry.get("id")
    parent = entry.get("parentId")
    view = EntryView(
        number=number,
        id=entry_id if isinstance(entry_id, str) else None,
        parent=parent if isinstance(parent, str) else None,
        kind=META,
        turn_start=turn_start,
    )
    kind = entry.get("type")
    if kind == USER_MESSAGE:
        view.kind = MESSAGE
        text = _text(data.get("transformedContent")) or _text(data.get("content"))
        parts = [Part(TEXT, text), *_attached_images(data.get("attachments"))]
        view.messages = [_message(USER, parts, view)]
        if not _text(data.get("source")).startswith(SKILL_SOURCE_PREFIX):
            view.links = {LISTED: _text(data.get("content"))}
    elif kind == ASSISTANT_MESSAGE:
        view.kind = MESSAGE
        view.model = _text(data.get("model")) or None
        view.messages = [_message(ASSISTANT, list(_assistant_parts(data)), view)]
        view.links = {
            key: data[field]
            for key, field in ((API_CALL, "apiCallId"), (PROVIDER, "providerId"))
            if isinstance(data.get(field), str) and data[field]
        }
    elif kind == TOOL_COMPLETE:
        view.kind = MESSAGE
        view.messages = [_message(TOOL, [_tool_result(data)], view)]
    elif kind == COMPACTION_COMPLETE and data.get("success") is True:
        view.kind = COMPACTION
        summary = _text(data.get("summaryContent"))
        view.messages = [_message(SUMMARY, [Part(TEXT, summary)], view)]
        view.links = {SUMMARY_TEXT: summary}
    elif kind == CONTEXT_CLEARED:
        # Like a compaction without a summary: only its optional first message stays.
        view.kind = COMPACTION
        view.links = {CLEARED: "true"}
        initial = _text(data.get("initialMessage"))
        if initial:
            view.messages = [_message(USER, [Part(TEXT, initial)], view)]
            view.links = {CLEARED: "true", LISTED: initial}
    elif kind == MODEL_CHANGE:
        view.model = _text(data.get("newModel")) or None
    elif kind == SESSION_RESUME:
        view.model = _text(data.get("selectedModel")) or None
    elif kind == SKILL_INVOKED:
        view.links = {
            SKILL_NAME: _text(data.get("name")),
            SKILL_PATH: _text(data.get("path")),
            SKILL_CONTENT: _text(data.get("content")),
        }
    if kind in WINDOW_EVENTS:
        limit = data.get("tokenLimit")
        view.context_window = limit if type(limit) is int and limit > 0 else None
    return view


def _message(role: str, parts: list[Part], view: EntryView) -> Message:
    return Message(role=role, parts=parts, line=view.number, entry_id=view.id, model=view.model)


def _attached_images(attachments: object) -> Iterator[Part]:
    """Inline images a person attached: the CLI sends each one's name, then the image."""
    for attachment in attachments if isinstance(attachments, list) else ():
        if not isinstance(attachment, dict) or attachment.get("type") != "blob":
            continue
        media_type, data = _text(attachment.get("mimeType")), attachment.get("data")
        if media_type.startswith("image/") and isinstance(data, str):
            if isinstance(attachment.get("displayName"), str):
                yield Part(TEXT, attachment["displayName"])
            yield Part(IMAGE, media_type=media_type, size=len(data))


# The CLI's file tools, by what they do to their `path` (checked in Copilot CLI 1.0.102).
FILE_TOOLS = {"view": READ, "create": WRITE, "edit": EDIT}


def _assistant_parts(data: dict[str, Any]) -> Iterator[Part]:
    sealed = any(isinstance(data.get(key), str) for key in ("reasoningOpaque", "encryptedContent"))
    reasoning = _text(data.get("reasoningText"))
    if reasoning or sealed:
        yield Part(THINKING, reasoning, sealed=sealed)
    content = _text(data.get("content"))
    if content:
        yield Part(TEXT, content)
    for request in data.get("toolRequests") or ():
        if isinstance(request, dict) and isinstance(request.get("toolCallId"), str):
            name = request.get("name")
            arguments = request.get("arguments")
            effect = FILE_TOOLS.get(name) if isinstance(name, str) else None
            path = arguments.get("path") if isinstance(arguments, dict) else None
            on_file = effect is not None and isinstance(path, str) and bool(path)
            yield Part(
                TOOL_CALL,
                _arguments(request),
                name=name if isinstance(name, str) else None,
                call_id=request["toolCallId"],
                path=path if on_file else None,
                effect=effect if on_file else None,
            )


def _tool_result(data: dict[str, Any]) -> Part:
    call_id = data.get("toolCallId")
    call = call_id if isinstance(call_id, str) else None
    if data.get("success") is False:
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        text = message if isinstance(message, str) else FAILED_TOOL_TEXT
        return Part(TOOL_RESULT, text, call_id=call, error=True)
    result = data.get("result")
    text = _text(result.get("content")) if isinstance(result, dict) else ""
    return Part(TOOL_RESULT, text, call_id=call)


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


# --------------------------------------------------------------------------------------
# The compaction record
# --------------------------------------------------------------------------------------

# Why a record cannot keep a tail (checked with Copilot CLI 1.0.102; see docs/formats.md):
# the CLI sends no event from before the record, and copies of the kept events appended
# after it would break what the CLI relies on: its summary message lists every user message
# before the record, so each kept request would reach the model twice (and once more per
# chained record), and the copies would repeat toolCallId and messageId values it keeps unique.
NO_KEPT_TAIL = (
    "its summary lists every earlier user message, so no turn can be kept after it; "
    "use `--keep-turns 0`"
)
SEPARATOR_ESCAPES = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def kept_tail(conversation: Conversation, first_kept: int) -> list[Message]:
    """The messages of the conversation that come from `first_kept` on."""
    return [m for m in conversation.messages if max(m.source_lines()) >= first_kept]


def event_id(seed: bytes, taken: set[str]) -> str:
    """A new event id in the CLI's shape (UUID v4), from `seed`, not in `taken`."""
    counter = 0
    while True:
        digest = bytearray(hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()[:16])
        digest[6] = (digest[6] & 0x0F) | 0x40
        digest[8] = (digest[8] & 0x3F) | 0x80
        candidate = str(uuid.UUID(bytes=bytes(digest)))
        if candidate not in taken:
            taken.add(candidate)
            return candidate
        counter += 1


def record_lines(views: Sequence[EntryView], request: SummaryRequest) -> list[bytes]:
    """`session.compaction_start` and `session.compaction_complete`, as the CLI writes them,
    after the file's last event: the summary alone, since nothing can be kept (`NO_KEPT_TAIL`).
    """
    conversation = resume(views)
    taken = {view.id for view in views if view.id is not None}
    previous = next((view.id for view in reversed(views) if view.id is not None), None)
    seed = orjson.dumps([previous, request.summary, request.timestamp])
    start_id = event_id(seed + b"start", taken)
    complete_id = event_id(seed + b"complete", taken)
    removed = len(conversation.messages)
    events = [
        (COMPACTION_START, {}, start_id, previous),
        (
            COMPACTION_COMPLETE,
            {
                "success": True,
                "summaryContent": request.summary,
                "preCompactionTokens": request.tokens_before,
                "preCompactionMessagesLength": removed,
                "messagesRemoved": removed,
            },
            complete_id,
            start_id,
        ),
    ]
    lines = []
    for kind, data, new_id, parent in events:
        record = {
            "type": kind,
            "data": data,
            "id": new_id,
            "timestamp": request.timestamp,
            "parentId": parent,
        }
        line = orjson.dumps(record)
        for raw, escaped in SEPARATOR_ESCAPES:
            line = line.replace(raw, escaped)
        lines.append(line)
    return lines
