"""pi (pi-mono's coding agent), session format v3: every field name and resume rule of pi.

A file is JSONL: line 1 is the header `{"type":"session","version":3,…}`, every other line an
entry with `id` and `parentId`. Messages are `{"type":"message","message":{"role":…}}`; a turn
starts at a user message. What pi needs to resume, and so what is never touched: line 1, every
`id`/`parentId`/`type`, user and assistant text, thinking of the OpenAI Responses APIs (its
signature is an encrypted reasoning item). Thinking of other APIs is emptied, never stubbed:
pi drops empty thinking blocks, while text put there would reach the model as its own words or
break a signature. A stub in a tool result is a `{"type":"text"}` block, the only kind pi's
converters join.

Preserved thinking: with an Anthropic model that binds each thinking block to everything
sent before it (`binds_prefix`), pi sends every turn's signed thinking back, so on every line
it sends before the newest such block only `details` (pi's UI) goes, and no thinking is
emptied there. See docs/preserved-thinking.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from gitclaw_compress.core import stubs
from gitclaw_compress.core.jsonpieces import hash_json
from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import MARKER_KEY, Entry, RawLine, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.base import TITLES, Edit, FormatBase, Scope
from gitclaw_compress.formats.pi import context as pi_context
from gitclaw_compress.formats.pi import summary as pi_summary
from gitclaw_compress.formats.pi import view as pi_view
from gitclaw_compress.formats.shared.home import AgentHome
from gitclaw_compress.formats.shared.hooks import LifecycleHook
from gitclaw_compress.formats.shared.rules import (
    PATH_ARGUMENTS,
    SMALL_ARGUMENT_BYTES,
    call_descriptor,
    content_text,
    superseded_edits,
)
from gitclaw_compress.formats.shared.rules import json_size as _size
from gitclaw_compress.formats.shared.rules import json_size_if_present as _sized
from gitclaw_compress.model import Conversation, EntryView, SummaryRequest
from gitclaw_compress.preserved_thinking import binds_prefix
from gitclaw_compress.settings import CompressSettings

ENTRY_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
# OpenAI pairs function calls with their encrypted reasoning items; dropping those risks a
# rejected request, so their thinking blocks are never touched.
RESPONSES_APIS = frozenset({"openai-responses", "openai-codex-responses", "azure-openai-responses"})
QUOTE_SCAN_MAX_CHARS = 65536  # tool outputs larger than this are never checked for quoting


def message_of(entry: Entry) -> dict[str, Any] | None:
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def role_of(entry: Entry) -> str | None:
    message = message_of(entry)
    role = message.get("role") if message is not None else None
    return role if isinstance(role, str) else None


def check_header(line: RawLine | None, source: str) -> Entry:
    """Line 1 must be a pi session header; pi rewrites files whose header is broken."""
    if line is None:
        raise GitClawError(f"{source}: empty file, not a pi session")
    header = parse_entry(line.data)
    if header is None or header.get("type") != "session":
        raise GitClawError(
            f"{source}:1: not a pi session header (expected a JSON object with "
            '"type":"session"); the file was not changed'
        )
    version = header.get("version", 1)
    if version != 3:
        raise GitClawError(
            f"{source}:1: pi session version {version!r} is not supported (only 3); "
            "resume it once in pi to migrate it; the file was not changed"
        )
    return header


def _has_visible_blocks(content: list[Any]) -> bool:
    """Whether the message keeps something once its thinking is emptied."""
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "toolCall":
            return True
        if block.get("type") == "text" and str(block.get("text", "")).strip():
            return True
    return False


UI_COPY_MIN_BYTES = 256  # with stub_ui_copies, UI-only values above this size are stubbed
# The messages `edits` may change (see `PiTurns.observe`): no other line is parsed twice.
BULK_ROLES = frozenset({"assistant", "toolResult", "user", "bashExecution"})


# Deep, on a message pi never sends again: what stays (its role, the call a result answers,
# its provider and model, usage).
PI_KEPT_ON_SUPERSEDED = frozenset(
    {"role", "toolCallId", "toolName", "api", "provider", "model", "usage", "stopReason"}
)


class PiCopies:
    """Tool outputs a later line makes redundant (with `eliminate_redundancy`): one identical
    to a later output, or one the next assistant reply quotes word for word. Learned in pass
    1, settled once before pass 2."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.later_copy: dict[int, str] = {}  # line -> id of a later identical output
        self.quoted_by: dict[int, str] = {}  # line -> id of the reply that quotes it
        self._copies: dict[bytes, list[tuple[int, str]]] = {}
        self._pending_quotes: list[tuple[int, str]] = []
        self._settled = False

    def learn(self, number: int, entry: Entry, message: dict[str, Any], role: object) -> None:
        if role == "user":
            self._pending_quotes.clear()
        if not self.settings.eliminate_redundancy or MARKER_KEY in entry:
            return
        entry_id = entry.get("id")
        if not isinstance(entry_id, str):
            return
        if role == "toolResult":
            content = message.get("content")
            digest = hashlib.blake2b(digest_size=16)
            if hash_json(content, digest) >= self.settings.redundancy_min_bytes:
                key = digest.digest()
                self._copies.setdefault(key, []).append((number, entry_id))
                text = content_text(content)
                if self.settings.redundancy_min_bytes <= len(text) <= QUOTE_SCAN_MAX_CHARS:
                    self._pending_quotes.append((number, text))
        elif role == "assistant":
            reply = content_text(message.get("content"))
            if reply.strip():
                for quoted, text in self._pending_quotes:
                    if text in reply:
                        self.quoted_by[quoted] = entry_id
                self._pending_quotes.clear()

    def settle(self) -> None:
        if self._settled:
            return
        for occurrences in self._copies.values():
            last_id = occurrences[-1][1]
            for number, _ in occurrences[:-1]:
                self.later_copy[number] = last_id
        self._copies.clear()
        self._settled = True

    def reason(self, number: int) -> str | None:
        """Why the output on line `number` is redundant, for its stub; None when it is not."""
        if number in self.quoted_by:
            return (
                f"The next assistant reply (entry {self.quoted_by[number]}) quotes it word for word"
            )
        if number in self.later_copy:
            return f"Identical to the later output in entry {self.later_copy[number]}"
        return None


