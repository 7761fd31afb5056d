"""The pure core: raw lines in; lines, and the payloads they dropped, out.

Two passes over the lines. `scan` finds the turns, the window of recent turns to keep, and
which tool outputs are redundant. `compress_lines` rewrites entries before the window by
splicing small JSON values over large ones, and appends a marker that records, for each
splice, the path and the git object id of the original bytes, plus the sha256 of the whole
original line and the number of lines the file had then. When the caller knows a committed
(or staged) blob of the session that holds the original line at the same line number, the
marker (v2) names that blob and line instead, and no payload is archived. `marker.restore_data`
reverses both byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.jsonspan import JsonPath, locate, object_close, splice
from gitclaw_compress.core.lines import (
    MARKER_KEY,
    Entry,
    LineCounts,
    RawLine,
    parse_entry,
)
from gitclaw_compress.core.stubs import encode_stub as encode_stub
from gitclaw_compress.formats import Format, detect
from gitclaw_compress.formats.base import Edit, FileRules, Scope
from gitclaw_compress.model import TOOL_RESULT
from gitclaw_compress.settings import STRATEGIES as STRATEGIES
from gitclaw_compress.settings import BudgetSettings, CompressSettings
from gitclaw_compress.tokens.estimate import (
    TokenEstimator,
    estimate_message,
    get_estimator,
)

if TYPE_CHECKING:  # the context model is loaded only when a budget policy runs
    from gitclaw_compress.tokens.context import Budget, Context, ContextSize

MIN_SAVING_BYTES = 48  # a splice must save more than its share of the marker
MARKER_VERSION = 1
INTACT_MARKER_VERSION = 2

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


@dataclass(slots=True)
class BudgetPlan:
    """What the token-aware policies decided (see `scan` and `settle`)."""

    context: Context
    size: ContextSize  # the context now
    budget: Budget  # the model's usable context
    floor: int  # lines from here on (the newest protect_turns turns) are never touched
    protected_entry: str | None  # oldest entry of the protected newest protect_tokens tokens
    candidates: tuple[int, ...]  # tool outputs budget pruning may stub (line numbers)
    target_tokens: int | None = None  # target mode: the context to reach
    freed_tokens: int = 0  # estimated context tokens the chosen policy frees
    settled: bool = False
    decision: str = ""  # what was decided, in words

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.budget.model,
            "usable_tokens": self.budget.usable,
            "context_tokens": self.size.tokens,
            "source": self.size.source,
            "protected_from_entry": self.protected_entry,
            "target_tokens": self.target_tokens,
            "freed_tokens": self.freed_tokens,
            "decision": self.decision,
        }


@dataclass(slots=True)
class SessionPlan:
    """What pass 1 learned. Line numbers are 1-based.

    Lines before `window_start` get every compression; lines in `pruned` (tool outputs the
    budget policy chose) get their output stubbed wherever they are.
    """

    format: Format
    rules: FileRules  # the format's per-file state, filled in pass 1
    window_start: int  # lines from here on are the kept window, byte for byte
    turns: int
    kept_turns: int
    counts: LineCounts
    pruned: frozenset[int] = frozenset()
    budget: BudgetPlan | None = None
    # Lines nested deeper than orjson.dumps goes (255 levels): passed through untouched.
    too_deep: list[int] = field(default_factory=list)
    ui_copies: bool = False  # stub_ui_copies: pass 2 sees the kept window's lines too
    # Byte N-1 is 0 when pass 1 found that line N cannot hold bulk (it did not parse, or the
    # format's `observe` said so): pass 2 copies it unparsed. None: every line may.
    bulk: bytearray | None = None

    @property
    def touches_anything(self) -> bool:
        return self.window_start > 2 or bool(self.pruned) or self.ui_copies

    @property
    def needs_settling(self) -> bool:
        """Whether `settle` must measure a trial run before pass 2 (budget policies only)."""
        budget = self.budget
        if budget is None or budget.settled:
            return False
        return bool(budget.candidates) or budget.target_tokens is not None


@dataclass(frozen=True, slots=True)
class Payload:
    oid: str
    data: bytes


@dataclass(frozen=True, slots=True)
class OutputLine:
    line: RawLine
    payloads: tuple[Payload, ...] = ()
    original_size: int = 0  # set when the line was compressed
    reference: str | None = None  # the intact blob a v2 marker names (no payloads then)

    @property
    def changed(self) -> bool:
        return bool(self.payloads) or self.reference is not None


def scan(lines: Iterable[RawLine], settings: CompressSettings, fmt: Format) -> SessionPlan:
    """Pass 1: find the turns, and let the format see every line.

    With a budget policy (`settings.budget.active`) on a format that supports it, it also
    reads what the model sees and how many tokens that is, and picks the candidates; `settle`
    then decides (see there).
    """
    budget = settings.budget
    estimator = get_estimator(budget.estimator) if budget.active else None
    rules = fmt.rules(settings)
    seen: list[RawLine] = []  # what the budget reads after the pass (budget policies only)
    counts = LineCounts()
    turn_starts: list[int] = []
    too_deep: list[int] = []
    bulk = bytearray()
    count, observe, is_turn_start = counts.observe, rules.observe, fmt.is_turn_start
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    flag, marker_key = bulk.append, MARKER_KEY
    for line in lines:
        try:  # parse_entry, inlined: this loop runs once per line of the file
            entry = loads(line.data)
        except decode_error:
            entry = None
        else:
            if not isinstance(entry, dict):
                entry = None
        count(line, entry)
        if estimator is not None:
            seen.append(line)
        if entry is None:
            flag(0)
            continue
        if is_turn_start(entry):
            turn_starts.append(line.number)
        try:
            # A marked line may be reopened (UI copies stubbed in the kept window): pass 2
            # reads it whatever the format says.
            flag(observe(line.number, entry) or marker_key in entry)
        except orjson.JSONEncodeError:  # orjson.loads reads deeper than dumps writes
            too_deep.append(line.number)
            flag(1)
    keep = settings.keep_turns
    if keep == 0:
        window_start = counts.lines + 1
    elif len(turn_starts) > keep:
        window_start = turn_starts[-keep]
    else:
        window_start = 1
    plan = SessionPlan(
        format=fmt,
        rules=rules,
        window_start=window_start,
        turns=len(turn_starts),
        kept_turns=min(keep, len(turn_starts)),
        counts=counts,
        too_deep=too_deep,
        ui_copies=settings.stub_ui_copies,
        bulk=bulk if len(bulk) == counts.lines else None,
    )
    if estimator is not None:
        _plan_budget(plan, seen, turn_starts, budget, estimator)
    return plan


def _plan_budget(
    plan: SessionPlan,
    lines: list[RawLine],
    user_lines: list[int],
    settings: BudgetSettings,
    estimator: TokenEstimator,
) -> None:
    from gitclaw_compress.tokens.context import (
        budget_for,
        measure_context,
        message_id,
        read_context,
    )

    context = read_context(plan.format, lines, estimator)
    size = measure_context(context, estimator)
    budget = budget_for(context.model, settings.model_overrides, settings.reserve_tokens)
    turns = settings.protect_turns
    if turns == 0:
        floor = plan.counts.lines + 1
    elif len(user_lines) >= turns:
        floor = user_lines[-turns]
    else:
        floor = 1
    # Walk back from the newest message: the newest protect_tokens tokens are protected, and
    # so is the message that crosses the line; older completed tool outputs are candidates.
    sent = context.sent()
    total = 0
    oldest_protected = len(sent)
    for index in range(len(sent) - 1, -1, -1):
        total += sent[index].tokens
        if total > settings.protect_tokens:
            break
        oldest_protected = index
    protected_entry = message_id(sent[oldest_protected]) if oldest_protected < len(sent) else None
    # Candidates: older lines that hold a completed tool result of an unprotected tool.
    older = {line for message in sent[:oldest_protected] for line in message.source_lines()}
    candidates = tuple(
        view.number
        for view in context.views
        if view.number in older
        and view.number < floor
        and view.number not in context.compressed
        and any(
            part.kind == TOOL_RESULT
            and part.complete
            and (part.name or "") not in settings.protected_tools
            for message in view.messages
            for part in message.parts
        )
    )
    plan.budget = BudgetPlan(context, size, budget, floor, protected_entry, ())
    if settings.target_percent is not None:
        plan.window_start = 1  # target mode picks its own cut in `settle`
        target = budget.usable * settings.target_percent // 100
        plan.budget.target_tokens = target
        if size.tokens <= target:
            plan.budget.settled = True
            plan.budget.decision = (
                f"target mode: the context, {size.tokens:,} tokens, is within the target "
                f"{target:,} ({settings.target_percent}% of {budget.usable:,} usable): "
                "nothing to do"
            )
        return
    if settings.strategy == "tokens":
        plan.window_start = 1
    tokens_now = context.tokens_by_line()
    upper = sum(tokens_now.get(number, 0) for number in candidates)
    if upper < settings.minimum_tokens:
        plan.budget.settled = True
        plan.budget.decision = _below_minimum(upper, len(candidates), settings)
        return
    plan.budget.candidates = candidates


def _below_minimum(freed: int, outputs: int, settings: BudgetSettings) -> str:
    if not outputs:
        return (
            "budget pruning: nothing to prune, no completed tool output outside the newest "
            f"{settings.protect_tokens:,} tokens and the newest {settings.protect_turns} turn(s)"
        )
    return (
        f"budget pruning: {outputs} tool output(s) outside the newest "
        f"{settings.protect_tokens:,} tokens would free {freed:,} tokens, under the minimum "
        f"{settings.minimum_tokens:,}: nothing pruned"
    )


# The shortest marker member a compressed line gains: a line no longer than this can only
# grow, so pass 2 does not even parse it (a fifth of the lines of a Copilot CLI file).
SHORTEST_MARKER_BYTES = len(b',"' + MARKER_KEY.encode() + b'":') + min(
    len(orjson.dumps(marker))
    for marker in (
        {"v": 1, "sha256": "0" * 64, "size": 0, "parts": [{"path": [0], "oid": "0" * 40}]},
        {"v": 2, "sha256": "0" * 64, "size": 0, "intact": {"blob": "0" * 40, "line": 1}},
    )
)


def _no_object_id(data: bytes) -> str:
    return ""


@dataclass(slots=True)
class RunMeasure:
    """What a pass 2 under some plan would do, measured without writing anything."""

    bytes_before: int = 0
    bytes_after: int = 0
    lines_changed: int = 0
    savings: dict[int, int] = field(default_factory=dict)  # line -> context tokens freed

    @property
    def tokens_saved(self) -> int:
        return sum(self.savings.values())


def measure_run(
    lines: Iterable[RawLine],
    plan: SessionPlan,
    settings: CompressSettings,
    *,
    session_ref: str,
    estimator: TokenEstimator,
    tokens_now: Mapping[int, int],
    object_id: ObjectId = _no_object_id,
    intact_commit: IntactCommit | None = None,
    intact_blob: IntactBlob | None = None,
) -> RunMeasure:
    """Run pass 2 without output: bytes, changed lines, and the context tokens each line frees.

    `tokens_now` maps the lines of the messages in the context to their estimated tokens;
    other lines free bytes but no context tokens. With the default `object_id` the byte
    counts are off by the length of the ids in the markers (40 characters each).
    """
    measure = RunMeasure()
    for result in compress_lines(
        lines,
        plan,
        settings,
        session_ref=session_ref,
        object_id=object_id,
        intact_commit=intact_commit,
        intact_blob=intact_blob,
    ):
        measure.bytes_after += len(result.line.encode())
        if not result.changed:
            measure.bytes_before += len(result.line.encode())
            continue
        measure.bytes_before += result.original_size + result.line.newline
        measure.lines_changed += 1
        number = result.line.number
        if number in tokens_now:
            entry = parse_entry(result.line.data)
            view = plan.format.view(number, entry) if entry is not None else None
            after = (
                sum(estimate_message(message, estimator) for message in view.messages)
                if view is not None
                else 0
            )
            measure.savings[number] = tokens_now[number] - after
    return measure


def settle(
    plan: SessionPlan, lines: Iterable[RawLine], settings: CompressSettings, *, session_ref: str
) -> SessionPlan:
    """Pass 1b for the budget policies: measure what a trial run frees, then decide.

    - Budget pruning stubs its candidates only if together they free at least
      `minimum_tokens` (measured, stubs included); otherwise nothing is pruned.
    - Target mode compresses whole lines oldest first, stopping at the first line after which
      the context is at or under the target; never at or after the floor.

    Returns a new plan for pass 2; the same stubs follow, since pass 2 runs the same code.
    """
    budget = plan.budget
    if budget is None or not plan.needs_settling:
        return plan
    options = settings.budget
    target_mode = budget.target_tokens is not None
    if target_mode:  # every compression before the floor
        trial = dataclasses.replace(plan, window_start=budget.floor, pruned=frozenset())
    else:  # the candidates' outputs only
        trial = dataclasses.replace(plan, window_start=1, pruned=frozenset(budget.candidates))
    savings = measure_run(
        lines,
        trial,
        settings,
        session_ref=session_ref,
        estimator=get_estimator(options.estimator),
        tokens_now=budget.context.tokens_by_line(),
    ).savings
    decided = dataclasses.replace(plan, budget=dataclasses.replace(budget, settled=True))
    assert decided.budget is not None
    if target_mode:
        assert budget.target_tokens is not None
        context, target = budget.size.tokens, budget.target_tokens
        freed, cut = 0, budget.floor
        for number in sorted(savings):
            freed += savings[number]
            if context - freed <= target:
                cut = number + 1
                break
        decided.window_start = cut
        decided.budget.freed_tokens = freed
        reached = context - freed <= target
        decided.budget.decision = (
            f"target mode: target {target:,} tokens ({options.target_percent}% of "
            f"{budget.budget.usable:,} usable); lines before {cut} compressed, {freed:,} of "
            f"{context:,} tokens freed"
            + ("" if reached else "; the target is out of reach above the floor")
        )
        return decided
    freed = sum(savings.get(number, 0) for number in budget.candidates)
    if freed < options.minimum_tokens:
        decided.budget.decision = _below_minimum(freed, len(budget.candidates), options)
        return decided
    chosen = frozenset(number for number in budget.candidates if savings.get(number, 0) > 0)
    decided.pruned = chosen
    decided.budget.freed_tokens = freed
    decided.budget.decision = (
        f"budget pruning: {len(chosen)} tool output(s) outside the newest "
        f"{options.protect_tokens:,} tokens pruned, {freed:,} tokens freed (minimum "
        f"{options.minimum_tokens:,})"
    )
    return decided


def plan_lines(
    lines: list[RawLine],
    settings: CompressSettings,
    *,
    session_ref: str,
    fmt: Format | None = None,
) -> SessionPlan:
    """Both planning passes over lines in memory (the format found from them if not given)."""
    if fmt is None:
        fmt = detect(lines, session_ref)
    plan = scan(lines, settings, fmt)
    if plan.needs_settling:
        plan = settle(plan, lines, settings, session_ref=session_ref)
    return plan


# The JSON type of a value from its first byte: a stub must keep it.
_JSON_KIND = {
    ord('"'): "string",
    ord("["): "array",
    ord("{"): "object",
    ord("t"): "bool",
    ord("f"): "bool",
    ord("n"): "null",
}


def _json_kind(raw: bytes) -> str:
    return _JSON_KIND.get(raw[0], "number") if raw else ""


def _value_at(entry: Entry, path: JsonPath) -> tuple[bool, object]:
    value: object = entry
    for step in path:
        try:
            value = value[step]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, value


def _found_spans(
    data: bytes, entry: Entry, edits: list[Edit]
) -> dict[JsonPath, tuple[int, int]] | None:
    """The spans of the edited values found by searching for their serialized bytes.

    Writers of these files (JSON.stringify, serde) write what orjson writes for most values,
    so a value is usually found, with its key, by one `bytes.find` instead of a walk through
    the line; the same value twice (two identical outputs) takes the next copy. None when a
    value is not found. A match may still be the wrong copy: `_apply` checks the result by
    parsing it, and walks the line if it differs.
    """
    spans: dict[JsonPath, tuple[int, int]] = {}
    taken: list[tuple[int, int]] = []  # the matched bytes, keys included
    for edit in edits:
        found, value = _value_at(entry, edit.path)
        if not found:
            continue
        try:
            needle = orjson.dumps(value)
        except TypeError:  # nested too deep for orjson's writer
            return None
        offset = 0
        key = edit.path[-1] if edit.path else None
        if isinstance(key, str):
            prefix = orjson.dumps(key) + b":"
            needle, offset = prefix + needle, len(prefix)
        position = _find_free(data, needle, taken)
        if position < 0:
            return None
        taken.append((position, position + len(needle)))
        spans[edit.path] = (position + offset, position + len(needle))
    return spans


# A long needle costs `bytes.find` a setup in proportion to its length (0.3 ms for a 270 KB
# image): its head is searched for instead, and each hit compared in full.
_NEEDLE_HEAD = 64


def _find_free(data: bytes, needle: bytes, taken: list[tuple[int, int]]) -> int:
    """The first position of `needle` in `data` that overlaps none of `taken`, or -1."""
    head = needle[:_NEEDLE_HEAD]
    size = len(needle)
    position = data.find(head)
    while position >= 0 and (
        not data.startswith(needle, position)
        or any(position < end and start < position + size for start, end in taken)
    ):
        position = data.find(head, position + 1)
    return position


def _replaced(entry: Entry, edits: list[Edit]) -> Entry:
    """A copy of `entry` with each edit's value in place (containers copied along the path)."""
    result = dict(entry)
    for edit in edits:
        node: Any = result
        for step in edit.path[:-1]:
            child = node[step]
            node[step] = child = dict(child) if isinstance(child, dict) else list(child)
            node = child
        node[edit.path[-1]] = edit.value
    return result


