"""Our hook in each agent's own lifecycle: install, uninstall, how it stands, and what it does
when the agent runs it (docs/agent-hooks.md).

Each format says where its agent's hook goes and how to write it (`Format.lifecycle_hook`);
this module reads and writes the files. `install` records, in the tool's data folder, the
bytes it changed (where, what was there, what it wrote: never a copy of the whole file), so
that `uninstall` puts back every byte it replaced, and deletes a file or folder it created.
When the file changed since, `uninstall` still takes ours out and keeps the rest.

The hook itself returns at once: it starts the pass (`gitclaw-compress stores AGENT`)
detached, with its output in `agent-hooks/hooks.log`, unless the last one still runs (a
lock the pass holds), and for Codex runs the `notify` program ours replaced. It records the
interpreter `install` ran from, so it works without PATH.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import lifecycle_hook
from gitclaw_compress.formats.base import TITLES, LifecycleHook
from gitclaw_compress.store.agent_store import data_home
from gitclaw_compress.store.locks import try_lock
from gitclaw_compress.store.private import make_private_folder, private_opener

AGENTS = tuple(TITLES)  # every agent, in the formats' order
FOLDER = "agent-hooks"  # in the data folder: records, locks, the log
LOG_NAME = "hooks.log"
LOG_LIMIT = 1 << 20  # bytes; then the log moves to hooks.log.1 and starts again
PAYLOAD_LIMIT = 1 << 20  # bytes of a payload read from stdin
STORES_COMMAND = "stores"  # the one-shot pass over an agent's store
PASS_NICENESS = 10  # added to the pass's nice value
# The pass takes sessions at rest (quiet for minutes): one more soon after finds little new.
# Codex runs its notify program after every turn.
PASS_INTERVAL = 300  # seconds: a hook starts no pass sooner after the last one started
CLOCK_SLACK = 2  # seconds a recorded start may lie ahead of now and still mean "just now"
PASS_ENDED = re.compile(r": pass ended: exit (-?\d+) ")
PASS_STARTED = f": pass: gitclaw-compress {STORES_COMMAND} "
# A session the pass held for a secret, as the pass logs it (path, ids)
PASS_HELD = re.compile(r": pass held (.+) for secrets \(ids ([^)]*)\)$")
HELD_NAMED = 3  # held sessions doctor names in its line; the log has them all


def data_folder(env: Mapping[str, str]) -> Path:
    """The tool's data folder: `$XDG_DATA_HOME/gitclaw-compress` (an absolute one, as the
    XDG spec says), else `~/.local/share/gitclaw-compress`; the stores' archives are there."""
    return data_home(env) / "gitclaw-compress"


def hooks_folder(env: Mapping[str, str]) -> Path:
    return data_folder(env) / FOLDER


def _made_hooks_folder(env: Mapping[str, str]) -> Path:
    """`hooks_folder`, made if missing, for this user alone: a record holds the bytes ours
    replaced (a notify program's arguments may hold a token), the log names sessions."""
    folder = hooks_folder(env)
    make_private_folder(folder.parent)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    return folder


def log_path(env: Mapping[str, str]) -> Path:
    return hooks_folder(env) / LOG_NAME


def hook_command(agent: str) -> list[str]:
    """What the agent runs: this interpreter and package, not whatever is on PATH then."""
    return [sys.executable, "-P", "-m", "gitclaw_compress", "hook", agent]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _cannot_write(path: Path, error: OSError) -> GitClawError:
    what = (error.strerror or str(error)).lower()
    return GitClawError(f"{path}: cannot write it ({what}); nothing was changed")


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace a file whole (a temp file beside it, renamed), keeping its permissions (a
    new one `private`: 600); a symlink (settings kept in a dotfiles folder) stays one: its
    target is replaced."""
    path = path.resolve() if path.is_symlink() else path
    temp = path.with_name(f".{path.name}.gitclaw-compress-new")
    try:
        with open(temp, "wb", opener=private_opener if private else None) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


# --------------------------------------------------------------------------------------
# What install changed, to undo it byte for byte
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """`install`'s change to one file: at byte `at`, `removed` became `inserted`."""

    file: Path
    created: bool  # there was no file
    folders: list[Path]  # the folders install made for it, deepest first
    at: int
    removed: bytes
    inserted: bytes
    written: str  # sha256 of the file as install left it

    def as_json(self) -> dict[str, Any]:
        return {
            "file": str(self.file),
            "created": self.created,
            "folders": [str(folder) for folder in self.folders],
            "at": self.at,
            "removed": base64.b64encode(self.removed).decode(),
            "inserted": base64.b64encode(self.inserted).decode(),
            "written": self.written,
        }

    def undo(self, current: bytes) -> bytes | None:
        """The file as it was before install, if nothing but ours changed since; else None."""
        if hashlib.sha256(current).hexdigest() == self.written:
            return current[: self.at] + self.removed + current[self.at + len(self.inserted) :]
        if self.inserted and current.count(self.inserted) == 1:
            return current.replace(self.inserted, self.removed, 1)
        return None


