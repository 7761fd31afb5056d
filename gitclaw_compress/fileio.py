"""Atomic replacement of a file: a temp file beside it, fsync, rename, fsync the folder."""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
from pathlib import Path
from typing import IO

TEMP_PREFIX = ".gitclaw-compress-tmp-"


def _temp_prefix(target: Path) -> str:
    return f"{TEMP_PREFIX}{target.name}."


def clean_stale_temps(target: Path) -> None:
    """Temp files left by a killed run on this file (the caller holds the file's lock)."""
    for stale in target.parent.glob(glob.escape(_temp_prefix(target)) + "*"):
        with contextlib.suppress(OSError):
            stale.unlink()


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AtomicFile:
    """Write the new content with `handle`, `seal()` it, then `replace()` the target.

    Until `replace()`, the target is untouched; a crash leaves the old file and a stale temp
    file that the next run on the same target removes.
    """

    def __init__(self, target: Path, mode_from: Path | None = None) -> None:
        self.target = target
        folder = target.absolute().parent
        fd, name = tempfile.mkstemp(dir=folder, prefix=_temp_prefix(target))
        self.temp = Path(name)
        self.handle: IO[bytes] = os.fdopen(fd, "wb")
        source = mode_from if mode_from is not None else target
        self._mode = source.stat().st_mode & 0o7777 if source.exists() else None

    def seal(self) -> None:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        if self._mode is not None:
            os.chmod(self.temp, self._mode)

    def replace(self) -> None:
        os.replace(self.temp, self.target)
        fsync_directory(self.target.absolute().parent)

    def discard(self) -> None:
        self.handle.close()
        self.temp.unlink(missing_ok=True)