def _parses_to(data: bytes, expected: Entry) -> bool:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    try:  # Python's == in C: a fifth of the cost of walking both values in Python
        return bool(parsed == expected)
    except RecursionError:  # nested deeper than == recurses (orjson reads 1,024 levels)
        return _same_json(parsed, expected)


def _same_json(left: Any, right: Any) -> bool:
    """`left == right` for parsed JSON, with a stack instead of recursion: orjson reads
    nesting deeper than Python's == may recurse."""
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, dict):
            if not isinstance(b, dict) or a.keys() != b.keys():
                return False
            stack.extend((value, b[key]) for key, value in a.items())
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(b, dict | list) or a != b:
            return False
    return True


def _locate(data: bytes, edits: list[Edit]) -> dict[JsonPath, Any]:
    return locate(data, [edit.path for edit in edits])


@dataclass(slots=True)
class _Splices:
    """The edits that are worth it on one line: byte ranges, marker parts, archived payloads."""

    pieces: list[tuple[int, int, bytes]] = field(default_factory=list)
    parts: list[dict[str, object]] = field(default_factory=list)
    payloads: list[Payload] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)


class _Rewriter:
    """Pass 2: ask the format for edits on the lines the plan touches, and apply them."""

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
        self.show = stubs.ShowCommands(session_ref)
        # Read once, not per line: pass 2 does not move the window or the pruned lines.
        self._window_start = plan.window_start
        self._pruned = plan.pruned
        self._ui_copies = settings.stub_ui_copies
        self._entry_id = plan.format.entry_id
        self._bulk = plan.bulk if plan.bulk is not None else b""
        self._scanned = len(self._bulk)  # lines pass 1 saw (a line after them may hold bulk)

    def line(self, line: RawLine) -> OutputLine:
        number, data = line.number, line.data
        window_start = self._window_start
        full = number < window_start
        prune = number in self._pruned
        ui_only = not (full or prune)
        if ui_only and not self._ui_copies:
            return OutputLine(line)
        if len(data) <= SHORTEST_MARKER_BYTES:  # no marked line can be shorter
            return OutputLine(line)
        if number <= self._scanned and not self._bulk[number - 1]:
            return OutputLine(line)  # pass 1 found nothing the format could change
        try:  # parse_entry, inlined: this runs once per line before the kept window
            entry = orjson.loads(data)
        except orjson.JSONDecodeError:
            return OutputLine(line)
        if not isinstance(entry, dict):
            return OutputLine(line)
        marker = entry.get(MARKER_KEY)
        if marker is not None and not (full and _ui_only_marker(marker)):
            return OutputLine(line)
        entry_id = self._entry_id(entry)
        show = self.show(entry_id or f"L{number}")
        scope = Scope(number, full, prune, show, self.settings, window_start, ui_only=ui_only)
        if marker is not None:  # stubbed in the kept window then, older now
            return self._reopened(line, entry, marker, scope)
        edits = self.plan.rules.edits(entry, scope)
        if not edits:
            return OutputLine(line)
        return self._apply(line, entry, edits, ui_only=ui_only)

    def _reopened(
        self, line: RawLine, entry: Entry, marker: dict[str, Any], scope: Scope
    ) -> OutputLine:
        """A line whose UI-only copies were stubbed while it was in the kept window, now
        before it: the format's other edits apply, and the marker grows to undo them too.

        A v1 marker gains a part per new splice (never one inside or around an old part's
        path); a v2 marker already names the blob holding the original line, so it stays.
        Either way it loses its UI-only flag, so the line is never reopened again.
        """
        plain = {key: value for key, value in entry.items() if key != MARKER_KEY}
        old_paths = [tuple(part["path"]) for part in marker.get("parts", ())]
        edits = [
            edit
            for edit in self.plan.rules.edits(plain, scope)
            if not any(_overlaps(edit.path, path) for path in old_paths)
        ]
        intact = marker.get("intact")
        blob = intact.get("blob") if isinstance(intact, dict) else None
        splices = self._reopened_splices(line, plain, edits, blob)
        if not splices.pieces:
            return OutputLine(line)
        grown = {key: value for key, value in marker.items() if key != UI_ONLY_KEY}
        if blob is None:
            grown["parts"] = [*marker["parts"], *splices.parts]
        span = locate(line.data, [(MARKER_KEY,)])[(MARKER_KEY,)]
        pieces = [*splices.pieces, (span.start, span.end, orjson.dumps(grown))]
        new_line = RawLine(line.number, splice(line.data, pieces), line.newline)
        return OutputLine(new_line, tuple(splices.payloads), marker["size"], blob)

    def _apply(
        self, line: RawLine, entry: Entry, edits: list[Edit], *, ui_only: bool = False
    ) -> OutputLine:
        blob = self.intact_blob(line) if self.intact_blob else None
        found = _found_spans(line.data, entry, edits)
        if found is not None:
            splices = self._splices(line, edits, found, blob)
            if not splices.pieces:
                return OutputLine(line)
            # The search may have matched the wrong copy of a value: the result must parse
            # to the entry with exactly these values replaced.
            spliced = splice(line.data, splices.pieces)
            if _parses_to(spliced, _replaced(entry, splices.edits)):
                return self._marked(line, splices, blob, ui_only, spliced)
        located = {path: (span.start, span.end) for path, span in _locate(line.data, edits).items()}
        splices = self._splices(line, edits, located, blob)
        if not splices.pieces:
            return OutputLine(line)
        return self._marked(line, splices, blob, ui_only)

    def _reopened_splices(
        self, line: RawLine, plain: Entry, edits: list[Edit], blob: str | None
    ) -> _Splices:
        found = _found_spans(line.data, plain, edits)
        if found is not None:
            splices = self._splices(line, edits, found, blob)
            with_marker = _replaced(plain, splices.edits)
            marker_value = orjson.loads(line.data)[MARKER_KEY]
            if _parses_to(
                splice(line.data, splices.pieces), {**with_marker, MARKER_KEY: marker_value}
            ):
                return splices
        located = {path: (span.start, span.end) for path, span in _locate(line.data, edits).items()}
        return self._splices(line, edits, located, blob)

    def _splices(
        self,
        line: RawLine,
        edits: list[Edit],
        spans: dict[JsonPath, tuple[int, int]],
        blob: str | None,
    ) -> _Splices:
        """The edits worth making; payloads (and their ids) only when no intact `blob` holds
        the original line."""
        data = line.data
        result = _Splices()
        for edit in edits:
            span = spans.get(edit.path)
            if span is None:
                continue
            start, end = span
            replacement = encode_stub(edit.value)
            # The original's kind from its first byte: no copy of it unless it is archived.
            kind = _JSON_KIND.get(data[start], "number") if end > start else ""
            if _json_kind(replacement) != kind:
                raise AssertionError(
                    f"{self.plan.format.name}: a stub at {edit.path} would change the JSON "
                    f"type from {kind} to {_json_kind(replacement)}"
                )
            if end - start - len(replacement) <= MIN_SAVING_BYTES:
                continue
            result.pieces.append((start, end, replacement))
            result.edits.append(edit)
            if blob is None:
                original = data[start:end]
                oid = self.object_id(original)
                result.parts.append({"path": list(edit.path), "oid": oid})
                result.payloads.append(Payload(oid, original))
        return result

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
        marker: dict[str, object] = {
            "v": MARKER_VERSION if blob is None else INTACT_MARKER_VERSION,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
        }
        if blob is None:
            marker["parts"] = splices.parts
        else:
            # The original is line N of a blob git already has: no copy of the payloads.
            marker["intact"] = {"blob": blob, "line": line.number}
        # The file's length when this line was compressed: a reply on a later line was
        # written after it, so the usage that reply recorded counts the compressed line.
        marker["lines"] = self.plan.counts.lines
        # A v2 marker's blob is HEAD's (or the staged) version: the commit would repeat it.
        commit = self.intact_commit(line) if self.intact_commit and blob is None else None
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
            return OutputLine(line)
        new_line = RawLine(line.number, new_data, line.newline)
        if blob is not None:
            return OutputLine(new_line, (), len(data), blob)
        return OutputLine(new_line, tuple(splices.payloads), len(data))


