"""The pure core: raw lines in; lines, and the payloads they dropped, out.

Two passes over the lines. `scan` finds the turns, the window of recent turns to keep, and
which tool outputs are redundant. `compress_lines` rewrites entries before the window by
splicing small JSON values over large ones, and appends a marker that records, for each
splice, the path and the git object id of the original bytes, plus the sha256 of the whole
original line and the number of lines the file had then. `restore.restore_data` reverses it
byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from gitclaw_compress import stubs
from gitclaw_compress.context import (
    Budget,
    Context,
    ContextSize,
    EntryInfo,
    budget_for,
    build_context,
    entry_info,
    measure_context,
    parse_like_pi,
)
from gitclaw_compress.jsonspan import JsonPath, locate, object_close, splice
from gitclaw_compress.models import DEFAULT_RESERVE_TOKENS
from gitclaw_compress.session import (
    MARKER_KEY,
    Entry,
    LineCounts,
    RawLine,
    content_text,
    message_of,
    parse_entry,
    role_of,
)
from gitclaw_compress.tokens import (
    DEFAULT_ESTIMATOR,
    TokenEstimator,
    estimate_message_tokens,
    get_estimator,
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
IntactCommit = Callable[[RawLine], str | None]  # the commit where a line is intact, if any


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


STRATEGIES = ("turns", "tokens", "both")


@dataclass(frozen=True, slots=True)
class BudgetSettings:
    """The token-aware policies: budget pruning (`strategy` tokens/both) and target mode."""

    strategy: str = "turns"  # turns: keep the last N turns; tokens: budget pruning; both: union
    estimator: str = DEFAULT_ESTIMATOR
    protect_tokens: int = 40_000  # the newest this many context tokens are never pruned
    minimum_tokens: int = 20_000  # prune only if that frees at least this many tokens
    protected_tools: frozenset[str] = frozenset({"skill"})
    protect_turns: int = 1  # the floor: the newest N turns are never touched by these policies
    target_percent: int | None = None  # target mode: compress until context <= this % of usable
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    model_overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.strategy != "turns" or self.target_percent is not None


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
    budget: BudgetSettings = field(default_factory=BudgetSettings)


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
    pruned: frozenset[int] = frozenset()
    budget: BudgetPlan | None = None
    # Lines nested deeper than orjson.dumps goes (255 levels): passed through untouched.
    too_deep: list[int] = field(default_factory=list)

    @property
    def touches_anything(self) -> bool:
        return self.window_start > 2 or bool(self.pruned)

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

    @property
    def changed(self) -> bool:
        return bool(self.payloads)


def scan(lines: Iterable[RawLine], settings: CompressSettings) -> SessionPlan:
    """Pass 1: find the turns and the redundant tool outputs.

    With a budget policy (`settings.budget.active`) it also reads what the model sees and
    how many tokens that is, and picks the candidates; `settle` then decides (see there).
    """
    budget = settings.budget
    estimator = get_estimator(budget.estimator) if budget.active else None
    infos: list[EntryInfo] = []
    counts = LineCounts()
    user_lines: list[int] = []
    copies: dict[bytes, list[tuple[int, str]]] = {}
    quoted_by: dict[int, str] = {}
    pending_quotes: list[tuple[int, str]] = []
    too_deep: list[int] = []
    for line in lines:
        entry = parse_entry(line.data)
        counts.observe(line, entry)
        if estimator is not None and line.number > 1:
            loaded = entry if entry is not None else parse_like_pi(line.data)
            if loaded is not None and loaded.get("type") != "session":
                infos.append(entry_info(line, loaded, estimator))
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
            try:
                serialized = orjson.dumps(content)
            except orjson.JSONEncodeError:  # orjson.loads reads deeper than dumps writes
                too_deep.append(line.number)
                continue
            if len(serialized) >= settings.redundancy_min_bytes:
                key = hashlib.blake2b(serialized, digest_size=16).digest()
                copies.setdefault(key, []).append((line.number, entry_id))
                text = content_text(content)
                if settings.redundancy_min_bytes <= len(text) <= QUOTE_SCAN_MAX_CHARS:
                    pending_quotes.append((line.number, text))
        elif role == "assistant":
            reply = content_text(message.get("content"))
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
    plan = SessionPlan(
        window_start=window_start,
        turns=len(user_lines),
        kept_turns=min(keep, len(user_lines)),
        counts=counts,
        later_copy=later_copy,
        quoted_by=quoted_by,
        too_deep=too_deep,
    )
    if estimator is not None:
        _plan_budget(plan, infos, user_lines, budget, estimator)
    return plan


def _plan_budget(
    plan: SessionPlan,
    infos: list[EntryInfo],
    user_lines: list[int],
    settings: BudgetSettings,
    estimator: TokenEstimator,
) -> None:
    context = build_context(infos)
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
    protected_entry = sent[oldest_protected].id if oldest_protected < len(sent) else None
    candidates = tuple(
        info.number
        for info in sent[:oldest_protected]
        if info.tool is not None
        and info.tool not in settings.protected_tools
        and not info.compressed
        and info.number < floor
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
    chosen = set(candidates)
    upper = sum(info.tokens for info in sent if info.number in chosen)
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
            message = message_of(entry) if entry is not None else None
            after = estimate_message_tokens(message, estimator) if message is not None else 0
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
    lines: list[RawLine], settings: CompressSettings, *, session_ref: str
) -> SessionPlan:
    """Both planning passes over lines in memory."""
    plan = scan(lines, settings)
    if plan.needs_settling:
        plan = settle(plan, lines, settings, session_ref=session_ref)
    return plan


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
        intact_commit: IntactCommit | None,
    ) -> None:
        self.plan = plan
        self.settings = settings
        self.session_ref = session_ref
        self.object_id = object_id
        self.intact_commit = intact_commit
        self.calls: dict[str, str] = {}  # toolCallId -> "read 'src/app.ts'"
        # Tool calls are remembered up to the last line that may be touched, for the stubs.
        self.last_touched = max(plan.pruned, default=0)

    def line(self, line: RawLine) -> OutputLine:
        number = line.number
        full = number < self.plan.window_start
        prune = number in self.plan.pruned
        if number == 1 or not (full or prune or number < self.last_touched):
            return OutputLine(line)
        if not (full or prune) and b'"assistant"' not in line.data:
            return OutputLine(line)  # only assistant lines are read here, for their tool calls
        entry = parse_entry(line.data)
        if entry is None:
            return OutputLine(line)
        message = message_of(entry)
        if message is None:
            return OutputLine(line)
        if message.get("role") == "assistant":
            self._remember_calls(message)
        entry_id = entry.get("id")
        if not (full or prune) or MARKER_KEY in entry or not isinstance(entry_id, str):
            return OutputLine(line)
        show = stubs.show_command(self.session_ref, entry_id)
        if full:
            edits = self._edits(number, message, show, prune)
        else:
            edits = self._tool_result_edits(number, message, show, forced=True)
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

    def _edits(self, number: int, message: dict[str, Any], show: str, prune: bool) -> list[_Edit]:
        role = message.get("role")
        if role == "assistant":
            return self._assistant_edits(message, show)
        if role == "toolResult":
            return self._tool_result_edits(number, message, show, forced=prune)
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

    def _tool_result_edits(
        self, number: int, message: dict[str, Any], show: str, *, forced: bool = False
    ) -> list[_Edit]:
        """Stub the output when it is large or redundant, or when `forced` (budget pruning)."""
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
            # The file's length when this line was compressed: a reply on a later line was
            # written after it, so the usage that reply recorded counts the compressed line.
            "lines": self.plan.counts.lines,
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
    intact_commit: IntactCommit | None = None,
) -> Iterator[OutputLine]:
    """Pass 2: yield every line, compressed where it lies before the kept window, and with
    its output stubbed where the plan prunes it."""
    compressor = _Compressor(plan, settings, session_ref, object_id, intact_commit)
    for line in lines:
        try:
            output = compressor.line(line)
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
