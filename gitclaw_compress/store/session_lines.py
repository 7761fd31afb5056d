"""Reading a session file: its lines, its chunks, whether any line carries a marker."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from gitclaw_compress.core.lines import (
    READ_BUFFER,
    RawLine,
    has_marker,
    iter_lines,
)


def has_compressed_line(path: Path) -> bool:
    """Whether any line carries a marker (one scan in large chunks, not line by line)."""
    with open(path, "rb") as handle:
        return has_marker(handle)


@contextlib.contextmanager
def open_lines(path: Path) -> Iterator[Iterator[RawLine]]:
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        yield iter_lines(handle)


def file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            yield chunk
