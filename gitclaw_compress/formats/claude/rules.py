"""Claude Code transcripts: `~/.claude/projects/<project>/<session>.jsonl`, subagent files
`<session>/subagents/agent-*.jsonl`, and Entire's checkpoint `full.jsonl` copies.

There is no header: every line is a record with a `type` (`user`, `assistant`, `progress`,
`system`, `attachment`, `summary`, …). Chain lines carry `uuid` and `parentUuid`; resume walks
`parentUuid` back from the newest line. One API message spans several `assistant` lines that
share `message.id`, one content block each. What the model sees: the `message` of `user` and
`assistant` lines. What only the transcript renderer reads: `toolUseResult` (the tool's
structured result, with the file before an edit in `originalFile`) and the `progress` lines
that repeat a subagent's messages.

Compressed before the kept turns: tool_result content (one text stub, `is_error` kept),
tool_use input (its large values), every large value inside `toolUseResult` and a progress
line's `data` (each stub keeps the JSON type of the value: a string a string, an array an
array, an object an object; `filePath` and `type` stay), and images, pasted or made by a
tool (each a text block naming it; a content array never becomes empty). Never
touched: thinking, signed or not, and `redacted_thinking` (the API checks signatures, and
Claude Code sends unsigned thinking back to the model as its own thoughts), ids and links,
`type`/`isSidechain`/`isMeta`/`isCompactSummary`, user and assistant text, the images a
person pasted when `keepUserImages` is set, attachments. A line a budget policy chose
(`Scope.prune`) has only its tool results stubbed, wherever it is.

Preserved thinking: Claude Code sends every turn's thinking back, and a model with preserved
thinking (`binds_prefix`) binds each block to everything sent before it. So on every line it
sends before the newest such block, only what no model sees goes (`toolUseResult`, progress
data); lines before its newest compact boundary (which it never sends again) compress as
usual. See docs/preserved-thinking.md.

What the model sees: `view.py` (each line in neutral terms) and `context.py`
(the resume walk and the request Claude Code builds); Claude Code's own compaction record:
`summary.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import Entry, RawLine
from gitclaw_compress.formats.base import TITLES, Edit, FormatBase, Scope
from gitclaw_compress.formats.claude import context as claude_context
from gitclaw_compress.formats.claude import summary as claude_summary
from gitclaw_compress.formats.claude import view as claude_view
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

if TYPE_CHECKING:
    from gitclaw_compress.settings import CompressSettings, PreviewSettings

# Lines of a conversation chain; each has `uuid` and `parentUuid`.
CHAIN_TYPES = frozenset({"user", "assistant", "progress", "system", "attachment"})
# Lines of the session's own state, outside the chain (Claude Code 2.1's transcript writer
# lists them with their persistence; `teleported-from` is a one-line file of its own).
SESSION_STATE_TYPES = frozenset(
    {
        "permission-mode",
        "last-prompt",
        "ai-title",
        "custom-title",
        "queue-operation",
        "teleported-from",
        "ended-by-model",
        "tag",
        "relocated",
        "agent-name",
        "agent-color",
        "agent-setting",
        "pr-link",
        "frame-link",
        "bridge-session",
        "attribution-snapshot",
        "speculation-accept",
        "mode",
        "isolation-latch",
        "worktree-state",
        "marble-origami-commit",
        "marble-origami-snapshot",
        "marble-origami-reset",
        "content-replacement",
        "fork-context-ref",
    }
)
# Names no other format uses: a line of one of these is Claude Code's without `sessionId`.
CLAUDE_ONLY_STATE_TYPES = frozenset(kind for kind in SESSION_STATE_TYPES if "-" in kind)
# Ids and links: resume, `--continue`, the renderer and Entire follow them.
SEALED_KEYS = (
    "type",
    "subtype",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "leafUuid",
    "sessionId",
    "messageId",
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "toolUseID",
    "parentToolUseID",
    "sourceToolAssistantUUID",
    "promptId",
    "agentId",
)
# Content blocks the API knows: a list of them becomes one text block when stubbed.
BLOCK_TYPES = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"}
)
# Keys of the renderer's data that stay whatever their size: the renderer crashed when
# `filePath` was missing (claude-code issues 42778, 38633, 40858); the rest name things.
UI_KEPT_KEYS = frozenset(
    {"type", "filePath", "file_path", "path", "agentId", "toolUseID", "uuid", "role", "id"}
)
UI_VALUE_MAX_BYTES = 256  # a renderer-only value larger than this becomes a stub
DEEP_LINE_CHARS = 80  # deep: a stub's preview lines are cut to this many characters


def message_of(entry: Entry) -> dict[str, Any] | None:
    if entry.get("type") not in ("user", "assistant"):
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def is_signed(block: dict[str, Any]) -> bool:
    """A thinking block the API verifies: any change gives "Invalid signature"."""
    signature = block.get("signature")
    return not (signature is None or signature == "")


def _images_of(content: object) -> list[tuple[str, int]]:
    if not isinstance(content, list):
        return []
    images = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image":
            source = block.get("source")
            source = source if isinstance(source, dict) else {}
            mime = str(source.get("media_type", "image"))
            images.append((mime, stubs.image_size(source.get("data"))))
    return images


StubText = Callable[[JsonPath, str, list[tuple[str, int]]], str]  # path, text, images


def _shrink_ui(value: object, path: JsonPath, stub_text: StubText) -> list[Edit]:
    """Stubs for the large values of renderer-only data, each keeping its JSON type.

    A string becomes a stub string; an object keeps its keys and shrinks its values; an
    array of content blocks becomes one text block, an array of strings one stub string,
    any other array `[]` (a diff's hunks: the renderer shows an empty diff, never a wrong one).
    """
    if _size(value) <= UI_VALUE_MAX_BYTES:
        return []
    if isinstance(value, str):
        return [] if stubs.is_stub(value) else [Edit(path, stub_text(path, value, []))]
    if isinstance(value, dict):
        edits: list[Edit] = []
        for key, item in value.items():
            if key not in UI_KEPT_KEYS:
                edits.extend(_shrink_ui(item, (*path, key), stub_text))
        return edits
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            if len(value) == 1 and stubs.is_stub(value[0]):
                return []
            return [Edit(path, [stub_text(path, "\n".join(value), [])])]
        if all(isinstance(item, dict) and item.get("type") in BLOCK_TYPES for item in value):
            if len(value) == 1 and stubs.is_stub(value[0].get("text")):
                return []
            text = stub_text(path, content_text(value), _images_of(value))
            return [Edit(path, [{"type": "text", "text": text}])]
        return [Edit(path, [])]
    return []


def _ui_shrinks(value: object, inner: bool = False) -> bool:
    """Whether `_shrink_ui` finds a value to stub in `value` (its tests, without the stubs);
    a value nested deeper than orjson writes counts as one, as before. An object inside is
    not measured: a value in it over the limit makes it over the limit too."""
    if isinstance(value, str):
        return _larger(value, UI_VALUE_MAX_BYTES) and not stubs.is_stub(value)
    if not (inner and isinstance(value, dict)):
        try:
            if _size(value) <= UI_VALUE_MAX_BYTES:
                return False
        except orjson.JSONEncodeError:
            return True
    if isinstance(value, dict):
        return any(
            _ui_shrinks(item, inner=True) for key, item in value.items() if key not in UI_KEPT_KEYS
        )
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return not (len(value) == 1 and stubs.is_stub(value[0]))
        if all(isinstance(item, dict) and item.get("type") in BLOCK_TYPES for item in value):
            return not (len(value) == 1 and stubs.is_stub(value[0].get("text")))
        return True
    return False


def _user_candidate(entry: Entry, settings: CompressSettings) -> bool:
    """Whether `_user_edits` (or `ui_edits`, or a budget's pruning) may stub something on
    this user line, out of deep: an image, a large or prunable tool result, a large UI
    copy. A typed prompt or a small tool result is then copied by pass 2 unparsed."""
    message = message_of(entry)
    if message is not None:
        prunable = settings.budget.active  # its pruning stubs a result of any size
        strip_images = not (settings.keep_user_images and is_turn_start(entry))
        limit = settings.tool_result_max_bytes
        for block in _blocks(message):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "image" and strip_images:
                return True
            if kind == "tool_result" and (prunable or _larger(block.get("content"), limit)):
                return True
    result = entry.get("toolUseResult")
    return result is not None and _ui_shrinks(result)


def _larger(value: object, limit: int) -> bool:
    """`_size(value) > limit`; a string's bounds first (each character writes 1 to 6
    bytes), and a value nested deeper than orjson writes counts as larger."""
    if isinstance(value, str):
        if len(value) + 2 > limit:
            return True
        if 6 * len(value) + 2 <= limit:
            return False
    try:
        return _size(value) > limit
    except orjson.JSONEncodeError:
        return True


def _stubs_input(value: object, key: str | int, command_chars: int) -> bool:
    """Whether `ClaudePayloads.input_edits` finds a value to stub in `value` (its tests,
    without the stubs: a TodoWrite of many short todos has none)."""
    if key in PATH_ARGUMENTS or _size(value) <= SMALL_ARGUMENT_BYTES:
        return False
    if isinstance(value, str):
        if stubs.is_stub(value):
            return False
        return key != "command" or len(value) > command_chars
    if isinstance(value, dict):
        return any(_stubs_input(item, name, command_chars) for name, item in value.items())
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return not (len(value) == 1 and stubs.is_stub(value[0]))
        return any(_stubs_input(item, index, command_chars) for index, item in enumerate(value))
    return False


def _path_name(path: JsonPath) -> str:
    """`toolUseResult.file.content` for a stub's text (indexes left out)."""
    return ".".join(str(part) for part in path if isinstance(part, str))


class ClaudeTurns:
    """Pass 1 over a Claude Code file: what each tool call was (for the stubs of its
    result), where the turns start and whether the newest is still in a tool loop, and where
    the thinking Claude Code sends back binds what was sent before it (preserved thinking);
    from those, the thinking deep drops."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.calls: dict[str, str] = {}  # tool_use id -> "Read 'src/app.ts'"
        # Deep: API message ids with a text or tool_use block on some line (Claude Code
        # writes each block of a reply on its own line, all with the reply's message.id),
        # and the newest turn start (thinking after it goes only once its tool loop is
        # closed, see `drops_kept_thinking`).
        self.answered: set[str] = set()
        self.last_turn_start = 0
        # Deep: whether the newest turn ends in an open tool loop (its last line a tool call,
        # a tool result or thinking): the API then needs that loop's thinking back as it was.
        self.turn_open = False
        # Deep: bound thinking-only lines by reply id (all dropped, or none, see
        # `drops_every_thinking`).
        self._bound_only: list[str] = []
        self._drops: bool | None = None
        # Preserved thinking: the newest line holding a thinking block bound to its prefix,
        # and the newest compact boundary (Claude Code sends nothing before it, unless a
        # boundary keeps a segment from before it).
        self.bound_until = 0
        self.sent_from = 0
        self.keeps_segments = False

    def observe(self, number: int, entry: Entry) -> bool:
        self._drops = None
        kind = entry.get("type")
        if kind != "assistant":  # `edits` changes user and progress lines, and tool calls
            if self.settings.deep and kind == "user":
                if is_turn_start(entry):
                    self.last_turn_start, self.turn_open = number, False
                elif _holds_tool_result(entry):
                    self.turn_open = True
            if kind == "system" and entry.get("subtype") == "compact_boundary":
                self._observe_boundary(number, entry)
            if self.settings.deep:
                return kind in ("user", "progress", "attachment")
            if kind == "user":
                return _user_candidate(entry, self.settings)
            data = entry.get("data")  # a progress line's: its UI copy alone
            return kind == "progress" and isinstance(data, dict) and _ui_shrinks(data)
        message = message_of(entry)
        if message is None:
            return False
        if _holds_bound_thinking(message):
            self.bound_until = number
            if self.settings.deep and _thinking_only(message):
                self._bound_only.append(str(message.get("id")))
        calls = large = False
        for block in _blocks(message):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls = True
                call_id, name = block.get("id"), block.get("name")
                if isinstance(call_id, str) and isinstance(name, str):
                    self.calls[call_id] = call_descriptor(name, block.get("input"))
                large = large or self._large_call(block.get("input"))
        if not self.settings.deep:
            return large  # a large call is all pass 2 edits on this line then
        reply_id = message.get("id")
        blocks = [block for block in _blocks(message) if isinstance(block, dict)]
        if isinstance(reply_id, str) and any(
            block.get("type") in ("text", "tool_use") for block in blocks
        ):
            self.answered.add(reply_id)
        if blocks:
            self.turn_open = blocks[-1].get("type") != "text"
        usage = message.get("usage")
        return (
            calls
            or any(block.get("type") in THINKING_TYPES for block in blocks)
            or (isinstance(usage, dict) and not USAGE_READ.issuperset(usage))
        )

    def _large_call(self, arguments: object) -> bool:
        """Whether `_assistant_edits` stubs these arguments (a value nested deeper than
        orjson writes counts as large: pass 2 then finds it so, as before)."""
        if not isinstance(arguments, dict):
            return False
        try:
            return _size(arguments) > self.settings.tool_call_max_bytes and _stubs_input(
                arguments, "input", self.settings.bash_command_max_chars
            )
        except orjson.JSONEncodeError:
            return True

    def _observe_boundary(self, number: int, entry: Entry) -> None:
        metadata = entry.get("compactMetadata")
        if isinstance(metadata, dict) and (
            metadata.get("preservedSegment") or metadata.get("preservedMessages")
        ):
            self.keeps_segments = True
        self.sent_from = number
        self.bound_until = 0  # thinking before the boundary is never sent again

    def drops_every_thinking(self) -> bool:
        """Deep, on a session whose thinking binds its prefix (preserved thinking): every
        thinking block Claude Code sends goes whole, in the kept turns too, so that none comes
        back with a changed prefix (Anthropic's advice for tools that trim earlier turns). Not
        when the newest turn ends in an open tool loop (the API wants that loop's thinking
        back, bound to what was sent before it), nor when a bound block is a reply's only
        content (the message would be empty): then nothing before it changes, as by default."""
        if self._drops is None:  # decided once pass 1 is over (observe resets it)
            self._drops = (
                self.settings.deep
                and self.bound_until > 0
                and not self.turn_open
                and all(reply in self.answered for reply in self._bound_only)
            )
        return self._drops

    def drops_kept_thinking(self, number: int) -> bool:
        """Deep: whether the thinking on kept line `number` goes, whole. With preserved
        thinking, all of it or none (`drops_every_thinking`). Without (no block Claude Code
        sends binds its prefix), a turn's thinking goes once its tool loop is closed: every
        kept turn before the newest, and the newest when it ended in a reply with no tool
        call awaiting its result. On resume a new prompt follows, which makes them earlier
        turns, whose thinking the Messages API strips for such models: the model is sent
        the same. An open loop keeps its thinking, as the API requires."""
        if not self.settings.deep:
            return False
        if self.bound_until > 0:
            return self.drops_every_thinking()
        return number < self.last_turn_start or not self.turn_open

    def _bound_until(self) -> int:
        return 0 if self.drops_every_thinking() else self.bound_until

    def in_bound_prefix(self, number: int) -> bool:
        """Whether line `number` is sent before a thinking block bound to its prefix (the
        newest one Claude Code sends): then what the model sees there stays byte for byte."""
        sent_from = 0 if self.keeps_segments else self.sent_from
        return sent_from < number <= self._bound_until()

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        first = 1 if self.keeps_segments else self.sent_from + 1
        bound_until = self._bound_until()
        return (first, bound_until) if bound_until >= first else None


def thinking_edits(turns: ClaudeTurns, message: dict[str, Any], number: int) -> list[Edit]:
    """Deep: the thinking blocks of a reply in a turn older than the newest (and of the
    kept turns, as `drops_kept_thinking` says), each dropped whole, never edited: the
    Messages API takes earlier turns without their thinking. A line of thinking alone
    becomes `content: []` only when its reply's text or tool call is on another line
    (Claude Code merges the lines of one reply by `message.id`), never an empty message."""
    if not turns.settings.deep or not (
        number < turns.last_turn_start or turns.drops_kept_thinking(number)
    ):
        return []
    blocks = message.get("content")
    if not isinstance(blocks, list):
        return []
    rest = [b for b in blocks if not (isinstance(b, dict) and b.get("type") in THINKING_TYPES)]
    if len(rest) == len(blocks):
        return []
    if not rest and message.get("id") not in turns.answered:
        return []
    return [Edit(("message", "content"), rest)]


class ClaudePayloads:
    """The stub of each kind of payload Claude Code writes, under one run's settings: tool
    results (named by their call), tool-call inputs, the renderer's data (what a person
    pasted and attachments: `ClaudeDeepPayloads`). Which lines get which is `ClaudeRules`'s."""

    def __init__(self, settings: CompressSettings, calls: Mapping[str, str]) -> None:
        self.settings = settings
        # Deep: stubs as short as a reader and `show` need, a head and a tail line each, each
        # cut to `DEEP_LINE_CHARS`.
        preview = settings.preview
        self.preview = (
            dataclasses.replace(
                preview,
                lines=min(preview.lines, 1),
                line_chars=min(preview.line_chars, DEEP_LINE_CHARS),
            )
            if settings.deep
            else preview
        )
        self.calls = calls  # pass 1's, by tool_use id

    def tool_result_edits(
        self,
        block: dict[str, Any],
        base: JsonPath,
        scope: Scope,
        *,
        forced: bool,
        kept: bool = False,
    ) -> list[Edit]:
        """Stub a tool result's content when it is large, or when `forced` (budget pruning).
        Deep: in older turns its shape, `show` and first line; in the `kept` turns with its
        head and tail lines too."""
        content = block.get("content")
        if not isinstance(content, str | list):
            return []
        notice = _read_notice(content)
        text = content_text(content)[len(notice) :].lstrip("\n")
        if stubs.is_stub(text):
            return []
        if not forced and _size(content) <= self.settings.tool_result_max_bytes:
            return []
        tool = self.calls.get(str(block.get("tool_use_id")), "tool")
        stub = notice + stubs.tool_output_stub(
            tool=tool,
            text=text,
            images=_images_of(content),
            failed=block.get("is_error") is True,
            reason=None,
            show=scope.show,
            settings=self.preview,
            short=self.settings.deep,
            first_only=self.settings.deep and not kept,
        )
        value: object = stub if isinstance(content, str) else [{"type": "text", "text": stub}]
        return [Edit((*base, "content"), value)]

    def input_edits(self, value: object, path: JsonPath, scope: Scope) -> list[Edit]:
        """The large values of a tool call's input, each keeping its JSON type; paths stay."""
        key = path[-1]
        if key in PATH_ARGUMENTS or _size(value) <= SMALL_ARGUMENT_BYTES:
            return []
        show, line_chars = scope.show, self.preview.line_chars
        deep = self.settings.deep
        if isinstance(value, str):
            if stubs.is_stub(value):
                return []
            if key == "command":
                limit = self.settings.bash_command_max_chars
                if len(value) <= limit:
                    return []
                return [Edit(path, stubs.command_stub(value, limit, show, short=deep))]
            return [Edit(path, stubs.argument_stub(str(key), value, show, line_chars, short=deep))]
        if isinstance(value, dict):
            return [
                edit
                for name, item in value.items()
                for edit in self.input_edits(item, (*path, name), scope)
            ]
        if isinstance(value, list):
            if all(isinstance(item, str) for item in value):
                if len(value) == 1 and stubs.is_stub(value[0]):
                    return []
                text = "\n".join(value)
                return [
                    Edit(path, [stubs.argument_stub(str(key), text, show, line_chars, short=deep)])
                ]
            # MultiEdit's edits, TodoWrite's todos: each item keeps its keys and its place.
            return [
                edit
                for index, item in enumerate(value)
                for edit in self.input_edits(item, (*path, index), scope)
            ]
        return []

    def pruned_output_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """The tool results of a user line, whatever their size; the renderer's copy
        (`toolUseResult`), text, images a person pasted and ids stay."""
        message = message_of(entry)
        if message is None or entry.get("type") != "user":
            return []
        edits: list[Edit] = []
        for index, block in enumerate(_blocks(message)):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                base: JsonPath = ("message", "content", index)
                edits.extend(self.tool_result_edits(block, base, scope, forced=True))
        return edits

    def kept_large_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Deep, in the kept turns: tool results and tool-call inputs over
        `deep_kept_max_bytes`; everything else there stays byte for byte."""
        message = message_of(entry)
        if message is None:
            return []
        limit = self.settings.deep_kept_max_bytes
        edits: list[Edit] = []
        for index, block in enumerate(_blocks(message)):
            if not isinstance(block, dict):
                continue
            base: JsonPath = ("message", "content", index)
            kind = block.get("type")
            if kind == "tool_result" and _size(block.get("content")) > limit:
                edits.extend(self.tool_result_edits(block, base, scope, forced=True, kept=True))
            elif kind == "tool_use" and _size(block.get("input")) > limit:
                edits.extend(self.input_edits(block.get("input"), (*base, "input"), scope))
        return edits

    def ui_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """What only the renderer reads, in any turn: `toolUseResult`, a progress line's data."""
        kind = entry.get("type")
        if kind == "user" and entry.get("toolUseResult") is not None:
            return _shrink_ui(entry["toolUseResult"], ("toolUseResult",), self.ui_stub(scope))
        if kind == "progress" and isinstance(entry.get("data"), dict):
            return _shrink_ui(entry["data"], ("data",), self.ui_stub(scope))
        return []

    def ui_stub(self, scope: Scope) -> StubText:
        short = self.settings.deep

        def stub_text(path: JsonPath, text: str, images: list[tuple[str, int]]) -> str:
            return stubs.ui_value_stub(_path_name(path), text, images, scope.show, short=short)

        return stub_text


class ClaudeDeepPayloads:
    """Deep, in older turns: the stubs of what a person pasted and of what attachment lines
    sent the model, both long since answered. The tool payloads are `ClaudePayloads`'s."""

    def __init__(self, settings: CompressSettings, preview: PreviewSettings) -> None:
        self.settings = settings
        self.preview = preview  # `ClaudePayloads`'s, cut short under deep

    def user_text_edits(self, message: dict[str, Any], scope: Scope) -> list[Edit]:
        """Deep, in older turns: text over `deep_kept_max_bytes` that a person pasted (or a
        command printed) becomes its head and the `show` command; the model answered it
        long ago. A compaction summary (what Claude Code resumes from) is never stubbed."""
        limit, preview = self.settings.deep_kept_max_bytes, self.preview
        content = message.get("content")
        if isinstance(content, str):
            if _size(content) <= limit or stubs.is_stub(content):
                return []
            return [
                Edit(("message", "content"), stubs.user_text_stub(content, scope.show, preview))
            ]
        edits: list[Edit] = []
        for index, block in enumerate(_blocks(message)):
            if not isinstance(block, dict) or block.get("type") != "text":
                continue
            text = block.get("text")
            if isinstance(text, str) and _size(text) > limit and not stubs.is_stub(text):
                path: JsonPath = ("message", "content", index, "text")
                edits.append(Edit(path, stubs.user_text_stub(text, scope.show, preview)))
        return edits

    def attachment_edits(self, attachment: object, scope: Scope) -> list[Edit]:
        """Deep, in older turns: what Claude Code sends the model from an attachment line,
        long since answered. A file it read for the prompt becomes a tool output's stub; an
        edited file's snippet, a skill listing and a hook's output over
        `tool_result_max_bytes`, and a message queued while it worked over
        `deep_kept_max_bytes` (what a person typed), become their first lines and `show`."""
        if not isinstance(attachment, dict):
            return []
        kind, base = attachment.get("type"), ("attachment",)
        preview, limit = self.preview, self.settings.tool_result_max_bytes
        content = attachment.get("content")
        if kind == "file" and isinstance(content, dict):
            file = content.get("file")
            body = file.get("content") if isinstance(file, dict) else None
            if not isinstance(body, str) or _size(body) <= limit or stubs.is_stub(body):
                return []
            name = call_descriptor("Read", {"file_path": attachment.get("filename")})
            stub = stubs.tool_output_stub(
                tool=name,
                text=body,
                images=[],
                failed=False,
                reason=None,
                show=scope.show,
                settings=preview,
                first_only=True,
            )
            return [Edit((*base, "content", "file", "content"), stub)]
        key = {"edited_text_file": "snippet", "queued_command": "prompt"}.get(str(kind), "content")
        if kind == "queued_command":
            limit = self.settings.deep_kept_max_bytes
        elif not (kind in ("edited_text_file", "skill_listing") or str(kind).startswith("hook_")):
            return []
        value = attachment.get(key)
        if not isinstance(value, str) or _size(value) <= limit or stubs.is_stub(value):
            return []
        return [Edit((*base, key), stubs.user_text_stub(value, scope.show, preview))]


# Claude Code's file tools whose calls it reads back into its record of read files.
RECORDED_TOOLS = frozenset({"Read", "Write", "Edit"})
# Up to this many bytes, the newest Write of a file stays whole: the note a stub brings pastes
# up to 8,192 characters of the file (16,384 over all files), about what the Write costs.
# 0 stubs every Write as before.
WRITE_KEPT_MAX_BYTES = 8192


class ClaudeWrites:
    """The Write calls whose content stays whole, in any turn (pass 1 finds them).

    On resume, `claude` (2.1.332) rebuilds its record of the files the model has seen from the
    newest successful Read, Write or Edit of each path; for a Write, the record is the call's
    `input.content`, dated by its result's line. A file whose mtime is newer than that (every
    file after a fresh clone) and whose text differs then gets a note that it "changed on
    disk" with its changed lines (written into the transcript, so once per resumed copy). A
    stub in that content made such a note false and pasted the whole file. No stub of it
    avoids the record (only another path, an error result or another host would), so the
    newest Write of a path stays whole up to `WRITE_KEPT_MAX_BYTES`; a larger one keeps its
    stub, whose note costs less than the file. Read records are never compared with the file,
    Edit records are read from the file itself, and nothing else is recorded."""

    def __init__(self) -> None:
        self._calls: dict[str, tuple[str, str]] = {}  # tool_use id -> (tool, path)
        self._newest: dict[str, str | None] = {}  # path -> the call of its newest record
        self._kept: frozenset[str] | None = None

    def observe(self, entry: Entry) -> None:
        self._kept = None
        kind = entry.get("type")
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            metadata = entry.get("compactMetadata")
            if not (isinstance(metadata, dict) and metadata.get("preservedSegment")):
                self._newest.clear()  # resume reads nothing before it
            return
        if kind == "attachment":  # a note of a changed file is a newer record of it
            attachment = entry.get("attachment")
            if isinstance(attachment, dict) and attachment.get("type") == "edited_text_file":
                filename = attachment.get("filename")
                if isinstance(filename, str) and isinstance(attachment.get("rereadEntry"), dict):
                    self._newest[filename] = None
            return
        message = message_of(entry)
        if message is None:
            return
        for block in _blocks(message):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") in RECORDED_TOOLS:
                name, path = str(block.get("name")), _written_path(block.get("input"))
                if isinstance(block.get("id"), str) and path is not None:
                    self._calls[block["id"]] = (name, path)
            elif block.get("type") == "tool_result" and block.get("is_error") is not True:
                call = self._calls.get(str(block.get("tool_use_id")))
                if call is not None and (call[0] != "Read" or _recorded_read(block)):
                    self._newest[call[1]] = str(block.get("tool_use_id"))

    def kept(self) -> frozenset[str]:
        if self._kept is None:
            self._kept = frozenset(call for call in self._newest.values() if call is not None)
        return self._kept

    def spare(self, entry: Entry, edits: list[Edit]) -> list[Edit]:
        """`edits` without those inside the input of a Write this rule keeps whole."""
        message = message_of(entry)
        if not edits or message is None or entry.get("type") != "assistant" or not self.kept():
            return edits
        blocks = _blocks(message)
        spared = {
            index
            for index, block in enumerate(blocks)
            if isinstance(block, dict)
            and block.get("type") == "tool_use"
            and block.get("name") == "Write"
            and block.get("id") in self.kept()
            and _size(block.get("input")) <= WRITE_KEPT_MAX_BYTES
        }
        if not spared:
            return edits
        return [
            edit
            for edit in edits
            if not (
                edit.path[:2] == ("message", "content")
                and len(edit.path) > 3
                and edit.path[2] in spared
                and edit.path[3] == "input"
            )
        ]


def _written_path(arguments: object) -> str | None:
    """The path a file tool's input names (`path` is read as `file_path`, as Claude Code
    does); None for a Write without text, which Claude Code does not record."""
    if not isinstance(arguments, dict):
        return None
    if not isinstance(arguments.get("content", ""), str):
        return None
    path = arguments.get("file_path", arguments.get("path"))
    return path if isinstance(path, str) else None


# Read results Claude Code does not record (the file was unchanged, or the result removed):
# the record of that path is then an older call's.
UNRECORDED_READ_HEADS = (
    "File unchanged since last read.",
    "Wasted call \u2014 file unchanged since your last Read.",
    "<system-reminder>This file is already in your context",
    "[This call's result was here when the call ended. It was removed later,",
)


def _recorded_read(block: dict[str, Any]) -> bool:
    content = block.get("content")
    return isinstance(content, str) and not content.startswith(UNRECORDED_READ_HEADS)


class ClaudeRules:
    """Claude Code's rules for one file (`FileRules`): pass 1 is `ClaudeTurns`, the stub of
    each payload `ClaudePayloads` and `ClaudeDeepPayloads`; here, which stubs each line gets
    in each scope."""

    def __init__(self, settings: CompressSettings) -> None:
        self.settings = settings
        self.turns = ClaudeTurns(settings)
        self.payloads = ClaudePayloads(settings, self.turns.calls)
        self.deep_payloads = ClaudeDeepPayloads(settings, self.payloads.preview)
        self.writes = ClaudeWrites()

    def observe(self, number: int, entry: Entry) -> bool:
        self.writes.observe(entry)
        return self.turns.observe(number, entry)

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        return self.turns.preserved_thinking_span()

    def edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        return self.writes.spare(entry, self._edits(entry, scope))

    def _edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        if scope.superseded:  # never sent nor read: `superseded_edits` says it all
            return []
        if self.turns.in_bound_prefix(scope.number):
            # Claude Code sends every turn's thinking back: a stub here would change the
            # prefix of a bound block, and the API refuses the request. Only what no model
            # sees may go (and, under deep, what the core finds it never sends again).
            if not (scope.full or scope.ui_only):
                return []
            edits = self.payloads.ui_edits(entry, scope)
            if scope.full:
                edits.extend(_usage_edits(entry, self.settings.deep))
            return [Edit(e.path, e.value, unseen=True) for e in edits]
        if scope.ui_only:
            edits = self.payloads.ui_edits(entry, scope)
            if scope.kept_large:
                edits.extend(self.payloads.kept_large_edits(entry, scope))
                message = message_of(entry)
                # Thinking of the kept turns: see `drops_kept_thinking`.
                if message is not None and self.turns.drops_kept_thinking(scope.number):
                    edits.extend(thinking_edits(self.turns, message, scope.number))
            return edits
        kind = entry.get("type")
        scope = self._older(entry, scope)
        if not scope.full:  # a budget policy chose this line's tool output: only that
            return self.payloads.pruned_output_edits(entry, scope) if scope.prune else []
        if kind == "assistant":
            return self._assistant_edits(entry, scope)
        if kind == "user":
            return self._user_edits(entry, scope)
        if kind == "progress" and isinstance(entry.get("data"), dict):
            return _shrink_ui(entry["data"], ("data",), self.payloads.ui_stub(scope))
        if kind == "attachment" and self.settings.deep:
            return self.deep_payloads.attachment_edits(entry.get("attachment"), scope)
        return []

    def _older(self, entry: Entry, scope: Scope) -> Scope:
        """Deep, in older turns: stubs name the line's uuid alone (`show` finds it in every
        session), not the session's path too; the kept turns' stubs keep the path."""
        uuid = entry.get("uuid")
        if not self.settings.deep or not isinstance(uuid, str):
            return scope
        show = stubs.show_command("", uuid, ids_alone=True)
        return scope if show == scope.show else dataclasses.replace(scope, show=show)

    def superseded_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Before the newest compact boundary, off the chain Claude Code sends, what an older
        turn loses (thinking whole, large outputs, calls and UI copies), and every other
        string of messages, tool results, attachments and progress data over
        `UNREAD_MIN_BYTES`: each a stub of its shape alone (no model reads them, and `show`
        finds the line by its uuid). Ids, links, types and flags stay (the chain is still
        walked, the preserved segment relinked), and so do the lines Claude Code reads for
        itself: `summary` and title lines (its session picker), file-history snapshots
        (rewind), and each reply's model and usage counts (its usage totals)."""
        if entry.get("type") not in SUPERSEDED_TYPES:
            return []
        older = dataclasses.replace(scope, superseded=False)
        now = _applied(entry, [_unread(entry, edit) for edit in self.edits(entry, older)])
        rest = {key: value for key, value in now.items() if key not in SEALED_KEYS}
        now = _applied(now, superseded_edits(rest, (), scope.show, KEPT_ON_SUPERSEDED, short=True))
        # Whole top-level values: an edit inside a content array whose thinking went would
        # name an index of the original that no longer holds it.
        return [Edit((key,), value) for key, value in now.items() if value != entry.get(key)]

    def _assistant_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        message = message_of(entry)
        if message is None:
            return []
        usage = _usage_edits(entry, self.settings.deep)
        dropped = thinking_edits(self.turns, message, scope.number)
        if dropped:
            # Whole blocks go (never edited); the tool calls left keep their size for now.
            return usage + dropped
        edits: list[Edit] = []
        for index, block in enumerate(_blocks(message)):
            if not isinstance(block, dict):
                continue
            base: JsonPath = ("message", "content", index)
            kind = block.get("type")
            # Thinking is never edited (deep drops a readable one whole, above). Signed
            # thinking is checked by the API; unsigned thinking (a third-party model) is sent
            # back as it is, and stub text there would reach the model as its own thoughts,
            # while an emptied block is sent empty.
            if kind == "tool_use":
                arguments = block.get("input")
                if isinstance(arguments, dict) and (
                    _size(arguments) > self.settings.tool_call_max_bytes
                ):
                    edits.extend(self.payloads.input_edits(arguments, (*base, "input"), scope))
        # Alone, a trimmed usage must save more than the marker it brings costs.
        if edits or (usage and _size(message["usage"]) - _size(usage[0].value) > USAGE_ALONE_MIN):
            edits.extend(usage)
        return edits

    def _user_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        edits: list[Edit] = []
        message = message_of(entry)
        if message is not None:
            # Every old image becomes a text block: a tool's (on tool result and isMeta
            # lines) always, a person's pasted one unless keepUserImages.
            typed = is_turn_start(entry)
            strip_images = not (typed and self.settings.keep_user_images)
            for index, block in enumerate(_blocks(message)):
                if not isinstance(block, dict):
                    continue
                base: JsonPath = ("message", "content", index)
                if block.get("type") == "tool_result":
                    edits.extend(
                        self.payloads.tool_result_edits(block, base, scope, forced=scope.prune)
                    )
                elif block.get("type") == "image" and strip_images:
                    ((mime, size),) = _images_of([block])
                    stub = stubs.image_stub("User" if typed else "Tool", mime, size, scope.show)
                    edits.append(Edit(base, {"type": "text", "text": stub}))
        if message is not None and self.settings.deep and not entry.get("isCompactSummary"):
            edits.extend(self.deep_payloads.user_text_edits(message, scope))
        result = entry.get("toolUseResult")
        if result is not None:
            edits.extend(_shrink_ui(result, ("toolUseResult",), self.payloads.ui_stub(scope)))
        return edits


# The counts of a reply's `usage` that Claude Code reads from a transcript.
USAGE_READ = frozenset(
    {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
)

USAGE_ALONE_MIN = 100  # bytes a trimmed usage saves before it is worth a line's marker


def _usage_edits(entry: Entry, deep: bool) -> list[Edit]:
    """Deep, in older turns: a reply's `usage` keeps the four counts Claude Code reads
    back from a transcript (its context size walks back to the newest reply's; its
    session total adds input, cache and output tokens); the rest (cache breakdown, tier,
    geography, iterations) is read by no CLI and never sent to a model."""
    message = message_of(entry)
    usage = None if message is None else message.get("usage")
    if not deep or entry.get("type") != "assistant" or not isinstance(usage, dict):
        return []
    kept = {key: value for key, value in usage.items() if key in USAGE_READ}
    return [] if len(kept) == len(usage) else [Edit(("message", "usage"), kept)]


# Deep: the lines whose strings go when the chain Claude Code sends no longer reaches them,
# and the members that stay there (settings and places, short or read by the CLI).
SUPERSEDED_TYPES = frozenset({"user", "assistant", "progress", "attachment"})
KEPT_ON_SUPERSEDED = frozenset({"cwd", "gitBranch", "version", "slug", "model", "usage"})


def _unread(entry: Entry, edit: Edit) -> Edit:
    """`edit` with each stub in its value made the shape alone of what it replaces."""
    original: Any = entry
    for step in edit.path:
        original = original[step]
    if isinstance(original, str):
        short = stubs.unread_stub(original)
    else:
        short = f"{stubs.STUB_PREFIX} {_size(original):,} bytes"

    def shorten(value: Any) -> Any:
        if isinstance(value, str):
            return short if stubs.STUB_PREFIX in value else value
        if isinstance(value, dict):
            return {key: shorten(item) for key, item in value.items()}
        if isinstance(value, list):
            return [shorten(item) for item in value]
        return value

    return Edit(edit.path, shorten(edit.value), unseen=edit.unseen)


def _applied(value: Any, edits: list[Edit]) -> Any:
    """A copy of `value` with each edit's stub at its path."""
    copy = orjson.loads(orjson.dumps(value))
    for edit in edits:
        *parents, last = edit.path
        target = copy
        for step in parents:
            target = target[step]
        target[last] = edit.value
    return copy


def _holds_bound_thinking(message: dict[str, Any]) -> bool:
    """Whether a reply holds signed thinking from a model with preserved thinking."""
    return binds_prefix(message.get("model")) and any(
        isinstance(block, dict)
        and (
            (block.get("type") == "thinking" and is_signed(block))
            or (block.get("type") == "redacted_thinking" and bool(block.get("data")))
        )
        for block in _blocks(message)
    )


THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def _thinking_only(message: dict[str, Any]) -> bool:
    """Whether a message's content is thinking blocks alone."""
    blocks = message.get("content")
    return (
        isinstance(blocks, list)
        and bool(blocks)
        and all(isinstance(block, dict) and block.get("type") in THINKING_TYPES for block in blocks)
    )


# Claude Code opens a Read result cut at its token cap with this notice and, on resume, adds
# a message of its own saying so to any such result whose text does not open with it.
READ_NOTICE_HEAD = "<system-reminder>[Truncated: PARTIAL view \u2014 "
READ_NOTICE_END = "</system-reminder>"


def _read_notice(content: object) -> str:
    """Claude Code's partial-view notice that opens a tool result's text, or ''."""
    if not isinstance(content, str) or not content.startswith(READ_NOTICE_HEAD):
        return ""
    end = content.find(READ_NOTICE_END)
    return "" if end < 0 else content[: end + len(READ_NOTICE_END)] + "\n"


def _holds_tool_result(entry: Entry) -> bool:
    message = message_of(entry)
    return message is not None and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in _blocks(message)
    )


def is_turn_start(entry: Entry) -> bool:
    """What a person typed: a user line, not meta, not a compaction summary, holding a
    string or text/image blocks and no tool result."""
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
        return False
    message = message_of(entry)
    if message is None:
        return False
    content = message.get("content")
    if isinstance(content, str):
        return True
    if not isinstance(content, list):
        return False
    kinds = {block.get("type") for block in content if isinstance(block, dict)}
    return bool(kinds & {"text", "image"}) and "tool_result" not in kinds


def _is_claude_line(entry: Entry) -> bool:
    kind = entry.get("type")
    if kind in CHAIN_TYPES:
        return "parentUuid" in entry and "uuid" in entry
    if kind == "summary":
        return "leafUuid" in entry
    if kind == "file-history-snapshot":
        return "snapshot" in entry
    # Lines of the session's own state, which may come first in a file (or be all of it).
    if kind in CLAUDE_ONLY_STATE_TYPES:
        return True
    return kind in SESSION_STATE_TYPES and "sessionId" in entry


def _ui_measure(value: object) -> tuple[int, int]:
    """(bytes of stubs, bytes of the rest) of renderer-only data."""
    if isinstance(value, str):
        return (_size(value), 0) if stubs.is_stub(value) else (0, _size(value))
    stub_bytes = 0
    if isinstance(value, dict):
        stub_bytes = sum(_ui_measure(item)[0] for item in value.values())
    elif isinstance(value, list):
        stub_bytes = sum(_ui_measure(item)[0] for item in value)
    return stub_bytes, _sized(value) - stub_bytes


class ClaudeFormat(FormatBase):
    name = "claude"
    title = TITLES[name]

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        from gitclaw_compress.formats.claude.home import home

        return home(environ)

    # Not for Claude Code: with the bare uuid in the kept turn's UI-copy stubs, its detailed
    # transcript view of a corpus file (ctrl+o) no longer reached the last prompt
    # (tests/test_agent_resume.py); with the path it does.
    stubs_name_ids_alone = False
    # view, resume, pruning and summary_record are built and checked against the real CLI;
    # the layers above read them once they go through the format interface.
    kinds: tuple[str, ...] = (
        "tool_result text",
        "tool_result images",
        "tool_use input",
        "toolUseResult",
        "progress",
        "thinking text",
        "thinking signatures",
        "user text",
        "user images",
        "assistant text",
    )

    # Where Claude Code's transcripts are committed: a ~/.claude/projects, subagent files,
    # Entire's checkpoints.
    globs: tuple[str, ...] = (
        ".claude/projects/**/*.jsonl",
        "**/subagents/agent-*.jsonl",
        "*/*/*/full.jsonl",
    )

    def views(self, lines: Iterable[RawLine]) -> Iterator[EntryView]:
        names: dict[str, str] = {}  # tool names by call id, for the results that follow
        for number, entry, glued in claude_view.parsed(lines):
            turn_start = not glued and is_turn_start(entry)
            yield claude_view.view_entry(number, entry, turn_start=turn_start, names=names)
            names.update(claude_view.tool_names(entry))

    def view(self, number: int, entry: Entry) -> EntryView:
        return claude_view.view_entry(number, entry, turn_start=is_turn_start(entry), names={})

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        return claude_context.resume(views)

    def lifecycle_hook(self) -> LifecycleHook:
        from gitclaw_compress.formats.claude.hooks import HOOK

        return HOOK

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        return claude_summary.summary_lines(lines, list(self.views(lines)), request)

    def measure(self, entry: Entry) -> Iterator[tuple[str, int]]:
        kind = entry.get("type")
        if kind == "progress":
            stub_bytes, rest = _ui_measure(entry.get("data"))
            yield "stubs", stub_bytes
            yield "progress", rest
            return
        if "toolUseResult" in entry:
            stub_bytes, rest = _ui_measure(entry["toolUseResult"])
            yield "stubs", stub_bytes
            yield "toolUseResult", rest
        message = message_of(entry)
        if message is None:
            return
        content = message.get("content")
        if isinstance(content, str):
            yield f"{kind} text", _size(content)
            return
        for block in _blocks(message):
            if isinstance(block, dict):
                yield from _measure_block(str(kind), block)

    def recognize(self, entries: Sequence[Entry]) -> bool:
        # Claude Code's links are `uuid`/`parentUuid`/`leafUuid`: no other format has them.
        return any(_is_claude_line(entry) for entry in entries)

    def check(self, first: RawLine | None, source: str) -> None:
        # No header to check: every line stands alone, and Claude Code skips lines it cannot
        # read (since 2.1.121), which the core passes through untouched.
        return None

    def is_turn_start(self, entry: Entry) -> bool:
        return is_turn_start(entry)

    def entry_id(self, entry: Entry) -> str | None:
        entry_id = entry.get("uuid")
        return entry_id if isinstance(entry_id, str) else None

    def rules(self, settings: CompressSettings) -> ClaudeRules:
        return ClaudeRules(settings)

    def sealed(self, entry: Entry) -> Iterator[tuple[str, Any]]:
        for key in SEALED_KEYS:
            if key in entry:
                yield key, entry[key]
        result = entry.get("toolUseResult")
        if isinstance(result, dict):
            for key in ("type", "filePath"):
                if key in result:
                    yield f"toolUseResult.{key}", result[key]
            file = result.get("file")
            if isinstance(file, dict) and "filePath" in file:
                yield "toolUseResult.file.filePath", file["filePath"]
        data = entry.get("data")
        if isinstance(data, dict) and "type" in data:
            yield "data.type", data["type"]
        message = message_of(entry)
        if message is None:
            return
        for key in ("id", "role", "model", "stop_reason"):
            if key in message:
                yield f"message.{key}", message[key]
        usage = message.get("usage")
        if isinstance(usage, dict):  # deep keeps only the counts Claude Code reads
            for key in sorted(USAGE_READ & usage.keys()):
                yield f"message.usage.{key}", usage[key]
        elif "usage" in message:
            yield "message.usage", usage
        content = message.get("content")
        if isinstance(content, str):
            yield "message.content", content
        yield from _sealed_blocks(str(entry.get("type")), _blocks(message))

    # Signed thinking is sealed; `data` (redacted_thinking, base64 images) holds no typed text.
    secret_free_keys = frozenset(
        (
            "uuid",
            "parentUuid",
            "logicalParentUuid",
            "leafUuid",
            "sessionId",
            "requestId",
            "id",
            "tool_use_id",
            "signature",
            "data",
        )
    )
    secret_sealed_keys = frozenset(("thinking",))


def _sealed_blocks(kind: str, content: list[Any]) -> Iterator[tuple[str, Any]]:
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        name = f"content[{index}]"
        block_type = block.get("type")
        if kind == "assistant" or block_type == "tool_result":  # an image may become text
            yield f"{name}.type", block_type
        if block_type == "text" and not stubs.is_stub(block.get("text")):
            yield f"{name}.text", block.get("text")
        elif block_type == "tool_use":
            yield f"{name}.id", block.get("id")
            yield f"{name}.name", block.get("name")
        elif block_type == "tool_result":
            yield f"{name}.tool_use_id", block.get("tool_use_id")
            yield f"{name}.is_error", block.get("is_error")
        elif block_type == "thinking":
            yield f"{name}.thinking", block.get("thinking")
            yield f"{name}.signature", block.get("signature")
        elif block_type == "redacted_thinking":
            yield f"{name}.data", block.get("data")


def _measure_block(kind: str, block: dict[str, Any]) -> Iterator[tuple[str, int]]:
    block_type = block.get("type")
    if block_type == "text":
        text = block.get("text")
        yield ("stubs" if stubs.is_stub(text) else f"{kind} text"), _sized(text)
    elif block_type == "image":
        yield "user images", _sized(block.get("source"))
    elif block_type == "thinking":
        thought = block.get("thinking")
        yield ("stubs" if stubs.is_stub(thought) else "thinking text"), _sized(thought)
        yield "thinking signatures", _sized(block.get("signature"))
    elif block_type == "redacted_thinking":
        yield "thinking signatures", _sized(block.get("data"))
    elif block_type == "tool_use":
        stub_bytes, rest = _ui_measure(block.get("input"))
        yield "stubs", stub_bytes
        yield "tool_use input", rest
    elif block_type == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            yield ("stubs" if stubs.is_stub(content) else "tool_result text"), _size(content)
            return
        for item in content if isinstance(content, list) else []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "image":
                yield "tool_result images", _sized(item.get("source"))
            elif stubs.is_stub(item.get("text")):
                yield "stubs", _size(item)
            else:
                yield "tool_result text", _size(item)


FORMAT = ClaudeFormat()
