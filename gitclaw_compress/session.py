"""Reading pi session files as raw lines: nothing is decoded until it is needed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from gitclaw_compress.errors import GitClawError

MARKER_KEY = "gitclawCompress"
MARKER_BYTES = b'"gitclawCompress"'

Entry = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RawLine:
    """One line: its bytes without the "\\n" (a "\\r" stays), and whether a "\\n" followed."""

    number: int  # 1-based
    data: bytes
    newline: bool

    def encode(self) -> bytes:
        return self.data + b"\n" if self.newline else self.data


def iter_lines(stream: BinaryIO | Iterable[bytes]) -> Iterator[RawLine]:
    """Split a byte stream on "\\n" only, keeping every byte."""
    for number, chunk in enumerate(stream, start=1):
        if chunk.endswith(b"\n"):
            yield RawLine(number, chunk[:-1], True)
        else:
            yield RawLine(number, chunk, False)


def lines_from_bytes(data: bytes) -> list[RawLine]:
    """Like iter_lines, for bytes in memory (bytes.splitlines would also split on "\\r")."""
    parts = data.split(b"\n")
    tail = parts.pop()
    lines = [RawLine(number, part, True) for number, part in enumerate(parts, start=1)]
    if tail:
        lines.append(RawLine(len(parts) + 1, tail, False))
    return lines


def join_lines(lines: Iterable[RawLine]) -> bytes:
    return b"".join(line.encode() for line in lines)


def parse_entry(data: bytes) -> Entry | None:
    """The JSON object on a line, or None for blank, malformed or non-object lines."""
    if not data.strip():
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def message_of(entry: Entry) -> dict[str, Any] | None:
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def role_of(entry: Entry) -> str | None:
    message = message_of(entry)
    role = message.get("role") if message is not None else None
    return role if isinstance(role, str) else None


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


def check_header(line: RawLine | None, source: str) -> Entry:
    """Line 1 must be a pi session header; pi rewrites files whose header is broken."""
    if line is None:
        raise GitClawError(f"{source}: empty file, not a pi session")
    header = parse_entry(line.data)
    if header is None or header.get("type") != "session":
        raise GitClawError(
            f"{source}:1: not a pi session header (expected a JSON object with "
            '"type":"session"); the file was not changed'
        )
    version = header.get("version", 1)
    if version != 3:
        raise GitClawError(
            f"{source}:1: pi session version {version!r} is not supported (only 3); "
            "resume it once in pi to migrate it; the file was not changed"
        )
    return header


@dataclass(slots=True)
class LineCounts:
    """What the reader passed through untouched, for the stats."""

    lines: int = 0
    blank: int = 0
    malformed: int = 0
    crlf: int = 0
    non_utf8: int = 0
    missing_final_newline: bool = False
    compressed: int = 0  # lines that already carry a gitclaw-compress marker
    malformed_at: list[int] = field(default_factory=list)  # the first few, for messages

    def as_json(self) -> dict[str, object]:
        """The counts of lines passed through untouched, under the names reports use."""
        return {
            "blank_lines": self.blank,
            "malformed_lines": self.malformed,
            "crlf_lines": self.crlf,
            "non_utf8_lines": self.non_utf8,
            "missing_final_newline": self.missing_final_newline,
        }

    def observe(self, line: RawLine, entry: Entry | None) -> None:
        self.lines += 1
        if line.data.endswith(b"\r"):
            self.crlf += 1
        if not line.newline:
            self.missing_final_newline = True
        if not line.data.strip():
            self.blank += 1
            return
        if entry is None:
            self.malformed += 1
            if len(self.malformed_at) < 5:
                self.malformed_at.append(line.number)
            try:
                line.data.decode("utf-8")
            except UnicodeDecodeError:
                self.non_utf8 += 1
        elif MARKER_KEY in entry:
            self.compressed += 1
