"""The pure inverse of compression: splice the archived original bytes back into a line."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from gitclaw_compress.core.jsonspan import JsonPath, SpanError, locate, splice
from gitclaw_compress.core.lines import (
    MARKER_BYTES,
    MARKER_KEY,
    READ_BUFFER,
    RawLine,
    iter_lines,
    parse_entry,
)
from gitclaw_compress.core.payload_form import PayloadFormError, original_form
from gitclaw_compress.errors import GitClawError

INTACT_IN_COMMIT = "the commit where the line is intact still has it (restore uses that)"
FetchObject = Callable[[str], bytes | None]
# Given a line number and a commit, the original line from that commit, if it can be had.
FetchFromCommit = Callable[[int, str], bytes | None]
# Given a blob id and a line number, that line of the blob: None if the blob is missing,
# empty past its end.
FetchBlobLine = Callable[[str, int], bytes | None]


# The UI-only flag: the line had only its UI-only copies stubbed (in the kept window, with
# `stub_ui_copies`); once it is older than the kept window, it is compressed further.
UI_ONLY_KEY = "ui"  # v1 and v2 markers: `"ui":true`
INTACT_V3 = "3"  # a v3 marker is one string: "3:<blob>:<line>:<sha256>:<size>:<lines>[:ui]"
_V3_UI_ONLY = ":" + UI_ONLY_KEY


class Marker(NamedTuple):
    """A v1 marker names a payload blob per splice (`parts`); a v2 or v3 marker names the
    blob of a committed or staged version of the session that holds the original line
    (`intact`: the blob id and the line number), so the archive only references that blob.
    A v2 marker is a JSON object, a v3 marker the same fields in one string (the sha256 in
    base64url); either way `sha256` here is hex. `lines` is the file's length when the line
    was compressed (None when the marker does not say). A named tuple, not a frozen
    dataclass: restore reads one per compressed line, and a tuple is made twice as fast."""

    sha256: str
    size: int
    parts: tuple[tuple[JsonPath, str], ...]
    commit: str | None
    intact: tuple[str, int] | None = None
    lines: int | None = None
    ui_only: bool = False

    @property
    def oids(self) -> tuple[str, ...]:
        """The archived objects the line needs: its payloads, or the intact blob."""
        if self.intact is not None:
            return (self.intact[0],)
        return tuple(oid for _, oid in self.parts)


class DamagedLineError(GitClawError):
    """A line that carries the marker key but cannot be read as a compressed line."""


HERE = "this clone"  # where archived objects are looked for, unless the caller names it
NOT_IN = "is not in"  # "archived object <oid> is not in <where it was looked for>"


class MissingObjectError(GitClawError):
    """An archived payload is not where it was looked for (`HERE`, or the place the caller
    names: an agent's store has its own archive, not a clone)."""

    def __init__(self, message: str, oids: list[str]) -> None:
        super().__init__(message)
        self.oids = oids


_LOWER_HEX = re.compile(r"[0-9a-f]+")
# base64url of 32 bytes, unpadded: 43 characters, the last one's two low bits zero (so each
# digest has one spelling).
_SHA256_B64_CHARS = r"[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]"
_SHA256_B64 = re.compile(_SHA256_B64_CHARS)
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,17}")  # at most 18 digits: a 64-bit int, as in JSON


def intact_marker(
    blob: str, line: int, sha256: bytes, size: int, lines: int, *, ui_only: bool = False
) -> str:
    """The v3 marker of a line whose original is line `line` of blob `blob` (`sha256` is
    the original's digest, 32 bytes)."""
    digest = base64.urlsafe_b64encode(sha256).rstrip(b"=").decode()
    text = f"{INTACT_V3}:{blob}:{line}:{digest}:{size}:{lines}"
    return text + _V3_UI_ONLY if ui_only else text


