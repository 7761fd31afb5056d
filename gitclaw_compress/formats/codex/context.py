"""What Codex CLI sends its model: the neutral view of rollout lines and the resume rebuild.

Codex (checked with 0.169.0 and 0.171.0) sends the Responses API an `input` array. On resume
it is built from the rollout alone: `session_meta.base_instructions` as the first developer
item, then the `response_item` payloads in file order, each one input item, with three
rewrites:

- a `compacted` line replaces everything before it with its `replacement_history`, items as
  recorded (a sealed `compaction` item stays that item), or, when it has none, with the
  earlier real user messages and its `message` as a user message after the summary prefix;
- `event_msg` `thread_rolled_back` drops the newest `num_turns` user turns, with the
  contextual messages written just before each dropped prompt;
- calls without an output get an "aborted" output right after them; outputs without a call
  are dropped. `system` messages and item types Codex does not know are never sent.

Every other line (`event_msg`, `turn_context`, Codex's own bookkeeping) is for its UI.
So one `Message` is one input item; the items of a `compacted` line share its `line`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from gitclaw_compress.core import stubs
from gitclaw_compress.core.lines import Entry, RawLine, parse_entry
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    EDIT,
    IMAGE,
    MESSAGE,
    META,
    READ,
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    WRITE,
    Conversation,
    EntryView,
    Message,
    Part,
    SummaryRequest,
)

DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(?:;[^,]*)?,")
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
# Response items Codex sends besides messages, calls and outputs (others are dropped).
OTHER_SENT_TYPES = frozenset(
    {"reasoning", "web_search_call", "image_generation_call", "tool_search_call",
     "tool_search_output", "compaction", "context_compaction", "agent_message"}
)  # fmt: skip
SEALED_SUMMARY_TYPES = frozenset({"compaction", "context_compaction"})
ABORTED_OUTPUT = "aborted"  # what Codex sends for a call whose output it never recorded
# Codex's own summary message starts with this line (compact/summary_prefix.md in 0.169.0,
# the same in 0.171.0).
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:"
)
# A compaction without replacement_history keeps the newest real user messages up to this.
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
NO_SUMMARY = "(no summary available)"
# Messages Codex injects as context, not typed by a person: a rollback trims them with the
# prompt they precede, and they never start a turn.
CONTEXT_USER_PREFIXES = (
    "# agents.md instructions",
    "<user_instructions>",
    "<environment_context>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<hook_prompt",
)
CONTEXT_DEVELOPER_PREFIXES = (
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<multi_agent_mode>",
    "<environments_instructions>",
    "<plugins_instructions>",
    "<skills_instructions>",
    "<personality_spec>",
    "<token_budget>",
    "<context_window>",
    "<context_window_guidance>",
    "<rollout_budget>",
    "<realtime_conversation>",
)
EXIT_CODE = re.compile(r"^Exit code: (-?\d+)")
# The files a patch of `apply_patch` changes, and how ("*** Update File: src/app.py"); a
# moved file is written at its new place ("*** Move to: src/main.py" under its Update).
PATCH_FILE = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): (.+)$", re.MULTILINE)
PATCH_EFFECTS = {"Add File": WRITE, "Update File": EDIT, "Delete File": EDIT, "Move to": WRITE}

# Private links of an EntryView, read only by `resume` below.
LINE_TYPE = "line"  # the rollout line type
ROLLBACK = "rollback"  # thread_rolled_back: how many user turns it drops
USAGE = "usage"  # token_count: the context tokens of the reply before it
REPLACES = "replaces"  # compacted: "history" (a replacement history) or "messages" (none)
OUTPUT_BUDGET = "output_budget"  # turn_context: bytes of a tool output Codex sends at most

# Codex cuts a long tool output in its middle when it records it for the model: to its
# truncation policy (turn_context `truncation_policy`; its models' default is 10,000 tokens)
# plus 20%, at 4 bytes a token.
DEFAULT_OUTPUT_BUDGET = 10_000 * 4 * 12 // 10


def payload_of(entry: Entry) -> dict[str, Any]:
    payload = entry.get("payload")
    return payload if isinstance(payload, dict) else {}


def is_data_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith("data:")


def data_url_image(url: str) -> tuple[str, int]:
    """(mime type, decoded bytes) of a base64 data URL."""
    match = DATA_URL.match(url)
    mime = (match.group(1) if match else None) or "image"
    data = url[match.end() :] if match else ""
    return mime, stubs.image_size(data)


def _compact(text: object) -> str:
    """A call's arguments as compact JSON (a string that is not JSON stays as it is)."""
    if isinstance(text, str):
        try:
            return orjson.dumps(orjson.loads(text)).decode()
        except orjson.JSONDecodeError:
            return text
    return "" if text is None else orjson.dumps(text).decode()


