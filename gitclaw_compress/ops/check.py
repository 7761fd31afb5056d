"""The whole-file check: a session file against what compress recorded when it wrote it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gitclaw_compress.core.lines import (
    MARKER_BYTES,
    RawLine,
    has_marker,
    lines_from_bytes,
    parse_entry,
)
from gitclaw_compress.core.marker import misplaced, read_marker
from gitclaw_compress.errors import GitClawError, shell_line
from gitclaw_compress.store.access import ArchiveAccess, commit_line_source
from gitclaw_compress.store.archive_layout import (
    LINE_DIGEST,
    FileRecord,
    header_key,
    line_digest,
    matching_records,
    record_folder,
)
from gitclaw_compress.store.git import GitFailureError
from gitclaw_compress.store.redactions import applying, redaction_notes, superseded
from gitclaw_compress.store.repository import Repository
from gitclaw_compress.store.session_lines import file_chunks, has_compressed_line, open_lines


@dataclass
class FileCheck:
    """The whole-file check: the file against what compress recorded when it wrote it.

    Each compress run records, in the archive, the sha256, size and line count of the file
    it wrote (FileRecord, keyed by the header line). The file passes when its first `size`
    bytes hash to one of those records: every line compress wrote is then exactly as it
    wrote it, whatever changed inside it; lines after that prefix were appended since, and
    each compressed line among them is still checked by its own marker. When no record
    matches, a staged or committed version that matches one is the reference: each line of
    the file must be that version's line or its restored original, and a line that is
    neither is damaged and is restored from the reference instead.
    """

    status: str  # matched | unrecorded | repaired | damaged
    records: int = 0
    reference: str | None = None  # where a repair takes its lines from
    replacements: dict[int, bytes] = field(default_factory=dict)  # line -> line to restore
    stray: list[int] = field(default_factory=list)  # lines with a marker compress did not write
    differing: list[int] = field(default_factory=list)  # lines named as not what it wrote
    problems: list[str] = field(default_factory=list)


def _matching_record(chunks: Iterator[bytes], records: list[FileRecord]) -> FileRecord | None:
    """The longest record whose size and sha256 match a prefix of the streamed bytes."""
    matches = matching_records(chunks, records)
    return matches[-1] if matches else None


def check_file(
    repo: Repository, path: Path, ref: str, access: ArchiveAccess | None = None
) -> FileCheck:
    """Check the whole file against the records of the archive (see FileCheck).

    The one check that `restore` (every mode), `verify` and `compress` trust line positions
    through: a marker counts only where a record (or, with no record, a committed or
    staged version) shows that compress wrote it there.
    """
    access = access if access is not None else ArchiveAccess(repo, ref)
    check = _check_file(repo, path, ref, access)
    if check.stray and access.fetch_once():  # the records may be in the remote's archive
        check = _check_file(repo, path, ref, access)
    return check


def _check_file(repo: Repository, path: Path, ref: str, access: ArchiveAccess) -> FileCheck:
    rel = repo.relative(path)
    with open_lines(path) as lines:
        first = next(lines, None)
    if first is None:
        return FileCheck("unrecorded")
    records = repo.file_records(ref, header_key(first.data))
    if not records and not repo.has_history and has_compressed_line(path):
        # A store has no commits to hold a line: every session compress wrote there is
        # recorded on the archive ref, so none recorded means the archive lost it.
        check = FileCheck("damaged")
        check.problems.append(
            f"{rel}: holds compressed lines, but the store's archive ({repo.git_dir}) has no "
            f"record of it ({ref} is missing, or is not the one compress wrote); put the "
            "archive back from your backup (docs/stores.md)"
        )
        return check
    if not records:
        return _unrecorded(repo, path, rel, ref, header_key(first.data))
    matches = matching_records(file_chunks(path), records)
    # Forks and copies share the header, so they share its records and redactions: only
    # those of this file's own redactions set records aside (the versions with the secrets).
    notes = applying(redaction_notes(repo, ref, header_key(first.data)), matches, rel)
    aside = superseded(notes)
    if aside:
        records = [record for record in records if record.name() not in aside]
        matches = [record for record in matches if record.name() not in aside]
        if not records:
            return _unrecorded(repo, path, rel, ref, header_key(first.data))
    matched = matches[-1] if matches else None
    if matched is not None and matched.size == max(record.size for record in records):
        return _past_record(path, rel, matched, FileCheck("matched", len(records)))
    later = _later_version(repo, path, rel, records, matched, access)
    if later is not None:
        return later
    if matched is not None:
        return _past_record(path, rel, matched, FileCheck("matched", len(records)))
    if not has_compressed_line(path):  # restored in place, or never compressed under this header
        return FileCheck("unrecorded", len(records))
    return _damaged(repo, path, rel, ref, header_key(first.data), records)


def _later_version(
    repo: Repository,
    path: Path,
    rel: str,
    records: list[FileRecord],
    matched: FileRecord | None,
    access: ArchiveAccess,
) -> FileCheck | None:
    """A later version that compress wrote may be staged or committed: the file compared
    with it, so that damage to what only that version covers is found too."""
    for name, label in ((f":{rel}", "the staged version"), (f"HEAD:{rel}", "HEAD")):
        blob = repo.reader.get(name)
        if blob is None:
            continue
        record = _matching_record(iter([blob]), records)
        if record is not None and (matched is None or record.size > matched.size):
            reference = blob[: record.size]
            verified = matched.lines if matched is not None else 0
            return _repair_from(repo, path, rel, reference, label, access, verified)
    return None


def _damaged(
    repo: Repository, path: Path, rel: str, ref: str, key: str, records: list[FileRecord]
) -> FileCheck:
    """A file with compressed lines that matches no version compress wrote: what differs."""
    check = FileCheck("damaged", len(records))
    first_marker = _misplaced_markers(check, path, rel)  # named first: a line that arrived with one
    if not check.stray:  # no marker out of place: which lines differ from what was written
        named = _against_written(repo, path, rel, ref, key, records)
        if named is not None:
            return named
    check.problems += [
        *marker_problems(path, rel),
        f"{rel}:{first_marker}: the line carries a gitclawCompress marker, but the file "
        f"differs from every version gitclaw-compress wrote ({len(records)} recorded on "
        f"{ref}) and no staged or committed version matches one; a compressed line was "
        "altered, or a line "
        "with a marker was copied, moved or inserted",
    ]
    return check


SHOWN = 10  # differing lines named one by one; more are counted


def _against_written(
    repo: Repository, path: Path, rel: str, ref: str, key: str, records: list[FileRecord]
) -> FileCheck | None:
    """With no staged or committed version to compare with, compare each line with the
    digest of what compress wrote there (the record's content, of the record the file is
    closest to): the lines that differ are named, each for itself. None when no record
    holds digests (written by an older release), or when no compressed line of the file is
    as compress wrote it there (another file with a marker copied in, not a damaged one)."""
    written = _written_digests(repo, ref, key, records)
    if not written:
        return None
    have, marked, unreadable = _line_digests(path, rel)

    def differing(wanted: list[bytes]) -> list[int]:
        last = len(wanted)
        return [
            number
            for number, (want, (digest, bare)) in enumerate(zip(wanted, have, strict=False), 1)
            # the last line written had no newline: the agent appended one, and lines
            if digest != want and not (number == last and bare == want)
        ]

    count, wanted = min(written, key=lambda pair: len(differing(pair[1])))
    check = FileCheck("damaged", len(records))
    check.differing = differing(wanted)
    if not marked - set(check.differing):
        return None  # no compressed line is as written: not a damaged copy of what it wrote
    for number in check.differing[:SHOWN]:
        if number in unreadable:
            check.problems.append(unreadable[number])
            continue
        what = (
            "the line carries a gitclawCompress marker, but differs from what gitclaw-compress "
            "wrote there (a compressed line was altered, or a line with a marker was copied, "
            "moved or inserted)"
            if number in marked
            else "the line differs from what gitclaw-compress wrote"
        )
        check.problems.append(
            f"{rel}:{number}: {what}, and no staged or committed version holds it intact"
        )
    if len(check.differing) > SHOWN:
        check.problems.append(
            f"{rel}: {len(check.differing) - SHOWN} more lines differ from what "
            "gitclaw-compress wrote"
        )
    if len(have) < count:
        check.problems.append(
            f"{rel}: {len(have)} lines, but gitclaw-compress wrote {count}; lines were cut "
            "or joined"
        )
    if not check.problems:
        return None  # every line is as written: not what this comparison can explain
    return check


def _written_digests(
    repo: Repository, ref: str, key: str, records: list[FileRecord]
) -> list[tuple[int, list[bytes]]]:
    """(lines, the digest of each line) of every record that holds its lines' digests."""
    tip = repo.rev_parse(ref)
    written: list[tuple[int, list[bytes]]] = []
    for record in records:
        blob = repo.reader.get(f"{tip}:{record_folder(key)}/{record.name()}") if tip else None
        if blob and len(blob) == record.lines * LINE_DIGEST:
            cut = range(0, len(blob), LINE_DIGEST)
            written.append((record.lines, [blob[at : at + LINE_DIGEST] for at in cut]))
    return written


