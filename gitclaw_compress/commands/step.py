"""`step`: the one command an agent workflow runs between the agent's exit and the commit."""

from __future__ import annotations

from pathlib import Path

import click

from gitclaw_compress.commands.common import config_option, echo_json, json_option, open_repo
from gitclaw_compress.commands.compress import echo_held, with_discovery_options
from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.errors import EXIT_PROBLEMS
from gitclaw_compress.ops.flow import run_flow, summary_line
from gitclaw_compress.progress import SILENT


@click.command("step")
@with_discovery_options
@click.option("--keep-turns", type=click.IntRange(min=0), help="Keep this many recent turns.")
@click.option(
    "--deep",
    is_flag=True,
    help="Deep compression for this run (session.deep): see docs/deep.md.",
)
@click.option("--stage", is_flag=True, help="`git add` the files it rewrote.")
@click.option(
    "--push/--no-push",
    default=False,
    help="Push the archive ref to archive.remote afterwards (merging if the remote moved).",
)
@click.option("--remote", help="The remote to push to (default: archive.remote, origin).")
@config_option
@json_option
def command(
    take_all: bool,
    issue: int | None,
    keep_turns: int | None,
    deep: bool,
    stage: bool,
    push: bool,
    remote: str | None,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Compress the session(s) the agent just wrote; print one line of stats.

    Run it after the agent exits and before `git add -A && git commit`. It finds the
    sessions like `compress` with no path, compresses them, and leaves the archive ref ready
    to push (`--push` pushes it). Warnings go to stderr; stdout gets exactly one line.
    """
    repo = open_repo(Path.cwd())
    # A hook's step stays quiet; `step --all` on a terminal shows progress.
    progress = progress_for(as_json, finding=True) if take_all else SILENT
    try:
        result = run_flow(
            repo,
            config_path=config_path,
            take_all=take_all,
            issue=issue,
            keep_turns=keep_turns,
            do_stage=stage,
            do_push=push,
            remote=remote,
            progress=progress,
            deep=deep,
        )
    finally:
        progress.end()
    if as_json:
        echo_json(result.as_json())
    else:
        for warning in result.warnings:
            click.echo(f"gitclaw-compress: warning: {warning}", err=True)
        echo_held(result.held)
        click.echo(summary_line(result))
    if result.held:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
