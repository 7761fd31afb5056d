"""OpenAI Codex CLI rollouts: every field name and resume rule of Codex.

A rollout is JSONL under `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`. Every
line is `{"timestamp","type","payload"}`; line 1 is the `session_meta` that resume needs. The
model sees only the `response_item` lines (after the newest `compacted` replacement history);
`event_msg` lines drive the UI and segment turns; every `turn_context` repeats the settings and
instructions of its turn, and resume reads only the newest one that survives rollbacks.

What is never touched: `session_meta`, `compacted`, reasoning items (their `encrypted_content`
must match what OpenAI issued, or the session is unusable), `call_id`s, the `type` and
`turn_id` of every `event_msg`, message text, and the newest `turn_context`. A turn starts at
`event_msg` `user_message`; the `task_started`, context messages and `turn_context` that
Codex writes just before it belong to that turn, so the kept turns keep them byte for byte.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.base import TITLES, Edit, FormatBase, Scope
from gitclaw_compress.formats.codex import summary as codex_summary
from gitclaw_compress.formats.codex.context import rebuild
from gitclaw_compress.formats.codex.view import (
    OUTPUT_TYPES,
    data_url_image,
    is_data_url,
    patch_files,
    payload_of,
    view_line,
    view_lines,
)
from gitclaw_compress.formats.shared.home import AgentHome
from gitclaw_compress.formats.shared.hooks import LifecycleHook
from gitclaw_compress.formats.shared.rules import SMALL_ARGUMENT_BYTES, superseded_edits
from gitclaw_compress.formats.shared.rules import json_size as _size
from gitclaw_compress.formats.shared.rules import json_size_if_present as _sized
from gitclaw_compress.model import Conversation, EntryView, SummaryRequest

if TYPE_CHECKING:
    from gitclaw_compress.settings import CompressSettings

LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# event_msg types whose `type` and `turn_id` Codex uses to segment turns.
SEGMENT_EVENTS = frozenset(
    {"user_message", "task_started", "task_complete", "turn_aborted", "thread_rolled_back"}
)
# UI copies of a command's output; the model sees the function_call_output instead.
EXEC_OUTPUT_FIELDS = ("stdout", "stderr", "aggregated_output", "formatted_output")
PATCH_EVENTS = frozenset({"patch_apply_begin", "patch_apply_end"})
# What `edits` may change, besides messages with images and turn_context (see `observe`).
BULK_ITEMS = frozenset({*OUTPUT_TYPES, "function_call", "custom_tool_call"})
# An MCP tool's result as the UI shows it (the model sees the function_call_output).
MCP_END = "mcp_tool_call_end"
# UI copies of what the model sees as a reply or a reasoning item: the event and its key.
# Codex rebuilds the model's input from response items alone.
REPLY_COPIES = {
    "task_complete": "last_agent_message",
    "agent_reasoning": "text",
    "agent_reasoning_raw_content": "text",
}
# item_completed: the UI's copy of an item (a plan is the reply's <proposed_plan>); a
# person's message is never among them.
COPIED_ITEMS = frozenset({"Plan", "AgentMessage", "Reasoning"})
# Before the kept turns every other long string of an event goes too (Codex's record for its
# UI, which it never sends), but for the keys that name or link the event, a person's
# message and the reply's `agent_message` (both sealed).
EVENT_KEYS_KEPT = frozenset({"type", "role", "call_id", "name", "id", "turn_id", "thread_id"})
EVENTS_KEPT = frozenset({"user_message", "agent_message"})
ARGUMENT_KEYS_KEPT = frozenset({"path", "file_path", "workdir", "timeout_ms", "justification"})
# UI-only strings above this size are stubbed: an older event's, and with stub_ui_copies
# the UI copies in every turn.
UI_COPY_MIN_BYTES = 256
PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)


def event_type(entry: Entry) -> str | None:
    """The payload type of an `event_msg` or `response_item` line."""
    kind = payload_of(entry).get("type")
    return kind if isinstance(kind, str) else None


PATCH_NAMES_SHOWN = 3  # files a patch's descriptor names before "and N more"
PATCH_NAMES_CHARS = 160  # and at most this many characters of them


def patch_descriptor(name: str, patch: str) -> str | None:
    """`apply_patch 'a.py', 'b.py', 'c.py' and 4 more`: the files a patch changes (as the
    facts list them), the first few by name; None for a text that is no patch."""
    paths = [path for path, _ in patch_files(patch)]
    if not paths:
        return None
    shown: list[str] = []
    for path in paths[:PATCH_NAMES_SHOWN]:
        quoted = repr(stubs.cut(path, 80))
        if shown and sum(len(item) + 2 for item in shown) + len(quoted) > PATCH_NAMES_CHARS:
            break
        shown.append(quoted)
    more = len(paths) - len(shown)
    return f"{name} {', '.join(shown)}" + (f" and {more} more" if more else "")


def call_descriptor(name: str, arguments: object) -> str:
    """A tool call in a few words, for the stub of its output: "shell_command 'ls'"."""
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = orjson.loads(text)
        except orjson.JSONDecodeError:  # apply_patch input is a raw patch
            return patch_descriptor(name, text) or name
    if isinstance(arguments, dict):
        patch = arguments.get("input")  # apply_patch as a function tool: {"input": patch}
        if isinstance(patch, str) and (described := patch_descriptor(name, patch)):
            return described
        for key in ("path", "file_path", "command", "cmd", "query", "url", "pattern"):
            value = arguments.get(key)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                value = value[-1]
            if isinstance(value, str) and value:
                first = value.strip().split("\n", 1)[0]
                return f"{name} {stubs.cut(first, 80)!r}"
    return name


def check_header(line: RawLine | None, source: str) -> None:
    """Line 1 must be the `session_meta` line; Codex cannot resume a rollout without it."""
    entry = parse_entry(line.data) if line is not None else None
    if entry is None or entry.get("type") != "session_meta":
        raise GitClawError(
            f"{source}:1: not a Codex rollout header (expected a JSON object with "
            '"type":"session_meta"); the file was not changed'
        )


def session_id(first: Entry) -> str | None:
    """The id of a rollout's `session_meta` line, when `show` can find the rollout by it
    (a uuid): its stubs then say `show SESSION_ID L42`, not the rollout's path of about 100
    characters."""
    if first.get("type") != "session_meta":
        return None
    found = payload_of(first).get("id")
    return found if isinstance(found, str) and stubs.findable_anywhere(found) else None


# Deep, on a line Codex never sends again: what stays (ids, names, roles, the turn).
CODEX_KEPT_ON_SUPERSEDED = frozenset({"call_id", "id", "name", "role", "turn_id", "status"})


class CodexTurns:
    """Where a rollout's turns start and which turn_context lines resume may read: what
    keeps a kept turn whole (the lines Codex writes just before its user_message) and the
    live turn_context untouched."""

    def __init__(self) -> None:
        self.turn_blocks: list[int] = []  # for each turn, the first line Codex wrote for it
        self.turn_lines: list[int] = []  # for each turn, its user_message line
        self._block_start: int | None = None  # task_started seen since the last user_message
        self.turn_contexts: list[tuple[int, int]] = []  # (line, turns started before it)
        self.rolled_back_turns = 0
        self._live_contexts: frozenset[int] | None = None
        self.newest_answer: int | None = None  # the newest task_complete line

    def learn(self, number: int, line_type: object, payload: dict[str, Any], kind: object) -> None:
        if line_type == "event_msg":
            if kind == "task_started" and self._block_start is None:
                self._block_start = number
            elif kind == "user_message":
                start = self._block_start if self._block_start is not None else number
                self.turn_blocks.append(start)
                self.turn_lines.append(number)
                self._block_start = None
            elif kind == "task_complete":
                self.newest_answer = number
            elif kind == "thread_rolled_back":
                turns = payload.get("num_turns")
                if isinstance(turns, int) and turns > 0:
                    self.rolled_back_turns += turns
        elif line_type == "turn_context":
            self.turn_contexts.append((number, len(self.turn_blocks)))

    def kept_from(self, window_start: int) -> int:
        """The first line of the kept turns: the lines Codex writes for a turn just before
        its `user_message` (task_started, context messages, the turn_context that resume
        reads) belong to it."""
        turn = bisect.bisect_left(self.turn_lines, window_start)
        if turn < len(self.turn_lines):
            return min(self.turn_blocks[turn], window_start)
        return window_start

    def protection(self, window_start: int) -> tuple[int, frozenset[int]]:
        """The first line of the kept turns, and the turn_context lines resume may read.

        The core's window starts at a turn's `user_message`; the lines Codex writes just
        before it for that turn (task_started, context messages, turn_context) stay with it.
        The window may differ between runs of one plan (a target mode trial), so only what
        does not depend on it is cached."""
        kept_from = self.kept_from(window_start)
        if self._live_contexts is None:
            turns = len(self.turn_blocks)
            self._live_contexts = live_contexts(self.turn_contexts, turns, self.rolled_back_turns)
        return kept_from, self._live_contexts


class CodexRules:
    """Codex's rules for one file: tool calls by id, turn boundaries (`CodexTurns`), the
    live turn_context."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.calls: dict[str, str] = {}  # call_id -> "shell_command 'ls'"
        self.turns = CodexTurns()
        self._show_session: str | None = None  # "gitclaw-compress show SESSION_ID "

    def _named(self, scope: Scope) -> Scope:
        """The scope whose stubs name the line by the session's id and its number."""
        if self._show_session is None:
            return scope  # no session id: the path, as the core names it
        return dataclasses.replace(scope, show=f"{self._show_session}L{scope.number}")

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        return None  # no thinking of this agent binds to its prefix

    def observe(self, number: int, entry: Entry) -> bool:
        line_type = entry.get("type")
        payload = payload_of(entry)
        kind = payload.get("type")
        if number == 1:
            found = session_id(entry)
            self._show_session = None if found is None else f"{stubs.SHOW} {found} "
        self.turns.learn(number, line_type, payload, kind)
        if line_type == "response_item" and kind in ("function_call", "custom_tool_call"):
            call_id, name = payload.get("call_id"), payload.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                arguments = payload.get("arguments", payload.get("input"))
                self.calls[call_id] = call_descriptor(name, arguments)
        return _may_edit(line_type, kind, payload, self.settings)

    def kept_from(self, window_start: int) -> int:
        """The first line of the kept turns (see `CodexTurns.kept_from`)."""
        return self.turns.kept_from(window_start)

    def edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        if scope.number == self.turns.newest_answer:  # the last reply, as a resumed UI may show it
            return []
        scope = self._named(scope)
        if scope.ui_only:  # the UI's copies of outputs, in any turn
            if entry.get("type") == "response_item" and scope.kept_large:
                return self._kept_large_edits(payload_of(entry), scope)
            if entry.get("type") != "event_msg":
                return []
            return _ui_copy_edits(payload_of(entry), scope, UI_COPY_MIN_BYTES)
        kept_from, live_contexts = self.turns.protection(scope.window_start)
        line_type = entry.get("type")
        payload = payload_of(entry)
        if not scope.full or scope.number >= kept_from:
            # Budget pruning (wherever the line is): the tool output alone becomes a stub.
            if scope.prune and line_type == "response_item" and payload.get("type") in OUTPUT_TYPES:
                return self._output_edits(payload, scope, forced=True)
            return []
        if line_type == "response_item":
            return self._response_item_edits(payload, scope)
        if line_type == "event_msg":
            return _event_edits(payload, self.settings, scope)
        if line_type == "turn_context" and scope.number not in live_contexts:
            return _turn_context_edits(payload, scope)
        return []

    def superseded_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Before the newest `compacted` record, which Codex resumes from: the strings of
        response items and events it never sends again, and the whole `replacement_history`
        of an older `compacted` record (only the newest one's is read; the array stays an
        array). Reasoning and compaction items stay whole, and so do `session_meta` and
        every `turn_context` (Codex reads its settings from them)."""
        line_type = entry.get("type")
        payload = payload_of(entry)
        scope = self._named(scope)
        if line_type == "compacted":
            history = payload.get("replacement_history")
            edits = [Edit(("payload", "replacement_history"), [])] if history else []
            rest = {key: value for key, value in payload.items() if key != "replacement_history"}
            return edits + superseded_edits(rest, ("payload",), scope.show)
        if line_type not in ("response_item", "event_msg"):
            return []
        return superseded_edits(payload, ("payload",), scope.show, CODEX_KEPT_ON_SUPERSEDED)

    def _kept_large_edits(self, payload: dict[str, Any], scope: Scope) -> list[Edit]:
        """Deep, in the kept turns: tool outputs and call arguments over
        `deep_kept_max_bytes`; everything else there stays byte for byte."""
        limit = self.settings.deep_kept_max_bytes
        if payload.get("type") in OUTPUT_TYPES and _size(payload.get("output")) > limit:
            return self._output_edits(payload, scope, forced=True)
        return call_edits(payload, limit, self.settings, scope.show)

    def _response_item_edits(self, payload: dict[str, Any], scope: Scope) -> list[Edit]:
        kind = payload.get("type")
        if kind in OUTPUT_TYPES:
            return self._output_edits(payload, scope, forced=scope.prune)
        if kind == "message":
            if payload.get("role") == "user" and self.settings.keep_user_images:
                return []
            return _message_image_edits(payload, scope)
        return call_edits(payload, self.settings.tool_call_max_bytes, self.settings, scope.show)

    def _output_edits(self, payload: dict[str, Any], scope: Scope, *, forced: bool) -> list[Edit]:
        """Stub an output that is large, or any output a budget policy chose (`forced`)."""
        output = payload.get("output")
        if not isinstance(output, str | list) or _is_stubbed(output):
            return []
        if not forced and _size(output) <= self.settings.tool_result_max_bytes:
            return []
        tool = self.calls.get(str(payload.get("call_id")), "tool")
        return output_edits(output, tool, self.settings, scope.show)


def live_contexts(contexts: list[tuple[int, int]], turns: int, rolled_back: int) -> frozenset[int]:
    """The turn_context lines resume may read: of `contexts` ((line, turns started before
    it)), the newest, and with rollbacks every one they could reach (resume reads the
    turn_context of the newest turn that survives them)."""
    live = set()
    if contexts:
        live.add(contexts[-1][0])
    if rolled_back:
        oldest_reachable = turns - 1 - rolled_back
        live.update(line for line, turn in contexts if turn >= oldest_reachable)
    return frozenset(live)


def output_edits(
    output: str | list[Any], tool: str, settings: CompressSettings, show: str
) -> list[Edit]:
    """A tool output as its stub: a string stays a string; an array becomes one text item,
    what every API accepts."""
    if isinstance(output, str):
        text, images = output, []
    else:
        text = "\n".join(
            str(item.get("text"))
            for item in output
            if isinstance(item, dict) and isinstance(item.get("text"), str)
        )
        images = [
            data_url_image(item["image_url"])
            for item in output
            if isinstance(item, dict) and is_data_url(item.get("image_url"))
        ]
    stub = stubs.tool_output_stub(
        tool=tool,
        text=text,
        images=images,
        failed=False,
        reason=None,
        show=show,
        settings=settings.preview,
    )
    value: object = stub if isinstance(output, str) else [{"type": "input_text", "text": stub}]
    return [Edit(("payload", "output"), value)]


def call_edits(
    payload: dict[str, Any], limit: int, settings: CompressSettings, show: str
) -> list[Edit]:
    """A call's arguments (function_call) or patch (custom_tool_call) over `limit` bytes."""
    kind = payload.get("type")
    if kind == "function_call":
        arguments = payload.get("arguments")
        if isinstance(arguments, str) and _size(arguments) > limit:
            return [Edit(("payload", "arguments"), arguments_stub(arguments, settings, show))]
    elif kind == "custom_tool_call":
        text = payload.get("input")
        if isinstance(text, str) and _size(text) > limit:
            return [Edit(("payload", "input"), _input_stub(text, show))]
    return []


