"""Whole entries on the active path, for the summary code.

A thin adapter over :mod:`context`, which holds the one reading of pi's
``buildSessionContext`` (the ``parentId`` walk from the last entry, and the messages a
compaction leaves). :class:`Node` keeps the full entry where :class:`~context.EntryInfo`
keeps only what the budget needs; both walk and select through the same functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gitclaw_compress.core.lines import Entry, RawLine
from gitclaw_compress.tokens.context import (
    active_path,
    context_entries,
    iter_entries,
    latest_compaction,
    message_of_entry,
)

# Entry types that give the model a message (pi's appendMessage in buildSessionContext).
MESSAGE_ENTRY_TYPES = frozenset({"message", "custom_message", "branch_summary"})


def _text(entry: Entry, key: str) -> str | None:
    value = entry.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Node:
    """One entry of the file (the header excluded) and where it is."""

    index: int  # 0-based among the file's entries
    line: int  # 1-based line number in the file
    entry: Entry

    @property
    def number(self) -> int:
        return self.line

    @property
    def id(self) -> str | None:
        return _text(self.entry, "id")

    @property
    def label(self) -> str:
        """The id, or the line for an entry without one (pi loads those too)."""
        return self.id if self.id is not None else f"line {self.line}"

    @property
    def parent_id(self) -> str | None:
        return _text(self.entry, "parentId")

    @property
    def type(self) -> str | None:
        return _text(self.entry, "type")

    @property
    def first_kept(self) -> str | None:
        return _text(self.entry, "firstKeptEntryId") if self.type == "compaction" else None


def parse_nodes(lines: Iterable[RawLine]) -> list[Node]:
    """Every entry pi would load (see :func:`context.iter_entries`), ids or not."""
    return [Node(i, line.number, entry) for i, (line, entry) in enumerate(iter_entries(lines))]


def message_of_node(node: Node) -> dict[str, Any] | None:
    """The message an entry gives the model, shaped like pi's AgentMessage, or None."""
    return message_of_entry(node.entry)


def context_nodes(path: Sequence[Node]) -> list[Node]:
    """The entries whose messages the model gets, in order (pi's ``buildSessionContext``)."""
    return [n for n in context_entries(path) if message_of_node(n) is not None]


__all__ = [
    "MESSAGE_ENTRY_TYPES",
    "Node",
    "active_path",
    "context_nodes",
    "latest_compaction",
    "message_of_node",
    "parse_nodes",
]
