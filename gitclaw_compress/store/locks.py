"""An exclusive lock on an open file, taken without waiting: `flock` on POSIX, a byte-range
lock (`msvcrt.locking` on its first byte) on Windows. Either goes with the process: a
killed run leaves no lock behind. A system with neither runs unlocked (each rename is still
guarded on its own: store/fileio.py)."""

from __future__ import annotations

import os
from typing import IO


def try_lock(handle: IO[bytes]) -> bool:
    """Lock `handle`'s file for this process; False when another process holds it."""
    if os.name == "nt":
        import msvcrt

        handle.seek(0)
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
        except OSError:
            return False
        return True
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(handle: IO[bytes]) -> None:
    if os.name == "nt":
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]
        return
    try:
        import fcntl
    except ImportError:
        return
    fcntl.flock(handle, fcntl.LOCK_UN)
