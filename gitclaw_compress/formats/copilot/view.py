"""Copilot CLI's events in neutral terms (`Format.view`, checked with 1.0.102): the message
each event gives the model when the CLI resumes (a `user.message` with its attached images, an
`assistant.message` with its reasoning and tool requests, a `tool.execution_complete`'s result
or error), the compaction records and cleared contexts a resume starts from, the model and
context window that session events name, and the private links `context.py` reads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
    EntryView,
    Message,
    Part,
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
# What the CLI sends for a failed tool without an error message.
FAILED_TOOL_TEXT = "Tool execution failed"

# Keys of EntryView.links, private to this package: view.py writes them, context.py reads them.
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