def _image(url: object) -> Part:
    if is_data_url(url):
        mime, size = data_url_image(str(url))
        return Part(IMAGE, media_type=mime, size=size)
    return Part(IMAGE)


def _content_parts(content: object) -> list[Part]:
    """Parts of a message's content: text items and images, in order."""
    if isinstance(content, str):
        return [Part(TEXT, content)]
    parts: list[Part] = []
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            parts.append(Part(TEXT, item["text"]))
        elif "image_url" in item:
            parts.append(_image(item.get("image_url")))
    return parts


def _failed(output: str) -> bool:
    """Whether an output reports a failure: a shell's "Exit code: N", apply_patch's metadata."""
    match = EXIT_CODE.match(output)
    if match:
        return match.group(1) != "0"
    if output.startswith("{"):
        try:
            parsed = orjson.loads(output)
        except orjson.JSONDecodeError:
            return False
        metadata = parsed.get("metadata") if isinstance(parsed, dict) else None
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        return isinstance(code, int) and code != 0
    return False


def _result(payload: dict[str, Any], name: str | None) -> list[Part]:
    output = payload.get("output")
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
    if isinstance(output, str):
        return [Part(TOOL_RESULT, output, name=name, call_id=call_id, error=_failed(output))]
    items = [item for item in output if isinstance(item, dict)] if isinstance(output, list) else []
    text = "\n".join(str(item["text"]) for item in items if isinstance(item.get("text"), str))
    parts = [Part(TOOL_RESULT, text, name=name, call_id=call_id, error=_failed(text))]
    return parts + [_image(item.get("image_url")) for item in items if "image_url" in item]


def _reasoning_text(payload: dict[str, Any]) -> str:
    """The readable part of a reasoning item: its summary and content texts."""
    texts: list[str] = []
    for key in ("summary", "content"):
        items = payload.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
    return "\n".join(texts)


def item_message(payload: dict[str, Any], line: int, model: str | None = None) -> Message | None:
    """The input item a response item is sent as; None for what Codex never sends."""
    kind = payload.get("type")
    name = payload.get("name") if isinstance(payload.get("name"), str) else None
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
    if kind == "message":
        role = payload.get("role")
        parts = _content_parts(payload.get("content"))
        if role == "user":
            return Message(USER, parts, line)
        if role == "developer":
            return Message(SYSTEM, parts, line)
        if role == "assistant":
            return Message(ASSISTANT, parts, line, model=model)
        return None  # "system" messages are never sent
    if kind in CALL_TYPES:
        arguments = payload.get("input") if kind == "custom_tool_call" else payload.get("arguments")
        if kind == "local_shell_call":
            arguments, name = payload.get("action"), name or "local_shell"
        if kind == "custom_tool_call" and isinstance(arguments, str):
            text = arguments  # freeform input (an apply_patch patch), not JSON
        else:
            text = _compact(arguments)
        files = _files_of_call(name, arguments)
        path, effect = files[0] if files else (None, None)
        part = Part(
            TOOL_CALL, text, name=name, call_id=call_id, path=path, effect=effect, files=files
        )
        return Message(ASSISTANT, [part], line, model=model)
    if kind in OUTPUT_TYPES:
        return Message(TOOL, _result(payload, name), line)
    if kind == "reasoning":
        sealed = isinstance(payload.get("encrypted_content"), str)
        part = Part(THINKING, _reasoning_text(payload), sealed=sealed)
        return Message(ASSISTANT, [part], line, model=model)
    if kind in SEALED_SUMMARY_TYPES:
        return Message(SUMMARY, [Part(THINKING, "", sealed=True)], line)
    if kind in OTHER_SENT_TYPES:
        tool = str(kind).removesuffix("_call")
        arguments = payload.get("action", payload.get("arguments"))
        part = Part(TOOL_CALL, _compact(arguments), name=tool, call_id=call_id)
        return Message(ASSISTANT, [part], line, model=model)
    return None


