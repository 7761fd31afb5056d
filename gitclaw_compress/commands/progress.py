"""The progress line a person sees on a terminal during a long run.

One line on stderr, redrawn in place: "checking 12/546 sessions, 3.1 MB of 80.2 MB:
path/of/the/file". Nothing when stderr is not a terminal (a pipe, a log), under --json, or
with CI set (CI logs keep every redraw); then the use case gets `SILENT`.

Written here rather than with click.progressbar (no file at hand, no bytes, a fixed-width
bar that wraps on a narrow terminal) or a library such as rich (some MB installed and tens
of ms at start for one line).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO

from gitclaw_compress.progress import SILENT, Progress
from gitclaw_compress.units import human_bytes

REDRAW_SECONDS = 0.1  # at most ten redraws a second: a run over many small files stays fast
CLEAR = "\r\x1b[K"


def shows_progress(as_json: bool = False, stream: TextIO | None = None) -> bool:
    """Whether a progress line may be drawn: a terminal on stderr, not --json, not CI."""
    stream = stream or sys.stderr
    if as_json or os.environ.get("CI", "").lower() not in ("", "0", "false"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def progress_for(as_json: bool = False, finding: bool = False) -> Progress:
    """The progress a command hands its use case; with `finding`, it says at once that the
    sessions are being looked for (on hundreds of sessions that takes a while itself)."""
    if not shows_progress(as_json):
        return SILENT
    progress = TerminalProgress(sys.stderr)
    if finding:
        progress.begin(FINDING, 0)
    return progress


FINDING = "finding sessions"


class TerminalProgress:
    """One line on a terminal, redrawn in place and taken away at the end."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.verb = ""
        self.unit = "session"
        self.total = 0
        self.total_bytes = 0
        self.done = 0
        self.done_bytes = 0
        self.current = ""
        self.current_size = 0
        self.current_done = 0  # bytes of the file at hand done
        self.drawn_at: float | None = None  # None: nothing on the line now

    def begin(self, verb: str, total: int, total_bytes: int = 0, unit: str = "session") -> None:
        self.verb, self.total, self.total_bytes, self.unit = verb, total, total_bytes, unit
        self.done = self.done_bytes = 0
        self.current, self.current_size = "", 0
        if not total:  # else the first item draws at once, naming its file
            self._draw(force=True)

    def item(self, name: str, size: int = 0) -> None:
        if self.current:  # the one before is done
            self.done += 1
            self.done_bytes += self.current_size
        first = not self.current
        self.current, self.current_size, self.current_done = name, size, 0
        self._draw(force=first or self.drawn_at is None)  # the first file is always named

    def advance(self, size: int) -> None:
        self.current_done = min(self.current_done + size, self.current_size)
        self._draw(force=False)

    def clear(self) -> None:
        if self.drawn_at is not None:
            self._write(CLEAR)
            self.drawn_at = None

    def end(self) -> None:
        self.clear()

    def line(self) -> str:
        if not self.total and not self.current:  # a run that does not know its items yet
            return f"{self.verb}…"
        noun = self.unit if self.total == 1 else f"{self.unit}s"
        text = f"{self.verb} {self.done:,}/{self.total:,} {noun}"
        if self.total_bytes:
            done = self.done_bytes + self.current_done
            text += f", {human_bytes(done)} of {human_bytes(self.total_bytes)}"
        if self.current:
            text += f": {self.current}"
        return text

    def _draw(self, force: bool) -> None:
        now = time.monotonic()
        if not force and self.drawn_at is not None and now - self.drawn_at < REDRAW_SECONDS:
            return
        width = self._columns() - 1  # never wrap to a second line
        text = self.line()
        if len(text) > width:
            text = text[: max(width - 1, 0)] + "…"
        self._write(CLEAR + text)
        self.drawn_at = now

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            return shutil.get_terminal_size((80, 24)).columns

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth an error
            pass
