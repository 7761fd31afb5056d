"""GitHub Copilot CLI events (`~/.copilot/session-state/<session id>/events.jsonl`).

Every line is one event `{"type","data","id","timestamp","parentId"}`; the session id is the
folder's name; a turn starts at a `user.message` the person typed. What reaches the model on
resume (checked with Copilot CLI 1.0.102): user text, assistant text, the arguments of
`assistant.message.data.toolRequests[]` and `tool.execution_complete.data.result.content`.
`result.detailedContent`, `result.contents[]` and `tool.execution_start.data.arguments` only
feed the timeline the CLI shows, and mostly repeat the others.

What is compressed, before the kept turns: large tool results (`content`), their UI copies
(`detailedContent`, the text or data of `contents[]` items, which keep their `type`), and large
tool-call arguments (string values become stubs; objects and arrays keep their shape).
A tool output a budget policy chose (`Scope.prune`), wherever it is, loses its `content`
whatever its size, and its large UI copies; nothing else on its line or around it changes.
What is never touched: `id`, `parentId`, `type`, `timestamp` on every line, the line count
(`session.resume` records `eventCount`), every other event, the user's and the assistant's
text, and reasoning (`reasoningOpaque` with `reasoningText`, `encryptedContent`), which the
provider may check as a pair.

The CLI reads each line as one JSON event: older versions reported a session with one
unreadable line as corrupted (and a raw U+2028 has broken one); 1.0.102 silently drops such a
line, and the model loses that event. So every stub is one line of JSON (the core escapes
U+2028/U+2029 in stubs), and an argument whose key holds a line separator is never a path of
its own, since the marker would record its key raw. A line carrying the extra top-level
`gitclawCompress` member resumes in 1.0.102 exactly like the original.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.jsonspan import JsonPath, value_at
from gitclaw_compress.core.lines import MARKER_KEY, Entry, RawLine, parse_entry
from gitclaw_compress.core.stubs import encode_stub
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.base import TITLES, Edit, FormatBase, Scope
from gitclaw_compress.formats.copilot import context as copilot_context
from gitclaw_compress.formats.copilot import summary as copilot_summary
from gitclaw_compress.formats.copilot import view as copilot_view
from gitclaw_compress.formats.copilot.view import (
    ASSISTANT_MESSAGE,
    SKILL_INVOKED,
    TOOL_COMPLETE,
    TOOL_START,
    USER_MESSAGE,
)
from gitclaw_compress.formats.shared.home import AgentHome
from gitclaw_compress.formats.shared.hooks import LifecycleHook
from gitclaw_compress.formats.shared.rules import (
    PATH_ARGUMENTS,
    SMALL_ARGUMENT_BYTES,
    call_descriptor,
    superseded_edits,
)
from gitclaw_compress.formats.shared.rules import json_size as _size
from gitclaw_compress.formats.shared.rules import json_size_if_present as _sized
from gitclaw_compress.model import Conversation, EntryView, SummaryRequest

if TYPE_CHECKING:
    from gitclaw_compress.settings import CompressSettings

# The events `edits` may change (see `CopilotRules.observe`); no other event is parsed twice.
BULK_EVENTS = frozenset({TOOL_COMPLETE, TOOL_START, USER_MESSAGE, ASSISTANT_MESSAGE})

# Event types are namespaced "<area>.<event>"; these areas are Copilot CLI's own.
EVENT_AREAS = frozenset(
    {"session", "user", "assistant", "tool", "skill", "subagent", "hook", "system", "abort"}
)
# A user.message with one of these sources was injected (a hidden skill prompt, another
# agent's prompt), not typed by the person: it does not start a turn.
INJECTED_SOURCE_PREFIXES = ("skill-", "agent-")
# Reasoning the provider may verify: never changed, and only ever kept together.
SEALED_REASONING = ("reasoningOpaque", "reasoningText", "encryptedContent", "reasoningBlocks")
UI_COPY_MIN_BYTES = SMALL_ARGUMENT_BYTES  # UI-only copies above this size are stubbed
# What one stub adds to the marker: {"path":[…],"oid":"<40 or 64 hex>"}; a stub that saves
# less than this makes the line longer.
MARKER_PART_BYTES = 112
LINE_SEPARATORS = ("\u2028", "\u2029")
STUB_MIME = "text/plain"  # a stubbed blob attachment: the CLI sends it to the model as text


def data_of(entry: Entry) -> dict[str, Any] | None:
    data = entry.get("data")
    return data if isinstance(data, dict) else None


def is_event(entry: Entry) -> bool:
    """Whether a parsed line has the shape of a Copilot CLI event."""
    kind = entry.get("type")
    if not isinstance(kind, str) or "." not in kind:
        return False
    return (
        kind.split(".", 1)[0] in EVENT_AREAS
        and isinstance(entry.get("data"), dict)
        and isinstance(entry.get("id"), str)
        and "parentId" in entry
    )


def ui_copy_stub(name: str, show: str | None) -> str:
    """A UI-only copy of a tool result, replaced: the CLI's timeline shows this text.

    The model never reads it, so it says no more than what it was and how a person gets it
    back; without `show`, the stub of `content` on the same line names the command.
    """
    where = f"Full entry: {show}" if show else "Full entry: see content."
    return f"{stubs.STUB_PREFIX} {name}, UI only. {where}"


# The same line keeps `content` (or its stub, which names the show command): no need to repeat.
SAME_AS_CONTENT_STUB = f"{stubs.STUB_PREFIX} same as content"
# tool.execution_start repeats the arguments of the assistant message's tool request, which
# the same file keeps (or restores): its copy needs no show command.
REPEATED_ARGUMENT_STUB = f"{stubs.STUB_PREFIX} see the request"


def _worth(original: object, stub: object) -> bool:
    """Whether a stub saves more than its part of the marker costs (a path and an object id)."""
    return len(orjson.dumps(original)) - len(encode_stub(stub)) > MARKER_PART_BYTES


def _safe_key(key: str) -> bool:
    # The marker records paths with orjson, which leaves U+2028/U+2029 raw.
    return not any(separator in key for separator in LINE_SEPARATORS)


# Deep, on an event Copilot CLI never replays: what stays.
COPILOT_KEPT_ON_SUPERSEDED = frozenset(
    {"reasoningOpaque", "reasoningText", "toolCallId", "messageId", "interactionId", "model"}
)


class CopilotPayloads:
    """The stub of each kind of payload Copilot CLI writes, under one run's settings: tool
    results (named by their call) and their UI copies, tool-call arguments, and the copy of
    them `tool.execution_start` repeats. Which events get which is `CopilotRules`'s."""

    def __init__(
        self, settings: CompressSettings, calls: Mapping[str, str], requested: Mapping[str, bytes]
    ) -> None:
        self.settings = settings
        self.calls = calls  # pass 1's, by toolCallId
        self.requested = requested  # pass 1's: the arguments of each tool request, as JSON

    def start_edits(self, data: dict[str, Any], scope: Scope) -> list[Edit]:
        arguments = data.get("arguments")
        base: JsonPath = ("data", "arguments")
        requested = self.requested.get(str(data.get("toolCallId")))
        if requested is not None and requested == orjson.dumps(arguments):
            # One edit for the whole copy: one marker part instead of one per value.
            return [Edit(base, _repeated_copy(arguments))]
        return self.call_edits(arguments, base, scope, ui_only=True)

    def result_edits(self, data: dict[str, Any], scope: Scope, *, forced: bool) -> list[Edit]:
        """Stub a large `result.content` (any size when `forced`) and its large UI copies."""
        result = data.get("result")
        if not isinstance(result, dict):
            return []
        edits: list[Edit] = []
        base: JsonPath = ("data", "result")
        content = result.get("content")
        large = isinstance(content, str) and _size(content) > self.settings.tool_result_max_bytes
        if isinstance(content, str) and (forced or large):
            tool = self.calls.get(str(data.get("toolCallId")), "tool")
            stub = stubs.tool_output_stub(
                tool=tool,
                text=content,
                images=[],
                failed=data.get("success") is False,
                reason=None,
                show=scope.show,
                settings=self.settings.preview,
            )
            edits.append(Edit((*base, "content"), stub))
        # One show command per line is enough: the UI copies point at content's stub.
        show = None if edits and _worth(content, edits[0].value) else scope.show
        return edits + _ui_copy_edits(result, content, show)

    def call_edits(
        self, arguments: object, base: JsonPath, scope: Scope, *, ui_only: bool
    ) -> list[Edit]:
        """Stub the large values of a large call; the object keeps its keys and shape.

        A `ui_only` copy (tool.execution_start) never reaches the model: its large values
        go whatever the size of the call.
        """
        if not isinstance(arguments, dict):
            return []
        if not ui_only and _size(arguments) <= self.settings.tool_call_max_bytes:
            return []
        edits: list[Edit] = []
        limit = self.settings.bash_command_max_chars
        for key, value in arguments.items():
            if key in PATH_ARGUMENTS or not _safe_key(key) or _size(value) <= SMALL_ARGUMENT_BYTES:
                continue
            if key == "command" and isinstance(value, str):
                if len(value) > limit:
                    edits.append(Edit((*base, key), stubs.command_stub(value, limit, scope.show)))
            else:
                edits.extend(self._value_edits(key, value, (*base, key), scope))
        return edits

    def _value_edits(self, key: str, value: object, path: JsonPath, scope: Scope) -> list[Edit]:
        """String values become stubs; objects and arrays keep their shape, their strings go."""
        if isinstance(value, str):
            line_chars = self.settings.preview.line_chars
            return [Edit(path, stubs.argument_stub(key, value, scope.show, line_chars))]
        members: Iterator[tuple[str | int, object]]
        if isinstance(value, dict):
            members = iter(value.items())
        elif isinstance(value, list):
            members = iter(enumerate(value))
        else:
            return []  # numbers, booleans and null are small and keep their meaning
        edits: list[Edit] = []
        for name, child in members:
            if isinstance(name, str) and not _safe_key(name):
                continue
            if _size(child) > SMALL_ARGUMENT_BYTES:
                label = name if isinstance(name, str) else f"{key}[{name}]"
                edits.extend(self._value_edits(label, child, (*path, name), scope))
        return edits