def patch_files(patch: str) -> tuple[tuple[str, str], ...]:
    """Every file an `apply_patch` patch changes, once, in its order, and how."""
    files: dict[str, str] = {}
    for action, path in PATCH_FILE.findall(patch):
        if path.strip():
            files.setdefault(path.strip(), PATCH_EFFECTS[action])
    return tuple(files.items())


def _files_of_call(name: str | None, arguments: object) -> tuple[tuple[str, str], ...]:
    """The files a call reads or changes, and how: every file of an `apply_patch` patch, in
    its order, and `view_image`'s. Shell commands name no file Codex records."""
    if name == "apply_patch":
        patch = arguments.get("input") if isinstance(arguments, dict) else arguments
        if not isinstance(patch, str):
            return ()
        return patch_files(patch)
    if name == "view_image" and isinstance(arguments, str):
        try:
            path = orjson.loads(arguments).get("path")
        except (orjson.JSONDecodeError, AttributeError):
            path = None
        if isinstance(path, str) and path:
            return ((path, READ),)
    return ()


def _first_text(message: Message) -> str:
    for part in message.parts:
        if part.kind == TEXT:
            return part.text.lstrip().lower()
    return ""


def is_context(message: Message) -> bool:
    """Context Codex injected (AGENTS.md, environment, permissions, …), not a person's words."""
    prefixes: tuple[str, ...]
    if message.role == USER:
        prefixes = CONTEXT_USER_PREFIXES
    elif message.role == SYSTEM:
        prefixes = CONTEXT_DEVELOPER_PREFIXES
    else:
        return False
    return any(
        part.kind == TEXT and part.text.lstrip().lower().startswith(prefixes)
        for part in message.parts
    )


def is_user_turn(message: Message) -> bool:
    """A user message that opens a turn in the history Codex rebuilds (rollbacks count these)."""
    return message.role in (USER, SUMMARY) and bool(message.parts) and not is_context(message)


def _usage(payload: dict[str, Any]) -> int | None:
    """The context size of a `token_count`: `last_token_usage.total_tokens`, what Codex itself
    counts as the tokens in its context (prompt with cache, plus the reply)."""
    info = payload.get("info")
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    total = last.get("total_tokens") if isinstance(last, dict) else None
    return total if isinstance(total, int) and total > 0 else None


def _window(payload: dict[str, Any]) -> int | None:
    """The model's context window a `task_started` or `token_count` records
    (`model_context_window`: the window Codex itself works with for the turn's model)."""
    info = payload.get("info")
    holder = info if payload.get("type") == "token_count" else payload
    window = holder.get("model_context_window") if isinstance(holder, dict) else None
    return window if type(window) is int and window > 0 else None


def _output_budget(policy: object) -> int | None:
    """The bytes of a tool output Codex keeps under a `truncation_policy`."""
    if not isinstance(policy, dict) or not isinstance(policy.get("limit"), int):
        return None
    per_unit = {"tokens": 4, "bytes": 1}.get(str(policy.get("mode")))
    return None if per_unit is None else policy["limit"] * per_unit * 12 // 10


