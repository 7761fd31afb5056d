"""Pass 2: rewrite the lines before the kept window (and the pruned ones) by splicing small
JSON values over large ones, and append the marker that undoes it: the path and object id of
each original value (v1), or the committed blob and line that hold the original line (v3,
one string; v2 was the same as a JSON object)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.format import Edit, Scope, with_superseded
from gitclaw_compress.core.jsonspan import JsonPath, locate, object_close, splice
from gitclaw_compress.core.lines import MARKER_KEY, Entry, RawLine
from gitclaw_compress.core.marker import (
    UI_ONLY_KEY,
    as_v3,
    intact_marker,
    is_ui_only,
    read_marker,
)
from gitclaw_compress.core.payload_form import stored_form
from gitclaw_compress.core.plan import SessionPlan
from gitclaw_compress.core.spans import (
    JSON_KIND,
    found_spans,
    json_kind,
    located_spans,
    parses_to,
    replaced,
)
from gitclaw_compress.core.stubs import encode_stub
from gitclaw_compress.settings import CompressSettings

MIN_SAVING_BYTES = 48  # a splice must save more than its share of the marker
MARKER_VERSION = 1  # the version of the markers with payloads; intact ones are v3 strings

ObjectId = Callable[[bytes], str]
IntactCommit = Callable[[RawLine], str | None]  # the commit where a line is intact, if any
# The id of a committed or staged blob of the session that holds the line byte for byte at
# the same line number, if any: the marker then references it instead of archiving payloads.
IntactBlob = Callable[[RawLine], str | None]


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
class Payload:
    oid: str
    data: bytes


class OutputLine(NamedTuple):
    """One line out of pass 2. A named tuple, not a frozen dataclass: pass 2 makes one per
    line, and most lines are copied unchanged (`_unchanged` makes those 10 times faster)."""

    line: RawLine
    payloads: tuple[Payload, ...] = ()
    original_size: int = 0  # set when the line was compressed
    reference: str | None = None  # the intact blob a v2/v3 marker names (no payloads then)

    @property
    def changed(self) -> bool:
        return bool(self.payloads) or self.reference is not None


def _unchanged(line: RawLine, _new: Any = tuple.__new__) -> OutputLine:
    """`OutputLine(line)` without the named tuple's Python constructor."""
    result: OutputLine = _new(OutputLine, (line, (), 0, None))
    return result


# The shortest marker member a compressed line gains: a line no longer than this can only
# grow, so pass 2 does not even parse it (a fifth of the lines of a Copilot CLI file).
SHORTEST_MARKER_BYTES = len(b',"' + MARKER_KEY.encode() + b'":') + min(
    len(orjson.dumps(marker))
    for marker in (
        {"v": 1, "sha256": "0" * 64, "size": 0, "parts": [{"path": [0], "oid": "0" * 40}]},
        intact_marker("0" * 40, 1, bytes(32), 0, 0),
    )
)


@dataclass(slots=True)
class _Splices:
    """The edits that are worth it on one line: byte ranges, marker parts, archived payloads."""

    pieces: list[tuple[int, int, bytes]] = field(default_factory=list)
    parts: list[dict[str, object]] = field(default_factory=list)
    payloads: list[Payload] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)


