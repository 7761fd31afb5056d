"""A value's compact JSON, as orjson writes it, in pieces: a value that holds a string of many
MB (a tool output) is measured, hashed or compared without a whole copy of its JSON.

JSON escapes each character on its own, so a string's JSON is the JSON of its parts joined,
less their quotes; an object or array is its members' JSON between brackets and commas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import orjson

from gitclaw_compress.memory import huge_line_read

PIECE = 1 << 20  # characters of a long string written at a time
LOOK_MEMBERS = 64  # members `holds_long_text` looks at, at most
LOOK_DEPTH = 4  # and how deep


def holds_long_text(value: Any) -> bool:
    """Whether `value` is, or holds near its top, a string longer than PIECE (a cheap look:
    a string deeper or further on is written whole, as before). Always false until the run
    has read a line of HUGE_LINE bytes: a shorter one costs little written whole, and
    ordinary sessions pay nothing for the look."""
    if not huge_line_read():
        return False
    if isinstance(value, str):
        return len(value) > PIECE
    stack = [(value, 0)] if isinstance(value, dict | list) else []
    looked = 0
    while stack:
        node, depth = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            looked += 1
            if looked > LOOK_MEMBERS:
                return False
            if isinstance(child, str):
                if len(child) > PIECE:
                    return True
            elif isinstance(child, dict | list) and depth + 1 < LOOK_DEPTH:
                stack.append((child, depth + 1))
    return False


def json_pieces(value: Any, depth: int = 0) -> Iterator[bytes]:
    """orjson.dumps(value), in pieces: joined, the same bytes. Deeper than LOOK_DEPTH, or
    holding no long string, a member is written whole (orjson's limit on nesting then counts
    from that member, up to LOOK_DEPTH levels below the top)."""
    if isinstance(value, str):
        if len(value) <= PIECE:
            yield orjson.dumps(value)
            return
        yield b'"'
        for at in range(0, len(value), PIECE):
            yield orjson.dumps(value[at : at + PIECE])[1:-1]
        yield b'"'
    elif depth < LOOK_DEPTH and isinstance(value, dict) and holds_long_text(value):
        yield b"{"
        for number, (key, member) in enumerate(value.items()):
            yield (b"," if number else b"") + orjson.dumps(key) + b":"
            yield from json_pieces(member, depth + 1)
        yield b"}"
    elif depth < LOOK_DEPTH and isinstance(value, list) and holds_long_text(value):
        yield b"["
        for number, member in enumerate(value):
            if number:
                yield b","
            yield from json_pieces(member, depth + 1)
        yield b"]"
    else:
        yield orjson.dumps(value)


def json_size(value: Any) -> int:
    """len(orjson.dumps(value)), without the whole of it when it holds a long string."""
    if holds_long_text(value):
        return sum(map(len, json_pieces(value)))
    return len(orjson.dumps(value))


class Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def hash_json(value: Any, digest: Digest) -> int:
    """Feed orjson.dumps(value) to `digest`, piece by piece when it holds a long string;
    returns its length."""
    if not holds_long_text(value):
        data = orjson.dumps(value)
        digest.update(data)
        return len(data)
    size = 0
    for piece in json_pieces(value):
        digest.update(piece)
        size += len(piece)
    return size


def json_at(data: bytes, at: int, value: Any) -> int:
    """Where the JSON of `value` ends if it stands in `data` at `at`, else -1; compared piece
    by piece."""
    for piece in json_pieces(value):
        if not data.startswith(piece, at):
            return -1
        at += len(piece)
    return at
