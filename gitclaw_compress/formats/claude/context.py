"""What Claude Code sends its model when it resumes a transcript (`Format.resume`), from the
views of `view.py`, as Claude Code 2.1.332 does it (read from its bundled code and
checked by resuming real and synthetic files offline, tests/test_claude_context.py).

Loading. Chain lines are `user`, `assistant`, `attachment` and `system` lines with a `uuid`; a
line read again with the same `uuid` replaces the first in place. `progress` lines leave the
chain: a line whose parent is one takes that line's parent. When the newest `compact_boundary`
lists its kept lines (`compactMetadata.preservedMessages.uuids`) or names a segment
(`preservedSegment`, walked from `tailUuid` back to `headUuid`), those lines are relinked after
the anchor (the summary line), the anchor's other children after the last of them, and every
other line before the boundary is dropped.

The leaf. The newest `last-prompt` line names one (`leafUuid`); the newest chain line in the
file wins when that leaf is one of its ancestors (or when there is no `last-prompt`). From
there the walk climbs to the nearest `user` or `assistant` line, follows `parentUuid` back to
the root (a missing parent is found by time), puts back the other lines of a split message
(same `message.id`) and their tool results, and appends the leaf's non-message descendants
(attachments, system lines).
`summary` lines (their `leafUuid` too) play no part.

The request. From the newest `compact_boundary` on the path: `user` lines merge into the user
message before them (tool results first); an `assistant` line joins the message with its
`message.id` even past tool results; attachments become system text. Models from before
mid-conversation system messages (Claude 3, Opus 4.0-4.7, Sonnet 4.0-4.6, Haiku 4.5) get that
text inside the user message; newer and unknown ones (an unknown model resumes with Claude
Code's default) get `role: "system"` messages, each right after a user message and before an
assistant one, else folded into the user message. An assistant line whose tool calls have no
result is left out, but for the last one sent (the CLI answers its calls itself).
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gitclaw_compress.formats.claude.view import (
    ANCHOR,
    EXPLICIT,
    HEAD,
    KEPT,
    LEAF,
    MESSAGE_ID,
    RESULTS,
    SIDECHAIN,
    STAMP,
    TAIL,
    TYPE,
    YES,
)
from gitclaw_compress.model import (
    COMPACTION,
    IMAGE,
    SYSTEM,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Conversation,
    EntryView,
    Message,
    Part,
)

CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system"})
PARENT_GAP_SECONDS = 5.0  # how far back Claude Code looks for a missing parent, by time
# Models that take no `role: "system"` message mid-conversation (Claude Code's own list).
NO_MID_SYSTEM = frozenset(
    {
        "claude-opus-4-0",
        "claude-opus-4-1",
        "claude-opus-4-5",
        "claude-opus-4-6",
        "claude-opus-4-7",
        "claude-sonnet-4-0",
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-haiku-4-5",
    }
)

# --------------------------------------------------------------------------------------
# The resume walk
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    view: EntryView
    parent: str | None
    order: int  # where the line first came in the file (a later copy keeps this place)

    @property
    def type(self) -> str:
        return self.view.links.get(TYPE, "")

    @property
    def sidechain(self) -> bool:
        return self.view.links.get(SIDECHAIN) == YES

    @property
    def stamp(self) -> str:
        return self.view.links.get(STAMP, "")

    @property
    def is_message(self) -> bool:
        return self.type in ("user", "assistant")

    @property
    def is_boundary(self) -> bool:
        return self.type == "system" and self.view.kind == COMPACTION


@dataclass(slots=True)
class _Loaded:
    nodes: dict[str, _Node] = field(default_factory=dict)
    newest: str | None = None  # the newest non-sidechain chain line
    prompt_leaf: str | None = None  # `leafUuid` of the newest last-prompt line
    explicit: bool = False
    cleared: bool = False


def _load(views: Sequence[EntryView]) -> _Loaded:
    loaded = _Loaded()
    progress: dict[str, str | None] = {}
    for view in views:
        kind = view.links.get(TYPE)
        if kind == "progress" and view.id is not None:
            parent = view.parent
            progress[view.id] = progress.get(parent) if parent in progress else parent
            continue
        if kind in CHAIN_TYPES and view.id is not None:
            parent = view.parent
            if parent is not None and parent in progress:
                parent = progress[parent]
            old = loaded.nodes.get(view.id)
            order = old.order if old is not None else len(loaded.nodes)
            loaded.nodes[view.id] = _Node(view, parent, order)
            if view.links.get(SIDECHAIN) != YES:
                loaded.newest, loaded.explicit, loaded.cleared = view.id, False, False
        elif kind == "last-prompt":
            leaf = view.links.get(LEAF) or None
            explicit = view.links.get(EXPLICIT) == YES
            if leaf is not None:
                same = loaded.explicit and leaf == loaded.prompt_leaf
                loaded.explicit = explicit or same
                loaded.prompt_leaf, loaded.cleared = leaf, False
            elif explicit:
                loaded.cleared, loaded.prompt_leaf, loaded.explicit = True, None, False
    return loaded


def _segment(nodes: Mapping[str, _Node], boundary: _Node) -> tuple[str, list[str]] | None:
    """(anchor, the kept uuids oldest first) of a boundary: its list of preserved lines if
    they are all there, else its segment if the tail walks back to the head."""
    links = boundary.view.links
    head, anchor, tail = links.get(HEAD), links.get(ANCHOR), links.get(TAIL)
    if KEPT in links and anchor is not None:  # the list wins over the segment's walk
        listed = links[KEPT].split()
        return (anchor, listed) if all(uuid in nodes for uuid in listed) else None
    if head is None or anchor is None or tail is None:
        return None
    walked: list[str] = []
    node = nodes.get(tail)
    while node is not None and node.view.id not in walked:
        uuid = str(node.view.id)
        walked.append(uuid)
        if uuid == head:
            return anchor, walked[::-1]
        node = nodes.get(node.parent) if node.parent else None
    return None


def _relink_preserved(nodes: dict[str, _Node]) -> list[str]:
    """Claude Code's relink of a kept segment; drops what the newest boundary leaves behind.
    Returns the segment's uuids, if one was relinked."""
    boundaries = [n for n in nodes.values() if n.is_boundary]
    preserved = [n for n in boundaries if HEAD in n.view.links or KEPT in n.view.links]
    if not preserved:
        return []
    newest, chosen = boundaries[-1], preserved[-1]
    found = _segment(nodes, chosen) if chosen is newest else None
    if chosen is newest and found is None:
        return []
    kept: list[str] = found[1] if found else []
    if found and kept:
        anchor = found[0]
        previous = anchor
        for uuid in kept:
            nodes[uuid].parent, previous = previous, uuid
        for uuid, node in nodes.items():
            if node.parent == anchor and uuid != kept[0]:
                node.parent = kept[-1]
    positions = {uuid: index for index, uuid in enumerate(nodes)}
    cut = positions[str(newest.view.id)]
    kept_set = set(kept)
    dropped = {uuid for uuid in nodes if positions[uuid] < cut and uuid not in kept_set}
    for uuid in dropped:
        del nodes[uuid]
    if kept and dropped:
        for node in nodes.values():
            if node.is_message and node.parent in dropped:
                node.parent = kept[-1]
    return kept


