"""Codex's rollout lines in neutral terms (`Format.view`): the input items each line gives
the model when Codex resumes it, and the private links the resume walk (`context.py`) reads.

A `response_item` line is one input item; `session_meta` gives the base instructions; a
`compacted` line gives its replacement history (or its summary); `turn_context`, rollbacks,
`token_count` and `task_started` give the model, the output budget, the rollback and the
recorded usage. Every other line is for Codex's UI and gives the model nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
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
    EntryView,
    Message,
    Part,
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
NO_SUMMARY = "(no summary available)"
EXIT_CODE = re.compile(r"^Exit code: (-?\d+)")
# The files a patch of `apply_patch` changes, and how ("*** Update File: src/app.py"); a
# moved file is written at its new place ("*** Move to: src/main.py" under its Update).
PATCH_FILE = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): (.+)$", re.MULTILINE)
PATCH_EFFECTS = {"Add File": WRITE, "Update File": EDIT, "Delete File": EDIT, "Move to": WRITE}

# Private links of an EntryView, read only by the resume walk in `context.py`.
LINE_TYPE = "line"  # the rollout line type
ROLLBACK = "rollback"  # thread_rolled_back: how many user turns it drops
USAGE = "usage"  # token_count: the context tokens of the reply before it
REPLACES = "replaces"  # compacted: "history" (a replacement history) or "messages" (none)
OUTPUT_BUDGET = "output_budget"  # turn_context: bytes of a tool output Codex sends at most


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
