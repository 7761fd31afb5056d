"""The interface: what every agent format provides (`Format`) and its defaults (`FormatBase`).
The core and every layer above name no format's fields, only these.

An agent is a package beside this module (formats/<agent>/) whose rules.py holds one `FORMAT`
object that satisfies `Format`; what the agents' parts share is in formats/shared/. The core
reads a file in two passes (core/plan.py, then core/rewrite.py):

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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol

from gitclaw_compress.core.format import CoreFormat
from gitclaw_compress.core.format import Edit as Edit
from gitclaw_compress.core.format import FileRules as FileRules
from gitclaw_compress.core.format import Scope as Scope
from gitclaw_compress.core.format import Unsupported as Unsupported
from gitclaw_compress.core.format import with_superseded as with_superseded
from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.formats.shared.home import AgentHome
from gitclaw_compress.formats.shared.hooks import LifecycleHook
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


# What `scan` does with a string value (FormatBase.secret_scope).
SECRET_SCAN = "scan"  # text a person typed or a tool printed
SECRET_SKIP = "skip"  # cannot hold one: ids, signatures, encrypted reasoning, base64 images
SECRET_SEALED = "sealed"  # scanned, but editing it breaks the session (signed thinking)


SNIFF_LINES = 16  # parsed lines `recognize` sees at most


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

    def session_id(self, first: Entry) -> str | None:
        """The session's id, from its first line, when stubs name its lines by it
        (`show SESSION_ID L42`, for lines without ids of their own); else None."""


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

    def session_id(self, first: Entry) -> str | None:
        return None  # stubs name the session by its path

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
