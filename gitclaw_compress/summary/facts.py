"""Summarizing compaction, the pure part: cut point, facts, prompt, summary text, entry.

A round of summarizing works on the active path of a session (see :mod:`activepath`):

1. :func:`plan_summary` chooses where the kept messages start. The range it summarizes runs
   from where the previous compaction's kept messages started (or the root) up to that cut.
   A cut is only ever made at a user, assistant, bashExecution or custom message, and never
   between a tool call and its result: every tool call before the cut has its results
   before the cut too.
2. :func:`extract_facts` reads facts deterministically from every entry before the cut (not
   only this round's range, so a chain of rounds keeps the facts of all of them): the original
   task word for word, later requests, files written, edited and read, tool usage, errors and
   what followed them, and sentences that state decisions.
3. :func:`build_prompt` asks an LLM for a continuation summary; :func:`extractive_summary`
   writes one without an LLM. Either way :func:`final_summary` puts a header on it (round
   number, how it was made) and appends the facts, so that nothing critical depends on the
   LLM alone.
4. :func:`compaction_entry` gives the pi ``compaction`` entry to append.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from gitclaw_compress.formats.pi import content_text
from gitclaw_compress.tokens.activepath import (
    MESSAGE_ENTRY_TYPES,
    Node,
    context_nodes,
    latest_compaction,
    message_of_node,
)
from gitclaw_compress.tokens.estimate import (
    TokenEstimator,
    estimate_message_tokens,
    usage_context_tokens,
)

HEADER_PREFIX = "Continuation summary, round "
FACTS_HEADING = "## Extracted facts"
META_KEY = "gitclawSummary"  # in the compaction entry's details: round, mode, provider, model

SECTIONS = (
    "What was accomplished",
    "Current work",
    "Files and key changes",
    "Next steps",
    "Decisions and context needed to continue",
)

SYSTEM_PROMPT = (
    "You write continuation summaries of an AI coding agent's session. The agent will "
    "continue the work from your summary and the most recent messages alone. Output only the "
    "summary, in the requested format. Do not continue the conversation and do not answer "
    "questions asked in it."
)

EXTRACTIVE_NOTE = (
    "This summary is EXTRACTIVE: gitclaw-compress built it without an LLM, only from facts "
    "extracted from the transcript (requests, replies, files, tool calls, errors, quoted "
    "sentences). It does not interpret the work; the messages kept after it show the "
    "current state."
)

# Bounds on what facts and summaries quote.
TASK_MAX_CHARS = 12_000
REQUEST_CHARS = 300
MAX_REQUESTS = 15
MAX_FILES = 50
MAX_ERRORS = 10
MAX_DECISIONS = 10
MAX_OUTLINE_TURNS = 12
NOTABLE_PER_TOOL = 3
SNIPPET_CHARS = 200
# Bounds on the conversation text of the prompt.
USER_TEXT_CHARS = 4_000
ASSISTANT_TEXT_CHARS = 4_000
THINKING_CHARS = 1_000
ARGUMENT_CHARS = 200
CHARS_PER_TOKEN = 4

_PATH_KEYS = ("path", "file_path", "filePath")
_DESCRIPTOR_KEYS = (*_PATH_KEYS, "url", "pattern", "query", "command")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_ASSISTANT_DECISION = re.compile(
    r"\b(decided|decision|instead of|rather than|chose|chosen|going with|opted|the plan is"
    r"|approach|trade-?off|because)\b",
    re.IGNORECASE,
)
_USER_CONSTRAINT = re.compile(
    r"\b(must|must not|don't|do not|never|always|make sure|prefer|please use|only use)\b",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------------------
# Small text helpers
# --------------------------------------------------------------------------------------


def cut_text(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, with "…" when cut."""
    text = text.strip()
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    return cut_text(" ".join(text.split()), limit)