def _record_path(env: Mapping[str, str], agent: str, file: Path) -> Path:
    """One record per file: an agent may have several folders (CLAUDE_CONFIG_DIR per account)."""
    key = hashlib.sha256(str(file).encode()).hexdigest()[:12]
    return hooks_folder(env) / f"{agent}-{key}.json"


def _load(path: Path) -> Record | None:
    try:
        data = orjson.loads(path.read_bytes())
        return Record(
            file=Path(data["file"]),
            created=bool(data["created"]),
            folders=[Path(folder) for folder in data["folders"]],
            at=int(data["at"]),
            removed=base64.b64decode(data["removed"]),
            inserted=base64.b64decode(data["inserted"]),
            written=str(data["written"]),
        )
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def load_record(env: Mapping[str, str], agent: str, file: Path) -> Record | None:
    """What install changed in `file`, if it recorded that."""
    record = _load(_record_path(env, agent, file))
    return record if record is not None and record.file == file else None


def records(env: Mapping[str, str], agent: str) -> list[Record]:
    """Every file install changed for `agent`, wherever the agent's folder was then."""
    found = (_load(path) for path in sorted(hooks_folder(env).glob(f"{agent}-*.json")))
    return [record for record in found if record is not None]


def _save_record(env: Mapping[str, str], agent: str, record: Record) -> None:
    _made_hooks_folder(env)
    path = _record_path(env, agent, record.file)
    _write(path, orjson.dumps(record.as_json(), option=orjson.OPT_INDENT_2) + b"\n", private=True)


def _change(file: Path, old: bytes, new: bytes, created: bool, folders: list[Path]) -> Record:
    """The one span where `old` and `new` differ."""
    at = 0
    limit = min(len(old), len(new))
    while at < limit and old[at] == new[at]:
        at += 1
    tail = 0
    while tail < limit - at and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    written = hashlib.sha256(new).hexdigest()
    return Record(
        file, created, folders, at, old[at : len(old) - tail], new[at : len(new) - tail], written
    )


# --------------------------------------------------------------------------------------
# How each agent's hook stands
# --------------------------------------------------------------------------------------


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
    text = _read(path)
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


# --------------------------------------------------------------------------------------
# install and uninstall
# --------------------------------------------------------------------------------------


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
    old = _read(path)
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
    record_path = _record_path(env, agent, path)
    recorded = _read(record_path)
    _save_record(env, agent, _change(path, base or b"", new, created, folders))
    try:
        _write(path, new)
    except BaseException as error:
        if recorded is None:
            record_path.unlink(missing_ok=True)
        else:
            _write(record_path, recorded)
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(error, OSError):
            raise _cannot_write(path, error) from None
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
        current = _read(path)
        mine = load_record(env, agent, path)
        if current is None or hook.installed(current) is None:
            _record_path(env, agent, path).unlink(missing_ok=True)
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
                _write(path, left)
        except OSError as error:
            raise _cannot_write(path, error) from None
        if left is None:
            for folder in mine.folders if mine else []:
                with contextlib.suppress(OSError):  # not empty: someone else's now
                    folder.rmdir()
            said.append(f"removed {path}")
        else:
            how = "as it was before install" if exact else "the rest kept (it changed since)"
            said.append(f"took our {hook.event} out of {path}, {how}")
        _record_path(env, agent, path).unlink(missing_ok=True)
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


# --------------------------------------------------------------------------------------
# What the hook does when an agent runs it
# --------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_log(env: Mapping[str, str]) -> IO[bytes]:
    """The log, for appending (moved to hooks.log.1 first when it grew past LOG_LIMIT)."""
    _made_hooks_folder(env)
    path = log_path(env)
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(LOG_NAME + ".1"))
    return open(path, "ab", opener=private_opener)


def log(handle: IO[bytes], agent: str, message: str) -> None:
    handle.write(f"{_now()} {agent}: {message}\n".encode())
    handle.flush()