def arguments_stub(arguments: str, settings: CompressSettings, show: str) -> str:
    """Arguments stay a string holding a JSON object: small values kept, big ones stubbed."""
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        parsed = None
    line_chars = settings.preview.line_chars
    if not isinstance(parsed, dict):
        stub = stubs.argument_stub("arguments", arguments, show, line_chars)
        return orjson.dumps({"gitclaw-compress": stub}).decode()
    limit = settings.bash_command_max_chars
    shortened: dict[str, Any] = {}
    for key, value in parsed.items():
        if key in ARGUMENT_KEYS_KEPT or _size(value) <= SMALL_ARGUMENT_BYTES:
            shortened[key] = value
        elif key in ("command", "cmd") and isinstance(value, str):
            shortened[key] = stubs.command_stub(value, limit, show)
        elif key in ("command", "cmd") and isinstance(value, list):
            shortened[key] = [
                stubs.command_stub(part, limit, show)
                if isinstance(part, str) and len(part) > limit
                else part
                for part in value
            ]
        else:
            shortened[key] = stubs.argument_stub(key, value, show, line_chars)
    return orjson.dumps(shortened).decode()


def _event_edits(payload: dict[str, Any], settings: CompressSettings, scope: Scope) -> list[Edit]:
    """An older event's UI copies and other long strings, and a user_message's images.
    No model is sent an event: a string over `UI_COPY_MIN_BYTES` goes, as UI copies do
    in every turn with `stub_ui_copies` (the output limit, if lower)."""
    limit = min(settings.tool_result_max_bytes, UI_COPY_MIN_BYTES)
    edits = _ui_copy_edits(payload, scope, limit)
    if payload.get("type") == "user_message" and not settings.keep_user_images:
        edits.extend(_user_image_edits(payload, scope.show))
    done = {edit.path for edit in edits}
    for path, value in _ui_record(payload, limit):
        if path not in done:
            edits.append(Edit(path, ui_stub(_key_of(path), _size(value), scope.show)))
    return edits