def _line_digests(
    path: Path, rel: str
) -> tuple[list[tuple[bytes, bytes]], set[int], dict[int, str]]:
    """Each line's digest (with its newline and without), the lines that name the marker
    key, and why each of those whose marker does not read does not."""
    have: list[tuple[bytes, bytes]] = []
    marked: set[int] = set()
    unreadable: dict[int, str] = {}
    with open_lines(path) as lines:
        for line in lines:
            have.append((line_digest(line.data, line.newline), line_digest(line.data, False)))
            if MARKER_BYTES in line.data:
                marked.add(line.number)
                try:
                    read_marker(line.data, f"{rel}:{line.number}")
                except GitClawError as error:  # its own cause, named as marker_problems does
                    unreadable[line.number] = str(error)
    return have, marked, unreadable


def _carries_marker(data: bytes, where: str) -> bool:
    try:
        return read_marker(data, where) is not None
    except GitClawError:
        return True  # names the key but cannot be read: not a line compress wrote either


def _misplaced_here(data: bytes, where: str, number: int) -> str | None:
    """Why the marker of this line cannot be one compress wrote on line `number`, or None
    (no marker, an unreadable one, which marker_problems names, or one that fits)."""
    try:
        marker = read_marker(data, where)
    except GitClawError:
        return None
    return None if marker is None else misplaced(marker, number)


