"""Codex CLI's `notify` program, in `config.toml`.

Codex (checked with 0.169.0 and 0.171.0, `codex exec` too) runs the argv of the top-level
`notify = ["prog", "arg"]` of `$CODEX_HOME/config.toml` (`~/.codex`) after each turn, with one
more argument: a JSON payload (`type` "agent-turn-complete", `thread-id`, `turn-id`, `cwd`,
and the turn's messages, which the log never keeps). It takes one program, so ours runs the
one that was there: ours is `[…, "hook", "codex", "--", <the previous argv>]`, and the hook
starts the pass, then runs the previous argv with the payload.

Codex 0.169.0 has hooks of its own too (`hooks.json`, `SessionEnd` with `transcript_path`),
but runs a new one only after the user trusts it in `/hooks`; `notify` needs no trust.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.shared.home import home_folder
from gitclaw_compress.formats.shared.hooks import runs_our_hook

AGENT = "codex"
HOME_ENV = "CODEX_HOME"
CONFIG = "config.toml"
KEY = "notify"
CHAIN = "--"  # in our argv: what follows is the program that was there before
_ASSIGNMENT = re.compile(rb"^[ \t]*notify[ \t]*=")


def _table(text: bytes) -> dict[str, object]:
    try:
        return tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise GitClawError("not UTF-8 text; nothing was changed") from None
    except tomllib.TOMLDecodeError as error:
        raise GitClawError(f"not valid TOML ({error}); nothing was changed") from None


def _argv(table: dict[str, object]) -> list[str] | None:
    value = table.get(KEY)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise GitClawError(f"{KEY} is not a list of strings; nothing was changed")
    return list(value)


def _line(argv: Sequence[str]) -> bytes:
    # A JSON string is a TOML basic string (raw UTF-8, control characters escaped).
    words = ", ".join(orjson.dumps(word).decode() for word in argv)
    return f"{KEY} = [{words}]".encode()


def _assignment(text: bytes) -> tuple[int, int]:
    """The byte range of the top-level `notify = …` (its whole lines), checked by parsing: the
    file without them must hold every other key as before."""
    table = _table(text)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for first, line in enumerate(lines):
        if not _ASSIGNMENT.match(line):
            continue
        for last in range(first, len(lines)):
            try:
                alone = tomllib.loads(b"".join(lines[first : last + 1]).decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            if alone.get(KEY) == table.get(KEY):
                start, end = offsets[first], offsets[last + 1]
                rest = {key: value for key, value in table.items() if key != KEY}
                try:
                    if _table(text[:start] + text[end:]) == rest:
                        return start, end
                except GitClawError:
                    pass
            break
    raise GitClawError(f"could not find the top-level {KEY} line; nothing was changed")


def _replace(text: bytes, span: tuple[int, int], argv: Sequence[str] | None) -> bytes:
    start, end = span
    if argv is None:
        return text[:start] + text[end:]
    ending = b"\n" if text[start:end].endswith(b"\n") else b""
    return text[:start] + _line(argv) + ending + text[end:]


class CodexHook:
    event = f"{KEY} program (after each turn)"
    payload_on_stdin = False

    def agent_folder(self, env: Mapping[str, str]) -> Path:
        return home_folder(env, HOME_ENV, ".codex")[0]

    def hook_file(self, env: Mapping[str, str]) -> Path:
        return self.agent_folder(env) / CONFIG

    def add(self, old: bytes | None, command: Sequence[str]) -> bytes:
        old = old or b""
        table = _table(old)
        before = _argv(table)
        argv = [*command, CHAIN, *(before or [])]
        # Top-level keys come before every table: a first line is one.
        new = _line(argv) + b"\n" + old if before is None else _replace(old, _assignment(old), argv)
        if _argv(_table(new)) != argv:
            raise GitClawError(f"could not write {KEY} there; nothing was changed")
        return new

    def remove(self, text: bytes, created: bool) -> bytes | None:
        argv = self.installed(text)
        if argv is None:
            return text
        chained = argv[argv.index(CHAIN) + 1 :] if CHAIN in argv else []
        left = _replace(text, _assignment(text), chained or None)
        return None if created and not left.strip() else left

    def installed(self, text: bytes) -> list[str] | None:
        try:
            argv = _argv(_table(text))
        except GitClawError:
            return None
        return argv if argv is not None and runs_our_hook(argv, AGENT) else None

    def session(self, payload: object) -> str:
        if not isinstance(payload, dict):
            return "no payload"
        return f"thread {payload.get('thread-id')} ({payload.get('type')})"

    def blocked(self, text: bytes) -> str | None:
        return None


HOOK = CodexHook()