MARKER_MEMBER = b',"' + MARKER_KEY.encode() + b'":'

# A marker whose line had only its UI-only copies stubbed (in the kept window, with
# `stub_ui_copies`): once the line is older than the kept window, it is compressed further.
UI_ONLY_KEY = "ui"


def _ui_only_marker(marker: object) -> bool:
    return isinstance(marker, dict) and marker.get(UI_ONLY_KEY) is True


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
            output = OutputLine(line)
        yield output


def compress_entry_lines(
    lines: list[RawLine], settings: CompressSettings, session_ref: str
) -> tuple[list[RawLine], dict[str, bytes]]:
    """In-memory convenience: every pass over a list; returns lines and payloads by oid."""
    plan = plan_lines(lines, settings, session_ref=session_ref)
    out: list[RawLine] = []
    payloads: dict[str, bytes] = {}
    for result in compress_lines(lines, plan, settings, session_ref=session_ref):
        out.append(result.line)
        for payload in result.payloads:
            payloads[payload.oid] = payload.data
    return out, payloads


__all__ = [
    "STRATEGIES",
    "BudgetPlan",
    "BudgetSettings",
    "CompressSettings",
    "Entry",
    "OutputLine",
    "Payload",
    "RunMeasure",
    "SessionPlan",
    "compress_entry_lines",
    "compress_lines",
    "git_blob_id",
    "measure_run",
    "plan_lines",
    "scan",
    "settle",
]
