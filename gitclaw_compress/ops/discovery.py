"""Finding the sessions that the agent just touched, without help and never by mtime.

In a fresh CI checkout every file has the same mtime, so `ls -t` means nothing there. The
order, first match wins:

1. `--issue N`: the session named by `<agent folder>/state/issues/N.json`.
2. Session files changed against HEAD (modified, staged, or untracked), plus the sessions
   named by mapping files changed against HEAD.
3. The session named by the mapping file with the newest `updatedAt`.
4. The session whose last entry has the newest `timestamp`.

Where sessions live is `sessions.globs`; where mapping files live is `sessions.mappingGlobs`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from gitclaw_compress.config import Config
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.archive import Repository

TAIL_CHUNK = 65536
TAIL_MAX_LINES = 200  # how far back from the end to look for an entry with a timestamp


@dataclass(frozen=True, slots=True)
class Discovery:
    paths: list[Path]
    reason: str  # issue | changed | mapping | newest | all | none
    detail: str  # one human sentence on why these files


def _repo_files(repo: Repository, patterns: Iterable[str]) -> set[Path]:
    """The files matching `patterns` that git tracks or would add (not ignored).

    Asked of git, not of the file system: a walk for `**/subagents/…` would visit every
    folder of the work tree (node_modules, build output) on every hook run.
    """
    specs = _pathspecs(patterns)
    if not specs:
        return set()
    out = repo.git(
        "-c",
        "core.quotePath=false",
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        *specs,
    )
    found: set[Path] = set()
    for name in out.split(b"\0"):
        if name:
            path = repo.root / os.fsdecode(name)
            if path.is_file():  # deleted from the work tree, or a submodule
                found.add(path)
    return found


def all_sessions(repo: Repository, config: Config) -> list[Path]:
    """Every file matching the configured session globs, sorted by path."""
    return sorted(_repo_files(repo, repo.session_globs(config["sessions.globs"])))


def work_tree_jsonl(repo: Repository) -> list[Path]:
    """Every .jsonl file git tracks or would add (not ignored), sorted by path."""
    return sorted(_repo_files(repo, ["**/*.jsonl"]))


def sessions_under(folder: Path) -> list[Path]:
    """Every session file under `folder`, at any depth (`.git` skipped), recognized by
    content as discovery recognizes them (never by name alone), sorted by path."""
    from gitclaw_compress.formats import detect_file

    found: list[Path] = []
    for root, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if name != ".git")
        for name in sorted(files):
            path = Path(root) / name
            if not name.endswith(".jsonl") or not path.is_file():
                continue
            try:
                detect_file(path, str(path))
            except (GitClawError, OSError):
                continue
            found.append(path)
    return found


def _pathspecs(patterns: Iterable[str]) -> list[str]:
    return [f":(glob){pattern}" for pattern in patterns]


def changed_files(repo: Repository, patterns: Iterable[str]) -> list[Path]:
    """Files matching `patterns` that differ from HEAD: modified, staged or untracked.

    Works with no commit yet (everything is new) and on a detached HEAD.
    """
    specs = _pathspecs(patterns)
    if not specs:
        return []
    out = repo.git(
        "--no-optional-locks",  # never take the index lock just to refresh it
        "-c",
        "core.quotePath=false",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        *specs,
    )
    found: list[Path] = []
    for record in out.split(b"\0"):
        if len(record) < 4:
            continue
        path = repo.root / os.fsdecode(record[3:])
        if path.is_file():  # deleted files are not sessions to compress
            found.append(path)
    return sorted(set(found))


def _mapping(path: Path) -> dict[str, object] | None:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _mapped_session(repo: Repository, mapping: Path, warnings: list[str]) -> Path | None:
    """The session file a mapping file names, if it names one inside the repository."""
    where = repo.relative(mapping)
    try:
        value = orjson.loads(mapping.read_bytes())
    except OSError as error:
        warnings.append(f"{where}: cannot be read ({error.strerror or error}); ignored")
        return None
    except orjson.JSONDecodeError:
        warnings.append(f"{where}: not valid JSON; ignored")
        return None
    if not isinstance(value, dict):
        warnings.append(f"{where}: not a JSON object; ignored")
        return None
    if not isinstance(value.get("sessionPath"), str) or not value["sessionPath"]:
        warnings.append(f"{where}: no sessionPath string; ignored")
        return None
    named = Path(str(value["sessionPath"]))
    session = named if named.is_absolute() else repo.root / named
    try:
        repo.relative(session)
    except GitClawError:
        warnings.append(f"{where}: sessionPath {named} is outside the repository; ignored")
        return None
    if not session.is_file():
        warnings.append(f"{where}: sessionPath {named} does not exist; ignored")
        return None
    return session


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 string (naive means UTC) or milliseconds since the epoch."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return None


def _lines_from_end(path: Path) -> Iterable[bytes]:
    """The lines of a file, last first, reading only as much of its end as needed."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        position = handle.tell()
        rest = b""  # the start of the line being read backwards (its tail is known)
        while position > 0:
            step = min(TAIL_CHUNK, position)
            position -= step
            handle.seek(position)
            pieces = handle.read(step).split(b"\n")
            if len(pieces) == 1:
                rest = pieces[0] + rest
                continue
            yield pieces[-1] + rest
            yield from reversed(pieces[1:-1])
            rest = pieces[0]
        yield rest


