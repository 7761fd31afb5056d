"""What Claude Code sends its model when it resumes a transcript: the neutral view of each line
and the resume walk, as Claude Code 2.1.197 does it (read from its bundled code and checked by
resuming real and synthetic files offline, tests/test_claude_context.py).

Loading. Chain lines are `user`, `assistant`, `attachment` and `system` lines with a `uuid`; a
line read again with the same `uuid` replaces the first in place. `progress` lines leave the
chain: a line whose parent is one takes that line's parent. A `compact_boundary` whose
`compactMetadata.preservedSegment` walks from `tailUuid` back to `headUuid` relinks the segment
after `anchorUuid` (the summary line), relinks the summary's other children after `tailUuid`,
and drops every other line before the newest boundary.

The leaf. The newest `last-prompt` line names one (`leafUuid`); the newest chain line in the
file wins when that leaf is one of its ancestors (or when there is no `last-prompt`). From
there the walk climbs to the nearest `user` or `assistant` line, follows `parentUuid` back to
the root, puts back the other lines of a split message (same `message.id`) and their tool
results, and appends the leaf's non-message descendants (attachments, system lines).
`summary` lines (their `leafUuid` too) play no part.

The request. From the newest `compact_boundary` on the path: `user` lines merge into the user
message before them (tool results first); an `assistant` line joins the message with its
`message.id` even past tool results; attachments become system text. Models from before
mid-conversation system messages (Claude 3, Opus 4.0-4.7, Sonnet 4.0-4.6, Haiku 4.5) get that
text inside the user message; newer and unknown ones (an unknown model resumes with Claude
Code's default) get `role: "system"` messages, each right after a user message and before an
assistant one, else folded into the user message.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    IMAGE,
    MESSAGE,
    META,
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
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
SYNTHETIC_MODEL = "<synthetic>"  # Claude Code's own error replies: never sent
# Hooks whose output reaches the model (others only show in the transcript).
HOOKS_SEEN = frozenset({"SessionStart", "UserPromptSubmit", "UserPromptExpansion"})
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
TODO_REMINDER = (
    "The TodoWrite tool hasn't been used recently. If you're working on tasks that would "
    "benefit from tracking progress, consider using the TodoWrite tool to track progress. Also "
    "consider cleaning up the todo list if has become stale and no longer matches what you are "
    "working on. Only use it if it's relevant to the current work. This is just a gentle "
    "reminder - ignore if not applicable.\n"
)
EDITED_FILE = (
    "Note: {filename} was modified, either by the user or by a linter. This change was "
    "intentional, so make sure to take it into account as you proceed (ie. don't revert it "
    "unless the user asks you to). Don't tell the user this, since they are already aware. "
    "Here are the relevant changes (shown with line numbers):\n"
)
TASK_REMINDER = (
    "The task tools haven't been used recently. If you're working on tasks that would "
    "benefit from tracking progress, consider using TaskCreate to add new tasks and TaskUpdate "
    "to update task status (set to in_progress when starting, completed when done). Also "
    "consider cleaning up the task list if it has become stale. Only use these if relevant to "
    "the current work. This is just a gentle reminder - ignore if not applicable.\n"
)

# Keys of EntryView.links (private to this format).
TYPE, SIDECHAIN, STAMP, MESSAGE_ID = "type", "sidechain", "timestamp", "message_id"
SUBTYPE, HEAD, ANCHOR, TAIL = "subtype", "head", "anchor", "tail"
LEAF, EXPLICIT, RESULTS = "leaf", "explicit", "tool_results"
KEPT = "kept"  # a boundary's preservedMessages.uuids, space-separated
YES = "1"


def _flag(value: object) -> str:
    return YES if value is True else ""


def _compact(value: object) -> str:
    return orjson.dumps(value).decode()


def _image(block: Mapping[str, Any]) -> Part:
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    return Part(
        IMAGE,
        media_type=str(source.get("media_type", "image")),
        size=stubs.image_size(source.get("data")),
    )


def _result_text(content: object) -> tuple[str, list[Part]]:
    if isinstance(content, str):
        return content, []
    texts, images = [], []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image":
            images.append(_image(block))
    return "\n".join(texts), images


def usage_tokens(usage: object) -> int | None:
    """The context Claude Code counts from a reply's usage: input, cache writes, cache reads
    and output tokens together (what its context meter and auto-compact threshold use)."""
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counts = [usage.get(key) for key in (*keys, "output_tokens")]
    numbers = [count for count in counts if isinstance(count, int)]
    return sum(numbers) if numbers else None


def _assistant_parts(content: object) -> list[Part]:
    if isinstance(content, str):
        return [Part(TEXT, content)] if content else []
    parts: list[Part] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(Part(TEXT, str(block.get("text", ""))))
        elif kind == "thinking":
            signature = block.get("signature")
            signed = isinstance(signature, str) and signature != ""
            parts.append(Part(THINKING, str(block.get("thinking", "")), sealed=signed))
        elif kind == "redacted_thinking":
            parts.append(Part(THINKING, "", sealed=True))
        elif kind == "tool_use":
            parts.append(
                Part(
                    TOOL_CALL,
                    _compact(block.get("input")),
                    name=str(block.get("name")),
                    call_id=str(block.get("id")),
                )
            )
    return parts


def _user_messages(
    number: int, entry: Entry, content: object, names: Mapping[str, str]
) -> list[Message]:
    """A user line: one message (TOOL when it holds tool results, which the API sends first)."""
    uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
    if entry.get("isCompactSummary") is True:
        text, _ = _result_text(content)
        return [Message(SUMMARY, [Part(TEXT, text)], number, uuid)]
    if isinstance(content, str):
        return [Message(USER, [Part(TEXT, content)], number, uuid)]
    results: list[Part] = []
    rest: list[Part] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            call_id = str(block.get("tool_use_id"))
            text, images = _result_text(block.get("content"))
            error = block.get("is_error") is True
            results.append(Part(TOOL_RESULT, text, names.get(call_id), call_id, error=error))
            results.extend(images)
        elif kind == "text":
            rest.append(Part(TEXT, str(block.get("text", ""))))
        elif kind == "image":
            rest.append(_image(block))
        elif kind == "document":
            rest.append(Part(TEXT, _compact(block.get("source"))))
    if not results and not rest:
        return []
    return [Message(TOOL if results else USER, results + rest, number, uuid)]


def _items(value: object, template: str) -> str:
    """A reminder's list: "1. [status] subject" lines."""
    if not isinstance(value, list):
        return ""
    return "\n".join(
        template.format(n=n, **item) for n, item in enumerate(value, 1) if isinstance(item, dict)
    )


