"""The git storage layer: dropped payloads live as blobs reachable from an archive ref.

Writes go through one `git fast-import` process per run (never a process per object), which
adds a commit on top of the archive ref whose tree holds every payload at
`blobs/<oid[:2]>/<oid[2:]>`, and every committed or staged version of a session that v2
markers read their original lines from at `intact/<oid[:2]>/<oid[2:]>/<file name>` (a tree
entry that names a blob git already has: no new bytes). Being reachable from a ref, both survive
`git gc` and travel with `git push origin 'refs/gitclaw/*:refs/gitclaw/*'`. Reads go through
one `git cat-file --batch` process.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import subprocess
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.fileio import disk_error

DEFAULT_REF = "refs/gitclaw/archive"
ARCHIVE_IDENTITY = "gitclaw-compress <gitclaw-compress@localhost>"
# Objects and the ref must be on disk before the session file is replaced.
DURABLE = ("-c", "core.fsync=committed", "-c", "core.fsyncMethod=fsync")
# Fast zlib and no delta search while writing (about 3x faster); `git gc` deltifies later.
FAST_PACK = ("-c", "pack.compression=1")
NO_DELTA = "--big-file-threshold=1k"
F_SETPIPE_SZ = 1031  # Linux fcntl; not in Python's fcntl module before 3.10 on all builds


def blob_path(oid: str) -> str:
    return f"blobs/{oid[:2]}/{oid[2:]}"


def intact_path(oid: str, name: str) -> str:
    """Where the archive tree references a session version: ends with the session's file
    name, because `git repack` pairs delta candidates by the end of the path they were
    reached by; a blob reached first through the archive must still sit next to the
    other versions of its session, or the full clone stores it whole."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)
    return f"intact/{oid[:2]}/{oid[2:]}/{safe or 'session'}"


def record_folder(key: str) -> str:
    return f"files/{key[:2]}/{key[2:]}"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What one compress run wrote for one session: the sha256 and size of the whole file it
    wrote, and its number of lines. Kept as an empty file named `<sha256>-<size>-<lines>`
    under `files/<key[:2]>/<key[2:]>/` in the archive tree, where the key is the sha256 of
    the session's header line (line 1 never changes, so a renamed session keeps its key)."""

    sha256: str
    size: int
    lines: int

    def name(self) -> str:
        return f"{self.sha256}-{self.size}-{self.lines}"

    @classmethod
    def parse(cls, name: str) -> FileRecord | None:
        parts = name.split("-")
        if len(parts) != 3 or len(parts[0]) != 64 or not (parts[1] + parts[2]).isdigit():
            return None
        return cls(parts[0], int(parts[1]), int(parts[2]))


class GitFailureError(GitClawError):
    """A git child process failed or died: the command could not do its job (exit 3)."""