def trim_middle(text: str, limit: int) -> str:
    """Keep the head (two thirds) and the tail of ``text``, saying how much was trimmed."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    trimmed = len(text) - head - tail
    end = text[-tail:] if tail else ""
    return f"{text[:head]}\n[... {trimmed:,} characters trimmed ...]\n{end}"


def _images(content: object) -> int:
    if not isinstance(content, list):
        return 0
    return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")


def _tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]


def _role(node: Node) -> str | None:
    message = message_of_node(node)
    role = message.get("role") if message is not None else None
    return role if isinstance(role, str) else None


def call_path(arguments: object) -> str | None:
    if isinstance(arguments, dict):
        for key in _PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def describe_call(name: str, arguments: object) -> str:
    """``bash `npm test```: the tool and its most telling argument, on one line (a long
    path keeps its end, anything else its start)."""
    if isinstance(arguments, dict):
        for key in _DESCRIPTOR_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                first = " ".join(value.strip().split("\n", 1)[0].split())
                if key in _PATH_KEYS and len(first) > 80:
                    first = "…" + first[-79:]
                shown = cut_text(first, 80).replace("`", "'")
                return f"{name} `{shown}`"
    return name


# --------------------------------------------------------------------------------------
# The cut point
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeepPolicy:
    """Keep the last ``turns`` turns, or else the newest ``tokens`` tokens (at least)."""

    turns: int | None = None
    tokens: int | None = None

    def __post_init__(self) -> None:
        if (self.turns is None) == (self.tokens is None):
            raise ValueError("KeepPolicy needs exactly one of turns and tokens")

    def describe(self) -> str:
        if self.turns is not None:
            return f"the last {self.turns} turn{'s' if self.turns != 1 else ''}"
        return f"the newest {self.tokens:,} tokens"


@dataclass
class SummaryPlan:
    """Where this round cuts, and what it covers. Positions index ``path``."""

    path: list[Node]
    previous: Node | None  # the latest compaction on the path
    start: int  # this round summarizes path[start:cut]
    cut: int  # path[cut] is the first kept entry
    round: int
    turn_start: int | None  # the user message of the kept turn when the cut splits a turn
    tokens_before: int  # pi's way: the last recorded usage plus estimates after it
    tokens_before_estimated: int  # every context message estimated
    kept_tokens: int  # estimated tokens of the messages kept after the summary

    @property
    def first_kept(self) -> Node:
        return self.path[self.cut]

    @property
    def leaf(self) -> Node:
        return self.path[-1]

    @property
    def summarized(self) -> list[Node]:
        """This round's message entries (compaction entries excluded)."""
        return [
            n
            for n in self.path[self.start : self.cut]
            if n.type in MESSAGE_ENTRY_TYPES and message_of_node(n) is not None
        ]

    @property
    def history(self) -> list[Node]:
        """Every entry before the cut, from the root: the facts come from these."""
        return self.path[: self.cut]


@dataclass(frozen=True, slots=True)
class NoSummary:
    """Why there is nothing to summarize."""

    reason: str


def valid_cuts(path: Sequence[Node]) -> list[bool]:
    """For each position, whether the kept messages may start there.

    Only user, assistant, bashExecution and custom messages, custom_message and
    branch_summary entries qualify (as in pi), and only where no tool call before the
    position has a result at or after it.
    """
    calls: dict[str, int] = {}
    blocked = [0] * (len(path) + 1)  # a difference array of positions that split a call
    for position, node in enumerate(path):
        message = message_of_node(node)
        if message is None:
            continue
        for block in _tool_calls(message):
            if isinstance(block.get("id"), str):
                calls[block["id"]] = position
        if message.get("role") == "toolResult":
            called = calls.get(str(message.get("toolCallId")))
            if called is not None and called < position:
                blocked[called + 1] += 1
                blocked[position + 1] -= 1
    valid: list[bool] = []
    running = 0
    for position, node in enumerate(path):
        running += blocked[position]
        kind, role = node.type, _role(node)
        candidate = kind in ("custom_message", "branch_summary") or (
            kind == "message" and role in ("user", "assistant", "bashExecution", "custom")
        )
        valid.append(candidate and running == 0 and node.id is not None)
    return valid


def estimate_node(node: Node, estimator: TokenEstimator) -> int:
    message = message_of_node(node)
    return estimate_message_tokens(message, estimator) if message is not None else 0


def context_tokens(
    nodes: Sequence[Node], estimator: TokenEstimator, *, trusted_only: bool = False
) -> tuple[int, int, str]:
    """``(tokens, estimated, source)`` for the context messages ``nodes``.

    ``tokens`` is pi's number: the context size recorded with the last assistant message
    that has usage, plus estimates of the messages after it; ``source`` is "usage". With
    no usage, or with ``trusted_only`` when that usage was recorded before the compaction
    that opens the context (so it measures the old, longer context, as pi's own check
    knows), ``tokens`` is ``estimated``, every message estimated, and ``source`` is
    "estimate:<estimator>".
    """
    estimates = [estimate_node(node, estimator) for node in nodes]
    estimated = sum(estimates)
    for position in range(len(nodes) - 1, -1, -1):
        message = message_of_node(nodes[position])
        used = usage_context_tokens(message) if message is not None else None
        if used is None:
            continue
        if trusted_only and not _after_compaction(nodes, position):
            break
        return used + sum(estimates[position + 1 :]), estimated, "usage"
    return estimated, estimated, f"estimate:{estimator.name}"


