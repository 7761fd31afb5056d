"""What the core needs of a format, declared where the core is, so that the core and tokens/
are handed a format and import none: the edits a format asks for (`Edit`) on a line the core
decided to touch (`Scope`), its per-file state (`FileRules`), the members of a format that
compressing and reading a context use (`CoreFormat`), and the one "not supported" error.
formats/base.py's `Format` extends `CoreFormat` with what the agent's home, hooks, secrets
scan and summaries need.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import Entry, RawLine
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.model import Conversation, EntryView
from gitclaw_compress.settings import CompressSettings


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


def with_superseded(edits: list[Edit], extra: list[Edit]) -> list[Edit]:
    """`edits`, and those of `extra` inside or around none of theirs."""

    def overlaps(a: JsonPath, b: JsonPath) -> bool:
        return a[: len(b)] == b or b[: len(a)] == a

    return edits + [e for e in extra if not any(overlaps(e.path, d.path) for d in edits)]


class CoreFormat(Protocol):
    """A format as the core and tokens/ use it: its name, its turns and ids, its rules,
    its sizes by kind, and the view and resume a context is read from."""

    name: str  # short and stable: config keys, JSON reports, counts ("pi", "claude", …)
    title: str  # for people: "pi", "Claude Code", …
    stubs_name_ids_alone: bool

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

    def views(self, lines: Iterable[RawLine]) -> Iterator[EntryView]:
        """The neutral view of every line the agent loads, in order (bad lines skipped)."""

    def view(self, number: int, entry: Entry) -> EntryView:
        """The neutral view of one parsed line."""

    def resume(self, views: Sequence[EntryView]) -> Conversation:
        """What the agent sends its model when it resumes a file of these views."""
