"""The pure inverse of compression: splice the archived original bytes back into a line."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.jsonspan import JsonPath, SpanError, locate, splice
from gitclaw_compress.session import MARKER_BYTES, MARKER_KEY, RawLine, parse_entry

FetchObject = Callable[[str], bytes | None]
# Given a line number and a commit, the original line from that commit, if it can be had.
FetchFromCommit = Callable[[int, str], bytes | None]


@dataclass(frozen=True, slots=True)
class Marker:
    sha256: str
    size: int
    parts: tuple[tuple[JsonPath, str], ...]
    commit: str | None


class MissingObjectError(GitClawError):
    """An archived payload is not in this clone; the message says how to fetch it."""

    def __init__(self, message: str, oids: list[str]) -> None:
        super().__init__(message)
        self.oids = oids


def read_marker(data: bytes, where: str) -> Marker | None:
    """The marker of a compressed line, None for any other line; a broken marker is an error."""
    if MARKER_BYTES not in data:
        return None
    entry = parse_entry(data)
    if entry is None or MARKER_KEY not in entry:
        return None
    raw = entry[MARKER_KEY]
    try:
        assert isinstance(raw, dict) and raw.get("v") == 1
        sha256, size, parts = raw["sha256"], raw["size"], raw["parts"]
        assert isinstance(sha256, str) and isinstance(size, int) and isinstance(parts, list)
        parsed = []
        for part in parts:
            path, oid = part["path"], part["oid"]
            assert isinstance(path, list) and isinstance(oid, str)
            assert all(isinstance(step, str | int) for step in path)
            parsed.append((tuple(path), oid))
        commit = raw.get("commit")
        assert commit is None or isinstance(commit, str)
    except (AssertionError, KeyError, TypeError) as error:
        raise GitClawError(f"{where}: unreadable {MARKER_KEY} marker ({error!r})") from None
    return Marker(sha256, size, tuple(parsed), commit)


def restore_data(
    data: bytes,
    where: str,
    fetch: FetchObject,
    from_commit: Callable[[str], bytes | None] | None = None,
) -> bytes:
    """The original bytes of one line (unchanged if the line carries no marker)."""
    marker = read_marker(data, where)
    if marker is None:
        return data
    blobs = {oid: fetch(oid) for _, oid in marker.parts}
    missing = [oid for oid, blob in blobs.items() if blob is None]
    if missing:
        if marker.commit and from_commit is not None:
            original = from_commit(marker.commit)
            if original is not None and hashlib.sha256(original).hexdigest() == marker.sha256:
                return original
        raise MissingObjectError(
            f"{where}: archived object {missing[0]} is not in this clone", missing
        )
    try:
        spans = locate(data, [path for path, _ in marker.parts] + [(MARKER_KEY,)])
        marker_span = spans[(MARKER_KEY,)]
        if data[marker_span.key_start - 1 : marker_span.key_start] != b",":
            raise SpanError("marker is not the last member")
        edits = [(marker_span.key_start - 1, marker_span.end, b"")]
        for path, oid in marker.parts:
            span = spans[path]
            blob = blobs[oid]
            assert blob is not None
            edits.append((span.start, span.end, blob))
        original = splice(data, edits)
    except (SpanError, KeyError) as error:
        raise GitClawError(f"{where}: cannot restore the line: {error}") from None
    if len(original) != marker.size or hashlib.sha256(original).hexdigest() != marker.sha256:
        raise GitClawError(
            f"{where}: restored bytes do not match the recorded sha256; the line or the "
            "archive was altered"
        )
    return original


def restore_line(line: RawLine, source: str, fetch: FetchObject) -> RawLine:
    data = restore_data(line.data, f"{source}:{line.number}", fetch)
    return line if data is line.data else RawLine(line.number, data, line.newline)
