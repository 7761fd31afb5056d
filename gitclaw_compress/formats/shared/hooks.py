"""The hook an agent runs when a session ends: the interface each agent's hooks.py implements,
and how to tell our command in an argv."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol


class LifecycleHook(Protocol):
    """Where and how an agent runs our `hook AGENT` command (formats/<agent>/hooks.py). These
    only turn a file's bytes into other bytes; ops/agenthooks/ reads, writes and restores."""

    event: str  # what runs it, for people: "SessionEnd hook", "notify program", …
    payload_on_stdin: bool  # else the agent passes its payload as the last argument

    def agent_folder(self, env: Mapping[str, str]) -> Path:
        """The agent's own folder (the agent is found when it exists)."""

    def hook_file(self, env: Mapping[str, str]) -> Path:
        """The file `add` writes."""

    def add(self, old: bytes | None, command: Sequence[str]) -> bytes:
        """The file with our hook running `command` (an argv), whatever ran before kept and
        chained; `old` None: there is no file. Raises GitClawError when it cannot."""

    def remove(self, text: bytes, created: bool) -> bytes | None:
        """The file without our hook (what it chained is back); None: delete it (`install`
        `created` it and nothing else is in it)."""

    def installed(self, text: bytes) -> list[str] | None:
        """The argv our hook in the file runs, or None when the file holds none of ours."""

    def session(self, payload: object) -> str:
        """The session a payload names, for the log: its id or file (never its messages)."""

    def blocked(self, text: bytes) -> str | None:
        """What in the file keeps the agent from running any hook, or None."""


def runs_our_hook(words: Sequence[str], agent: str) -> bool:
    """Whether an argv runs `gitclaw-compress hook AGENT` (any interpreter, or the script)."""
    return any(
        list(words[at : at + 2]) == ["hook", agent]
        and (words[at - 1] == "gitclaw_compress" or words[at - 1].endswith("gitclaw-compress"))
        for at in range(1, len(words) - 1)
    )
