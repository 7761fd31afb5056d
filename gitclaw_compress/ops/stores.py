"""The agents' own stores: find them, open their archives, and compress the sessions at rest.

A session is at rest when no other process holds it open for writing (the OS is asked:
store/live.py), no running agent may be writing it (the newest session of the folder where a
running agent, found by its command line, keeps its working directory's sessions; and, where
the open files cannot be listed, every session of an agent that keeps its file open while it
runs, as long as one of its processes runs), and nothing wrote to it for
`stores.quietMinutes`; the rest are left alone, each counted once. Compression itself is
the flow every command uses (`run_flow`), in the store's archive, with its secret scan: a
session with a finding the baseline does not accept is held (untouched, nothing of it in the
archive). A run that finds a session unchanged since the last one costs a `stat` (the
unchanged-cache in the archive) and a look at the scan's record of it. An append
that lands during a run is never lost: the file is replaced only under the lease of the
atomic rename (see store/fileio.py).
"""

from __future__ import annotations

import contextlib
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitclaw_compress import interrupts
from gitclaw_compress.config import Config, load_config
from gitclaw_compress.errors import EXIT_INTERRUPTED, GitClawError
from gitclaw_compress.formats import registry
from gitclaw_compress.formats.base import Unsupported
from gitclaw_compress.formats.shared.home import AgentHome
from gitclaw_compress.ops.flow import FlowResult, recognized, run_flow
from gitclaw_compress.ops.unchanged import UnchangedCache
from gitclaw_compress.progress import SILENT, Progress
from gitclaw_compress.store import live
from gitclaw_compress.store.agent_store import (
    AgentStore,
    archive_path,
    archive_size,
    config_home,
    served_store,
    served_stores,
)
from gitclaw_compress.store.fileio import WriteError
from gitclaw_compress.store.git import GitFailureError
from gitclaw_compress.store.private import private_umask
from gitclaw_compress.store.repository import LockedError

if TYPE_CHECKING:
    from gitclaw_compress.ops.show import Held

AGENTS = ("claude", "codex", "copilot", "pi")  # the order `stores` takes them in


def homes(environ: Mapping[str, str]) -> list[AgentHome]:
    """Every agent's store location under `environ`, whether it exists or not."""
    found = []
    for fmt in registry().values():
        with contextlib.suppress(Unsupported):
            found.append(fmt.home(environ))
    return sorted(found, key=lambda home: AGENTS.index(home.agent))


def home_of(path: Path, environ: Mapping[str, str]) -> AgentHome | None:
    """The agent store that holds `path` (a session file or a folder in it), if any: one
    where the environment puts an agent's store now, else one an archive on this machine
    served (a store a variable moved when it was compressed, such as `CLAUDE_CONFIG_DIR`,
    is found from the session's path alone)."""
    resolved = path.absolute().resolve()
    for home in homes(environ):
        root = home.root.absolute().resolve()
        if resolved == root or root in resolved.parents:
            return home
    served = served_store(path, environ)
    return home_at(*served, environ) if served is not None else None


def home_at(agent: str, root: Path, environ: Mapping[str, str]) -> AgentHome | None:
    """The store of `agent` in a folder an archive served, with the agent's layout there:
    the agent's own answer with one of its variables set to that folder, the first under
    which the folder its globs start in exists (pi's agent folder holds `sessions/`; a
    sessions folder of its own, `PI_CODING_AGENT_SESSION_DIR`, holds them directly)."""
    fmt = registry().get(agent)
    if fmt is None:
        return None
    try:
        variables = fmt.home(environ).folder_variables
    except Unsupported:
        return None
    others = {name: value for name, value in environ.items() if name not in variables}
    for variable in variables:
        home = fmt.home({**others, variable: str(root)})
        if home.root.absolute().resolve() != root:
            continue  # another setting of the agent moves it on (pi's sessionDir)
        fixed = [pattern.split("*", 1)[0].rstrip("/") for pattern in home.globs]
        if any((root / folder).is_dir() for folder in fixed):
            return home
    return None