class _Splicer:
    """What pass 2 reads of its plan, and what it makes of a line's edits: the stubs
    spliced in, the payloads archived (unless an intact blob holds the line), the marker
    that undoes them. `_Rewriter` decides which lines get which edits."""

    def __init__(
        self,
        plan: SessionPlan,
        session_ref: str,
        settings: CompressSettings,
        object_id: ObjectId,
        intact_commit: IntactCommit | None,
        intact_blob: IntactBlob | None = None,
    ) -> None:
        self.plan = plan
        self.session_ref = session_ref
        self.settings = settings
        self.object_id = object_id
        self.intact_commit = intact_commit
        self.intact_blob = intact_blob
        self.show = stubs.ShowCommands(session_ref, ids_alone=plan.format.stubs_name_ids_alone)
        # Read once, not per line: pass 2 does not move the window or the pruned lines.
        self._window_start = plan.window_start
        self._pruned = plan.pruned
        self._superseded = plan.superseded
        self._ui_copies = settings.ui_copies
        self._entry_id = plan.format.entry_id
        self._bulk = plan.bulk if plan.bulk is not None else b""
        self._scanned = len(self._bulk)  # lines pass 1 saw (a line after them may hold bulk)

    def _edits(self, entry: Entry, scope: Scope) -> list[Edit]:
        edits = self.plan.rules.edits(entry, scope)
        if scope.superseded:
            edits = with_superseded(edits, self.plan.rules.superseded_edits(entry, scope))
        return edits

    def _splices(
        self, line: RawLine, edits: list[Edit], spans: dict[JsonPath, tuple[int, int]]
    ) -> _Splices:
        """The edits worth making, and where (`_archive` adds their payloads)."""
        data = line.data
        result = _Splices()
        for edit in edits:
            span = spans.get(edit.path)
            if span is None:
                continue
            start, end = span
            replacement = encode_stub(edit.value)
            # The original's kind from its first byte: no copy of it unless it is archived.
            kind = JSON_KIND.get(data[start], "number") if end > start else ""
            if json_kind(replacement) != kind:
                raise AssertionError(
                    f"{self.plan.format.name}: a stub at {edit.path} would change the JSON "
                    f"type from {kind} to {json_kind(replacement)}"
                )
            if end - start - len(replacement) <= MIN_SAVING_BYTES:
                continue
            result.pieces.append((start, end, replacement))
            result.edits.append(edit)
        return result

    def _archive(self, line: RawLine, splices: _Splices, blob: str | None) -> None:
        """The payloads of the splices (and their ids in the marker's parts), only when no
        intact `blob` holds the original line."""
        if blob is not None:
            return
        data = line.data
        for (start, end, _), edit in zip(splices.pieces, splices.edits, strict=True):
            stored = stored_form(data[start:end])  # base64 kept decoded
            oid = self.object_id(stored)
            splices.parts.append({"path": list(edit.path), "oid": oid})
            splices.payloads.append(Payload(oid, stored))

    def _marked(
        self,
        line: RawLine,
        splices: _Splices,
        blob: str | None,
        ui_only: bool = False,
        spliced: bytes | None = None,
    ) -> OutputLine:
        """The line with its splices and the marker; `spliced` is the line with the splices
        made already (then only the marker goes in)."""
        data = line.data
        # The file's length when this line was compressed: a reply on a later line was
        # written after it, so the usage that reply recorded counts the compressed line.
        lines = self.plan.counts.lines
        marker: dict[str, object] | str
        if blob is not None:
            # The original is line N of a blob git already has: no copy of the payloads,
            # and no commit (the blob is HEAD's or the staged version's).
            digest = hashlib.sha256(data).digest()
            marker = intact_marker(blob, line.number, digest, len(data), lines, ui_only=ui_only)
        else:
            marker = {
                "v": MARKER_VERSION,
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "parts": splices.parts,
                "lines": lines,
            }
            commit = self.intact_commit(line) if self.intact_commit else None
            if commit:
                marker["commit"] = commit
            if ui_only:
                marker[UI_ONLY_KEY] = True
        close = object_close(data)
        member = MARKER_MEMBER + orjson.dumps(marker)
        if spliced is None:
            new_data = splice(data, [*splices.pieces, (close, close, member)])
        else:  # every splice lies before the closing brace, which moved by their sum
            close += len(spliced) - len(data)
            new_data = spliced[:close] + member + spliced[close:]
        if len(new_data) >= len(data):
            return _unchanged(line)
        new_line = RawLine(line.number, new_data, line.newline)
        if blob is not None:
            return OutputLine(new_line, (), len(data), blob)
        return OutputLine(new_line, tuple(splices.payloads), len(data))


