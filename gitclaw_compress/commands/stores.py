"""`stores [AGENT…]`: compress the sessions at rest in the agents' own stores, one pass."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import click

from gitclaw_compress import interrupts
from gitclaw_compress.commands.common import (
    config_option,
    echo_json,
    json_option,
    preserved_thinking_note,
)
from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.errors import EXIT_ERROR, EXIT_PROBLEMS
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.ops.stores import AGENTS, StoreRun, run_stores
from gitclaw_compress.progress import Progress
from gitclaw_compress.units import human_bytes, plural, size_change

HOLDS = ("held", "would hold")  # the first words of a held session's line (on stderr)
NOTHING_DONE = {  # the sessions left as they were, by why
    "unchanged": "with nothing to compress",
    "below-threshold": "smaller than session.sizeThresholdKB",
    "disabled": "with session.enabled false",
}


def describe(run: StoreRun) -> list[str]:
    """The lines of one store: its notes and warnings, each compressed session, then one
    line for the store (the notes, the warnings and a failure go to stderr)."""
    name = run.home.agent
    where = f"{run.home.root}" + (f" ({run.home.moved_by})" if run.home.moved_by else "")
    if run.state == "absent":
        return [f"{name}: no store at {where}"]
    lines = [f"{name}: note: {note}" for note in run.notes]
    if run.state in ("failed", "busy") and run.flow is None:
        error = run.error or ""
        named = error.startswith(f"{run.home.root}: ")  # the store, named once
        return [*lines, f"{name}: {error}" if named else f"{name}: {where}: {error}"]
    flow = run.flow
    lines.extend(f"{name}: warning: {warning}" for warning in (flow.warnings if flow else []))
    done = flow.compressed if flow is not None else []
    for report in done:
        verb = "compressed" if report.status == "compressed" else "would compress"
        lines.append(
            f"{name}: {verb} {report.path}: {human_bytes(report.bytes_before)} -> "
            f"{human_bytes(report.bytes_after)} "
            f"({size_change(report.bytes_before, report.bytes_after)})"
            + preserved_thinking_note(report.preserved_thinking)
        )
    reports = flow.reports if flow is not None else []
    held = run.held
    if held:  # each finding masked, then the session with its ids and the way on
        from gitclaw_compress.secrets.held import held_lines

        lines.extend(f"{name}: secret: {found}" for entry in held for found in entry["found"])
        lines.extend(f"{name}: {line}" for line in held_lines(held, dry_run=run.dry_run))
    lines.append(f"{name}: {where}: {_store_line(run, done, reports)}")
    lines.extend(f"{name}: error: {refusal}" for refusal in run.refused)
    if run.error is not None:  # after compressing: the push failed
        lines.append(f"{name}: {run.error}")
    return lines


def _store_line(run: StoreRun, done: list[FileReport], reports: list[FileReport]) -> str:
    """What the run did to one store, in one line: the sessions by what became of them,
    then its archive."""
    held = run.held
    written_during = [r.path for r in reports if r.status == "in-use"]
    before = sum(r.bytes_before for r in done)
    after = sum(r.bytes_after for r in done)
    dry = any(r.status == "would-compress" for r in done)
    parts = [plural(run.sessions, "session")]
    if done:
        verb = "would compress" if dry else "compressed"
        parts.append(
            f"{len(done)} {verb} ({human_bytes(before)} -> {human_bytes(after)}, "
            f"{size_change(before, after)})"
        )
    for status, words in NOTHING_DONE.items():
        count = sum(1 for report in reports if report.status == status)
        if count:
            parts.append(f"{count} {words}")
        bound = sum(
            1 for r in reports if r.status == status == "unchanged" and r.preserved_thinking
        )
        if bound:  # a user who expected them compressed learns why (`compress PATH` says more)
            parts[-1] += f" (in {bound} of them, preserved thinking keeps what the model sees)"
    if held:
        verb = "would be held" if run.dry_run else "held"
        parts.append(f"{len(held)} {verb} for secrets (untouched)")
    if run.read_only:
        parts.append(f"{run.read_only} read-only (left alone)")
    if run.fresh:
        parts.append(f"{len(run.fresh)} written in the last minutes (left alone)")
    if run.in_use or written_during:
        count = len(run.in_use) + len(written_during)
        parts.append(f"{count} in use by a running agent (left alone)")
    if run.not_sessions:
        verb = "is" if run.not_sessions == 1 else "are"
        parts.append(f"{plural(run.not_sessions, 'other file')} that {verb} no session (skipped)")
    if run.archive.is_dir():
        archive = f"archive {run.archive} ({human_bytes(run.archive_bytes)} on disk)"
    else:  # nothing compressed yet (or a dry run before that)
        archive = f"no archive yet ({run.archive}; the first run that compresses makes it)"
    if run.pushed_to:
        archive += f", pushed to {run.pushed_to}"
    return f"{', '.join(parts)}; {archive}"


@click.command("stores")
@click.argument("agents", nargs=-1, type=click.Choice(AGENTS), metavar="[AGENT…]")
@click.option("--dry-run", is_flag=True, help="Say what would be compressed; write nothing.")
@click.option(
    "--remote",
    metavar="NAME",
    help="Push each store's archive to this remote of it afterwards (never without one).",
)
@config_option
@json_option
def command(
    agents: tuple[str, ...],
    dry_run: bool,
    remote: str | None,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Compress the sessions at rest in the agents' own stores on this machine.

    AGENT is claude (CLAUDE_CONFIG_DIR, else ~/.claude), codex (CODEX_HOME, else ~/.codex),
    copilot (COPILOT_HOME, else ~/.copilot) or pi (PI_CODING_AGENT_SESSION_DIR, else
    PI_CODING_AGENT_DIR or ~/.pi/agent); with none, every agent whose store exists. A
    session that another process holds open for writing, that a running agent may be
    writing, or that was written in the last stores.quietMinutes, is left alone (a dry
    run's first line, and every run's where Linux's lease is missing, says how this machine
    tells). What is dropped goes to an archive the tool keeps outside the store
    ($XDG_DATA_HOME/gitclaw-compress/stores/AGENT; on Windows %LOCALAPPDATA%), never pushed
    unless --remote (or stores.remote) names a remote of it. Every command (restore, verify,
    show, …) takes a session path in a store as it takes one in a repository.
    """
    from gitclaw_compress.store import live

    found = live.check()
    check = found.line()  # which live-writer check this machine has, said once
    progress = progress_for(as_json)  # a hook's pass writes to a log: nothing is drawn there
    # Said first by a dry run, and by every run where the check is weaker than Linux's
    # lease with the open files' modes (macOS, Windows, a forced path).
    if not as_json and (dry_run or not (found.lease and found.modes)):
        click.echo(f"gitclaw-compress: {check}")

    try:
        runs = run_stores(
            agents,
            os.environ,
            config_path=config_path,
            dry_run=dry_run,
            remote=remote,
            progress=progress,
            on_done=functools.partial(_say, as_json=as_json, progress=progress),
        )
    finally:
        progress.end()
    if as_json:
        echo_json({"stores": [run.as_json() for run in runs], "live_check": check})
    elif not agents and not any(run.state != "absent" for run in runs):
        # (an agent named has its own line: "no store at …")
        click.echo("gitclaw-compress: no agent store found on this machine")
    if any(run.state == "failed" or run.refused for run in runs):
        raise click.exceptions.Exit(EXIT_ERROR)
    if any(run.held for run in runs):  # compressed the rest; these wait for the user
        raise click.exceptions.Exit(EXIT_PROBLEMS)


def _say(run: StoreRun, *, as_json: bool, progress: Progress) -> None:
    """A store's lines as soon as its run ends: an interrupt or a kill later on (the
    hook's pass, in its log) must not take away what was done."""
    if as_json:
        return
    progress.clear()
    for line in describe(run):
        aside = any(f": {word}: " in line for word in ("note", "warning", "error", "secret"))
        aside = aside or any(line.startswith(f"{run.home.agent}: {w} ") for w in HOLDS)
        click.echo(line, err=aside or run.state == "failed")
    sys.stdout.flush()  # a pipe or the hook's log: out now, not at exit
    # Said: an interrupt later on names only what the store at hand replaced (before, it
    # listed every session of the stores done again).
    interrupts.changes_reported()