def known_homes(environ: Mapping[str, str]) -> list[AgentHome]:
    """The stores whose archive may hold a session: every folder an archive on this machine
    served that still exists, in the agents' order (where the environment puts a store,
    first), then a store where the environment puts it that its agent's archive does not
    list yet, when a folder that archive listed is gone (the store moved there). A store
    no archive served is not opened: opening would record it as served."""
    served = served_stores(environ)
    by_agent = {agent: [root for each, root in served if each == agent] for agent in AGENTS}
    found: list[AgentHome] = []
    for home in homes(environ):
        root = home.root.absolute().resolve()
        listed = by_agent.get(home.agent, [])
        here = [home] if root in listed and root.is_dir() else []
        others = [home_at(home.agent, other, environ) for other in listed if other != root]
        found += here + [each for each in others if each is not None and each.root.is_dir()]
        if not here and any(not other.is_dir() for other in listed) and root.is_dir():
            found.append(home)  # moved: the first run there records it
    return found


def open_store(home: AgentHome, environ: Mapping[str, str], *, create: bool) -> AgentStore:
    """The store of `home` with its archive (made on first use when `create`)."""
    archive = archive_path(home.agent, environ)
    if create and not (archive / "HEAD").is_file():
        compressed = [path for path in session_files(home) if _holds_marker(path)]
        if compressed:
            raise GitClawError(
                f"{home.root}: the {home.agent} store holds compressed sessions "
                f"({compressed[0].relative_to(home.root)}, …) but its archive {archive} is "
                "gone; restore it from a backup (or its remote) first; nothing was changed"
            )
    return AgentStore(
        home.agent,
        home.root,
        archive,
        config_root=config_home(environ),
        globs=home.globs,
        live=lambda: live_sessions(home, live.running(), live.check().open_files),
        create=create,
    )


def runs(home: AgentHome, argv: list[str]) -> bool:
    """Whether a command line is the agent's (its program, or a script of its package)."""
    if not home.program or not argv:
        return False
    name, *mark = home.program
    words = argv[:3]  # the program, or an interpreter and its script
    return any(_program(word) == name or any(m in word for m in mark) for word in words)


def _program(word: str) -> str:
    """A program's name from a command line's word, as on every platform (`C:\\…\\codex.exe`
    and `/usr/bin/codex` are both `codex`)."""
    name = word.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".exe", ".cmd", ".ps1", ".js", ".mjs"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def live_sessions(
    home: AgentHome, processes: list[live.Running] | None, open_files_listed: bool
) -> set[Path]:
    """The sessions a running agent may be writing: the newest in the folder where each
    running one keeps its working directory's sessions (when the agent says where), and
    those a running agent marked as its own (when the agent marks them). Where the open
    files cannot be listed (`open_files_listed` False): every session of an agent that keeps
    its file open while it runs, while one of its processes runs, or when the processes
    cannot be listed either."""
    mine = [process for process in processes or [] if runs(home, process.argv)]
    if not open_files_listed and home.keeps_open and (processes is None or mine):
        return set(session_files(home))
    found = set()
    if home.holders is not None:  # the sessions a running agent marked as its own
        pids = None if processes is None else {process.pid for process in processes}
        for path in session_files(home):
            marks = home.holders(path)
            if marks and (pids is None or pids.intersection(marks)):
                found.add(path)
    if home.cwd_folder is None:
        return found
    for process in mine:
        if not process.cwd:
            continue  # its working directory is not this user's to read
        folder = home.root / home.cwd_folder(process.cwd)
        sessions = [path for path in folder.glob("*.jsonl") if path.is_file()]
        if sessions:
            found.add(max(sessions, key=lambda path: path.stat().st_mtime))
    return found