def truncated(text: str, budget: int) -> str:
    """`text` cut in its middle to about `budget` bytes, as Codex sends a long output."""
    size = len(text.encode())
    if size <= budget:
        return text
    ratio = budget / size
    head = text[: int(len(text) * ratio / 2)]
    tail = text[len(text) - int(len(text) * ratio / 2) :]
    cut = (size - budget + 3) // 4
    return f"{head}…{cut} tokens truncated…{tail}"


def _compacted_messages(payload: dict[str, Any], line: int) -> list[Message]:
    history = payload.get("replacement_history")
    message_text = payload.get("message")
    summary = message_text if isinstance(message_text, str) else ""
    if not isinstance(history, list):
        return [Message(SUMMARY, [Part(TEXT, summary or NO_SUMMARY)], line)]
    messages: list[Message] = []
    for item in history:
        message = item_message(item, line) if isinstance(item, dict) else None
        if message is None:
            continue
        text = _first_text(message)
        if (
            message.role == USER
            and text
            and (text.startswith(SUMMARY_PREFIX.lower()) or text == summary.lstrip().lower())
        ):
            message.role = SUMMARY
        messages.append(message)
    return messages


def view_line(number: int, entry: Entry, model: str | None = None) -> EntryView:
    """One rollout line in neutral terms. `model`: the model of the newest turn_context."""
    line_type = str(entry.get("type"))
    payload = payload_of(entry)
    kind = payload.get("type")
    links: dict[str, str] = {LINE_TYPE: line_type}
    view = EntryView(number=number, id=None, parent=None, kind=META, links=links)
    if line_type == "session_meta":
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else base
        if isinstance(text, str):
            view.kind = MESSAGE
            view.messages = [Message(SYSTEM, [Part(TEXT, text)], number)]
    elif line_type == "response_item":
        message = item_message(payload, number, model)
        if message is not None:
            view.kind = MESSAGE
            view.messages = [message]
    elif line_type == "compacted":
        view.kind = COMPACTION
        view.messages = _compacted_messages(payload, number)
        replaced = isinstance(payload.get("replacement_history"), list)
        links[REPLACES] = "history" if replaced else "messages"
    elif line_type == "turn_context":
        view.model = payload.get("model") if isinstance(payload.get("model"), str) else None
        if (budget := _output_budget(payload.get("truncation_policy"))) is not None:
            links[OUTPUT_BUDGET] = str(budget)
    elif line_type == "event_msg":
        view.turn_start = kind == "user_message"
        if kind == "thread_rolled_back" and isinstance(payload.get("num_turns"), int):
            links[ROLLBACK] = str(payload["num_turns"])
        elif kind == "token_count" and (usage := _usage(payload)) is not None:
            links[USAGE] = str(usage)
        if kind in ("task_started", "token_count"):
            view.context_window = _window(payload)
    return view


def view_lines(lines: Iterable[RawLine]) -> Iterator[EntryView]:
    """Every line's view, with tool names on their outputs and each recorded usage on the
    reply it was reported for (the newest assistant item before the `token_count`)."""
    model: str | None = None
    names: dict[str, str] = {}
    last_reply: Message | None = None
    for line in lines:
        entry = parse_entry(line.data)
        if entry is None:
            continue
        view = view_line(line.number, entry, model)
        model = view.model or model
        for message in view.messages:
            for part in message.parts:
                if part.kind == TOOL_CALL and part.call_id and part.name:
                    names[part.call_id] = part.name
                elif part.kind == TOOL_RESULT and part.call_id and part.name is None:
                    part.name = names.get(part.call_id)
            if message.role == ASSISTANT:
                last_reply = message
        if USAGE in view.links and last_reply is not None:
            last_reply.usage = int(view.links[USAGE])
        yield view


def _call_ids(message: Message, kind: str) -> list[str]:
    return [part.call_id for part in message.parts if part.kind == kind and part.call_id]


