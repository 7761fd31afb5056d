"""What the agents' rules (and views) share about the JSON values of a transcript: their size,
their text, which tool arguments name a place, a tool call in a few words, and the stubs deep
puts on a line its agent never sends again."""

from __future__ import annotations

from gitclaw_compress.core import jsonpieces, stubs
from gitclaw_compress.core.format import Edit
from gitclaw_compress.core.jsonspan import JsonPath

# Tool arguments that name a place rather than hold content: never stubbed.
PATH_ARGUMENTS = frozenset({"path", "file_path", "filePath", "offset", "limit", "timeout"})
SMALL_ARGUMENT_BYTES = 160  # argument values up to this size are always kept
# Arguments that name a call's file, and those that say most about a call, in order.
FILE_ARGUMENTS = ("path", "file_path", "filePath")
DESCRIPTOR_ARGUMENTS = (*FILE_ARGUMENTS, "url", "pattern", "query", "command")


def json_size(value: object) -> int:
    """Bytes of a value as compact JSON: how sizes compare with the byte settings (a value
    holding a tool output of many MB is measured in pieces, not written out whole)."""
    return jsonpieces.json_size(value)


def json_size_if_present(value: object) -> int:
    """`json_size`, and 0 for a key that is absent (None), for `measure`."""
    return 0 if value is None else json_size(value)


def content_text(content: object) -> str:
    """The text of a message content: the string, or its text blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def call_descriptor(name: str, arguments: object) -> str:
    """A tool call in a few words, for the stub of its result: "read 'src/app.ts'"."""
    if isinstance(arguments, dict):
        for key in DESCRIPTOR_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                first = value.strip().split("\n", 1)[0]
                return f"{name} {stubs.cut(first, 80)!r}"
    return name


SUPERSEDED_MIN_BYTES = 160  # deep: shorter strings on a superseded line stay
# Deep, `short`: a stub of a line no CLI reads is about 40 bytes; ids (Claude Code's are 36
# bytes or less, and the keys that hold them are kept anyway) and short values stay.
UNREAD_MIN_BYTES = 64
# Deep, on a line its agent never sends again: objects of these types stay whole (a
# thinking block is never edited; signed or encrypted reasoning is the provider's).
WHOLE_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning", "compaction"})


def superseded_edits(
    value: object,
    path: JsonPath,
    show: str,
    keep_keys: frozenset[str] = frozenset(),
    *,
    short: bool = False,
) -> list[Edit]:
    """Deep: on a line before the agent's newest compaction record that its resume never
    sends, every string longer than `SUPERSEDED_MIN_BYTES` becomes a stub (still a string),
    except under `keep_keys` and inside objects whose `type` is in `WHOLE_TYPES`. Types,
    ids, links and flags are short, so they stay; so does every object and array shape.
    `short` (a format whose lines there are read by no CLI and carry their id): the stub is
    `unread_stub`, and strings over `UNREAD_MIN_BYTES` go."""
    if isinstance(value, str):
        limit = UNREAD_MIN_BYTES if short else SUPERSEDED_MIN_BYTES
        if json_size(value) <= limit or stubs.is_stub(value):
            return []
        if short:
            stub = stubs.unread_stub(value)
        else:
            key = next((step for step in reversed(path) if isinstance(step, str)), "value")
            stub = stubs.superseded_stub(key, value, show)
        # A stub no shorter than the value would only grow the line.
        return [Edit(path, stub)] if json_size(stub) < json_size(value) else []
    if isinstance(value, dict):
        if value.get("type") in WHOLE_TYPES:
            return []
        return [
            edit
            for key, item in value.items()
            if key not in keep_keys
            for edit in superseded_edits(item, (*path, key), show, keep_keys, short=short)
        ]
    if isinstance(value, list):
        return [
            edit
            for index, item in enumerate(value)
            for edit in superseded_edits(item, (*path, index), show, keep_keys, short=short)
        ]
    return []
