"""What the model sees when pi resumes a session, and how many tokens that is.

A Python reading of pi 0.73.1's `buildSessionContext` and `convertToLlm`: the leaf is the last
entry, the context is the chain of `parentId` links from it back to the root, and when a
`compaction` entry is on that chain the model gets its summary first, then the entries from
`firstKeptEntryId` up to the compaction, then everything after it. Pure: lines in, facts out.

Each entry is reduced to an :class:`EntryInfo` (ids, role, estimated tokens, recorded usage),
so that `scan` can collect them in the pass it already makes and the commands can build the
context without holding whole entries in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import orjson

from gitclaw_compress.core.lines import MARKER_KEY, Entry, RawLine, parse_entry
from gitclaw_compress.tokens.estimate import (
    TokenEstimator,
    estimate_message_tokens,
    usage_context_tokens,
)
from gitclaw_compress.tokens.models import lookup_model, usable_tokens

# pi's message roles and the role each has once convertToLlm has turned it into a provider
# message. Any other role is dropped by convertToLlm.
LLM_ROLES = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "toolResult",
    "bashExecution": "user",
    "custom": "user",
    "branchSummary": "user",
    "compactionSummary": "user",
}
SUMMARY_ROLES = frozenset({"branchSummary", "compactionSummary"})
PROVIDER_DROPPED_STOPS = frozenset({"error", "aborted"})
LEVELS = ("ok", "warning", "critical")  # in order; level_for gives one of them


@dataclass(slots=True)
class EntryInfo:
    """What the context needs to know about one entry (one line of the file)."""

    number: int  # line number, 1-based
    id: str | None
    parent_id: str | None
    type: str | None
    role: str | None = None  # pi's role of the message this entry yields, if any
    tokens: int = 0  # estimated tokens of that message
    usage: int | None = None  # context size the provider recorded (assistant replies)
    model: str | None = None  # model_change.modelId, or an assistant reply's model
    compressed: bool = False  # the line carries a gitclaw-compress marker
    compressed_at: int | None = None  # the file's line count when it was compressed
    tool: str | None = None  # toolName of a completed tool output (success or error)
    first_kept: str | None = None  # compaction: where the kept history starts
    provider_drops: bool = False  # an assistant reply that stopped with error or aborted
    preview: str = ""

    @property
    def llm_role(self) -> str | None:
        """The role the provider sees, or None when convertToLlm drops the message."""
        return LLM_ROLES.get(self.role) if self.role is not None else None


def message_of_entry(entry: Entry) -> dict[str, Any] | None:
    """The pi message an entry yields when it is on the path (as buildSessionContext makes it).

    ``message`` entries give their message; ``custom_message`` a ``custom`` message;
    ``branch_summary`` (with a summary) a ``branchSummary``; ``compaction`` a
    ``compactionSummary``. Any other entry gives none.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        return {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
        }
    if kind == "branch_summary":
        summary = entry.get("summary")
        return {"role": "branchSummary", "summary": summary} if summary else None
    if kind == "compaction":
        return {
            "role": "compactionSummary",
            "summary": entry.get("summary"),
            "tokensBefore": entry.get("tokensBefore"),
        }
    return None


def _completed_tool(message: dict[str, Any]) -> str | None:
    """toolName of a tool output pi wrote when the tool finished (isError true or false)."""
    if message.get("role") != "toolResult" or not isinstance(message.get("isError"), bool):
        return None
    if not isinstance(message.get("content"), list):
        return None
    name = message.get("toolName")
    return name if isinstance(name, str) else ""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def message_preview(message: dict[str, Any], limit: int = 80) -> str:
    """A short one-line preview of a pi message, for listings."""
    role = message.get("role")
    if role in SUMMARY_ROLES:
        summary = message.get("summary")
        return _one_line(summary if isinstance(summary, str) else "", limit)
    if role == "bashExecution":
        return _one_line(f"$ {message.get('command', '')}", limit)
    content = message.get("content")
    if isinstance(content, str):
        return _one_line(content, limit)
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            parts.append(block["text"])
        elif kind == "toolCall":
            parts.append(f"[{block.get('name', 'tool')}]")
        elif kind == "image":
            parts.append("[image]")
        elif kind == "thinking" and str(block.get("thinking") or "").strip():
            parts.append("[thinking]")
    text = " ".join(parts)
    if role == "toolResult":
        text = f"{message.get('toolName', 'tool')}: {text}"
    return _one_line(text, limit)


