"""`verify [PATH…]`: every stub resolves, every hash matches, every object is on the ref."""

from __future__ import annotations

from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    existing_path,
    json_option,
    open_repo,
)
from gitclaw_compress.engine import VerifyReport, verify_file
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError


@click.command("verify")
@existing_path(nargs=-1, required=False)
@config_option
@json_option
def command(paths: tuple[Path, ...], config_path: Path | None, as_json: bool) -> None:
    """Check compressed session files against the git archive.

    Exits 1 and lists the problems if a stub does not resolve, a hash does not match, or an
    archived object is not reachable from the archive ref.
    """
    if not paths:
        from gitclaw_compress.discovery import all_sessions

        repo = open_repo(Path.cwd())
        paths = tuple(all_sessions(repo, config_for(repo, None, config_path)))
        if not paths:
            raise GitClawError(f"no session files found under {repo.root}")
    repo = open_repo(paths[0])
    archived: dict[str, set[str]] = {}
    reports: list[VerifyReport] = []
    for path in paths:
        ref = config_for(repo, path, config_path)["archive.ref"]
        if ref not in archived:
            archived[ref] = repo.archive_oids(ref)
        reports.append(verify_file(repo, path, ref, archived[ref]))
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
    if problems:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
