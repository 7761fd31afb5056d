"""The whole-file check: a session file against what compress recorded when it wrote it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gitclaw_compress.core.lines import (
    MARKER_BYTES,
    lines_from_bytes,
    parse_entry,
)
from gitclaw_compress.core.marker import read_marker
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.ops.access import ArchiveAccess, commit_line_source
from gitclaw_compress.ops.session_lines import file_chunks, has_compressed_line, open_lines
from gitclaw_compress.store.archive_layout import FileRecord, header_key
from gitclaw_compress.store.git import GitFailureError
from gitclaw_compress.store.repository import Repository


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
    problems: list[str] = field(default_factory=list)


def _matching_record(chunks: Iterator[bytes], records: list[FileRecord]) -> FileRecord | None:
    """The longest record whose size and sha256 match a prefix of the streamed bytes."""
    wanted = sorted(records, key=lambda record: record.size)
    digest = hashlib.sha256()
    position = 0
    found = None
    index = 0
    for chunk in chunks:
        while index < len(wanted) and wanted[index].size <= position + len(chunk):
            record = wanted[index]
            probe = digest.copy()
            probe.update(chunk[: record.size - position])
            if probe.hexdigest() == record.sha256:
                found = record
            index += 1
        digest.update(chunk)
        position += len(chunk)
        if index == len(wanted):
            break
    while index < len(wanted):  # records longer than the file never match
        if wanted[index].size == position and digest.hexdigest() == wanted[index].sha256:
            found = wanted[index]
        index += 1
    return found


def check_file(
    repo: Repository, path: Path, ref: str, access: ArchiveAccess | None = None
) -> FileCheck:
    """Check the whole file against the records of the archive (see FileCheck)."""
    rel = repo.relative(path)
    with open_lines(path) as lines:
        first = next(lines, None)
    if first is None:
        return FileCheck("unrecorded")
    records = repo.file_records(ref, header_key(first.data))
    if not records:
        return FileCheck("unrecorded")
    matched = _matching_record(file_chunks(path), records)
    if matched is not None and matched.size == max(record.size for record in records):
        return FileCheck("matched", len(records))
    # A later version that compress wrote may be staged or committed: compare with it, so
    # that damage to what only that version covers is found too.
    access = access if access is not None else ArchiveAccess(repo, ref)
    for name, label in ((f":{rel}", "the staged version"), (f"HEAD:{rel}", "HEAD")):
        blob = repo.reader.get(name)
        if blob is None:
            continue
        record = _matching_record(iter([blob]), records)
        if record is not None and (matched is None or record.size > matched.size):
            reference = blob[: record.size]
            verified = matched.lines if matched is not None else 0
            return _repair_from(repo, path, rel, reference, label, access, verified)
    if matched is not None:
        return FileCheck("matched", len(records))
    if not has_compressed_line(path):  # restored in place, or never compressed under this header
        return FileCheck("unrecorded", len(records))
    return FileCheck(
        "damaged",
        len(records),
        problems=[
            *marker_problems(path, rel),
            f"{rel}: the file differs from every version gitclaw-compress wrote "
            f"({len(records)} recorded on {ref}) and no staged or committed version matches "
            "one; a compressed line was altered",
        ],
    )


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
            return access.restore(data, f"{rel}:{number}", from_commit(number))
        except GitFailureError:
            raise
        except GitClawError:
            return None

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
        check.replacements[want.number] = want.data
        check.problems.append(
            f"{rel}:{want.number}: the line differs from what gitclaw-compress wrote; "
            f"{label} holds it intact (restore takes it from there)"
        )
    if len(current) < len(expected) and (check.replacements or not verified_lines):
        check.status = "damaged"
        check.problems.append(
            f"{rel}: {len(current)} lines, but gitclaw-compress wrote {len(expected)}; "
            "lines were cut or joined"
        )
    elif check.replacements and any(
        parse_entry(line.data) is None for line in current[len(expected) :]
    ):
        # A line after the recorded ones that is not JSON may be a piece of a split line.
        check.status = "damaged"
        check.problems.append(
            f"{rel}: lines after line {len(expected)} are not all JSON objects; a damaged "
            "line may have been split, so nothing is restored from history"
        )
    elif not check.replacements:
        check.status = "matched"
    return check
