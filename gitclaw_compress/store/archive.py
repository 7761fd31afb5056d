"""The git storage layer: dropped payloads live as blobs reachable from an archive ref.

Writes go through one `git fast-import` process per run (never a process per object), which
adds a commit on top of the archive ref whose tree holds every payload at
`blobs/<oid[:2]>/<oid[2:]>`, and every committed or staged version of a session that v2
and v3 markers read their original lines from at `intact/<oid[:2]>/<oid[2:]>/<file name>` (a tree
entry that names a blob git already has: no new bytes). Being reachable from a ref, both survive
`git gc` and travel with `git push origin 'refs/gitclaw/*:refs/gitclaw/*'`. Reads go through
one `git cat-file --batch` process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.archive_layout import (
    ARCHIVE_IDENTITY,
    DEFAULT_REF,
    FileRecord,
    blob_path,
    intact_path,
    record_folder,
)
from gitclaw_compress.store.git import DURABLE, GitFailureError, git_env, git_failure
from gitclaw_compress.store.repository import Repository as Repository  # callers import it here

# Fast zlib and no delta search while writing (about 3x faster); `git gc` deltifies later.
FAST_PACK = ("-c", "pack.compression=1")
NO_DELTA = "--big-file-threshold=1k"
F_SETPIPE_SZ = 1031  # Linux fcntl; not in Python's fcntl module before 3.10 on all builds
TEMP_PACK = "tmp_pack_"  # fast-import's pack, named so until it is moved into place


class ArchiveWriter:
    """Streams payload blobs into `git fast-import`, then commits them, and the intact blobs
    that v2 and v3 markers reference, onto the archive ref.

    Nothing is reachable until `commit`; `abort` leaves the ref as it was.
    """

    def __init__(self, repo: Repository, ref: str = DEFAULT_REF) -> None:
        self.repo = repo
        self.ref = ref
        self._process: subprocess.Popen[bytes] | None = None
        self._marks: dict[str, int] = {}
        self._references: set[tuple[str, str]] = set()  # blobs git has, and their file name
        self._records: list[tuple[str, bytes]] = []  # (path, the line digests)
        self._errors: IO[bytes] | None = None
        self.bytes_written = 0

    @property
    def count(self) -> int:
        return len(self._marks) + len(self._references)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            _drop_orphan_keeps(self.repo.common_dir)
            import tempfile  # not at start-up: a no-op run never starts fast-import

            self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as git)
            try:
                self._process = subprocess.Popen(
                    ["git", *DURABLE, *FAST_PACK, "fast-import", "--quiet", "--done", NO_DELTA],
                    cwd=self.repo.root,
                    env=git_env(self.repo.root),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=self._errors,
                    process_group=0,  # Ctrl-C reaches us; we end fast-import cleanly
                )
            except FileNotFoundError:
                raise GitClawError("git is not installed or not on PATH") from None
            assert self._process.stdin is not None
            _widen_pipe(self._process.stdin.fileno())
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
        `name`) reachable from the archive: a v2 or v3 marker reads its original line there."""
        self._references.add((oid, name))

    def record(self, key: str, record: FileRecord, lines: bytes = b"") -> None:
        """Note in the next commit what compress wrote for one session (see FileRecord), with
        the digests of its lines."""
        self._records.append((f"{record_folder(key)}/{record.name()}", lines))

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
        for number, (path, lines) in enumerate(self._records, len(self._marks) + 2):
            stream.append(b"M 100644 :%d %s\n" % (number, path.encode()))
            self._send(process, b"blob\nmark :%d\ndata %d\n%s\n" % (number, len(lines), lines))
        stream.append(b"\ndone\n")
        self._send(process, b"".join(stream))
        self._finish(process)
        new_tip = self.repo.rev_parse(self.ref)
        if new_tip is None or new_tip == parent:
            raise GitClawError(f"git fast-import did not update {self.ref}; nothing was changed")
        return new_tip

    def abort(self) -> None:
        """Leave nothing of this run in the object store: fast-import is stopped before it
        moves its pack into place, and its temp pack is removed. (Ended cleanly, it would
        keep every blob it was sent, unreachable, until a `git gc` prunes them: a session
        held for a secret would leave the secret in the archive.)"""
        process = self._process
        if process is None:
            return
        temp = _stopped_temp_pack(process)
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(GitClawError):
            self._finish(process)
        if temp is not None:
            with contextlib.suppress(OSError):
                temp.unlink()

    def _fail(self, process: subprocess.Popen[bytes]) -> None:
        """fast-import died while we wrote to it: say why, in one line."""
        self._finish(process)
        raise GitClawError("git fast-import ended early; nothing was changed")

    def _finish(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None
        with contextlib.suppress(OSError, ValueError):  # a killed one's pipe is broken
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


def _drop_orphan_keeps(common_dir: Path) -> None:
    """A fast-import cut short after it wrote its pack's .keep, but before it moved the
    pack into place (`git gc --prune=now` removes its temp pack), leaves the .keep with
    no pack. The next run that writes the same objects in the same second writes the
    same pack, and fast-import cannot create its .keep: drop such orphans first (only
    fast-import's, and only without their pack; nothing of git's depends on them)."""
    folder = common_dir / "objects" / "pack"
    for keep in folder.glob("pack-*.keep"):
        if keep.with_suffix(".pack").exists():
            continue
        with contextlib.suppress(OSError), open(keep, "rb") as handle:
            if handle.read(11) == b"fast-import":
                keep.unlink()


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe lets Python and git work at the same time instead of in turns (Linux;
    elsewhere the pipe keeps its size)."""
    try:
        import fcntl
    except ImportError:  # Windows
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)


def _stopped_temp_pack(process: subprocess.Popen[bytes]) -> Path | None:
    """Stop fast-import (SIGSTOP where there is one: it writes nothing more) and name the
    temp pack it holds open (`objects/pack/tmp_pack_*`, from the operating system's list of
    its open files), for the caller to kill it and remove the file; None where that list
    cannot be had (the file is then left to `git gc`)."""
    stop = getattr(signal, "SIGSTOP", None)  # not on Windows
    if stop is not None:
        with contextlib.suppress(OSError):
            os.kill(process.pid, stop)
    try:
        import psutil
    except ImportError:
        return None
    try:
        files = psutil.Process(process.pid).open_files()
    except (psutil.Error, OSError):  # gone, or not to be read
        return None
    for opened in files:
        name = Path(opened.path)
        if name.name.startswith(TEMP_PACK) and name.parent.name == "pack":
            return name
    return None
