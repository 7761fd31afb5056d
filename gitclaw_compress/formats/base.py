"""What every agent format provides. The core names no format's fields, only these.

A format is a module in this package with one `FORMAT` object that satisfies `Format`. The
core reads a file in two passes (see compress.py):

1. every line, in order: `Format.is_turn_start` finds the turns, and the format's
   `FileRules.observe` gathers what it needs later (tool names by call id, duplicate outputs,
   the newest settings line, …) and says whether the line can hold bulk at all;
2. every line the core decided to touch that can hold bulk: `FileRules.edits` says which
   JSON values to replace, and with what (every other line is copied through unparsed). The
   core splices those values over the original bytes, archives what they replaced, and
   appends the marker. It refuses an edit whose stub changes the JSON type.

A format never edits what its agent needs to resume: headers, ids, links, types, signed or
encrypted reasoning. It says so in `sealed`, which the contract tests check on every line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gitclaw_compress.core import jsonpieces, stubs
from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.model import Conversation, EntryView, SummaryRequest
from gitclaw_compress.settings import CompressSettings

# What people call each format, by its name. Here, not in the format modules, so that a line
# of counts needs no format loaded (a no-op `step` prints one).
TITLES: dict[str, str] = {
    "pi": "pi",
    "claude": "Claude Code",
    "codex": "Codex CLI",
    "copilot": "Copilot CLI",
}


def format_title(name: str) -> str:
    """ "Claude Code" for "claude"; a name no format has stays as it is."""
    return TITLES.get(name, name)


# Helpers the formats share (no format imports another).

# Tool arguments that name a place rather than hold content: never stubbed.
PATH_ARGUMENTS = frozenset({"path", "file_path", "filePath", "offset", "limit", "timeout"})
SMALL_ARGUMENT_BYTES = 160  # argument values up to this size are always kept
# Arguments that name a call's file, and those that say most about a call, in order.
FILE_ARGUMENTS = ("path", "file_path", "filePath")
DESCRIPTOR_ARGUMENTS = (*FILE_ARGUMENTS, "url", "pattern", "query", "command")


def json_size(value: object) -> int:
    """Bytes of a value as compact JSON: how sizes compare with the byte settings (a value
    holding a tool output of many MB is measured in pieces, not written out whole)."""
    return jsonpieces.json_size(value)


def json_size_if_present(value: object) -> int:
    """`json_size`, and 0 for a key that is absent (None), for `measure`."""
    return 0 if value is None else json_size(value)


def content_text(content: object) -> str:
    """The text of a message content: the string, or its text blocks joined by newlines."""
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


def call_descriptor(name: str, arguments: object) -> str:
    """A tool call in a few words, for the stub of its result: "read 'src/app.ts'"."""
    if isinstance(arguments, dict):
        for key in DESCRIPTOR_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                first = value.strip().split("\n", 1)[0]
                return f"{name} {stubs.cut(first, 80)!r}"
    return name


SUPERSEDED_MIN_BYTES = 160  # deep: shorter strings on a superseded line stay
# Deep, on a line its agent never sends again: objects of these types stay whole (a
# thinking block is never edited; signed or encrypted reasoning is the provider's).
WHOLE_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning", "compaction"})


def superseded_edits(
    value: object, path: JsonPath, show: str, keep_keys: frozenset[str] = frozenset()
) -> list[Edit]:
    """Deep: on a line before the agent's newest compaction record that its resume never
    sends, every string longer than `SUPERSEDED_MIN_BYTES` becomes a stub (still a string),
    except under `keep_keys` and inside objects whose `type` is in `WHOLE_TYPES`. Types,
    ids, links and flags are short, so they stay; so does every object and array shape."""
    if isinstance(value, str):
        if json_size(value) <= SUPERSEDED_MIN_BYTES or stubs.is_stub(value):
            return []
        key = next((step for step in reversed(path) if isinstance(step, str)), "value")
        stub = stubs.superseded_stub(key, value, show)
        # A stub no shorter than the value would only grow the line.
        return [Edit(path, stub)] if json_size(stub) < json_size(value) else []
    if isinstance(value, dict):
        if value.get("type") in WHOLE_TYPES:
            return []
        return [
            edit
            for key, item in value.items()
            if key not in keep_keys
            for edit in superseded_edits(item, (*path, key), show, keep_keys)
        ]
    if isinstance(value, list):
        return [
            edit
            for index, item in enumerate(value)
            for edit in superseded_edits(item, (*path, index), show, keep_keys)
        ]
    return []


def with_superseded(edits: list[Edit], extra: list[Edit]) -> list[Edit]:
    """`edits`, and those of `extra` inside or around none of theirs."""

    def overlaps(a: JsonPath, b: JsonPath) -> bool:
        return a[: len(b)] == b or b[: len(a)] == a

    return edits + [e for e in extra if not any(overlaps(e.path, d.path) for d in edits)]


# What `scan` does with a string value (FormatBase.secret_scope).
SECRET_SCAN = "scan"  # text a person typed or a tool printed
SECRET_SKIP = "skip"  # cannot hold one: ids, signatures, encrypted reasoning, base64 images
SECRET_SEALED = "sealed"  # scanned, but editing it breaks the session (signed thinking)


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the JSON value at `path` (from the line's top-level object) with `value`.

    `value` must have the JSON type of the value it replaces: a string stays a string, an
    array an array, an object an object. `unseen`: a value no model sees (a UI copy) on a
    line whose other values must stay for now (preserved thinking): a line with only such
    edits stays open to the rest of the format's edits on a later run.
    """

    path: JsonPath
    value: object
    unseen: bool = False