def _ui_record(payload: dict[str, Any], limit: int) -> Iterator[tuple[JsonPath, str]]:
    """Every string over `limit` of an event that only Codex's UI reads, at any depth: an
    event type this code does not name included; not a person's message, not the reply."""
    kind = payload.get("type")
    item = payload.get("item")
    if kind in EVENTS_KEPT or (isinstance(item, dict) and item.get("type") == "UserMessage"):
        return
    for path, value in _long_strings(payload, ("payload",), limit):
        if not EVENT_KEYS_KEPT.intersection(step for step in path if isinstance(step, str)):
            yield path, value


def _key_of(path: JsonPath) -> str:
    return next(str(step) for step in reversed(path) if isinstance(step, str))


def _user_image_edits(payload: dict[str, Any], show: str) -> list[Edit]:
    """A user_message event's data-URL images, each as its stub."""
    images = payload.get("images")
    edits: list[Edit] = []
    for index, url in enumerate(images if isinstance(images, list) else []):
        if is_data_url(url):
            mime, size = data_url_image(url)
            stub = stubs.image_stub("User", mime, size, show)
            edits.append(Edit(("payload", "images", index), stub))
    return edits


def _ui_copy_edits(payload: dict[str, Any], scope: Scope, limit: int) -> list[Edit]:
    """The copies that only the UI shows: of a command's output, a patch, an MCP result, a
    reply, a plan or a reasoning summary."""
    kind = payload.get("type")
    edits: list[Edit] = []
    if kind == "exec_command_end":
        for key in EXEC_OUTPUT_FIELDS:
            value = payload.get(key)
            if isinstance(value, str) and (size := _size(value)) > limit:
                edits.append(Edit(("payload", key), ui_stub(key, size, scope.show)))
    elif kind in PATCH_EVENTS and isinstance(payload.get("changes"), dict):
        for path, change in payload["changes"].items():
            if not isinstance(change, dict):
                continue
            for key in ("unified_diff", "content"):
                value = change.get(key)
                if isinstance(value, str) and (size := _size(value)) > limit:
                    stub = ui_stub(key, size, scope.show)
                    edits.append(Edit(("payload", "changes", path, key), stub))
    elif kind == MCP_END:
        for path, value in _long_strings(payload.get("result"), ("payload", "result"), limit):
            edits.append(Edit(path, ui_stub(_key_of(path), _size(value), scope.show)))
    else:
        for path, value in _reply_copies(payload, limit):
            edits.append(Edit(path, ui_stub(str(path[-1]), _size(value), scope.show)))
    return edits