def as_v3(marker: Marker) -> str:
    """A v2 or v3 marker that says the file's length, in the v3 form."""
    assert marker.intact is not None and marker.lines is not None
    blob, line = marker.intact
    digest = bytes.fromhex(marker.sha256)
    return intact_marker(blob, line, digest, marker.size, marker.lines, ui_only=marker.ui_only)


def is_ui_only(raw: object) -> bool:
    """Whether a marker value (as parsed from JSON) carries the UI-only flag."""
    if isinstance(raw, str):
        return raw.startswith(INTACT_V3 + ":") and raw.endswith(_V3_UI_ONLY)
    return isinstance(raw, dict) and raw.get(UI_ONLY_KEY) is True


def marker_lines(raw: object) -> int | None:
    """The file's length when the line was compressed, from a marker value (as parsed from
    JSON), if it says and reads; never an error (a damaged marker is `read_marker`'s job)."""
    if isinstance(raw, dict):
        length = raw.get("lines")
        return length if type(length) is int else None
    if isinstance(raw, str) and raw.startswith(INTACT_V3 + ":"):
        fields = raw.split(":")
        if len(fields) in (6, 7) and _DECIMAL.fullmatch(fields[5]):
            return int(fields[5])
    return None


def _is_hex(value: object, lengths: tuple[int, ...] = (40, 64)) -> bool:
    # One regex match, not a generator over 64 characters: restore checks every marker.
    return isinstance(value, str) and len(value) in lengths and bool(_LOWER_HEX.fullmatch(value))


def _v3_problem(raw: str) -> str | None:
    """What is wrong with a v3 marker's fields, in words; None when it is well formed."""
    fields = raw.split(":")
    if fields[0] != INTACT_V3:
        return f"unknown version {fields[0]!r}"
    # The blob first: a path put in its place (`HEAD:../x`) is named as what it is.
    if len(fields) < 2 or not _is_hex(fields[1]):
        return "the blob is not a git object id"
    if len(fields) == 7 and fields[6] != UI_ONLY_KEY:
        return f"the flag after the line count is {fields[6]!r}, not {UI_ONLY_KEY!r}"
    if len(fields) not in (6, 7):
        return f"{len(fields)} fields, not 6 (or 7 with {UI_ONLY_KEY!r})"
    _, _, line, digest, size, lines = fields[:6]
    if not _DECIMAL.fullmatch(line) or line == "0":
        return "the line is not a line number"
    if not _SHA256_B64.fullmatch(digest):
        return "the sha256 is not 43 base64url characters"
    if not _DECIMAL.fullmatch(size):
        return "the size is not a whole number"
    if not _DECIMAL.fullmatch(lines):
        return "the line count is not a whole number"
    return None


def _from_v3(raw: str) -> Marker:
    """The fields of a well-formed v3 marker."""
    fields = raw.split(":")
    return Marker(
        _hex_digest(fields[3].encode()),
        int(fields[4]),
        (),
        None,
        (fields[1], int(fields[2])),
        int(fields[5]),
        len(fields) == 7,
    )


_FROM_BASE64URL = bytes.maketrans(b"-_", b"+/")


def _hex_digest(digest: bytes) -> str:
    """The hex of a checked base64url sha256 (`base64.urlsafe_b64decode`, half the time)."""
    return binascii.a2b_base64(digest.translate(_FROM_BASE64URL) + b"=").hex()


def _marker_problem(raw: object) -> str | None:
    """What is wrong with a marker's fields, in words; None when it is well formed."""
    if isinstance(raw, str):
        return _v3_problem(raw)
    if not isinstance(raw, dict):
        return "neither a JSON object nor a string"
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