def _nearest_message(nodes: Mapping[str, _Node], start: str | None) -> _Node | None:
    seen: set[str] = set()
    node = nodes.get(start) if start else None
    while node is not None and str(node.view.id) not in seen:
        seen.add(str(node.view.id))
        if node.is_message:
            return node
        node = nodes.get(node.parent) if node.parent else None
    return None


def _leaf(loaded: _Loaded, preserved_tail: str | None) -> _Node | None:
    nodes = loaded.nodes
    if loaded.cleared:
        return None
    leaf = loaded.prompt_leaf
    named = leaf is not None and leaf in nodes and not nodes[leaf].sidechain and loaded.explicit
    if preserved_tail is None or named:
        start = leaf if leaf in nodes else None
        newest = loaded.newest
        if start and not loaded.explicit and newest in nodes and newest != start:
            seen: set[str] = set()
            node: _Node | None = nodes[str(newest)]
            while node is not None and str(node.view.id) not in seen:
                if node.view.id == start:
                    start = newest
                    break
                seen.add(str(node.view.id))
                node = nodes.get(node.parent) if node.parent else None
        if preserved_tail is None and start is None:
            start = newest
        found = _nearest_message(nodes, start)
        if found is not None:
            return found if not found.sidechain else None
    parents = {n.parent for n in nodes.values() if n.parent is not None}
    message_parents = {n.parent for n in nodes.values() if n.parent is not None and n.is_message}
    leaves: list[_Node] = []
    for node in nodes.values():
        if node.view.id in parents:
            continue
        found = _nearest_message(nodes, node.view.id)
        if found is not None and found.view.id not in message_parents:
            leaves.append(found)
    if len(leaves) > 1:
        start = leaf if leaf in {n.view.id for n in leaves} else loaded.newest
        found = _nearest_message(nodes, start)
        if found is not None:
            leaves = [found]
    pool = leaves if leaves else list(nodes.values())
    candidates = [n for n in pool if not n.sidechain]
    return max(candidates, key=lambda n: n.stamp, default=None)