def store_at(path: Path, environ: Mapping[str, str], *, create: bool | None) -> AgentStore | None:
    """The store that holds `path`, or None; `create` None: only a store whose archive
    exists (the path is in a git work tree too)."""
    home = home_of(path, environ)
    if home is None:
        return None
    if create is None:
        if not (archive_path(home.agent, environ) / "HEAD").is_file():
            return None
        create = False
    return open_store(home, environ, create=create)


def stores_holding(
    entry_id: str, environ: Mapping[str, str], session_id: str | None = None
) -> tuple[AgentStore, list[Held]]:
    """The first agent store (with an archive) whose sessions hold an entry of this id, and
    those sessions (`show ID` outside a repository, or when the repository has none: Copilot
    CLI's stubs name the id alone); with `session_id`, line `entry_id` of that session
    (Codex's stubs: `show SESSION_ID L42`). None found is one GitClawError."""
    from gitclaw_compress.ops.show import sessions_of

    searched = []
    for home in known_homes(environ):
        if not home.root.is_dir() or not (archive_path(home.agent, environ) / "HEAD").is_file():
            continue
        store = open_store(home, environ, create=False)
        config = load_config(None, store.config_root)
        try:
            return store, sessions_of(store, config, entry_id, session_id)
        except GitClawError:
            searched.append(f"{home.agent} ({home.root})")
    where = f"the stores {', '.join(searched)}" if searched else "no agent store with an archive"
    what = f"an entry with id {entry_id!r}" if session_id is None else f"{entry_id} of {session_id}"
    raise GitClawError(f"no session holds {what} (searched {where})")


def _read_only(path: Path) -> bool:
    """A session its owner may not write (`chmod 444`): never rewritten (store/fileio.py)."""
    try:
        return not path.stat().st_mode & stat.S_IWUSR
    except OSError:
        return False


def _holds_marker(path: Path) -> bool:
    from gitclaw_compress.store.session_lines import has_compressed_line

    try:
        return has_compressed_line(path)
    except OSError:
        return False


def session_files(home: AgentHome) -> list[Path]:
    """The agent's session files in its store (by the agent's own layout), sorted."""
    found: set[Path] = set()
    for pattern in home.globs:
        found.update(path for path in home.root.glob(pattern) if path.is_file())
    return sorted(found)


@dataclass
class StoreRun:
    """What one `stores` pass did in one agent's store."""

    home: AgentHome
    archive: Path
    state: str = "done"  # done | absent | busy | failed
    sessions: int = 0
    # rels open for writing in another process, or the newest of a running agent's folder
    in_use: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)  # rels written in the last quiet minutes
    flow: FlowResult | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    archive_bytes: int = 0
    pushed_to: str | None = None
    refused: list[str] = field(default_factory=list)  # sessions that could not be compressed
    not_sessions: int = 0  # files the globs found that hold no session (a warning each)
    read_only: int = 0  # sessions made read-only on purpose, left as they are
    dry_run: bool = False

    @property
    def held(self) -> list[dict[str, Any]]:
        """The sessions held for a secret (see secrets/held.py), each once."""
        return self.flow.held if self.flow is not None else []

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.home.agent,
            "store": str(self.home.root),
            "moved_by": self.home.moved_by,
            "state": self.state,
            "sessions": self.sessions,
            "in_use": self.in_use,
            "fresh": self.fresh,
            "archive": {"path": str(self.archive), "bytes": self.archive_bytes},
            "pushed_to": self.pushed_to,
            "files": [r.as_json() for r in self.flow.reports] if self.flow is not None else [],
            "notes": self.notes,
            "warnings": self.flow.warnings if self.flow is not None else [],
            "refused": self.refused,
            # sessions left untouched for a secret: path, ids, the commands to go on
            "held": self.held,
            "not_sessions": self.not_sessions,
            "read_only": self.read_only,
            "error": self.error,
        }


