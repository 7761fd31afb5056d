"""Paths that are not files: a FIFO, a device or a socket is refused before anything opens it
(reading one could wait for ever). A leaf, so that the config and the commands refuse one
the same way without reaching into the store."""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path

from gitclaw_compress.errors import GitClawError


def special_kind(path: Path) -> str | None:
    """What a path is when it is a FIFO, a device or a socket (None for a file, a folder,
    or nothing): opening one to read could wait for ever, so it is refused before that.
    A stat does not open it."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    kinds = (
        (stat_module.S_ISFIFO, "a named pipe (FIFO)"),
        (stat_module.S_ISCHR, "a character device"),
        (stat_module.S_ISBLK, "a block device"),
        (stat_module.S_ISSOCK, "a socket"),
    )
    return next((kind for test, kind in kinds if test(mode)), None)


def refuse_special(path: Path, wanted: str = "a session file") -> None:
    """One line, before anything opens `path`, when it is a FIFO, a device or a socket."""
    kind = special_kind(path)
    if kind is not None:
        raise GitClawError(f"{path}: {kind}, not {wanted}; nothing was changed")