@dataclass(slots=True)
class Sent:
    """One input item of the rebuilt history: its message, and the response item it is sent
    as where the caller asked for them (a summary record copies those verbatim)."""

    message: Message
    item: dict[str, Any] | None = None


def _drop_user_turns(history: list[Sent], turns: int) -> list[Sent]:
    """Codex's rollback: cut at the newest `turns` user turns, and the context just above."""
    starts = [index for index, sent in enumerate(history) if is_user_turn(sent.message)]
    if turns <= 0 or not starts:
        return history
    cut = starts[0] if turns >= len(starts) else starts[-turns]
    while cut > starts[0] and is_context(history[cut - 1].message):
        cut -= 1
    return history[:cut]


def user_item(text: str) -> dict[str, Any]:
    """A user message as Codex writes it in a replacement history."""
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _rebuilt_after_summary(history: list[Sent], summary: list[Message]) -> list[Sent]:
    """A `compacted` line without replacement history: the newest real user messages (up to
    Codex's budget, bytes / 4 per token) and then the summary."""
    kept: list[Sent] = []
    budget = COMPACT_USER_MESSAGE_MAX_TOKENS
    for sent in reversed(history):
        message = sent.message
        if message.role not in (USER, SUMMARY) or is_context(message) or budget <= 0:
            continue
        text = "\n".join(part.text for part in message.parts if part.kind == TEXT and part.text)
        if not text or text.startswith(SUMMARY_PREFIX + "\n"):
            continue
        tokens = (len(text.encode()) + 3) // 4
        if tokens > budget:
            text = stubs.first_last(text, budget * 4)
        kept.append(Sent(Message(USER, [Part(TEXT, text)], message.line), user_item(text)))
        budget -= tokens
    rebuilt = [Sent(m, user_item("\n".join(texts_of(m)))) for m in summary]
    return [*reversed(kept), *rebuilt]


def texts_of(message: Message) -> list[str]:
    return [part.text for part in message.parts if part.kind == TEXT]


def _paired(history: list[Sent]) -> list[Sent]:
    """Every call gets an output (an "aborted" one right after it); orphan outputs go."""
    called = {call for sent in history for call in _call_ids(sent.message, TOOL_CALL)}
    answered = {call for sent in history for call in _call_ids(sent.message, TOOL_RESULT)}
    paired: list[Sent] = []
    for sent in history:
        message = sent.message
        results = _call_ids(message, TOOL_RESULT)
        if message.role == TOOL and results and not set(results) & called:
            continue
        paired.append(sent)
        for call in _call_ids(message, TOOL_CALL):
            if call not in answered:
                name = next(p.name for p in message.parts if p.call_id == call)
                aborted = Part(TOOL_RESULT, ABORTED_OUTPUT, name=name, call_id=call)
                paired.append(Sent(Message(TOOL, [aborted], message.line)))
    return paired


@dataclass(slots=True)
class Replay:
    instructions: list[Message]
    history: list[Sent]  # before Codex pairs calls and outputs
    compaction: int | None
    model: str | None
    output_budget: int = DEFAULT_OUTPUT_BUDGET
    context_window: int | None = None  # the newest one recorded


# For each line, the response items its view's messages are sent as, in order.
ItemsByLine = Mapping[int, Sequence[dict[str, Any]]]


