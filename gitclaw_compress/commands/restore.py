"""`restore PATH [-o OUT]` and `restore --all`: rebuild originals byte for byte."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    SessionPathType,
    archive_access,
    config_for,
    config_option,
    echo_json,
    human_bytes,
    json_option,
    no_fetch_option,
    open_repo,
    require_session,
    session_path,
)
from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.errors import EXIT_USAGE, GitClawError
from gitclaw_compress.ops.discovery import all_sessions, sessions_under
from gitclaw_compress.ops.restore import keep_times, restore_file, restore_to_stream
from gitclaw_compress.progress import SILENT, Progress, file_size, running
from gitclaw_compress.store.access import ArchiveAccess
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.fileio import AtomicFile
from gitclaw_compress.store.session_lines import has_compressed_line


def _stat_key(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def restore_all(
    repo: Repository,
    config_path: Path | None,
    no_fetch: bool,
    *,
    progress: Progress = SILENT,
    under: Path | None = None,
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Every compressed session of the work tree (or under the folder `under`) back to its
    original, in place; `notes` gets a line for each one whose original `redact` changed.

    All originals are written and fsynced to temp files first, and only then renamed over
    the sessions: a failure on any file (a missing payload, a locked file) changes none.
    """
    from gitclaw_compress.secrets.redact import redaction_note  # not at start-up

    config = config_for(repo, None, config_path)
    found = sessions_under(under) if under is not None else all_sessions(repo, config)
    paths = [path for path in found if has_compressed_line(path)]
    results: list[dict[str, Any]] = []
    accesses: dict[str, ArchiveAccess] = {}
    pending: list[tuple[AtomicFile, tuple[int, int, int], str]] = []
    with contextlib.ExitStack() as locks:
        for path in paths:  # every file locked before the first write
            rel = repo.relative(path)
            locks.enter_context(repo.lock(rel, rel))
        try:
            with running(progress, "restoring", paths, repo.relative, file_size) as announced:
                for path in announced:
                    rel = repo.relative(path)
                    access = archive_access(repo, path, config_path, no_fetch)
                    access = accesses.setdefault(access.ref, access)
                    note = redaction_note(repo, access.ref, path)
                    if note is not None and notes is not None:
                        notes.append(note)
                    stat = path.stat()
                    before = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
                    atomic = AtomicFile(path, doing="restoring")
                    pending.append((atomic, before, rel))
                    written = restore_to_stream(repo, path, access.ref, atomic, access)
                    atomic.seal()
                    keep_times(repo, atomic, stat)
                    results.append({"path": rel, "status": "restored", "bytes": written})
            for atomic, before, rel in pending:
                if _stat_key(atomic.target) != before:
                    raise GitClawError(f"{rel}: changed while it was being restored; run again")
            for atomic, _, rel in pending:
                atomic.replace(rel)  # an interrupt names it as the user does
        except BaseException:
            for atomic, _, _ in pending:
                atomic.discard()
            raise
    return results


def restore_one(
    repo: Repository, path: Path, output: Path | None, access: ArchiveAccess
) -> dict[str, Any]:
    rel = repo.relative(path)
    if output is None:
        if not has_compressed_line(path):
            return {"path": rel, "status": "unchanged", "bytes": path.stat().st_size}
        written = restore_file(repo, path, access.ref, None, access)
        return {"path": rel, "status": "restored", "bytes": written}
    # Elsewhere through the engine too, which knows how to write to devices and links.
    written = restore_file(repo, path, access.ref, output, access)
    return {"path": rel, "status": "restored", "bytes": written, "output": str(output)}


def describe(result: dict[str, Any]) -> str:
    where = result.get("output") or result["path"]
    if result["status"] == "unchanged":
        return f"unchanged {where}: no compressed line, nothing to restore"
    return f"restored {where}: {human_bytes(result['bytes'])}"


@click.command("restore")
@click.argument("path", required=False, type=SessionPathType(folders=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Write the original here ('-' for stdout) instead of replacing PATH.",
)
@click.option(
    "--all",
    "take_all",
    is_flag=True,
    help="Every compressed session under sessions.globs, in place (the way out, with `uninstall`).",
)
@no_fetch_option
@config_option
@json_option
def command(
    path: Path | None,
    output: Path | None,
    take_all: bool,
    no_fetch: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Rebuild the original session file, byte for byte, from the git archive.

    Lines appended after compression are kept as they are. Every restored line is checked
    against the sha256 recorded when it was compressed. In a clone that lacks archived
    payloads (`--depth 1`, single branch) it uses the commits where a line was intact, then
    fetches the archive ref from archive.remote once (unless --no-fetch).

    With --all, every compressed session of the work tree is restored in place (with a
    folder as PATH, every one under it): all originals are written first, then renamed over
    the sessions together.
    """
    folder = path if path is not None and path.is_dir() else None
    if take_all or folder is not None:
        if (take_all and path is not None and folder is None) or output is not None:
            raise GitClawError(  # --all with a folder: the sessions under it, as without --all
                "give PATH (and -o), a folder, or --all, not several", exit_code=EXIT_USAGE
            )
        _restore_all(folder, config_path, no_fetch, as_json)
        return
    if path is None:
        raise GitClawError("give a session PATH, or --all", exit_code=EXIT_USAGE)
    if as_json and output is not None and str(output) == "-":  # stdout holds the session
        raise GitClawError(
            "-o - writes the session to stdout, where --json would go; give one of them",
            exit_code=EXIT_USAGE,
        )
    path = session_path(path)
    require_session(path)
    repo = open_repo(path)
    access = archive_access(repo, path, config_path, no_fetch)
    from gitclaw_compress.secrets.redact import redaction_note

    note = redaction_note(repo, access.ref, path)  # the original had secrets `redact` removed
    if note:
        click.echo(f"gitclaw-compress: note: {note}", err=True)
    if output is not None and str(output) == "-":
        restore_to_stream(repo, path, access.ref, sys.stdout.buffer, access)
        sys.stdout.buffer.flush()
        return
    result = restore_one(repo, path, output, access)
    if as_json:
        echo_json({"ok": True, "files": [result], "bytes": result["bytes"]})
        return
    click.echo(describe(result))


def _restore_all(
    folder: Path | None, config_path: Path | None, no_fetch: bool, as_json: bool
) -> None:
    """`restore --all` (or a folder): every compressed session of the work tree (under the
    folder) restored in place, then one line for each and the total."""
    repo = open_repo(folder or Path.cwd())
    progress = progress_for(as_json, finding=True)
    notes: list[str] = []
    try:
        results = restore_all(
            repo, config_path, no_fetch, progress=progress, under=folder, notes=notes
        )
    finally:
        progress.end()
    for line in notes:  # the originals that hold [REDACTED:…] markers, as without --all
        click.echo(f"gitclaw-compress: note: {line}", err=True)
    total = sum(result["bytes"] for result in results)
    if as_json:
        echo_json({"ok": True, "files": results, "bytes": total})
        return
    for result in results:
        click.echo(describe(result))
    count = len(results)
    click.echo(
        f"restored {count} session{'' if count == 1 else 's'}: {human_bytes(total)}"
        if results
        else f"nothing to restore: no compressed session under {folder or repo.root}"
    )
