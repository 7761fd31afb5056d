"""`verify [PATH…]`: every stub resolves, every hash matches, every object is on the ref."""

from __future__ import annotations

from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    archive_access,
    config_for,
    config_option,
    echo_json,
    existing_path,
    json_option,
    no_fetch_option,
    open_repo,
    session_path,
)
from gitclaw_compress.engine import ArchiveAccess, VerifyReport, verify_file
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError


@click.command("verify")
@existing_path(nargs=-1, required=False)
@no_fetch_option
@config_option
@json_option
def command(
    paths: tuple[Path, ...], no_fetch: bool, config_path: Path | None, as_json: bool
) -> None:
    """Check compressed session files against the git archive.

    Exits 1 and lists the problems if a stub does not resolve, a hash does not match, or an
    archived object is not reachable from the archive ref. A clone that lacks the archive
    fetches it from archive.remote once first (unless --no-fetch).
    """
    if not paths:
        from gitclaw_compress.discovery import all_sessions

        repo = open_repo(Path.cwd())
        paths = tuple(all_sessions(repo, config_for(repo, None, config_path)))
        if not paths:
            raise GitClawError(f"no session files found under {repo.root}")
    paths = tuple(session_path(path) for path in paths)
    repo = open_repo(paths[0])
    accesses: dict[str, ArchiveAccess] = {}
    reports: list[VerifyReport] = []
    for path in paths:
        access = archive_access(repo, path, config_path, no_fetch)
        access = accesses.setdefault(access.ref, access)
        reports.append(verify_file(repo, path, access.ref, access=access))
    problems = [problem for report in reports for problem in report.problems]
    if as_json:
        echo_json({"ok": not problems, "files": [report.as_json() for report in reports]})
    else:
        for report in reports:
            status = "ok" if not report.problems else f"{len(report.problems)} problem(s)"
            click.echo(
                f"{status}: {report.path} ({report.compressed_lines} compressed lines, "
                f"{report.objects} objects)"
            )
            for problem in report.problems:
                click.echo(f"  {problem}")
        leftovers = sorted({item for report in reports for item in report.leftovers})
        if leftovers:  # killed git runs leave these; git never removes them by itself
            click.echo(
                f"note: {len(leftovers)} leftover(s) of killed git runs, safe to delete while "
                f"no git command runs: {', '.join(leftovers)}"
            )
    if problems:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
