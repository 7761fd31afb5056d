"""How a long use case tells its progress: sessions done of total, bytes, the file at hand.

The command layer hands a use case a `Progress`; the use case says what it does (`begin`),
which file it is at (`item`) and when it is done (`end`). `SILENT` says nothing: the default,
and what a pipe, --json or CI gets (commands/progress.py decides which).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    def begin(self, verb: str, total: int, total_bytes: int = 0, unit: str = "session") -> None:
        """A run of `total` items (of `total_bytes` bytes when known) starts; `verb` says
        what it does ("compressing", "checking")."""

    def item(self, name: str, size: int = 0) -> None:
        """The run is now at `name` (`size` bytes); the ones before it are done."""

    def advance(self, size: int) -> None:
        """`size` more bytes of the file at hand are done (a large file takes seconds)."""

    def clear(self) -> None:
        """Take the display away for a moment (before a line is printed)."""

    def end(self) -> None:
        """The run is over (or stopped): take the display away."""


class Silent:
    """The progress nobody sees."""

    def begin(self, verb: str, total: int, total_bytes: int = 0, unit: str = "session") -> None:
        pass

    def item(self, name: str, size: int = 0) -> None:
        pass

    def advance(self, size: int) -> None:
        pass

    def clear(self) -> None:
        pass

    def end(self) -> None:
        pass


SILENT: Progress = Silent()


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextmanager
def running(
    progress: Progress,
    verb: str,
    items: Iterable[T],
    name: Callable[[T], str] = str,
    size: Callable[[T], int] | None = None,
    unit: str = "session",
) -> Iterator[Iterator[T]]:
    """The items, each announced to `progress` before it is worked on; the display is taken
    away when the block ends, however it ends (an error or Ctrl-C prints after it)."""
    listed = list(items)
    sizes = [size(one) for one in listed] if size is not None else [0] * len(listed)

    def announced() -> Iterator[T]:
        for one, bytes_ in zip(listed, sizes, strict=True):
            progress.item(name(one), bytes_)
            yield one

    progress.begin(verb, len(listed), sum(sizes), unit)
    try:
        yield announced()
    finally:
        progress.end()
