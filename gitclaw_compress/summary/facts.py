"""The facts of a summary, read deterministically from neutral messages.

:func:`extract_facts` reads every message before the cut (see :mod:`plan`): the original
task word for word, later requests, files written, edited and read, tool usage, errors and
what followed them, and sentences that state decisions. :func:`render_facts` writes them as
Markdown, appended to every summary, so that nothing critical depends on an LLM alone.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gitclaw_compress.model import (
    ASSISTANT,
    EDIT,
    IMAGE,
    READ,
    THINKING,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    WRITE,
    Message,
    Part,
)
from gitclaw_compress.summary.text import (
    arguments_of,
    describe_call,
    first_sentence,
    one_line,
    plural,
    sentences,
)

FACTS_HEADING = "## Extracted facts"

# Bounds on what facts quote.
TASK_MAX_CHARS = 12_000
REQUEST_CHARS = 300
MAX_REQUESTS = 15
MAX_FILES = 50
MAX_ERRORS = 10
MAX_DECISIONS = 10
NOTABLE_PER_TOOL = 3

_ASSISTANT_DECISION = re.compile(
    r"\b(decided|decision|instead of|rather than|chose|chosen|going with|opted|the plan is"
    r"|approach|trade-?off|because)\b",
    re.IGNORECASE,
)
_USER_CONSTRAINT = re.compile(
    r"\b(must|must not|don't|do not|never|always|make sure|prefer|please use|only use)\b",
    re.IGNORECASE,
)


def label(message: Message) -> str:
    """The id a summary names a message by, or its line for a message without one."""
    return message.entry_id if message.entry_id is not None else f"line {message.line}"


def text_of(message: Message) -> str:
    """The text parts of a message, joined by newlines (tool results: their text)."""
    return "\n".join(
        part.text for part in message.parts if part.kind not in (IMAGE, TOOL_CALL, THINKING)
    )


def images_of(message: Message) -> int:
    return sum(1 for part in message.parts if part.kind == IMAGE)


def tool_calls(message: Message) -> list[Part]:
    if message.role != ASSISTANT:
        return []
    return [part for part in message.parts if part.kind == TOOL_CALL]


def tool_result(message: Message) -> Part | None:
    return next((part for part in message.parts if part.kind == TOOL_RESULT), None)


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


def _user_text(message: Message) -> str:
    text = text_of(message)
    images = images_of(message)
    return (text + f"\n[{images} image(s)]").strip() if images else text


def is_person(message: Message, people: Collection[int] | None) -> bool:
    """Whether a person wrote `message`: a USER message on a line that starts a turn (with
    `people` None, every USER message)."""
    return message.role == USER and (people is None or message.line in people)


def extract_facts(history: Sequence[Message], people: Collection[int] | None = None) -> Facts:
    """The deterministic facts of the messages in ``history`` (root first); ``people`` are
    the lines that start turns (`SummaryPlan.people`)."""
    facts = Facts()
    calls: dict[str, tuple[str, str]] = {}  # call id -> (tool name, descriptor)
    usage: dict[str, ToolUse] = {}
    descriptors: dict[str, list[tuple[bool, str]]] = {}  # tool -> [(failed, descriptor)]
    read: set[str] = set()
    decisions: list[str] = []
    for message in history:
        result = tool_result(message)
        if is_person(message, people):
            facts.user_messages += 1
            text = _user_text(message)
            if facts.task is None:
                facts.task_entry_id = label(message)
                facts.task_chars = len(text)
                facts.task = (
                    text if len(text) <= TASK_MAX_CHARS else _cut_task(text, label(message))
                )
            else:
                facts.requests.append((label(message), one_line(text, REQUEST_CHARS)))
            decisions.extend(f'user: "{s}"' for s in sentences(text, _USER_CONSTRAINT))
        elif message.role == ASSISTANT:
            facts.assistant_messages += 1
            text = text_of(message)
            decisions.extend(f'assistant: "{s}"' for s in sentences(text, _ASSISTANT_DECISION))
            _note_calls(message, facts, calls, usage, descriptors, read)
        elif result is not None and result.error:
            name, descriptor = calls.get(result.call_id or "", (result.name or "tool", ""))
            use = usage.setdefault(name, ToolUse(name))
            use.failed += 1
            if descriptor:
                descriptors.setdefault(name, []).append((True, descriptor))
    facts.read_files = sorted(read - set(facts.files))
    for use in usage.values():
        use.notable = _notable(use.name, descriptors.get(use.name, []))
    facts.tools = sorted(usage.values(), key=lambda u: (-u.calls, u.name))
    if len(facts.requests) > MAX_REQUESTS:
        facts.requests_omitted = len(facts.requests) - MAX_REQUESTS
        facts.requests = facts.requests[-MAX_REQUESTS:]
    errors = _errors(list(history), calls, people)
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


def _note_calls(
    message: Message,
    facts: Facts,
    calls: dict[str, tuple[str, str]],
    usage: dict[str, ToolUse],
    descriptors: dict[str, list[tuple[bool, str]]],
    read: set[str],
) -> None:
    """Count the tool calls of one assistant message, and the files they write, edit and
    read, into what `extract_facts` gathers."""
    for call in tool_calls(message):
        if call.name is None:
            continue
        facts.tool_calls += 1
        descriptor = describe_call(call.name, arguments_of(call.text))
        if call.call_id is not None:
            calls[call.call_id] = (call.name, descriptor)
        use = usage.setdefault(call.name, ToolUse(call.name))
        use.calls += 1
        descriptors.setdefault(call.name, []).append((False, descriptor))
        for path, effect in call.touched():
            if effect == WRITE:
                facts.files.setdefault(path, FileChange(path)).writes += 1
            elif effect == EDIT:
                facts.files.setdefault(path, FileChange(path)).edits += 1
            elif effect == READ:
                read.add(path)


def _notable(name: str, entries: list[tuple[bool, str]]) -> list[str]:
    """A tool's notable calls: failed ones first, then the most recent, each once."""
    seen: list[str] = []
    for _, descriptor in [d for d in entries if d[0]] + list(reversed(entries)):
        if descriptor not in seen and descriptor != name:
            seen.append(descriptor)
        if len(seen) == NOTABLE_PER_TOOL:
            break
    return seen