def replay(views: Sequence[EntryView], items: ItemsByLine | None = None) -> Replay:
    """Codex's resume walk over the lines, oldest first."""
    instructions: list[Message] = []
    history: list[Sent] = []
    compaction: int | None = None
    model: str | None = None
    budget = DEFAULT_OUTPUT_BUDGET
    window: int | None = None
    # The model of each user turn, to find the newest one a rollback leaves.
    turn_models: list[str | None] = []

    def sent(view: EntryView) -> list[Sent]:
        sources = items.get(view.number, ()) if items is not None else ()
        return [
            Sent(message, sources[index] if index < len(sources) else None)
            for index, message in enumerate(view.messages)
        ]

    for view in views:
        line_type = view.links.get(LINE_TYPE)
        if line_type == "session_meta" and not instructions:
            instructions = list(view.messages)
        elif line_type == "response_item":
            history.extend(sent(view))
        elif view.kind == COMPACTION:
            compaction = view.number
            if view.links.get(REPLACES) == "history":
                history = sent(view)
            else:
                history = _rebuilt_after_summary(history, list(view.messages))
        elif ROLLBACK in view.links:
            turns = int(view.links[ROLLBACK])
            history = _drop_user_turns(history, turns)
            del turn_models[max(len(turn_models) - turns, 0) :]
        elif view.model is not None:
            model = view.model
        if OUTPUT_BUDGET in view.links:
            budget = int(view.links[OUTPUT_BUDGET])
        window = view.context_window or window
        if view.turn_start:
            turn_models.append(model)
    newest = next((m for m in reversed(turn_models) if m), None) or model
    return Replay(instructions, history, compaction, newest, budget, window)


def _cut_outputs(message: Message, budget: int) -> Message:
    """The message with its long tool outputs cut as Codex sends them (a copy: the views
    keep what the line holds)."""
    if not any(p.kind == TOOL_RESULT and len(p.text.encode()) > budget for p in message.parts):
        return message
    parts = [
        dataclasses.replace(part, text=truncated(part.text, budget))
        if part.kind == TOOL_RESULT
        else part
        for part in message.parts
    ]
    return dataclasses.replace(message, parts=parts)


def rebuild(views: Sequence[EntryView]) -> Conversation:
    """The input items Codex sends when it resumes these lines, before its own new turn."""
    walk = replay(views)
    messages = [*walk.instructions, *(sent.message for sent in _paired(walk.history))]
    messages = [_cut_outputs(message, walk.output_budget) for message in messages]
    path = sorted({line for message in messages for line in message.source_lines()})
    return Conversation(
        messages=messages,
        path=path,
        compaction=walk.compaction,
        model=walk.model,
        context_window=walk.context_window,
    )


def sent_items(number: int, entry: Entry) -> list[dict[str, Any]]:
    """The response items a line's view messages are sent as (aligned with `view_line`)."""
    line_type = entry.get("type")
    payload = payload_of(entry)
    if line_type == "response_item":
        return [payload] if item_message(payload, number) is not None else []
    if line_type == "compacted":
        history = payload.get("replacement_history")
        if not isinstance(history, list):
            return []  # rebuilt from earlier messages by `replay`
        return [i for i in history if isinstance(i, dict) and item_message(i, number) is not None]
    return []


def summary_record(lines: Sequence[RawLine], request: SummaryRequest) -> bytes:
    """A `compacted` line Codex resumes from: its replacement history is one user message
    holding the summary, then the history Codex sends from `request.first_kept` on, copied
    item for item (sealed reasoning as it is). A kept output whose call is older pulls its
    call (and what lies between) in, so every tool pair stays whole. Codex reads the whole
    file, so the record goes at its end; it has no field for `tokens_before` or `details`."""
    views = list(view_lines(lines))
    items: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        entry = parse_entry(line.data)
        if entry is not None and (found := sent_items(line.number, entry)):
            items[line.number] = found
    history = [sent for sent in replay(views, items).history if sent.item is not None]
    start = next(
        (index for index, sent in enumerate(history) if sent.message.line >= request.first_kept),
        len(history),
    )
    kept_results = {
        call for sent in history[start:] for call in _call_ids(sent.message, TOOL_RESULT)
    }
    for index in range(start):
        if kept_results & set(_call_ids(history[index].message, TOOL_CALL)):
            start = index
            break
    text = f"{SUMMARY_PREFIX}\n{request.summary}"
    kept = [sent.item for sent in history[start:]]
    record = {
        "timestamp": request.timestamp,
        "type": "compacted",
        "payload": {"message": text, "replacement_history": [user_item(text), *kept]},
    }
    return orjson.dumps(record)
