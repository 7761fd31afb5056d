"""pi's own compaction record (`Format.summary_record`): one `compaction` entry appended as a
child of the leaf, naming the first entry it keeps, with the files read and modified in its
`details` as pi writes them and how this tool wrote it (`gitclawSummary`).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence

import orjson

from gitclaw_compress.core.lines import Entry, RawLine
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.pi.view import FIRST_KEPT, iter_entries
from gitclaw_compress.model import MODIFIED_FILES, READ_FILES, SUMMARY_META, SummaryRequest

SUMMARY_META_KEY = "gitclawSummary"  # in a compaction's details: how this tool wrote it


def summary_record(lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
    """pi's ``compaction`` entry: a child of the leaf, its own 8-hex id unique in the file."""
    by_line = {line.number: entry for line, entry in iter_entries(lines)}
    taken = {_entry_id(entry) for entry in by_line.values()}
    leaf_id = _entry_id(by_line.get(request.leaf, {}))
    first_kept_id = _entry_id(by_line.get(request.first_kept, {}))
    if request.first_kept > max(by_line, default=0):
        raise GitClawError("pi's compaction entry names the first entry it keeps: keep a turn")
    if leaf_id is None or first_kept_id is None:
        # pi would resume from the record alone (no parent) or lose the kept messages.
        missing = request.leaf if leaf_id is None else request.first_kept
        raise GitClawError(f"line {missing} has no entry id for pi's compaction entry to name")
    details = dict(request.details)
    pi_details: dict[str, object] = {
        "readFiles": list(_strings(details.pop(READ_FILES, ()))),
        "modifiedFiles": list(_strings(details.pop(MODIFIED_FILES, ()))),
    }
    if SUMMARY_META in details:
        pi_details[SUMMARY_META_KEY] = details.pop(SUMMARY_META)
    pi_details.update(details)
    record = {
        "type": "compaction",
        "id": new_entry_id({entry_id for entry_id in taken if entry_id is not None}),
        "parentId": leaf_id,
        "timestamp": request.timestamp,
        "summary": request.summary,
        FIRST_KEPT: first_kept_id,
        "tokensBefore": request.tokens_before,
        "details": pi_details,
    }
    return [orjson.dumps(record)]


def _entry_id(entry: Entry) -> str | None:
    entry_id = entry.get("id")
    return entry_id if isinstance(entry_id, str) else None


def _strings(value: object) -> Iterator[str]:
    for item in value if isinstance(value, list | tuple) else ():
        if isinstance(item, str):
            yield item


def new_entry_id(taken: set[str]) -> str:
    """8 hex characters not used by any entry of the file, as pi makes them."""
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
