"""`redact PATH [--all | --finding ID…]`: remove secrets from a session and the archive."""

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
    require_session,
)
from gitclaw_compress.config import Config
from gitclaw_compress.errors import EXIT_USAGE, GitClawError
from gitclaw_compress.secrets.redact import RedactReport, redact_session
from gitclaw_compress.store.remote import remote_may_hold
from gitclaw_compress.store.repository import Repository


@click.command("redact")
@existing_path()
@click.option("--all", "take_all", is_flag=True, help="Redact every finding.")
@click.option(
    "--finding", "ids", multiple=True, metavar="ID", help="Redact the finding ID (repeatable)."
)
@config_option
@json_option
def command(
    path: Path, take_all: bool, ids: tuple[str, ...], config_path: Path | None, as_json: bool
) -> None:
    """Replace secrets by `[REDACTED:rule]` in PATH, in every archive object that holds
    them, and in the staged version; rewrite the archive ref so that no commit reachable
    from it keeps them. `restore` then gives the original with the secrets redacted."""
    if take_all == bool(ids):
        raise GitClawError("give --all or --finding ID, one of them", exit_code=EXIT_USAGE)
    require_session(path)
    repo = open_repo(path, create_store=True)  # a store before its first pass, too
    config = config_for(repo, path, config_path)
    report = redact_session(repo, path, config, None if take_all else set(ids))
    if as_json:
        echo_json(
            {
                "ok": True,
                "file": report.file,
                "redacted": [f.as_json() for f in report.redacted],
                "sealed": [f.as_json() for f in report.sealed],
                "lines": report.lines,
                "objects": report.objects,
                "archive": report.archive_tip,
                "history_commit": report.history,
                "index_changed": bool(report.index),
                "index_reason": report.index,
            }
        )
        return
    _print(repo, report, config)


def _print(repo: Repository, report: RedactReport, config: Config) -> None:
    """What `redact` did, for people, and what is left to do by hand: the remote's copy,
    a commit that already holds the secret."""
    ref = config["archive.ref"]
    history = report.history
    for finding in report.sealed:
        click.echo(
            f"gitclaw-compress: warning: {finding.text()}: inside signed or encrypted "
            "reasoning, left as it is (editing it breaks the session); see docs/secrets.md",
            err=True,
        )
    if not report.redacted:
        where = "outside signed or encrypted reasoning " if report.sealed else ""
        click.echo(
            f"{report.file}: nothing to redact: no secret found {where}in the session or its "
            "archive objects; nothing was changed"
        )
        return
    secrets = len({f.hash for f in report.redacted})
    click.echo(
        f"{report.file}: redacted {plural(secrets, 'secret')} in {plural(report.lines, 'line')} "
        f"and {plural(report.objects, 'archive object')}"
    )
    if report.index:
        click.echo(f"{report.file}: index changed: {report.index}")
    remote = config["archive.remote"]
    if report.archive_tip and repo.has_remote(remote) and remote_may_hold(repo, remote, ref):
        click.echo(
            f"{ref} was rewritten; replace the remote's copy with `gitclaw-compress push --force`"
        )
    if history:
        click.echo(
            f"{report.file}: commit {history[:12]} of this branch already holds a redacted "
            "secret; this tool cannot remove it from there: rewrite the history with "
            "`git filter-repo --replace-text` (or BFG), force-push, and rotate the secret"
        )