def _reply_copies(payload: dict[str, Any], limit: int) -> Iterator[tuple[JsonPath, str]]:
    """(path, value) of each UI copy of a reply, a plan or a reasoning summary over `limit`
    bytes."""
    kind = payload.get("type")
    if isinstance(kind, str) and kind in REPLY_COPIES:
        key = REPLY_COPIES[kind]
        yield from _long_strings(payload.get(key), ("payload", key), limit)
    elif kind == "item_completed":
        item = payload.get("item")
        if isinstance(item, dict) and item.get("type") in COPIED_ITEMS:
            yield from _long_strings(item, ("payload", "item"), limit)


def ui_stub(key: str, size: int, show: str) -> str:
    """A value of an event, which only Codex's UI reads (the model is sent response items
    alone): its key, its size and the command, no more."""
    return f"{stubs.STUB_PREFIX} {key}: {size:,} bytes, UI only. {show}"


def _turn_context_edits(payload: dict[str, Any], scope: Scope) -> list[Edit]:
    """An older turn_context's instructions, each a stub (the newest one carries them)."""
    edits: list[Edit] = []
    places: list[tuple[JsonPath, object]] = [
        (("payload", key), payload.get(key))
        for key in ("user_instructions", "developer_instructions")
    ]
    mode = payload.get("collaboration_mode")
    settings = mode.get("settings") if isinstance(mode, dict) else None
    if isinstance(settings, dict):
        places.append(
            (
                ("payload", "collaboration_mode", "settings", "developer_instructions"),
                settings.get("developer_instructions"),
            )
        )
    for path, value in places:
        if isinstance(value, str) and not stubs.is_stub(value):
            edits.append(Edit(path, _repeated_stub(str(path[-1]), _size(value), scope.show)))
    return edits


