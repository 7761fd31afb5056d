"""The git storage layer: dropped payloads live as blobs reachable from an archive ref.

Writes go through one `git fast-import` process per run (never a process per object), which
adds a commit on top of the archive ref whose tree holds every payload at
`blobs/<oid[:2]>/<oid[2:]>`. Being reachable from a ref, the payloads survive `git gc` and
travel with `git push origin 'refs/gitclaw/*:refs/gitclaw/*'`. Reads go through one
`git cat-file --batch` process.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from gitclaw_compress.errors import GitClawError

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


def _git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, input=input, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise GitClawError("git is not installed or not on PATH") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = message[-1] if message else f"exit code {done.returncode}"
        raise GitClawError(f"git {args[0]} failed in {root}: {detail}")
    return done.stdout


def _rev_parse(cwd: Path, *args: str) -> list[str] | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", *args], cwd=cwd, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise GitClawError("git is not installed or not on PATH") from None
    return done.stdout.decode().splitlines() if done.returncode == 0 else None


class Repository:
    """The work tree that holds the sessions, and its git object store."""

    def __init__(self, start: Path) -> None:
        probe = start if start.is_dir() else start.parent
        if not probe.exists():
            raise GitClawError(f"{start}: no such file or directory")
        # Asked in two steps: --show-toplevel fails in a bare repository and inside .git.
        where = _rev_parse(probe, "--is-bare-repository", "--is-inside-git-dir", "--git-common-dir")
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
        self.root = Path(top[0]).resolve()
        common = Path(where[2])
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

    def rev_parse(self, name: str) -> str | None:
        out = self.git("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False)
        return out.decode().strip() or None

    def has_remote(self, name: str) -> bool:
        return bool(name) and self.git("remote", "get-url", name, check=False).strip() != b""

    def object_info(self, name: str) -> tuple[str, int] | None:
        """The id and size of an object such as `HEAD:path`, or None if there is none."""
        out = self.git("cat-file", "--batch-check", input=name.encode() + b"\n").split()
        if len(out) != 3:  # "<name> missing"
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

    def archive_oids(self, ref: str) -> set[str]:
        """Every payload id reachable from the archive ref (empty if there is no ref yet)."""
        if self.rev_parse(ref) is None:
            return set()
        out = self.git("ls-tree", "-r", "-z", ref, "--", "blobs")
        oids = set()
        for record in out.split(b"\0"):
            if record:
                oids.add(record.split(b"\t", 1)[0].split(b" ")[2].decode())
        return oids

    @contextlib.contextmanager
    def lock(self, name: str, what: str) -> Iterator[None]:
        """An exclusive lock in the git dir; another run holding it is an error, not a wait."""
        folder = self.common_dir / "gitclaw-compress" / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha1(name.encode()).hexdigest()[:16]
        with open(folder / f"{digest}.lock", "a+b") as handle:
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


class ObjectReader:
    """Reads objects through one long-lived `git cat-file --batch`."""

    def __init__(self, root: Path) -> None:
        self._process = subprocess.Popen(
            ["git", "cat-file", "--batch"],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def get(self, name: str) -> bytes | None:
        """The content of an object (an oid or `<rev>:<path>`), or None if it is missing."""
        assert self._process.stdin is not None and self._process.stdout is not None
        if "\n" in name:
            return None
        self._process.stdin.write(name.encode() + b"\n")
        self._process.stdin.flush()
        header = self._process.stdout.readline()
        parts = header.split()
        if len(parts) != 3:
            return None  # "<name> missing" or "ambiguous"
        size = int(parts[2])
        data = self._read_exactly(self._process.stdout, size)
        self._process.stdout.read(1)  # the newline after the content
        return data

    @staticmethod
    def _read_exactly(stream: IO[bytes], size: int) -> bytes:
        chunks = []
        remaining = size
        while remaining:
            chunk = stream.read(remaining)
            if not chunk:
                raise GitClawError("git cat-file ended early")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        self._process.wait()
        if self._process.stdout:
            self._process.stdout.close()


class ArchiveWriter:
    """Streams payload blobs into `git fast-import`, then commits them onto the archive ref.

    Nothing is reachable until `commit`; `abort` leaves the ref as it was.
    """

    def __init__(self, repo: Repository, ref: str = DEFAULT_REF) -> None:
        self.repo = repo
        self.ref = ref
        self._process: subprocess.Popen[bytes] | None = None
        self._marks: dict[str, int] = {}
        self.bytes_written = 0

    @property
    def count(self) -> int:
        return len(self._marks)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            self._process = subprocess.Popen(
                ["git", *DURABLE, *FAST_PACK, "fast-import", "--quiet", "--done", NO_DELTA],
                cwd=self.repo.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
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
        self._marks[oid] = mark
        process.stdin.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
        process.stdin.write(data)
        process.stdin.write(b"\n")
        self.bytes_written += len(data)

    def commit(self, message: str) -> str | None:
        """Make every added blob reachable from the ref; returns the new archive commit."""
        if not self._marks:
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
        stream.append(b"\ndone\n")
        process.stdin.write(b"".join(stream))
        self._finish(process)
        new_tip = self.repo.rev_parse(self.ref)
        if new_tip is None or new_tip == parent:
            raise GitClawError(f"git fast-import did not update {self.ref}; nothing was changed")
        return new_tip

    def abort(self) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self._process.stdin.write(b"done\n")
            with contextlib.suppress(GitClawError):
                self._finish(self._process)

    def _finish(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stderr is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        error = process.stderr.read().decode("utf-8", "replace").strip()
        code = process.wait()
        self._process = None
        if code != 0:
            detail = error.splitlines()[-1] if error else f"exit code {code}"
            raise GitClawError(f"git fast-import failed: {detail}; nothing was changed")
