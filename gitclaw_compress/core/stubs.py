"""The text of the stubs that replace dropped content: what was there and how to get it back."""

from __future__ import annotations

import re
import shlex

import orjson

from gitclaw_compress.settings import PreviewSettings as PreviewSettings

STUB_PREFIX = "[gitclaw-compress]"


def is_stub(value: object) -> bool:
    return isinstance(value, str) and value.startswith(STUB_PREFIX)


def show_command(session_ref: str, entry_id: str, *, ids_alone: bool = False) -> str:
    return ShowCommands(session_ref, ids_alone=ids_alone)(entry_id)


class ShowCommands:
    """`show_command` for one session, line after line: the path is quoted once, and an id
    of safe characters (uuids, hex, L42) needs no quoting. With `ids_alone` (the format's
    `stubs_name_ids_alone`), an id `show` finds among every session (`findable_anywhere`)
    goes without the path: a shorter stub, the same answer."""

    def __init__(self, session_ref: str, *, ids_alone: bool = False) -> None:
        self.prefix = f"{SHOW} {shlex.quote(session_ref)} "
        self.ids_alone = ids_alone

    def __call__(self, entry_id: str) -> str:
        if self.ids_alone and findable_anywhere(entry_id):
            return f"{SHOW} {entry_id}"
        if entry_id and _SAFE_ID.fullmatch(entry_id):
            return self.prefix + entry_id
        return self.prefix + shlex.quote(entry_id)


SHOW = "gitclaw-compress show"
_SAFE_ID = re.compile(r"[\w@%+=:,./-]+", re.ASCII)  # what shlex.quote leaves as it is
# Random ids long enough to be unique across every session of a repository: Claude Code's
# and Copilot CLI's uuids. pi's 8 hex digits are only unique inside their file (a repository
# of a million entries would share some), and `L42` is a line of one file: those keep the path.
GLOBAL_ID_MIN_CHARS = 20
_GLOBAL_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*", re.ASCII)


def findable_anywhere(entry_id: str) -> bool:
    """Whether `show ENTRY_ID` finds this id without a session path: long, random-looking,
    of letters, digits, `-` and `_` only (never quoted, never an option)."""
    return (
        len(entry_id) >= GLOBAL_ID_MIN_CHARS
        and _GLOBAL_ID.fullmatch(entry_id) is not None
        and any(char.isdigit() for char in entry_id)
    )


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


# A text of many MB (held at up to 4 bytes a character) is measured, and its stub's lines
# found, without a copy of it: in pieces of this many characters, and by position.
PIECE = 1 << 20


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8 (lone surrogates as three bytes each)."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[at : at + PIECE].encode("utf-8", "surrogatepass"))
        for at in range(0, len(text), PIECE)
    )


def text_shape(text: str) -> str:
    return f"{count_lines(text):,} lines, {utf8_size(text):,} bytes"


def _body_end(text: str) -> int:
    """Where `text.rstrip("\\n")` ends."""
    end = len(text)
    while end and text[end - 1] == "\n":
        end -= 1
    return end


def _cut_span(text: str, start: int, stop: int, limit: int) -> str:
    """`cut(text[start:stop], limit)`, without the copy of a long line."""
    if stop - start <= limit:
        return text[start:stop]
    return text[start : start + max(limit - 1, 0)] + "…"


def preview(text: str, settings: PreviewSettings) -> str:
    """Head and tail lines of `text`, each cut short, with the number of lines left out."""
    keep = settings.lines
    if keep <= 0:
        return ""
    end = _body_end(text)
    total = text.count("\n", 0, end) + 1
    head: list[tuple[int, int]] = []  # outputs run to thousands of lines: only those shown
    start = 0
    while len(head) < min(keep, total):
        stop = text.find("\n", start, end)
        stop = end if stop < 0 else stop
        head.append((start, stop))
        start = stop + 1
    tail: list[tuple[int, int]] = []
    stop = end
    while len(tail) < min(keep, total - len(head)):
        start = text.rfind("\n", 0, stop) + 1
        tail.append((start, stop))
        stop = start - 1
    tail.reverse()
    omitted = total - len(head) - len(tail)
    out = [_cut_span(text, start, stop, settings.line_chars) for start, stop in head]
    if omitted:
        out.append(f"… {omitted:,} lines omitted …")
    out.extend(_cut_span(text, start, stop, settings.line_chars) for start, stop in tail)
    return "\n".join(out)


def first_last(text: str, limit: int) -> str:
    end = _body_end(text)
    first_end = text.find("\n", 0, end)
    if first_end < 0:
        return f"first line: {_cut_span(text, 0, end, limit)!r}"
    first = _cut_span(text, 0, first_end, limit)
    last = _cut_span(text, text.rfind("\n", 0, end) + 1, end, limit)
    return f"first line: {first!r}; last line: {last!r}"


def image_size(data: object) -> int:
    """Decoded size of base64 image data."""
    if not isinstance(data, str):
        return 0
    return len(data) * 3 // 4 - data[-2:].count("=")


def describe_images(images: list[tuple[str, int]]) -> str:
    return ", ".join(f"image {mime} {size:,} bytes" for mime, size in images)