# A v3 marker exactly as compress writes it, as the line's last member: a string of only
# the characters its fields use (no escape, so its bytes are the string), each field as
# `_v3_problem` wants it. On a line that parses as a JSON object, a match is the top-level
# marker member (the `}` after it is the line's last byte, the object's close; orjson keeps
# the last of repeated keys). Anything else (v1 and v2 markers, other spacing, an escape)
# takes the full check, which reads the same fields the same way.
_COUNT = rb"(0|[1-9][0-9]{0,17})"
_MARKER_MEMBER = b"," + MARKER_BYTES + b":"
_WELL_FORMED_V3 = re.compile(
    re.escape(_MARKER_MEMBER)
    + b'"'
    + INTACT_V3.encode()
    + rb":([0-9a-f]{40}|[0-9a-f]{64}):([1-9][0-9]{0,17}):("
    + _SHA256_B64_CHARS.encode()
    + b"):"
    + _COUNT
    + b":"
    + _COUNT
    + rb'(:ui)?"\}'
)
# A v2 marker as compress wrote it before v3, read the same way: every string in it is hex,
# every number a whole number of at most 18 digits (orjson reads it as an int), so its
# fields pass every check `_marker_problem` makes.
_WELL_FORMED_V2 = re.compile(
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
    plain line: passing it through would restore the wrong bytes. A v3 marker as compress
    writes it (or a v2 marker as it wrote it before) is checked by one match of its bytes
    (`fast`); the result is the same as the full check's.
    """
    if MARKER_BYTES not in data:
        return None
    entry = parse_entry(data)
    if entry is None:
        raise DamagedLineError(
            f"{where}: damaged compressed line (it names {MARKER_KEY} but is not valid JSON)"
        )
    start = data.rfind(_MARKER_MEMBER) if fast else -1
    if start > 0 and (match := _WELL_FORMED_V3.fullmatch(data, start)) is not None:
        return _v3_marker(match)
    if MARKER_KEY not in entry:
        return None
    raw = entry[MARKER_KEY]
    if start > 0 and _WELL_FORMED_V2.fullmatch(data, start):
        intact = raw["intact"]
        return Marker(
            raw["sha256"],
            raw["size"],
            (),
            None,
            (intact["blob"], intact["line"]),
            raw.get("lines"),
            UI_ONLY_KEY in raw,
        )
    return _checked_marker(raw, where)


def written_v3_marker(data: bytes) -> Marker | None:
    """The v3 marker of a line as compress writes it, by one match of its bytes alone, the
    line not parsed: for a line the whole-file check found as compress wrote it (restore's
    output is then the original the marker names, checked by its sha256, whatever else the
    line holds). None for any other line: `read_marker` reads those."""
    start = data.rfind(_MARKER_MEMBER)
    match = _WELL_FORMED_V3.fullmatch(data, start) if start > 0 else None
    return None if match is None else _v3_marker(match)


def _v3_marker(match: re.Match[bytes]) -> Marker:
    blob, line, digest, size, lines, ui_only = match.groups()
    return Marker(
        _hex_digest(digest),
        int(size),
        (),
        None,
        (blob.decode(), int(line)),
        int(lines),
        ui_only is not None,
    )


def _checked_marker(raw: Any, where: str) -> Marker:
    """The full check of a marker `read_marker`'s one match did not take (an older or
    hand-edited form): its fields, then the Marker it says."""
    problem = _marker_problem(raw)
    if problem is not None:
        raise DamagedLineError(f"{where}: unreadable {MARKER_KEY} marker: {problem}")
    if isinstance(raw, str):
        return _from_v3(raw)
    lines = raw.get("lines")
    lines = lines if type(lines) is int else None
    ui_only = raw.get(UI_ONLY_KEY) is True
    if raw["v"] == 2:
        intact = raw["intact"]
        return Marker(
            raw["sha256"],
            raw["size"],
            (),
            raw.get("commit"),
            (intact["blob"], intact["line"]),
            lines,
            ui_only,
        )
    parts = tuple((tuple(part["path"]), part["oid"]) for part in raw["parts"])
    return Marker(raw["sha256"], raw["size"], parts, raw.get("commit"), None, lines, ui_only)


def misplaced(marker: Marker, number: int) -> str | None:
    """Why `marker` cannot be one that compress wrote on line `number`, or None.

    Compress never moves a line: a v2 or v3 marker names the line of a committed version
    that holds the original, which is the marker's own line; and every marker that says
    the file's length (`lines`) was written in a file at least `number` lines long. A
    marker elsewhere arrived with a line that was copied, moved or inserted (a fork or a
    copy of a compressed session); restoring it would write another line's original."""
    if marker.intact is not None and marker.intact[1] != number:
        return (
            f"the line carries a gitclawCompress marker written for line {marker.intact[1]}, "
            "not here (a line copied, moved or inserted)"
        )
    if marker.lines is not None and number > marker.lines:
        return (
            f"the line carries a gitclawCompress marker written in a file of {marker.lines} "
            "lines, not here (a line copied, moved or inserted)"
        )
    return None


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
    number: int | None = None,
    place: str = HERE,
) -> bytes:
    """The original bytes of one line (unchanged if the line carries no marker).

    `notes` collects what was wrong with lines that were restored from their commit.
    `fetch_line` reads a line of an intact blob (v2 and v3 markers); without it the whole blob is
    fetched with `fetch`. `number`, the line's number in its file, refuses a marker that
    compress cannot have written there (see `misplaced`). `place` names where `fetch` looks,
    for the error of an object that is not there.
    """
    marker = read_marker(data, where)
    if marker is None:
        return data
    if number is not None and (problem := misplaced(marker, number)) is not None:
        raise DamagedLineError(f"{where}: {problem}")
    if marker.intact is not None:
        return _from_intact_blob(marker, marker.intact, where, fetch, fetch_line, place)
    return _from_parts(data, marker, where, fetch, from_commit, notes, place)


