"""`push` and `fetch`: move the archive ref between clones, merging instead of forcing."""

from __future__ import annotations

from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    json_option,
    open_repo,
)
from gitclaw_compress.store.remote import fetch_archive, push_archive

remote_option = click.option(
    "--remote", help="The remote to use (default: archive.remote, which defaults to origin)."
)


@click.command("push")
@remote_option
@click.option(
    "--force", is_flag=True, help="Replace the remote's archive ref (after `redact` rewrote it)."
)
@config_option
@json_option
def push_command(remote: str | None, force: bool, config_path: Path | None, as_json: bool) -> None:
    """Push the archive ref, so that other clones can restore what was compressed here.

    If another run pushed first, the two archives are merged (their union) and pushed
    again; nothing is ever forced.
    """
    repo = open_repo(Path.cwd())
    config = config_for(repo, None, config_path)
    ref, remote = config["archive.ref"], remote or config["archive.remote"]
    from gitclaw_compress.secrets.check import guard_push

    # Never send an archive object that holds a secret (a warning each if unblocked).
    for warning in guard_push(repo, config):
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    result = push_archive(repo, ref, remote, force=force)
    if as_json:
        echo_json(
            {
                "ok": True,
                "ref": ref,
                "remote": remote,
                "pushed": result.pushed,
                "reason": result.reason,
                "merged": result.merged,
                "tip": result.tip,
            }
        )
        return
    if result.reason == "no-local-archive":
        click.echo(f"nothing to push: this clone has no {ref}")
        return
    if result.reason == "up-to-date":
        click.echo(f"nothing to push: {remote} has this clone's {ref} already")
        return
    merged = " (merged with the remote's archive first)" if result.merged else ""
    click.echo(f"pushed {ref} to {remote}{merged}")


@click.command("fetch")
@remote_option
@config_option
@json_option
def fetch_command(remote: str | None, config_path: Path | None, as_json: bool) -> None:
    """Fetch the archive ref from the remote and merge it into this clone's.

    This is what a `--depth 1` or single-branch clone needs before `restore`; `restore`,
    `verify` and `show` do it by themselves unless archive.autoFetch is false.
    """
    repo = open_repo(Path.cwd())
    config = config_for(repo, None, config_path)
    ref, remote = config["archive.ref"], remote or config["archive.remote"]
    result = fetch_archive(repo, ref, remote)
    if as_json:
        echo_json(
            {
                "ok": True,
                "ref": ref,
                "remote": remote,
                "remote_tip": result.remote_tip,
                "local_tip": result.local_tip,
            }
        )
        return
    if result.remote_tip is None:
        click.echo(f"{remote} has no {ref}; nothing fetched")
        return
    click.echo(f"fetched {ref} from {remote}; {ref} is now {result.local_tip}")