def _after_compaction(nodes: Sequence[Node], position: int) -> bool:
    """Whether nodes[position] was written after the compaction that opens the context.

    Context nodes after a compaction hold the compaction first, then the kept entries from
    before it, then those after it; the file index tells them apart.
    """
    compaction = next((n for n in nodes if n.type == "compaction"), None)
    return compaction is None or nodes[position].index > compaction.index


def plan_summary(
    path: list[Node], keep: KeepPolicy, estimator: TokenEstimator
) -> SummaryPlan | NoSummary:
    """Choose this round's cut on the active ``path`` (root first)."""
    if not path:
        return NoSummary("the session has no entries")
    if path[-1].type == "compaction":
        return NoSummary("the session already ends with a compaction entry")
    if path[-1].id is None:
        return NoSummary("the last entry has no id for a compaction entry to follow")
    previous_at = latest_compaction(path)
    start = 0
    previous = None
    if previous_at is not None:
        previous = path[previous_at]
        start = next(
            (
                i
                for i, n in enumerate(path[:previous_at])
                if n.id is not None and n.id == previous.first_kept
            ),
            previous_at + 1,
        )
    where = "since the last summary" if previous is not None else "in the session"
    valid = valid_cuts(path)
    cut: int | None
    if keep.turns is not None:
        users = [i for i in range(start + 1, len(path)) if _role(path[i]) == "user"]
        if _role(path[start]) == "user":
            users.insert(0, start)
        if len(users) <= keep.turns:
            return NoSummary(
                f"{_plural(len(users), 'turn')} {where}, and {keep.describe()} are kept"
            )
        cut = _valid_at_or_before(valid, users[-keep.turns], start)
    else:
        assert keep.tokens is not None
        kept = 0
        cut = None
        for position in range(len(path) - 1, start, -1):
            kept += estimate_node(path[position], estimator)
            if kept >= keep.tokens:
                cut = _valid_at_or_before(valid, position, start)
                break
        if cut is None and kept < keep.tokens:
            return NoSummary(
                f"the {kept:,} estimated tokens {where} fit in {keep.describe()}, which are kept"
            )
    if cut is None:
        return NoSummary("no place to cut that keeps every tool call with its result")
    turn_start = None
    if _role(path[cut]) != "user":
        turn_start = next((i for i in range(cut - 1, -1, -1) if _role(path[i]) == "user"), None)
    before = context_nodes(path)
    tokens_before, estimated_before, _ = context_tokens(before, estimator)
    kept_tokens = sum(
        estimate_node(n, estimator)
        for n in path[cut:]
        if n.type in MESSAGE_ENTRY_TYPES and message_of_node(n) is not None
    )
    plan = SummaryPlan(
        path=path,
        previous=previous,
        start=start,
        cut=cut,
        round=sum(1 for n in path if n.type == "compaction") + 1,
        turn_start=turn_start,
        tokens_before=tokens_before,
        tokens_before_estimated=estimated_before,
        kept_tokens=kept_tokens,
    )
    if not plan.summarized:
        return NoSummary("no messages before the cut that are not summarized already")
    return plan


def _valid_at_or_before(valid: list[bool], position: int, start: int) -> int | None:
    """The nearest valid cut at or before ``position`` that leaves something to summarize."""
    for candidate in range(position, start, -1):
        if valid[candidate]:
            return candidate
    return None


# --------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------


@dataclass
class FileChange:
    path: str
    writes: int = 0
    edits: int = 0

    def describe(self) -> str:
        done = []
        if self.writes:
            done.append(f"written {self.writes} times" if self.writes > 1 else "written")
        if self.edits:
            done.append(f"edited {self.edits} times" if self.edits > 1 else "edited")
        return f"`{self.path}` ({', '.join(done)})"


@dataclass
class ToolUse:
    name: str
    calls: int = 0
    failed: int = 0
    notable: list[str] = field(default_factory=list)


@dataclass
class ErrorFact:
    entry_id: str
    what: str  # the failed call, e.g. "bash `npm test`", or "model API"
    message: str
    outcome: str
    followed_by: str | None = None