def attachment_messages(attachment: object) -> list[list[Part]]:
    """The messages an attachment line gives the model, each as its parts (none for most
    hooks), for the kinds seen in real files; an unknown kind counts by its `content` or
    `prompt` text. The wording follows Claude Code's where it adds any."""
    if not isinstance(attachment, dict):
        return []
    kind = attachment.get("type")
    content = attachment.get("content")
    if kind == "file" and isinstance(content, dict):
        arguments = _compact({"file_path": attachment.get("filename")})
        call = f"Called the Read tool with the following input: {arguments}"
        file = content.get("file")
        file = file if isinstance(file, dict) else {}
        if content.get("type") == "image":
            return [[Part(TEXT, call)], [_image({"source": file})]]
        body = file.get("content")
        first = file.get("startLine")
        first = first if isinstance(first, int) else 1
        result = (
            "\n".join(f"{first + n}\t{line}" for n, line in enumerate(body.split("\n")))
            if isinstance(body, str)
            else _compact(file)
        )
        return [[Part(TEXT, call)], [Part(TEXT, "Result of calling the Read tool:\n" + result)]]
    text = attachment_text(attachment)
    return [[Part(TEXT, text)]] if text else []


def attachment_text(attachment: dict[str, Any]) -> str:
    """The text of a one-message attachment ("" for none)."""
    kind = attachment.get("type")
    content = attachment.get("content")
    if kind == "skill_listing" and isinstance(content, str):
        return "The following skills are available for use with the Skill tool:\n\n" + content
    if kind == "task_reminder":
        tasks = _items(content, "#{id}. [{status}] {subject}")
        return TASK_REMINDER + (f"\n\nHere are the existing tasks:\n\n{tasks}" if tasks else "")
    if kind == "todo_reminder":
        todos = _items(content, "{n}. [{status}] {content}")
        extra = f"\n\nHere are the existing contents of your todo list:\n\n[{todos}]"
        return TODO_REMINDER + (extra if todos else "")
    if kind == "edited_text_file":
        return EDITED_FILE.format(filename=attachment.get("filename")) + str(
            attachment.get("snippet", "")
        )
    if kind == "queued_command":
        prompt = attachment.get("prompt")
        return "The user sent a new message while you were working:\n" + (
            prompt if isinstance(prompt, str) else _compact(prompt)
        )
    if isinstance(kind, str) and kind.startswith("hook_"):
        if kind != "hook_success" or attachment.get("hookEvent") not in HOOKS_SEEN:
            return ""
        if not content:
            return ""
        return f"{attachment.get('hookName')} hook success: {content}"
    for key in ("content", "prompt"):
        value = attachment.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def view_entry(
    number: int, entry: Entry, *, turn_start: bool, names: Mapping[str, str]
) -> EntryView:
    """One line in neutral terms. `names`: tool names by call id, from the lines before it."""
    kind = entry.get("type")
    uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
    parent = entry.get("parentUuid") if isinstance(entry.get("parentUuid"), str) else None
    links: dict[str, str] = {TYPE: str(kind), SIDECHAIN: _flag(entry.get("isSidechain"))}
    stamp = entry.get("timestamp")
    if isinstance(stamp, str):
        links[STAMP] = stamp
    messages: list[Message] = []
    model: str | None = None
    view_kind = META
    message = entry.get("message") if isinstance(entry.get("message"), dict) else None
    if kind == "user" and message is not None:
        messages = _user_messages(number, entry, message.get("content"), names)
        if any(m.role == TOOL for m in messages):
            links[RESULTS] = YES
    elif kind == "assistant" and message is not None:
        raw_model = message.get("model")
        model = raw_model if isinstance(raw_model, str) and raw_model != SYNTHETIC_MODEL else None
        if isinstance(message.get("id"), str):
            links[MESSAGE_ID] = message["id"]
        if not (entry.get("isApiErrorMessage") is True and raw_model == SYNTHETIC_MODEL):
            parts = _assistant_parts(message.get("content"))
            usage = usage_tokens(message.get("usage"))
            messages = [Message(ASSISTANT, parts, number, uuid, usage, model)]
    elif kind == "attachment":
        messages = [
            Message(SYSTEM, parts, number, uuid)
            for parts in attachment_messages(entry.get("attachment"))
        ]
    elif kind == "system":
        links[SUBTYPE] = str(entry.get("subtype"))
        if entry.get("subtype") == "compact_boundary":
            view_kind = COMPACTION
            metadata = entry.get("compactMetadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            listed = metadata.get("preservedMessages")
            if isinstance(listed, dict) and isinstance(listed.get("uuids"), list):
                links[KEPT] = " ".join(str(uuid) for uuid in listed["uuids"])
                if isinstance(listed.get("anchorUuid"), str):
                    links[ANCHOR] = listed["anchorUuid"]
            segment = metadata.get("preservedSegment")
            if isinstance(segment, dict):
                for key, name in ((HEAD, "headUuid"), (ANCHOR, "anchorUuid"), (TAIL, "tailUuid")):
                    if isinstance(segment.get(name), str):
                        links[key] = segment[name]
        elif entry.get("subtype") == "local_command" and isinstance(entry.get("content"), str):
            messages = [Message(USER, [Part(TEXT, entry["content"])], number, uuid)]
    elif kind == "last-prompt":
        leaf = entry.get("leafUuid")
        links[LEAF] = leaf if isinstance(leaf, str) else ""
        links[EXPLICIT] = _flag(entry.get("explicit"))
    if messages:
        view_kind = MESSAGE
    return EntryView(number, uuid, parent, view_kind, messages, model, turn_start, links)


def tool_names(entry: Entry) -> Iterator[tuple[str, str]]:
    """(call id, tool name) of each tool call on an assistant line."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                yield call_id, name


def parsed(lines: Iterable[RawLine]) -> Iterator[tuple[int, Entry, bool]]:
    """Each line's record, and whether it was glued to another. Claude Code's JSONL reader
    also reads a line that holds records glued together (`…}{"type":"summary",…}`, seen in
    real files): such a line gives its first chain record (or its first record), the one that
    matters for the resume. The core never parses it, so it starts no turn."""
    for line in lines:
        entry = parse_entry(line.data)
        if entry is not None:
            yield line.number, entry, False
        elif (glued := _glued_record(line.data)) is not None:
            yield line.number, glued, True


def _glued_record(data: bytes) -> Entry | None:
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    records: list[Entry] = []
    position = 0
    text = text.strip()
    while position < len(text):
        try:
            value, position = decoder.raw_decode(text, position)
        except ValueError:
            return None
        if isinstance(value, dict):
            records.append(value)
        while position < len(text) and text[position].isspace():
            position += 1
    chain = [record for record in records if isinstance(record.get("uuid"), str)]
    found = chain or records
    return found[0] if found else None


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


def build_request(chain: Sequence[EntryView], model: str | None) -> list[Message]:
    """The messages of the request, from the lines of the resumed path."""
    system_role = mid_conversation_system(model)
    built: list[_Built] = []
    pending: list[Message] = []  # attachment text waiting for the next assistant message

    def flush() -> None:
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

    def add_user(message: Message, has_results: bool) -> None:
        last = built[-1] if built else None
        if last is not None and last.api_role == "user":
            _merge(last.message, message, results_first=True)
            last.has_results = last.has_results or has_results
            if has_results:
                last.message.role = TOOL
        else:
            copy = _copy(message)
            if copy.role == SYSTEM:  # attachment text sent as a user message
                copy.role = USER
            built.append(_Built("user", copy, has_results=has_results))

    for view in _hoist_attachments(chain):
        kind = view.links.get(TYPE)
        if kind == "attachment":
            if system_role:
                pending.extend(view.messages)
            elif built and built[-1].api_role == "user":
                for message in view.messages:
                    _merge(built[-1].message, message, results_first=True)
            else:  # each of its messages on its own, the next lines merge into the last
                for message in view.messages:
                    built.append(_Built("user", dataclasses.replace(_copy(message), role=USER)))
            continue
        for message in view.messages:
            if kind == "assistant":
                message_id = view.links.get(MESSAGE_ID)
                joined = False
                for earlier in reversed(built):
                    if earlier.api_role == "assistant":
                        if message_id and earlier.message_id == message_id:
                            _merge(earlier.message, message, results_first=False)
                            joined = True
                            break
                        continue
                    if earlier.api_role == "system" or earlier.has_results:
                        continue
                    break
                if not joined:
                    flush()
                    built.append(_Built("assistant", _copy(message), message_id))
            else:
                add_user(message, has_results=message.role == TOOL)
    flush()
    if system_role:
        built = _place_system(built)
    return [b.message for b in built]


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


def _without_usage(view: EntryView) -> EntryView:
    messages = [dataclasses.replace(m, usage=None) for m in view.messages]
    return dataclasses.replace(view, messages=messages)


def resume(views: Sequence[EntryView]) -> Conversation:
    loaded = _load(views)
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
    messages = build_request(views_sent, model)
    compaction = path[start].view.number if start is not None else None
    return Conversation(messages, [n.view.number for n in path], compaction, model)