def _walk(nodes: Mapping[str, _Node], leaf: _Node) -> list[_Node]:
    chain: list[_Node] = []
    seen: set[str] = set()
    node: _Node | None = leaf
    while node is not None and str(node.view.id) not in seen:
        seen.add(str(node.view.id))
        chain.append(node)
        if not node.parent:
            break
        parent = nodes.get(node.parent)
        if parent is None or str(parent.view.id) in seen:
            parent = _by_time(nodes, node, seen)
        node = parent
    chain.reverse()
    chain = _recover_parallel(nodes, chain, seen)
    # The leaf's attachments and system lines, oldest first.
    children: dict[str, list[_Node]] = {}
    for other in nodes.values():
        if other.parent and not other.is_message:
            children.setdefault(other.parent, []).append(other)
    tail: list[_Node] = []
    queue = [str(leaf.view.id)]
    while queue:
        for child in children.get(queue.pop(0), []):
            if str(child.view.id) not in seen:
                seen.add(str(child.view.id))
                tail.append(child)
                queue.append(str(child.view.id))
    tail.sort(key=lambda n: n.stamp)
    return chain + tail


def _instant(stamp: str) -> float | None:
    try:
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _by_time(nodes: Mapping[str, _Node], child: _Node, seen: set[str]) -> _Node | None:
    """A parent that is missing (a line that does not parse): Claude Code takes the line of
    the same chain written closest before the child, at most `PARENT_GAP_SECONDS` before."""
    when = _instant(child.stamp)
    if when is None:
        return None
    best: _Node | None = None
    best_gap = float("inf")
    for other in nodes.values():
        if str(other.view.id) in seen or other.sidechain != child.sidechain:
            continue
        other_when = _instant(other.stamp)
        if other_when is None:
            continue
        gap = when - other_when
        if 0 <= gap <= PARENT_GAP_SECONDS and gap < best_gap:
            best, best_gap = other, gap
    return best


def _recover_parallel(
    nodes: Mapping[str, _Node], chain: list[_Node], seen: set[str]
) -> list[_Node]:
    """The lines of a split assistant message off the walked path, and their tool results,
    go back after the message's last line on the path."""
    last_of: dict[str, _Node] = {}
    for node in chain:
        message_id = node.view.links.get(MESSAGE_ID)
        if node.type == "assistant" and message_id:
            last_of[message_id] = node
    if not last_of:
        return chain
    by_message: dict[str, list[_Node]] = {}
    results_of: dict[str, list[_Node]] = {}
    for node in nodes.values():
        message_id = node.view.links.get(MESSAGE_ID)
        if node.type == "assistant" and message_id:
            by_message.setdefault(message_id, []).append(node)
        elif node.type == "user" and node.parent and node.view.links.get(RESULTS):
            results_of.setdefault(node.parent, []).append(node)
    inserted: dict[int, list[_Node]] = {}
    done: set[str] = set()
    for node in chain:
        message_id = node.view.links.get(MESSAGE_ID)
        if node.type != "assistant" or not message_id or message_id in done:
            continue
        done.add(message_id)
        group = by_message.get(message_id, [node])
        siblings = [n for n in group if str(n.view.id) not in seen]
        results = [
            result
            for member in group
            for result in results_of.get(str(member.view.id), [])
            if str(result.view.id) not in seen
        ]
        if not siblings and not results:
            continue
        siblings.sort(key=lambda n: n.stamp)
        results.sort(key=lambda n: n.stamp)
        for extra in siblings + results:
            seen.add(str(extra.view.id))
        inserted[id(last_of[message_id])] = siblings + results
    out: list[_Node] = []
    for node in chain:
        out.append(node)
        out.extend(inserted.get(id(node), []))
    return out