def _from_parts(
    data: bytes,
    marker: Marker,
    where: str,
    fetch: FetchObject,
    from_commit: Callable[[str], bytes | None] | None,
    notes: list[str] | None,
    place: str,
) -> bytes:
    """The original of a line whose marker names its archived parts (a v1 marker):
    each part spliced back where its stub is, the marker member removed, checked by hash;
    the line from its commit where a part is missing or the result does not match."""
    blobs = {oid: fetch(oid) for _, oid in marker.parts}
    missing = [oid for oid, blob in blobs.items() if blob is None]
    if missing:
        original = _from_commit(marker, from_commit)
        if original is not None:
            return original
        raise MissingObjectError(f"{where}: archived object {missing[0]} {NOT_IN} {place}", missing)
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
            edits.append((span.start, span.end, original_form(blob)))
        original = splice(data, edits)
    except (SpanError, KeyError, PayloadFormError) as error:
        detail = f"no field at {error}" if isinstance(error, KeyError) else str(error)
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
    place: str = HERE,
) -> bytes:
    """A v2 or v3 line: the original is a line of a blob that the archive references."""
    oid, number = intact
    if fetch_line is not None:
        original = fetch_line(oid, number)
    else:
        blob = fetch(oid)
        original = None if blob is None else blob_line(blob, number)
    if original is None:
        raise MissingObjectError(f"{where}: archived object {oid} {NOT_IN} {place}", [oid])
    if len(original) != marker.size or hashlib.sha256(original).hexdigest() != marker.sha256:
        raise GitClawError(
            f"{where}: line {number} of archived object {oid} does not match the recorded "
            "sha256; the object store or the line was altered"
        )
    return original


def restore_line(line: RawLine, source: str, fetch: FetchObject) -> RawLine:
    data = restore_data(line.data, f"{source}:{line.number}", fetch)
    return line if data is line.data else RawLine(line.number, data, line.newline)


def original_size(path: Path) -> int:
    """The size of the file as it was before any compression, read from its markers."""
    total = 0
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        for line in iter_lines(handle):
            try:
                marker = read_marker(line.data, f"{path}:{line.number}")
            except GitClawError:
                marker = None
            total += (marker.size if marker is not None else len(line.data)) + int(line.newline)
    return total
