"""The archive ref's layout: where payloads, intact versions and whole-file records live."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

DEFAULT_REF = "refs/gitclaw/archive"
ARCHIVE_IDENTITY = "gitclaw-compress <gitclaw-compress@localhost>"


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


REDACTIONS = "redactions"  # the notes `redact` leaves (store/redactions.py)


def redaction_folder(key: str) -> str:
    return f"{REDACTIONS}/{key[:2]}/{key[2:]}"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What one compress run wrote for one session: the sha256 and size of the whole file it
    wrote, and its number of lines. Kept as a file named `<sha256>-<size>-<lines>` under
    `files/<key[:2]>/<key[2:]>/` in the archive tree, where the key is the sha256 of the
    session's header line (line 1 never changes, so a renamed session keeps its key). The
    file holds `line_digest` of each line written (empty in records of older releases):
    what names the damaged line of a file that no commit holds."""

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


def header_key(header: bytes) -> str:
    """The key of a session's records in the archive: line 1 never changes."""
    return hashlib.sha256(header).hexdigest()


LINE_DIGEST = 4  # bytes per line in a record: enough to tell which lines differ


def line_digest(data: bytes, newline: bool) -> bytes:
    """A short digest of one line as written (its bytes and whether a newline ends it)."""
    digest = hashlib.blake2b(data, digest_size=LINE_DIGEST)  # no copy of the line to add "\n"
    if newline:
        digest.update(b"\n")
    return digest.digest()


def matching_records(chunks: Iterator[bytes], records: list[FileRecord]) -> list[FileRecord]:
    """Every record whose size and sha256 match a prefix of the streamed bytes, shortest
    first.

    Copies of one session share a header, so they share its records (a thousand copies, a
    thousand records): the bytes are hashed once, forward, and the digest is copied at each
    distinct record size, so a file costs its own length plus one copy per size, never a
    hash of its prefix per record."""
    by_size: dict[int, dict[str, FileRecord]] = {}
    for record in records:
        by_size.setdefault(record.size, {})[record.sha256] = record
    sizes = sorted(by_size)
    digest = hashlib.sha256()
    position = 0
    found: list[FileRecord] = []
    index = 0
    for chunk in chunks:
        offset = 0
        while index < len(sizes) and sizes[index] <= position + len(chunk):
            size = sizes[index]
            digest.update(chunk[offset : size - position])
            offset = size - position
            match = by_size[size].get(digest.copy().hexdigest())
            if match is not None:
                found.append(match)
            index += 1
        digest.update(chunk[offset:])
        position += len(chunk)
        if index == len(sizes):
            break
    return found
