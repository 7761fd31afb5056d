"""`prune PATH…`: budget pruning of old tool outputs, or target mode for a critical context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    change_summary,
    config_for,
    config_option,
    echo_json,
    existing_path,
    json_option,
    open_repo,
    preserved_thinking_note,
    session_path,
)
from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.core.compressor import OUT_OF_REACH
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError
from gitclaw_compress.ops.compress import Compression
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.progress import file_size, running


def with_figures(decision: str, budget: dict[str, Any]) -> str:
    """The decision with the context now and the one `status` gives after the run, each
    with its source, before what keeps a target out of reach."""
    figures = (
        f"context now {budget['context_tokens']:,} tokens ({budget['context_label']}), "
        f"context then {budget['context_tokens_after']:,} tokens "
        f"({budget['context_source_after']})"
    )
    reach = f"; {OUT_OF_REACH}{budget['out_of_reach']}" if budget.get("out_of_reach") else ""
    return f"{decision.removesuffix(reach)}; {figures}{reach}"


def describe(report: FileReport) -> str:
    decision = (report.budget or {}).get("decision") or ""
    why_less = preserved_thinking_note(report.preserved_thinking)
    if report.status in ("compressed", "would-compress"):
        verb = "pruned" if report.status == "compressed" else "would prune"
        if report.budget is not None and report.budget.get("context_tokens_after") is not None:
            decision = with_figures(decision, report.budget)
        return change_summary(verb, report, decision) + why_less
    if report.status == "disabled":
        return f"unchanged {report.path}: session.enabled is false"
    return f"unchanged {report.path}: {decision or 'nothing to prune'}" + why_less


@click.command("prune")
@existing_path(nargs=-1)
@click.option(
    "--target",
    is_flag=True,
    help="Target mode: compress older content, oldest first, until the context is at or "
    "under prune.targetPercent (60) of the usable tokens.",
)
@click.option(
    "--target-percent",
    type=click.IntRange(min=1, max=100),
    help="Target mode with this percentage instead of prune.targetPercent.",
)
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--check", is_flag=True, help="Like --dry-run, but exit 1 if any file would change.")
@config_option
@json_option
def command(
    paths: tuple[Path, ...],
    target: bool,
    target_percent: int | None,
    dry_run: bool,
    check: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Prune old tool outputs against a token budget, or compress down to a target.

    Without --target: walk back from the newest message, protect the newest
    prune.protectTokens (40,000) tokens and the newest prune.protectTurns turns, and stub
    older completed tool outputs, except protected tools (prune.protectedTools), but only
    if together they free at least prune.minimumTokens (20,000).

    With --target: when the context is above prune.targetPercent of the usable tokens,
    compress whole older lines, oldest first, until it is at or under it, never inside the
    newest prune.protectTurns turns.

    The same stubs and the same archive as `compress`: `restore` gives the original back.
    """
    if not paths:
        raise GitClawError("give at least one session file")
    paths = tuple(session_path(path) for path in paths)
    repo = open_repo(paths[0], create_store=True, dry_run=dry_run or check)
    reports: list[FileReport] = []
    verb = "checking" if dry_run or check else "pruning"
    progress = progress_for(as_json)
    with Compression(repo, dry_run=dry_run or check, progress=progress) as run:
        with running(progress, verb, paths, repo.relative, file_size) as each:
            for path in each:
                config = config_for(repo, path, config_path)
                percent = target_percent or (config["prune.targetPercent"] if target else None)
                settings = config.compress_settings(strategy="tokens", target_percent=percent)
                reports.append(run.add(path, config, force=True, settings=settings))
        run.finish()
    if as_json:
        echo_json({"files": [report.as_json() for report in reports]})
    else:
        for report in reports:
            for warning in report.warnings:
                click.echo(f"gitclaw-compress: warning: {warning}", err=True)
            click.echo(describe(report))
    if check and any(report.status == "would-compress" for report in reports):
        raise click.exceptions.Exit(EXIT_PROBLEMS)
