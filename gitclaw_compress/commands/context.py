"""`context PATH`: the messages the model sees when pi resumes the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    SessionFile,
    config_option,
    existing_path,
    json_option,
    read_session,
    report_sessions,
)
from gitclaw_compress.core.lines import MARKER_BYTES
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import unsupported
from gitclaw_compress.formats.base import CONTEXT
from gitclaw_compress.ops.restore import restored_lines
from gitclaw_compress.tokens.context import SUMMARY_ROLES, EntryInfo, build_context, read_infos
from gitclaw_compress.tokens.estimate import get_estimator
from gitclaw_compress.units import plural

PREVIEW_CHARS = 72


@click.command("context")
@existing_path(required=False)
@config_option
@json_option
def command(path: Path | None, config_path: Path | None, as_json: bool) -> None:
    """List the messages pi gives the model on resume: role, tokens and a preview.

    It follows the parentId chain from the last entry and honours compaction entries (the
    summary first, then the entries from firstKeptEntryId on), as pi's buildSessionContext
    does. Tokens are estimates (tokens.estimator). The totals compare the context with the
    whole history: the original, restored from the archive, when the file is compressed.
    With no PATH, the sessions `compress` would take.
    """

    def one_report(session: Path, show: bool) -> dict[str, Any]:
        return report(session, config_path, show=show)

    report_sessions(path, config_path, as_json, one_report)


def report(path: Path, config_path: Path | None, *, show: bool) -> dict[str, Any]:
    """The context of one session: printed when `show`, returned as its JSON document."""
    session = read_session(path, config_path)
    if CONTEXT not in session.format.features:
        raise unsupported(session.format, "context")
    estimator = get_estimator(session.config["tokens.estimator"])
    infos = read_infos(session.lines, estimator, preview_chars=PREVIEW_CHARS)
    context = build_context(infos)
    history, history_source = _history_tokens(session, path, infos)
    messages: list[dict[str, Any]] = []
    for index, info in enumerate(context.messages):
        messages.append(
            {
                "index": index,
                "role": info.llm_role,
                "source_role": info.role,
                "entry_id": info.id,
                "entry_type": info.type,
                "line": info.number,
                "tokens": info.tokens,
                "compressed": info.compressed,
                "sent": not info.provider_drops,
                "preview": info.preview,
            }
        )
    context_tokens = sum(info.tokens for info in context.sent())
    message_count = sum(1 for info in infos if info.llm_role is not None)
    totals = {
        "messages": message_count,
        "active_messages": len(context.messages),
        "summaries": sum(1 for info in infos if info.role in SUMMARY_ROLES),
        "active_summaries": sum(1 for info in context.messages if info.role in SUMMARY_ROLES),
        "compressed_messages": sum(1 for info in context.messages if info.compressed),
        "context_tokens": context_tokens,
        "history_tokens": history,
        "history_source": history_source,
        "compression_ratio": round(history / context_tokens, 2) if context_tokens else None,
    }
    leaf = context.path[-1].id if context.path else None
    document = {
        "path": session.ref,
        "model": context.model,
        "leaf": leaf,
        "estimator": estimator.name,
        "messages": messages,
        "totals": totals,
    }
    if not show:
        return document
    click.echo(f"{session.ref}: leaf {leaf}, model {context.model or 'unknown'}")
    click.echo(f"{'#':>4}  {'role':<10} {'entry':<8} {'line':>5} {'tokens':>7}  preview")
    for item in messages:
        flags = ("~" if item["compressed"] else " ") + (" " if item["sent"] else "x")
        role = item["role"] if item["source_role"] == item["role"] else item["source_role"]
        click.echo(
            f"{item['index']:>4}{flags}{role:<10} {item['entry_id'] or '-':<8} "
            f"{item['line']:>5} {item['tokens']:>7,}  {item['preview']}"
        )
    ratio = totals["compression_ratio"]
    click.echo(
        f"totals: {plural(message_count, 'message')}, {totals['active_messages']} active, "
        f"{totals['summaries']} summaries, {totals['compressed_messages']} compressed; "
        f"context {context_tokens:,} tokens ({estimator.name}), history {history:,} "
        f"({history_source}), compression ratio {ratio if ratio is not None else '-'}"
    )
    click.echo("(~ compressed by gitclaw-compress; x not sent: the reply ended in error/aborted)")
    return document


def _history_tokens(session: SessionFile, path: Path, infos: list[EntryInfo]) -> tuple[int, str]:
    """Tokens of every message of the session as written: restored when it is compressed."""
    now = sum(info.tokens for info in infos if info.llm_role is not None)
    compressed = any(MARKER_BYTES in line.data for line in session.lines)
    if not compressed:
        return now, "file"
    if session.repo is None:
        return now, "file (compressed; not in a git repository)"
    try:
        original = list(restored_lines(session.repo, path, session.config["archive.ref"]))
    except GitClawError:
        return now, "file (compressed; the archive is not at hand)"
    estimator = get_estimator(session.config["tokens.estimator"])
    restored = read_infos(original, estimator)
    return sum(info.tokens for info in restored if info.llm_role is not None), "original"