def _repeated_stub(key: str, size: int, show: str) -> str:
    """Instructions every turn_context repeats, of which resume reads the newest alone."""
    return f"{stubs.STUB_PREFIX} {key}: {size:,} bytes, read from the newest turn_context. {show}"


def _may_edit(
    line_type: object, kind: object, payload: dict[str, Any], settings: CompressSettings
) -> bool:
    """Pass 1's test: whether `edits` may change a line (False: pass 2 copies it unparsed).
    Out of deep, only what the edits would stub: an output or a call over its limit (any
    output under a budget), a message or user_message with an image, an event holding a
    string over the UI copies' limit, a turn_context. Deep keeps every call and output."""
    if line_type == "response_item":
        if kind == "message":
            content = payload.get("content")
            return isinstance(content, list) and any(
                isinstance(item, dict) and "image_url" in item for item in content
            )
        if kind not in BULK_ITEMS or settings.deep:  # deep: kept turns' limit too
            return kind in BULK_ITEMS
        if kind in OUTPUT_TYPES:
            output = payload.get("output")
            if not isinstance(output, str | list):
                return False
            if settings.budget.active:  # its pruning stubs an output of any size
                return True
            limit = settings.tool_result_max_bytes
            return _longer(output, limit) if isinstance(output, str) else _size(output) > limit
        value = payload.get("arguments" if kind == "function_call" else "input")
        return isinstance(value, str) and _longer(value, settings.tool_call_max_bytes)
    if line_type == "event_msg":
        if kind == "agent_message":
            return False
        images = payload.get("images") if kind == "user_message" else None
        if (
            isinstance(images, list)
            and not settings.keep_user_images
            and any(is_data_url(url) for url in images)
        ):
            return True
        # Only strings go on an event, each over this (the UI copies' limit is no lower).
        limit = min(settings.tool_result_max_bytes, UI_COPY_MIN_BYTES)
        return _holds_long_string(payload, limit)
    return line_type == "turn_context"