class PiTurns:
    """Pass 1 over a pi file: what each tool call was (for the stubs of its result), the
    redundant outputs (`PiCopies`), whether the newest turn is still in a tool loop, and
    where the thinking pi sends back binds what was sent before it (preserved thinking);
    from those, whether deep empties every thinking block."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.calls: dict[str, str] = {}  # toolCallId -> "read 'src/app.ts'"
        self.copies = PiCopies(settings)
        # Preserved thinking: the newest line holding a thinking block bound to its prefix,
        # and the line before the first one pi sends (its newest compaction's first kept).
        self.bound_until = 0
        self.sent_from = 0
        self._line_of: dict[str, int] = {}
        # Deep: whether the newest turn ends in an open tool loop, and whether some bound
        # reply could not lose its thinking (nothing else in it, or a redacted block).
        self.turn_open = False
        self._bound_kept = False

    def observe(self, number: int, entry: Entry) -> bool:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            self._line_of[entry_id] = number
        if entry.get("type") == "compaction":
            self._observe_compaction(entry)
        message = message_of(entry)
        if message is None:
            return False
        role = message.get("role")
        if role == "assistant" and _holds_bound_thinking(message):
            self.bound_until = number
            content = message["content"]
            if not _has_visible_blocks(content) or any(
                isinstance(block, dict) and block.get("redacted") for block in content
            ):
                self._bound_kept = True
        if self.settings.deep:
            self._observe_loop(message, role)
        if role == "assistant":
            self._remember_calls(message)
        self.copies.learn(number, entry, message, role)
        return role in BULK_ROLES

    def _observe_compaction(self, entry: Entry) -> None:
        first_kept = self._line_of.get(str(entry.get("firstKeptEntryId")))
        if first_kept is None:
            return  # where pi starts is unknown here: everything stays sent
        self.sent_from = first_kept - 1
        if self.bound_until < first_kept:
            self.bound_until = 0  # thinking pi never sends again binds nothing

    def _observe_loop(self, message: dict[str, Any], role: object) -> None:
        if role == "user":
            self.turn_open = False
        elif role == "toolResult":
            self.turn_open = True
        elif role == "assistant":
            content = message.get("content")
            blocks = (
                [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            )
            if blocks:
                self.turn_open = blocks[-1].get("type") != "text"

    def _remember_calls(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                call_id, name = block.get("id"), block.get("name")
                if isinstance(call_id, str) and isinstance(name, str):
                    self.calls[call_id] = call_descriptor(name, block.get("arguments"))

    def drops_every_thinking(self) -> bool:
        """Deep, on a session whose thinking binds its prefix (preserved thinking): every
        thinking block pi sends is emptied (pi then leaves it out), in the kept turns too, so
        that none comes back with a changed prefix. Not when the newest turn ends in an open
        tool loop, nor when a bound reply holds nothing else or a redacted block: then
        nothing before the newest bound block changes, as by default."""
        return (
            self.settings.deep
            and self.bound_until > 0
            and not self.turn_open
            and not self._bound_kept
        )

    def _bound_until(self) -> int:
        return 0 if self.drops_every_thinking() else self.bound_until

    def in_bound_prefix(self, number: int) -> bool:
        """Whether line `number` is sent before a thinking block bound to its prefix (pi
        sends every turn's thinking back): then what the model sees there stays."""
        return self.sent_from < number <= self._bound_until()

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        first, bound_until = self.sent_from + 1, self._bound_until()
        return (first, bound_until) if bound_until >= first else None


class PiPayloads:
    """The stub of each kind of payload pi writes, under one run's settings: tool results
    (named by their call, with why they are redundant), their `details`, tool-call
    arguments, bash outputs, pasted images, thinking. Which lines get which is `PiRules`'s."""

    def __init__(self, settings: CompressSettings, calls: Mapping[str, str]) -> None:
        self.settings = settings
        self.calls = calls  # pass 1's, by toolCallId

    def tool_result_edits(
        self, message: dict[str, Any], scope: Scope, reason: str | None, *, forced: bool
    ) -> list[Edit]:
        """Stub the output when it is large or redundant (`reason`), or when `forced` (budget
        pruning); `details` when it is large."""
        edits: list[Edit] = []
        content = message.get("content")
        tool = self.calls.get(str(message.get("toolCallId")), str(message.get("toolName", "tool")))
        if isinstance(content, list) and (
            forced or reason is not None or _size(content) > self.settings.tool_result_max_bytes
        ):
            images = [
                (str(block.get("mimeType", "image")), stubs.image_size(block.get("data")))
                for block in content
                if isinstance(block, dict) and block.get("type") == "image"
            ]
            stub = stubs.tool_output_stub(
                tool=tool,
                text=content_text(content),
                images=images,
                failed=message.get("isError") is True,
                reason=reason,
                show=scope.show,
                settings=self.settings.preview,
            )
            edits.append(Edit(("message", "content"), [{"type": "text", "text": stub}]))
        limit = self.settings.tool_result_max_bytes
        if self.settings.ui_copies:
            limit = min(limit, UI_COPY_MIN_BYTES)
        edits.extend(self.details_edits(message, scope, limit))
        return edits

    def details_edits(self, message: dict[str, Any], scope: Scope, limit: int) -> list[Edit]:
        details = message.get("details")
        if not details or (isinstance(details, dict) and stubs.is_stub(details.get("text"))):
            return []
        # Measured first: a value nested deeper than orjson writes is reported as such.
        if (size := _size(details)) <= limit or not isinstance(details, dict):
            return []  # the stub is an object: only an object may become one
        stub = stubs.details_stub(size, scope.show)
        return [Edit(("message", "details"), {"type": "text", "text": stub})]

    def bash_output_edits(self, message: dict[str, Any], scope: Scope, limit: int) -> list[Edit]:
        """A bash execution's output (what `!` ran) over `limit`."""
        output = message.get("output")
        if isinstance(output, str) and _size(output) > limit:
            stub = stubs.bash_output_stub(output, scope.show, self.settings.preview)
            return [Edit(("message", "output"), stub)]
        return []

    def argument_edits(self, arguments: dict[str, Any], base: JsonPath, scope: Scope) -> list[Edit]:
        edits: list[Edit] = []
        show = scope.show
        line_chars = self.settings.preview.line_chars
        for key, value in arguments.items():
            if key in PATH_ARGUMENTS or _size(value) <= SMALL_ARGUMENT_BYTES:
                continue
            if key == "command" and isinstance(value, str):
                if len(value) > self.settings.bash_command_max_chars:
                    stub = stubs.command_stub(value, self.settings.bash_command_max_chars, show)
                    edits.append(Edit((*base, key), stub))
            elif key == "edits" and isinstance(value, list):
                for index, item in enumerate(value):
                    if not isinstance(item, dict):
                        continue
                    for name, text in item.items():
                        if _size(text) > SMALL_ARGUMENT_BYTES:
                            stub = stubs.argument_stub(name, text, show, line_chars)
                            edits.append(Edit((*base, key, index, name), stub))
            else:
                edits.append(Edit((*base, key), stubs.argument_stub(key, value, show, line_chars)))
        return edits


class PiRules:
    """pi's rules for one file (`FileRules`): pass 1 is `PiTurns`, the stub of each payload
    `PiPayloads`; here, which stubs each message gets in each scope."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.turns = PiTurns(settings)
        self.copies = self.turns.copies
        self.payloads = PiPayloads(settings, self.turns.calls)

    def observe(self, number: int, entry: Entry) -> bool:
        return self.turns.observe(number, entry)

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        return self.turns.preserved_thinking_span()

    def edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        self.copies.settle()
        message = message_of(entry)
        if message is None:
            return []
        payloads = self.payloads
        if self.turns.in_bound_prefix(scope.number):
            # Only `details` (pi's UI) may go: anything else changes a bound block's prefix.
            if message.get("role") != "toolResult" or not (scope.full or scope.ui_only):
                return []
            limit = UI_COPY_MIN_BYTES
            if scope.full and not self.settings.ui_copies:
                limit = self.settings.tool_result_max_bytes
            edits = payloads.details_edits(message, scope, limit)
            return [Edit(edit.path, edit.value, unseen=True) for edit in edits]
        if scope.ui_only:  # details are for pi's UI; the model never sees them
            edits = (
                payloads.details_edits(message, scope, UI_COPY_MIN_BYTES)
                if message.get("role") == "toolResult"
                else []
            )
            if scope.kept_large:
                edits.extend(self._kept_large_edits(message, scope))
                if message.get("role") == "assistant" and self.turns.drops_every_thinking():
                    edits.extend(_thinking_edits(message))
            return edits
        if not scope.full:
            if message.get("role") != "toolResult":
                return []
            return self._tool_result_edits(message, scope, forced=True)
        role = message.get("role")
        if role == "assistant":
            return self._assistant_edits(message, scope)
        if role == "toolResult":
            return self._tool_result_edits(message, scope, forced=scope.prune)
        if role == "user" and not self.settings.keep_user_images:
            return _user_image_edits(message, scope)
        if role == "bashExecution":
            return payloads.bash_output_edits(message, scope, self.settings.tool_result_max_bytes)
        return []

    def superseded_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Before `firstKeptEntryId` of the compaction pi resumes from (or off its branch):
        the strings of a message entry's message. Every entry keeps its id, parentId, type
        and shape (pi still walks the tree), thinking blocks stay whole (`edits` empties them
        as ever), and other entries (settings, labels, extensions' custom data, summaries)
        stay as they are."""
        message = message_of(entry)
        if entry.get("type") != "message" or message is None:
            return []
        return superseded_edits(message, ("message",), scope.show, PI_KEPT_ON_SUPERSEDED)

    def _tool_result_edits(
        self, message: dict[str, Any], scope: Scope, *, forced: bool
    ) -> list[Edit]:
        reason = self.copies.reason(scope.number)
        return self.payloads.tool_result_edits(message, scope, reason, forced=forced)

    def _kept_large_edits(self, message: dict[str, Any], scope: Scope) -> list[Edit]:
        """Deep, in the kept turns: tool results, bash outputs and tool-call arguments over
        `deep_kept_max_bytes`; everything else there stays byte for byte."""
        limit = self.settings.deep_kept_max_bytes
        role = message.get("role")
        if role == "toolResult" and _size(message.get("content")) > limit:
            return [
                edit
                for edit in self._tool_result_edits(message, scope, forced=True)
                if edit.path == ("message", "content")
            ]
        if role == "bashExecution":
            return self.payloads.bash_output_edits(message, scope, limit)
        edits: list[Edit] = []
        if role == "assistant" and isinstance(message.get("content"), list):
            for index, block in enumerate(message["content"]):
                if not isinstance(block, dict) or block.get("type") != "toolCall":
                    continue
                arguments = block.get("arguments")
                if isinstance(arguments, dict) and _size(arguments) > limit:
                    base: JsonPath = ("message", "content", index, "arguments")
                    edits.extend(self.payloads.argument_edits(arguments, base, scope))
        return edits

    def _assistant_edits(self, message: dict[str, Any], scope: Scope) -> list[Edit]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        strip_thinking = self.settings.strip_thinking or self.turns.drops_every_thinking()
        edits: list[Edit] = _thinking_edits(message) if strip_thinking else []
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            base: JsonPath = ("message", "content", index)
            if block.get("type") == "toolCall":
                if isinstance(block.get("partialJson"), str) and block["partialJson"]:
                    edits.append(Edit((*base, "partialJson"), ""))
                arguments = block.get("arguments")
                if isinstance(arguments, dict) and (
                    _size(arguments) > self.settings.tool_call_max_bytes
                ):
                    edits.extend(
                        self.payloads.argument_edits(arguments, (*base, "arguments"), scope)
                    )
        return edits


def _thinking_edits(message: dict[str, Any]) -> list[Edit]:
    """Thinking emptied (pi leaves an empty block out of what it sends), in a reply that
    keeps text or a tool call; never OpenAI reasoning, never a redacted block."""
    content = message.get("content")
    if (
        not isinstance(content, list)
        or message.get("api") in RESPONSES_APIS
        or not _has_visible_blocks(content)
    ):
        return []
    edits: list[Edit] = []
    for index, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "thinking":
            if block.get("redacted"):
                continue
            for key in ("thinking", "thinkingSignature"):
                if isinstance(block.get(key), str) and block[key]:
                    edits.append(Edit(("message", "content", index, key), ""))
    return edits


def _user_image_edits(message: dict[str, Any], scope: Scope) -> list[Edit]:
    """Every image a person pasted becomes a text block naming it (unless keepUserImages)."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    edits: list[Edit] = []
    for index, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "image":
            mime = str(block.get("mimeType", "image"))
            stub = stubs.image_stub("User", mime, stubs.image_size(block.get("data")), scope.show)
            edits.append(Edit(("message", "content", index), {"type": "text", "text": stub}))
    return edits


def _holds_bound_thinking(message: dict[str, Any]) -> bool:
    """Whether a reply holds signed thinking of an Anthropic model with preserved thinking."""
    content = message.get("content")
    if message.get("api") not in pi_view.ANTHROPIC_APIS or not isinstance(content, list):
        return False
    return binds_prefix(message.get("model")) and any(
        isinstance(block, dict)
        and block.get("type") == "thinking"
        and isinstance(block.get("thinkingSignature"), str)
        and block["thinkingSignature"] != ""
        for block in content
    )


def _sealed_blocks(message: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return
    api = message.get("api")
    role = message.get("role")
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if role == "assistant":  # a tool result's blocks become one text stub
            yield f"content[{index}].type", kind
        if kind == "toolCall":
            yield f"content[{index}].id", block.get("id")
            yield f"content[{index}].name", block.get("name")
        elif kind == "text" and message.get("role") in ("user", "assistant"):
            yield f"content[{index}].text", block.get("text")
        elif kind == "thinking" and (api in RESPONSES_APIS or block.get("redacted")):
            yield f"content[{index}].thinking", block.get("thinking")
            yield f"content[{index}].thinkingSignature", block.get("thinkingSignature")


def _measure_blocks(role: str, content: object) -> Iterator[tuple[str, int]]:
    if isinstance(content, str):
        yield ("user text" if role == "user" else "assistant text"), _size(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if stubs.is_stub(text):
                yield "stubs", _size(text)
            elif role in ("toolResult", "user"):
                yield f"{role} text", _size(text)
            else:
                yield "assistant text", _size(text)
        elif kind == "image":
            yield (
                ("user images" if role == "user" else "toolResult images"),
                _sized(block.get("data")),
            )
        elif kind == "thinking":
            yield "thinking text", _sized(block.get("thinking"))
            yield "thinking signatures", _sized(block.get("thinkingSignature"))
        elif kind == "toolCall":
            arguments = block.get("arguments", {})
            stub_bytes = (
                sum(_size(value) for value in arguments.values() if stubs.is_stub(value))
                if isinstance(arguments, dict)
                else 0
            )
            yield "stubs", stub_bytes
            yield "toolCall arguments", _sized(arguments) - stub_bytes
            yield "toolCall partialJson", _sized(block.get("partialJson"))


class PiFormat(FormatBase):
    name = "pi"
    title = TITLES[name]

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        from gitclaw_compress.formats.pi.home import home

        return home(environ)

    kinds: tuple[str, ...] = (
        "toolResult text",
        "toolResult images",
        "toolResult details",
        "toolCall arguments",
        "toolCall partialJson",
        "thinking text",
        "thinking signatures",
        "user text",
        "user images",
        "assistant text",
    )

    # GitClaw-style repositories keep pi's sessions under `<agent folder>/state/.../sessions/`.
    globs: tuple[str, ...] = ("*/state/**/sessions/*.jsonl",)

    def views(self, lines: Iterable[RawLine]) -> Iterator[EntryView]:
        """pi skips line 1 (the header) and reads invalid UTF-8 with replacement characters."""
        return pi_view.views(lines)

    def view(self, number: int, entry: Entry) -> EntryView:
        return pi_view.view(number, entry)

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        return pi_context.resume(views)

    def lifecycle_hook(self) -> LifecycleHook:
        from gitclaw_compress.formats.pi.hooks import HOOK

        return HOOK

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        return pi_summary.summary_record(lines, request)

    def measure(self, entry: Entry) -> Iterator[tuple[str, int]]:
        message = message_of(entry)
        if message is None:
            return
        role = str(message.get("role"))
        yield from _measure_blocks(role, message.get("content"))
        details = message.get("details")
        if details is not None:
            if isinstance(details, dict) and stubs.is_stub(details.get("text")):
                yield "stubs", _size(details)
            else:
                yield "toolResult details", _size(details)
        if role == "bashExecution":
            yield "toolResult text", _sized(message.get("output"))

    def recognize(self, entries: Sequence[Entry]) -> bool:
        # The header decides; a file whose line 1 is broken but whose entries are pi's is
        # still pi's, so that `check` can say what is wrong with it.
        return any(
            (entry.get("type") == "session" and "version" in entry)
            or (entry.get("type") in ENTRY_TYPES and "parentId" in entry)
            for entry in entries
        )

    def check(self, first: RawLine | None, source: str) -> None:
        check_header(first, source)

    def is_turn_start(self, entry: Entry) -> bool:
        return role_of(entry) == "user"

    def entry_id(self, entry: Entry) -> str | None:
        entry_id = entry.get("id")
        return entry_id if isinstance(entry_id, str) else None

    def rules(self, settings: CompressSettings) -> PiRules:
        return PiRules(settings)

    def sealed(self, entry: Entry) -> Iterator[tuple[str, Any]]:
        for key in ("type", "id", "parentId", "version", "cwd", "firstKeptEntryId"):
            if key in entry:
                yield key, entry[key]
        message = message_of(entry)
        if message is None:
            return
        for key in ("role", "toolCallId", "toolName", "isError", "api", "usage", "stopReason"):
            if key in message:
                yield f"message.{key}", message[key]
        yield from _sealed_blocks(message)

    # Signed thinking is sealed (pi sends it back); base64 image `data` holds no typed text.
    secret_free_keys = frozenset(
        ("id", "parentId", "toolCallId", "thinkingSignature", "textSignature", "data")
    )
    secret_sealed_keys = frozenset(("thinking",))


FORMAT = PiFormat()
