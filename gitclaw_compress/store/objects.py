"""Reading git objects: one long-lived `git cat-file --batch`, and blobs read line by line."""

from __future__ import annotations

import contextlib
import os
import subprocess
import weakref
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from gitclaw_compress import interrupts
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.git import GitFailureError, git_env, git_failure


class ObjectReadError(GitFailureError):
    """git failed while reading one object: a corrupt object, or git itself failing."""


# What `git cat-file blob` says about an object that is not there (git 2.39; older releases).
MISSING_OBJECT = (b"bad file", b"not a valid object")


READ = 1 << 20  # bytes of a blob handled at a time: a read from git, an inflated piece
# A packed blob streamed by git, not read whole (a blob over bigFileThreshold is streamed),
# through pack windows of 1 MiB, 4 MiB mapped at most: a packed 62 MB blob peaked at 100 MB
# in `git cat-file blob`, at 8 MB so.
STREAMED = (
    "-c", "core.bigFileThreshold=1m",
    "-c", "core.packedGitWindowSize=1m",
    "-c", "core.packedGitLimit=4m",
)  # fmt: skip


class BlobLineReader:
    """The lines of one blob, read forward, so that a restore reads each committed version
    once without holding it in memory.

    A loose object in `objects` (the object folder) is read here, inflated a piece at a
    time: `git cat-file blob` maps the whole compressed file, whose pages then count in its
    memory (36 MB for 62 MB of pi content), and copies every byte through a pipe. Any other
    object (packed, in an alternate, missing) comes from its own `git cat-file blob`."""

    def __init__(self, root: Path, oid: str, objects: Path | None = None) -> None:
        self.oid = oid
        self.read = 0  # lines read so far
        self._missing: bool | None = None  # known once the stream ended
        self._buffer = b""  # a piece of the blob, split into lines from `_position` on
        self._position = 0
        self._loose = _LooseBlob.open(objects, oid) if objects is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._stop: Callable[[], object]
        if self._loose is not None:
            self._stop = weakref.finalize(self, _close_loose, self._loose)
            return
        try:
            self._process = subprocess.Popen(
                ["git", *STREAMED, "cat-file", "blob", oid],
                cwd=root,
                env=git_env(root),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=READ,
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
        while self.read < number - 1:
            if self._next(keep=False) is None:
                return self._ended()
        found = self._next(keep=True)
        return self._ended() if found is None else found[0]

    def parts(self) -> Iterator[bytes]:
        """The blob's lines as `blob.split(b"\\n")` gives them (b"" after a final newline),
        read forward, never the whole blob at once; nothing if the blob is not here."""
        ended_line = True  # an empty blob splits into one empty part
        while (found := self._next(keep=True)) is not None:
            data, ended_line = found
            yield data
        if self._ended() is not None and ended_line:
            yield b""

    def _next(self, keep: bool) -> tuple[bytes, bool] | None:
        """Pass the next line: (its bytes without the newline, b"" unless `keep`; whether a
        newline ended it), None at the end of the blob. A line is found with one `find` in
        the piece at hand; one longer than a piece is joined once, from its parts."""
        pieces: list[bytes] = []
        partial = False
        while True:
            buffer, position = self._buffer, self._position
            end = buffer.find(b"\n", position)
            if end >= 0:
                self._position = end + 1
                self.read += 1
                if not keep:
                    return b"", True
                if pieces:
                    pieces.append(buffer[position:end])
                    return b"".join(pieces), True
                return buffer[position:end], True
            if position < len(buffer):
                partial = True
                if keep:
                    pieces.append(buffer[position:])
            self._buffer, self._position = self._piece(), 0
            if not self._buffer:
                if not partial:
                    return None
                self.read += 1  # the last line, without a newline
                return b"".join(pieces), False

    def _piece(self) -> bytes:
        """The next piece of the blob (at most READ bytes), b"" at its end."""
        if self._loose is not None:
            return self._loose.piece(self.oid)
        assert self._process is not None and self._process.stdout is not None
        return self._process.stdout.read(READ)

    def _ended(self) -> bytes | None:
        if self._missing is not None:  # asked again after the end
            return None if self._missing else b""
        self._missing = False
        if self._process is None:
            return b""
        assert self._process.stderr is not None
        code = self._process.wait()
        if code == 0:
            return b""
        stderr = self._process.stderr.read()
        if code == 128 and any(sign in stderr.lower() for sign in MISSING_OBJECT):
            self._missing = True
            return None
        raise ObjectReadError(f"reading object {self.oid}: {git_failure('cat-file', stderr, code)}")

    def close(self) -> None:
        self._stop()


class _LooseBlob:
    """The content of a loose blob (`objects/xx/yyyy`: zlib of "blob <size>\\0" and then the
    content), inflated a piece at a time; a stream that does not inflate, or whose length is
    not the one its header gives, is an ObjectReadError."""

    def __init__(self, handle: IO[bytes], inflate: Any, first: bytes, size: int) -> None:
        self._handle = handle
        self._inflate = inflate
        self._first = first  # content inflated with the header
        self._left = size - len(first)  # content bytes still to come

    @classmethod
    def open(cls, objects: Path, oid: str) -> _LooseBlob | None:
        """The loose blob `oid`, or None when git must read it: not loose here (packed, in
        an alternate, missing), not a blob, or a header that does not inflate."""
        if os.environ.get("GIT_OBJECT_DIRECTORY"):  # git would look elsewhere
            return None
        try:
            handle = open(objects / oid[:2] / oid[2:], "rb")  # noqa: SIM115 (closed by close)
        except OSError:
            return None
        inflate = zlib.decompressobj()
        try:
            start = inflate.decompress(handle.read(1 << 16), 64)
        except zlib.error:
            start = b""
        header, nul, first = start.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not nul or kind != b"blob" or not size.isdigit() or len(first) > int(size):
            handle.close()  # git says what it is
            return None
        return cls(handle, inflate, first, int(size))

    def piece(self, oid: str) -> bytes:
        """The next piece of the content (at most READ bytes), b"" after its end."""
        if self._first:
            first, self._first = self._first, b""
            return first
        inflate = self._inflate
        try:
            while not inflate.eof:
                data = inflate.unconsumed_tail or self._handle.read(READ // 4)
                if not data:
                    break
                piece: bytes = inflate.decompress(data, READ)
                if piece:
                    self._left -= len(piece)
                    if self._left < 0:
                        break
                    return piece
        except zlib.error as error:
            raise self._corrupt(oid, str(error)) from None
        if not inflate.eof or self._left or inflate.unused_data or self._handle.read(1):
            raise self._corrupt(oid, "its length is not the one its header gives")
        return b""

    @staticmethod
    def _corrupt(oid: str, why: str) -> ObjectReadError:
        return ObjectReadError(f"reading object {oid}: the loose object is corrupt ({why})")

    def close(self) -> None:
        self._handle.close()


class BlobLinePool:
    """Lines of a few blobs at once, each read forward by its own `BlobLineReader`; a line
    before the last one read reads that blob again. At most `held` git processes run."""

    def __init__(self, root: Path, objects: Path | None = None, held: int = 2) -> None:
        self._root = root
        self._objects = objects  # where loose objects are read without git (BlobLineReader)
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
            reader = BlobLineReader(self._root, oid, self._objects)
        data = reader.line(number)
        if data is None:
            reader.close()
            return None
        self._readers[oid] = reader
        return data


def _close_loose(blob: _LooseBlob) -> None:
    interrupts.checkpoint("finalizer")  # as a git reader's: also run at exit
    blob.close()


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    interrupts.checkpoint("finalizer")  # also run at exit, where an exception is swallowed
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
                env=git_env(root),
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
        return ObjectReadError(f"reading object {name}: {error}")

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
        interrupts.checkpoint("object-asked")  # git is writing an answer we have not read
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
    """End a `git cat-file --batch`: both pipes closed, it exits, and it is reaped.

    Closing stdin alone is not enough: a run interrupted between a question and its answer
    leaves git blocked writing an answer larger than the pipe holds, and it never reads
    stdin again. With stdout closed too, that write fails and git ends; a git still running
    is killed (it only reads), so the wait cannot wait on a git that waits on us."""
    for stream in (process.stdin, process.stdout):
        if stream:
            with contextlib.suppress(OSError):
                stream.close()
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()
    process.wait()
    errors.close()


def damaged_objects(root: Path, oids: list[str]) -> dict[str, str]:
    """The blobs among `oids` that the object store does not give back whole, and why: the
    content does not hash to the id, or git cannot read it (what `git fsck` reports as
    corrupt). Missing objects are not listed (that is a finding of its own). One
    `git cat-file --batch` reads them all, each streamed through the hash, never held."""
    import tempfile

    damaged: dict[str, str] = {}
    pending = list(oids)
    while pending:
        with tempfile.TemporaryFile() as errors:
            try:
                process = subprocess.Popen(
                    ["git", "cat-file", "--batch"],
                    cwd=root,
                    env=git_env(root),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    process_group=0,
                )
            except FileNotFoundError:
                raise GitClawError("git is not installed or not on PATH") from None
            assert process.stdin is not None and process.stdout is not None
            done = 0
            try:
                for oid in pending:
                    done += 1
                    header = b""
                    with contextlib.suppress(BrokenPipeError):
                        process.stdin.write(oid.encode() + b"\n")
                        process.stdin.flush()
                        header = process.stdout.readline()
                    if not header:  # git died on this object
                        process.kill()
                        process.wait()
                        errors.seek(0)
                        error = git_failure("cat-file", errors.read(), process.returncode)
                        damaged[oid] = f"unreadable: {error}"
                        break
                    parts = header.split()
                    if len(parts) != 3 or not parts[2].isdigit():
                        continue  # missing (or not a blob name): checked elsewhere
                    if not _hashes_to(oid, parts[1], int(parts[2]), process.stdout):
                        damaged[oid] = "its content does not hash to its id"
                else:
                    done = len(pending)
            finally:
                _stop_process(process)
            pending = pending[done:]
    return damaged


def _hashes_to(oid: str, kind: bytes, size: int, stream: IO[bytes]) -> bool:
    """Whether the `size` bytes of content `git cat-file --batch` sends next (and the
    newline after them) hash to `oid`, read in chunks, never held whole."""
    import hashlib

    digest = hashlib.sha1() if len(oid) == 40 else hashlib.sha256()
    digest.update(b"%s %d\0" % (kind, size))
    remaining = size
    while remaining:
        chunk = stream.read(min(remaining, 1 << 20))
        if not chunk:
            break
        digest.update(chunk)
        remaining -= len(chunk)
    stream.read(1)  # the newline after the content
    return not remaining and digest.hexdigest() == oid
