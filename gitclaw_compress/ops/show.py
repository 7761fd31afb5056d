"""The original line of one entry of a session file, and the sessions that hold an entry."""

from __future__ import annotations

import mmap
import shlex
from dataclasses import dataclass
from pathlib import Path

from gitclaw_compress.config import Config
from gitclaw_compress.core.lines import RawLine, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import detect_file
from gitclaw_compress.formats.base import Format, Unsupported
from gitclaw_compress.model import call_names
from gitclaw_compress.ops.discovery import all_sessions, work_tree_jsonl
from gitclaw_compress.store.access import ArchiveAccess, commit_line_source
from gitclaw_compress.store.repository import Repository
from gitclaw_compress.store.session_lines import open_lines
from gitclaw_compress.units import plural


@dataclass(frozen=True)
class Held:
    """The line of one session file that holds an entry, as it is in the file now."""

    path: Path
    rel: str
    fmt: Format
    line: RawLine


def held_line(repo: Repository, path: Path, entry_id: str) -> Held:
    """The line of the entry with this id, or line N for `L<N>`; else one GitClawError."""
    rel = repo.relative(path)
    fmt = detect_file(path, rel)
    line = entry_line(path, fmt, entry_id)
    if line is None:
        number = line_ref(entry_id)
        if number is not None:
            raise GitClawError(f"{rel}: no line {number}")
        raise GitClawError(f"{rel}: no entry with id {entry_id!r}")
    return Held(path, rel, fmt, line)


def original_of(repo: Repository, held: Held, access: ArchiveAccess) -> bytes:
    """The original bytes of a held line (restored from the archive if needed)."""
    from_commit = commit_line_source(repo, held.rel)
    return access.restore(
        held.line.data,
        f"{held.rel}:{held.line.number}",
        from_commit(held.line.number),
        held.line.number,
    )


def entry_line(path: Path, fmt: Format, entry_id: str) -> RawLine | None:
    """The line of the entry with this id (line N for `L<N>`), as it is in the file now."""
    number = line_ref(entry_id)
    needle = entry_id.encode()
    with open_lines(path) as lines:
        for line in lines:
            if number is not None:
                if line.number == number:
                    return line
            elif needle in line.data:
                entry = parse_entry(line.data)
                if entry is not None and fmt.entry_id(entry) == entry_id:
                    return line
    return None


def sessions_holding(repo: Repository, sessions: list[Path], entry_id: str) -> list[Held]:
    """The sessions with an entry of this id: each file's bytes are searched first, and only
    a file that holds them is read line by line."""
    needle = entry_id.encode()
    found: list[Held] = []
    for path in sessions:
        if not _holds(path, needle):
            continue
        held = _held(repo, path, entry_id)
        if held is not None:
            found.append(held)
    return found


def _held(
    repo: Repository, path: Path, entry_id: str, named: str | None = None, first: bytes = b""
) -> Held | None:
    """Line `entry_id` of `path`, if it is a session of a known format (and, with `named`,
    one whose first line `first` names it so)."""
    rel = repo.relative(path)
    try:
        fmt = detect_file(path, rel)
    except GitClawError:
        return None  # not a session of a known format: not where a stub points
    if named is not None:
        entry = parse_entry(first)
        if entry is None or fmt.session_id(entry) != named:
            return None
    line = entry_line(path, fmt, entry_id)
    return None if line is None else Held(path, rel, fmt, line)


