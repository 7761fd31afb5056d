"""Messages as text for people: `show` prints a whole entry, `context` a one-line preview.

One renderer for every format: it reads the neutral view (`model.Message`) a format gives of
its line. A line that gives the model nothing (a header, a model change) prints as its JSON,
and so does every line of a format that cannot read its conversation yet.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from gitclaw_compress.core.lines import Entry
from gitclaw_compress.formats.base import Format, Unsupported
from gitclaw_compress.model import (
    IMAGE,
    SUMMARY,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    Message,
)

LONG_ARGUMENT_CHARS = 100  # a longer (or multi-line) argument prints under its own heading


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _tool_call(name: str | None, call_id: str | None, arguments_json: str) -> str:
    lines = [f"[tool call {name} id={call_id}]"]
    try:
        arguments = orjson.loads(arguments_json)
    except orjson.JSONDecodeError:
        return "\n".join([*lines, arguments_json])
    if not isinstance(arguments, dict):
        return "\n".join([*lines, _json(arguments)])
    for key, value in arguments.items():
        if isinstance(value, str) and ("\n" in value or len(value) > LONG_ARGUMENT_CHARS):
            lines.append(f"--- {key} ---\n{value}")
        else:
            lines.append(f"{key}: {orjson.dumps(value).decode()}")
    return "\n".join(lines)


def render_message(message: Message, tools: Mapping[str, str] | None = None) -> str:
    """A whole message: its role, then each part in full (images by type and size); a tool
    result named by its call's tool from `tools` (call id -> tool) when it names none."""
    label = message.label or message.role
    out = [f"[{label}]" if label == message.role else f"[{message.role}: {label}]"]
    if message.failed:
        out.append(f"[request failed: {message.error or 'error'}]")
    for part in message.parts:
        if part.kind == IMAGE:
            out.append(f"[image {part.media_type or '?'}, {part.size:,} bytes; --raw prints it]")
        elif part.kind == THINKING:
            out.append(f"[thinking{', sealed' if part.sealed else ''}]\n{part.text}")
        elif part.kind == TOOL_CALL:
            out.append(_tool_call(part.name, part.call_id, part.text))
        elif part.kind == TOOL_RESULT:
            status = " (error)" if part.error else ""
            name = part.name or (tools or {}).get(part.call_id or "") or "tool"
            out.append(f"[tool result {name}{status} id={part.call_id}]\n{part.text}")
        else:
            out.append(part.text)
    return "\n".join(out)


def render_line(
    fmt: Format, number: int, entry: Entry, tools: Mapping[str, str] | None = None
) -> str:
    """The text of one line for `show`: its messages, or its JSON when it gives none.
    `tools` (call id -> tool, see `model.call_names`) names the tool of a result."""
    try:
        view = fmt.view(number, entry)
    except Unsupported:
        return _json(entry)
    if not view.messages:
        return _json(entry)
    parts = [render_message(message, tools) for message in view.messages]
    parts.extend(
        f"--- {name} (shown only in the UI) ---\n{_json(value)}" for name, value in view.ui.items()
    )
    return "\n\n".join(parts)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def preview(message: Message, limit: int = 80) -> str:
    """A short one-line preview of a message, for listings."""
    pieces: list[str] = []
    tool = None
    for part in message.parts:
        if part.kind == TOOL_CALL:
            pieces.append(f"[{part.name or 'tool'}]")
        elif part.kind == IMAGE:
            pieces.append("[image]")
        elif part.kind == THINKING:
            if part.text.strip() and message.role != SUMMARY:
                pieces.append("[thinking]")
        elif part.text.strip():
            pieces.append(part.text)
        if part.kind == TOOL_RESULT:
            tool = part.name or "tool"
    text = " ".join(pieces)
    if message.role == TOOL and tool is not None:
        text = f"{tool}: {text}"
    return _one_line(text, limit)