@dataclass(slots=True)
class Scope:
    """What the core decided for one line, and what a stub needs to say.

    Not frozen: the core makes one per line before the kept window, and a frozen dataclass
    takes three times as long to make (2.1 against 0.6 µs). Formats only read it."""

    number: int  # 1-based line number
    full: bool  # before the kept window: every compression of the format applies
    prune: bool  # a budget policy chose this line's tool output, wherever it is
    show: str  # the command that prints this line's original, for the stub text
    settings: CompressSettings
    # The first line of the kept window as the core decided it (by turns, or by a target):
    # a format that keeps lines written just before a turn start with that turn reads it here.
    window_start: int = 1 << 62
    # In the kept window with `stub_ui_copies` (or deep) on: only values no model ever sees
    # may go, and under deep the outputs and arguments over `deep_kept_max_bytes` too.
    ui_only: bool = False
    # Deep only: before the agent's newest compaction record, on a line its resume never
    # sends again: the format may also archive what its CLI does not read there.
    superseded: bool = False

    @property
    def kept_large(self) -> bool:
        """In the kept window under deep: outputs and arguments over `deep_kept_max_bytes`
        become stubs too (the one change deep makes to what the kept turns send)."""
        return self.ui_only and self.settings.deep


class FileRules(Protocol):
    """One format's state for one file during one run."""

    def observe(self, number: int, entry: Entry) -> bool:
        """Pass 1: see every parsed line in order (lines that do not parse are skipped).

        True when `edits` may replace a value on this line under some scope (before the
        window, pruned, or UI copies only); False promises it never does, and pass 2 then
        copies the line without parsing it again (a turn_start event, a settings line)."""

    def edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Pass 2: the values to replace on a line the core touches (none: keep it)."""

    def preserved_thinking_span(self) -> tuple[int, int] | None:
        """After pass 1: (first, last) lines the agent sends before its newest thinking block
        bound to its prefix (preserved thinking), where what the model sees stays byte for
        byte; None when nothing binds."""

    def superseded_edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        """Deep, pass 2, on a line of `scope.superseded` (its agent never sends it again):
        what else its CLI does not read there, beside `edits` (the core keeps the ones that
        do not overlap those). Usually `superseded_edits` of this module on the line's
        content, leaving what the CLI reads from such a line (settings, titles) whole."""


class Format(Protocol):
    name: str  # short and stable: config keys, JSON reports, counts ("pi", "claude", …)
    title: str  # for people: "pi", "Claude Code", …
    stubs_name_ids_alone: bool

    def recognize(self, entries: Sequence[Entry]) -> bool:
        """Whether the first parsed lines of a file (up to `SNIFF_LINES`) are this format's."""

    def check(self, first: RawLine | None, source: str) -> None:
        """Raise GitClawError, naming `source` and the line, if the file cannot be touched."""

    def is_turn_start(self, entry: Entry) -> bool:
        """Whether a line starts a turn: what a person typed, not a tool result."""

    def entry_id(self, entry: Entry) -> str | None:
        """The id `show` finds the line by; None when the line has none (then `L<number>`).
        A long random id (`stubs.findable_anywhere`: a uuid) is unique across sessions, so
        with `stubs_name_ids_alone` its stubs name it without the session's path."""

    def rules(self, settings: CompressSettings) -> FileRules:
        """Fresh per-file state for one run."""

    kinds: tuple[str, ...]  # the kinds of bytes `measure` reports, for `stats`

    def measure(self, entry: Entry) -> Iterable[tuple[str, int]]:
        """(kind, bytes) of the bulk of a line, for `stats`: a kind of `kinds`, or "stubs" for
        values that are stubs already (`stubs.is_stub`). The rest counts as metadata."""

    def sealed(self, entry: Entry) -> Iterable[tuple[str, Any]]:
        """(name, value) pairs that no compression may change: ids, links, types, signed or
        encrypted reasoning. The contract tests compare them before and after."""

    globs: tuple[str, ...]  # where its agent leaves transcripts, relative to a repository

    def views(self, lines: Iterable[RawLine]) -> Iterator[EntryView]:
        """The neutral view of every line the agent loads, in order (bad lines skipped)."""

    def view(self, number: int, entry: Entry) -> EntryView:
        """The neutral view of one parsed line."""

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        """What the agent sends its model when it resumes a file of these views."""

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        """The lines (without newlines) of the agent's own compaction record, to append."""

    def secret_scope(self, path: JsonPath, value: str) -> str:
        """What `scan` does with a string value: SECRET_SCAN, SECRET_SKIP or SECRET_SEALED."""

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        """Where the agent keeps its sessions on this machine, under `environ`."""

    def lifecycle_hook(self) -> LifecycleHook:
        """How the agent runs a command when a session ends (`install --agents`)."""