class CopilotRules:
    """Copilot CLI's rules for one file (`FileRules`): pass 1 learns what each tool call was,
    by its id; the stub of each payload is `CopilotPayloads`'s; here, which stubs each event
    gets in each scope (and only those that save more than their marker costs)."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.calls: dict[str, str] = {}  # toolCallId -> "view '/src/app.ts'"
        self.requested: dict[str, bytes] = {}  # toolCallId -> its arguments in toolRequests
        self.payloads = CopilotPayloads(settings, self.calls, self.requested)

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        return None  # no thinking of this agent binds to its prefix

    def observe(self, number: int, entry: Entry) -> bool:
        data = data_of(entry)
        if data is None:
            return False
        kind = entry.get("type")
        if kind == ASSISTANT_MESSAGE:
            requests = data.get("toolRequests") or ()
            for request in requests:
                if isinstance(request, dict):
                    call_id = request.get("toolCallId")
                    self._remember(call_id, request.get("name"), request)
                    if isinstance(call_id, str) and "arguments" in request:
                        self.requested[call_id] = orjson.dumps(request["arguments"])
            return bool(requests)  # only tool request arguments are edited there
        if kind == TOOL_START:
            self._remember(data.get("toolCallId"), data.get("toolName"), data)
        return kind in BULK_EVENTS

    def _remember(self, call_id: object, name: object, holder: dict[str, Any]) -> None:
        if isinstance(call_id, str) and isinstance(name, str) and call_id not in self.calls:
            self.calls[call_id] = call_descriptor(name, holder.get("arguments"))

    def edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        return [
            edit
            for edit in self._edits(entry, scope)
            if _worth(value_at(entry, edit.path)[1], edit.value)
        ]

    def _edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        data = data_of(entry)
        if data is None:
            return []
        kind = entry.get("type")
        if scope.ui_only:
            copies = self._ui_edits(kind, data, scope)
            if scope.kept_large:
                copies.extend(self._kept_large_edits(kind, data, scope))
            return copies
        if kind == TOOL_COMPLETE and (scope.full or scope.prune):
            # A budget policy chose this output: it goes whatever its size, even when kept.
            return self.payloads.result_edits(data, scope, forced=scope.prune)
        if not scope.full:
            return []
        if kind == USER_MESSAGE and not self.settings.keep_user_images:
            return _attachment_edits(data, scope)
        if kind == ASSISTANT_MESSAGE:
            return self._request_edits(data, scope, limit=None)
        if kind == TOOL_START:
            return self.payloads.start_edits(data, scope)
        return []

    def superseded_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Before the compaction events Copilot CLI resumes from: the strings of user,
        assistant and tool events it never replays. `session.*` events (the session, its
        model, its resumes and compactions) stay whole, and so do reasoning (readable and
        opaque), ids and the tool-call ids that pair a call with its result."""
        kind = entry.get("type")
        data = data_of(entry)
        if data is None or not isinstance(kind, str) or kind.startswith("session."):
            return []
        return superseded_edits(data, ("data",), scope.show, COPILOT_KEPT_ON_SUPERSEDED)

    def _request_edits(
        self, data: dict[str, Any], scope: Scope, *, limit: int | None
    ) -> list[Edit]:
        """The large arguments of an assistant message's tool requests (with `limit`, only
        of those whose arguments are larger than it)."""
        edits: list[Edit] = []
        for index, request in enumerate(data.get("toolRequests") or ()):
            if not isinstance(request, dict):
                continue
            if limit is not None and _size(request.get("arguments")) <= limit:
                continue
            base: JsonPath = ("data", "toolRequests", index, "arguments")
            edits.extend(
                self.payloads.call_edits(request.get("arguments"), base, scope, ui_only=False)
            )
        return edits

    def _kept_large_edits(self, kind: object, data: dict[str, Any], scope: Scope) -> list[Edit]:
        """Deep, in the kept turns: a tool result and tool-call arguments over
        `deep_kept_max_bytes`; everything else there stays byte for byte."""
        limit = self.settings.deep_kept_max_bytes
        result = data.get("result")
        if kind == TOOL_COMPLETE and isinstance(result, dict):
            if _size(result.get("content")) > limit:
                return [
                    edit
                    for edit in self.payloads.result_edits(data, scope, forced=True)
                    if edit.path == ("data", "result", "content")
                ]
            return []
        if kind == ASSISTANT_MESSAGE:
            return self._request_edits(data, scope, limit=limit)
        return []

    def _ui_edits(self, kind: object, data: dict[str, Any], scope: Scope) -> list[Edit]:
        """What only the CLI's timeline reads, in any turn: a result's `detailedContent` and
        `contents[]`, and the arguments `tool.execution_start` repeats."""
        if kind == TOOL_START:
            return self.payloads.start_edits(data, scope)
        result = data.get("result")
        if kind != TOOL_COMPLETE or not isinstance(result, dict):
            return []
        return _ui_copy_edits(result, result.get("content"), scope.show)