def entry_info(
    line: RawLine,
    entry: Entry,
    estimator: TokenEstimator,
    *,
    preview_chars: int = 0,
) -> EntryInfo:
    """Reduce a parsed entry to what the context and the budget policies need."""
    kind = entry.get("type")
    entry_id = entry.get("id")
    parent_id = entry.get("parentId")
    marker = entry.get(MARKER_KEY)
    info = EntryInfo(
        number=line.number,
        id=entry_id if isinstance(entry_id, str) else None,
        parent_id=parent_id if isinstance(parent_id, str) else None,
        type=kind if isinstance(kind, str) else None,
        compressed=isinstance(marker, dict),
    )
    if isinstance(marker, dict) and type(marker.get("lines")) is int:
        info.compressed_at = marker["lines"]
    if kind == "model_change" and isinstance(entry.get("modelId"), str):
        info.model = entry["modelId"]
    elif kind == "compaction":
        first_kept = entry.get("firstKeptEntryId")
        info.first_kept = first_kept if isinstance(first_kept, str) else None
    message = message_of_entry(entry)
    if message is None:
        return info
    role = message.get("role")
    info.role = role if isinstance(role, str) else None
    if info.role == "bashExecution" and message.get("excludeFromContext"):
        info.role = None  # convertToLlm skips it (the `!!` prefix)
    if info.role is None:
        return info
    info.tokens = estimate_message_tokens(message, estimator)
    if info.role == "assistant":
        info.usage = usage_context_tokens(message)
        info.provider_drops = message.get("stopReason") in PROVIDER_DROPPED_STOPS
        if isinstance(message.get("model"), str):
            info.model = message["model"]
    elif kind == "message":
        info.tool = _completed_tool(message)
    if preview_chars:
        info.preview = message_preview(message, preview_chars)
    return info