class LifecycleHook(Protocol):
    """Where and how an agent runs our `hook AGENT` command (formats/<agent>_hooks.py). These
    only turn a file's bytes into other bytes; ops/agenthooks.py reads, writes and restores."""

    event: str  # what runs it, for people: "SessionEnd hook", "notify program", …
    payload_on_stdin: bool  # else the agent passes its payload as the last argument

    def agent_folder(self, env: Mapping[str, str]) -> Path:
        """The agent's own folder (the agent is found when it exists)."""

    def hook_file(self, env: Mapping[str, str]) -> Path:
        """The file `add` writes."""

    def add(self, old: bytes | None, command: Sequence[str]) -> bytes:
        """The file with our hook running `command` (an argv), whatever ran before kept and
        chained; `old` None: there is no file. Raises GitClawError when it cannot."""

    def remove(self, text: bytes, created: bool) -> bytes | None:
        """The file without our hook (what it chained is back); None: delete it (`install`
        `created` it and nothing else is in it)."""

    def installed(self, text: bytes) -> list[str] | None:
        """The argv our hook in the file runs, or None when the file holds none of ours."""

    def session(self, payload: object) -> str:
        """The session a payload names, for the log: its id or file (never its messages)."""

    def blocked(self, text: bytes) -> str | None:
        """What in the file keeps the agent from running any hook, or None."""


def runs_our_hook(words: Sequence[str], agent: str) -> bool:
    """Whether an argv runs `gitclaw-compress hook AGENT` (any interpreter, or the script)."""
    return any(
        list(words[at : at + 2]) == ["hook", agent]
        and (words[at - 1] == "gitclaw_compress" or words[at - 1].endswith("gitclaw-compress"))
        for at in range(1, len(words) - 1)
    )


@dataclass(frozen=True, slots=True)
class AgentHome:
    """An agent's own store: the folder it keeps sessions in (the work tree of the archive
    the tool keeps elsewhere), its session files as globs relative to it, and the
    environment variable that chose the folder (None: the default)."""

    agent: str  # the format's name
    root: Path
    globs: tuple[str, ...]
    moved_by: str | None = None
    # A running agent: a word of its command line (the program's name, or its package's),
    # and the folder (relative to `root`) where it writes the sessions of its working
    # directory; its newest session there is the one it may be running. None: unknown.
    program: tuple[str, ...] = ()
    cwd_folder: Callable[[str], str] | None = None
    # Whether the agent holds its session open for its whole run (Codex) rather than opening
    # it for each append (the rest): where open files cannot be listed, no session of such
    # an agent is rewritten while one of its processes runs.
    keeps_open: bool = False
    # The ids of the processes that mark a session as theirs while they run (Copilot CLI's
    # `inuse.<pid>.hold` beside its events.jsonl); None: the agent leaves no such mark.
    holders: Callable[[Path], list[int]] | None = None
    # The variables that can name the store's folder, the agent's own first: a folder an
    # archive served is opened as the agent would see it with one of them set to it.
    folder_variables: tuple[str, ...] = ()


def home_folder(
    environ: Mapping[str, str], name: str | None, *default: str, tilde: bool = False
) -> tuple[Path, str | None]:
    """The folder the environment variable `name` names (a leading ~ expanded when the
    agent does, `tilde`), else `default` under the user's home; and the variable, if it
    chose."""
    home = user_home(environ)
    value = environ.get(name, "") if name else ""
    if not value:
        return Path(home, *default), None
    if tilde and (value == "~" or value.startswith(("~/", "~\\"))):
        value = home + value[1:]
    return Path(value), name


def user_home(environ: Mapping[str, str], windows: bool = os.name == "nt") -> str:
    """The home the agents use: HOME; on Windows `%USERPROFILE%` (Node's `os.homedir()` and
    Codex read it there, not HOME, which Git Bash sets too)."""
    if windows and environ.get("USERPROFILE"):
        return environ["USERPROFILE"]
    return environ.get("HOME") or os.path.expanduser("~")