def _ui_copy_edits(result: dict[str, Any], content: object, show: str | None) -> list[Edit]:
    """A result's UI copies: `detailedContent` (a short stub when it repeats `content`) and
    the bulk of each `contents[]` item."""
    base: JsonPath = ("data", "result")
    edits: list[Edit] = []
    detailed = result.get("detailedContent")
    if isinstance(detailed, str) and _size(detailed) > UI_COPY_MIN_BYTES:
        stub = (
            SAME_AS_CONTENT_STUB if detailed == content else ui_copy_stub("detailedContent", show)
        )
        if detailed != stub:
            edits.append(Edit((*base, "detailedContent"), stub))
    contents = result.get("contents")
    if isinstance(contents, list):
        for index, item in enumerate(contents):
            if isinstance(item, dict):
                path = (*base, "contents", index)
                edits.extend(_contents_item_edits(item, path, show))
    return edits


def _attachment_edits(data: dict[str, Any], scope: Scope) -> list[Edit]:
    """A pasted image (a `blob` attachment) becomes a text blob that names it.

    The whole attachment is one edit: a blob keeps its type and keys, its data becomes the
    stub in base64 and its mimeType text/plain, which the CLI sends as an `<attachment>`
    text part (an image/png blob with other data would reach the model as a broken image).
    """
    attachments = data.get("attachments")
    if not isinstance(attachments, list):
        return []
    edits: list[Edit] = []
    for index, item in enumerate(attachments):
        if not (isinstance(item, dict) and item.get("type") == "blob"):
            continue
        mime, blob = item.get("mimeType"), item.get("data")
        if not (isinstance(mime, str) and mime.startswith("image/") and isinstance(blob, str)):
            continue  # other blobs are what the person attached as such
        text = stubs.image_stub("User", mime, stubs.image_size(blob), scope.show)
        stub = {**item, "data": base64.b64encode(text.encode()).decode(), "mimeType": STUB_MIME}
        edits.append(Edit(("data", "attachments", index), stub))
    return edits


