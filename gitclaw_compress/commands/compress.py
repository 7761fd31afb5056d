"""`compress PATH…`: compress old turns in place, archiving what is dropped."""

from __future__ import annotations

from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    existing_path,
    human_bytes,
    json_option,
    open_repo,
)
from gitclaw_compress.engine import Compression, FileReport
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError
from gitclaw_compress.summarize import describe_stage, summary_stage


def describe(report: FileReport) -> str:
    if report.status in ("compressed", "would-compress"):
        saved = 1 - report.bytes_after / report.bytes_before if report.bytes_before else 0
        verb = "compressed" if report.status == "compressed" else "would compress"
        return (
            f"{verb} {report.path}: {human_bytes(report.bytes_before)} -> "
            f"{human_bytes(report.bytes_after)} (-{saved:.1%}); {report.lines_compressed} "
            f"lines, {report.objects} objects archived; kept the last {report.kept_turns} "
            f"of {report.turns} turns"
        )
    reasons = {
        "unchanged": "nothing new to compress",
        "below-threshold": "smaller than session.sizeThresholdKB",
        "disabled": "session.enabled is false",
    }
    return f"unchanged {report.path}: {reasons.get(report.status, report.status)}"


@click.command("compress")
@existing_path(nargs=-1)
@click.option(
    "--keep-turns",
    type=click.IntRange(min=0),
    help="Keep this many recent turns intact (default: session.turnThresholdBeforeCompress, 4).",
)
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--check", is_flag=True, help="Like --dry-run, but exit 1 if any file would change.")
@click.option("--force", is_flag=True, help="Ignore session.sizeThresholdKB.")
@config_option
@json_option
def command(
    paths: tuple[Path, ...],
    keep_turns: int | None,
    dry_run: bool,
    check: bool,
    force: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Compress the old turns of pi session files in place.

    The last N turns and line 1 stay byte for byte; every dropped byte is stored in git
    under the archive ref first, so `gitclaw-compress restore` gives the original back.
    """
    if not paths:
        raise GitClawError("give at least one session file")
    repo = open_repo(paths[0])
    reports: list[FileReport] = []
    with Compression(repo, dry_run=dry_run or check) as run:
        for path in paths:
            config = config_for(repo, path, config_path)
            reports.append(run.add(path, config, keep_turns=keep_turns, force=force))
        run.finish()
    # The opt-in summary stage (summary.enabled): after compression, outside its locks.
    stages = (
        []
        if dry_run or check
        else summary_stage(repo, paths, lambda path: config_for(repo, path, config_path))
    )
    if as_json:
        document = {"files": [report.as_json() for report in reports]}
        echo_json({**document, "summaries": [s.as_json() for s in stages]} if stages else document)
    else:
        for report in reports:
            for warning in report.warnings:
                click.echo(f"gitclaw-compress: warning: {warning}", err=True)
            click.echo(describe(report))
        for stage in stages:
            if stage.warning:
                click.echo(f"gitclaw-compress: warning: {stage.warning}", err=True)
            elif line := describe_stage(stage):
                click.echo(line)
    if check and any(report.status == "would-compress" for report in reports):
        raise click.exceptions.Exit(EXIT_PROBLEMS)
