"""Find the byte spans of JSON values inside a raw line, so edits can splice original bytes.

Re-serializing a JavaScript-written line from Python does not give the same bytes
(`0.000005` becomes `5e-06`), so every edit works on spans of the original text and
every restore splices the original bytes back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

JsonPath = tuple[str | int, ...]

_WS = re.compile(rb"[ \t\r\n]*")
_SCALAR = re.compile(rb"-?[0-9][0-9.eE+\-]*|true|false|null")
_STRUCTURE = re.compile(rb'["\[\]{}]')


def value_at(value: object, path: JsonPath) -> tuple[bool, object]:
    """The value at `path` in a parsed JSON value: (True, it), or (False, None) when a step
    names no member or element (a string key in an object, an index in range of an array)."""
    for step in path:
        if isinstance(value, dict):
            if not isinstance(step, str) or step not in value:
                return False, None
            value = value[step]
        elif isinstance(value, list):
            if not isinstance(step, int) or not 0 <= step < len(value):
                return False, None
            value = value[step]
        else:
            return False, None
    return True, value


class SpanError(ValueError):
    """The raw text is not the JSON structure the caller expected."""


@dataclass(frozen=True, slots=True)
class Span:
    """Where a value sits in a raw line. For object members, `key_start` is the key's quote."""

    key_start: int
    start: int
    end: int


_LEAF = object()


def _build_trie(paths: Iterable[JsonPath]) -> dict[object, object]:
    trie: dict[object, object] = {}
    for path in paths:
        node = trie
        for part in path:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[_LEAF] = path
    return trie


_WS_BYTES = frozenset(b" \t\r\n")


def _skip_ws(raw: bytes, pos: int) -> int:
    # JSON.stringify writes no whitespace, so the common case is one byte test.
    if pos >= len(raw) or raw[pos] not in _WS_BYTES:
        return pos
    match = _WS.match(raw, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _string_end(raw: bytes, pos: int) -> int:
    """End of the JSON string whose opening quote is at `pos`.

    bytes.find runs at memchr speed, several times faster than a regex over long strings;
    a quote preceded by an odd number of backslashes is escaped.
    """
    cursor = pos + 1
    while True:
        quote = raw.find(b'"', cursor)
        if quote < 0:
            raise SpanError(f"unterminated string at byte {pos}")
        back = quote - 1
        while raw[back] == 0x5C:  # backslash
            back -= 1
        if (quote - 1 - back) % 2 == 0:
            return quote + 1
        cursor = quote + 1


def _skip_value(raw: bytes, pos: int) -> int:
    """Return the end of the JSON value that starts at `pos`."""
    first = raw[pos : pos + 1]
    if first == b'"':
        return _string_end(raw, pos)
    if first in (b"{", b"["):
        depth = 0
        cursor = pos
        while True:
            found = _STRUCTURE.search(raw, cursor)
            if found is None:
                raise SpanError(f"unterminated container at byte {pos}")
            char = raw[found.start()]
            if char == 0x22:  # '"'
                cursor = _string_end(raw, found.start())
                continue
            depth += 1 if char in (0x7B, 0x5B) else -1
            cursor = found.end()
            if depth == 0:
                return cursor
    match = _SCALAR.match(raw, pos)
    if match is None:
        raise SpanError(f"unexpected byte {first!r} at {pos}")
    return match.end()


def _decode_key(raw_key: bytes) -> str:
    if b"\\" in raw_key:
        key = orjson.loads(raw_key)
        assert isinstance(key, str)
        return key
    return raw_key[1:-1].decode("utf-8")


def _walk(
    raw: bytes, pos: int, key_start: int, trie: dict[object, object], out: dict[JsonPath, Span]
) -> int:
    """Walk the value at `pos`, recording spans of wanted paths; return the value's end."""
    if _LEAF in trie:
        end = _skip_value(raw, pos)
        out[trie[_LEAF]] = Span(key_start, pos, end)  # type: ignore[index]
        if len(trie) == 1:
            return end
    first = raw[pos : pos + 1]
    if first == b"{" and any(isinstance(k, str) for k in trie):
        pos = _skip_ws(raw, pos + 1)
        if raw[pos : pos + 1] == b"}":
            return pos + 1
        while True:
            if raw[pos : pos + 1] != b'"':
                raise SpanError(f"expected a key at byte {pos}")
            member_start = pos
            key_end = _string_end(raw, pos)
            key = _decode_key(raw[pos:key_end])
            pos = _skip_ws(raw, key_end)
            if raw[pos : pos + 1] != b":":
                raise SpanError(f"expected ':' at byte {pos}")
            pos = _skip_ws(raw, pos + 1)
            child = trie.get(key)
            if isinstance(child, dict):
                pos = _walk(raw, pos, member_start, child, out)
            else:
                pos = _skip_value(raw, pos)
            pos = _skip_ws(raw, pos)
            sep = raw[pos : pos + 1]
            if sep == b"}":
                return pos + 1
            if sep != b",":
                raise SpanError(f"expected ',' or '}}' at byte {pos}")
            pos = _skip_ws(raw, pos + 1)
    if first == b"[" and any(isinstance(k, int) for k in trie):
        pos = _skip_ws(raw, pos + 1)
        if raw[pos : pos + 1] == b"]":
            return pos + 1
        index = 0
        while True:
            child = trie.get(index)
            if isinstance(child, dict):
                pos = _walk(raw, pos, pos, child, out)
            else:
                pos = _skip_value(raw, pos)
            pos = _skip_ws(raw, pos)
            sep = raw[pos : pos + 1]
            if sep == b"]":
                return pos + 1
            if sep != b",":
                raise SpanError(f"expected ',' or ']' at byte {pos}")
            pos = _skip_ws(raw, pos + 1)
            index += 1
    return _skip_value(raw, pos)


def locate(raw: bytes, paths: Iterable[JsonPath]) -> dict[JsonPath, Span]:
    """Return the spans of the values at `paths` in the JSON document `raw`.

    Paths that do not exist are absent from the result. `raw` must be valid JSON.
    """
    trie = _build_trie(paths)
    out: dict[JsonPath, Span] = {}
    start = _skip_ws(raw, 0)
    _walk(raw, start, start, trie, out)
    return out


def splice(raw: bytes, edits: Sequence[tuple[int, int, bytes]]) -> bytes:
    """Replace the non-overlapping byte ranges `[start, end)` of `raw` with new bytes."""
    pieces: list[bytes] = []
    cursor = 0
    for start, end, replacement in sorted(edits, key=lambda edit: edit[0]):
        if start < cursor:
            raise SpanError("overlapping edits")
        pieces.append(raw[cursor:start])
        pieces.append(replacement)
        cursor = end
    pieces.append(raw[cursor:])
    return b"".join(pieces)


def object_close(raw: bytes) -> int:
    """Index of the closing brace of the top-level object (trailing whitespace allowed)."""
    end = len(raw.rstrip(b" \t\r\n"))
    if end == 0 or raw[end - 1] != 0x7D:
        raise SpanError("line does not end with a JSON object")
    return end - 1