@dataclass
class Facts:
    task: str | None = None
    task_entry_id: str | None = None
    task_chars: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)  # (entry id, first line)
    requests_omitted: int = 0
    files: dict[str, FileChange] = field(default_factory=dict)
    read_files: list[str] = field(default_factory=list)  # read and never modified
    tools: list[ToolUse] = field(default_factory=list)
    errors: list[ErrorFact] = field(default_factory=list)
    errors_omitted: int = 0
    decisions: list[str] = field(default_factory=list)
    user_messages: int = 0
    assistant_messages: int = 0
    tool_calls: int = 0

    @property
    def modified_files(self) -> list[str]:
        return sorted(self.files)


def _message_nodes(nodes: Sequence[Node]) -> list[tuple[Node, dict[str, Any]]]:
    out = []
    for node in nodes:
        if node.type not in MESSAGE_ENTRY_TYPES:
            continue
        message = message_of_node(node)
        if message is not None:
            out.append((node, message))
    return out


def extract_facts(history: Sequence[Node]) -> Facts:
    """The deterministic facts of the entries in ``history`` (root first)."""
    facts = Facts()
    messages = _message_nodes(history)
    calls: dict[str, tuple[str, str]] = {}  # call id -> (tool name, descriptor)
    usage: dict[str, ToolUse] = {}
    descriptors: dict[str, list[tuple[bool, str]]] = {}  # tool -> [(failed, descriptor)]
    read: set[str] = set()
    decisions: list[str] = []
    for node, message in messages:
        role = message.get("role")
        if role == "user":
            facts.user_messages += 1
            text = content_text(message.get("content"))
            images = _images(message.get("content"))
            if images:
                text = (text + f"\n[{images} image(s)]").strip()
            if facts.task is None:
                facts.task_entry_id = node.label
                facts.task_chars = len(text)
                facts.task = text if len(text) <= TASK_MAX_CHARS else _cut_task(text, node.label)
            else:
                facts.requests.append((node.label, one_line(text, REQUEST_CHARS)))
            decisions.extend(f'user: "{s}"' for s in _sentences(text, _USER_CONSTRAINT))
        elif role == "assistant":
            facts.assistant_messages += 1
            text = content_text(message.get("content"))
            decisions.extend(f'assistant: "{s}"' for s in _sentences(text, _ASSISTANT_DECISION))
            for block in _tool_calls(message):
                name = block.get("name")
                if not isinstance(name, str):
                    continue
                facts.tool_calls += 1
                arguments = block.get("arguments")
                descriptor = describe_call(name, arguments)
                if isinstance(block.get("id"), str):
                    calls[block["id"]] = (name, descriptor)
                use = usage.setdefault(name, ToolUse(name))
                use.calls += 1
                descriptors.setdefault(name, []).append((False, descriptor))
                target = call_path(arguments)
                if target is None:
                    continue
                if name == "write":
                    facts.files.setdefault(target, FileChange(target)).writes += 1
                elif name == "edit":
                    facts.files.setdefault(target, FileChange(target)).edits += 1
                elif name == "read":
                    read.add(target)
        elif role == "toolResult" and message.get("isError") is True:
            call_id = str(message.get("toolCallId"))
            name, descriptor = calls.get(call_id, (str(message.get("toolName", "tool")), ""))
            use = usage.setdefault(name, ToolUse(name))
            use.failed += 1
            if descriptor:
                descriptors.setdefault(name, []).append((True, descriptor))
    facts.read_files = sorted(read - set(facts.files))
    for use in usage.values():
        seen: list[str] = []
        entries = descriptors.get(use.name, [])
        # Failed calls first, then the most recent ones.
        for _, descriptor in [d for d in entries if d[0]] + list(reversed(entries)):
            if descriptor not in seen and descriptor != use.name:
                seen.append(descriptor)
            if len(seen) == NOTABLE_PER_TOOL:
                break
        use.notable = seen
    facts.tools = sorted(usage.values(), key=lambda u: (-u.calls, u.name))
    if len(facts.requests) > MAX_REQUESTS:
        facts.requests_omitted = len(facts.requests) - MAX_REQUESTS
        facts.requests = facts.requests[-MAX_REQUESTS:]
    errors = _errors(messages, calls)
    if len(errors) > MAX_ERRORS:
        facts.errors_omitted = len(errors) - MAX_ERRORS
        errors = errors[-MAX_ERRORS:]
    facts.errors = errors
    unique: list[str] = []
    for decision in decisions:
        if decision not in unique:
            unique.append(decision)
    facts.decisions = unique[-MAX_DECISIONS:]
    return facts


def _cut_task(text: str, entry_id: str) -> str:
    rest = len(text) - TASK_MAX_CHARS
    return (
        f"{text[:TASK_MAX_CHARS]}\n[... the task goes on for {rest:,} more characters; "
        f"it is entry {entry_id} of the session file ...]"
    )