def last_timestamp(path: Path) -> datetime | None:
    """The `timestamp` of the last entry that has one (blank and broken lines skipped)."""
    seen = 0
    for line in _lines_from_end(path):
        if not line.strip():
            continue
        seen += 1
        if seen > TAIL_MAX_LINES:
            return None
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            stamp = parse_time(entry.get("timestamp"))
            if stamp is not None:
                return stamp
    return None


def newest_session(paths: Iterable[Path]) -> tuple[Path, datetime] | None:
    """The session whose last entry is the newest; ties go to the greatest path."""
    best: tuple[datetime, str, Path] | None = None
    for path in paths:
        stamp = last_timestamp(path)
        if stamp is None:
            continue
        key = (stamp, path.as_posix(), path)
        if best is None or key[:2] > best[:2]:
            best = key
    return (best[2], best[0]) if best is not None else None


def discover(
    repo: Repository,
    config: Config,
    *,
    issue: int | None = None,
    warnings: list[str] | None = None,
) -> Discovery:
    """The sessions to compress when no path is given (see the module doc for the order)."""
    notes = warnings if warnings is not None else []
    mapping_globs: list[str] = config["sessions.mappingGlobs"]
    if issue is not None:
        return _by_issue(repo, issue, mapping_globs, notes)

    globs = repo.session_globs(config["sessions.globs"])
    # In an agent's store every session is new to git: there, the ones at rest.
    changed_sessions, _, _ = repo.at_rest(changed_files(repo, globs), config["stores.quietMinutes"])
    changed = set(changed_sessions)
    changed_mappings = changed_files(repo, mapping_globs)
    for mapping in changed_mappings:
        session = _mapped_session(repo, mapping, notes)
        if session is not None:
            changed.add(session)
    if changed or not repo.has_history:  # a store: its sessions at rest, or none
        return Discovery(sorted(changed), "changed", repo.changed_means)

    latest = _newest_mapping(repo, mapping_globs)
    if latest is not None:
        session = _mapped_session(repo, latest, notes)
        if session is not None:
            return Discovery(
                [session],
                "mapping",
                f"named by {repo.relative(latest)}, the newest mapping file (updatedAt)",
            )

    newest = newest_session(all_sessions(repo, config))
    if newest is not None:
        return Discovery(
            [newest[0]],
            "newest",
            f"its last entry is the newest ({newest[1].isoformat()})",
        )
    return Discovery([], "none", "no session files under " + ", ".join(globs))


def _by_issue(
    repo: Repository, issue: int, mapping_globs: list[str], notes: list[str]
) -> Discovery:
    """The sessions issue `issue`'s mapping files name; an error when none does."""
    mappings = sorted(
        path
        for path in _repo_files(repo, mapping_globs)
        if path.stem == str(issue) and path.suffix == ".json"
    )
    if not mappings:
        raise GitClawError(
            f"no mapping file for issue {issue} (looked for {issue}.json under "
            f"{', '.join(mapping_globs)}); pass the session path instead"
        )
    why: list[str] = []  # each mapping's reason, in the error: warnings go unprinted then
    sessions = [s for m in mappings if (s := _mapped_session(repo, m, why)) is not None]
    if not sessions:
        reasons = "; ".join(reason.removesuffix("; ignored") for reason in why)
        raise GitClawError(f"issue {issue}: {reasons}; pass the session path instead")
    notes.extend(why)
    return Discovery(sorted(set(sessions)), "issue", f"named by issue {issue}'s mapping")


def _newest_mapping(repo: Repository, mapping_globs: list[str]) -> Path | None:
    """The mapping file with the newest `updatedAt` (by path among equals)."""
    latest: tuple[datetime, str, Path] | None = None
    for mapping in _repo_files(repo, mapping_globs):
        value = _mapping(mapping)
        stamp = parse_time(value.get("updatedAt")) if value is not None else None
        if stamp is None:
            continue
        key = (stamp, mapping.as_posix(), mapping)
        if latest is None or key[:2] > latest[:2]:
            latest = key
    return latest[2] if latest is not None else None
