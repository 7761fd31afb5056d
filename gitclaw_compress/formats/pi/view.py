"""pi's entries in neutral terms (`Format.view`): the message each entry gives the model when
pi sends it (as pi 0.73.1's `buildSessionContext` makes it and `convertToLlm` converts it), the
link its resume follows (`firstKeptEntryId`), and what only pi's UI reads (`details`). pi skips
line 1 (the header) and reads invalid UTF-8 with replacement characters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.core.stubs import image_size
from gitclaw_compress.formats.shared.rules import FILE_ARGUMENTS, content_text
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
from gitclaw_compress.preserved_thinking import binds_prefix

# pi's message roles and the neutral role each has once convertToLlm has turned it into a
# provider message. Any other role is dropped by convertToLlm.
ROLES = {
    "user": USER,
    "assistant": ASSISTANT,
    "toolResult": TOOL,
    "bashExecution": USER,
    "custom": USER,
    "branchSummary": SUMMARY,
    "compactionSummary": SUMMARY,
}


# pi's built-in file tools, and the arguments that name their file.
FILE_TOOLS = {"read": READ, "write": WRITE, "edit": EDIT}


DROPPED_STOPS = frozenset({"error", "aborted"})  # providers never send these replies


FIRST_KEPT = "firstKeptEntryId"  # the link of a compaction view that `resume` follows


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _json_text(value: Any) -> str:
    """Compact JSON, as JavaScript's JSON.stringify writes it (no spaces, raw UTF-8)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # integers beyond 64 bits, nesting deeper than orjson writes
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _path_argument(arguments: object) -> str | None:
    if isinstance(arguments, dict):
        for key in FILE_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


# The APIs that speak Anthropic's Messages protocol, where a thinking signature may bind the
# block to everything sent before it (preserved thinking: `binds_prefix`).
ANTHROPIC_APIS = frozenset({"anthropic-messages", "bedrock-converse-stream"})


def _image(block: Mapping[str, Any]) -> Part:
    return Part(IMAGE, media_type=_text(block.get("mimeType")), size=image_size(block.get("data")))


