"""Which lines of a session file a committed or staged version holds byte for byte."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path

from gitclaw_compress.core.lines import (
    RawLine,
)
from gitclaw_compress.core.marker import read_marker
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.objects import BlobLineReader
from gitclaw_compress.store.repository import Repository
from gitclaw_compress.store.session_lines import open_lines

DIGEST = 16  # bytes of a line's blake2b: which lines of a blob the file holds


class _BlobLines:
    """Which lines of the file one git blob (a version of the session) holds byte for byte at
    the same line number; worked out on the first question only.

    pi only appends, so the blob is usually a byte prefix of the file: then every complete
    line in that prefix is intact there, found by hashing the prefix as a git blob instead of
    reading the blob. Otherwise lines are compared one by one.
    """

    def __init__(self, repo: Repository, path: Path, oid: str, size: int) -> None:
        self.oid = oid
        self._repo, self._path, self._size = repo, path, size
        self._prefix_lines: int | None = None
        self._digests = b""  # each line's digest, DIGEST bytes each, in order

    def _load(self) -> int:
        if self._prefix_lines is None:
            prefix_lines = _blob_prefix_lines(self._path, self._size, self.oid)
            self._prefix_lines = prefix_lines or 0
            if prefix_lines is None:  # streamed: the blob is never held whole
                reader = BlobLineReader(self._repo.root, self.oid, self._repo.objects_dir)
                digests = bytearray()  # not a join: that would list every digest first
                try:
                    for data in reader.parts():
                        digests += hashlib.blake2b(data, digest_size=DIGEST).digest()
                finally:
                    reader.close()
                self._digests = bytes(digests)
        return self._prefix_lines

    def holds(self, line: RawLine) -> bool:
        number = line.number
        if number <= self._load():
            return True
        at = (number - 1) * DIGEST
        digest = self._digests[at : at + DIGEST]
        return bool(digest) and digest == hashlib.blake2b(line.data, digest_size=DIGEST).digest()


class IntactLines:
    """Which lines of the file exist byte for byte in HEAD's version (to record that commit)
    or in HEAD's or the staged blob of the file (for a v2 or v3 marker to reference)."""

    def __init__(self, repo: Repository, path: Path, rel: str) -> None:
        self.commit = repo.rev_parse("HEAD")
        self._head: _BlobLines | None = None
        self._staged: _BlobLines | None = None
        head = repo.object_info(f"{self.commit}:{rel}") if self.commit is not None else None
        if head is not None:
            self._head = _BlobLines(repo, path, *head)
        staged = repo.object_info(f":{rel}")
        if staged is not None and (head is None or staged[0] != head[0]):
            self._staged = _BlobLines(repo, path, *staged)

    @property
    def head_blob(self) -> str | None:
        """HEAD's blob of the file (None: HEAD has none): in the branch history, which a
        fresh clone has, unlike a staged blob that only the archive keeps."""
        return self._head.oid if self._head is not None else None

    def commit_for(self, line: RawLine) -> str | None:
        if self._head is not None and self._head.holds(line):
            return self.commit
        return None

    def blob_for(self, line: RawLine) -> str | None:
        """HEAD's blob when it holds the line, else the staged blob when that does."""
        for version in (self._head, self._staged):
            if version is not None and version.holds(line):
                return version.oid
        return None


def _blob_prefix_lines(path: Path, size: int, oid: str) -> int | None:
    """Complete lines in the first `size` bytes of the file if they hash to blob `oid`."""
    digest = (
        hashlib.sha1(b"blob %d\0" % size) if len(oid) == 40 else hashlib.sha256(b"blob %d\0" % size)
    )
    newlines = 0
    remaining = size
    with open(path, "rb") as handle:
        while remaining:
            chunk = handle.read(min(remaining, 1 << 20))
            if not chunk:
                return None
            digest.update(chunk)
            newlines += chunk.count(b"\n")
            remaining -= len(chunk)
    return newlines if digest.hexdigest() == oid else None


def only_in_archive(
    payloads: Iterable[str], reference: str | None, in_branch: Callable[[str], bool]
) -> set[str]:
    """The objects a compressed line needs that only the archive keeps, so that a fresh clone
    without the archive ref could not restore it: every payload, and the version of the file
    a v2 or v3 marker names unless a commit of the branch holds it (`in_branch`). `compress`
    asks it as it writes (HEAD's blob), `doctor` of the file as it is (every committed one)."""
    only = set(payloads)
    if reference is not None and not in_branch(reference):
        only.add(reference)
    return only


def branch_versions(repo: Repository, rel: str) -> set[str]:
    """The blobs of the file that the commits of HEAD's history hold: what a fresh clone of
    the branch has without the archive."""
    if repo.rev_parse("HEAD") is None:
        return set()
    raw = repo.git("log", "--format=", "--raw", "--no-abbrev", "--no-renames", "HEAD", "--", rel)
    blobs: set[str] = set()
    for row in raw.decode().splitlines():
        if row.startswith(":"):  # ":<mode> <mode> <old> <new> <status>\t<path>"
            blobs.add(row.split()[3])
    return blobs


def file_only_in_archive(repo: Repository, path: Path, rel: str) -> set[str]:
    """The objects the compressed lines of the file need that only the archive keeps (see
    `only_in_archive`); a line whose marker cannot be read is verify's to name, not counted."""
    versions = branch_versions(repo, rel)
    only: set[str] = set()
    with open_lines(path) as lines:
        for line in lines:
            try:
                marker = read_marker(line.data, f"{rel}:{line.number}")
            except GitClawError:
                continue
            if marker is None:
                continue
            reference = marker.intact[0] if marker.intact is not None else None
            only |= only_in_archive(
                (oid for _, oid in marker.parts), reference, versions.__contains__
            )
    return only