def git_failure(command: str, stderr: bytes | str, code: int, where: str = "") -> GitClawError:
    """One line for a git child that failed: the command, its last stderr line, no traceback."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines:
        detail = lines[-1]
    elif code < 0:
        detail = f"killed by signal {-code}"
    else:
        detail = f"exit code {code}"
    return GitFailureError(f"git {command} failed{where}: {detail}")


def _run_git(
    root: Path, *args: str, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *args], cwd=root, input=input, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise GitClawError("git is not installed or not on PATH") from None


def _git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    done = _run_git(root, *args, input=input)
    if check and done.returncode != 0:
        raise git_failure(args[0], done.stderr, done.returncode, f" in {root}")
    return done.stdout


def _rev_parse(cwd: Path, *args: str) -> list[str] | None:
    done = _run_git(cwd, "rev-parse", *args)
    if done.returncode == 0:
        return done.stdout.decode().splitlines()
    if any(sign in done.stderr for sign in (b"not a git repository", b"work tree")):
        return None  # the caller words these for the user
    if not done.stderr.strip():
        return None
    raise git_failure("rev-parse", done.stderr, done.returncode, f" in {cwd}")


class Repository:
    """The work tree that holds the sessions, and its git object store."""

    def __init__(self, start: Path) -> None:
        probe = start if start.is_dir() else start.parent
        if not probe.exists():
            raise GitClawError(f"{start}: no such file or directory")
        questions = ("--is-bare-repository", "--is-inside-git-dir", "--git-common-dir")
        # One call in a work tree; --show-toplevel fails in a bare repository and inside
        # .git, which the two-step path below then tells apart.
        both = _run_git(probe, "rev-parse", *questions, "--show-toplevel")
        answers = both.stdout.decode().splitlines() if both.returncode == 0 else []
        if len(answers) == 4 and answers[:2] == ["false", "false"]:
            self._settle(probe, Path(answers[3]), Path(answers[2]))
            return
        where = _rev_parse(probe, *questions)
        if where is None:
            raise GitClawError(
                f"{start}: not inside a git repository; gitclaw-compress keeps what it drops "
                "in git (run `git init` first); nothing was changed"
            )
        if where[0] == "true":
            raise GitClawError(
                f"{start}: this is a bare git repository; run gitclaw-compress in a clone "
                "with a work tree; nothing was changed"
            )
        top = _rev_parse(probe, "--show-toplevel")
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
        return _git(self.root, *args, input=input, check=check)

    @property
    def git_dir(self) -> Path:
        return self.common_dir

    def rev_parse(self, name: str) -> str | None:
        done = _run_git(self.root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
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
        out = self.git("rev-parse", "--show-object-format", check=False).decode().strip()
        return out or "sha1"

    @property
    def reader(self) -> ObjectReader:
        if self._reader is None:
            self._reader = ObjectReader(self.root)
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def file_records(self, ref: str, key: str) -> list[FileRecord]:
        """What compress wrote for the session whose header hashes to `key` (see FileRecord)."""
        if self.rev_parse(ref) is None:
            return []
        done = _run_git(self.root, "ls-tree", "-z", "--name-only", f"{ref}:{record_folder(key)}")
        if done.returncode != 0:
            if b"Not a valid object name" in done.stderr:
                return []  # no record for this session yet
            raise git_failure("ls-tree", done.stderr, done.returncode)
        records = []
        for name in done.stdout.split(b"\0"):
            record = FileRecord.parse(name.decode("utf-8", "replace"))
            if record is not None:
                records.append(record)
        return records

    def leftovers(self) -> list[Path]:
        """Temp packs and crash reports that killed `git fast-import` runs leave behind."""
        found = sorted((self.common_dir / "objects" / "pack").glob("tmp_pack_*"))
        return found + sorted(self.common_dir.glob("fast_import_crash_*"))

    def archive_oids(self, ref: str) -> set[str]:
        """Every payload and intact blob id reachable from the archive ref (empty if there is
        no ref yet)."""
        if self.rev_parse(ref) is None:
            return set()
        out = self.git("ls-tree", "-r", "-z", ref, "--", "blobs", "intact")
        oids = set()
        for record in out.split(b"\0"):
            if record:
                oids.add(record.split(b"\t", 1)[0].split(b" ")[2].decode())
        return oids

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
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise GitClawError(
                    f"{what}: locked by another gitclaw-compress run; try again when it "
                    "finishes; nothing was changed"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


# What `git cat-file blob` says about an object that is not there (git 2.39; older releases).
MISSING_OBJECT = (b"bad file", b"not a valid object")


class BlobLineReader:
    """The lines of one blob, read forward through its own `git cat-file blob`, so that a
    restore reads each committed version once without holding it in memory."""

    def __init__(self, root: Path, oid: str) -> None:
        self.oid = oid
        self.read = 0  # lines read so far
        self._missing: bool | None = None  # known once the stream ended
        try:
            self._process = subprocess.Popen(
                ["git", "cat-file", "blob", oid],
                cwd=root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=1 << 20,
                process_group=0,  # Ctrl-C interrupts us, not git mid-stream
            )
        except FileNotFoundError:
            raise GitClawError("git is not installed or not on PATH") from None
        self._stop = weakref.finalize(self, _stop_process, self._process)

    def line(self, number: int) -> bytes | None:
        """Line `number`, which must come after the lines read so far: b"" past the end of
        the blob, None if the blob is not in the object store."""
        if number <= self.read:
            raise ValueError(f"line {number} of {self.oid} was read already")
        assert self._process.stdout is not None
        data = b""
        while self.read < number:
            data = self._process.stdout.readline()
            if not data:
                return self._ended()
            self.read += 1
        return data[:-1] if data.endswith(b"\n") else data

    def _ended(self) -> bytes | None:
        assert self._process.stderr is not None
        if self._missing is not None:  # asked again after the end
            return None if self._missing else b""
        code = self._process.wait()
        self._missing = False
        if code == 0:
            return b""
        stderr = self._process.stderr.read()
        if code == 128 and any(sign in stderr.lower() for sign in MISSING_OBJECT):
            self._missing = True
            return None
        raise GitFailureError(f"reading object {self.oid}: {git_failure('cat-file', stderr, code)}")

    def close(self) -> None:
        self._stop()


class BlobLinePool:
    """Lines of a few blobs at once, each read forward by its own `BlobLineReader`; a line
    before the last one read reads that blob again. At most `held` git processes run."""

    def __init__(self, root: Path, held: int = 2) -> None:
        self._root = root
        self._held = held
        self._readers: dict[str, BlobLineReader] = {}  # least recently used first

    def line(self, oid: str, number: int) -> bytes | None:
        """Line `number` of blob `oid`: b"" past its end, None if the blob is not here (a
        later call reads it afresh, after a fetch may have brought it)."""
        reader = self._readers.pop(oid, None)
        if reader is not None and reader.read >= number:
            reader.close()
            reader = None
        if reader is None:
            while len(self._readers) >= self._held:
                self._readers.pop(next(iter(self._readers))).close()
            reader = BlobLineReader(self._root, oid)
        data = reader.line(number)
        if data is None:
            reader.close()
            return None
        self._readers[oid] = reader
        return data


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


class ObjectReader:
    """Reads objects through one long-lived `git cat-file --batch`."""

    def __init__(self, root: Path) -> None:
        # stderr goes to a file: a pipe nobody reads could fill up and stall git.
        import tempfile  # not at start-up: a no-op run never starts this reader

        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as git)
        try:
            self._process = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                process_group=0,  # Ctrl-C interrupts us, not our reader mid-answer
            )
        except FileNotFoundError:
            raise GitClawError("git is not installed or not on PATH") from None
        # A reader nobody closed ends with its owner: an unreaped Popen keeps its stdin pipe
        # open (subprocess keeps it alive to reap it later), so git would wait for ever.
        self._closer = weakref.finalize(self, _end_batch, self._process, self._errors)

    def _died(self, name: str) -> GitClawError:
        code = self._process.poll()
        if code is None:
            self._process.kill()
            code = self._process.wait()
        self._errors.seek(0)
        error = git_failure("cat-file --batch", self._errors.read(), code)
        return GitFailureError(f"reading object {name}: {error}")

    def get(self, name: str) -> bytes | None:
        """The content of an object (an oid or `<rev>:<path>`), or None if it is missing."""
        assert self._process.stdin is not None and self._process.stdout is not None
        if "\n" in name or not name:
            return None
        try:
            self._process.stdin.write(name.encode() + b"\n")
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._died(name) from None
        header = self._process.stdout.readline()
        if not header:
            raise self._died(name)
        if header.rstrip(b"\n").endswith((b" missing", b" ambiguous")):
            return None
        parts = header.split()
        if len(parts) != 3 or not parts[2].isdigit():
            raise self._died(name)
        size = int(parts[2])
        data = self._read_exactly(self._process.stdout, size)
        if data is None or self._process.stdout.read(1) != b"\n":  # the newline after it
            raise self._died(name)
        return data

    @staticmethod
    def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
        chunks = []
        remaining = size
        while remaining:
            chunk = stream.read(remaining)
            if not chunk:
                return None
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._closer()


def _end_batch(process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    """End a `git cat-file --batch`: its stdin closed, it exits, and it is reaped."""
    if process.stdin:
        with contextlib.suppress(OSError):
            process.stdin.close()
    process.wait()
    if process.stdout:
        process.stdout.close()
    errors.close()


class ArchiveWriter:
    """Streams payload blobs into `git fast-import`, then commits them, and the intact blobs
    that v2 markers reference, onto the archive ref.

    Nothing is reachable until `commit`; `abort` leaves the ref as it was.
    """

    def __init__(self, repo: Repository, ref: str = DEFAULT_REF) -> None:
        self.repo = repo
        self.ref = ref
        self._process: subprocess.Popen[bytes] | None = None
        self._marks: dict[str, int] = {}
        self._references: set[tuple[str, str]] = set()  # blobs git has, and their file name
        self._records: list[str] = []
        self._errors: IO[bytes] | None = None
        self.bytes_written = 0

    @property
    def count(self) -> int:
        return len(self._marks) + len(self._references)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            import tempfile  # not at start-up: a no-op run never starts fast-import

            self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as git)
            try:
                self._process = subprocess.Popen(
                    ["git", *DURABLE, *FAST_PACK, "fast-import", "--quiet", "--done", NO_DELTA],
                    cwd=self.repo.root,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=self._errors,
                    process_group=0,  # Ctrl-C reaches us; we end fast-import cleanly
                )
            except FileNotFoundError:
                raise GitClawError("git is not installed or not on PATH") from None
            assert self._process.stdin is not None
            # A 1 MiB pipe lets Python and git work at the same time instead of in turns.
            with contextlib.suppress(OSError):
                fcntl.fcntl(self._process.stdin.fileno(), F_SETPIPE_SZ, 1 << 20)
        return self._process

    def add(self, oid: str, data: bytes) -> None:
        if oid in self._marks:
            return
        process = self._start()
        assert process.stdin is not None
        mark = len(self._marks) + 1
        self._send(process, b"blob\nmark :%d\ndata %d\n" % (mark, len(data)), data, b"\n")
        self._marks[oid] = mark
        self.bytes_written += len(data)

    def reference(self, oid: str, name: str) -> None:
        """Keep a blob of the object store (a committed or staged version of the session file
        `name`) reachable from the archive: a v2 marker reads its original line there."""
        self._references.add((oid, name))

    def record(self, key: str, record: FileRecord) -> None:
        """Note in the next commit what compress wrote for one session (see FileRecord)."""
        self._records.append(f"{record_folder(key)}/{record.name()}")

    def _send(self, process: subprocess.Popen[bytes], *chunks: bytes) -> None:
        assert process.stdin is not None
        try:
            for chunk in chunks:
                process.stdin.write(chunk)
        except (BrokenPipeError, ValueError):
            self._fail(process)

    def commit(self, message: str) -> str | None:
        """Make every added blob reachable from the ref; returns the new archive commit."""
        if not self._marks and not self._references:
            return None
        process = self._start()
        assert process.stdin is not None
        parent = self.repo.rev_parse(self.ref)
        body = message.encode()
        stream = [
            b"commit %s\n" % self.ref.encode(),
            b"mark :%d\n" % (len(self._marks) + 1),
            b"committer %s %d +0000\n" % (ARCHIVE_IDENTITY.encode(), int(time.time())),
            b"data %d\n%s\n" % (len(body), body),
        ]
        if parent:
            stream.append(b"from %s\n" % parent.encode())
        for oid, mark in self._marks.items():
            stream.append(b"M 100644 :%d %s\n" % (mark, blob_path(oid).encode()))
        for oid, name in sorted(self._references):  # fast-import refuses an unknown id
            stream.append(b"M 100644 %s %s\n" % (oid.encode(), intact_path(oid, name).encode()))
        for path in self._records:
            stream.append(b"M 100644 :%d %s\n" % (len(self._marks) + 2, path.encode()))
        stream.append(b"\ndone\n")
        if self._records:  # the empty blob that names the records
            self._send(process, b"blob\nmark :%d\ndata 0\n\n" % (len(self._marks) + 2))
        self._send(process, b"".join(stream))
        self._finish(process)
        new_tip = self.repo.rev_parse(self.ref)
        if new_tip is None or new_tip == parent:
            raise GitClawError(f"git fast-import did not update {self.ref}; nothing was changed")
        return new_tip

    def abort(self) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            with contextlib.suppress(OSError, ValueError):  # it may be dead or closed already
                self._process.stdin.write(b"done\n")
            with contextlib.suppress(GitClawError):
                self._finish(self._process)

    def _fail(self, process: subprocess.Popen[bytes]) -> None:
        """fast-import died while we wrote to it: say why, in one line."""
        self._finish(process)
        raise GitClawError("git fast-import ended early; nothing was changed")

    def _finish(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            process.stdin.close()
        code = process.wait()
        self._process = None
        errors = b""
        if self._errors is not None:
            self._errors.seek(0)
            errors = self._errors.read()
            self._errors.close()
            self._errors = None
        if code != 0:
            error = git_failure("fast-import", errors, code)
            raise GitFailureError(f"{error}; nothing was changed")
