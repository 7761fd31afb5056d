"""`stats PATH`: bytes by kind, before (the original) and after (compressed now)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    config_option,
    existing_path,
    json_option,
    read_session,
    report_sessions,
)
from gitclaw_compress.core.compressor import compress_lines, plan_lines
from gitclaw_compress.core.lines import LineCounts
from gitclaw_compress.core.stats import bytes_by_kind, kinds_of
from gitclaw_compress.ops.compress import budget_estimator, written_lines
from gitclaw_compress.ops.restore import restored_lines
from gitclaw_compress.units import human_bytes, plural, size_change


@click.command("stats")
@existing_path(required=False, folders=True)
@click.option("--keep-turns", type=click.IntRange(min=0), help="Turns to keep for 'after'.")
@config_option
@json_option
def command(
    path: Path | None, keep_turns: int | None, config_path: Path | None, as_json: bool
) -> None:
    """Show the bytes of a session by kind: the original, and after compression.

    'before' is the original file (restored from the archive where it was compressed);
    'after' is what `compress` gives now: the file as it is, if nothing more would change
    or the gain is under session.minGainPercent or session.minGainBytes (then it says so).
    With no PATH, the sessions `compress` would take.
    """

    def one_report(session: Path, show: bool) -> dict[str, Any]:
        return report(session, keep_turns, config_path, show=show)

    report_sessions(path, config_path, as_json, one_report)


def report(
    path: Path, keep_turns: int | None, config_path: Path | None, *, show: bool
) -> dict[str, Any]:
    """The stats of one session: printed when `show`, returned as its JSON document."""
    session = read_session(path, config_path)
    lines, config, session_ref = session.lines, session.config, session.ref
    if session.repo is not None:
        original = list(restored_lines(session.repo, path, config["archive.ref"]))
    else:
        original = lines
    settings = config.compress_settings(keep_turns)
    fmt = session.format
    if session.repo is not None:  # what the run writes: its plan, settled, and its markers
        plan, after = written_lines(session.repo, path, session.repo.relative(path), fmt, settings)
    else:  # outside git compress does not run: its plan with markers that name payloads
        estimator = budget_estimator(settings)
        plan = plan_lines(lines, settings, session_ref=session_ref, fmt=fmt, estimator=estimator)
        after = [r.line for r in compress_lines(lines, plan, settings, session_ref=session_ref)]
    # compress's own rule: a gain under the minimum leaves the file as it is (without --force)
    small = None
    if after != lines:
        now = sum(len(line.encode()) for line in lines)
        small = config.gain_too_small(now, sum(len(line.encode()) for line in after))
        if small is not None:
            after = lines
    before_kinds, after_kinds = bytes_by_kind(original, fmt), bytes_by_kind(after, fmt)
    kinds = kinds_of(fmt)
    total_before = sum(len(line.encode()) for line in original)
    total_after = sum(len(line.encode()) for line in after)
    counts = plan.counts
    summary = {
        "path": session_ref,
        "format": fmt.name,
        "bytes_before": total_before,
        "bytes_after": total_after,
        "kinds": {
            kind: {"before": before_kinds[kind], "after": after_kinds[kind]} for kind in kinds
        },
        "lines": counts.lines,
        "turns": plan.turns,
        "kept_turns": plan.kept_turns,
        "compressed_lines": sum(1 for line in after if b'"gitclawCompress"' in line.data),
        "left_as_it_is": small,
        **counts.as_json(),
    }
    if show:
        _show(summary, kinds, counts)
    return summary


def _show(summary: dict[str, Any], kinds: tuple[str, ...], counts: LineCounts) -> None:
    """Print the table of `report`'s `summary`: each kind's bytes and share, before and after."""
    session_ref, small = summary["path"], summary["left_as_it_is"]
    total_before, total_after = summary["bytes_before"], summary["bytes_after"]
    width = max(len(kind) for kind in kinds)
    click.echo(f"{session_ref}: {plural(counts.lines, 'line')}, {plural(summary['turns'], 'turn')}")
    click.echo(f"{'kind':<{width}}  {'before':>10}  {'share':>6}  {'after':>10}  {'share':>6}")
    for kind in kinds:
        before, after_size = summary["kinds"][kind]["before"], summary["kinds"][kind]["after"]
        if not before and not after_size:
            continue
        click.echo(
            f"{kind:<{width}}  {human_bytes(before):>10}  {before / max(total_before, 1):>6.1%}  "
            f"{human_bytes(after_size):>10}  {after_size / max(total_after, 1):>6.1%}"
        )
    click.echo(
        f"{'total':<{width}}  {human_bytes(total_before):>10}  {'':>6}  "
        f"{human_bytes(total_after):>10}  {size_change(total_before, total_after)}"
    )
    click.echo(
        f"passed through untouched: {counts.blank} blank, {counts.malformed} malformed, "
        f"{counts.crlf} CRLF, {counts.non_utf8} non-UTF-8 lines"
        + ("; no final newline" if counts.missing_final_newline else "")
    )
    if small is not None:
        click.echo(f"compress leaves it: {small}")