def _sentences(text: str, pattern: re.Pattern[str]) -> list[str]:
    found = []
    for sentence in _SENTENCE_SPLIT.split(text):
        sentence = " ".join(sentence.split()).lstrip("-*#> ").strip()
        if 20 <= len(sentence) <= 300 and pattern.search(sentence):
            found.append(sentence.replace('"', "'"))
    return found


def _errors(
    messages: list[tuple[Node, dict[str, Any]]], calls: Mapping[str, tuple[str, str]]
) -> list[ErrorFact]:
    """Failed tool results and failed model requests, each with what came of it."""

    def what(message: Mapping[str, Any]) -> str:
        name = str(message.get("toolName", "tool"))
        return calls.get(str(message.get("toolCallId")), (name, name))[1] or name

    errors: list[ErrorFact] = []
    for position, (node, message) in enumerate(messages):
        role = message.get("role")
        later = messages[position + 1 :]
        if role == "toolResult" and message.get("isError") is True:
            name = str(message.get("toolName", "tool"))
            text = content_text(message.get("content"))
            first = next((line for line in text.splitlines() if line.strip()), "(no output)")
            outcome = f"no later {name} call before the cut"
            for other, reply in later:
                if reply.get("role") == "toolResult" and reply.get("toolName") == name:
                    if reply.get("isError") is True:
                        outcome = f"the next {name} call failed too (entry {other.label})"
                    else:
                        outcome = (
                            f"resolved: the next {name} call succeeded "
                            f"({what(reply)}, entry {other.label})"
                        )
                    break
            errors.append(
                ErrorFact(node.label, what(message), one_line(first), outcome, _next_reply(later))
            )
        elif role == "assistant" and message.get("stopReason") == "error":
            detail = message.get("errorMessage")
            outcome = "no later reply before the cut"
            for other, reply in later:
                if reply.get("role") == "assistant" and reply.get("stopReason") != "error":
                    outcome = f"resolved: the next model request succeeded (entry {other.label})"
                    break
            errors.append(
                ErrorFact(
                    node.label,
                    "model API",
                    one_line(detail if isinstance(detail, str) and detail else "error"),
                    outcome,
                )
            )
    return errors


def _next_reply(later: list[tuple[Node, dict[str, Any]]]) -> str | None:
    for _, message in later:
        if message.get("role") == "assistant":
            text = content_text(message.get("content")).strip()
            if text:
                return one_line(_SENTENCE_SPLIT.split(text)[0])
        if message.get("role") == "user":
            return None
    return None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render_facts(facts: Facts, round_number: int) -> str:
    """The facts as Markdown, ending with pi's ``<read-files>``/``<modified-files>`` tags."""
    blocks = [f"{FACTS_HEADING} (deterministic, round {round_number})"]
    if facts.task is not None:
        blocks.append(
            f"### Original task (entry {facts.task_entry_id}, word for word)\n"
            f"<original-task>\n{facts.task}\n</original-task>"
        )
    if facts.requests:
        lines = ["### Later requests"]
        if facts.requests_omitted:
            lines.append(f"- ({facts.requests_omitted} earlier requests not listed)")
        lines.extend(f"- (entry {entry_id}) {text}" for entry_id, text in facts.requests)
        blocks.append("\n".join(lines))
    lines = ["### Files created or modified (write, edit)"]
    changes = sorted(facts.files.values(), key=lambda c: c.path)
    lines.extend(f"- {change.describe()}" for change in changes[:MAX_FILES])
    if len(changes) > MAX_FILES:
        lines.append(f"- … and {len(changes) - MAX_FILES} more")
    if not changes:
        lines.append("- (none)")
    blocks.append("\n".join(lines))
    if facts.read_files:
        shown = ", ".join(f"`{p}`" for p in facts.read_files[:MAX_FILES])
        more = len(facts.read_files) - MAX_FILES
        blocks.append(f"### Files read\n{shown}" + (f", … and {more} more" if more > 0 else ""))
    lines = [
        f"### Tool usage ({_plural(facts.tool_calls, 'call')}; "
        f"{_plural(facts.assistant_messages, 'assistant message')}, "
        f"{_plural(facts.user_messages, 'user message')})"
    ]
    for use in facts.tools:
        failed = f", {use.failed} failed" if use.failed else ""
        examples = f": {'; '.join(use.notable)}" if use.notable else ""
        lines.append(f"- {use.name}: {_plural(use.calls, 'call')}{failed}{examples}")
    if not facts.tools:
        lines.append("- (no tool calls)")
    blocks.append("\n".join(lines))
    lines = ["### Errors and how they were resolved"]
    if facts.errors_omitted:
        lines.append(f"- ({facts.errors_omitted} earlier errors not listed)")
    for error in facts.errors:
        line = f'- {error.what} (entry {error.entry_id}): "{error.message}" → {error.outcome}'
        if error.followed_by:
            line += f'; next reply: "{error.followed_by}"'
        lines.append(line)
    if not facts.errors:
        lines.append("- (none)")
    blocks.append("\n".join(lines))
    if facts.decisions:
        lines = ["### Decisions and constraints (sentences quoted from the conversation)"]
        lines.extend(f"- {decision}" for decision in facts.decisions)
        blocks.append("\n".join(lines))
    if facts.read_files:
        blocks.append("<read-files>\n" + "\n".join(facts.read_files) + "\n</read-files>")
    if facts.modified_files:
        blocks.append(
            "<modified-files>\n" + "\n".join(facts.modified_files) + "\n</modified-files>"
        )
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------------------
# Previous summaries
# --------------------------------------------------------------------------------------


