"""`summarize PATH`: append the agent's compaction record, whose summary it resumes from."""

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
from gitclaw_compress.summary.stage import describe, keep_policy, summarize_file


@click.command("summarize")
@existing_path()
@click.option(
    "--keep-turns",
    type=click.IntRange(min=0),
    help="Keep the last N turns after the summary (default: summary.keepTurns, else "
    "keepTokens, else what the agent's own compaction keeps); 0 keeps nothing, the summary "
    "alone (all Copilot CLI's record allows; pi refuses it).",
)
@click.option(
    "--keep-tokens",
    type=click.IntRange(min=1),
    help="Keep at least the newest K estimated tokens (default: summary.keepTokens, else "
    "what the agent's own compaction keeps: pi 20000, Claude Code, Codex and Copilot CLI no "
    "turn).",
)
@click.option(
    "--offline",
    is_flag=True,
    help="Write the extractive summary, without an LLM, whatever summary.provider says.",
)
@config_option
@json_option
def command(
    path: Path,
    keep_turns: int | None,
    keep_tokens: int | None,
    offline: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Summarize the older part of a session into the agent's own compaction record (pi's
    `compaction` entry, Claude Code's compact_boundary, Codex's `compacted` line, Copilot
    CLI's compaction events).

    The summary covers everything before the kept messages (and folds in the previous
    summary, if any); the agent resumes from it. Every original entry stays in the file. With
    summary.provider "none" (the default) or --offline, the summary is extractive: built
    from facts read from the transcript, without an LLM. If the LLM fails, the file is left
    exactly as it was.
    """
    if keep_turns is not None and keep_tokens is not None:
        raise click.UsageError("give --keep-turns or --keep-tokens, not both")
    repo = open_repo(path, create_store=True)
    config = config_for(repo, path, config_path)
    keep = keep_policy(config, keep_turns, keep_tokens)
    report = summarize_file(repo, path, config, keep=keep, offline=offline)
    if as_json:
        echo_json(report.as_json())
        return
    for warning in report.warnings:
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    click.echo(describe(report))
