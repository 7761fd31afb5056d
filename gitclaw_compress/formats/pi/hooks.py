"""pi's extension that acts when a session ends.

pi (checked with 0.73.1) has no command hooks; it loads every `*.ts` of
`$PI_CODING_AGENT_DIR/extensions/` (`~/.pi/agent/extensions/`) as an extension, and emits
`session_shutdown` when a session ends or is switched away from (`-p` runs too, with
`reason` "quit"). Ours is a file of its own: on that event it starts our hook detached, the
payload (`reason`, `sessionFile`) as its last argument, and never waits for it or lets an
error reach pi. `uninstall` deletes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.shared.home import home_folder
from gitclaw_compress.formats.shared.hooks import runs_our_hook

AGENT = "pi"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
EXTENSIONS_FOLDER = "extensions"
FILE_NAME = "gitclaw-compress.ts"
EVENT = "session_shutdown"
_COMMAND = re.compile(r"^const HOOK: string\[\] = (\[.*\]);$", re.M)

EXTENSION = """\
// gitclaw-compress: written by `gitclaw-compress install --agents`, removed by
// `gitclaw-compress uninstall --agents`. When a session ends, it starts the command below
// detached (its payload as the last argument) and never waits for it or fails pi.
import { spawn } from "node:child_process";

const HOOK: string[] = @COMMAND@;

export default function (pi: any) {
  pi.on("@EVENT@", (event: any, ctx: any) => {
    try {
      const payload = JSON.stringify({
        reason: event?.reason ?? null,
        sessionFile: ctx?.sessionManager?.getSessionFile?.() ?? null,
      });
      const child = spawn(HOOK[0], [...HOOK.slice(1), payload], {
        detached: true,
        stdio: "ignore",
      });
      child.on("error", () => {});
      child.unref();
    } catch {
      // never fail pi
    }
  });
}
"""


class PiHook:
    event = f"extension on {EVENT}"
    payload_on_stdin = False

    def agent_folder(self, env: Mapping[str, str]) -> Path:
        return home_folder(env, AGENT_DIR_ENV, ".pi", "agent", tilde=True)[0]  # as pi does

    def hook_file(self, env: Mapping[str, str]) -> Path:
        return self.agent_folder(env) / EXTENSIONS_FOLDER / FILE_NAME

    def add(self, old: bytes | None, command: Sequence[str]) -> bytes:
        if old is not None and self.installed(old) is None:
            raise GitClawError("a file of that name that is not ours is there; nothing was changed")
        words = orjson.dumps(list(command)).decode()
        return EXTENSION.replace("@COMMAND@", words).replace("@EVENT@", EVENT).encode()

    def remove(self, text: bytes, created: bool) -> bytes | None:
        return None  # the whole file is ours

    def installed(self, text: bytes) -> list[str] | None:
        found = _COMMAND.search(text.decode("utf-8", "replace"))
        if found is None:
            return None
        try:
            words = orjson.loads(found.group(1))
        except orjson.JSONDecodeError:
            return None
        if isinstance(words, list) and all(isinstance(word, str) for word in words):
            return words if runs_our_hook(words, AGENT) else None
        return None

    def session(self, payload: object) -> str:
        if not isinstance(payload, dict):
            return "no payload"
        return f"session {payload.get('sessionFile')} ({payload.get('reason', 'no reason')})"

    def blocked(self, text: bytes) -> str | None:
        return None


HOOK = PiHook()
