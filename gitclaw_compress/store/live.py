"""Which other processes hold a file open, and which programs run: one way on every platform.

The operating system is asked through psutil (imported only when a run needs it: a no-op
run never does). What it can tell differs by platform, and so does the rule:

- Linux: the open files of every process with their mode (`r`, `w`, `a`, `r+`, `a+`), so a
  file counts when another process holds it open for writing. Before a rename, the read
  lease of store/fileio.py checks again without a window; this list is what `stores` reads
  first, and what names the processes.
- macOS, Windows and the rest: the open files without their mode (psutil cannot tell read
  from write there), so a file counts when another process holds it open at all. A reader
  keeps a session for one run more; a writer is never missed.
- Where the open files cannot be listed (psutil absent or refused), `open_for_writing`
  and `writers` say None: no check. The callers then go by each agent's own facts (which
  agent keeps its session open while it runs: see AgentHome.keeps_open).

Processes this user may not inspect are skipped: their files are not this user's sessions.
"""

from __future__ import annotations

import functools
import os
import stat as stat_module
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# A test hook: force the check of another platform on this one. `psutil`: open files with
# their modes and no lease (Linux without leases); `any-mode`: every open counts, no lease
# (macOS, Windows); `processes`: no open-file list, processes only; `none`: neither.
FORCE_ENV = "GITCLAW_COMPRESS_TEST_LIVE_CHECK"
FORCED = ("psutil", "any-mode", "processes", "none")
WRITE_MODES = frozenset({"w", "a", "r+", "a+", "w+"})


@dataclass(frozen=True)
class Check:
    """What this machine can tell about live writers."""

    lease: bool  # a Linux read lease guards the rename (store/fileio.py)
    open_files: bool  # other processes' open files can be listed
    modes: bool  # and read is told from write
    processes: bool  # running programs (command line, working directory) can be listed
    platform: str

    def line(self) -> str:
        """One line: which check this machine has."""
        if self.open_files:
            how = "lease + open files" if self.lease else "open files"
            if not self.modes:
                how += ", read and write alike"
            return f"live-writer check: {how} ({self.platform})"
        if self.lease:
            return f"live-writer check: lease only ({self.platform}); agents' files by their facts"
        if self.processes:
            return (
                f"live-writer check: none ({self.platform}: open files cannot be listed); "
                "no session of an agent that keeps its file open is rewritten while it runs"
            )
        return (
            f"live-writer check: none ({self.platform}: neither open files nor processes "
            "can be listed); no session of an agent that keeps its file open is rewritten"
        )


def platform_name(platform: str | None = None) -> str:
    name = sys.platform if platform is None else platform
    if name.startswith("linux"):
        return "Linux"
    return {"darwin": "macOS", "win32": "Windows", "cygwin": "Windows"}.get(name, name)


def forced() -> str | None:
    value = os.environ.get(FORCE_ENV)
    return value if value in FORCED else None


def _psutil() -> ModuleType | None:
    try:
        import psutil
    except ImportError:
        return None
    return psutil


def check() -> Check:
    """The check this machine has (a forced one under FORCE_ENV)."""
    mode = forced()
    platform = platform_name()
    present = _psutil_present()
    have = present and mode not in ("processes", "none")
    lease = mode is None and platform == "Linux" and _has_leases()
    return Check(
        lease=lease,
        open_files=have,
        modes=have and platform == "Linux" and mode != "any-mode",
        processes=present and mode != "none",
        platform=platform,
    )


@functools.cache
def _psutil_present() -> bool:
    """Whether psutil can be imported, without importing it (12 ms): a rename under the
    lease never needs it."""
    import importlib.util

    return importlib.util.find_spec("psutil") is not None


@functools.cache
def _has_leases() -> bool:
    try:
        import fcntl
    except ImportError:
        return False
    return hasattr(fcntl, "F_RDLCK")


def _others() -> Iterator[Any]:
    psutil = _psutil()
    assert psutil is not None
    me = os.getpid()
    for process in psutil.process_iter():
        if process.pid != me:
            yield process


def open_for_writing(only: Path | None = None) -> dict[tuple[int, int], set[int]] | None:
    """(device, inode) of every regular file another process holds open for writing (where
    the mode cannot be told: open at all), with the processes' ids; `only`: that file.
    None where the open files cannot be listed."""
    found_check = check()
    psutil = _psutil() if found_check.open_files else None
    if psutil is None:  # not to be had here, or present but broken
        return None
    wanted = None
    if only is not None:
        try:
            held = os.stat(only)
        except OSError:
            return {}
        wanted = (held.st_dev, held.st_ino)
    keys: dict[str, tuple[int, int] | None] = {}  # one stat per path, however many hold it
    found: dict[tuple[int, int], set[int]] = {}
    for process in _others():
        try:
            files = process.open_files()
        except (psutil.Error, OSError):  # gone, or not this user's
            continue
        for opened in files:
            mode = getattr(opened, "mode", None)
            if found_check.modes and mode not in WRITE_MODES:
                continue
            if opened.path not in keys:
                keys[opened.path] = _key(opened.path)
            key = keys[opened.path]
            if key is not None and (wanted is None or key == wanted):
                found.setdefault(key, set()).add(process.pid)
    return found


def _key(path: str) -> tuple[int, int] | None:
    try:
        held = os.stat(path)
    except (OSError, ValueError):
        return None
    return (held.st_dev, held.st_ino) if stat_module.S_ISREG(held.st_mode) else None


def files_open_for_writing() -> set[tuple[int, int]] | None:
    """(device, inode) of every file another process holds open for writing, in one pass
    (for many files at once); None where the open files cannot be listed."""
    found = open_for_writing()
    return None if found is None else set(found)


def writers(path: Path) -> list[int] | None:
    """Ids of the other processes that hold `path` open for writing (see above); None
    where the open files cannot be listed."""
    found = open_for_writing(path)
    if found is None:
        return None
    return sorted({pid for pids in found.values() for pid in pids})


@dataclass(frozen=True)
class Running:
    """A running program: its command line and working directory ("" when not told)."""

    pid: int
    argv: list[str]
    cwd: str


def running() -> list[Running] | None:
    """Every other process this user may inspect; None where processes cannot be listed."""
    psutil = _psutil() if check().processes else None
    if psutil is None:
        return None
    found = []
    for process in _others():
        try:
            argv = process.cmdline()
        except (psutil.Error, OSError):
            continue
        try:
            cwd = process.cwd()
        except (psutil.Error, OSError):
            cwd = ""
        found.append(Running(process.pid, argv, cwd))
    return found
