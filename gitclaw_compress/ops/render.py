"""Readable text of one original entry, for `show`: what an agent pulls back with its bash tool."""

from __future__ import annotations

from typing import Any

import orjson

from gitclaw_compress.core.lines import Entry
from gitclaw_compress.core.stubs import image_size
from gitclaw_compress.formats.pi import message_of


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _content(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind == "image":
            size = image_size(block.get("data"))
            out.append(f"[image {block.get('mimeType', '?')}, {size:,} bytes; --raw prints it]")
        elif kind == "thinking":
            out.append(f"[thinking]\n{block.get('thinking', '')}")
        elif kind == "toolCall":
            out.append(_tool_call(block))
        else:
            out.append(_json(block))
    return out


def _tool_call(block: dict[str, Any]) -> str:
    lines = [f"[toolCall {block.get('name')} id={block.get('id')}]"]
    arguments = block.get("arguments")
    if not isinstance(arguments, dict):
        return "\n".join([*lines, _json(arguments)])
    for key, value in arguments.items():
        if isinstance(value, str) and ("\n" in value or len(value) > 100):
            lines.append(f"--- {key} ---\n{value}")
        else:
            lines.append(f"{key}: {orjson.dumps(value).decode()}")
    return "\n".join(lines)


def render_entry(entry: Entry) -> str:
    message = message_of(entry)
    if message is None:
        return _json(entry)
    role = message.get("role")
    parts: list[str] = []
    if role == "toolResult":
        status = " (error)" if message.get("isError") else ""
        parts.append(f"[toolResult {message.get('toolName')}{status}]")
        parts.extend(_content(message.get("content")))
        if message.get("details"):
            parts.append("--- details ---\n" + _json(message["details"]))
    elif role == "bashExecution":
        parts.append(f"$ {message.get('command')}\n{message.get('output', '')}")
    else:
        parts.append(f"[{role}]")
        parts.extend(_content(message.get("content")))
    return "\n".join(parts)
