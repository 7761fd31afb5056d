"""Codex's own compaction record, written so that Codex CLI resumes from it: one `compacted`
line at the end of the rollout whose `replacement_history` is the summary as a user message,
then the kept items copied as they are; or, when no item is kept, what Codex's own
compaction writes: the newest requests (`SummaryRequest.copy_requests`) and then the
summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.formats.codex.context import (
    Sent,
    _rebuilt_after_summary,  # Codex's own rebuild after a summary: the newest requests
    call_ids,
    replay,
    user_item,
)
from gitclaw_compress.formats.codex.view import SUMMARY_PREFIX, item_message, payload_of, view_lines
from gitclaw_compress.model import (
    SUMMARY,
    TEXT,
    TOOL_CALL,
    TOOL_RESULT,
    Message,
    Part,
    SummaryRequest,
)


def sent_items(number: int, entry: Entry) -> list[dict[str, Any]]:
    """The response items a line's view messages are sent as (aligned with `view_line`)."""
    line_type = entry.get("type")
    payload = payload_of(entry)
    if line_type == "response_item":
        return [payload] if item_message(payload, number) is not None else []
    if line_type == "compacted":
        history = payload.get("replacement_history")
        if not isinstance(history, list):
            return []  # rebuilt from earlier messages by `replay`
        return [i for i in history if isinstance(i, dict) and item_message(i, number) is not None]
    return []


def summary_record(lines: Sequence[RawLine], request: SummaryRequest) -> bytes:
    """A `compacted` line Codex resumes from: its replacement history is one user message
    holding the summary, then the history Codex sends from `request.first_kept` on, copied
    item for item (sealed reasoning as it is). A kept output whose call is older pulls its
    call (and what lies between) in, so every tool pair stays whole. Codex reads the whole
    file, so the record goes at its end; it has no field for `tokens_before` or `details`."""
    views = list(view_lines(lines))
    items: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        entry = parse_entry(line.data)
        if entry is not None and (found := sent_items(line.number, entry)):
            items[line.number] = found
    history = [sent for sent in replay(views, items).history if sent.item is not None]
    start = next(
        (index for index, sent in enumerate(history) if sent.message.line >= request.first_kept),
        len(history),
    )
    kept_results = {
        call for sent in history[start:] for call in call_ids(sent.message, TOOL_RESULT)
    }
    for index in range(start):
        if kept_results & set(call_ids(history[index].message, TOOL_CALL)):
            start = index
            break
    text = f"{SUMMARY_PREFIX}\n{request.summary}"
    kept = [sent.item for sent in history[start:] if sent.item is not None]
    replacement = [user_item(text), *kept]
    if not kept and request.copy_requests:
        replacement = _requests_then_summary(history, text)
    record = {
        "timestamp": request.timestamp,
        "type": "compacted",
        "payload": {"message": text, "replacement_history": replacement},
    }
    return orjson.dumps(record)


def _requests_then_summary(history: list[Sent], text: str) -> list[dict[str, Any]]:
    """The replacement history of Codex's own compaction (`build_compacted_history`): the
    newest real requests as text, up to its 20,000 tokens (bytes / 4; the one that does not
    fit is cut in its middle), then the summary; no reply, call or reasoning item."""
    summary = Message(SUMMARY, [Part(TEXT, text)], 0)
    rebuilt = _rebuilt_after_summary(history, [summary])
    return [sent.item for sent in rebuilt if sent.item is not None]