def tool_output_stub(
    *,
    tool: str,
    text: str,
    images: list[tuple[str, int]],
    failed: bool,
    reason: str | None,
    show: str,
    settings: PreviewSettings,
    short: bool = False,
    first_only: bool = False,
) -> str:
    """A tool result replaced because it was large, repeated later, or quoted. `short`
    (deep): without the call (the model sees it just before) and without "Full output:";
    `first_only` (deep, older turns): its shape, the `show` command and its first line
    alone (the agent's own error flag stays beside it)."""
    parts = []
    if text:
        parts.append(text_shape(text))
    if images:
        parts.append(describe_images(images))
    shape = "; ".join(parts) if parts else "empty"
    if first_only and not reason:
        head = f"{STUB_PREFIX} {shape} elided. {show}"
        return f"{head}\n{first_line(text, settings.line_chars)}" if text else head
    status = " (the tool failed)" if failed else ""
    head = f"{STUB_PREFIX} Output{'' if short else f' of {tool}'}{status} elided: {shape}."
    if reason:
        head += f" {reason}."
    head += f" {show}" if short else f" Full output: {show}"
    if reason or not text:
        return head
    return f"{head}\n{preview(text, settings)}"


def first_line(text: str, limit: int) -> str:
    """The first line of `text`, cut to `limit` characters."""
    end = text.find("\n")
    return _cut_span(text, 0, len(text) if end < 0 else end, limit)


def head(text: str, settings: PreviewSettings) -> str:
    """The first lines of `text` (twice the preview's), each cut short."""
    lines = text[: settings.lines * 2 * (settings.line_chars + 1) * 4].split("\n")
    shown = [cut(line, settings.line_chars) for line in lines[: settings.lines * 2]]
    return "\n".join(shown)


def user_text_stub(text: str, show: str, settings: PreviewSettings) -> str:
    """Text a person pasted in an older turn (deep), long since answered."""
    return f"{STUB_PREFIX} {text_shape(text)} elided. {show}\n{head(text, settings)}"


def argument_stub(
    key: str, value: object, show: str, line_chars: int, *, short: bool = False
) -> str:
    """A tool-call argument replaced because the call was large. `short` (deep): its first
    line alone, and the command without "Full call:"."""
    if isinstance(value, str):
        if short:  # the key names it already
            first = first_line(value, line_chars)
            return f"{STUB_PREFIX} {text_shape(value)} elided; first line {first!r}. {show}"
        return (
            f"{STUB_PREFIX} {key}: {text_shape(value)} elided; "
            f"{first_last(value, line_chars)}. Full call: {show}"
        )
    kind = (
        type(value).__name__
        if not isinstance(value, dict | list)
        else ("object" if isinstance(value, dict) else "array")
    )
    return f"{STUB_PREFIX} {key}: {kind} elided. Full call: {show}"


def command_stub(command: str, limit: int, show: str, *, short: bool = False) -> str:
    """A long shell command keeps its first `limit` characters; `short` (deep): without
    "Full call:"."""
    rest = len(command.encode("utf-8", "surrogatepass")) - len(
        command[:limit].encode("utf-8", "surrogatepass")
    )
    full = "" if short else " Full call:"
    return f"{command[:limit]} {STUB_PREFIX} {rest:,} more bytes elided.{full} {show}"


def details_stub(size: int, show: str) -> str:
    return (
        f"{STUB_PREFIX} details elided ({size:,} bytes, shown only in the UI, never sent "
        f"to the model). Full entry: {show}"
    )


def image_stub(who: str, mime: str, size: int, show: str) -> str:
    return f"{STUB_PREFIX} {who} image elided: {mime}, {size:,} bytes. Full entry: {show}"


def bash_output_stub(text: str, show: str, settings: PreviewSettings) -> str:
    return (
        f"{STUB_PREFIX} Output elided: {text_shape(text)}. Full entry: {show}\n"
        f"{preview(text, settings)}"
    )


def ui_value_stub(
    name: str, text: str, images: list[tuple[str, int]], show: str, *, short: bool = False
) -> str:
    """A value only the transcript renderer reads (Claude Code's `toolUseResult`); `short`
    (deep): its shape and the `show` command, no more."""
    shape = "; ".join(
        ([text_shape(text)] if text or not images else [])
        + ([describe_images(images)] if images else [])
    )
    if short:
        return f"{STUB_PREFIX} {shape}, UI only. {show}"
    return (
        f"{STUB_PREFIX} {name} elided: {shape} (shown only in the UI, never sent to the "
        f"model). Full entry: {show}"
    )


def superseded_stub(key: str, text: str, show: str) -> str:
    """A value on a line the agent never sends again (before its newest compaction record)."""
    return f"{STUB_PREFIX} {key}: {text_shape(text)}, before the compaction. {show}"


def unread_stub(text: str) -> str:
    """A value on a line that no model is sent and no CLI reads again (deep, Claude Code's
    lines before its newest compaction record): its shape alone. The line's id and marker
    are what `show` and `restore` need; no reader of this text needs more."""
    return f"{STUB_PREFIX} {text_shape(text)}"


def ui_copy_stub(key: str, size: int, show: str) -> str:
    """A UI-only copy of something the model sees elsewhere (Codex's event_msg outputs)."""
    return (
        f"{STUB_PREFIX} {key} elided ({size:,} bytes, a copy for the UI; the model sees the "
        f"tool output). Full entry: {show}"
    )


def repeated_stub(key: str, size: int, where: str, show: str) -> str:
    """Settings every `where` line repeats, of which the agent reads only the newest."""
    return (
        f"{STUB_PREFIX} {key} elided ({size:,} bytes, repeated in every {where}; only the "
        f"newest is read). Full entry: {show}"
    )


# Raw U+2028/U+2029 are valid JSON but end a line for some readers (Copilot CLI's).
_LINE_SEPARATORS = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def encode_stub(value: object) -> bytes:
    """A stub as one line of JSON that every agent's reader accepts."""
    data = orjson.dumps(value)
    for raw, escaped in _LINE_SEPARATORS:
        data = data.replace(raw, escaped)
    return data