def run_store(
    home: AgentHome,
    environ: Mapping[str, str],
    *,
    config_path: Path | None = None,
    dry_run: bool = False,
    remote: str | None = None,
    writing: set[tuple[int, int]] | None = None,
    now: float | None = None,
    progress: Progress = SILENT,
) -> StoreRun:
    """One agent's store: its sessions at rest compressed (or, `dry_run`, counted)."""
    run = StoreRun(home, archive_path(home.agent, environ), dry_run=dry_run)
    if not home.root.is_dir():
        run.state = "absent"
        return run
    first = not (run.archive / "HEAD").is_file()
    with contextlib.ExitStack() as scratch:
        if dry_run and first:
            # Before the first run: a dry run in an archive of its own that it throws away,
            # so that it says exactly what the first run would do, and writes nothing.
            import tempfile

            folder = Path(scratch.enter_context(tempfile.TemporaryDirectory()))
            environ = {**environ, "XDG_DATA_HOME": str(folder)}
        # Its archive, caches, locks and git children's files: for this user alone.
        scratch.enter_context(private_umask())
        run = _run_in(run, home, environ, config_path, dry_run, remote, writing, now, progress)
    if first and not dry_run and run.archive.is_dir() and not _archived_anything(run):
        # An archive holds what compression dropped: with nothing compressed there is none
        # to keep (the next pass scans again what this one scanned; it makes the archive
        # once it compresses something).
        import shutil

        shutil.rmtree(run.archive, ignore_errors=True)
        run.archive_bytes = 0
    return run


def _archived_anything(run: StoreRun) -> bool:
    """Whether the pass wrote anything to a store's archive that it must keep."""
    if run.state != "done" or run.flow is None or run.pushed_to or run.refused:
        return True  # not a clean pass with nothing in it: keep what is there
    return bool(run.flow.compressed)


def _run_in(
    run: StoreRun,
    home: AgentHome,
    environ: Mapping[str, str],
    config_path: Path | None,
    dry_run: bool,
    remote: str | None,
    writing: set[tuple[int, int]] | None,
    now: float | None,
    progress: Progress,
) -> StoreRun:
    try:
        store = open_store(home, environ, create=True)
    except GitClawError as error:
        run.state, run.error = "failed", str(error)
        return run
    try:
        run.notes.extend(store.notes)
        with store, store.lock("stores", f"the {home.agent} store ({home.root})"):
            config = load_config(None, store.config_root, config_path)
            skipped: list[str] = []
            quiet = config["stores.quietMinutes"]
            rest = _at_rest(run, store, home, quiet, writing, now, skipped)
            try:
                run.flow = run_flow(
                    store,
                    rest,
                    config_path=config_path,
                    dry_run=dry_run,
                    progress=progress,
                    scan_first=True,  # a held session is never compressed, the rest once
                )
            except (LockedError, WriteError, GitFailureError):
                raise  # not one session's fault: the store's run stops here, in one line
            except GitClawError as error:
                if len(rest) < 2 or interrupted(error):
                    raise
                # One session refused (a damaged line, …) changed nothing: each on its own,
                # so that the others are still compressed and each refusal is one line.
                run.flow, run.refused = _one_by_one(store, rest, config_path, dry_run)
            run.flow.warnings[:0] = skipped
            if run.flow.compressed and not dry_run:  # many runs' packs, made into one
                store.git("gc", "--auto", "--quiet", check=False)
            target = remote or config["stores.remote"]
            if target and not dry_run:
                run.pushed_to = _push(store, config, target)
            elif target:  # a dry run fails where the push would: a remote the archive lacks
                _named_remote(store, target)
    except LockedError as error:  # another run is at it: it does the work
        run.state, run.error = "busy", str(error)
    except GitClawError as error:
        if interrupted(error):  # Ctrl-C stops the whole pass, not this store's
            raise
        run.state, run.error = "failed", str(error)
    finally:
        run.archive_bytes = archive_size(run.archive) if run.archive.is_dir() else 0
    return run