def _misplaced_markers(check: FileCheck, path: Path, rel: str) -> int:
    """Every line whose marker compress cannot have written where it stands, as stray; the
    number of the first line that names the marker key (0 if none does)."""
    first = 0
    with open_lines(path) as lines:
        for line in lines:
            if MARKER_BYTES in line.data:
                first = first or line.number
                problem = _misplaced_here(line.data, f"{rel}:{line.number}", line.number)
                if problem is not None:
                    _stray(check, rel, line.number, problem)
    return first


def _stray(check: FileCheck, rel: str, number: int, problem: str | None = None) -> None:
    check.status = "damaged"
    check.stray.append(number)
    check.problems.append(
        f"{rel}:{number}: "
        + (
            problem
            or "the line carries a gitclawCompress marker that gitclaw-compress did not write "
            "there (a line copied, moved or inserted, or one that arrived with a marker)"
        )
    )


def _past_record(path: Path, rel: str, record: FileRecord, check: FileCheck) -> FileCheck:
    """Lines after what the record covers were appended since: none may carry a marker."""
    with open(path, "rb") as handle:
        handle.seek(record.size)
        if not has_marker(handle):
            return check
    with open_lines(path) as lines:
        for line in lines:
            if line.number > record.lines and _carries_marker(line.data, f"{rel}:{line.number}"):
                _stray(check, rel, line.number)
    return check