def parse_like_pi(data: bytes) -> Entry | None:
    """The entry on a line as pi reads it: pi decodes the file as UTF-8 with replacement
    characters, so a line with invalid UTF-8 inside a string still loads there."""
    entry = parse_entry(data)
    if entry is not None or not data.strip():
        return entry
    try:
        value = orjson.loads(data.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def iter_entries(lines: Iterable[RawLine]) -> Iterator[tuple[RawLine, Entry]]:
    """Every entry pi would load, with its line: line 1 (the header) and bad lines skipped."""
    for line in lines:
        if line.number == 1:
            continue
        entry = parse_like_pi(line.data)
        if entry is not None and entry.get("type") != "session":
            yield line, entry


def read_infos(
    lines: Iterable[RawLine], estimator: TokenEstimator, *, preview_chars: int = 0
) -> list[EntryInfo]:
    """EntryInfo for every entry pi would load: line 1 (the header) and bad lines are skipped."""
    return [
        entry_info(line, entry, estimator, preview_chars=preview_chars)
        for line, entry in iter_entries(lines)
    ]


class PathItem(Protocol):
    """What walking the path and choosing the context need of an entry."""

    @property
    def number(self) -> int: ...  # line number: unique per entry, even without an id
    @property
    def id(self) -> str | None: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def type(self) -> str | None: ...
    @property
    def first_kept(self) -> str | None: ...  # compaction: firstKeptEntryId


Item = TypeVar("Item", bound=PathItem)


def active_path(items: Sequence[Item]) -> list[Item]:
    """The entries from the root to the leaf (the last entry), following ``parentId``.

    A later duplicate id wins, as in pi's Map; a missing parent ends the walk; a cycle is
    cut where an entry (told apart by line, so entries without ids count) comes back.
    """
    if not items:
        return []
    by_id: dict[str, Item] = {}
    for item in items:
        if item.id is not None:
            by_id[item.id] = item
    path: list[Item] = []
    seen: set[int] = set()
    current: Item | None = items[-1]
    while current is not None and current.number not in seen:
        seen.add(current.number)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    return path


def latest_compaction(path: Sequence[Item]) -> int | None:
    """The position in ``path`` of the last compaction entry, or None."""
    for position in range(len(path) - 1, -1, -1):
        if path[position].type == "compaction":
            return position
    return None


def context_entries(path: Sequence[Item]) -> list[Item]:
    """The entries of ``path`` that pi's buildSessionContext turns into messages, in order.

    Without a compaction on the path, every entry. With one, the latest compaction (standing
    for its summary), the entries from its ``firstKeptEntryId`` up to it, then the entries
    after it; other compaction entries give nothing. Callers keep the entries that yield a
    message.
    """
    at = latest_compaction(path)
    if at is None:
        return list(path)
    compaction = path[at]
    emitted = [compaction]
    kept = False
    for item in path[:at]:
        kept = kept or (item.id is not None and item.id == compaction.first_kept)
        if kept and item.type != "compaction":
            emitted.append(item)
    emitted.extend(item for item in path[at + 1 :] if item.type != "compaction")
    return emitted


@dataclass(slots=True)
class Context:
    """The messages pi gives the model, in order, and what decided them."""

    messages: list[EntryInfo]  # a compaction entry stands for its summary message
    path: list[EntryInfo]  # root to leaf
    compaction: EntryInfo | None
    model: str | None

    def sent(self) -> list[EntryInfo]:
        """The messages a provider receives: pi drops replies that ended in error/aborted."""
        return [info for info in self.messages if not info.provider_drops]

    def tokens_by_line(self) -> dict[int, int]:
        """Estimated tokens of each message sent, by the line it comes from."""
        return {info.number: info.tokens for info in self.sent()}


def build_context(infos: Sequence[EntryInfo]) -> Context:
    """pi's buildSessionContext followed by convertToLlm, on EntryInfo."""
    path = active_path(infos)
    model: str | None = None
    for info in path:
        if info.model is not None and info.type in ("model_change", "message"):
            model = info.model
    at = latest_compaction(path)
    compaction = path[at] if at is not None else None
    emitted = context_entries(path)
    messages = [info for info in emitted if info.llm_role is not None]
    return Context(messages, path, compaction, model)


@dataclass(frozen=True, slots=True)
class ContextSize:
    """How many tokens the context holds now, and where the number comes from."""

    tokens: int
    source: str  # "usage", "usage+estimate" or "estimate"
    estimator: str
    estimated: int  # the estimate of every message sent, whatever the source
    usage_entry: str | None = None  # the assistant reply whose usage was used (or ignored)
    usage_tokens: int | None = None
    trailing_tokens: int = 0  # estimated tokens after that reply
    note: str | None = None  # why recorded usage was not used


def measure_context(context: Context, estimator: TokenEstimator) -> ContextSize:
    """pi's estimateContextTokens: the last recorded usage plus estimates for what follows.

    Recorded usage is used only when it still describes the context: not when a compaction
    came after the reply that recorded it, and not when a message before that reply was
    compressed after the reply was written (its marker records a file at least as long as
    the reply's line number, or no length at all): the provider counted it uncompressed.
    Then every message is estimated instead.
    """
    sent = context.sent()
    estimated = sum(info.tokens for info in sent)
    last = next(
        (i for i in range(len(sent) - 1, -1, -1) if sent[i].usage is not None),
        None,
    )
    if last is None:
        return ContextSize(estimated, "estimate", estimator.name, estimated)
    reply = sent[last]
    assert reply.usage is not None
    stale = None
    compaction = context.compaction
    if compaction is not None and reply.number < compaction.number:
        stale = "it was recorded before the compaction"
    else:
        later = sum(
            1
            for info in sent[:last]
            if info.compressed
            and (info.compressed_at is None or info.compressed_at >= reply.number)
        )
        if later:
            stale = (
                f"{later} earlier message(s) were compressed after it, and it counted them "
                "before they were"
            )
    if stale is not None:
        note = f"recorded usage of entry {reply.id} ({reply.usage:,} tokens) not used: {stale}"
        return ContextSize(
            estimated, "estimate", estimator.name, estimated, reply.id, reply.usage, note=note
        )
    trailing = sum(info.tokens for info in sent[last + 1 :])
    return ContextSize(
        reply.usage + trailing,
        "usage+estimate" if trailing else "usage",
        estimator.name,
        estimated,
        reply.id,
        reply.usage,
        trailing,
    )


@dataclass(frozen=True, slots=True)
class Budget:
    """The model's limits and the usable context, as the session's model gets them."""

    model: str | None
    limits_source: str  # "override", "builtin:<family>" or "fallback"
    context_window: int
    max_output: int
    usable: int


def budget_for(model: str | None, overrides: Any, reserve: int) -> Budget:
    limits, source = lookup_model(model or "", overrides)
    return Budget(
        model,
        source,
        limits.context_window,
        limits.max_output,
        usable_tokens(limits, reserve),
    )


def level_for(tokens: int, usable: int, warning_percent: int, critical_percent: int) -> str:
    """ok, warning (at or above warning_percent of usable) or critical (critical_percent)."""
    if usable <= 0:
        return "critical"
    share = tokens * 100 / usable
    if share >= critical_percent:
        return "critical"
    if share >= warning_percent:
        return "warning"
    return "ok"
