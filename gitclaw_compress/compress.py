"""The pure core: raw lines in; lines, and the payloads they dropped, out.

Two passes over the lines. `scan` finds the turns, the window of recent turns to keep, and
which tool outputs are redundant. `compress_lines` rewrites entries before the window by
splicing small JSON values over large ones, and appends a marker that records, for each
splice, the path and the git object id of the original bytes, plus the sha256 of the whole
original line. `restore.restore_data` reverses it byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from gitclaw_compress import stubs
from gitclaw_compress.jsonspan import JsonPath, locate, object_close, splice
from gitclaw_compress.session import (
    MARKER_BYTES,
    MARKER_KEY,
    Entry,
    LineCounts,
    RawLine,
    message_of,
    parse_entry,
    role_of,
)

# OpenAI pairs function calls with their encrypted reasoning items; dropping those risks a
# rejected request, so their thinking blocks are never touched.
RESPONSES_APIS = frozenset({"openai-responses", "openai-codex-responses", "azure-openai-responses"})
PATH_ARGUMENTS = frozenset({"path", "file_path", "filePath", "offset", "limit", "timeout"})
SMALL_ARGUMENT_BYTES = 160  # argument values up to this size are always kept
MIN_SAVING_BYTES = 48  # a splice must save more than its share of the marker
QUOTE_SCAN_MAX_CHARS = 65536  # tool outputs larger than this are never checked for quoting
MARKER_VERSION = 1

ObjectId = Callable[[bytes], str]


def git_blob_id(data: bytes) -> str:
    """The id git gives `data` as a blob (SHA-1 object format)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def git_blob_id_sha256(data: bytes) -> str:
    """The id git gives `data` as a blob in a repository with the SHA-256 object format."""
    digest = hashlib.sha256(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class CompressSettings:
    keep_turns: int = 4
    tool_call_max_bytes: int = 500
    tool_result_max_bytes: int = 1000
    strip_thinking: bool = True
    eliminate_redundancy: bool = True
    strip_user_images: bool = False
    bash_command_max_chars: int = 200
    redundancy_min_bytes: int = 400
    preview: stubs.PreviewSettings = field(default_factory=stubs.PreviewSettings)


@dataclass(slots=True)
class SessionPlan:
    """What pass 1 learned. Line numbers are 1-based."""

    window_start: int  # lines from here on are the kept window, byte for byte
    turns: int
    kept_turns: int
    counts: LineCounts
    later_copy: dict[int, str] = field(
        default_factory=dict
    )  # line -> id of a later identical output
    quoted_by: dict[int, str] = field(
        default_factory=dict
    )  # line -> id of the reply that quotes it


@dataclass(frozen=True, slots=True)
class Payload:
    oid: str
    data: bytes


@dataclass(frozen=True, slots=True)
class OutputLine:
    line: RawLine
    payloads: tuple[Payload, ...] = ()
    original_size: int = 0  # set when the line was compressed

    @property
    def changed(self) -> bool:
        return bool(self.payloads)


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def _content_key(content: object) -> bytes:
    return hashlib.blake2b(orjson.dumps(content), digest_size=16).digest()


def scan(lines: Iterable[RawLine], settings: CompressSettings) -> SessionPlan:
    """Pass 1: find the turns and the redundant tool outputs."""
    counts = LineCounts()
    user_lines: list[int] = []
    copies: dict[bytes, list[tuple[int, str]]] = {}
    quoted_by: dict[int, str] = {}
    pending_quotes: list[tuple[int, str]] = []
    for line in lines:
        entry = parse_entry(line.data)
        counts.observe(line, entry)
        if entry is None:
            continue
        role = role_of(entry)
        if role == "user":
            user_lines.append(line.number)
            pending_quotes.clear()
        if not settings.eliminate_redundancy or MARKER_KEY in entry:
            continue
        entry_id = entry.get("id")
        message = message_of(entry)
        if message is None or not isinstance(entry_id, str):
            continue
        if role == "toolResult":
            content = message.get("content")
            serialized = orjson.dumps(content)
            if len(serialized) >= settings.redundancy_min_bytes:
                key = hashlib.blake2b(serialized, digest_size=16).digest()
                copies.setdefault(key, []).append((line.number, entry_id))
                text = _text_of(content)
                if settings.redundancy_min_bytes <= len(text) <= QUOTE_SCAN_MAX_CHARS:
                    pending_quotes.append((line.number, text))
        elif role == "assistant":
            reply = _text_of(message.get("content"))
            if reply.strip():
                for number, text in pending_quotes:
                    if text in reply:
                        quoted_by[number] = entry_id
                pending_quotes.clear()
    later_copy: dict[int, str] = {}
    for occurrences in copies.values():
        last_id = occurrences[-1][1]
        for number, _ in occurrences[:-1]:
            later_copy[number] = last_id
    keep = settings.keep_turns
    if keep == 0:
        window_start = counts.lines + 1
    elif len(user_lines) > keep:
        window_start = user_lines[-keep]
    else:
        window_start = 1
    return SessionPlan(
        window_start=window_start,
        turns=len(user_lines),
        kept_turns=min(keep, len(user_lines)),
        counts=counts,
        later_copy=later_copy,
        quoted_by=quoted_by,
    )


@dataclass(slots=True)
class _Edit:
    path: JsonPath
    value: object


def _call_descriptor(name: str, arguments: object) -> str:
    if isinstance(arguments, dict):
        for key in ("path", "file_path", "filePath", "url", "pattern", "query", "command"):
            value = arguments.get(key)
            if isinstance(value, str) and value:
                first = value.strip().split("\n", 1)[0]
                return f"{name} {stubs.cut(first, 80)!r}"
    return name


class _Compressor:
    def __init__(
        self,
        plan: SessionPlan,
        settings: CompressSettings,
        session_ref: str,
        object_id: ObjectId,
        intact_commit: Callable[[RawLine], str | None] | None,
    ) -> None:
        self.plan = plan
        self.settings = settings
        self.session_ref = session_ref
        self.object_id = object_id
        self.intact_commit = intact_commit
        self.calls: dict[str, str] = {}  # toolCallId -> "read 'src/app.ts'"

    def line(self, line: RawLine) -> OutputLine:
        if line.number == 1 or line.number >= self.plan.window_start:
            return OutputLine(line)
        entry = parse_entry(line.data)
        if entry is None:
            return OutputLine(line)
        message = message_of(entry)
        if message is None:
            return OutputLine(line)
        if message.get("role") == "assistant":
            self._remember_calls(message)
        entry_id = entry.get("id")
        if MARKER_KEY in entry or not isinstance(entry_id, str):
            return OutputLine(line)
        show = stubs.show_command(self.session_ref, entry_id)
        edits = self._edits(line.number, message, show)
        if not edits:
            return OutputLine(line)
        return self._apply(line, edits)

    def _remember_calls(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                call_id, name = block.get("id"), block.get("name")
                if isinstance(call_id, str) and isinstance(name, str):
                    self.calls[call_id] = _call_descriptor(name, block.get("arguments"))

    def _edits(self, number: int, message: dict[str, Any], show: str) -> list[_Edit]:
        role = message.get("role")
        if role == "assistant":
            return self._assistant_edits(message, show)
        if role == "toolResult":
            return self._tool_result_edits(number, message, show)
        if role == "user" and self.settings.strip_user_images:
            return self._user_image_edits(message, show)
        if role == "bashExecution":
            output = message.get("output")
            if isinstance(output, str) and _size(output) > self.settings.tool_result_max_bytes:
                stub = stubs.bash_output_stub(output, show, self.settings.preview)
                return [_Edit(("message", "output"), stub)]
        return []

    def _assistant_edits(self, message: dict[str, Any], show: str) -> list[_Edit]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        edits: list[_Edit] = []
        strip_thinking = (
            self.settings.strip_thinking
            and message.get("api") not in RESPONSES_APIS
            and _has_visible_blocks(content)
        )
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            base: JsonPath = ("message", "content", index)
            kind = block.get("type")
            if kind == "thinking" and strip_thinking and not block.get("redacted"):
                # Emptied, never stubbed: pi drops empty thinking blocks, and text put here
                # would reach the model as its own words or break a signature.
                for key in ("thinking", "thinkingSignature"):
                    if isinstance(block.get(key), str) and block[key]:
                        edits.append(_Edit((*base, key), ""))
            elif kind == "toolCall":
                if isinstance(block.get("partialJson"), str) and block["partialJson"]:
                    edits.append(_Edit((*base, "partialJson"), ""))
                arguments = block.get("arguments")
                if isinstance(arguments, dict) and (
                    _size(arguments) > self.settings.tool_call_max_bytes
                ):
                    edits.extend(self._argument_edits(arguments, (*base, "arguments"), show))
        return edits

    def _argument_edits(self, arguments: dict[str, Any], base: JsonPath, show: str) -> list[_Edit]:
        edits: list[_Edit] = []
        line_chars = self.settings.preview.line_chars
        for key, value in arguments.items():
            if key in PATH_ARGUMENTS or _size(value) <= SMALL_ARGUMENT_BYTES:
                continue
            if key == "command" and isinstance(value, str):
                if len(value) > self.settings.bash_command_max_chars:
                    stub = stubs.command_stub(value, self.settings.bash_command_max_chars, show)
                    edits.append(_Edit((*base, key), stub))
            elif key == "edits" and isinstance(value, list):
                for index, item in enumerate(value):
                    if not isinstance(item, dict):
                        continue
                    for name, text in item.items():
                        if _size(text) > SMALL_ARGUMENT_BYTES:
                            stub = stubs.argument_stub(name, text, show, line_chars)
                            edits.append(_Edit((*base, key, index, name), stub))
            else:
                edits.append(_Edit((*base, key), stubs.argument_stub(key, value, show, line_chars)))
        return edits

    def _tool_result_edits(self, number: int, message: dict[str, Any], show: str) -> list[_Edit]:
        edits: list[_Edit] = []
        content = message.get("content")
        tool = self.calls.get(str(message.get("toolCallId")), str(message.get("toolName", "tool")))
        reason = None
        if number in self.plan.quoted_by:
            reason = (
                f"The next assistant reply (entry {self.plan.quoted_by[number]}) "
                "quotes it word for word"
            )
        elif number in self.plan.later_copy:
            reason = f"Identical to the later output in entry {self.plan.later_copy[number]}"
        if isinstance(content, list) and (
            reason is not None or _size(content) > self.settings.tool_result_max_bytes
        ):
            images = [
                (str(block.get("mimeType", "image")), stubs.image_size(block.get("data")))
                for block in content
                if isinstance(block, dict) and block.get("type") == "image"
            ]
            stub = stubs.tool_output_stub(
                tool=tool,
                text=_text_of(content),
                images=images,
                failed=message.get("isError") is True,
                reason=reason,
                show=show,
                settings=self.settings.preview,
            )
            edits.append(_Edit(("message", "content"), [{"type": "text", "text": stub}]))
        details = message.get("details")
        if details and (size := _size(details)) > self.settings.tool_result_max_bytes:
            stub = stubs.details_stub(size, show)
            edits.append(_Edit(("message", "details"), {"type": "text", "text": stub}))
        return edits

    def _user_image_edits(self, message: dict[str, Any], show: str) -> list[_Edit]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        edits: list[_Edit] = []
        for index, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "image":
                mime = str(block.get("mimeType", "image"))
                stub = stubs.image_stub("User", mime, stubs.image_size(block.get("data")), show)
                edits.append(_Edit(("message", "content", index), {"type": "text", "text": stub}))
        return edits

    def _apply(self, line: RawLine, edits: list[_Edit]) -> OutputLine:
        data = line.data
        spans = locate(data, [edit.path for edit in edits])
        splices: list[tuple[int, int, bytes]] = []
        parts: list[dict[str, object]] = []
        payloads: list[Payload] = []
        for edit in edits:
            span = spans.get(edit.path)
            if span is None:
                continue
            original = data[span.start : span.end]
            replacement = orjson.dumps(edit.value)
            if len(original) - len(replacement) <= MIN_SAVING_BYTES:
                continue
            oid = self.object_id(original)
            splices.append((span.start, span.end, replacement))
            parts.append({"path": list(edit.path), "oid": oid})
            payloads.append(Payload(oid, original))
        if not splices:
            return OutputLine(line)
        marker: dict[str, object] = {
            "v": MARKER_VERSION,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "parts": parts,
        }
        commit = self.intact_commit(line) if self.intact_commit else None
        if commit:
            marker["commit"] = commit
        close = object_close(data)
        member = b',"' + MARKER_KEY.encode() + b'":' + orjson.dumps(marker)
        splices.append((close, close, member))
        new_data = splice(data, splices)
        if len(new_data) >= len(data):
            return OutputLine(line)
        return OutputLine(RawLine(line.number, new_data, line.newline), tuple(payloads), len(data))


def _size(value: object) -> int:
    return len(orjson.dumps(value))


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


def compress_lines(
    lines: Iterable[RawLine],
    plan: SessionPlan,
    settings: CompressSettings,
    *,
    session_ref: str,
    object_id: ObjectId = git_blob_id,
    intact_commit: Callable[[RawLine], str | None] | None = None,
) -> Iterator[OutputLine]:
    """Pass 2: yield every line, compressed where it lies before the kept window."""
    compressor = _Compressor(plan, settings, session_ref, object_id, intact_commit)
    for line in lines:
        yield compressor.line(line)


def has_marker(data: bytes) -> bool:
    if MARKER_BYTES not in data:
        return False
    entry = parse_entry(data)
    return entry is not None and isinstance(entry.get(MARKER_KEY), dict)


def compress_entry_lines(
    lines: list[RawLine], settings: CompressSettings, session_ref: str
) -> tuple[list[RawLine], dict[str, bytes]]:
    """In-memory convenience: both passes over a list; returns lines and payloads by oid."""
    plan = scan(lines, settings)
    out: list[RawLine] = []
    payloads: dict[str, bytes] = {}
    for result in compress_lines(lines, plan, settings, session_ref=session_ref):
        out.append(result.line)
        for payload in result.payloads:
            payloads[payload.oid] = payload.data
    return out, payloads


__all__ = [
    "CompressSettings",
    "Entry",
    "OutputLine",
    "Payload",
    "SessionPlan",
    "compress_entry_lines",
    "compress_lines",
    "git_blob_id",
    "has_marker",
    "scan",
]
