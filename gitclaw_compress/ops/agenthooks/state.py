"""How each agent's hook stands, for `doctor`: installed or not, what it chains, whether it
still works, and what the last pass did, from the hook file, install's record and the log."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitclaw_compress.formats import lifecycle_hook
from gitclaw_compress.formats.base import TITLES
from gitclaw_compress.ops.agenthooks.files import (
    AGENTS,
    PASS_ENDED,
    PASS_HELD,
    PASS_STARTED,
    STORES_COMMAND,
    hook_command,
    log_path,
    read_file,
)
from gitclaw_compress.ops.agenthooks.records import load_record

HELD_NAMED = 3  # held sessions doctor names in its line; the log has them all


@dataclass(frozen=True, slots=True)
class AgentHookState:
    agent: str
    title: str
    event: str
    file: Path
    found: bool  # the agent's folder exists
    command: list[str] | None  # what our hook there runs; None: not installed
    current: bool  # it runs this interpreter's gitclaw-compress
    chained: str | None  # the program it runs after ours (Codex's previous notify), if any
    last: str | None  # the newest line of the log about this agent
    problem: str | None
    held: list[str]  # the sessions the last pass held for a secret, by path

    @property
    def installed(self) -> bool:
        return self.command is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "event": self.event,
            "file": str(self.file),
            "found": self.found,
            "installed": self.installed,
            "command": self.command,
            "current": self.current,
            "chained": self.chained,
            "last": self.last,
            "problem": self.problem,
            "held": self.held,
        }


def last_lines(env: Mapping[str, str], agent: str, count: int = 1) -> list[str]:
    """The newest lines of the log that are about `agent` (the hook's and the pass's)."""
    try:
        lines = log_path(env).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    prefix = f" {agent}: "
    return [line for line in lines if prefix in line][-count:]  # count 0: all


def chained_program(command: Sequence[str]) -> str | None:
    """The program our hook runs after itself (Codex's previous notify), for people: its
    arguments are not shown (they may hold a token)."""
    chained = list(command[command.index("--") + 1 :]) if "--" in command else []
    if not chained:
        return None
    more = len(chained) - 1
    return chained[0] + (f" with {more} argument{'s' * (more != 1)}" if more else "")


def hook_state(agent: str, env: Mapping[str, str]) -> AgentHookState:
    hook = lifecycle_hook(agent)
    path = hook.hook_file(env)
    text = read_file(path)
    command = hook.installed(text) if text is not None else None
    record = load_record(env, agent, path)
    chained = chained_program(command or [])
    problem = None
    if command is not None and not os.access(command[0], os.X_OK):
        problem = (
            f"{path}: our hook runs {command[0]}, which is gone; run: "
            f"gitclaw-compress install --agents {agent}"
        )
    elif command is not None and text is not None and (blocked := hook.blocked(text)):
        problem = f"{path}: {blocked}; our hook never runs"
    elif command is None and record is not None:
        problem = (
            f"{path}: our hook was taken out after install (by hand or by the agent); run: "
            f"gitclaw-compress install --agents {agent}"
        )
    lines = last_lines(env, agent, count=0)
    ended, held = last_pass(lines)
    if problem is None and command is not None and ended is not None and ended != "0":
        problem = _pass_problem(agent, ended, held, log_path(env))
    return AgentHookState(
        agent=agent,
        title=TITLES[agent],
        event=hook.event,
        file=path,
        found=hook.agent_folder(env).is_dir(),
        command=command,
        current=command is not None and command[: len(hook_command(agent))] == hook_command(agent),
        chained=chained,
        last=lines[-1] if lines else None,
        problem=problem,
        held=held,
    )


def last_pass(lines: Sequence[str]) -> tuple[str | None, list[str]]:
    """The exit of the last pass that ended (None: none did), and the sessions it held for
    a secret, from an agent's lines of the log."""
    for end in range(len(lines) - 1, -1, -1):
        ended = PASS_ENDED.search(lines[end])
        if ended is None:
            continue
        held: list[str] = []
        for line in reversed(lines[:end]):
            if PASS_STARTED in line:
                break
            if found := PASS_HELD.search(line):
                held.insert(0, found.group(1))
        return ended.group(1), held
    return None, []


def _pass_problem(agent: str, code: str, held: list[str], log: Path) -> str:
    """What doctor says of a last pass that did not end with exit 0: sessions held for a
    secret (exit 1) wait for the user, in words that say what to run; anything else failed."""
    from gitclaw_compress.errors import shell_line

    if held:
        named = held[:HELD_NAMED]
        more = f" (and {len(held) - len(named)} more in {log})" if len(held) > len(named) else ""
        sessions = f"{len(held)} session{'s' * (len(held) != 1)}"
        said = (
            f"held {sessions} for secrets: run `{shell_line('gitclaw-compress', 'scan', *named)}`"
            f"{more}, then redact or accept each finding as the log says ({log})"
        )
        if code == "1":
            return f"the last pass {said}"
        return (
            f"the last pass ({STORES_COMMAND} {agent}) ended with exit {code}; its output is "
            f"in {log}; it also {said.replace(f' ({log})', '')}"
        )
    return (
        f"the last pass ({STORES_COMMAND} {agent}) ended with exit {code}; its output is in {log}"
    )


def hook_states(env: Mapping[str, str]) -> list[AgentHookState]:
    return [hook_state(agent, env) for agent in AGENTS]
