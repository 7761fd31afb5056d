"""An agent's own store as a place where sessions live, beside the repository.

The store is a folder the agent owns (`~/.claude`, `~/.codex`, …). The tool keeps its
archive in a git repository of its own outside it, under the user's data folder
(`$XDG_DATA_HOME/gitclaw-compress/stores/<agent>`, else `~/.local/share/…`), whose work
tree is the store: every git child run in the store is told so (`GIT_DIR`, `GIT_WORK_TREE`),
so the agents never see a `.git` and the layers above use it exactly as a repository.

A store has no commits of its own and nothing staged, and the archive does not take a copy
of a session before compressing it: every dropped value is a payload blob on the archive
ref (v1 markers), so the archive holds what was dropped and never a second copy of what the
agent still loads (a snapshot of each session made the store and its archive together
larger than the store had been). The archive is never pushed unless the user names a
remote.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.fileio import disk_error
from gitclaw_compress.store.git import git_failure, link_work_tree, run_git
from gitclaw_compress.store.private import (
    SHARED_REPOSITORY,
    make_private_folder,
    private_umask,
    tighten,
)
from gitclaw_compress.store.repository import Repository

STORES_FOLDER = ("gitclaw-compress", "stores")
CONFIG_FOLDER = "gitclaw-compress"
WORK_TREE_KEY = "gitclaw.worktree"  # every folder this archive served as a store


def data_home(environ: Mapping[str, str], windows: bool = os.name == "nt") -> Path:
    """`$XDG_DATA_HOME`, else `%LOCALAPPDATA%` on Windows, else `~/.local/share`."""
    value = environ.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    local = environ.get("LOCALAPPDATA", "")
    if windows and local:
        return Path(local)
    return Path(environ.get("HOME") or os.path.expanduser("~"), ".local", "share")


def config_home(environ: Mapping[str, str], windows: bool = os.name == "nt") -> Path:
    """`$XDG_CONFIG_HOME`, else `%APPDATA%` on Windows, else `~/.config`; its folder of ours."""
    value = environ.get("XDG_CONFIG_HOME", "")
    if value and os.path.isabs(value):
        return Path(value) / CONFIG_FOLDER
    roaming = environ.get("APPDATA", "")
    if windows and roaming:
        return Path(roaming) / CONFIG_FOLDER
    return Path(environ.get("HOME") or os.path.expanduser("~"), ".config", CONFIG_FOLDER)


def in_a_store(path: Path, environ: Mapping[str, str]) -> bool:
    """Whether `path` lies in a folder that an archive on this machine serves as its store
    (read from the archives' configs: no format is loaded, no git is run)."""
    return store_root(path, environ) is not None


def store_root(path: Path, environ: Mapping[str, str]) -> Path | None:
    """The folder of the store that `path` lies in, when an archive on this machine serves
    it (read from the archives' configs: no format is loaded, no git is run)."""
    found = served_store(path, environ)
    return found[1] if found is not None else None


def served_store(path: Path, environ: Mapping[str, str]) -> tuple[str, Path] | None:
    """The agent and the folder of the store that `path` lies in, among every folder an
    archive on this machine serves, whatever variable moved it when it was compressed
    (the innermost, where one store lies in another)."""
    resolved = path.absolute().resolve()
    best: tuple[str, Path] | None = None
    for agent, root in served_stores(environ):
        inside = resolved == root or root in resolved.parents
        if inside and (best is None or len(root.parts) > len(best[1].parts)):
            best = (agent, root)
    return best


def served_stores(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """(agent, folder) of every store an archive on this machine served: the registry is
    each archive's `gitclaw.worktree` (an archive of an older version: its `core.worktree`
    too), read from its config file."""
    folder = data_home(environ).joinpath(*STORES_FOLDER)
    try:
        archives = sorted(folder.iterdir())
    except OSError:
        return []
    found = []
    for archive in archives:
        try:
            text = (archive / "config").read_text(errors="replace")
        except OSError:
            continue
        values = config_values(text)
        for value in values.get("gitclaw.worktree", []) + values.get("core.worktree", []):
            if os.path.isabs(value) and (archive.name, Path(value)) not in found:
                found.append((archive.name, Path(value)))
    return found


def config_values(text: str) -> dict[str, list[str]]:
    """`section.key` -> its values, from a git config file's text (no subsections, which
    an archive's config does not have; quotes and backslash escapes as git writes them)."""
    values: dict[str, list[str]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line[1 : line.find("]")].strip().lower() if "]" in line else ""
            continue
        name, equals, rest = line.partition("=")
        if not equals or not section or not name.strip():
            continue
        values.setdefault(f"{section}.{name.strip().lower()}", []).append(_unquoted(rest))
    return values


def _unquoted(raw: str) -> str:
    out: list[str] = []
    quoted, index, kept = False, 0, 0  # kept: the end of what a trailing strip keeps
    escapes = {"n": "\n", "t": "\t", "b": "\b"}
    raw = raw.strip()
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            out.append(escapes.get(raw[index + 1], raw[index + 1]))
            kept, index = len(out), index + 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
            if quoted or not char.isspace():
                kept = len(out)
        index += 1
    return "".join(out[:kept])


def archive_path(agent: str, environ: Mapping[str, str]) -> Path:
    """Where the archive of an agent's store lives: one per agent, whatever folder its store
    is in, so a store that moved keeps its archive, and two stores of one agent (the default
    and a `CLAUDE_CONFIG_DIR`) share it: its objects and records serve both, and no git
    setting names one of them (see `_note_work_tree`)."""
    return data_home(environ).joinpath(*STORES_FOLDER, agent)


class AgentStore(Repository):
    """An agent's store: its folder is the work tree, the archive (outside it) the git dir."""

    kind = "store"
    sessions_travel = False  # they stay in the agent's folder
    keeps_times = True  # agents sort their sessions by it (`pi -c`, resume pickers)
    changed_means = (
        "at rest in the store (not open for writing, not written for stores.quietMinutes)"
    )
    has_history = False

    def session_globs(self, configured: list[str]) -> list[str]:
        return list(self.globs)

    def __init__(
        self,
        agent: str,
        work_tree: Path,
        archive: Path,
        *,
        config_root: Path,
        globs: tuple[str, ...] = ("**/*.jsonl",),
        live: Callable[[], set[Path]] | None = None,
        create: bool = False,
    ) -> None:
        if not work_tree.is_dir():
            raise GitClawError(f"{work_tree}: no {agent} store here; nothing was changed")
        self.agent = agent
        self._open_objects(work_tree.resolve(), archive.absolute())
        self._config_root = config_root
        self.globs = globs
        self._live = live  # the sessions running agents may be writing
        self.notes: list[str] = []  # what opening found (a store that moved), one line each
        created = not (self.common_dir / "HEAD").is_file()
        if created:
            if not create:
                raise GitClawError(
                    f"{self.root}: the {agent} store has no archive at {self.common_dir} "
                    "(nothing was compressed there yet, or the archive was removed); "
                    "nothing was changed"
                )
            _create_archive(self.common_dir)
        link_work_tree(self.root, self.common_dir)
        try:  # read once, as text: opening a store runs no git unless it changes something
            settings = config_values((self.common_dir / "config").read_text(errors="replace"))
        except OSError:
            settings = {}
        self.notes += _make_private(agent, self.common_dir, settings)
        self.notes += _note_work_tree(agent, self.common_dir, self.root, created, settings)

    @property
    def config_root(self) -> Path:
        return self._config_root

    def live_agent_may_hold(self, path: Path) -> bool:
        """Whether a running agent may be writing `path`, where no open-file check can tell
        (see ops/stores.live_sessions): such a file is never rewritten."""
        if self._live is None:
            return False
        from gitclaw_compress.store import live

        if live.check().open_files:
            return False
        return path.resolve() in {held.resolve() for held in self._live()}

    def session_ref(self, rel: str) -> str:
        """Stubs name a store's session by its full path: the agent runs `show` from its
        project, not from the store."""
        return str(self.root / rel)

    def at_rest(
        self,
        paths: Iterable[Path],
        quiet_minutes: int,
        *,
        now: float | None = None,
        writing: set[tuple[int, int]] | None = None,
    ) -> tuple[list[Path], list[Path], list[Path]]:
        """Only sessions at rest: none that another process holds open for writing
        (`writing`, else one question to the OS: store/live.py) or that a running agent may
        be writing (`live`), none written in the last `quiet_minutes`."""
        if writing is None:
            from gitclaw_compress.store.live import files_open_for_writing

            writing = files_open_for_writing()
        live = self._live() if self._live is not None else set()
        now = time.time() if now is None else now
        rest, held, fresh = [], [], []
        for path in paths:
            try:
                stat = path.stat()
            except OSError:
                continue  # gone since it was listed
            if (writing is not None and (stat.st_dev, stat.st_ino) in writing) or path in live:
                held.append(path)
            elif now - stat.st_mtime < quiet_minutes * 60:
                fresh.append(path)
            else:
                rest.append(path)
        return rest, held, fresh


def _create_archive(common_dir: Path) -> None:
    """A bare archive for this user alone, with a work tree named per call."""
    try:
        make_private_folder(common_dir.parent)
    except OSError as error:
        raise disk_error(error, common_dir.parent, "creating the archive") from None
    # No template: git's sample hooks would be most of an empty archive's bytes. Shared
    # 0600: git makes every file it writes there 600 (400 read-only), every folder 700.
    shared = f"--shared={SHARED_REPOSITORY}"
    init = ("init", "-q", "--bare", shared, "--template=", str(common_dir))
    with private_umask():
        done = run_git(common_dir.parent, *init)
    if done.returncode != 0:
        raise git_failure("init", done.stderr, done.returncode, f" in {common_dir}")
    _config(common_dir, "--unset-all", "receive.denyNonFastForwards")  # what --shared adds
    # A work tree, the store, named per call (GIT_WORK_TREE), never in core.worktree:
    # one archive serves every folder its agent's store was in, and two at once.
    _config(common_dir, "core.bare", "false")
    _config(common_dir, "gc.autoDetach", "false")  # gc ends with the run that started it


def _make_private(agent: str, common_dir: Path, settings: dict[str, list[str]]) -> list[str]:
    """The archive and the tool's data folders for this user alone (store/private.py):
    an archive an older version made, readable by others, is tightened once (one line
    says so), and git is told to keep it so."""
    if os.name == "nt":
        return []  # no POSIX modes there: the folder's ACL, inherited from the profile, decides
    data = common_dir.parent.parent  # $XDG_DATA_HOME/gitclaw-compress
    ours, folders = data, [data, common_dir.parent]
    if (data.name, common_dir.parent.name) != STORES_FOLDER:
        ours, folders = common_dir, [common_dir]  # elsewhere: only its own
    for folder in folders:
        with contextlib.suppress(OSError):
            mode = folder.stat().st_mode
            if mode & 0o077:
                folder.chmod(stat.S_IMODE(mode) & ~0o077)
    if settings.get("core.sharedrepository") == [SHARED_REPOSITORY]:
        return []
    changed = tighten(ours)
    _config(common_dir, "core.sharedRepository", SHARED_REPOSITORY)
    if not changed:
        return []
    return [
        f"the {agent} archive ({common_dir}) was readable by others (made by "
        f"an older version): {changed} paths under {ours} are now for this user alone "
        "(folders 700, files 600)"
    ]


def _config(common_dir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(common_dir), "config", *args],
        capture_output=True,
        check=False,
    )
    return done.stdout.decode().strip() if done.returncode == 0 else ""


def _note_work_tree(
    agent: str, common_dir: Path, root: Path, created: bool, settings: dict[str, list[str]]
) -> list[str]:
    """Remember each folder the archive served (`gitclaw.worktree`: the registry every
    command finds a session's archive by, whatever variable moved its store). A store
    whose recorded folder is gone and that now lives elsewhere moved; a second folder
    that still exists is a second store: one line says either."""
    notes: list[str] = []
    known = [folder for folder in settings.get(WORK_TREE_KEY, []) if folder]
    legacy = (settings.get("core.worktree") or [""])[-1]
    if legacy:  # an older version named the last store run in core.worktree
        if legacy not in known:
            _config(common_dir, "--add", WORK_TREE_KEY, legacy)
            known.append(legacy)
        _config(common_dir, "--unset-all", "core.worktree")
        notes.append(
            f"the {agent} archive ({common_dir}) names its stores in "
            f"{WORK_TREE_KEY} now, not in core.worktree (which followed the last one run)"
        )
    here = str(root)
    if here in known:
        return notes
    gone = [folder for folder in known if not Path(folder).is_dir()]
    others = [folder for folder in known if Path(folder).is_dir()]
    if gone and not created:
        notes.append(f"the {agent} store moved from {gone[-1]} to {here}")
    elif others and not created:
        notes.append(
            f"the {agent} archive ({common_dir}) now serves "
            f"{len(others) + 1} {agent} stores: {', '.join([*others, here])}"
        )
    _config(common_dir, "--add", WORK_TREE_KEY, here)
    return notes


def archive_size(folder: Path) -> int:
    """The bytes the archive's git dir takes on disk, as `du` counts them: the blocks of
    every file (an archive is many small files, each a whole block or more: their lengths
    alone said 62.8 KB of an archive that took 452 KB)."""
    total = 0
    for base, _folders, files in os.walk(folder):
        for name in [".", *files]:  # each folder takes its blocks too
            try:
                found = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            blocks = getattr(found, "st_blocks", None)  # not on Windows: the length then
            total += found.st_size if blocks is None else blocks * 512
    return total
