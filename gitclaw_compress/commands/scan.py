"""`scan [PATH…]`: secrets in session files and in the archive objects a push would send."""

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
    plural,
)
from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.config import Config
from gitclaw_compress.errors import EXIT_PROBLEMS, EXIT_USAGE, GitClawError
from gitclaw_compress.ops.flow import select
from gitclaw_compress.secrets.check import ScanResult, baseline_for, run_scan
from gitclaw_compress.store.repository import Repository


def echo_findings(result: ScanResult, err: bool = True) -> None:
    for line in result.lines():
        click.echo(line, err=err)


@click.command("scan")
@existing_path(nargs=-1, required=False)
@click.option("--no-archive", is_flag=True, help="Scan only the session files.")
@click.option(
    "--accept",
    "accept_ids",
    multiple=True,
    metavar="ID",
    help="Accept the finding ID into the baseline (repeatable).",
)
@click.option("--accept-all", is_flag=True, help="Accept every finding into the baseline.")
@config_option
@json_option
def command(
    paths: tuple[Path, ...],
    no_archive: bool,
    accept_ids: tuple[str, ...],
    accept_all: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Find secrets (cloud, code-host, chat, payment and LLM keys, private keys, passwords
    in URLs, JWTs, …) in session files (every session when no PATH is given) and in the
    archive objects a push would send. One line per finding, the secret masked; exit 1 when
    a finding is not accepted by the baseline."""
    if accept_ids and accept_all:
        raise GitClawError("give --accept ID or --accept-all, not both", exit_code=EXIT_USAGE)
    # In a store before its first pass (a dry run named it): the archive keeps its records.
    repo = open_repo(Path.cwd() if not paths else paths[0], create_store=True)
    config = config_for(repo, paths[0] if paths else None, config_path)
    warnings: list[str] = []
    progress = progress_for(as_json, finding=not paths)
    try:
        chosen, _ = select(repo, config, list(paths), take_all=not paths, warnings=warnings)
        result = run_scan(
            repo, config, chosen, archive=not no_archive, progress=progress, listing=True
        )
    finally:
        progress.end()
    if accept_ids or accept_all:
        _accept(repo, config, paths, result, accept_ids, accept_all, as_json=as_json)
    if as_json:
        echo_json(
            {
                "ok": not result.open,
                "files": result.files,
                "objects": result.objects,
                "findings": [f.as_json(f.hash in result.accepted) for f in result.findings],
            }
        )
    else:
        for warning in warnings:
            click.echo(f"gitclaw-compress: warning: {warning}", err=True)
        for line in result.lines():
            click.echo(line)
        click.echo(
            f"{plural(len(result.findings), 'finding')} ({len(result.open)} not accepted) in "
            f"{plural(result.files, 'session file')} and "
            f"{plural(result.objects, 'archive object')}"
        )
    if result.open:
        raise click.exceptions.Exit(EXIT_PROBLEMS)


def _accept(
    repo: Repository,
    config: Config,
    paths: tuple[Path, ...],
    result: ScanResult,
    accept_ids: tuple[str, ...],
    accept_all: bool,
    *,
    as_json: bool,
) -> None:
    """Accept the findings named (`accept_all`: every one) into the baseline; an id no
    finding has accepts nothing."""
    known = {f.id for f in result.findings}
    unknown = [i for i in accept_ids if i not in known]
    if unknown:
        named = f"{repo.relative(paths[0])}: " if len(paths) == 1 else ""
        raise GitClawError(f"{named}no finding has id {unknown[0]}; nothing was accepted")
    baseline = baseline_for(repo, config)
    taken = [f for f in result.findings if accept_all or f.id in accept_ids]
    added = baseline.accept(taken)
    baseline.save()
    result.accepted |= {f.hash for f in taken}
    if not as_json:
        # A store's baseline is in the tool's config folder, not where the user is.
        where = baseline.path if repo.kind == "store" else config["scan.baseline"]
        click.echo(f"accepted {plural(added, 'secret')} into {where}")
