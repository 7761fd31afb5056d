"""`status PATH`: context tokens now, the usable tokens, a level, and what would be saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    all_option,
    config_option,
    existing_path,
    human_bytes,
    json_option,
    preserved_thinking_note,
    read_session,
    report_sessions,
)
from gitclaw_compress.config import Config
from gitclaw_compress.core.compressor import git_blob_id
from gitclaw_compress.core.context import Budget, ContextSize
from gitclaw_compress.ops.compress import blob_id_for
from gitclaw_compress.ops.status import Saving, SessionStatus, session_status
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.intact import IntactLines
from gitclaw_compress.units import plural, size_change


def describe_source(status: SessionStatus) -> str:
    """The figure's source, as `context` and `summarize` say it."""
    return ContextSize(
        status.context_tokens,
        status.source,
        status.estimator,
        status.estimated_tokens,
        status.usage_entry,
        status.usage_tokens,
        status.trailing_tokens,
        status.note,
        compressed_tokens=status.compressed_tokens,
    ).label()


def describe_saving(name: str, saving: Saving, estimator: str, held: bool = False) -> str:
    if not saving.lines:
        what = "would change nothing"
    else:
        share = size_change(saving.bytes_before, saving.bytes_after)
        what = (
            f"would free {saving.tokens_saved:,} tokens (estimated with {estimator}; context "
            f"then {saving.context_tokens_after:,}, {saving.context_source_after})"
            f" and {human_bytes(saving.bytes_before - saving.bytes_after)} ({share}) "
            f"in {plural(saving.lines, 'line')}"
        )
    # A session a secret holds: the command would leave it untouched (the `secret` line says
    # what to run first), so it is not offered.
    way = "once the secret below is dealt with" if held else saving.command
    text = f"  {name:<8} {what}" + (f": {way}" if saving.lines else "")
    notes = [saving.decision] if saving.decision else []
    if saving.preserved_thinking:
        notes.append(preserved_thinking_note(saving.preserved_thinking).removeprefix("; "))
    return "".join([text, *(f"\n           {note}" for note in notes)])


@click.command("status")
@existing_path(required=False)
@all_option
@click.option(
    "--keep-turns",
    type=click.IntRange(min=0),
    help="Turns `compress` would keep, for its saving (default: from the config).",
)
@config_option
@json_option
def command(
    path: Path | None,
    take_all: bool,
    keep_turns: int | None,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """How full the session's context is, and what `compress` and `prune` would save.

    The context is what the agent gives the model on resume. Its size comes from the usage the
    provider recorded with the last reply (plus estimates for later messages, less what
    compression freed since from the messages it counted), or, without usable usage, from
    the configured estimator (tokens.estimator). The level is ok,
    warning (tokens.warningPercent, 75) or critical (tokens.criticalPercent, 90) of the
    usable tokens of the session's model. Nothing is written.

    With no PATH, it reports on the sessions `compress` would take (the ones the agent just
    touched); with --all, on every session. Of several, a session whose format cannot be
    read this way is one line naming it, and the others are still reported.
    """

    def one_report(session: Path, show: bool) -> dict[str, Any]:
        return report(session, keep_turns, config_path, show=show)

    report_sessions(path, config_path, as_json, one_report, take_all=take_all)


def held_for_secret(repo: Repository, config: Config, path: Path) -> dict[str, Any] | None:
    """What `compress` would hold this session for (its ids and the way on), found as its
    dry run finds it (the same scan, nothing recorded); None when it would not hold it."""
    from gitclaw_compress.secrets.held import SecretsHeld
    from gitclaw_compress.secrets.parallel import ParallelGuard

    guard = ParallelGuard(repo, config, enabled=True, dry_run=True)
    try:
        guard.start([path])
        guard.wait([])
    except SecretsHeld as held:
        return held.sessions[0] if held.sessions else None
    finally:
        guard.cancel()
    return None


def report(
    path: Path, keep_turns: int | None, config_path: Path | None, *, show: bool
) -> dict[str, Any]:
    """The status of one session: printed when `show`, returned as its JSON document."""
    session = read_session(path, config_path)
    repo = session.repo
    intact = IntactLines(repo, path, session.ref) if repo else None
    # The commands it names must work from where the user is: a store's session by its
    # full path, as its stubs name it (and so its dry runs measure the stubs compress writes).
    ref = repo.session_ref(session.ref) if repo else session.ref
    status = session_status(
        session.lines,
        session.config,
        ref,
        keep_turns=keep_turns,
        intact_commit=intact.commit_for if intact else None,
        object_id=blob_id_for(repo) if repo else git_blob_id,
        intact_blob=intact.blob_for if intact else None,
        fmt=session.format,
        originals=session.originals(),
    )
    held = held_for_secret(repo, session.config, path) if repo else None
    document = status.as_json()
    document["held"] = None if held is None else {"ids": held["ids"], "advice": held["advice"]}
    if not show:
        return document
    click.echo(f"{status.path}: {status.level}")
    click.echo(
        f"  context  {status.context_tokens:,} tokens, {status.percent}% of "
        f"{status.usable_tokens:,} usable ({describe_source(status)})"
    )
    window = Budget(
        status.model,
        status.limits_source,
        status.context_window,
        status.max_output,
        status.usable_tokens,
    ).window_source()
    click.echo(
        f"  model    {status.model or 'unknown'}: window {status.context_window:,} ({window}), "
        f"output {status.max_output:,}, reserve {status.reserve:,}; "
        f"warning at {status.warning_percent}%, critical at {status.critical_percent}%"
    )
    for name, saving in status.savings.items():
        click.echo(describe_saving(name, saving, status.estimator, held is not None))
    if held is not None:
        click.echo(
            f"  secret   compress and prune would hold this session (untouched): "
            f"{plural(len(held['ids']), 'secret')} (ids {', '.join(held['ids'])}); "
            f"{held['advice']}"
        )
    if status.below_size_threshold and status.savings["compress"].lines:
        click.echo("  (compress leaves files under session.sizeThresholdKB alone without --force)")
    return document
