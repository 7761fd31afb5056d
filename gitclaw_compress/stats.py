"""Where the bytes of a session are, by kind (the table in the pi session-format notes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from gitclaw_compress.session import MARKER_KEY, RawLine, message_of, parse_entry
from gitclaw_compress.stubs import STUB_PREFIX

KINDS = (
    "toolResult text",
    "toolResult images",
    "toolResult details",
    "toolCall arguments",
    "toolCall partialJson",
    "thinking text",
    "thinking signatures",
    "user text",
    "user images",
    "assistant text",
    "stubs",
    "markers",
    "metadata and other",
)


def _size(value: object) -> int:
    return 0 if value is None else len(orjson.dumps(value))


def _is_stub(value: object) -> bool:
    return isinstance(value, str) and value.startswith(STUB_PREFIX)


def _blocks(kinds: dict[str, int], role: str, content: object) -> None:
    if isinstance(content, str):
        kinds["user text" if role == "user" else "assistant text"] += _size(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if _is_stub(text):
                kinds["stubs"] += _size(text)
            elif role == "toolResult":
                kinds["toolResult text"] += _size(text)
            elif role == "user":
                kinds["user text"] += _size(text)
            else:
                kinds["assistant text"] += _size(text)
        elif kind == "image":
            target = "user images" if role == "user" else "toolResult images"
            kinds[target] += _size(block.get("data"))
        elif kind == "thinking":
            kinds["thinking text"] += _size(block.get("thinking"))
            kinds["thinking signatures"] += _size(block.get("thinkingSignature"))
        elif kind == "toolCall":
            arguments = block.get("arguments", {})
            stub_bytes = (
                sum(_size(value) for value in arguments.values() if _is_stub(value))
                if isinstance(arguments, dict)
                else 0
            )
            kinds["stubs"] += stub_bytes
            kinds["toolCall arguments"] += _size(arguments) - stub_bytes
            kinds["toolCall partialJson"] += _size(block.get("partialJson"))


def bytes_by_kind(lines: Iterable[RawLine]) -> dict[str, int]:
    kinds = dict.fromkeys(KINDS, 0)
    total = 0
    for line in lines:
        size = len(line.encode())
        total += size
        entry = parse_entry(line.data)
        if entry is None:
            continue
        if MARKER_KEY in entry:
            kinds["markers"] += _size(entry[MARKER_KEY]) + len(MARKER_KEY) + 4
        message = message_of(entry)
        if message is None:
            continue
        role = str(message.get("role"))
        _blocks(kinds, role, message.get("content"))
        details: Any = message.get("details")
        if details is not None:
            if isinstance(details, dict) and _is_stub(details.get("text")):
                kinds["stubs"] += _size(details)
            else:
                kinds["toolResult details"] += _size(details)
        if role == "bashExecution":
            kinds["toolResult text"] += _size(message.get("output"))
    kinds["metadata and other"] = max(total - sum(kinds.values()), 0)
    return kinds