def _at_rest(
    run: StoreRun,
    store: AgentStore,
    home: AgentHome,
    quiet_minutes: int,
    writing: set[tuple[int, int]] | None,
    now: float | None,
    skipped: list[str],
) -> list[Path]:
    """The store's sessions a run may compress now: at rest, recognized, writable. The
    others are counted in `run`, and a warning each in `skipped` for a file of the store
    that is no session (an empty one, another tool's) or that is read-only: a warning, not
    the end of the run."""
    paths = session_files(home)
    run.sessions = len(paths)
    rest, held, fresh = store.at_rest(paths, quiet_minutes, now=now, writing=writing)
    run.in_use = [store.relative(path) for path in held]
    run.fresh = [store.relative(path) for path in fresh]
    found = len(rest)
    rest = recognized(store, rest, UnchangedCache(store.git_dir), skipped)
    run.not_sessions = found - len(rest)
    run.sessions -= run.not_sessions
    for path in [path for path in rest if _read_only(path)]:  # chmod 444 on purpose
        rest.remove(path)
        run.read_only += 1
        skipped.append(f"{store.relative(path)}: read-only; left as it is")
    return rest


def interrupted(error: GitClawError) -> bool:
    """A run stopped by Ctrl-C or SIGTERM between renames (what it did, in one line)."""
    return error.exit_code == EXIT_INTERRUPTED


def _one_by_one(
    store: AgentStore, paths: list[Path], config_path: Path | None, dry_run: bool
) -> tuple[FlowResult, list[str]]:
    """Each session in a run of its own: the reports of those that went, the refusals."""
    flow, refused = FlowResult(), []
    for path in paths:
        try:
            one = run_flow(
                store,
                [path],
                config_path=config_path,
                dry_run=dry_run,
                scan_first=True,
            )
        except (LockedError, WriteError, GitFailureError):
            raise
        except GitClawError as error:
            if interrupted(error):
                raise
            refused.append(str(error))
            continue
        flow.reports.extend(one.reports)
        flow.warnings.extend(one.warnings)
        flow.held.extend(one.held)
    return flow, refused


def _named_remote(store: AgentStore, remote: str) -> None:
    """The remote the user named must be one of the archive's."""
    if not store.has_remote(remote):
        raise GitClawError(
            f"the {store.agent} store's archive has no remote {remote!r}; add it with "
            f"`git --git-dir {store.common_dir} remote add {remote} URL`; nothing was pushed"
        )


def _push(store: AgentStore, config: Config, remote: str) -> str:
    """Send the archive to a remote the user named (never otherwise); its secrets first."""
    from gitclaw_compress.secrets.check import guard_push
    from gitclaw_compress.store.remote import push_archive

    _named_remote(store, remote)
    guard_push(store, config)
    push_archive(store, config["archive.ref"], remote)
    return remote


def run_stores(
    agents: Iterable[str],
    environ: Mapping[str, str],
    *,
    config_path: Path | None = None,
    dry_run: bool = False,
    remote: str | None = None,
    progress: Progress = SILENT,
    on_done: Callable[[StoreRun], None] | None = None,
) -> list[StoreRun]:
    """Every named agent's store (all four when none is named) that exists; `on_done` is
    told of each store as its run ends (a run cut short has said what it did so far)."""
    wanted = list(agents)
    unknown = [name for name in wanted if name not in AGENTS]
    if unknown:
        raise GitClawError(
            f"no agent named {unknown[0]!r}; the agents are {', '.join(AGENTS)}", exit_code=2
        )
    writing = live.files_open_for_writing()
    now = time.time()
    runs = []
    for home in homes(environ):
        if wanted and home.agent not in wanted:
            continue
        run = run_store(
            home,
            environ,
            config_path=config_path,
            dry_run=dry_run,
            remote=remote,
            writing=writing,
            now=now,
            progress=progress,
        )
        runs.append(run)
        if on_done is not None:
            on_done(run)
        interrupts.checkpoint("store-done")
    return runs