class Unsupported(GitClawError):
    """A format that cannot do something says so here, and only here, in one line."""

    def __init__(self, title: str, ability: str, why: str, *, source: str | None = None) -> None:
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{title} transcripts: {ability} is not supported ({why})")
        self.title, self.ability, self.why, self.source = title, ability, why, source

    def at(self, source: str) -> Unsupported:
        """The same error, naming the file it was met in (once)."""
        if self.source is not None:
            return self
        return Unsupported(self.title, self.ability, self.why, source=source)


class FormatBase:
    """The defaults every format inherits: the whole interface, where each ability a format
    does not have raises `Unsupported` in one place, so that no caller tests for abilities."""

    name: str = ""
    title: str = ""
    globs: tuple[str, ...] = ()
    # Stubs name a uuid-like id without the session's path (`show ID` finds the session).
    stubs_name_ids_alone: bool = False

    def unsupported(self, ability: str, why: str = "not built yet") -> Unsupported:
        return Unsupported(self.title, ability, why)

    def views(self, lines: Iterable[RawLine]) -> Iterator[EntryView]:
        for line in lines:
            entry = parse_entry(line.data)
            if entry is not None:
                yield self.view(line.number, entry)

    def view(self, number: int, entry: Entry) -> EntryView:
        raise self.unsupported("reading the conversation")

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        raise self.unsupported("rebuilding what the agent resumes with")

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        raise self.unsupported("summarizing")

    def lifecycle_hook(self) -> LifecycleHook:
        raise self.unsupported("a hook when a session ends")

    secret_free_keys: frozenset[str] = frozenset()  # keys whose strings hold no secret
    secret_sealed_keys: frozenset[str] = frozenset()  # keys of signed or sealed text

    def secret_scope(self, path: JsonPath, value: str) -> str:
        """SECRET_SCAN, SECRET_SKIP or SECRET_SEALED for the string `value` at `path`."""
        # Called for every string the scan reads: the usual cases without a generator.
        key = path[-1] if path else ""
        if not isinstance(key, str):  # a list item: the key of the list, if any
            key = next((step for step in reversed(path) if isinstance(step, str)), "")
        if key in self.secret_free_keys or value.startswith("data:image/"):
            return SECRET_SKIP
        # The keys are strings, never equal to an index in the path.
        sealed = not self.secret_sealed_keys.isdisjoint(path)
        return SECRET_SEALED if sealed else SECRET_SCAN

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        raise self.unsupported("an agent store")


SNIFF_LINES = 16  # parsed lines `recognize` sees at most


# Which Anthropic models bind a thinking block to its prefix ("preserved thinking").
#
# From Claude Fable 5.1 on, a model with preserved thinking signs each thinking and
# redacted_thinking block it writes against everything before it in the request (the
# top-level `system` and `tools` and every earlier message, `cache_control` left out). When
# the block comes back and that prefix changed, the API refuses the request with a 400 ("The
# block is bound to a different conversation") or, with
# `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`, drops that block and every
# later one. Anthropic lists Claude Fable 5.2, Mythos 5.2, Fable 5.1, Mythos 5.1, Opus 5.5,
# Sonnet 5.5 and Haiku 5.5; Mythos 5.1 records the binding without checking it, but a model
# that checks reads its blocks, so they count. Earlier models (Claude 3, the 4 family,
# Opus/Sonnet/Fable/Mythos 5 and Mythos Preview) sign without binding. A model id that
# `binds_prefix` cannot place (a newer family, a gateway's alias) counts as binding: that is
# the side on which nothing is ever refused. See docs/preserved-thinking.md.

# claude-<family>-<major>[-<minor>], then a date or a provider's suffix; minor is one or
# two digits (an eight-digit date is not a version).
_NAMED = re.compile(r"claude-([a-z]+)-(\d{1,2})(?:-(\d{1,2}))?(?![0-9])")
# claude-3-5-sonnet-…, claude-3-opus-…, claude-2.1, claude-instant-1.2: all before binding.
_OLD = re.compile(r"claude-(?:[0-3](?:[-.]\d)?-[a-z]|[0-3](?:\.\d)?$|[0-3](?:\.\d)?[^0-9]|instant)")
FIRST_BINDING = (5, 1)


def binds_prefix(model: object) -> bool:
    """Whether a signed thinking block written by `model` is bound to its prefix."""
    if not isinstance(model, str) or not model:
        return True
    name = model.lower()
    if "mythos-preview" in name or _OLD.search(name):
        return False
    named = _NAMED.search(name)
    if named is None:
        return True
    version = (int(named.group(2)), int(named.group(3) or 0))
    return version >= FIRST_BINDING
