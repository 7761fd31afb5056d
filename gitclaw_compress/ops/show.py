"""The original line of one entry of a session file."""

from __future__ import annotations

from pathlib import Path

from gitclaw_compress.core.lines import (
    parse_entry,
)
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import detect_file
from gitclaw_compress.formats.base import Format, Unsupported
from gitclaw_compress.model import call_names
from gitclaw_compress.ops.access import ArchiveAccess, commit_line_source
from gitclaw_compress.ops.session_lines import open_lines
from gitclaw_compress.store.repository import Repository


def find_entry(
    repo: Repository, path: Path, entry_id: str, ref: str, access: ArchiveAccess | None = None
) -> bytes:
    """The original line of the entry with this id, or of line N for `L<N>` (restored from the
    archive if needed)."""
    rel = repo.relative(path)
    from_commit = commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    fmt = detect_file(path, rel)
    number = _line_ref(entry_id)
    needle = entry_id.encode()
    with open_lines(path) as lines:
        for line in lines:
            if number is not None:
                if line.number != number:
                    continue
            elif needle not in line.data:
                continue
            else:
                entry = parse_entry(line.data)
                if entry is None or fmt.entry_id(entry) != entry_id:
                    continue
            return access.restore(line.data, f"{rel}:{line.number}", from_commit(line.number))
    if number is not None:
        raise GitClawError(f"{rel}: no line {number}")
    raise GitClawError(f"{rel}: no entry with id {entry_id!r}")


def tool_names(path: Path, fmt: Format) -> dict[str, str]:
    """The tool of every call in the file by its call id, for the header of a result whose
    line names no tool (compression keeps the calls' names)."""
    try:
        with open_lines(path) as lines:
            return call_names(fmt.views(lines))
    except Unsupported:
        return {}


def _line_ref(ref: str) -> int | None:
    """N for a line reference "L<N>", the form stubs use for lines without an id."""
    if ref.startswith("L") and ref[1:].isdigit() and int(ref[1:]) > 0:
        return int(ref[1:])
    return None
