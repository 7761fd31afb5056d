"""Atomic replacement of a file: a temp file, fsync, a guarded rename, fsync the folder.

Temp files live in `.git/gitclaw-compress/tmp/` when a rename from that folder to the
target's stays in one filesystem and one mount (so it is atomic, and `git add -A` never sees
them); otherwise beside the target, under a hidden name the tool lists in
`.git/info/exclude` (no agent takes it for a session: none ends in `.jsonl`).

The rename never happens under a live writer. On Linux a read lease (`F_SETLEASE`) is
taken on the target first: it fails while any process has the file open for writing, and
while it is held an `open` for writing blocks until it is released. The last check that
the file did not change, and the rename, happen under the lease. If a writer's `open`
arrived in that window anyway (it was resolved to the old file before the rename), the old
file is put back and nothing is changed. Where leases are not available (macOS, Windows,
another owner's file, NFS), the operating system is asked which processes hold the file
open (store/live.py; the window between that question and the rename then stays open).
Where neither can be had, there is no check here: the callers go by the agents' facts
(see docs/integrity.md). On Windows a file that another process holds open cannot be
replaced: the rename fails, and the file is left as it was, in use.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import signal
import stat as stat_module
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from gitclaw_compress import interrupts
from gitclaw_compress.errors import GitClawError, shell_line

TEMP_PREFIX = ".gitclaw-compress-tmp-"
F_SETLEASE = 1024  # Linux values (not every build's fcntl names them)
F_GETLEASE = 1025
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows, where a symlink is followed
POSIX_SIGNALS = hasattr(signal, "pthread_sigmask")  # a signal mask: not on Windows
# Errors of a full or read-only disk: one line, never a traceback.
DISK_ERRORS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EFBIG}

# Test injection point: called after the last check and just before the rename.
before_rename: Callable[[Path], None] | None = None


class FileInUseError(GitClawError):
    """Another process has the file open for writing (or wrote to it during the run)."""


def _temp_prefix(target: Path) -> str:
    # The absolute path's hash keeps two sessions with the same name apart in one folder.
    import hashlib  # a no-op run writes no file: keep it out of start-up

    digest = hashlib.sha1(str(target.absolute()).encode()).hexdigest()[:12]
    return f"{TEMP_PREFIX}{target.name}.{digest}."


def _legacy_temp_prefix(target: Path) -> str:
    return f"{TEMP_PREFIX}{target.name}."


def temp_folder(target: Path, git_dir: Path | None) -> Path:
    """Where temp files for `target` go: the git dir's tmp folder if the rename can be atomic
    from there (the same filesystem and the same mount: a bind mount of the store keeps its
    device number, yet a rename across it fails), else beside the target."""
    folder = target.absolute().parent
    if git_dir is None:
        return folder
    tmp = git_dir / "gitclaw-compress" / "tmp"
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        if tmp.stat().st_dev == folder.stat().st_dev and not _across_mounts(tmp, folder):
            return tmp
    except OSError:
        pass
    _exclude_temp_names(git_dir)
    return folder


def _across_mounts(source: Path, destination: Path) -> bool:
    """Whether a rename from `source` to `destination` crosses a mount (EXDEV). Asked with a
    name that exists in neither folder: Linux compares the two mounts before it looks the
    name up, so this changes nothing; a system that looks first answers ENOENT, and the
    rename itself then falls back (AtomicFile._rename)."""
    name = f"{TEMP_PREFIX}probe.{os.getpid()}"
    try:
        os.rename(source / name, destination / name)
    except OSError as error:
        return error.errno == errno.EXDEV
    with contextlib.suppress(OSError):  # it existed after all: put it back
        os.rename(destination / name, source / name)
    return False


def _exclude_temp_names(git_dir: Path) -> None:
    """List the temp names in .git/info/exclude, for a work tree on another filesystem."""
    exclude = git_dir / "info" / "exclude"
    pattern = TEMP_PREFIX + "*"
    with contextlib.suppress(OSError):
        if exclude.exists() and pattern in exclude.read_text(errors="replace").splitlines():
            return
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a") as handle:
            handle.write(f"# temp files of gitclaw-compress runs\n{pattern}\n")


def clean_stale_temps(target: Path, git_dir: Path | None = None) -> None:
    """Temp files left by a killed run on this file (the caller holds the file's lock)."""
    places = [(target.absolute().parent, _legacy_temp_prefix(target))]
    if git_dir is not None:
        places.append((git_dir / "gitclaw-compress" / "tmp", _temp_prefix(target)))
    for folder, prefix in places:
        for stale in folder.glob(glob.escape(prefix) + "*"):
            with contextlib.suppress(OSError):
                stale.unlink()


def fsync_directory(path: Path) -> None:
    """Make a rename in `path` durable (Windows cannot open a folder: its renames are
    written through by the filesystem)."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def disk_error(error: OSError, target: Path, doing: str) -> GitClawError:
    """One line for an OSError while writing: the file, what failed, and the reason."""
    reason = error.strerror or type(error).__name__
    if error.errno in DISK_ERRORS:
        reason = {
            errno.ENOSPC: "no space left on the device",
            errno.EROFS: "the filesystem is read-only",
            errno.EDQUOT: "disk quota exceeded",
            errno.EFBIG: "file too large",
        }[error.errno]
    return WriteError(f"{target}: {doing} failed: {reason}; nothing was changed")


class WriteError(GitClawError):
    """Writing failed (a full or read-only disk, a denied folder): not the session's fault."""


def writers_of(path: Path) -> list[int] | None:
    """Ids of other processes that hold `path` open for writing (store/live.py); None
    where the open files cannot be listed."""
    from gitclaw_compress.store import live  # not at start-up: a no-op run renames nothing

    return live.writers(path)


def in_use_error(rel: str, pids: list[int] | None = None) -> FileInUseError:
    who = f" (process {', '.join(map(str, pids))})" if pids else ""
    return FileInUseError(f"{rel}: in use by another process{who}; nothing was changed")


@contextlib.contextmanager
def _no_writers(target: Path, rel: str) -> Iterator[Callable[[], bool]]:
    """Hold a read lease on `target`; yields a check that the lease was not broken since."""
    fd = os.open(target, os.O_RDONLY | O_NOFOLLOW)
    leased = False
    previous: signal._HANDLER = None
    main_thread = threading.current_thread() is threading.main_thread()
    from gitclaw_compress.store import live

    sigio: int | None = getattr(signal, "SIGIO", None)  # leases are Linux's alone
    use_lease = main_thread and sigio is not None and live.check().lease
    try:
        if use_lease and sigio is not None:
            import fcntl  # checked by live.check: here only where it exists

            # A lease break is announced by SIGIO, whose default action ends the process.
            previous = signal.signal(sigio, signal.SIG_IGN)
            try:
                fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
                leased = True
            except OSError as error:
                if error.errno == errno.EAGAIN:
                    raise in_use_error(rel, writers_of(target)) from None
        if not leased:  # no lease here (filesystem, owner, platform): ask the OS instead
            pids = writers_of(target)
            if pids:
                raise in_use_error(rel, pids)

        def intact() -> bool:
            if not leased:
                return True
            import fcntl

            return bool(fcntl.fcntl(fd, F_GETLEASE) == fcntl.F_RDLCK)

        yield intact
    finally:
        if leased:
            import fcntl

            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
        os.close(fd)
        if use_lease and sigio is not None:
            signal.signal(sigio, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done, so that it runs whole or not at all.

    One that came meanwhile is taken here and its handler runs at the end of the block, so
    the KeyboardInterrupt is raised right here (deterministically), not wherever Python
    happens to be once the signal is unblocked (a finalizer can swallow it there).
    """
    deferred = {signal.SIGINT, signal.SIGTERM}
    if threading.current_thread() is not threading.main_thread() or not POSIX_SIGNALS:
        yield  # Windows has no signal mask: Ctrl-C there may land inside the block
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, deferred)
    try:
        yield
    finally:
        came = sorted((signal.sigpending() & deferred) - old)  # an outer block keeps the rest
        for signum in came:
            signal.sigtimedwait([signum], 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        for signum in came:
            handler = signal.getsignal(signum)
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


def _stat_key(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def refuse_read_only(target: Path) -> None:
    """A file whose owner may not write it (`chmod 444`) was made read-only on purpose:
    never replaced behind the user's back (a rename would not ask). One line, exit 3."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return
    if stat_module.S_ISREG(mode) and not mode & stat_module.S_IWUSR:
        raise GitClawError(
            f"{target}: read-only (mode {mode & 0o777:03o}); gitclaw-compress does not rewrite "
            f"a file made read-only: `{shell_line('chmod', 'u+w', str(target))}` first; "
            "nothing was changed"
        )


class AtomicFile:
    """Write the new content with `write`, `seal()` it, then `replace()` the target.

    Until `replace()`, the target is untouched; a crash leaves the old file and a stale temp
    file that the next run on the same target removes.
    """

    def __init__(
        self,
        target: Path,
        mode_from: Path | None = None,
        git_dir: Path | None = None,
        doing: str = "writing",
    ) -> None:
        self.target = target
        refuse_read_only(target)
        self.doing = doing  # what an interrupt message says was done to the target
        folder = temp_folder(target, git_dir)
        self._git_dir = git_dir
        try:
            import tempfile  # a no-op run writes no file: keep it out of start-up

            fd, name = tempfile.mkstemp(dir=folder, prefix=_temp_prefix(target))
        except OSError as error:
            raise disk_error(error, target, "creating a temp file") from None
        self.temp = Path(name)
        self.replaced = False  # the rename happened (a late interrupt must not deny it)
        self.handle: IO[bytes] = os.fdopen(fd, "wb")
        source = mode_from if mode_from is not None else target
        found = source.stat() if source.exists() else None
        self._mode = found.st_mode & 0o7777 if found is not None else None
        self._group = found.st_gid if found is not None else None

    def write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except OSError as error:
            raise disk_error(error, self.target, "writing") from None

    def seal(self) -> None:
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            if (
                self._group is not None
                and hasattr(os, "chown")  # Windows has no groups to keep
                and os.stat(self.temp).st_gid != self._group
            ):
                # The file keeps its group (a shared checkout's), or is not replaced.
                try:
                    os.chown(self.temp, -1, self._group)
                except PermissionError:
                    raise GitClawError(
                        f"{self.target}: its group (gid {self._group}) cannot be kept by this "
                        "user, so it is not rewritten; nothing was changed"
                    ) from None
            if self._mode is not None:
                os.chmod(self.temp, self._mode)
        except OSError as error:
            raise disk_error(error, self.target, "writing") from None

    def replace(self, rel: str | None = None, expected: os.stat_result | None = None) -> None:
        """Rename the temp file over the target, unless another process writes to it.

        `expected`: the target's stat when it was read; a different one means it changed
        (FileInUseError, nothing is changed).
        """
        name = rel if rel is not None else str(self.target)
        if not self.target.exists():
            with signals_deferred():
                self._rename()
                self._replaced(name)
            return
        backup = self.temp.with_name(self.temp.name + ".old")
        with _no_writers(self.target, name) as lease_intact:
            if expected is not None and _stat_key(self.target.stat()) != _stat_key(expected):
                raise FileInUseError(
                    f"{name}: changed while it was being compressed (another process "
                    "writes to it); nothing was changed"
                )
            try:
                os.link(self.target, backup)  # the way back if a writer slips in
            except OSError:
                backup = None  # type: ignore[assignment]
            try:
                with signals_deferred():
                    if before_rename is not None:
                        before_rename(self.target)
                    self._rename()
                    if backup is not None and not lease_intact():
                        # A writer opened the old file during the rename: put it back.
                        os.replace(backup, self.target)
                        fsync_directory(self.target.absolute().parent)
                        raise in_use_error(name)
                    self._replaced(name)
            finally:
                if backup is not None:
                    backup.unlink(missing_ok=True)

    def _replaced(self, name: str) -> None:
        self.replaced = True
        interrupts.note_changed(self.doing, name)
        interrupts.checkpoint("renamed")  # a test's SIGINT: held back until the block ends

    def _rename(self) -> None:
        try:
            try:
                os.replace(self.temp, self.target)
            except OSError as error:
                if error.errno != errno.EXDEV or self.temp.parent == self.target.absolute().parent:
                    raise
                # Another mount than the temp folder's, found only now.
                self.temp = _move_beside(self.temp, self.target)
                os.replace(self.temp, self.target)
            fsync_directory(self.target.absolute().parent)
        except PermissionError as error:
            if os.name == "nt":  # a file another process holds open cannot be replaced
                raise FileInUseError(
                    f"{self.target}: in use by another process (Windows replaces no file "
                    "that another process holds open); nothing was changed"
                ) from None
            raise disk_error(error, self.target, "replacing the file") from None
        except OSError as error:
            raise disk_error(error, self.target, "replacing the file") from None

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()
        self.temp.unlink(missing_ok=True)


def _move_beside(temp: Path, target: Path) -> Path:
    """Copy the sealed temp file beside the target (the rename must stay in one mount),
    with its mode and group, drop the first one and return the copy."""
    import shutil
    import tempfile

    fd, name = tempfile.mkstemp(dir=target.absolute().parent, prefix=_temp_prefix(target))
    beside = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle, open(temp, "rb") as source:
            shutil.copyfileobj(source, handle, 1 << 20)
            handle.flush()
            os.fsync(handle.fileno())
        shutil.copystat(temp, beside)
        found = os.stat(temp)
        if os.stat(beside).st_gid != found.st_gid:
            os.chown(beside, -1, found.st_gid)
    except BaseException:
        beside.unlink(missing_ok=True)
        raise
    temp.unlink(missing_ok=True)
    return beside


def is_special(path: Path) -> bool:
    """A device, pipe or socket: written as a stream, never replaced by a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat_module.S_ISREG(mode) and not stat_module.S_ISDIR(mode)