class _Rewriter(_Splicer):
    """Pass 2: ask the format for edits on the lines the plan touches, and apply them."""

    def line(self, line: RawLine) -> OutputLine:
        number, data = line.number, line.data
        window_start = self._window_start
        full = number < window_start
        prune = number in self._pruned
        ui_only = not (full or prune)
        if ui_only and not self._ui_copies:
            return _unchanged(line)
        if len(data) <= SHORTEST_MARKER_BYTES:  # no marked line can be shorter
            return _unchanged(line)
        superseded = number in self._superseded
        if number <= self._scanned and not self._bulk[number - 1] and not superseded:
            return _unchanged(line)  # pass 1 found nothing the format could change
        try:  # parse_entry, inlined: this runs once per line before the kept window
            entry = orjson.loads(data)
        except orjson.JSONDecodeError:
            return _unchanged(line)
        if not isinstance(entry, dict):
            return _unchanged(line)
        marker = entry.get(MARKER_KEY)
        if marker is not None and not (full and is_ui_only(marker)):
            return _unchanged(line)
        entry_id = self._entry_id(entry)
        show = self.show(entry_id or f"L{number}")
        scope = Scope(
            number,
            full,
            prune,
            show,
            self.settings,
            window_start,
            ui_only=ui_only,
            superseded=superseded,
        )
        if marker is not None:  # stubbed in the kept window then, older now
            return self._reopened(line, entry, marker, scope)
        edits = self._edits(entry, scope)
        if not edits:
            return _unchanged(line)
        unseen = ui_only or all(edit.unseen for edit in edits)
        held = [entry]  # `_apply` lets the parsed line go as soon as it can: not held here
        del entry
        return self._apply(line, held, edits, ui_only=unseen)

    def _reopened(self, line: RawLine, entry: Entry, raw: object, scope: Scope) -> OutputLine:
        """A line whose UI-only copies were stubbed while it was in the kept window, now
        before it: the format's other edits apply, and the marker grows to undo them too.

        A v1 marker gains a part per new splice (never one inside or around an old part's
        path); a v2 or v3 marker already names the blob holding the original line, so it
        stays, written as v3 (a v2 marker that does not say the file's length stays v2).
        Either way it loses its UI-only flag, so the line is never reopened again, unless
        every new edit is `unseen` too.
        """
        marker = read_marker(line.data, f"{self.session_ref}:{line.number}")
        assert marker is not None  # the line has the marker member
        plain = {key: value for key, value in entry.items() if key != MARKER_KEY}
        old_paths = [path for path, _ in marker.parts]
        edits = [
            edit
            for edit in self._edits(plain, scope)
            if not any(_overlaps(edit.path, path) for path in old_paths)
        ]
        blob = marker.intact[0] if marker.intact is not None else None
        splices = self._reopened_splices(line, plain, edits, blob)
        if not splices.pieces:
            return _unchanged(line)
        grown: object
        still_open = all(edit.unseen for edit in edits)
        if marker.intact is not None and marker.lines is not None:
            grown = as_v3(marker._replace(ui_only=still_open))
        else:
            assert isinstance(raw, dict)
            grown = {key: value for key, value in raw.items() if key != UI_ONLY_KEY or still_open}
            if blob is None:
                grown["parts"] = [*raw["parts"], *splices.parts]
        span = locate(line.data, [(MARKER_KEY,)])[(MARKER_KEY,)]
        pieces = [*splices.pieces, (span.start, span.end, orjson.dumps(grown))]
        new_line = RawLine(line.number, splice(line.data, pieces), line.newline)
        return OutputLine(new_line, tuple(splices.payloads), marker.size, blob)

    def _apply(
        self, line: RawLine, held: list[Entry], edits: list[Edit], *, ui_only: bool = False
    ) -> OutputLine:
        """The line with `edits` made. `held` holds the parsed line, which is let go before
        the payloads are cut: a line of many MB is held as bytes and decoded (up to 4 bytes
        a character) at once only as long as the edits need both."""
        blob = self.intact_blob(line) if self.intact_blob else None
        entry = held.pop()
        found = found_spans(line.data, entry, edits)
        if found is not None:
            splices = self._splices(line, edits, found)
            if not splices.pieces:
                return _unchanged(line)
            # The search may have matched the wrong copy of a value: the result must parse
            # to the entry with exactly these values replaced.
            expected = replaced(entry, splices.edits)
            del entry
            spliced = splice(line.data, splices.pieces)
            if parses_to(spliced, expected):
                self._archive(line, splices, blob)
                return self._marked(line, splices, blob, ui_only, spliced)
        else:
            del entry
        located = located_spans(line.data, edits)
        splices = self._splices(line, edits, located)
        if not splices.pieces:
            return _unchanged(line)
        self._archive(line, splices, blob)
        return self._marked(line, splices, blob, ui_only)

    def _reopened_splices(
        self, line: RawLine, plain: Entry, edits: list[Edit], blob: str | None
    ) -> _Splices:
        found = found_spans(line.data, plain, edits)
        if found is not None:
            splices = self._splices(line, edits, found)
            with_marker = replaced(plain, splices.edits)
            marker_value = orjson.loads(line.data)[MARKER_KEY]
            if parses_to(
                splice(line.data, splices.pieces), {**with_marker, MARKER_KEY: marker_value}
            ):
                self._archive(line, splices, blob)
                return splices
        located = located_spans(line.data, edits)
        splices = self._splices(line, edits, located)
        self._archive(line, splices, blob)
        return splices


MARKER_MEMBER = b',"' + MARKER_KEY.encode() + b'":'


def _overlaps(path: JsonPath, other: JsonPath) -> bool:
    """Whether one path is the other or lies inside it."""
    size = min(len(path), len(other))
    return path[:size] == other[:size]


def compress_lines(
    lines: Iterable[RawLine],
    plan: SessionPlan,
    settings: CompressSettings,
    *,
    session_ref: str,
    object_id: ObjectId = git_blob_id,
    intact_commit: IntactCommit | None = None,
    intact_blob: IntactBlob | None = None,
) -> Iterator[OutputLine]:
    """Pass 2: yield every line, compressed where it lies before the kept window, and with
    its output stubbed where the plan prunes it."""
    rewriter = _Rewriter(plan, session_ref, settings, object_id, intact_commit, intact_blob)
    for line in lines:
        try:
            output = rewriter.line(line)
        except orjson.JSONEncodeError:  # nested deeper than orjson.dumps goes
            plan.too_deep.append(line.number)
            output = _unchanged(line)
        yield output
