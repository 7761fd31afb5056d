"""Where the values an edit replaces stand in a line's bytes, found by searching for their
serialized form, and the check that a spliced line parses to what was meant."""

from __future__ import annotations

from typing import Any

import orjson

from gitclaw_compress.core.format import Edit
from gitclaw_compress.core.jsonpieces import holds_long_text, json_at, json_pieces
from gitclaw_compress.core.jsonspan import JsonPath, locate, value_at
from gitclaw_compress.core.lines import Entry

# The JSON type of a value from its first byte: a stub must keep it.
JSON_KIND = {
    ord('"'): "string",
    ord("["): "array",
    ord("{"): "object",
    ord("t"): "bool",
    ord("f"): "bool",
    ord("n"): "null",
}


def json_kind(raw: bytes) -> str:
    return JSON_KIND.get(raw[0], "number") if raw else ""


def found_spans(
    data: bytes, entry: Entry, edits: list[Edit]
) -> dict[JsonPath, tuple[int, int]] | None:
    """The spans of the edited values found by searching for their serialized bytes.

    Writers of these files (JSON.stringify, serde) write what orjson writes for most values,
    so a value is usually found, with its key, by one `bytes.find` instead of a walk through
    the line; the same value twice (two identical outputs) takes the next copy. None when a
    value is not found. A match may still be the wrong copy: pass 2 checks the result by
    parsing it, and walks the line if it differs.
    """
    spans: dict[JsonPath, tuple[int, int]] = {}
    taken: list[tuple[int, int]] = []  # the matched bytes, keys included
    for edit in edits:
        found, value = value_at(entry, edit.path)
        if not found:
            continue
        key = edit.path[-1] if edit.path else None
        prefix = orjson.dumps(key) + b":" if isinstance(key, str) else b""
        try:
            if holds_long_text(value):  # a tool output of many MB: no whole copy of its JSON
                position, end = _find_free_pieces(data, prefix, value, taken)
            else:
                needle = orjson.dumps(value)
                position = _find_free(data, prefix, needle, taken)
                end = position + len(prefix) + len(needle)
        except TypeError:  # nested too deep for orjson's writer
            return None
        if position < 0:
            return None
        taken.append((position, end))
        spans[edit.path] = (position + len(prefix), end)
    return spans


# A long needle costs `bytes.find` a setup in proportion to its length (0.3 ms for a 270 KB
# image): its head is searched for instead, and each hit compared in full.
_NEEDLE_HEAD = 64


def _find_free(data: bytes, prefix: bytes, needle: bytes, taken: list[tuple[int, int]]) -> int:
    """The first position of `prefix` followed by `needle` in `data` that overlaps none of
    `taken`, or -1 (the two are not joined: a value's JSON may be many MB)."""
    head = prefix + needle[:_NEEDLE_HEAD]
    skip = len(prefix)
    size = skip + len(needle)
    position = data.find(head)
    while position >= 0:
        if data.startswith(needle, position + skip) and (
            not taken  # most lines: the first edit, no generator made to check the others
            or not any(position < end and start < position + size for start, end in taken)
        ):
            return position
        position = data.find(head, position + 1)
    return position


def _find_free_pieces(
    data: bytes, prefix: bytes, value: Any, taken: list[tuple[int, int]]
) -> tuple[int, int]:
    """`_find_free` for a value whose JSON is compared piece by piece; (start, end) of the
    match, the prefix included, or (-1, -1)."""
    head = bytearray(prefix)
    for piece in json_pieces(value):
        head += piece
        if len(head) >= len(prefix) + _NEEDLE_HEAD:
            break
    position = data.find(head)
    while position >= 0:
        end = json_at(data, position + len(prefix), value)
        if end >= 0 and not any(position < stop and start < end for start, stop in taken):
            return position, end
        position = data.find(head, position + 1)
    return -1, -1


def replaced(entry: Entry, edits: list[Edit]) -> Entry:
    """A copy of `entry` with each edit's value in place (containers copied along the path)."""
    result = dict(entry)
    for edit in edits:
        node: Any = result
        for step in edit.path[:-1]:
            child = node[step]
            node[step] = child = dict(child) if isinstance(child, dict) else list(child)
            node = child
        node[edit.path[-1]] = edit.value
    return result


def parses_to(data: bytes, expected: Entry) -> bool:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    try:  # Python's == in C: a fifth of the cost of walking both values in Python
        return bool(parsed == expected)
    except RecursionError:  # nested deeper than == recurses (orjson reads 1,024 levels)
        return _same_json(parsed, expected)


def _same_json(left: Any, right: Any) -> bool:
    """`left == right` for parsed JSON, with a stack instead of recursion: orjson reads
    nesting deeper than Python's == may recurse."""
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, dict):
            if not isinstance(b, dict) or a.keys() != b.keys():
                return False
            stack.extend((value, b[key]) for key, value in a.items())
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(b, dict | list) or a != b:
            return False
    return True


def located_spans(data: bytes, edits: list[Edit]) -> dict[JsonPath, tuple[int, int]]:
    """The spans of the edited values found by walking the line (slower, always right)."""
    located = locate(data, [edit.path for edit in edits])
    return {path: (span.start, span.end) for path, span in located.items()}