def _unrecorded(repo: Repository, path: Path, rel: str, ref: str, key: str) -> FileCheck:
    """No record for this session (compressed by a release before records, or never by this
    tool): a marker counts only on a line that HEAD's or the staged version holds at the
    same line number, since compress runs before the commit that takes its output, and
    only if it is not another session's (see `_another_sessions`)."""
    check = FileCheck("unrecorded")
    if not has_compressed_line(path):
        return check
    versions = [repo.reader.get(name) for name in (f"HEAD:{rel}", f":{rel}")]
    held = [lines_from_bytes(blob) for blob in versions if blob is not None]
    headers: dict[str, str | None] = {}  # intact blob -> the key of its line 1
    with open_lines(path) as lines:
        for line in lines:
            where = f"{rel}:{line.number}"
            if not _carries_marker(line.data, where):
                continue
            problem = _misplaced_here(line.data, where, line.number)
            if problem is None:
                problem = _another_sessions(repo, line.data, where, ref, key, headers)
            if problem is not None or not any(
                len(version) >= line.number and version[line.number - 1].data == line.data
                for version in held
            ):  # a committed line may be a copy too: its marker must fit where it stands
                _stray(check, rel, line.number, problem)
    return check


def _another_sessions(
    repo: Repository,
    data: bytes,
    where: str,
    ref: str,
    key: str,
    headers: dict[str, str | None],
) -> str | None:
    """Why a marker on a line of a session with no record is another session's, or None.

    A v2 or v3 marker names a version of the session it was written in: that version's
    line 1 must be this session's (line 1 never changes). A v1 marker names payloads: the
    archive commit that first took them records every session it wrote, so one that
    recorded other sessions and not this one took them for another session. Either way the
    line was copied from that session (`misplaced` cannot tell when the line number fits,
    or when the marker names none)."""
    try:
        marker = read_marker(data, where)
    except GitClawError:
        return None  # marker_problems names it
    if marker is None:
        return None
    if marker.intact is not None:
        blob = marker.intact[0]
        if blob not in headers:
            version = repo.reader.get(blob)
            headers[blob] = None if version is None else header_key(version.split(b"\n", 1)[0])
        if headers[blob] not in (None, key):
            return (
                f"the line carries a gitclawCompress marker that names a version of another "
                f"session ({blob}, whose line 1 differs), and this session has no record (a "
                "line copied from that session)"
            )
        return None
    sessions = repo.payload_sessions(ref)
    for _, oid in marker.parts:
        recorded = sessions.get(oid, frozenset())
        if recorded and key not in recorded:
            return (
                f"the line carries a gitclawCompress marker whose payload {oid} was archived "
                "for another session, and this session has no record (a line copied from "
                "another session)"
            )
    return None


def marker_problems(path: Path, rel: str) -> list[str]:
    """The lines whose marker cannot be read, named first when a file is damaged."""
    problems: list[str] = []
    if not has_compressed_line(path):  # a file compressed for the first time: one fast scan
        return problems
    with open_lines(path) as lines:
        for line in lines:
            if MARKER_BYTES in line.data:
                try:
                    read_marker(line.data, f"{rel}:{line.number}")
                except GitClawError as error:
                    problems.append(str(error))
    return problems


