"""`compress PATH…`: compress old turns in place, archiving what is dropped."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitclaw_compress.commands.common import (
    F,
    change_summary,
    config_option,
    echo_json,
    existing_path,
    human_bytes,
    json_option,
    open_repo,
    plural,
    preserved_thinking_note,
)
from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.errors import EXIT_PROBLEMS
from gitclaw_compress.ops.flow import FlowResult, run_flow
from gitclaw_compress.units import size_change

if TYPE_CHECKING:
    from gitclaw_compress.ops.report import FileReport


def describe(report: FileReport) -> str:
    if report.status in ("compressed", "would-compress"):
        verb = "compressed" if report.status == "compressed" else "would compress"
        kept = f"kept the last {report.kept_turns} of {plural(report.turns, 'turn')}"
        tail = deep_comparison(report) + preserved_thinking_note(report.preserved_thinking)
        return change_summary(verb, report, kept) + tail
    reasons = {
        "unchanged": "nothing new to compress",
        "below-threshold": "smaller than session.sizeThresholdKB",
        "disabled": "session.enabled is false",
        "in-use": "in use by another process; nothing was changed",
        "held": "holds a secret the baseline does not accept; left untouched (below)",
        "would-hold": "holds a secret the baseline does not accept; would be left untouched "
        "(below)",
    }
    reason = report.reason or reasons.get(report.status, report.status)
    tail = deep_comparison(report) + preserved_thinking_note(report.preserved_thinking)
    return f"unchanged {report.path}: {reason}" + tail


def deep_comparison(report: FileReport) -> str:
    """What `--deep` would make of the file, after a dry run without it."""
    deep = report.deep_bytes_after
    if deep is None or deep >= report.bytes_before:
        return ""
    change = size_change(report.bytes_before, deep)
    return f"; with --deep: {human_bytes(deep)} ({change})"


def echo_held(held: list[dict[str, Any]], *, dry_run: bool = False) -> None:
    """Each held session's findings (masked) and one line naming its ids and the way on."""
    from gitclaw_compress.secrets.held import held_lines

    for entry in held:
        for line in entry["found"]:
            click.echo(line, err=True)
    for line in held_lines(held, dry_run=dry_run):
        click.echo(f"gitclaw-compress: {line}", err=True)


LIST_AT_MOST = 5  # more sessions than this are counted, not listed, on the opening line


def totals_line(reports: list[FileReport]) -> str:
    """The last line of a run over several files: how many changed, and the bytes."""
    before = sum(report.bytes_before for report in reports)
    after = sum(report.bytes_after for report in reports)
    changed = [r for r in reports if r.status in ("compressed", "would-compress")]
    dry = any(r.status == "would-compress" for r in changed)
    verb, archived = ("would compress", " to write") if dry else ("compressed", "")
    objects = sum(report.objects for report in changed)
    return (
        f"total: {plural(len(reports), 'session')}, {len(changed)} {verb}: "
        f"{human_bytes(before)} -> {human_bytes(after)} ({size_change(before, after)}), "
        f"{plural(objects, 'new archive object')}{archived}"
    )


discovery_options = (
    click.option(
        "--all",
        "take_all",
        is_flag=True,
        help="Every session under sessions.globs (progress shows on a terminal).",
    ),
    click.option(
        "--issue",
        type=click.IntRange(min=0),
        help="The session of issue N, named by <agent folder>/state/issues/N.json.",
    ),
)


def with_discovery_options(function: F) -> F:
    for option in reversed(discovery_options):
        function = option(function)
    return function


@click.command("compress")
@existing_path(required=False, nargs=-1, folders=True)
@with_discovery_options
@click.option(
    "--keep-turns",
    type=click.IntRange(min=0),
    help="Keep this many recent turns intact (default: session.turnThresholdBeforeCompress, 4).",
)
@click.option(
    "--deep",
    is_flag=True,
    help="Deep compression for this run (session.deep): see docs/deep.md.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Report what would change, and which sessions a secret would hold (exit 1, as the "
    "run would); write nothing.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Like --dry-run, but exit 1 also if any file would change.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Ignore session.sizeThresholdKB, session.minGainPercent and session.minGainBytes.",
)
@click.option(
    "--stage",
    is_flag=True,
    help="`git add` the files this run rewrote (the pre-commit hook gitclaw-compress-stage).",
)
@config_option
@json_option
def command(
    paths: tuple[Path, ...],
    take_all: bool,
    issue: int | None,
    keep_turns: int | None,
    deep: bool,
    dry_run: bool,
    check: bool,
    force: bool,
    stage: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Compress the old turns of agent session files in place.

    Every supported format (pi, Claude Code, Codex, Copilot CLI), recognized by content. The
    last N turns stay byte for byte; every dropped byte is stored in git under the archive
    ref first, so `gitclaw-compress restore` gives the original back.

    A folder stands for the session files under it (recognized by content).
    With no PATH, it takes the sessions the agent just touched: session files changed
    against HEAD (modified, staged or untracked) and those named by changed
    state/issues/<N>.json mapping files; else the session of the newest mapping file; else
    the session whose last entry is the newest. Never the newest by mtime.
    """
    repo = open_repo(paths[0] if paths else Path.cwd(), create_store=True, dry_run=dry_run or check)
    progress = progress_for(as_json, finding=not paths or any(path.is_dir() for path in paths))
    try:
        result = run_flow(
            repo,
            paths,
            config_path=config_path,
            take_all=take_all,
            issue=issue,
            keep_turns=keep_turns,
            force=force,
            dry_run=dry_run or check,
            do_stage=stage,
            progress=progress,
            deep=deep,
        )
    finally:
        progress.end()
    if as_json:
        echo_json(result.as_json())
    else:
        _print(result, dry_run=dry_run or check)
    if result.held:  # the run holds them and exits 1: a dry run says so the same way
        raise click.exceptions.Exit(EXIT_PROBLEMS)
    if check and any(report.status == "would-compress" for report in result.reports):
        raise click.exceptions.Exit(EXIT_PROBLEMS)


def _print(result: FlowResult, *, dry_run: bool) -> None:
    """The run for people: warnings and what was found (stderr), a line per session, the
    totals, the summary stage, what was staged, and the sessions held for secrets."""
    for warning in result.warnings:
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    if result.discovery is not None and not result.reports:
        click.echo(f"gitclaw-compress: no session to compress ({result.discovery.detail})")
    elif result.discovery is not None:
        found = plural(len(result.reports), "session")
        if len(result.reports) <= LIST_AT_MOST:
            found += ": " + ", ".join(report.path for report in result.reports)
        click.echo(f"gitclaw-compress: {result.discovery.detail}: {found}", err=True)
    for report in result.reports:
        if report.status != "in-use":  # its one line is the warning above (README)
            click.echo(describe(report))
    if len(result.reports) > 1:
        click.echo(totals_line(result.reports))
    for outcome in result.summaries:  # the opt-in summary stage; its warnings are above
        from gitclaw_compress.summary.stage import describe_stage

        if line := describe_stage(outcome):
            click.echo(line)
    if result.staged:
        click.echo(f"staged {', '.join(result.staged)}")
    echo_held(result.held, dry_run=dry_run)