def _cut_task(text: str, entry_id: str) -> str:
    rest = len(text) - TASK_MAX_CHARS
    return (
        f"{text[:TASK_MAX_CHARS]}\n[... the task goes on for {rest:,} more characters; "
        f"it is entry {entry_id} of the session file ...]"
    )


def _errors(
    messages: list[Message],
    calls: Mapping[str, tuple[str, str]],
    people: Collection[int] | None,
) -> list[ErrorFact]:
    """Failed tool results and failed model requests, each with what came of it."""

    def what(result: Part) -> str:
        name = result.name or "tool"
        return calls.get(result.call_id or "", (name, name))[1] or name

    errors: list[ErrorFact] = []
    for position, message in enumerate(messages):
        later = messages[position + 1 :]
        result = tool_result(message)
        if result is not None and result.error:
            name = result.name or "tool"
            first = next((ln for ln in result.text.splitlines() if ln.strip()), "(no output)")
            outcome = f"no later {name} call before the cut"
            for other in later:
                reply = tool_result(other)
                if reply is not None and reply.name == result.name:
                    if reply.error:
                        outcome = f"the next {name} call failed too (entry {label(other)})"
                    else:
                        outcome = (
                            f"resolved: the next {name} call succeeded "
                            f"({what(reply)}, entry {label(other)})"
                        )
                    break
            errors.append(
                ErrorFact(
                    label(message),
                    what(result),
                    one_line(first),
                    outcome,
                    _next_reply(later, people),
                )
            )
        elif message.role == ASSISTANT and message.failed:
            outcome = "no later reply before the cut"
            for other in later:
                if other.role == ASSISTANT and not other.failed:
                    outcome = f"resolved: the next model request succeeded (entry {label(other)})"
                    break
            errors.append(
                ErrorFact(label(message), "model API", one_line(message.error or "error"), outcome)
            )
    return errors


def _next_reply(later: list[Message], people: Collection[int] | None) -> str | None:
    for message in later:
        if message.role == ASSISTANT:
            text = text_of(message).strip()
            if text:
                return one_line(first_sentence(text))
        if is_person(message, people):
            return None
    return None


def render_facts(facts: Facts, round_number: int) -> str:
    """The facts as Markdown, ending with ``<read-files>``/``<modified-files>`` tags."""
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
        f"### Tool usage ({plural(facts.tool_calls, 'call')}; "
        f"{plural(facts.assistant_messages, 'assistant message')}, "
        f"{plural(facts.user_messages, 'user message')})"
    ]
    for use in facts.tools:
        failed = f", {use.failed} failed" if use.failed else ""
        examples = f": {'; '.join(use.notable)}" if use.notable else ""
        lines.append(f"- {use.name}: {plural(use.calls, 'call')}{failed}{examples}")
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