def mid_conversation_system(model: str | None) -> bool:
    """Whether Claude Code sends attachments as `role: "system"` messages to this model."""
    if model is None:
        return True
    name = re.sub(r"-\d{8}$", "", model.removeprefix("anthropic/"))
    return not (name.startswith("claude-3-") or "claude-3-" in name or name in NO_MID_SYSTEM)


@dataclass(slots=True)
class _Built:
    """A message of the request being built: its role in the API and its neutral message."""

    api_role: str  # "user", "assistant" or "system"
    message: Message
    message_id: str | None = None
    has_results: bool = False


def _merge(target: Message, source: Message, *, results_first: bool) -> None:
    parts = target.parts + source.parts
    target.parts = _results_first(parts) if results_first else parts
    target.lines = (*target.source_lines(), *source.source_lines())
    if source.usage is not None:
        target.usage = source.usage
    if source.model is not None:
        target.model = source.model


def _results_first(parts: list[Part]) -> list[Part]:
    """Tool results (each with the images that follow it) before every other part."""
    results: list[Part] = []
    rest: list[Part] = []
    in_result = False
    for part in parts:
        if part.kind == TOOL_RESULT:
            in_result = True
            results.append(part)
        elif part.kind == IMAGE and in_result:
            results.append(part)
        else:
            in_result = False
            rest.append(part)
    return results + rest


def _copy(message: Message) -> Message:
    return Message(
        message.role,
        list(message.parts),
        message.line,
        message.entry_id,
        message.usage,
        message.model,
        message.lines,
    )


def _hoist_attachments(chain: Sequence[EntryView]) -> list[EntryView]:
    """Claude Code moves each attachment up to just after the nearest assistant line or tool
    result before it: the attachments of a prompt go before the prompt."""
    out: list[EntryView] = []
    waiting: list[EntryView] = []  # attachments seen walking back, newest first
    for view in reversed(chain):
        kind = view.links.get(TYPE)
        if kind == "attachment":
            waiting.append(view)
            continue
        stop = kind == "assistant" or (kind == "user" and view.links.get(RESULTS) == YES)
        if stop and waiting:
            out.extend(waiting)
            waiting.clear()
        out.append(view)
    out.extend(waiting)
    out.reverse()
    return out


class _Request:
    """The request being built, line by line: user lines merge into the user message before
    them (tool results first), an assistant line joins the message with its `message.id`
    (even past tool results), attachment text waits for the next assistant message."""

    def __init__(self, system_role: bool) -> None:
        self.system_role = system_role  # attachment text as `role: "system"` messages
        self.built: list[_Built] = []
        self.pending: list[Message] = []  # attachment text waiting for the next assistant

    def add_attachment(self, messages: Sequence[Message]) -> None:
        built = self.built
        if self.system_role:
            self.pending.extend(messages)
        elif built and built[-1].api_role == "user":
            for message in messages:
                _merge(built[-1].message, message, results_first=True)
        else:  # each of its messages on its own, the next lines merge into the last
            for message in messages:
                built.append(_Built("user", dataclasses.replace(_copy(message), role=USER)))

    def add_assistant(self, message: Message, message_id: str | None) -> None:
        for earlier in reversed(self.built):
            if earlier.api_role == "assistant":
                if message_id and earlier.message_id == message_id:
                    _merge(earlier.message, message, results_first=False)
                    return
                continue
            if earlier.api_role == "system" or earlier.has_results:
                continue
            break
        self._flush()
        self.built.append(_Built("assistant", _copy(message), message_id))

    def add_user(self, message: Message, has_results: bool) -> None:
        last = self.built[-1] if self.built else None
        if last is not None and last.api_role == "user":
            _merge(last.message, message, results_first=True)
            last.has_results = last.has_results or has_results
            if has_results:
                last.message.role = TOOL
        else:
            copy = _copy(message)
            if copy.role == SYSTEM:  # attachment text sent as a user message
                copy.role = USER
            self.built.append(_Built("user", copy, has_results=has_results))

    def _flush(self) -> None:
        """The attachment text waiting, as one message: into a system message just before,
        as a system message after a user one, else as a user message."""
        pending, built = self.pending, self.built
        if not pending:
            return
        first = _copy(pending[0])
        for more in pending[1:]:
            _merge(first, more, results_first=False)
        pending.clear()
        last = built[-1] if built else None
        if last is not None and last.api_role == "system":
            _merge(last.message, first, results_first=False)
        elif last is not None and last.api_role == "user":
            built.append(_Built("system", first))
        else:
            first.role = USER
            built.append(_Built("user", first))

    def messages(self) -> list[Message]:
        self._flush()
        built = _place_system(self.built) if self.system_role else self.built
        return [b.message for b in built]