def lock_path(env: Mapping[str, str], agent: str) -> Path:
    """Held by the running pass of an agent (flock): the hook starts no second one."""
    return hooks_folder(env) / f"{agent}.lock"


def run_hook(
    agent: str, words: Sequence[str], stdin: IO[bytes], env: Mapping[str, str]
) -> list[str]:
    """What `gitclaw-compress hook AGENT` does: log the event, start the pass detached unless
    one runs, and return the argv to run next (Codex's previous notify program, with the
    payload), or an empty list."""
    hook = lifecycle_hook(agent)
    raw = stdin.read(PAYLOAD_LIMIT) if hook.payload_on_stdin else None
    payload_text = raw.decode("utf-8", "replace") if raw is not None else (words or [""])[-1]
    chained = [] if hook.payload_on_stdin else list(words[:-1])
    try:
        payload: object = orjson.loads(payload_text)
    except orjson.JSONDecodeError:
        payload = None
    with open_log(env) as handle:
        event = f"{hook.event}, {hook.session(payload)}"
        with open(lock_path(env, agent), "a+b", opener=private_opener) as lock:
            if not try_lock(lock):
                log(handle, agent, f"{event}: the last pass still runs; none started")
                return [*chained, payload_text] if chained else []
            since = _since_last_pass(lock)
            if since is not None and since < PASS_INTERVAL:
                log(handle, agent, f"{event}: a pass started {since:.0f}s ago; none started")
                return [*chained, payload_text] if chained else []
            lock.seek(0)
            lock.truncate()
            lock.write(f"{time.time():.3f}\n".encode())  # when the last pass started
            lock.flush()
            child = subprocess.Popen(
                [sys.executable, "-P", "-m", "gitclaw_compress", "hook", "--pass", agent],
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=handle,
                env=dict(env),
                **_detached(lock),
            )
            log(handle, agent, f"{event}: started a pass (pid {child.pid})")
    return [*chained, payload_text] if chained else []


def _detached(lock: IO[bytes]) -> dict[str, Any]:
    """How the pass outlives the hook. POSIX: a session of its own, and it inherits the
    locked file and holds it until it ends. Windows: a detached process; it cannot inherit
    the lock, so there only the interval and the store's own lock keep passes apart."""
    if os.name == "nt":
        detached = getattr(subprocess, "DETACHED_PROCESS", 0x8)
        return {"creationflags": detached | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    return {"pass_fds": (lock.fileno(),), "start_new_session": True}


def _since_last_pass(lock: IO[bytes]) -> float | None:
    """Seconds since the last pass started, as the lock file records; None: never (or a
    clock that went back)."""
    lock.seek(0)
    try:
        since = time.time() - float(lock.read(64).decode())
    except ValueError:
        return None
    if -CLOCK_SLACK < since < 0:
        return 0.0  # a start rounded up to the second (as earlier versions wrote it): just now
    return since if since >= 0 else None


def run_pass(agent: str, env: Mapping[str, str]) -> int:
    """The detached pass: `gitclaw-compress stores AGENT`, its output and exit in the log."""
    argv = [sys.executable, "-P", "-m", "gitclaw_compress", STORES_COMMAND, agent]
    with contextlib.suppress(OSError):
        os.nice(PASS_NICENESS)  # background work: the agent's next session comes first
    started = time.monotonic()
    with open_log(env) as handle, open(log_path(env), "rb") as output:
        log(handle, agent, f"pass: gitclaw-compress {STORES_COMMAND} {agent}")  # PASS_STARTED
        output.seek(0, os.SEEK_END)  # what the pass writes comes after this
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=handle, check=False, env=dict(env)
        )
        took = time.monotonic() - started
        for path, ids in _held_by_pass(output, agent):  # one line each, for doctor
            log(handle, agent, f"pass held {path} for secrets (ids {ids})")  # PASS_HELD
        log(handle, agent, f"pass ended: exit {done.returncode} after {took:.1f}s")  # PASS_ENDED
    return done.returncode


def _held_by_pass(output: IO[bytes], agent: str) -> list[tuple[str, str]]:
    """The sessions the pass held for a secret (path, ids), read back from what it wrote to
    the log: its lines for `agent` that `held_lines` made (the secret is never in them)."""
    from gitclaw_compress.secrets.held import HELD_LINE

    held = []
    prefix = f"{agent}: "
    for raw in output.read().splitlines():
        line = raw.decode("utf-8", "replace")
        if line.startswith(prefix) and (found := HELD_LINE.match(line, len(prefix))):
            held.append((found.group(1), found.group(2)))
    return held