def _content_parts(content: object) -> list[Part]:
    """Neutral parts of a message's content: a string, or text/thinking/toolCall/image blocks."""
    if isinstance(content, str):
        return [Part(TEXT, content)]
    parts: list[Part] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(Part(TEXT, block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            signed = bool(block.get("thinkingSignature")) or bool(block.get("redacted"))
            parts.append(Part(THINKING, block["thinking"], sealed=signed))
        elif kind == "toolCall":
            name, arguments = _text(block.get("name")), block.get("arguments", {})
            effect = FILE_TOOLS.get(name or "")
            path = _path_argument(arguments) if effect is not None else None
            parts.append(
                Part(
                    TOOL_CALL,
                    _json_text(arguments),
                    name=name,
                    call_id=_text(block.get("id")),
                    path=path,
                    effect=effect if path is not None else None,
                )
            )
        elif kind == "image":
            parts.append(_image(block))
    return parts


def _tool_result_parts(message: Mapping[str, Any]) -> list[Part]:
    """One TOOL_RESULT part (its text blocks joined) and the result's images.

    pi writes `isError` (true or false) and block content when the tool finished; a result
    without them is one it never completed (`Part.complete` False)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    complete = isinstance(message.get("isError"), bool) and isinstance(content, list)
    result = Part(
        TOOL_RESULT,
        content_text(content),
        name=_text(message.get("toolName")) or "",
        call_id=_text(message.get("toolCallId")),
        error=message.get("isError") is True,
        complete=complete,
    )
    images = [_image(b) for b in blocks if isinstance(b, dict) and b.get("type") == "image"]
    return [result, *images]


def usage_context_tokens(message: Mapping[str, Any]) -> int | None:
    """The context size a provider reported with an assistant message, or None.

    pi's ``calculateContextTokens``: ``usage.totalTokens``, or when that is missing or zero,
    ``input + output + cacheRead + cacheWrite``. None when the message is not an assistant
    message, its stopReason is error or aborted (pi ignores their usage), it has no usage, or
    the usage adds up to zero (some providers record none).
    """
    if message.get("role") != "assistant":
        return None
    if message.get("stopReason") in DROPPED_STOPS:
        return None
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return None
    total = _non_negative_int(usage.get("totalTokens"))
    if total:
        return total
    summed = sum(
        _non_negative_int(usage.get(key)) for key in ("input", "output", "cacheRead", "cacheWrite")
    )
    return summed or None


def _non_negative_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def pi_message(entry: Entry) -> dict[str, Any] | None:
    """The pi message an entry yields when it is on the path (as buildSessionContext makes it).

    ``message`` entries give their message; ``custom_message`` a ``custom`` message;
    ``branch_summary`` (with a summary) a ``branchSummary``; ``compaction`` a
    ``compactionSummary``. Any other entry gives none.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        return {"role": "custom", "content": entry.get("content")}
    if kind == "branch_summary":
        summary = entry.get("summary")
        return {"role": "branchSummary", "summary": summary} if summary else None
    if kind == "compaction":
        return {"role": "compactionSummary", "summary": entry.get("summary")}
    return None


def neutral_message(message: Mapping[str, Any], number: int, entry_id: str | None) -> Message:
    """A pi message (see `pi_message`) as the neutral message its line gives the model."""
    role = str(message.get("role"))
    if role == "toolResult":
        parts = _tool_result_parts(message)
    elif role == "bashExecution":
        parts = [
            Part(TEXT, value)
            for value in (message.get("command"), message.get("output"))
            if isinstance(value, str)
        ]
    elif role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        parts = [Part(TEXT, summary)] if isinstance(summary, str) else []
    else:
        parts = _content_parts(message.get("content"))
    neutral = Message(ROLES[role], parts, number, entry_id, label=role)
    if role == "assistant":
        neutral.usage = usage_context_tokens(message)
        neutral.model = _text(message.get("model"))
        neutral.sent = message.get("stopReason") not in DROPPED_STOPS
        if message.get("api") in ANTHROPIC_APIS and binds_prefix(neutral.model):
            for part in parts:
                part.bound = part.kind == THINKING and part.sealed and part.text != ""
        if message.get("stopReason") == "error":
            neutral.failed = True
            neutral.error = _text(message.get("errorMessage")) or "error"
    return neutral


def view(number: int, entry: Entry) -> EntryView:
    """pi's entry on line `number` in neutral terms."""
    kind = entry.get("type")
    entry_id = _text(entry.get("id"))
    parent = _text(entry.get("parentId"))
    if kind == "model_change":
        return EntryView(number, entry_id, parent, META, model=_text(entry.get("modelId")))
    message = pi_message(entry)
    role = message.get("role") if message is not None else None
    if message is None or role not in ROLES:
        return EntryView(number, entry_id, parent, MESSAGE if kind == "message" else META)
    if kind == "compaction":
        first_kept = _text(entry.get(FIRST_KEPT))
        return EntryView(
            number,
            entry_id,
            parent,
            COMPACTION,
            [neutral_message(message, number, entry_id)],
            links={FIRST_KEPT: first_kept} if first_kept is not None else {},
        )
    if role == "bashExecution" and message.get("excludeFromContext"):
        return EntryView(number, entry_id, parent, MESSAGE)  # the `!!` prefix: never sent
    neutral = neutral_message(message, number, entry_id)
    details = message.get("details")  # what pi's UI shows of a tool result: never sent
    return EntryView(
        number,
        entry_id,
        parent,
        MESSAGE,
        [neutral],
        model=neutral.model,
        turn_start=role == "user",
        ui={"details": details} if details else {},
    )


def parse_like_pi(data: bytes) -> Entry | None:
    """The entry on a line as pi reads it: pi decodes the file as UTF-8 with replacement
    characters, so a line with invalid UTF-8 inside a string still loads there."""
    entry = parse_entry(data)
    if entry is not None or not data.strip():
        return entry
    try:
        value = orjson.loads(data.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def iter_entries(lines: Iterable[RawLine]) -> Iterator[tuple[RawLine, Entry]]:
    """Every entry pi would load, with its line: line 1 (the header) and bad lines skipped."""
    for line in lines:
        if line.number == 1:
            continue
        entry = parse_like_pi(line.data)
        if entry is not None and entry.get("type") != "session":
            yield line, entry


def views(lines: Iterable[RawLine]) -> Iterator[EntryView]:
    for line, entry in iter_entries(lines):
        yield view(line.number, entry)
