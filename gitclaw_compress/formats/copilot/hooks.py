"""Copilot CLI's `sessionEnd` hook, in a hooks file of our own.

Copilot CLI (checked with 1.0.102, `-p` runs too) loads every `*.json` of
`$COPILOT_HOME/hooks/` (`~/.copilot/hooks/`), personal hooks beside a repository's
`.github/hooks/`: `{"version": 1, "hooks": {"sessionEnd": [{"type": "command", "bash": "…",
"timeoutSec": 30}]}}`. It runs the `bash` command when a session ends (in `-p` mode after the
completed turn), the payload JSON on stdin (`sessionId`, `cwd`, `reason`; `agentStop` also has
`transcriptPath`). Ours is a file of its own, so no other file changes and every other hook
runs as before; `uninstall` deletes it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.shared.home import home_folder
from gitclaw_compress.formats.shared.hooks import runs_our_hook

AGENT = "copilot"
HOME_ENV = "COPILOT_HOME"
HOOKS_FOLDER = "hooks"
FILE_NAME = "gitclaw-compress.json"
EVENT = "sessionEnd"
TIMEOUT_SECONDS = 30  # ours returns at once; Copilot CLI would stop a hook after this


class CopilotHook:
    event = f"{EVENT} hook"
    payload_on_stdin = True

    def agent_folder(self, env: Mapping[str, str]) -> Path:
        return home_folder(env, HOME_ENV, ".copilot")[0]

    def hook_file(self, env: Mapping[str, str]) -> Path:
        return self.agent_folder(env) / HOOKS_FOLDER / FILE_NAME

    def add(self, old: bytes | None, command: Sequence[str]) -> bytes:
        if old is not None and self.installed(old) is None:
            raise GitClawError("a file of that name that is not ours is there; nothing was changed")
        hook = {"type": "command", "bash": shlex.join(command), "timeoutSec": TIMEOUT_SECONDS}
        document = {"version": 1, "hooks": {EVENT: [hook]}}
        return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"

    def remove(self, text: bytes, created: bool) -> bytes | None:
        return None  # the whole file is ours

    def installed(self, text: bytes) -> list[str] | None:
        try:
            document = orjson.loads(text)
            for hook in document["hooks"][EVENT]:
                words = shlex.split(hook["bash"])
                if runs_our_hook(words, AGENT):
                    return words
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None
        return None

    def session(self, payload: object) -> str:
        if not isinstance(payload, dict):
            return "no payload"
        return f"session {payload.get('sessionId')} ({payload.get('reason', 'no reason')})"

    def blocked(self, text: bytes) -> str | None:
        return None


HOOK = CopilotHook()