def summary_meta(node: Node) -> dict[str, Any]:
    details = node.entry.get("details")
    meta = details.get(META_KEY) if isinstance(details, dict) else None
    return meta if isinstance(meta, dict) else {}


def summary_body(summary: str) -> str:
    """A summary without the header line and the facts this tool appends (pi's own
    summaries, and any other text, come back whole)."""
    text = summary
    if text.startswith(HEADER_PREFIX):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        if text.startswith(EXTRACTIVE_NOTE):
            text = text[len(EXTRACTIVE_NOTE) :]
    at = text.rfind(f"\n{FACTS_HEADING} (deterministic")
    if at < 0 and text.lstrip().startswith(f"{FACTS_HEADING} (deterministic"):
        at = 0
    if at >= 0:
        text = text[:at]
    return text.strip().removesuffix("---").strip()


def previous_summary(plan: SummaryPlan) -> str | None:
    if plan.previous is None:
        return None
    summary = plan.previous.entry.get("summary")
    return summary_body(summary) if isinstance(summary, str) and summary.strip() else None


def latest_llm_summary(plan: SummaryPlan) -> tuple[int, str] | None:
    """The body of the newest summary on the path that an LLM wrote (ours or pi's), with its
    round number; extractive summaries are skipped, their facts are recomputed anyway."""
    compactions = [n for n in plan.path if n.type == "compaction"]
    for number in range(len(compactions), 0, -1):
        node = compactions[number - 1]
        if summary_meta(node).get("mode") == "extractive":
            continue
        summary = node.entry.get("summary")
        body = summary_body(summary) if isinstance(summary, str) else ""
        if body:
            return number, body
    return None


# --------------------------------------------------------------------------------------
# The prompt
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PromptLimits:
    tool_result_chars: int = 2_000
    max_input_tokens: int = 60_000


def _format_arguments(arguments: object) -> str:
    if not isinstance(arguments, dict):
        return cut_text(_json(arguments), ARGUMENT_CHARS)
    return ", ".join(
        f"{key}={trim_middle(_json(value), ARGUMENT_CHARS)}" for key, value in arguments.items()
    )


def _json(value: object) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def serialize_message(message: Mapping[str, Any], limits: PromptLimits) -> list[str]:
    """One message as tagged text lines, with long parts trimmed (tool results above all)."""
    role = message.get("role")
    content = message.get("content")
    parts: list[str] = []
    if role == "user":
        text = content_text(content)
        images = _images(content)
        if images:
            text += f"\n[{images} image(s)]"
        if text.strip():
            parts.append(f"[User]: {trim_middle(text.strip(), USER_TEXT_CHARS)}")
    elif role == "assistant":
        if message.get("stopReason") == "error":
            detail = message.get("errorMessage") or "error"
            parts.append(f"[Assistant request failed]: {one_line(str(detail))}")
        blocks = content if isinstance(content, list) else []
        thinking = "\n".join(
            b["thinking"]
            for b in blocks
            if isinstance(b, dict)
            and b.get("type") == "thinking"
            and isinstance(b.get("thinking"), str)
        ).strip()
        if thinking:
            parts.append(f"[Assistant thinking]: {trim_middle(thinking, THINKING_CHARS)}")
        text = content_text(content).strip()
        if text:
            parts.append(f"[Assistant]: {trim_middle(text, ASSISTANT_TEXT_CHARS)}")
        calls = [
            f"{b.get('name')}({_format_arguments(b.get('arguments'))})"
            for b in _tool_calls(message)
        ]
        if calls:
            parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
    elif role == "toolResult":
        text = content_text(content)
        images = _images(content)
        if images:
            text += f"\n[{images} image(s)]"
        status = " (error)" if message.get("isError") is True else ""
        name = message.get("toolName", "tool")
        body = trim_middle(text.strip(), limits.tool_result_chars) or "(no output)"
        parts.append(f"[Tool result {name}{status}]: {body}")
    elif role == "bashExecution":
        command = str(message.get("command", ""))
        output = trim_middle(str(message.get("output", "")), limits.tool_result_chars)
        parts.append(f"[User ran]: {one_line(command, 500)}\n{output}")
    elif role in ("custom", "branchSummary"):
        text = content_text(content) if role == "custom" else str(message.get("summary", ""))
        if text.strip():
            parts.append(f"[Context]: {trim_middle(text.strip(), USER_TEXT_CHARS)}")
    return parts


