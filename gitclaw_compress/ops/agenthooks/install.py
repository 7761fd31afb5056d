"""`install --agents` and `uninstall --agents`: our hook into each agent's file (the format
says where and how, `Format.lifecycle_hook`), recorded first, and every byte it replaced put
back; a file or folder install created is deleted."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import lifecycle_hook
from gitclaw_compress.formats.base import TITLES
from gitclaw_compress.formats.shared.hooks import LifecycleHook
from gitclaw_compress.ops.agenthooks.files import (
    AGENTS,
    cannot_write,
    hook_command,
    read_file,
    write_file,
)
from gitclaw_compress.ops.agenthooks.records import (
    Record,
    change,
    load_record,
    record_path,
    records,
    save_record,
)
from gitclaw_compress.ops.agenthooks.state import chained_program


def _in_file(path: Path, error: GitClawError) -> GitClawError:
    return GitClawError(f"{path}: {error}", exit_code=error.exit_code)


def _make_folders(folder: Path) -> list[Path]:
    """Make `folder` and its missing parents; the ones made, deepest first."""
    made: list[Path] = []
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    for each in reversed(made):
        each.mkdir()
    return made


def _restore(hook: LifecycleHook, current: bytes, record: Record | None) -> bytes | None:
    """The file without our hook: what was there before install when nothing else changed;
    None: delete it."""
    if record is not None and record.created:
        return hook.remove(current, True)
    if record is not None:
        before = record.undo(current)
        if before is not None and hook.installed(before) is None:
            return before
    return hook.remove(current, False)


def install_one(agent: str, env: Mapping[str, str]) -> str:
    """Install (or update) our hook for one agent; one line saying what was done."""
    hook = lifecycle_hook(agent)
    title = TITLES[agent]
    path = hook.hook_file(env)
    command = hook_command(agent)
    old = read_file(path)
    record = load_record(env, agent, path)
    try:
        present = hook.installed(old) if old is not None else None
        if present is not None and present[: len(command)] == command:
            return f"{title}: already installed ({hook.event} in {path})"
        base, created = old, old is None
        if present is not None and old is not None:  # ours from another installation
            base = _restore(hook, old, record)
            created = base is None or (record is not None and record.created)
        new = hook.add(base, command)
    except GitClawError as error:
        raise _in_file(path, error) from None
    made = _make_folders(path.parent)
    folders = [*made, *(record.folders if record is not None and record.created else [])]
    # The record first, so that no hook of ours is ever without one; if the write fails,
    # the record and the folders are as they were.
    record_file = record_path(env, agent, path)
    recorded = read_file(record_file)
    save_record(env, agent, change(path, base or b"", new, created, folders))
    try:
        write_file(path, new)
    except BaseException as error:
        if recorded is None:
            record_file.unlink(missing_ok=True)
        else:
            write_file(record_file, recorded)
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(error, OSError):
            raise cannot_write(path, error) from None
        raise
    verb = "updated" if present is not None else "installed"
    words = hook.installed(new) or []
    chained = chained_program(words)
    runs = f"; it runs the previous one too: {chained}" if chained else ""
    return f"{title}: {verb} our {hook.event} in {path}{runs}"


def found_agents(env: Mapping[str, str]) -> list[str]:
    """The agents whose own folder exists."""
    return [agent for agent in AGENTS if lifecycle_hook(agent).agent_folder(env).is_dir()]


@dataclass(frozen=True, slots=True)
class Done:
    """What install or uninstall did for each agent, and the one-line error of each agent
    it could not do (those were left as they were)."""

    lines: list[str]
    errors: list[str]


def _each(agents: Sequence[str], act: Callable[[str], str | None]) -> Done:
    lines: list[str] = []
    errors: list[str] = []
    for agent in agents:
        try:
            line = act(agent)
        except GitClawError as error:
            errors.append(str(error))  # it names the file
            continue
        if line is not None:
            lines.append(line)
    return Done(lines, errors)


def install(agents: Sequence[str], env: Mapping[str, str]) -> Done:
    """Install into each agent named, or into every agent found when none is."""
    chosen = list(agents) or found_agents(env)
    if not chosen:
        folders = ", ".join(str(lifecycle_hook(a).agent_folder(env)) for a in AGENTS)
        raise GitClawError(
            f"no agent found (none of {folders} exists); name one: "
            "gitclaw-compress install --agents claude"
        )
    return _each(chosen, lambda agent: install_one(agent, env))


def uninstall_one(agent: str, env: Mapping[str, str]) -> str | None:
    """Take our hook out of one agent's file, and of every other file install recorded for
    it (another CLAUDE_CONFIG_DIR, say); None when there was none."""
    hook = lifecycle_hook(agent)
    paths = dict.fromkeys([hook.hook_file(env), *(record.file for record in records(env, agent))])
    said: list[str] = []
    for path in paths:
        current = read_file(path)
        mine = load_record(env, agent, path)
        if current is None or hook.installed(current) is None:
            record_path(env, agent, path).unlink(missing_ok=True)
            continue
        try:
            left = _restore(hook, current, mine)
        except GitClawError as error:
            raise _in_file(path, error) from None
        exact = mine is not None and hashlib.sha256(current).hexdigest() == mine.written
        try:
            if left is None:
                path.unlink()
            else:
                write_file(path, left)
        except OSError as error:
            raise cannot_write(path, error) from None
        if left is None:
            for folder in mine.folders if mine else []:
                with contextlib.suppress(OSError):  # not empty: someone else's now
                    folder.rmdir()
            said.append(f"removed {path}")
        else:
            how = "as it was before install" if exact else "the rest kept (it changed since)"
            said.append(f"took our {hook.event} out of {path}, {how}")
        record_path(env, agent, path).unlink(missing_ok=True)
    return f"{TITLES[agent]}: {'; '.join(said)}" if said else None


def uninstall(agents: Sequence[str], env: Mapping[str, str]) -> Done:
    """Take ours out of each agent named, or of every agent where it is."""

    def one(agent: str) -> str | None:
        line = uninstall_one(agent, env)
        return f"{TITLES[agent]}: not installed" if line is None and agents else line

    done = _each(agents or AGENTS, one)
    if not done.lines and not done.errors:
        return Done(["no agent hook of ours is installed"], [])
    return done
