"""Reading session transcripts as raw lines: nothing is decoded until it is needed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NamedTuple

import orjson

from gitclaw_compress.memory import for_huge_lines

MARKER_KEY = "gitclawCompress"
MARKER_BYTES = b'"gitclawCompress"'
# Sessions have lines of hundreds of KB: a large read buffer makes splitting them 3-4x faster.
READ_BUFFER = 1 << 20
# A line this long is huge: worked on, it is held as bytes and decoded (up to 4 bytes a
# character), so the run frees what it can around it (see memory.py, secrets/parallel.py).
HUGE_LINE = 8 << 20

Entry = dict[str, Any]


class RawLine(NamedTuple):
    """One line: its bytes without the "\\n" (a "\\r" stays), and whether a "\\n" followed.

    A named tuple, not a frozen dataclass: a file has a line per record and every pass makes
    one per line, and a tuple is made three times faster.
    """

    number: int  # 1-based
    data: bytes
    newline: bool

    def encode(self) -> bytes:
        return self.data + b"\n" if self.newline else self.data


# A named tuple's own constructor is a Python function: tuple.__new__ makes a line in half
# the time, and every pass makes one per line.
_new_line = tuple.__new__


def iter_lines(stream: BinaryIO | Iterable[bytes]) -> Iterator[RawLine]:
    """Split a byte stream on "\\n" only, keeping every byte."""
    new, raw_line = _new_line, RawLine
    # The line without its "\n" is a copy, which replaces the chunk read: a huge line's bytes
    # are not held twice while it is worked on. (Not `enumerate`: it keeps its last tuple,
    # and the chunk in it, until the next line.)
    number = 0
    for chunk in stream:
        number += 1  # noqa: SIM113 (see above)
        newline = chunk[-1:] == b"\n"
        if newline:
            chunk = chunk[:-1]
        if len(chunk) >= HUGE_LINE:  # what reading it left free goes back to the system
            for_huge_lines()
        yield new(raw_line, (number, chunk, newline))


def has_marker(stream: BinaryIO) -> bool:
    """Whether the marker key stands anywhere in the stream (read in large chunks; a marker
    split between two chunks is still found)."""
    tail = b""
    while chunk := stream.read(READ_BUFFER):
        if MARKER_BYTES in tail + chunk[: len(MARKER_BYTES)] or MARKER_BYTES in chunk:
            return True
        tail = chunk[-len(MARKER_BYTES) :]
    return False


def has_line_of(stream: BinaryIO, size: int) -> bool:
    """Whether a line of the stream (its "\\n" not counted) is `size` bytes or longer; read
    in large chunks, its newlines found in C (no copy of the lines: a file of 60 MB is read
    in a third of the time a split takes)."""
    run = 0  # bytes of the line that the last chunk ended in
    while chunk := stream.read(READ_BUFFER):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if run + end - start >= size:
                return True
            run, start = 0, end + 1
        run += len(chunk) - start
        if run >= size:
            return True
    return False


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


class LineBatch:
    """Lines joined into chunks of about 1 MiB for `sink`: one hash update and one write per
    chunk instead of one per line (and no copy of each line to append its newline)."""

    def __init__(self, sink: Callable[[bytes], object], chunk: int = READ_BUFFER) -> None:
        self._sink = sink
        self._chunk = chunk
        self._parts: list[bytes] = []
        self._pending = 0
        self.size = 0  # bytes added so far

    def add(self, line: RawLine) -> None:
        data = line.data
        size = len(data) + line.newline
        self._parts.append(data)
        if line.newline:
            self._parts.append(b"\n")
        self.size += size
        self._pending += size
        if self._pending >= self._chunk:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            chunk = b"".join(self._parts)
            self._parts.clear()
            self._pending = 0
            self._sink(chunk)


def parse_entry(data: bytes) -> Entry | None:
    """The JSON object on a line, or None for blank, malformed or non-object lines."""
    try:  # a blank line does not parse either: no copy of every line to strip it first
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


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
        data = line.data
        if data[-1:] == b"\r":
            self.crlf += 1
        if not line.newline:
            self.missing_final_newline = True
        if entry is not None:  # a line that parses is not blank
            if MARKER_KEY in entry:
                self.compressed += 1
            return
        if not data.strip():
            self.blank += 1
            return
        self.malformed += 1
        if len(self.malformed_at) < 5:
            self.malformed_at.append(line.number)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            self.non_utf8 += 1
