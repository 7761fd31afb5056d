"""Ctrl-C and SIGTERM at any point: exit 130, one line that says what changed, no traceback.

Python raises KeyboardInterrupt wherever the main thread happens to be, even inside a
finalizer (`__del__`, a weakref callback), where it is printed and swallowed, and the run
then goes on as if nothing happened. So the handler also records that a signal came, and
the edge (`entry.main`) turns any recorded signal into exit 130, with a message built from
what this run did change on disk (`note_changed`), not from where the exception landed.

Imports only the standard library: it is in force before anything else is imported.
"""

from __future__ import annotations

import _imp
import atexit
import contextlib
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType
    from typing import Any

# A test hook: the process sends itself SIGINT when it reaches the stage named here.
STAGE_ENV = "GITCLAW_COMPRESS_INTERRUPT_AT"

# POSIX signal masks and thread-directed signals; Windows has neither: there Ctrl-C can land
# anywhere, and SIGTERM is never delivered (another process ending this one kills it).
MASKS = hasattr(signal, "pthread_sigmask")

received = False  # a SIGINT or SIGTERM came during this run
_changed: list[tuple[str, str]] = []  # (what was done, to which file), in order
_exiting = False  # the edge is reporting the interrupt: a second Ctrl-C must not break that
_reported = 0  # files replaced and printed already (`changes_reported`)


class Interrupted(BaseException):
    """A KeyboardInterrupt that click must not turn into "Aborted!" (it catches that one)."""


def checkpoint(stage: str) -> None:
    """The named points where a test interrupts a real run: STAGE_ENV holds `<stage>` for
    SIGINT, `<stage>:<signal number>` (9 kills the run there), or `<stage>:import-lock`
    (SIGINT inside the import machinery, in a finalizer: see `_import_lock_left_held`)."""
    wanted = os.environ.get(STAGE_ENV)
    if wanted is None or not wanted.startswith(stage):
        return
    how = wanted[len(stage) + 1 :] if wanted[len(stage) : len(stage) + 1] == ":" else None
    if wanted == stage:
        _send_main_thread(signal.SIGINT)
    elif how == "import-lock":
        _import_lock_left_held()
    elif how is not None and how.isdigit():
        _send_main_thread(int(how))


class _ImportLockCallback:
    """What a Ctrl-C once did (issue 32): it landed in the import machinery's weakref
    callback for a module lock, just after that took the global import lock and before its
    `try`. Raised in a finalizer, the KeyboardInterrupt was swallowed, the lock stayed held
    by the main thread, and the run went on; any other thread's next import waits forever."""

    def __del__(self) -> None:
        _imp.acquire_lock()
        _send_main_thread(signal.SIGINT)  # the handler raises here: the lock is never released
        _imp.release_lock()


def _import_lock_left_held() -> None:
    _ImportLockCallback()  # made and dropped: its finalizer runs now


def _send_main_thread(signum: int) -> None:
    """Send the signal to the main thread, not to the process: a process-directed signal
    goes to any thread that does not block it, and the handler then runs in the main thread
    wherever it happens to be (inside a block that holds signals back, say), which made
    the test points depend on the load."""
    main = threading.main_thread().ident
    if signum == getattr(signal, "SIGKILL", 9) or main is None or not MASKS:
        os.kill(os.getpid(), signum)  # Windows: ends the process (no pthread_kill there)
    else:
        signal.pthread_kill(main, signum)


def note_changed(doing: str, path: str) -> None:
    """Record a file this run replaced ("compressing", "restoring"): the interrupt message
    must say so."""
    _changed.append((doing, path))


def forget_changes() -> None:
    _changed.clear()


def changes_reported() -> None:
    """The files replaced so far were printed, each on its line (a store's pass): an
    interrupt later names only those replaced since, and points up to the rest."""
    global _reported
    _reported += len(_changed)
    _changed.clear()


def reset() -> None:
    global received, _exiting, _reported
    received = False
    _exiting = False
    _reported = 0
    _changed.clear()


def message() -> str:
    """What an interrupted run did, in one line."""
    if not _changed and _reported:
        return f"interrupted; the files replaced are listed above; {SAME}"
    if not _changed:
        return "interrupted; nothing was changed"
    by_doing: dict[str, list[str]] = {}
    for doing, path in _changed:
        by_doing.setdefault(doing, []).append(path)
    if len(_changed) == 1:
        [(doing, path)] = _changed
        return f"interrupted after {doing} {path}; {SAME}"
    # Several files: `listed` names them, one per line, above this one.
    counts = ", ".join(f"{doing} {len(paths)} files" for doing, paths in by_doing.items())
    return f"interrupted after {counts} (listed above); {SAME}"


def listed() -> str:
    """The files an interrupted run replaced, one per line (a run over hundreds would not fit
    in one), printed above `message`; "" when it replaced one or none."""
    if len(_changed) < 2:
        return ""
    return "".join(f"{_DONE.get(doing, doing)} {path}\n" for doing, path in _changed)


SAME = "every file is either the old one or the new one"


# "compressing" a file that was then replaced: it is compressed
_DONE = {"compressing": "compressed", "restoring": "restored", "redacting": "redacted"}


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global received
    received = True
    if not _exiting:
        raise KeyboardInterrupt


def _unraisable(unraisable: Any) -> None:
    # An interrupt swallowed by a finalizer: no traceback; `received` carries it to the edge.
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def install() -> None:
    """Take SIGINT and SIGTERM (the process must be in its main thread)."""
    reset()
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    sys.unraisablehook = _unraisable
    atexit.register(_at_exit)  # the first registered runs last


def imports_done() -> None:
    """Let SIGINT and SIGTERM in (`entry.main` blocks them until the imports are done): one
    that came meanwhile runs the handler now."""
    if MASKS:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back in this block (the main thread's; elsewhere a no-op):
    one that came meanwhile lands when it ends. For an import (a native module's init that
    an interrupt cuts short crashes later), and to start a thread that must never take
    them (a thread inherits the mask it was started with)."""
    if threading.current_thread() is not threading.main_thread() or not MASKS:
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _at_exit() -> None:
    """A signal swallowed while the interpreter shut down (a finalizer run at exit)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # nothing is left to stop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if received:
        report_and_exit()


def report_and_exit() -> None:
    """The one line for an interrupt, then exit 130 (a second Ctrl-C is only recorded)."""
    global _exiting
    while True:
        try:
            _exiting = True
            sys.stderr.write(f"{listed()}gitclaw-compress: {message()}\n")
            sys.stderr.flush()
            break
        except KeyboardInterrupt:  # came before `_exiting` was set: say it once more
            continue
    os._exit(130)
