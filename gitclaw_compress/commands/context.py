"""`context PATH`: the messages the model sees when the agent resumes the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    SessionFile,
    all_option,
    config_option,
    existing_path,
    json_option,
    read_session,
    report_sessions,
)
from gitclaw_compress.core.context import (
    Context,
    ContextSize,
    budget_for,
    history_tokens,
    measure_context,
    read_context,
)
from gitclaw_compress.core.lines import MARKER_BYTES
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.model import SUMMARY, EntryView
from gitclaw_compress.ops.render import preview
from gitclaw_compress.ops.restore import restored_lines
from gitclaw_compress.tokens.estimate import get_estimator
from gitclaw_compress.units import plural

PREVIEW_CHARS = 72


@click.command("context")
@existing_path(required=False)
@all_option
@config_option
@json_option
def command(path: Path | None, take_all: bool, config_path: Path | None, as_json: bool) -> None:
    """List the messages the agent gives the model on resume: role, tokens and a preview.

    It follows the agent's own resume rules (for pi: the parentId chain from the last entry,
    and the latest compaction's summary, then the entries from firstKeptEntryId on). Tokens
    are estimates (tokens.estimator); the context's total is the figure `status` gives, from
    recorded usage where the agent recorded it, with the estimate beside it. The totals
    compare the context with the whole history:
    the original, restored from the archive, when the file is compressed. With no PATH, the
    sessions `compress` would take; with --all, every session.
    """

    def one_report(session: Path, show: bool) -> dict[str, Any]:
        return report(session, config_path, show=show)

    report_sessions(path, config_path, as_json, one_report, take_all=take_all)


def report(path: Path, config_path: Path | None, *, show: bool) -> dict[str, Any]:
    """The context of one session: printed when `show`, returned as its JSON document."""
    session = read_session(path, config_path)
    estimator = get_estimator(session.config["tokens.estimator"])
    context = read_context(session.format, session.lines, estimator, session.originals())
    history, history_source = _history_tokens(session, path, context.views)
    messages = _rows(context)
    size = measure_context(context, estimator)  # the figure `status` gives, same source
    totals = _totals(context, size, history, history_source)
    leaf = context.leaf()
    config = session.config
    budget = budget_for(
        context.model,
        config["models.overrides"],
        config["tokens.reserve"],
        context.conversation.context_window,
    )  # the window `status` gives, from the same source
    document = {
        "path": session.ref,
        "format": session.format.name,
        "model": context.model,
        "context_window": budget.context_window,
        "limits_source": budget.limits_source,
        "leaf": leaf,
        "estimator": estimator.name,
        "messages": messages,
        "totals": totals,
    }
    from gitclaw_compress.secrets.mask import mask_texts  # never print a secret

    previews = mask_texts([m["preview"] for m in messages], session.lines)
    for item, masked in zip(messages, previews, strict=True):
        item["preview"] = masked
    if show:
        click.echo(
            f"{session.ref}: leaf {leaf}, model {context.model or 'unknown'}, window "
            f"{budget.context_window:,} ({budget.window_source()})"
        )
        for row in table(messages):
            click.echo(row)
        click.echo(_totals_line(totals, size))
        click.echo(
            "(~ compressed by gitclaw-compress; x not sent: the reply ended in error/aborted)"
        )
    return document


def _rows(context: Context) -> list[dict[str, Any]]:
    """One row per message sent, in order, with its unmasked preview."""
    return [
        {
            "index": index,
            "role": message.role,
            "source_role": message.label or message.role,
            "entry_id": message.entry_id,
            "line": message.line,
            "tokens": message.tokens,
            "compressed": context.is_compressed(message),
            "sent": message.sent,
            "preview": preview(message, PREVIEW_CHARS),
        }
        for index, message in enumerate(context.messages)
    ]


def _totals(
    context: Context, size: ContextSize, history: int, history_source: str
) -> dict[str, Any]:
    """The counts of every message and of those sent, and the context against the history."""
    estimated = size.estimated  # every message sent, estimated: what the rows add up to
    every = [message for view in context.views for message in view.messages]
    return {
        "messages": len(every),
        "active_messages": len(context.messages),
        "summaries": sum(1 for message in every if message.role == SUMMARY),
        "active_summaries": sum(1 for message in context.messages if message.role == SUMMARY),
        "compressed_messages": sum(
            1 for message in context.messages if context.is_compressed(message)
        ),
        "context_tokens": size.tokens,
        "context_source": size.source,
        "estimated_tokens": estimated,
        "history_tokens": history,
        "history_source": history_source,
        # Estimates on both sides: the history's size against the context's.
        "compression_ratio": round(history / estimated, 2) if estimated else None,
    }


def _totals_line(totals: dict[str, Any], size: ContextSize) -> str:
    ratio = totals["compression_ratio"]
    return (
        f"totals: {plural(totals['messages'], 'message')}, {totals['active_messages']} active, "
        f"{totals['summaries']} summaries, {totals['compressed_messages']} compressed; "
        f"context {size.tokens:,} tokens ({size.label()}), history "
        f"{totals['history_tokens']:,} estimated ({totals['history_source']}), compression "
        f"ratio {ratio if ratio is not None else '-'}"
    )


def table(messages: list[dict[str, Any]]) -> list[str]:
    """The message table, each column as wide as its widest cell (ids are 36-character
    uuids in three formats, roles as long as `compactionSummary`)."""
    rows = [
        (
            str(item["index"]),
            ("~" if item["compressed"] else " ") + (" " if item["sent"] else "x"),
            str(item["source_role"]),
            str(item["entry_id"] or "-"),
            str(item["line"]),
            f"{item['tokens']:,}",
            str(item["preview"]),
        )
        for item in messages
    ]
    head = ("#", "  ", "role", "entry", "line", "tokens", "preview")
    widths = [max(len(row[column]) for row in [head, *rows]) for column in range(6)]

    def line(row: tuple[str, ...]) -> str:
        index, flags, role, entry, number, tokens, text = row
        return (
            f"{index:>{widths[0]}}{flags}{role:<{widths[2]}} {entry:<{widths[3]}} "
            f"{number:>{widths[4]}} {tokens:>{widths[5]}}  {text}"
        )

    return [line(head), *map(line, rows)]


def _history_tokens(session: SessionFile, path: Path, views: list[EntryView]) -> tuple[int, str]:
    """Tokens of every message of the session as written: restored when it is compressed."""
    estimator = get_estimator(session.config["tokens.estimator"])
    now = history_tokens(views, estimator)
    compressed = any(MARKER_BYTES in line.data for line in session.lines)
    if not compressed:
        return now, "file"
    if session.repo is None:
        return now, "file (compressed; not in a git repository)"
    try:
        original = list(restored_lines(session.repo, path, session.config["archive.ref"]))
    except GitClawError:
        return now, "file (compressed; the archive is not at hand)"
    return history_tokens(session.format.views(original), estimator), "original"