def _repeated_copy(value: object) -> object:
    """Arguments that repeat the tool request's, with every long string one short stub.

    Keys, numbers, booleans, short strings and the shape stay, so the timeline still reads.
    """
    if isinstance(value, str):
        return REPEATED_ARGUMENT_STUB if len(value) > len(REPEATED_ARGUMENT_STUB) else value
    if isinstance(value, dict):
        return {key: _repeated_copy(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_repeated_copy(child) for child in value]
    return value


def _contents_item_edits(item: dict[str, Any], base: JsonPath, show: str | None) -> list[Edit]:
    """A `contents[]` item keeps its `type` and keys; its bulk goes."""
    kind = item.get("type")
    edits: list[Edit] = []
    text_keys = {"text": "text", "terminal": "text", "shell_exit": "outputPreview"}
    if kind in text_keys:
        key = text_keys[str(kind)]
        text = item.get(key)
        if isinstance(text, str) and _size(text) > UI_COPY_MIN_BYTES:
            name = f"contents[{base[-1]}].{key}"
            edits.append(Edit((*base, key), ui_copy_stub(name, show)))
    elif kind in ("image", "audio"):
        # Empty base64 stays valid base64 for whatever decodes it; the marker restores it.
        if isinstance(item.get("data"), str) and _size(item["data"]) > UI_COPY_MIN_BYTES:
            edits.append(Edit((*base, "data"), ""))
    elif kind == "resource" and isinstance(item.get("resource"), dict):
        resource = item["resource"]
        text = resource.get("text")
        if isinstance(text, str) and _size(text) > UI_COPY_MIN_BYTES:
            name = f"contents[{base[-1]}].resource.text"
            stub = ui_copy_stub(name, show)
            edits.append(Edit((*base, "resource", "text"), stub))
        if isinstance(resource.get("blob"), str) and _size(resource["blob"]) > UI_COPY_MIN_BYTES:
            edits.append(Edit((*base, "resource", "blob"), ""))
    return edits


def _measure_contents(contents: object) -> Iterator[tuple[str, int]]:
    if not isinstance(contents, list):
        return
    for item in contents:
        if not isinstance(item, dict):
            continue
        for key in ("text", "outputPreview"):
            value = item.get(key)
            if isinstance(value, str):
                yield ("stubs" if stubs.is_stub(value) else "tool result contents"), _size(value)
        yield "tool result contents", _sized(item.get("data"))
        resource = item.get("resource")
        if isinstance(resource, dict):
            for key in ("text", "blob"):
                value = resource.get(key)
                if isinstance(value, str):
                    stubbed = stubs.is_stub(value)
                    yield ("stubs" if stubbed else "tool result contents"), _size(value)


def _measure_arguments(kind: str, arguments: object) -> Iterator[tuple[str, int]]:
    """The bytes of a call's arguments, with the stubs inside them counted apart."""
    stub_bytes = sum(_size(text) for text in _strings(arguments) if stubs.is_stub(text))
    yield "stubs", stub_bytes
    yield kind, _sized(arguments) - stub_bytes


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for child in value.values():
            yield from _strings(child)
    elif isinstance(value, list):
        for child in value:
            yield from _strings(child)


class CopilotFormat(FormatBase):
    name = "copilot"
    title = TITLES[name]

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        from gitclaw_compress.formats.copilot.home import home

        return home(environ)

    stubs_name_ids_alone = True  # event uuids; the path would be 87 of a stub's bytes
    # Copilot CLI's events, committed from ~/.copilot at the root or under a state folder
    globs: tuple[str, ...] = (
        ".copilot/session-state/*/events.jsonl",
        "state/**/.copilot/session-state/*/events.jsonl",
        "*/state/**/.copilot/session-state/*/events.jsonl",
    )
    kinds: tuple[str, ...] = (
        "tool result content",
        "tool result detailedContent",
        "tool result contents",
        "tool request arguments",
        "tool start arguments",
        "tool telemetry",
        "reasoning",
        "user text",
        "assistant text",
        "skill content",
    )

    def recognize(self, entries: Sequence[Entry]) -> bool:
        return any(is_event(entry) for entry in entries)

    def check(self, first: RawLine | None, source: str) -> None:
        if first is None:
            raise GitClawError(f"{source}: empty file, not a Copilot CLI session")
        event = parse_entry(first.data)
        if event is None or not is_event(event):
            raise GitClawError(
                f"{source}:1: not a Copilot CLI event (expected a JSON object with "
                '"type", "data", "id" and "parentId"); the file was not changed'
            )

    def is_turn_start(self, entry: Entry) -> bool:
        if entry.get("type") != USER_MESSAGE:
            return False
        data = data_of(entry)
        source = data.get("source") if data is not None else None
        return not (isinstance(source, str) and source.startswith(INJECTED_SOURCE_PREFIXES))

    def entry_id(self, entry: Entry) -> str | None:
        entry_id = entry.get("id")
        return entry_id if isinstance(entry_id, str) else None

    def view(self, number: int, entry: Entry) -> EntryView:
        data = data_of(entry)
        return copilot_view.view_event(number, entry, data or {}, self.is_turn_start(entry))

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        return copilot_context.resume(views)

    def lifecycle_hook(self) -> LifecycleHook:
        from gitclaw_compress.formats.copilot.hooks import HOOK

        return HOOK

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        """The CLI's own compaction record, if nothing is to be kept after it: Copilot CLI
        cannot keep a tail (see `copilot/summary.py` NO_KEPT_TAIL)."""
        views = list(self.views(lines))
        if copilot_summary.kept_tail(copilot_context.resume(views), request.first_kept):
            raise self.unsupported("a summary that keeps turns", copilot_summary.NO_KEPT_TAIL)
        return copilot_summary.record_lines(views, request)

    def rules(self, settings: CompressSettings) -> CopilotRules:
        return CopilotRules(settings)

    def measure(self, entry: Entry) -> Iterator[tuple[str, int]]:
        data = data_of(entry)
        if data is None:
            return
        kind = entry.get("type")
        if kind == TOOL_COMPLETE:
            result = data.get("result")
            if isinstance(result, dict):
                for key in ("content", "detailedContent"):
                    value = result.get(key)
                    if stubs.is_stub(value):
                        yield "stubs", _size(value)
                    else:
                        yield f"tool result {key}", _sized(value)
                yield from _measure_contents(result.get("contents"))
            yield "tool telemetry", _sized(data.get("toolTelemetry"))
        elif kind == ASSISTANT_MESSAGE:
            yield "assistant text", _sized(data.get("content"))
            for key in SEALED_REASONING:
                yield "reasoning", _sized(data.get(key))
            for request in data.get("toolRequests") or ():
                if isinstance(request, dict):
                    yield from _measure_arguments(
                        "tool request arguments", request.get("arguments")
                    )
        elif kind == TOOL_START:
            yield from _measure_arguments("tool start arguments", data.get("arguments"))
        elif kind == USER_MESSAGE:
            yield "user text", _sized(data.get("content")) + _sized(data.get("transformedContent"))
        elif kind == SKILL_INVOKED:
            yield "skill content", _sized(data.get("content"))

    def sealed(self, entry: Entry) -> Iterator[tuple[str, Any]]:
        for key in ("type", "id", "parentId", "timestamp"):
            yield key, entry.get(key)
        yield "keys", [key for key in entry if key != MARKER_KEY]
        data = data_of(entry)
        if data is None:
            return
        yield "data.keys", list(data)
        yield from _sealed_data(entry.get("type"), data)

    # Reasoning goes with its opaque encrypted twin and is never edited.
    secret_free_keys = frozenset(
        ("id", "parentId", "toolCallId", "messageId", "interactionId", "reasoningOpaque")
    )
    secret_sealed_keys = frozenset(("reasoningText",))


def _sealed_data(kind: object, data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """What no compression may change in an event's data, by the event's type."""
    if kind == TOOL_COMPLETE:
        for key in ("toolCallId", "success", "model", "interactionId", "error"):
            yield f"data.{key}", data.get(key)
        result = data.get("result")
        if isinstance(result, dict):
            yield "data.result.keys", list(result)
            contents = result.get("contents")
            if isinstance(contents, list):
                for index, item in enumerate(contents):
                    if isinstance(item, dict):
                        yield f"data.result.contents[{index}].keys", list(item)
                        yield f"data.result.contents[{index}].type", item.get("type")
        return
    if kind == TOOL_START:
        yield "data.toolCallId", data.get("toolCallId")
        yield "data.toolName", data.get("toolName")
        yield "data.arguments.shape", _shape(data.get("arguments"))
        return
    if kind == ASSISTANT_MESSAGE:
        for key in ("messageId", "content", "interactionId", *SEALED_REASONING):
            yield f"data.{key}", data.get(key)
        for index, request in enumerate(data.get("toolRequests") or ()):
            if isinstance(request, dict):
                for key in ("toolCallId", "name", "type"):
                    yield f"data.toolRequests[{index}].{key}", request.get(key)
                shape = _shape(request.get("arguments"))
                yield f"data.toolRequests[{index}].arguments.shape", shape
        return
    # Every other event is never touched: all of its data is sealed.
    yield "data", data


def _shape(value: object) -> object:
    """The JSON types and keys of a value, without its strings: what stubs must keep."""
    if isinstance(value, dict):
        return {key: _shape(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_shape(child) for child in value]
    if isinstance(value, str):
        return "string"
    return value


FORMAT = CopilotFormat()