def _longer(text: str, limit: int) -> bool:
    """`_size(text) > limit`, from its length when that decides (a character writes 1 to 6
    bytes)."""
    if len(text) + 2 > limit:
        return True
    return 6 * len(text) + 2 > limit and _size(text) > limit


def _holds_long_string(value: object, limit: int) -> bool:
    """Whether `value` holds a string over `limit` bytes (`_long_strings` finds one; a stub
    too, which pass 2 then leaves): pass 1's test of a line pass 2 may edit."""
    if isinstance(value, str):
        return _longer(value, limit)
    if isinstance(value, dict):
        return any(_holds_long_string(item, limit) for item in value.values())
    if isinstance(value, list):
        return any(_holds_long_string(item, limit) for item in value)
    return False


def _long_strings(value: object, path: JsonPath, limit: int) -> Iterator[tuple[JsonPath, str]]:
    """Every string over `limit` bytes inside `value` (not a stub already), with its path."""
    if isinstance(value, str):
        if not stubs.is_stub(value) and _size(value) > limit:
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _long_strings(item, (*path, key), limit)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _long_strings(item, (*path, index), limit)


def _is_stubbed(output: str | list[Any]) -> bool:
    """An output that is a stub already: the string, or the one text item of an array."""
    if isinstance(output, str):
        return stubs.is_stub(output)
    return len(output) == 1 and isinstance(output[0], dict) and stubs.is_stub(output[0].get("text"))


def _message_image_edits(payload: dict[str, Any], scope: Scope) -> list[Edit]:
    """A data-URL image in a message becomes a text item that says what it was."""
    content = payload.get("content")
    if not isinstance(content, list):
        return []
    who = "User" if payload.get("role") == "user" else "Message"
    edits: list[Edit] = []
    for index, item in enumerate(content):
        if isinstance(item, dict) and is_data_url(item.get("image_url")):
            mime, size = data_url_image(item["image_url"])
            stub = stubs.image_stub(who, mime, size, scope.show)
            edits.append(Edit(("payload", "content", index), {"type": "input_text", "text": stub}))
    return edits