class _Copies:
    """Which line of the reference a line's bytes are, or the restored original of (the
    originals are worked out only when a line is not one of the reference's lines)."""

    def __init__(self, expected: list[RawLine], original: Callable[[bytes, int], bytes | None]):
        self._expected = expected
        self._original = original
        self._lines = {_digest(line.data): line.number for line in reversed(expected)}
        self._originals: dict[bytes, int] | None = None

    def of(self, data: bytes) -> int | None:
        digest = _digest(data)
        if digest in self._lines:
            return self._lines[digest]
        if MARKER_BYTES in data:
            return None
        if self._originals is None:
            self._originals = {}
            for line in reversed(self._expected):
                if MARKER_BYTES in line.data:
                    restored = self._original(line.data, line.number)
                    if restored is not None:
                        self._originals[_digest(restored)] = line.number
        return self._originals.get(digest)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _repair_from(
    repo: Repository,
    path: Path,
    rel: str,
    reference: bytes,
    label: str,
    access: ArchiveAccess,
    verified_lines: int,
) -> FileCheck:
    """Compare the file line by line with a version compress wrote (see FileCheck).

    The first `verified_lines` are covered by an older record that the file matches (it is
    an older version that compress wrote, maybe with lines appended). Any other line passes
    when it is the reference's line, or, without a marker, the reference line's original
    (restored in place, or appended to an older version). Any other line is damaged, and
    the reference's line replaces it.
    """
    check = FileCheck("repaired", reference=label)
    from_commit = commit_line_source(repo, rel)
    expected = lines_from_bytes(reference)
    with open_lines(path) as lines:
        current = list(lines)

    def original(data: bytes, number: int) -> bytes | None:
        try:
            return access.restore(data, f"{rel}:{number}", from_commit(number), number)
        except GitFailureError:
            raise
        except GitClawError:
            return None

    copies = _Copies(expected, original)
    for want, have in zip(expected, current, strict=False):
        if have.data == want.data and have.newline == want.newline:
            continue
        if want.number <= verified_lines:
            continue  # the record that the file matches covers this line
        # A plain line may be the original (restored in place, or an older version);
        # a line with a marker that is not the reference's was altered.
        plain = MARKER_BYTES not in have.data and have.newline == want.newline
        if plain and have.data == original(want.data, want.number):
            continue
        # A line of the reference (or its original) at another place: lines were moved,
        # duplicated or inserted, so no line number can be trusted to repair from.
        source = copies.of(have.data)
        if source is not None:
            return _moved(check, label, rel, have.number, source)
        check.replacements[want.number] = want.data
        check.problems.append(
            f"{rel}:{want.number}: the line differs from what gitclaw-compress wrote; "
            f"{label} holds it intact"
        )
    return _verdict(check, copies, current, len(expected), verified_lines, label, rel)


def _verdict(
    check: FileCheck,
    copies: _Copies,
    current: list[RawLine],
    expected: int,
    verified_lines: int,
    label: str,
    rel: str,
) -> FileCheck:
    """After the lines `_repair_from` compared (the `expected` the reference holds): the
    lines appended since, a file cut short, and what the check says in the end."""
    for have in current[expected:]:  # appended since: not a copy, and no marker
        source = copies.of(have.data) if check.replacements else None
        if source is not None:
            return _moved(check, label, rel, have.number, source)
        if _carries_marker(have.data, f"{rel}:{have.number}"):
            _stray(check, rel, have.number)
            return check
    if len(current) < expected and (check.replacements or not verified_lines):
        check.status = "damaged"
        check.problems.append(
            f"{rel}: {len(current)} lines, but gitclaw-compress wrote {expected}; "
            "lines were cut or joined"
        )
    elif check.replacements and any(parse_entry(line.data) is None for line in current[expected:]):
        # A line after the recorded ones that is not JSON may be a piece of a split line.
        check.status = "damaged"
        check.problems.append(
            f"{rel}: lines after line {expected} are not all JSON objects; a damaged "
            "line may have been split, so nothing is restored from history"
        )
    elif not check.replacements:
        check.status = "matched"
    return _explained(check, label, rel)


def _moved(check: FileCheck, label: str, rel: str, number: int, source: int) -> FileCheck:
    """Line `number` is line `source` of what was written: no line number can be trusted."""
    check.status = "damaged"
    check.problems.append(
        f"{rel}:{number}: the line is line {source} of what gitclaw-compress wrote; lines were "
        "moved, duplicated or inserted"
    )
    return _explained(check, label, rel)


def _explained(check: FileCheck, label: str, rel: str) -> FileCheck:
    """Say what restore does with a repaired file, or, for a damaged one, the cause first
    (restore refuses with it) and the fix that is true here."""
    if check.status == "repaired":
        check.problems = [f"{problem} (restore takes it from there)" for problem in check.problems]
    elif check.status == "damaged":
        where = () if label == "the staged version" else ("HEAD",)
        fix = shell_line("git", "checkout", *where, "--", rel)
        cause = check.problems.pop()
        check.problems.insert(
            0, f"{cause}; {label} is intact: `{fix}` brings it back (losing lines added since)"
        )
    return check
