"""`Repository`: the work tree that holds the sessions, its git dir and its object store."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.fileio import disk_error
from gitclaw_compress.store.git import rev_parse_in, run_git
from gitclaw_compress.store.locks import try_lock, unlock
from gitclaw_compress.store.object_store import ObjectStore


class LockedError(GitClawError):
    """Another gitclaw-compress run holds the lock: nothing was changed."""


class NotARepositoryError(GitClawError):
    """The path is in no git work tree (it may still be in an agent's store)."""


class Repository(ObjectStore):
    """A place where sessions live: the work tree that holds them, and its git object store.

    Two kinds: a repository (its own `.git`, HEAD and index, the archive ref pushed to a
    remote) and an agent's store (`store/agent_store.py`: a folder the agent owns, with an
    archive outside it that is never pushed unless asked). The use cases see one interface;
    the few answers that differ are the methods below the constructor. Its git object
    store and the archive's listings are `ObjectStore`'s (store/object_store.py).
    """

    kind = "repository"
    sessions_travel = True  # the session files go into commits and to remotes
    keeps_times = False  # a rewritten session keeps its mtime (git ignores it)

    def __init__(self, start: Path) -> None:
        probe = start if start.is_dir() else start.parent
        if not probe.exists():
            raise GitClawError(f"{start}: no such file or directory")
        questions = ("--is-bare-repository", "--is-inside-git-dir", "--git-common-dir")
        # One call in a work tree; --show-toplevel fails in a bare repository and inside
        # .git, which the two-step path below then tells apart.
        both = run_git(probe, "rev-parse", *questions, "--show-toplevel")
        answers = both.stdout.decode().splitlines() if both.returncode == 0 else []
        if len(answers) == 4 and answers[:2] == ["false", "false"]:
            self._settle(probe, Path(answers[3]), Path(answers[2]))
            return
        where = rev_parse_in(probe, *questions)
        if where is None:
            raise NotARepositoryError(
                f"{start}: not inside a git repository nor an agent's store; gitclaw-compress "
                "keeps what it drops in git (run `git init` first; for the agents' own "
                "sessions: gitclaw-compress stores); nothing was changed"
            )
        if where[0] == "true":
            raise GitClawError(
                f"{start}: this is a bare git repository; run gitclaw-compress in a clone "
                "with a work tree; nothing was changed"
            )
        top = rev_parse_in(probe, "--show-toplevel")
        if where[1] == "true" or not top:
            raise GitClawError(
                f"{start}: inside the .git directory, not a work tree; run gitclaw-compress "
                "from the repository's work tree; nothing was changed"
            )
        self._settle(probe, Path(top[0]), Path(where[2]))

    def _settle(self, probe: Path, top: Path, common: Path) -> None:
        common = common if common.is_absolute() else probe / common
        self._open_objects(top.resolve(), common.resolve())

    @property
    def config_root(self) -> Path:
        """The folder whose compression.json applies (beside an agent folder's own)."""
        return self.root

    def session_ref(self, rel: str) -> str:
        """How stubs name a session for `show`: repository-relative, from any folder."""
        return rel

    def session_globs(self, configured: list[str]) -> list[str]:
        """Where session files live: `sessions.globs` in a repository (a store: its agent's)."""
        return configured

    # What discovery with no path says of the sessions it takes; with `has_history` it
    # falls back to mapping files and the newest session when none changed.
    changed_means = "changed against HEAD"
    has_history = True

    def at_rest(
        self,
        paths: Iterable[Path],
        quiet_minutes: int,
        *,
        now: float | None = None,
        writing: set[tuple[int, int]] | None = None,
    ) -> tuple[list[Path], list[Path], list[Path]]:
        """(at rest, held open for writing, written in the last `quiet_minutes`) of the
        sessions: in a repository every session the agent changed is taken (compress itself
        leaves one open for writing alone, and its commit is the agent's run)."""
        return list(paths), [], []

    def live_agent_may_hold(self, path: Path) -> bool:
        """Whether a running agent may be writing `path` where no check of open files can
        be made (an agent's store knows; a repository's sessions are the finished run's)."""
        return False

    def relative(self, path: Path) -> str:
        """The repo-relative path of a file, with forward slashes; outside is an error."""
        resolved = path.resolve()
        try:
            return resolved.relative_to(self.root).as_posix()
        except ValueError:
            raise GitClawError(
                f"{path}: outside the git repository at {self.root}; nothing was changed"
            ) from None

    @contextlib.contextmanager
    def lock(self, name: str, what: str, reading: bool = False) -> Iterator[None]:
        """An exclusive lock in the git dir; another run holding it is an error, not a wait.

        A `reading` run (restore to another file) also works in a read-only git dir: no
        run can write there then, so it takes the lock only if the lock file exists.
        """
        folder = self.common_dir / "gitclaw-compress" / "locks"
        import hashlib  # not at start-up: a no-op run takes no lock

        lock_file = folder / f"{hashlib.sha1(name.encode()).hexdigest()[:16]}.lock"
        handle: IO[bytes]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle = open(lock_file, "a+b")  # noqa: SIM115 (closed below)
        except OSError as error:
            if not (reading and error.errno in (errno.EACCES, errno.EPERM, errno.EROFS)):
                raise disk_error(error, folder, f"locking {what}") from None
            try:
                handle = open(lock_file, "rb")  # noqa: SIM115 (closed below)
            except FileNotFoundError:
                yield
                return
            except OSError:
                raise disk_error(error, folder, f"locking {what}") from None
        with handle:
            if not try_lock(handle):
                raise LockedError(
                    f"{what}: locked by another gitclaw-compress run; try again when it "
                    "finishes; nothing was changed"
                )
            try:
                yield
            finally:
                unlock(handle)
