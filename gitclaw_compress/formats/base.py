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
from typing import Protocol

from gitclaw_compress.core import jsonpieces, stubs
from gitclaw_compress.core.format import CoreFormat
from gitclaw_compress.core.format import Edit as Edit
from gitclaw_compress.core.format import FileRules as FileRules
from gitclaw_compress.core.format import Scope as Scope
from gitclaw_compress.core.format import Unsupported as Unsupported
from gitclaw_compress.core.format import with_superseded as with_superseded
from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.model import Conversation, EntryView, SummaryRequest

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


# What `scan` does with a string value (FormatBase.secret_scope).
SECRET_SCAN = "scan"  # text a person typed or a tool printed
SECRET_SKIP = "skip"  # cannot hold one: ids, signatures, encrypted reasoning, base64 images
SECRET_SEALED = "sealed"  # scanned, but editing it breaks the session (signed thinking)


class Format(CoreFormat, Protocol):
    """A format whole: what the core uses (`CoreFormat`), and how it is recognized,
    where its agent keeps sessions and hooks, what the secrets scan and summaries use."""

    def recognize(self, entries: Sequence[Entry]) -> bool:
        """Whether the first parsed lines of a file (up to `SNIFF_LINES`) are this format's."""

    def check(self, first: RawLine | None, source: str) -> None:
        """Raise GitClawError, naming `source` and the line, if the file cannot be touched."""

    globs: tuple[str, ...]  # where its agent leaves transcripts, relative to a repository

    def summary_record(self, lines: Sequence[RawLine], request: SummaryRequest) -> list[bytes]:
        """The lines (without newlines) of the agent's own compaction record, to append."""

    def secret_scope(self, path: JsonPath, value: str) -> str:
        """What `scan` does with a string value: SECRET_SCAN, SECRET_SKIP or SECRET_SEALED."""

    def home(self, environ: Mapping[str, str]) -> AgentHome:
        """Where the agent keeps its sessions on this machine, under `environ`."""

    def lifecycle_hook(self) -> LifecycleHook:
        """How the agent runs a command when a session ends (`install --agents`)."""


class LifecycleHook(Protocol):
    """Where and how an agent runs our `hook AGENT` command (formats/<agent>/hooks.py). These
    only turn a file's bytes into other bytes; ops/agenthooks/ reads, writes and restores."""

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
