"""The pure inverse of compression: splice the archived original bytes back into a line."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from gitclaw_compress.core.jsonspan import JsonPath, SpanError, locate, splice
from gitclaw_compress.core.lines import MARKER_BYTES, MARKER_KEY, RawLine, parse_entry
from gitclaw_compress.errors import GitClawError

INTACT_IN_COMMIT = "the commit where the line is intact still has it (restore uses that)"
FetchObject = Callable[[str], bytes | None]
# Given a line number and a commit, the original line from that commit, if it can be had.
FetchFromCommit = Callable[[int, str], bytes | None]


@dataclass(frozen=True, slots=True)
class Marker:
    sha256: str
    size: int
    parts: tuple[tuple[JsonPath, str], ...]
    commit: str | None


class DamagedLineError(GitClawError):
    """A line that carries the marker key but cannot be read as a compressed line."""


class MissingObjectError(GitClawError):
    """An archived payload is not in this clone; the message says how to fetch it."""

    def __init__(self, message: str, oids: list[str]) -> None:
        super().__init__(message)
        self.oids = oids


def _is_hex(value: object, lengths: tuple[int, ...] = (40, 64)) -> bool:
    return (
        isinstance(value, str)
        and len(value) in lengths
        and all(c in "0123456789abcdef" for c in value)
    )


def _marker_problem(raw: object) -> str | None:
    """What is wrong with a marker's fields, in words; None when it is well formed."""
    if not isinstance(raw, dict):
        return "not a JSON object"
    if raw.get("v") != 1:
        return f"unknown version {raw.get('v')!r}"
    if not _is_hex(raw.get("sha256"), (64,)):
        return "sha256 is not 64 hex digits"
    size = raw.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "size is not a whole number"
    parts = raw.get("parts")
    if not isinstance(parts, list) or not parts:
        return "parts is not a non-empty list"
    for part in parts:
        if not isinstance(part, dict):
            return "a part is not a JSON object"
        path, oid = part.get("path"), part.get("oid")
        if not isinstance(path, list) or not path:
            return "a part's path is not a non-empty list"
        if not all(isinstance(step, str | int) and not isinstance(step, bool) for step in path):
            return "a part's path holds something other than keys and indexes"
        if not _is_hex(oid):
            return "a part's oid is not a git object id"
    commit = raw.get("commit")
    if commit is not None and not _is_hex(commit):
        return "commit is not a git commit id"
    return None


def read_marker(data: bytes, where: str) -> Marker | None:
    """The marker of a compressed line, None for any other line; a broken marker is an error.

    A line that names the marker key but does not parse as a JSON object is damaged, not a
    plain line: passing it through would restore the wrong bytes.
    """
    if MARKER_BYTES not in data:
        return None
    entry = parse_entry(data)
    if entry is None:
        raise DamagedLineError(
            f"{where}: damaged compressed line (it names {MARKER_KEY} but is not valid JSON)"
        )
    if MARKER_KEY not in entry:
        return None
    raw = entry[MARKER_KEY]
    problem = _marker_problem(raw)
    if problem is not None:
        raise DamagedLineError(f"{where}: unreadable {MARKER_KEY} marker: {problem}")
    parts = tuple((tuple(part["path"]), part["oid"]) for part in raw["parts"])
    return Marker(raw["sha256"], raw["size"], parts, raw.get("commit"))


def _from_commit(marker: Marker, from_commit: Callable[[str], bytes | None] | None) -> bytes | None:
    """The line from the commit where it is intact, if there is one and its hash matches."""
    if not marker.commit or from_commit is None:
        return None
    original = from_commit(marker.commit)
    if original is None or len(original) != marker.size:
        return None
    return original if hashlib.sha256(original).hexdigest() == marker.sha256 else None


def restore_data(
    data: bytes,
    where: str,
    fetch: FetchObject,
    from_commit: Callable[[str], bytes | None] | None = None,
    notes: list[str] | None = None,
) -> bytes:
    """The original bytes of one line (unchanged if the line carries no marker).

    `notes` collects what was wrong with lines that were restored from their commit.
    """
    marker = read_marker(data, where)
    if marker is None:
        return data
    blobs = {oid: fetch(oid) for _, oid in marker.parts}
    missing = [oid for oid, blob in blobs.items() if blob is None]
    if missing:
        original = _from_commit(marker, from_commit)
        if original is not None:
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
            if blob is None:
                raise SpanError(f"object {oid} is missing")
            edits.append((span.start, span.end, blob))
        original = splice(data, edits)
    except (SpanError, KeyError) as error:
        detail = str(error) if isinstance(error, SpanError) else f"no field at {error}"
        fallback = _from_commit(marker, from_commit)
        if fallback is not None:
            if notes is not None:
                notes.append(f"{where}: cannot restore the line: {detail}; {INTACT_IN_COMMIT}")
            return fallback
        raise GitClawError(f"{where}: cannot restore the line: {detail}") from None
    if len(original) != marker.size or hashlib.sha256(original).hexdigest() != marker.sha256:
        # An altered archive object or line: the commit where it is intact may still have it.
        fallback = _from_commit(marker, from_commit)
        if fallback is not None:
            if notes is not None:
                notes.append(
                    f"{where}: restored bytes do not match the recorded sha256 (the line or "
                    f"the archive was altered); {INTACT_IN_COMMIT}"
                )
            return fallback
        raise GitClawError(
            f"{where}: restored bytes do not match the recorded sha256; the line or the "
            "archive was altered, and no commit holds the intact line"
        )
    return original


def restore_line(line: RawLine, source: str, fetch: FetchObject) -> RawLine:
    data = restore_data(line.data, f"{source}:{line.number}", fetch)
    return line if data is line.data else RawLine(line.number, data, line.newline)