def serialize_conversation(nodes: Sequence[Node], limits: PromptLimits) -> str:
    """The messages as text, within ``limits.max_input_tokens`` (about 4 characters each):
    when too long, the oldest quarter of the budget and the newest rest are kept."""
    parts: list[str] = []
    for _, message in _message_nodes(nodes):
        parts.extend(serialize_message(message, limits))
    budget = limits.max_input_tokens * CHARS_PER_TOKEN
    total = sum(len(p) + 2 for p in parts)
    if total <= budget:
        return "\n\n".join(parts)
    head: list[str] = []
    used = 0
    for part in parts:
        if used + len(part) + 2 > budget // 4:
            break
        head.append(part)
        used += len(part) + 2
    tail: list[str] = []
    for part in reversed(parts[len(head) :]):
        if used + len(part) + 2 > budget:
            break
        tail.append(part)
        used += len(part) + 2
    tail.reverse()
    omitted = len(parts) - len(head) - len(tail)
    note = (
        f"[... {omitted} messages omitted to fit summary.maxInputTokens; the extracted facts "
        "cover them ...]"
    )
    return "\n\n".join([*head, note, *tail])


def build_prompt(
    plan: SummaryPlan, facts: Facts, limits: PromptLimits, max_tokens: int
) -> tuple[str, str]:
    """``(system, user)`` prompts that ask for this round's continuation summary."""
    previous = previous_summary(plan)
    pieces = [
        f"Write round {plan.round} of the continuation summary of an AI coding agent's session. "
        "The agent will resume from your summary plus the most recent messages, which it keeps "
        "word for word; the messages in <conversation> are dropped from its context and "
        "replaced by your summary.",
        f'<extracted-facts round="{plan.round}">\n{render_facts(facts, plan.round)}\n'
        "</extracted-facts>",
    ]
    if previous is not None:
        pieces.append(
            f'<previous-summary round="{plan.round - 1}">\n{previous}\n</previous-summary>'
        )
    pieces.append(
        f"<conversation>\n{serialize_conversation(plan.summarized, limits)}\n</conversation>"
    )
    if plan.turn_start is not None:
        request = content_text((message_of_node(plan.path[plan.turn_start]) or {}).get("content"))
        pieces.append(
            "The kept messages start in the middle of a turn. The request of that turn was:\n"
            f"<current-request>\n{trim_middle(request.strip(), USER_TEXT_CHARS)}\n"
            "</current-request>"
        )
    sections = "\n".join(f"## {name}" for name in SECTIONS)
    rules = [
        "Write the summary in Markdown with exactly these sections, in this order:",
        sections,
        "",
        "Rules:",
    ]
    if previous is not None:
        rules.append(
            f"- This is round {plan.round}. Integrate the previous summary with the new "
            "conversation: keep what is still true, move finished work to what was "
            "accomplished, update the current work and next steps. Do not repeat it as a "
            "separate block."
        )
    rules += [
        "- Keep exact file paths, commands, identifiers and error messages.",
        "- The extracted facts are attached to your summary word for word (the original "
        "task, files, tool usage, errors): refer to them, do not copy them out.",
        "- Tool results above were trimmed; do not guess what was cut.",
        f"- Be concise: stay well under {max_tokens} tokens.",
    ]
    pieces.append("\n".join(rules))
    return SYSTEM_PROMPT, "\n\n".join(pieces)


# --------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------


def header(plan: SummaryPlan, how: str) -> str:
    return (
        f"{HEADER_PREFIX}{plan.round} ({how}; gitclaw-compress). It covers "
        f"{len(plan.summarized)} entries up to entry {plan.path[plan.cut - 1].label}; the messages "
        "after it are kept word for word."
    )


