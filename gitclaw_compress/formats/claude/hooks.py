"""Claude Code's `SessionEnd` hook, in the user's `settings.json`.

Claude Code (checked with 2.1.197 and 2.1.332) reads `<config dir>/settings.json`, the config
dir being `$CLAUDE_CONFIG_DIR` or `~/.claude`, and runs each command hook of
`{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "…"}]}]}}` through the
shell when a session ends (`-p` runs too, with `reason` "other"), the payload JSON on stdin
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `reason`). Every group runs, so
ours is one more group, written in front of the others; nothing else in the file changes.
`Stop` would run after every reply: the pass only touches sessions at rest, so the end of a
session is enough.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from gitclaw_compress.core.jsonspan import SpanError, locate, splice, value_at
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.shared.home import home_folder
from gitclaw_compress.formats.shared.hooks import runs_our_hook

AGENT = "claude"
CONFIG_ENV = "CLAUDE_CONFIG_DIR"
SETTINGS = "settings.json"
HOOKS = "hooks"
EVENT = "SessionEnd"
DISABLE_ALL = "disableAllHooks"  # checked with 2.1.197: no hook runs, ours neither
WS = b" \t\r\n"


def _document(text: bytes) -> dict[str, object]:
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise GitClawError(f"not valid JSON ({error}); nothing was changed") from None
    if not isinstance(document, dict):
        raise GitClawError("not a JSON object; nothing was changed")
    return document


def _groups(document: dict[str, object]) -> list[object]:
    hooks = document.get(HOOKS, {})
    if not isinstance(hooks, dict):
        raise GitClawError(f"{HOOKS!r} is not an object; nothing was changed")
    groups = hooks.get(EVENT, [])
    if not isinstance(groups, list):
        raise GitClawError(f"{HOOKS}.{EVENT} is not a list; nothing was changed")
    return groups


def _commands(group: object) -> list[list[str]]:
    """The argv of each command hook of a group (unsplittable commands: as one word)."""
    inner = group.get(HOOKS) if isinstance(group, dict) else None
    found = []
    for hook in inner if isinstance(inner, list) else []:
        command = hook.get("command") if isinstance(hook, dict) else None
        if isinstance(command, str):
            try:
                found.append(shlex.split(command))
            except ValueError:
                found.append([command])
    return found


def _is_ours(group: object) -> bool:
    commands = _commands(group)
    return bool(commands) and all(runs_our_hook(words, AGENT) for words in commands)


def _insert_first(raw: bytes, opening: int, text: bytes) -> bytes:
    """`text` as the first member or element of the container that opens at `opening`, in
    the file's own layout: the whitespace after the bracket comes before it again."""
    after = opening + 1
    end = after
    while end < len(raw) and raw[end] in WS:
        end += 1
    if raw[end : end + 1] in (b"}", b"]"):
        return splice(raw, [(after, after, text)])
    return splice(raw, [(after, after, raw[after:end] + text + b",")])


def _remove_item(raw: bytes, start: int, end: int) -> bytes:
    """Cut a member or element and one comma beside it (the one after it, else before it)."""
    after = end
    while after < len(raw) and raw[after] in WS:
        after += 1
    if raw[after : after + 1] == b",":
        after += 1
        while after < len(raw) and raw[after] in WS:
            after += 1
        return raw[:start] + raw[after:]
    before = start
    while before > 0 and raw[before - 1] in WS:
        before -= 1
    if raw[before - 1 : before] == b",":
        return raw[: before - 1] + raw[end:]
    return raw[:start] + raw[end:]


class ClaudeHook:
    event = f"{EVENT} hook"
    payload_on_stdin = True

    def agent_folder(self, env: Mapping[str, str]) -> Path:
        return home_folder(env, CONFIG_ENV, ".claude")[0]

    def hook_file(self, env: Mapping[str, str]) -> Path:
        return self.agent_folder(env) / SETTINGS

    def add(self, old: bytes | None, command: Sequence[str]) -> bytes:
        group = {HOOKS: [{"type": "command", "command": shlex.join(command)}]}
        if old is None or not old.strip(b" \t\r\n"):
            document = {HOOKS: {EVENT: [group]}}
            return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
        _groups(_document(old))  # refuses a file whose hooks are not what Claude Code reads
        spans = locate(old, [(HOOKS,), (HOOKS, EVENT)])
        # In front, in the deepest container there is: the event's list, hooks, the file.
        if (HOOKS, EVENT) in spans:
            opening, text = spans[(HOOKS, EVENT)].start, orjson.dumps(group)
        elif (HOOKS,) in spans:
            opening, text = spans[(HOOKS,)].start, orjson.dumps({EVENT: [group]})[1:-1]
        else:
            opening = len(old) - len(old.lstrip(WS))
            text = orjson.dumps({HOOKS: {EVENT: [group]}})[1:-1]
        return _insert_first(old, opening, text)

    def remove(self, text: bytes, created: bool) -> bytes | None:
        groups = _groups(_document(text))
        cuts: list[tuple[str | int, ...]] = []  # our groups, and ours in a group shared since
        for index, group in enumerate(groups):
            if _is_ours(group):
                cuts.append((HOOKS, EVENT, index))
            elif isinstance(group, dict) and isinstance(group.get(HOOKS), list):
                cuts += [
                    (HOOKS, EVENT, index, HOOKS, inner)
                    for inner, hook in enumerate(group[HOOKS])
                    if _is_ours({HOOKS: [hook]})
                ]
        if not cuts:
            return text
        try:
            spans = locate(text, cuts)
            # From the end of the file: the spans before a cut stay where they are.
            for span in sorted(spans.values(), key=lambda span: span.start, reverse=True):
                text = _remove_item(text, span.start, span.end)
            # An event list or a hooks object that only ours made goes with it.
            for path in ((HOOKS, EVENT), (HOOKS,)):
                found, value = value_at(_document(text), path)
                if found and value in ([], {}):
                    span = locate(text, [path])[path]
                    text = _remove_item(text, span.key_start, span.end)
        except (SpanError, KeyError):
            raise GitClawError("could not find our hook in the file; nothing was changed") from None
        if created and not _document(text):
            return None
        return text

    def installed(self, text: bytes) -> list[str] | None:
        try:
            groups = _groups(_document(text))
        except GitClawError:
            return None
        for group in groups:
            for words in _commands(group):
                if runs_our_hook(words, AGENT):
                    return words
        return None

    def session(self, payload: object) -> str:
        if not isinstance(payload, dict):
            return "no payload"
        return f"session {payload.get('session_id')} ({payload.get('reason', 'no reason')})"

    def blocked(self, text: bytes) -> str | None:
        try:
            disabled = _document(text).get(DISABLE_ALL) is True
        except GitClawError:
            return None
        return f"{DISABLE_ALL} is true in it: Claude Code runs no hook" if disabled else None


HOOK = ClaudeHook()