def sessions_of(
    repo: Repository, config: Config, entry_id: str, session_id: str | None = None
) -> list[Held]:
    """Every session with an entry of this id among the files under `sessions.globs` (the
    sessions `--all` takes), or, when none holds it, among the work tree's other .jsonl
    files: copies of one session (a checkpoint beside the transcript, a fork) may hold it
    too. With `session_id`, the sessions of that id (`sessions_named`) and their line
    `entry_id` (`L42`, the form Codex's stubs use). None is one GitClawError that says where
    it looked, and the command with a path."""
    if session_id is None and line_ref(entry_id) is not None:
        raise GitClawError(
            f"{entry_id} is a line number, which only means something in one file; "
            f"give the session path: gitclaw-compress show PATH {shlex.quote(entry_id)}"
        )
    sessions = _distinct(all_sessions(repo, config))
    found = _holding(repo, sessions, entry_id, session_id)
    if found:
        return found
    # `compress PATH` takes a session outside the globs too, and its stubs name uuids
    # alone all the same: look at the work tree's other .jsonl files before giving up.
    listed = {path.resolve() for path in sessions}
    others = _distinct([path for path in work_tree_jsonl(repo) if path.resolve() not in listed])
    found = _holding(repo, others, entry_id, session_id)
    if not found:
        what = f"an entry with id {entry_id!r}"
        if session_id is not None:
            what = f"{entry_id} of session {session_id}"
        raise GitClawError(
            f"no session holds {what} (searched "
            f"{plural(len(sessions), 'file')} under sessions.globs and "
            f"{plural(len(others), 'other .jsonl file')} in {repo.root}); "
            f"give the session path: gitclaw-compress show PATH {shlex.quote(entry_id)}"
        )
    return found


def _holding(
    repo: Repository, sessions: list[Path], entry_id: str, session_id: str | None
) -> list[Held]:
    if session_id is None:
        return sessions_holding(repo, sessions, entry_id)
    return sessions_named(repo, sessions, session_id, entry_id)


def sessions_named(
    repo: Repository, sessions: list[Path], session_id: str, entry_id: str
) -> list[Held]:
    """The line `entry_id` of each session whose first line names it `session_id` (a Codex
    rollout's `session_meta`): only line 1 of each file is read to find them."""
    needle = session_id.encode()
    found: list[Held] = []
    for path in sessions:
        first = _first_line(path)
        if needle not in first:
            continue
        held = _held(repo, path, entry_id, session_id, first)
        if held is not None:
            found.append(held)
    return found


# A rollout's session_meta holds the base instructions (tens of KB): far below this.
_HEADER_MAX_BYTES = 4 << 20


def _first_line(path: Path) -> bytes:
    """Line 1 of a file (cut at `_HEADER_MAX_BYTES`), or b"" when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.readline(_HEADER_MAX_BYTES)
    except OSError:
        return b""


def differing_copies(entry_id: str, found: list[Held]) -> GitClawError:
    """The refusal when the sessions that hold an id give different entries for it."""
    names = [held.rel for held in found]
    command = f"gitclaw-compress show {shlex.quote(names[0])} {shlex.quote(entry_id)}"
    return GitClawError(
        f"{plural(len(names), 'session')} hold an entry with id {entry_id!r}: "
        f"{', '.join(names)}; the entries differ; name one: {command}"
    )


def _distinct(paths: list[Path]) -> list[Path]:
    """One path per file: a symlink to a session that is listed itself is the same session."""
    chosen: dict[Path, Path] = {}
    for path in paths:
        real = path.resolve()
        if real not in chosen or chosen[real].is_symlink():
            chosen[real] = path
    return sorted(chosen.values())


def _holds(path: Path, needle: bytes) -> bool:
    """Whether the file's bytes contain `needle`, without reading it into memory."""
    try:
        with open(path, "rb") as handle:
            if not handle.seek(0, 2):
                return False  # an empty file cannot be mapped
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(needle) != -1
    except OSError:
        return False


def tool_names(path: Path, fmt: Format) -> dict[str, str]:
    """The tool of every call in the file by its call id, for the header of a result whose
    line names no tool (compression keeps the calls' names)."""
    try:
        with open_lines(path) as lines:
            return call_names(fmt.views(lines))
    except Unsupported:
        return {}


def line_ref(ref: str) -> int | None:
    """N for a line reference "L<N>", the form stubs use for lines without an id."""
    if ref.startswith("L") and ref[1:].isdigit() and int(ref[1:]) > 0:
        return int(ref[1:])
    return None
