"""The neutral view of a transcript: what an agent sends its model, in words no format owns.

Every format module turns its own lines into these (`Format.view`) and says which of them its
agent sends when it resumes (`Format.resume`). Every layer above the formats (tokens, status,
context, prune, summaries, `show`) reads only these. A leaf: imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# Part kinds
TEXT = "text"
THINKING = "thinking"  # the model's reasoning, readable or sealed
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
IMAGE = "image"

# Message roles, as the model's API sees them
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"  # a tool's output (some APIs carry it in a user message; the view does not)
SYSTEM = "system"  # instructions or context the agent injects
SUMMARY = "summary"  # a compaction summary the agent resumes from

# Entry kinds
MESSAGE = "message"  # gives the model one or more messages when it is sent
COMPACTION = "compaction"  # a compaction record: the agent resumes from it
META = "meta"  # bookkeeping the model never sees (a model change still sets `model`)

# What a tool call does to a file (`Part.effect`), for the facts of a summary
READ = "read"
WRITE = "write"  # creates or overwrites the whole file
EDIT = "edit"  # changes part of it

# Keys of `SummaryRequest.details` a format writes into its record where its agent has a place
READ_FILES = "read_files"  # list[str]: files read and never modified
MODIFIED_FILES = "modified_files"  # list[str]: files written or edited
SUMMARY_META = "meta"  # dict: how this tool made the summary (round, mode, provider, model)


@dataclass(slots=True)
class Part:
    """One piece of a message."""

    kind: str  # TEXT, THINKING, TOOL_CALL, TOOL_RESULT or IMAGE
    text: str = ""  # the text; a call's arguments as compact JSON; a result's text
    name: str | None = None  # the tool of a call or a result, where known
    call_id: str | None = None  # pairs a call with its result
    sealed: bool = False  # signed thinking or encrypted reasoning: never edited
    error: bool = False  # a tool result that reports a failure
    media_type: str | None = None  # IMAGE: "image/png", …
    size: int = 0  # IMAGE: bytes of its encoded data
    # Added with the layers (optional, defaults keep every format valid without them):
    complete: bool = True  # TOOL_RESULT: the tool finished (False: partial, never pruned)
    path: str | None = None  # TOOL_CALL: the file it reads or changes, where known
    effect: str | None = None  # TOOL_CALL on `path`: READ, WRITE or EDIT
    # TOOL_CALL that touches several files (a patch): every (file, effect), `path` first.
    files: tuple[tuple[str, str], ...] = ()
    # THINKING bound to everything sent before it (preserved thinking): the provider refuses
    # it once anything before it changed, a summary in front of it included.
    bound: bool = False

    def touched(self) -> tuple[tuple[str, str], ...]:
        """Every (file, effect) of a call: `files`, or `path` and `effect` alone."""
        if self.files:
            return self.files
        return ((self.path, self.effect),) if self.path and self.effect else ()


@dataclass(slots=True)
class Message:
    """One message as the model receives it."""

    role: str  # USER, ASSISTANT, TOOL, SYSTEM or SUMMARY
    parts: list[Part]
    line: int  # the line it comes from (the first, where the agent merges several)
    entry_id: str | None = None  # the id `show` finds that line by (None: `L<line>`)
    usage: int | None = None  # context tokens the provider recorded with this reply
    model: str | None = None
    lines: tuple[int, ...] = ()  # every line merged into it, where the agent merges lines
    tokens: int = 0  # estimated tokens: set by the token layer, never by a format
    # Added with the layers (optional):
    label: str | None = None  # the agent's own name of its kind, for people ("bashExecution")
    sent: bool = True  # False: in the agent's context, but dropped before the request
    failed: bool = False  # ASSISTANT: the request to the model failed (an error reply)
    error: str | None = None  # ASSISTANT with `failed`: the error the agent recorded

    def source_lines(self) -> tuple[int, ...]:
        return self.lines or (self.line,)


@dataclass(slots=True)
class EntryView:
    """One line of a transcript, in neutral terms."""

    number: int  # 1-based line number
    id: str | None  # the entry's own id, if it has one
    parent: str | None  # the link the agent's resume follows back (None: none or a root)
    kind: str  # MESSAGE, COMPACTION or META
    messages: list[Message] = field(default_factory=list)  # what it gives the model if sent
    model: str | None = None  # a model this line sets or reports
    turn_start: bool = False  # a person's message that starts a turn
    # Format-private links its own resume walk reads (a compaction's first kept entry, a
    # preserved segment's head and tail, …). Layers above the formats never read them.
    links: Mapping[str, str] = field(default_factory=dict)
    # Added with the layers (optional): what only the agent's UI shows, never sent to the
    # model (pi's `details` of a tool result), by its name, for `show` to print in full.
    ui: Mapping[str, object] = field(default_factory=dict)
    # The model's context window in tokens, where the line records it (Codex's
    # `model_context_window`, Copilot CLI's `tokenLimit`).
    context_window: int | None = None


@dataclass(slots=True)
class Conversation:
    """What the agent rebuilds from a file when it resumes: the messages it sends, in order."""

    messages: list[Message]
    path: list[int]  # the lines the resume walk reached, oldest first
    compaction: int | None = None  # the line of the record it resumes from, if any
    model: str | None = None  # the newest model on that path
    # The context window the agent recorded for that model, newest first; None: not recorded
    # (the token layer then takes the model's documented window).
    context_window: int | None = None


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a format needs to write its agent's own compaction record."""

    summary: str  # the text the agent resumes from
    first_kept: int  # line of the first entry kept after the summary
    leaf: int  # line of the newest entry on the resume path: the record follows it
    tokens_before: int  # the context's tokens before the summary
    timestamp: str  # ISO 8601 with milliseconds and Z, as the agents write it
    details: Mapping[str, object] = field(default_factory=dict)  # files read, modified, …
    # With nothing kept: copy the newest requests into the record, as the agent's own
    # compaction does (Codex; a format without that rule ignores this).
    copy_requests: bool = False


def call_names(views: Iterable[EntryView]) -> dict[str, str]:
    """The tool of every call, by its call id: a result's own line may not name its tool
    (Copilot CLI's results, and any single line of Claude Code or Codex, name none)."""
    return {
        part.call_id: part.name
        for view in views
        for message in view.messages
        for part in message.parts
        if part.kind == TOOL_CALL and part.call_id and part.name
    }