def _turns(nodes: Sequence[Node]) -> list[list[tuple[Node, dict[str, Any]]]]:
    turns: list[list[tuple[Node, dict[str, Any]]]] = []
    for node, message in _message_nodes(nodes):
        if message.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append((node, message))
    return turns


def _last_reply(turn: list[tuple[Node, dict[str, Any]]]) -> str | None:
    for _, message in reversed(turn):
        if message.get("role") == "assistant":
            text = content_text(message.get("content")).strip()
            if text:
                return text
    return None


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def extractive_summary(plan: SummaryPlan, facts: Facts) -> str:
    """A summary built from the transcript and the facts alone, without an LLM."""
    turns = _turns(plan.history)
    out = [f"{header(plan, 'extractive, no LLM')}\n{EXTRACTIVE_NOTE}"]
    earlier = latest_llm_summary(plan)
    if earlier is not None:
        number, body = earlier
        out.append(f"## Earlier summary (round {number}, written by an LLM)\n\n{body}")
    lines = ["## What was accomplished"]
    lines.append(
        f"{facts.user_messages} user messages, {facts.assistant_messages} assistant messages "
        f"and {facts.tool_calls} tool calls before the cut; {len(facts.files)} files were "
        "written or edited (listed in the facts below). Each request, with the assistant's "
        "last reply to it:"
    )
    shown = turns[-MAX_OUTLINE_TURNS:]
    if len(turns) > len(shown):
        lines.append(f"- ({len(turns) - len(shown)} earlier turns not listed)")
    for turn in shown:
        node, message = turn[0]
        request = (
            one_line(content_text(message.get("content")), SNIPPET_CHARS)
            if message.get("role") == "user"
            else "(no request)"
        )
        calls = sum(len(_tool_calls(m)) for _, m in turn)
        reply = _last_reply(turn)
        lines.append(
            f"- (entry {node.label}) {request} [{calls} tool calls] → "
            + (f'"{one_line(reply, 300)}"' if reply else "(no reply text)")
        )
    out.append("\n".join(lines))
    current = ["## Current work"]
    if turns:
        last = turns[-1]
        node, message = last[0]
        if message.get("role") == "user":
            request = trim_middle(content_text(message.get("content")).strip(), 1000)
            current.append(
                f"The last request before the cut (entry {node.label}):\n\n{_quote(request)}"
            )
        reply = _last_reply(last)
        if reply:
            current.append(f"The assistant's last words before the cut:\n\n{cut_text(reply, 1500)}")
    if plan.turn_start is not None:
        current.append(
            "The kept messages below continue this turn: the cut falls in the middle of it."
        )
    out.append("\n\n".join(current))
    out.append(
        "## Next steps\nNot inferred (extractive summary): continue from the kept messages "
        "below and the last request."
    )
    out.append(render_facts(facts, plan.round))
    return "\n\n".join(out)


def llm_summary(plan: SummaryPlan, facts: Facts, text: str, *, model: str, provider: str) -> str:
    """The LLM's summary under a header, with the facts appended."""
    how = f"written by {model} via {provider}"
    return f"{header(plan, how)}\n\n{text.strip()}\n\n---\n\n{render_facts(facts, plan.round)}"


def compaction_entry(
    plan: SummaryPlan,
    facts: Facts,
    summary: str,
    *,
    entry_id: str,
    timestamp: str,
    meta: Mapping[str, Any],
) -> dict[str, Any]:
    """The pi ``compaction`` entry, a child of the current leaf."""
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": plan.leaf.id,
        "timestamp": timestamp,
        "summary": summary,
        "firstKeptEntryId": plan.first_kept.id,
        "tokensBefore": plan.tokens_before,
        "details": {
            "readFiles": facts.read_files,
            "modifiedFiles": facts.modified_files,
            META_KEY: dict(meta),
        },
    }


def summary_tokens(summary: str, estimator: TokenEstimator) -> int:
    return estimate_message_tokens({"role": "compactionSummary", "summary": summary}, estimator)


__all__ = [
    "SECTIONS",
    "Facts",
    "KeepPolicy",
    "NoSummary",
    "PromptLimits",
    "SummaryPlan",
    "build_prompt",
    "compaction_entry",
    "context_tokens",
    "extract_facts",
    "extractive_summary",
    "llm_summary",
    "plan_summary",
    "render_facts",
    "serialize_conversation",
    "summary_body",
    "summary_tokens",
    "valid_cuts",
]
