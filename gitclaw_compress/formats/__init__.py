"""The agent formats, one package each, and the one place that tells them apart: by content.

A file's name says nothing reliable (people commit transcripts under any name), so a format
is chosen from the first parsed lines of the file; then the format checks the file itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from gitclaw_compress.core.lines import RawLine, iter_lines, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.base import SNIFF_LINES, Format, format_title
from gitclaw_compress.formats.shared.hooks import LifecycleHook


@cache
def registry() -> dict[str, Format]:
    """Every format by name, in the order they are tried. The modules load on first use: a
    run that reads no transcript (a no-op `step`) never pays for them."""
    from gitclaw_compress.formats.claude import rules as claude
    from gitclaw_compress.formats.codex import rules as codex
    from gitclaw_compress.formats.copilot import rules as copilot
    from gitclaw_compress.formats.pi import rules as pi

    return {fmt.name: fmt for fmt in (pi.FORMAT, claude.FORMAT, codex.FORMAT, copilot.FORMAT)}


def lifecycle_hook(name: str) -> LifecycleHook:
    """`Format.lifecycle_hook` of the format `name`, loading that module alone: the hook
    runs at the end of every session, and pays for no format it does not use."""
    hook: LifecycleHook = importlib.import_module(f"{__name__}.{name}.hooks").HOOK
    return hook


def __getattr__(name: str) -> dict[str, Format]:
    if name == "FORMATS":
        return registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def supported() -> str:
    """The formats for a message: "pi, Claude Code, …"."""
    return ", ".join(fmt.title for fmt in registry().values())


def detect(lines: Iterable[RawLine], source: str) -> Format:
    """The format of a file from its first lines; checked by that format, or an error."""
    first: RawLine | None = None
    entries = []
    for line in lines:
        if first is None:
            first = line
        entry = parse_entry(line.data)
        if entry is not None:
            entries.append(entry)
            if len(entries) >= SNIFF_LINES:
                break
    if first is None:
        raise GitClawError(f"{source}: empty file, not a session transcript")
    for fmt in registry().values():
        if fmt.recognize(entries):
            fmt.check(first, source)
            return fmt
    raise GitClawError(
        f"{source}: not a session transcript of a supported format ({supported()}); "
        "the file was not changed"
    )


def detect_file(path: Path, source: str) -> Format:
    with open(path, "rb") as handle:
        return detect(iter_lines(handle), source)


def unsupported(fmt: Format, command: str) -> GitClawError:
    """The one-line answer of a command that cannot serve this format yet."""
    return GitClawError(f"{command} does not support {fmt.title} transcripts yet")


__all__ = [
    "FORMATS",
    "Format",
    "detect",
    "detect_file",
    "format_title",
    "lifecycle_hook",
    "registry",
    "supported",
    "unsupported",
]
