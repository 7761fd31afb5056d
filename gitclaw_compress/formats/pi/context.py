"""What pi sends its model on resume (`Format.resume`), from the views of `view.py`.

A Python reading of pi 0.73.1's `buildSessionContext` and `convertToLlm`: the leaf is the
last entry, the context is the chain of `parentId` links from it back to the root, and when a
`compaction` entry is on that chain the model gets its summary first, then the entries from
`firstKeptEntryId` up to the compaction, then everything after it. Replies that stopped with
error or aborted stay in pi's context but no provider sends them (`Message.sent` False).
"""

from __future__ import annotations

from collections.abc import Sequence

from gitclaw_compress.formats.pi.view import FIRST_KEPT
from gitclaw_compress.model import COMPACTION, Conversation, EntryView


def active_path(items: Sequence[EntryView]) -> list[EntryView]:
    """The entries from the root to the leaf (the last entry), following ``parentId``.

    A later duplicate id wins, as in pi's Map; a missing parent ends the walk; a cycle is
    cut where an entry (told apart by line, so entries without ids count) comes back.
    """
    if not items:
        return []
    by_id = {item.id: item for item in items if item.id is not None}
    path: list[EntryView] = []
    seen: set[int] = set()
    current: EntryView | None = items[-1]
    while current is not None and current.number not in seen:
        seen.add(current.number)
        path.append(current)
        current = by_id.get(current.parent) if current.parent else None
    path.reverse()
    return path


def context_entries(path: Sequence[EntryView]) -> tuple[list[EntryView], EntryView | None]:
    """The entries of ``path`` that buildSessionContext turns into messages, in order, and the
    compaction it resumes from: without one, every entry; with one, the latest compaction
    (its summary), the entries from its first kept entry up to it, then those after it (other
    compactions give nothing)."""
    at = next((i for i in range(len(path) - 1, -1, -1) if path[i].kind == COMPACTION), None)
    if at is None:
        return list(path), None
    compaction = path[at]
    first_kept = compaction.links.get(FIRST_KEPT)
    emitted = [compaction]
    kept = False
    for item in path[:at]:
        kept = kept or (item.id is not None and item.id == first_kept)
        if kept and item.kind != COMPACTION:
            emitted.append(item)
    emitted.extend(item for item in path[at + 1 :] if item.kind != COMPACTION)
    return emitted, compaction


def resume(items: Sequence[EntryView]) -> Conversation:
    """pi's buildSessionContext followed by convertToLlm, on neutral views."""
    path = active_path(items)
    model: str | None = None
    for item in path:
        if item.model is not None:
            model = item.model
    emitted, compaction = context_entries(path)
    messages = [message for item in emitted for message in item.messages]
    return Conversation(
        messages,
        [item.number for item in path],
        compaction.number if compaction is not None else None,
        model,
    )
