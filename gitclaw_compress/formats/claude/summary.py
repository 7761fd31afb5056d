"""Claude Code's own compaction record, written so that Claude Code 2.1.197 resumes from it.

Two lines, appended: a `system` line with `subtype: "compact_boundary"` (`parentUuid: null`,
`logicalParentUuid` the newest uuid before it), then the summary as a `user` line with
`isCompactSummary: true` whose parent is the boundary. The kept tail stays where it is, before
the boundary: `compactMetadata.preservedMessages` lists its lines in the order they are sent
and `preservedSegment` names its head and tail, both with the summary line as anchor, as
Claude Code writes them after a partial compaction. On resume Claude Code relinks the listed
lines after the summary, zeroes their usage and drops every other line before the boundary.
A list rather than the segment's `parentUuid` walk alone keeps the lines of parallel tool
calls that hang off the walked path (the walk would lose them, and with them a tool pair).
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.claude.context import resume
from gitclaw_compress.formats.claude.view import MESSAGE_ID, RESULTS, TYPE
from gitclaw_compress.model import EntryView, SummaryRequest

# Fields copied from the newest line of the conversation: who, where and which version.
COPIED_FIELDS = ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch")


def _new_uuid(taken: set[str]) -> str:
    while True:
        candidate = str(uuid_module.uuid4())
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def _kept_start(path: Sequence[EntryView], first_kept: int) -> int:
    """Where the kept tail starts on the path: at `first_kept`, or earlier at a person's
    message or the first line of an assistant message, so that no tool pair is split."""
    start = next((i for i, view in enumerate(path) if view.number == first_kept), None)
    if start is None:
        raise GitClawError(f"line {first_kept} is not on the conversation Claude Code resumes")
    while start > 0:
        view, before = path[start], path[start - 1]
        kind = view.links.get(TYPE)
        if kind == "user" and not view.links.get(RESULTS):
            break
        message_id = view.links.get(MESSAGE_ID)
        if kind == "assistant" and not (message_id and before.links.get(MESSAGE_ID) == message_id):
            break
        start -= 1
    return start


def summary_lines(
    lines: Sequence[RawLine], views: Sequence[EntryView], request: SummaryRequest
) -> list[bytes]:
    by_number = {view.number: view for view in views}
    conversation = resume(views)
    if not conversation.path:
        raise GitClawError("no conversation to summarize: Claude Code would resume nothing")
    path = [by_number[number] for number in conversation.path]
    # Nothing kept (the first kept line is past the conversation): the summary alone, as
    # Claude Code's own full compaction leaves it.
    nothing_kept = request.first_kept > max(view.number for view in views)
    start = len(path) if nothing_kept else _kept_start(path, request.first_kept)
    kept = [view.id for view in path[start:] if view.id]
    taken = {view.id for view in views if view.id is not None}
    newest = _newest_entry(lines, conversation.path[-1])
    boundary_id, summary_id = _new_uuid(taken), _new_uuid(taken)
    common = {key: newest[key] for key in COPIED_FIELDS if key in newest}
    metadata: dict[str, Any] = {"trigger": "manual", "preTokens": request.tokens_before}
    if kept:
        metadata["preservedSegment"] = {
            "headUuid": kept[0],
            "anchorUuid": summary_id,
            "tailUuid": kept[-1],
        }
        metadata["preservedMessages"] = {"anchorUuid": summary_id, "uuids": kept, "allUuids": kept}
    boundary: dict[str, Any] = {
        "parentUuid": None,
        "logicalParentUuid": path[-1].id,
        "isSidechain": False,
        **common,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": request.timestamp,
        "uuid": boundary_id,
        "level": "info",
        "compactMetadata": metadata,
    }
    summary: dict[str, Any] = {
        "parentUuid": boundary_id,
        "isSidechain": False,
        **common,
        "type": "user",
        "message": {"role": "user", "content": request.summary},
        "isCompactSummary": True,
        "isVisibleInTranscriptOnly": True,
        "uuid": summary_id,
        "timestamp": request.timestamp,
    }
    return [orjson.dumps(boundary), orjson.dumps(summary)]


def _newest_entry(lines: Sequence[RawLine], number: int) -> Mapping[str, Any]:
    for line in lines:
        if line.number == number:
            entry: Entry | None = parse_entry(line.data)
            if entry is not None:
                return entry
    raise GitClawError(f"line {number}: the newest line of the conversation does not parse")