def _input_stub(text: str, show: str) -> str:
    """apply_patch input: the files it touched, its size, and where the full patch is."""
    files = PATCH_FILE.findall(text)
    if not files:
        return stubs.argument_stub("input", text, show, 120)
    touched = ", ".join(f"{action} {stubs.cut(path.strip(), 80)}" for action, path in files[:8])
    if len(files) > 8:
        touched += f", … {len(files) - 8} more"
    return (
        f"{stubs.STUB_PREFIX} patch elided: {stubs.text_shape(text)}; {touched}. Full call: {show}"
    )


def _encrypted(value: object, where: str) -> Iterator[tuple[str, Any]]:
    """Every `encrypted_content` inside a value, wherever it is nested."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "encrypted_content":
                yield f"{where}.{key}", item
            elif isinstance(item, dict | list):
                yield from _encrypted(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _encrypted(item, f"{where}[{index}]")


class CodexFormat(FormatBase):
    name = "codex"
    title = TITLES[name]

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        from gitclaw_compress.formats.codex.home import home

        return home(environ)

    # A committed CODEX_HOME at the root, or one inside an agent's state folder.
    globs: tuple[str, ...] = (
        ".codex/sessions/**/rollout-*.jsonl",
        ".codex/archived_sessions/**/rollout-*.jsonl",
        "*/state/**/sessions/**/rollout-*.jsonl",
        "*/state/**/archived_sessions/**/rollout-*.jsonl",
    )
    kinds: tuple[str, ...] = (
        "tool outputs",
        "tool output images",
        "function_call arguments",
        "custom_tool_call input",
        "message text",
        "message images",
        "reasoning",
        "turn_context instructions",
        "event_msg UI copies",
        "user_message images",
        "session_meta",
    )

    def measure(self, entry: Entry) -> Iterator[tuple[str, int]]:
        line_type = entry.get("type")
        payload = payload_of(entry)
        kind = payload.get("type")
        if line_type == "session_meta":
            yield "session_meta", _size(payload)
        elif line_type == "turn_context":
            yield from _measure_instructions(payload)
        elif line_type == "response_item":
            yield from _measure_response_item(kind, payload)
        elif line_type == "event_msg":
            yield from _measure_event(kind, payload)

    def recognize(self, entries: Sequence[Entry]) -> bool:
        # Every Codex line has these three keys and one of Codex's line types; no other
        # format's lines have a `payload` object.
        return any(
            entry.get("type") in LINE_TYPES
            and isinstance(entry.get("payload"), dict)
            and "timestamp" in entry
            for entry in entries
        )

    def check(self, first: RawLine | None, source: str) -> None:
        check_header(first, source)

    def is_turn_start(self, entry: Entry) -> bool:
        return entry.get("type") == "event_msg" and event_type(entry) == "user_message"

    def entry_id(self, entry: Entry) -> str | None:
        return None  # rollout lines have no ids: `show` finds them as L<number>

    def session_id(self, first: Entry) -> str | None:
        return session_id(first)

    def rules(self, settings: CompressSettings) -> CodexRules:
        return CodexRules(settings)

    def views(self, lines: Iterable[RawLine]) -> Iterator[EntryView]:
        return view_lines(lines)

    def view(self, number: int, entry: Entry) -> EntryView:
        return view_line(number, entry)

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        return rebuild(views)

    def lifecycle_hook(self) -> LifecycleHook:
        from gitclaw_compress.formats.codex.hooks import HOOK

        return HOOK

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        return [codex_summary.summary_record(lines, request)]

    def sealed(self, entry: Entry) -> Iterator[tuple[str, Any]]:
        line_type = entry.get("type")
        yield "type", line_type
        yield "timestamp", entry.get("timestamp")
        payload = payload_of(entry)
        if line_type in ("session_meta", "compacted"):
            yield "payload", payload
            return
        for key in ("type", "role", "call_id", "name", "id", "turn_id", "status", "num_turns"):
            if key in payload:
                yield f"payload.{key}", payload[key]
        yield from _encrypted(payload, "payload")
        kind = payload.get("type")
        if line_type == "response_item" and kind == "reasoning":
            yield "payload.summary", payload.get("summary")
            yield "payload.content", payload.get("content")
        elif line_type == "response_item" and kind == "message":
            content = payload.get("content")
            if isinstance(content, list):
                yield "payload.content.length", len(content)
                for index, item in enumerate(content):
                    # Text is never changed; an image item becomes a text item with a stub.
                    if (
                        isinstance(item, dict)
                        and "text" in item
                        and not stubs.is_stub(item["text"])
                    ):
                        yield f"payload.content[{index}]", item
        elif line_type == "response_item" and kind in OUTPUT_TYPES:
            yield "payload.output.kind", type(payload.get("output")).__name__
        elif line_type == "event_msg" and kind in ("user_message", "agent_message"):
            yield "payload.message", payload.get("message")
        elif line_type == "turn_context":
            for key, value in payload.items():
                if key not in ("user_instructions", "developer_instructions"):
                    if key == "collaboration_mode" and isinstance(value, dict):
                        yield "payload.collaboration_mode.mode", value.get("mode")
                        settings = value.get("settings")
                        if isinstance(settings, dict):
                            for name, item in settings.items():
                                if name != "developer_instructions":
                                    yield f"payload.collaboration_mode.settings.{name}", item
                    else:
                        yield f"payload.{key}", value

    # Reasoning summaries go with their encrypted_content and are never edited.
    secret_free_keys = frozenset(("id", "call_id", "turn_id", "encrypted_content"))
    secret_sealed_keys = frozenset(("summary",))


def _measure_instructions(payload: dict[str, Any]) -> Iterator[tuple[str, int]]:
    values = [payload.get(key) for key in ("user_instructions", "developer_instructions")]
    mode = payload.get("collaboration_mode")
    settings = mode.get("settings") if isinstance(mode, dict) else None
    if isinstance(settings, dict):
        values.append(settings.get("developer_instructions"))
    for value in values:
        if isinstance(value, str):
            yield ("stubs" if stubs.is_stub(value) else "turn_context instructions"), _size(value)


def _measure_response_item(kind: object, payload: dict[str, Any]) -> Iterator[tuple[str, int]]:
    if kind in OUTPUT_TYPES:
        output = payload.get("output")
        if isinstance(output, str):
            yield ("stubs" if stubs.is_stub(output) else "tool outputs"), _size(output)
        elif isinstance(output, list):
            for item in output:
                if not isinstance(item, dict):
                    continue
                if is_data_url(item.get("image_url")):
                    yield "tool output images", _size(item["image_url"])
                elif stubs.is_stub(item.get("text")):
                    yield "stubs", _size(item["text"])
                else:
                    yield "tool outputs", _size(item)
    elif kind == "function_call":
        arguments = payload.get("arguments")
        stubbed = isinstance(arguments, str) and stubs.STUB_PREFIX in arguments
        yield ("stubs" if stubbed else "function_call arguments"), _sized(arguments)
    elif kind == "custom_tool_call":
        text = payload.get("input")
        yield ("stubs" if stubs.is_stub(text) else "custom_tool_call input"), _sized(text)
    elif kind == "reasoning":
        yield "reasoning", _size(payload)
    elif kind == "message" and isinstance(payload.get("content"), list):
        for item in payload["content"]:
            if not isinstance(item, dict):
                continue
            if is_data_url(item.get("image_url")):
                yield "message images", _size(item["image_url"])
            elif stubs.is_stub(item.get("text")):
                yield "stubs", _size(item["text"])
            elif isinstance(item.get("text"), str):
                yield "message text", _size(item["text"])


def _measure_event(kind: object, payload: dict[str, Any]) -> Iterator[tuple[str, int]]:
    values: list[object] = []
    if kind == "exec_command_end":
        values = [payload.get(key) for key in EXEC_OUTPUT_FIELDS]
    elif kind in PATCH_EVENTS and isinstance(payload.get("changes"), dict):
        for change in payload["changes"].values():
            if isinstance(change, dict):
                values.extend(change.get(key) for key in ("unified_diff", "content"))
    elif kind == MCP_END:
        values = [text for _, text in _long_strings(payload.get("result"), (), 0)]
    elif kind == "user_message" and isinstance(payload.get("images"), list):
        for url in payload["images"]:
            if isinstance(url, str):
                yield ("stubs" if stubs.is_stub(url) else "user_message images"), _size(url)
    else:
        values = [text for _, text in _reply_copies(payload, 0)]
    for value in values:
        if isinstance(value, str):
            yield ("stubs" if stubs.is_stub(value) else "event_msg UI copies"), _size(value)


FORMAT = CodexFormat()
