"""The active branch of a session and the messages pi builds from it, as pi does on resume.

pi takes the last entry of the file as the leaf and follows ``parentId`` links back to the
root; an entry whose parent is missing ends the walk there. When a ``compaction`` entry is on
that path, the model gets the compaction's summary first, then the entries from its
``firstKeptEntryId`` up to the compaction, then everything after it (``buildSessionContext``
in pi's ``session-manager.js``). These functions mirror that on parsed entries, read-only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gitclaw_compress.session import Entry, RawLine, parse_entry

# Entry types that give the model a message (pi's appendMessage in buildSessionContext).
MESSAGE_ENTRY_TYPES = frozenset({"message", "custom_message", "branch_summary"})


@dataclass(frozen=True, slots=True)
class Node:
    """One entry of the file (the header excluded) and where it is."""

    index: int  # 0-based among the file's entries
    line: int  # 1-based line number in the file
    entry: Entry

    @property
    def id(self) -> str:
        return str(self.entry.get("id"))

    @property
    def type(self) -> str | None:
        kind = self.entry.get("type")
        return kind if isinstance(kind, str) else None


def parse_nodes(lines: Iterable[RawLine]) -> list[Node]:
    """Every entry after the header that parses as an object with a string id.

    Blank and malformed lines are skipped, as pi skips them; so is the header (line 1).
    """
    nodes: list[Node] = []
    for line in lines:
        if line.number == 1:
            continue
        entry = parse_entry(line.data)
        if entry is None or entry.get("type") == "session" or not isinstance(entry.get("id"), str):
            continue
        nodes.append(Node(len(nodes), line.number, entry))
    return nodes


def active_path(nodes: list[Node]) -> list[Node]:
    """The entries from the root to the leaf (the last entry), following ``parentId``."""
    if not nodes:
        return []
    by_id = {node.id: node for node in nodes}  # a later duplicate id wins, as in pi's Map
    path: list[Node] = []
    seen: set[str] = set()
    current: Node | None = nodes[-1]
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        parent = current.entry.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path


def latest_compaction(path: list[Node]) -> int | None:
    """The position in ``path`` of the last compaction entry, or None."""
    for position in range(len(path) - 1, -1, -1):
        if path[position].type == "compaction":
            return position
    return None


def message_of_node(node: Node) -> dict[str, Any] | None:
    """The message an entry gives the model, shaped like pi's AgentMessage, or None.

    ``message`` entries give their message; ``custom_message`` a ``custom`` message;
    ``branch_summary`` (with a summary) a ``branchSummary``; ``compaction`` a
    ``compactionSummary``.
    """
    entry = node.entry
    kind = node.type
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        return {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
        }
    if kind == "branch_summary" and entry.get("summary"):
        return {"role": "branchSummary", "summary": entry.get("summary")}
    if kind == "compaction":
        return {
            "role": "compactionSummary",
            "summary": entry.get("summary"),
            "tokensBefore": entry.get("tokensBefore"),
        }
    return None


def context_nodes(path: list[Node]) -> list[Node]:
    """The entries whose messages the model gets, in order (pi's ``buildSessionContext``).

    With a compaction on the path: the compaction entry itself (its summary), the message
    entries from ``firstKeptEntryId`` up to it, then the message entries after it.
    """
    position = latest_compaction(path)
    if position is None:
        return [n for n in path if n.type in MESSAGE_ENTRY_TYPES and message_of_node(n)]
    compaction = path[position]
    first_kept = compaction.entry.get("firstKeptEntryId")
    nodes = [compaction]
    found = False
    for node in path[:position]:
        if node.id == first_kept:
            found = True
        if found and node.type in MESSAGE_ENTRY_TYPES and message_of_node(node):
            nodes.append(node)
    nodes.extend(
        n for n in path[position + 1 :] if n.type in MESSAGE_ENTRY_TYPES and message_of_node(n)
    )
    return nodes


__all__ = [
    "MESSAGE_ENTRY_TYPES",
    "Node",
    "active_path",
    "context_nodes",
    "latest_compaction",
    "message_of_node",
    "parse_nodes",
]