def build_request(chain: Sequence[EntryView], model: str | None) -> list[Message]:
    """The messages of the request, from the lines of the resumed path."""
    request = _Request(mid_conversation_system(model))
    for view in _hoist_attachments(chain):
        kind = view.links.get(TYPE)
        if kind == "attachment":
            request.add_attachment(view.messages)
            continue
        for message in view.messages:
            if kind == "assistant":
                request.add_assistant(message, view.links.get(MESSAGE_ID))
            else:
                request.add_user(message, has_results=message.role == TOOL)
    return request.messages()


def _place_system(built: list[_Built]) -> list[_Built]:
    """A system message stays only after a user message and before an assistant one (or at
    the end); elsewhere its text joins the user messages around it."""
    out: list[_Built] = []
    for index, item in enumerate(built):
        if item.api_role != "system":
            if item.api_role == "user" and out and out[-1].api_role == "user":
                _merge(out[-1].message, item.message, results_first=True)
                out[-1].has_results = out[-1].has_results or item.has_results
                if item.has_results:
                    out[-1].message.role = TOOL
                continue
            out.append(item)
            continue
        before = out[-1] if out else None
        after = built[index + 1] if index + 1 < len(built) else None
        if before is not None and before.api_role == "system":
            _merge(before.message, item.message, results_first=False)
            continue
        if (
            before is not None
            and before.api_role == "user"
            and (after is None or after.api_role in ("assistant", "system"))
        ):
            out.append(item)
            continue
        if before is not None and before.api_role == "user":
            _merge(before.message, item.message, results_first=False)
        else:
            item.api_role, item.message.role = "user", USER
            out.append(item)
    return out


def _without_unanswered_calls(views: list[EntryView]) -> list[EntryView]:
    """Claude Code leaves out an assistant line whose tool calls have no result (a session
    stopped during a tool), except at the end: there 2.1.332 sends the calls, and answers them
    with results of its own ("[Tool call interrupted: ...]", not in the file)."""
    answered = {
        part.call_id
        for view in views
        for message in view.messages
        for part in message.parts
        if part.kind == TOOL_RESULT
    }

    def unanswered(view: EntryView) -> bool:
        calls = [p.call_id for m in view.messages for p in m.parts if p.kind == TOOL_CALL]
        return view.links.get(TYPE) == "assistant" and bool(calls) and answered.isdisjoint(calls)

    last = next((i for i in range(len(views) - 1, -1, -1) if views[i].messages), None)
    return [v for i, v in enumerate(views) if i == last or not unanswered(v)]


def _without_usage(view: EntryView) -> EntryView:
    messages = [dataclasses.replace(m, usage=None) for m in view.messages]
    return dataclasses.replace(view, messages=messages)


def _as_main_chain(view: EntryView) -> EntryView:
    links = {key: value for key, value in view.links.items() if key != SIDECHAIN}
    return dataclasses.replace(view, links=links)


def resume(views: Sequence[EntryView]) -> Conversation:
    loaded = _load(views)
    if loaded.nodes and all(node.sidechain for node in loaded.nodes.values()):
        # A subagent's own transcript: `claude --resume` does not open it, but this chain is
        # what the subagent sent its model, and so what its context, status and prune are about.
        loaded = _load([_as_main_chain(view) for view in views])
    kept = _relink_preserved(loaded.nodes)
    leaf = _leaf(loaded, kept[-1] if kept else None)
    if leaf is None:
        return Conversation([], [])
    path = _walk(loaded.nodes, leaf)
    start = max((i for i, n in enumerate(path) if n.is_boundary), default=None)
    sent = path[start:] if start is not None else path
    model = next((n.view.model for n in reversed(path) if n.view.model), None)
    # Claude Code zeroes the usage of a kept segment: it counted the context before the summary.
    kept_set = set(kept)
    views_sent = [_without_usage(n.view) if n.view.id in kept_set else n.view for n in sent]
    messages = build_request(_without_unanswered_calls(views_sent), model)
    compaction = path[start].view.number if start is not None else None
    return Conversation(messages, [n.view.number for n in path], compaction, model)
