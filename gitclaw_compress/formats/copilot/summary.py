"""Copilot CLI's own compaction record (`Format.summary_record`): `session.compaction_start`
and `session.compaction_complete` appended after the file's last event, as the CLI writes them,
with new event ids in its shape; the summary alone, since the CLI cannot keep a tail after a
record (`NO_KEPT_TAIL`).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

import orjson

from gitclaw_compress.formats.copilot.context import resume
from gitclaw_compress.formats.copilot.view import COMPACTION_COMPLETE, COMPACTION_START
from gitclaw_compress.model import Conversation, EntryView, Message, SummaryRequest

# Why a record cannot keep a tail (checked with Copilot CLI 1.0.102; see docs/formats.md):
# the CLI sends no event from before the record, and copies of the kept events appended
# after it would break what the CLI relies on: its summary message lists every user message
# before the record, so each kept request would reach the model twice (and once more per
# chained record), and the copies would repeat toolCallId and messageId values it keeps unique.
NO_KEPT_TAIL = (
    "its summary lists every earlier user message, so no turn can be kept after it; "
    "use `--keep-turns 0`"
)
SEPARATOR_ESCAPES = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def kept_tail(conversation: Conversation, first_kept: int) -> list[Message]:
    """The messages of the conversation that come from `first_kept` on."""
    return [m for m in conversation.messages if max(m.source_lines()) >= first_kept]


def event_id(seed: bytes, taken: set[str]) -> str:
    """A new event id in the CLI's shape (UUID v4), from `seed`, not in `taken`."""
    counter = 0
    while True:
        digest = bytearray(hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()[:16])
        digest[6] = (digest[6] & 0x0F) | 0x40
        digest[8] = (digest[8] & 0x3F) | 0x80
        candidate = str(uuid.UUID(bytes=bytes(digest)))
        if candidate not in taken:
            taken.add(candidate)
            return candidate
        counter += 1


def record_lines(views: Sequence[EntryView], request: SummaryRequest) -> list[bytes]:
    """`session.compaction_start` and `session.compaction_complete`, as the CLI writes them,
    after the file's last event: the summary alone, since nothing can be kept (`NO_KEPT_TAIL`).
    """
    conversation = resume(views)
    taken = {view.id for view in views if view.id is not None}
    previous = next((view.id for view in reversed(views) if view.id is not None), None)
    seed = orjson.dumps([previous, request.summary, request.timestamp])
    start_id = event_id(seed + b"start", taken)
    complete_id = event_id(seed + b"complete", taken)
    removed = len(conversation.messages)
    events = [
        (COMPACTION_START, {}, start_id, previous),
        (
            COMPACTION_COMPLETE,
            {
                "success": True,
                "summaryContent": request.summary,
                "preCompactionTokens": request.tokens_before,
                "preCompactionMessagesLength": removed,
                "messagesRemoved": removed,
            },
            complete_id,
            start_id,
        ),
    ]
    lines = []
    for kind, data, new_id, parent in events:
        record = {
            "type": kind,
            "data": data,
            "id": new_id,
            "timestamp": request.timestamp,
            "parentId": parent,
        }
        line = orjson.dumps(record)
        for raw, escaped in SEPARATOR_ESCAPES:
            line = line.replace(raw, escaped)
        lines.append(line)
    return lines
