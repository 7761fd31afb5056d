"""`Repository`: the work tree that holds the sessions, its git dir and its object store."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.archive_layout import REDACTIONS, FileRecord, record_folder
from gitclaw_compress.store.fileio import disk_error
from gitclaw_compress.store.git import git, git_failure, rev_parse_in, run_git
from gitclaw_compress.store.locks import try_lock, unlock
from gitclaw_compress.store.objects import ObjectReader


class LockedError(GitClawError):
    """Another gitclaw-compress run holds the lock: nothing was changed."""


class NotARepositoryError(GitClawError):
    """The path is in no git work tree (it may still be in an agent's store)."""


@dataclass(frozen=True, slots=True)
class TreeEntry:
    mode: str
    kind: str  # blob | tree | commit
    oid: str
    name: str


class Repository:
    """A place where sessions live: the work tree that holds them, and its git object store.

    Two kinds: a repository (its own `.git`, HEAD and index, the archive ref pushed to a
    remote) and an agent's store (`store/agent_store.py`: a folder the agent owns, with an
    archive outside it that is never pushed unless asked). The use cases see one interface;
    the few answers that differ are the methods below the constructor.
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
        self.root = top.resolve()
        self.common_dir = (common if common.is_absolute() else probe / common).resolve()
        self._reader: ObjectReader | None = None
        self._records: dict[tuple[str, str], list[FileRecord]] = {}  # (archive tip, key)
        self._first_records: dict[str, dict[str, frozenset[str]]] = {}  # archive tip -> ...
        self._redactions: dict[str, dict[str, list[tuple[str, str]]]] = {}  # archive tip -> ...

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

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        return git(self.root, *args, input=input, check=check)

    @property
    def git_dir(self) -> Path:
        return self.common_dir

    def rev_parse(self, name: str) -> str | None:
        done = run_git(self.root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
        if done.returncode != 0 and done.stderr.strip():  # a failing git, not a missing ref
            raise git_failure("rev-parse", done.stderr, done.returncode)
        return done.stdout.decode().strip() or None

    def has_remote(self, name: str) -> bool:
        return bool(name) and self.git("remote", "get-url", name, check=False).strip() != b""

    def object_info(self, name: str) -> tuple[str, int] | None:
        """The id and size of an object such as `HEAD:path`, or None if there is none."""
        out = self.git("cat-file", "--batch-check", input=name.encode() + b"\n").split()
        if len(out) != 3 or not out[2].isdigit():  # "<name> missing"
            return None
        return out[0].decode(), int(out[2])

    def object_format(self) -> str:
        known: str | None = self.__dict__.get("_object_format")
        if known is None:  # asked once per file planned: it never changes
            out = self.git("rev-parse", "--show-object-format", check=False).decode().strip()
            known = self.__dict__["_object_format"] = out or "sha1"
        return known

    @property
    def reader(self) -> ObjectReader:
        if self._reader is None:
            self._reader = ObjectReader(self.root)
        return self._reader

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the long-lived reader (it also stops when the process ends)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def ls_tree(self, tree: str, *paths: str, recursive: bool = False) -> list[TreeEntry]:
        """The entries of a tree (`<rev>:<folder>`, or a commit with `paths`): the one
        `ls-tree` parser; a folder that does not exist gives no entries."""
        args = ["ls-tree", "-z", *(["-r"] if recursive else []), tree]
        done = run_git(self.root, *args, *(["--", *paths] if paths else []))
        if done.returncode != 0:
            if b"Not a valid object name" in done.stderr:
                return []
            raise git_failure("ls-tree", done.stderr, done.returncode)
        entries = []
        for record in done.stdout.split(b"\0"):
            if record:
                meta, name = record.split(b"\t", 1)
                mode, kind, oid = meta.decode().split(" ")
                entries.append(TreeEntry(mode, kind, oid, name.decode("utf-8", "replace")))
        return entries

    def file_records(self, ref: str, key: str) -> list[FileRecord]:
        """What compress wrote for the session whose header hashes to `key` (see FileRecord).

        Remembered per archive commit: copies of one session share a header, and listing
        its records once per copy made a check of N copies cost N x N."""
        tip = self.rev_parse(ref)
        if tip is None:
            return []
        known = self._records.get((tip, key))
        if known is None:
            entries = self.ls_tree(f"{tip}:{record_folder(key)}")  # none: no record yet
            known = [r for e in entries if (r := FileRecord.parse(e.name)) is not None]
            self._records[(tip, key)] = known
        return list(known)

    def redaction_entries(self, ref: str) -> dict[str, list[tuple[str, str]]]:
        """The notes `redact` left on the archive ref (store/redactions.py), as header key ->
        [(file name, blob id)]: one listing per archive tip, however many files are checked."""
        tip = self.rev_parse(ref)
        if tip is None:
            return {}
        known = self._redactions.get(tip)
        if known is None:
            known = {}
            for entry in self.ls_tree(f"{tip}:{REDACTIONS}", recursive=True):
                folder, _, name = entry.name.rpartition("/")
                high, _, low = folder.partition("/")
                if entry.kind == "blob" and len(high) == 2 and low and "/" not in low:
                    known.setdefault(high + low, []).append((name, entry.oid))
            self._redactions[tip] = known
        return known

    def payload_sessions(self, ref: str) -> dict[str, frozenset[str]]:
        """For each payload on the archive ref, the sessions (header keys) whose records the
        archive commit that first added it wrote: compress archives a session's new
        payloads and records the session in one commit. Empty for a payload first added by a
        commit that recorded no session (a release before records). One walk of the
        archive's history, remembered per archive tip."""
        tip = self.rev_parse(ref)
        if tip is None:
            return {}
        known = self._first_records.get(tip)
        if known is not None:
            return known
        out = self.git(
            "log", "--reverse", "--root", "--raw", "--no-abbrev", "--no-renames",
            "--diff-filter=A", "--format=%x00", tip,
        )  # fmt: skip
        known = {}
        for commit in out.decode("utf-8", "replace").split("\0")[1:]:
            payloads, keys = [], set()
            for row in commit.splitlines():
                _, _, path = row.partition("\t")
                parts = path.split("/")
                if parts[0] == "blobs" and len(parts) == 3:
                    payloads.append(parts[1] + parts[2])
                elif parts[0] == "files" and len(parts) == 4:
                    keys.add(parts[1] + parts[2])
            for oid in payloads:
                known.setdefault(oid, frozenset(keys))
        self._first_records[tip] = known
        return known

    def leftovers(self) -> list[Path]:
        """Temp packs and crash reports that killed `git fast-import` runs leave behind."""
        found = sorted((self.common_dir / "objects" / "pack").glob("tmp_pack_*"))
        return found + sorted(self.common_dir.glob("fast_import_crash_*"))

    def archive_oids(self, ref: str) -> set[str]:
        """Every payload and intact blob id reachable from the archive ref (empty if there is
        no ref yet)."""
        if self.rev_parse(ref) is None:
            return set()
        return {entry.oid for entry in self.ls_tree(ref, "blobs", "intact", recursive=True)}

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
