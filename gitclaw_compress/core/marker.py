"""The pure inverse of compression: splice the archived original bytes back into a line."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from gitclaw_compress.core.jsonspan import JsonPath, SpanError, locate, splice
from gitclaw_compress.core.lines import MARKER_BYTES, MARKER_KEY, RawLine, parse_entry
from gitclaw_compress.errors import GitClawError

INTACT_IN_COMMIT = "the commit where the line is intact still has it (restore uses that)"
FetchObject = Callable[[str], bytes | None]
# Given a line number and a commit, the original line from that commit, if it can be had.
FetchFromCommit = Callable[[int, str], bytes | None]
# Given a blob id and a line number, that line of the blob: None if the blob is missing,
# empty past its end.
FetchBlobLine = Callable[[str, int], bytes | None]


@dataclass(frozen=True, slots=True)
class Marker:
    """A v1 marker names a payload blob per splice (`parts`); a v2 marker names the blob of a
    committed or staged version of the session that holds the original line (`intact`: the
    blob id and the line number), so the archive only references that blob."""

    sha256: str
    size: int
    parts: tuple[tuple[JsonPath, str], ...]
    commit: str | None
    intact: tuple[str, int] | None = None

    @property
    def oids(self) -> tuple[str, ...]:
        """The archived objects the line needs: its payloads, or the intact blob."""
        if self.intact is not None:
            return (self.intact[0],)
        return tuple(oid for _, oid in self.parts)


class DamagedLineError(GitClawError):
    """A line that carries the marker key but cannot be read as a compressed line."""


class MissingObjectError(GitClawError):
    """An archived payload is not in this clone; the message says how to fetch it."""

    def __init__(self, message: str, oids: list[str]) -> None:
        super().__init__(message)
        self.oids = oids


_LOWER_HEX = re.compile(r"[0-9a-f]+")


def _is_hex(value: object, lengths: tuple[int, ...] = (40, 64)) -> bool:
    # One regex match, not a generator over 64 characters: restore checks every marker.
    return isinstance(value, str) and len(value) in lengths and bool(_LOWER_HEX.fullmatch(value))


def _marker_problem(raw: object) -> str | None:
    """What is wrong with a marker's fields, in words; None when it is well formed."""
    if not isinstance(raw, dict):
        return "not a JSON object"
    version = raw.get("v")
    if version not in (1, 2) or isinstance(version, bool):
        return f"unknown version {version!r}"
    if not _is_hex(raw.get("sha256"), (64,)):
        return "sha256 is not 64 hex digits"
    size = raw.get("size")
    if not _is_count(size):
        return "size is not a whole number"
    commit = raw.get("commit")
    if commit is not None and not _is_hex(commit):
        return "commit is not a git commit id"
    if version == 2:
        intact = raw.get("intact")
        if not isinstance(intact, dict):
            return "intact is not a JSON object"
        if not _is_hex(intact.get("blob")):
            return "intact.blob is not a git object id"
        line = intact.get("line")
        if not _is_count(line) or line == 0:
            return "intact.line is not a line number"
        return None
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
    return None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# A v2 marker exactly as compress writes it, as the line's last member: every string in it
# is hex, every number a whole number of at most 18 digits (orjson reads it as an int), so
# on a line that parses as a JSON object, a match is the top-level marker member (the `}`
# after it is the line's last byte, the object's close; orjson keeps the last of repeated
# keys) and its fields pass every check `_marker_problem` makes. Anything else (a v1
# marker, a commit or an unknown key, other spacing) takes the full check.
_COUNT = rb"(?:0|[1-9][0-9]{0,17})"
_MARKER_MEMBER = b"," + MARKER_BYTES + b":"
_WELL_FORMED_INTACT = re.compile(
    re.escape(_MARKER_MEMBER)
    + rb'\{"v":2,"sha256":"[0-9a-f]{64}","size":'
    + _COUNT
    + rb',"intact":\{"blob":"(?:[0-9a-f]{40}|[0-9a-f]{64})","line":[1-9][0-9]{0,17}\}'
    + rb'(?:,"lines":'
    + _COUNT
    + rb')?(?:,"ui":true)?\}\}'
)


def read_marker(data: bytes, where: str, *, fast: bool = True) -> Marker | None:
    """The marker of a compressed line, None for any other line; a broken marker is an error.

    A line that names the marker key but does not parse as a JSON object is damaged, not a
    plain line: passing it through would restore the wrong bytes. A v2 marker as compress
    writes it is checked by one match of its bytes (`fast`); the result is the same as
    the full check's.
    """
    if MARKER_BYTES not in data:
        return None
    entry = parse_entry(data)
    if entry is None:
        raise DamagedLineError(
            f"{where}: damaged compressed line (it names {MARKER_KEY} but is not valid JSON)"
        )
    start = data.rfind(_MARKER_MEMBER) if fast else -1
    if start > 0 and _WELL_FORMED_INTACT.fullmatch(data, start):
        raw = entry[MARKER_KEY]
        intact = raw["intact"]
        return Marker(raw["sha256"], raw["size"], (), None, (intact["blob"], intact["line"]))
    if MARKER_KEY not in entry:
        return None
    raw = entry[MARKER_KEY]
    problem = _marker_problem(raw)
    if problem is not None:
        raise DamagedLineError(f"{where}: unreadable {MARKER_KEY} marker: {problem}")
    if raw["v"] == 2:
        intact = raw["intact"]
        return Marker(
            raw["sha256"], raw["size"], (), raw.get("commit"), (intact["blob"], intact["line"])
        )
    parts = tuple((tuple(part["path"]), part["oid"]) for part in raw["parts"])
    return Marker(raw["sha256"], raw["size"], parts, raw.get("commit"))


def blob_line(blob: bytes, number: int) -> bytes:
    """Line `number` (1-based) of a blob, without its newline; empty past the end."""
    start = 0
    for _ in range(number - 1):
        start = blob.find(b"\n", start) + 1
        if start == 0:
            return b""
    end = blob.find(b"\n", start)
    return blob[start:] if end < 0 else blob[start:end]


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
    fetch_line: FetchBlobLine | None = None,
) -> bytes:
    """The original bytes of one line (unchanged if the line carries no marker).

    `notes` collects what was wrong with lines that were restored from their commit.
    `fetch_line` reads a line of an intact blob (v2 markers); without it the whole blob is
    fetched with `fetch`.
    """
    marker = read_marker(data, where)
    if marker is None:
        return data
    if marker.intact is not None:
        return _from_intact_blob(marker, marker.intact, where, fetch, fetch_line)
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


def _from_intact_blob(
    marker: Marker,
    intact: tuple[str, int],
    where: str,
    fetch: FetchObject,
    fetch_line: FetchBlobLine | None,
) -> bytes:
    """A v2 line: the original is a line of a blob that the archive references."""
    oid, number = intact
    if fetch_line is not None:
        original = fetch_line(oid, number)
    else:
        blob = fetch(oid)
        original = None if blob is None else blob_line(blob, number)
    if original is None:
        raise MissingObjectError(f"{where}: archived object {oid} is not in this clone", [oid])
    if len(original) != marker.size or hashlib.sha256(original).hexdigest() != marker.sha256:
        raise GitClawError(
            f"{where}: line {number} of archived object {oid} does not match the recorded "
            "sha256; the object store or the line was altered"
        )
    return original


def restore_line(line: RawLine, source: str, fetch: FetchObject) -> RawLine:
    data = restore_data(line.data, f"{source}:{line.number}", fetch)
    return line if data is line.data else RawLine(line.number, data, line.newline)
