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

import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.fileio import disk_error, files_open_for_writing
from gitclaw_compress.store.git import git_failure, link_work_tree, run_git
from gitclaw_compress.store.repository import Repository

STORES_FOLDER = ("gitclaw-compress", "stores")
CONFIG_FOLDER = "gitclaw-compress"
WORK_TREE_KEY = "gitclaw.worktree"  # every folder this archive served as a store


def data_home(environ: Mapping[str, str]) -> Path:
    value = environ.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(environ.get("HOME") or os.path.expanduser("~"), ".local", "share")


def config_home(environ: Mapping[str, str]) -> Path:
    value = environ.get("XDG_CONFIG_HOME", "")
    if value and os.path.isabs(value):
        return Path(value) / CONFIG_FOLDER
    return Path(environ.get("HOME") or os.path.expanduser("~"), ".config", CONFIG_FOLDER)


def in_a_store(path: Path, environ: Mapping[str, str]) -> bool:
    """Whether `path` lies in a folder that an archive on this machine serves as its store
    (read from the archives' configs: no format is loaded, no git is run)."""
    return store_root(path, environ) is not None


def store_root(path: Path, environ: Mapping[str, str]) -> Path | None:
    """The folder of the store that `path` lies in, when an archive on this machine serves
    it (read from the archives' configs: no format is loaded, no git is run)."""
    folder = data_home(environ).joinpath(*STORES_FOLDER)
    try:
        archives = list(folder.iterdir())
    except OSError:
        return None
    resolved = path.absolute().resolve()
    for archive in archives:
        try:
            text = (archive / "config").read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.strip().partition("=")
            if name.strip() == "worktree" and value.strip():
                root = Path(value.strip())
                if resolved == root or root in resolved.parents:
                    return root
    return None


def archive_path(agent: str, environ: Mapping[str, str]) -> Path:
    """Where the archive of an agent's store lives: one per agent, whatever folder its store
    is in, so a store that moved keeps its archive."""
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
        self.root = work_tree.resolve()
        self.common_dir = archive.absolute()
        self._config_root = config_root
        self.globs = globs
        self._live = live  # the sessions running agents may be writing
        self._reader = None
        self._records = {}  # the file records per archive tip, as Repository keeps them
        self._first_records = {}
        self._redactions = {}
        self.notes: list[str] = []  # what opening found (a store that moved), one line each
        created = not (self.common_dir / "HEAD").is_file()
        if created:
            if not create:
                raise GitClawError(
                    f"{self.root}: the {agent} store has no archive at {self.common_dir} "
                    "(nothing was compressed there yet, or the archive was removed); "
                    "nothing was changed"
                )
            self._create()
        link_work_tree(self.root, self.common_dir)
        self._note_work_tree(created)

    def _create(self) -> None:
        try:
            self.common_dir.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise disk_error(error, self.common_dir.parent, "creating the archive") from None
        # No template: git's sample hooks would be most of an empty archive's bytes.
        init = ("init", "-q", "--bare", "--template=", str(self.common_dir))
        done = run_git(self.common_dir.parent, *init)
        if done.returncode != 0:
            raise git_failure("init", done.stderr, done.returncode, f" in {self.common_dir}")
        self._config("core.bare", "false")  # a work tree: the store
        self._config("core.worktree", str(self.root))
        self._config("gc.autoDetach", "false")  # gc ends with the run that started it

    def _config(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.common_dir), "config", *args],
            capture_output=True,
            check=False,
        )
        return done.stdout.decode().strip() if done.returncode == 0 else ""

    def _note_work_tree(self, created: bool) -> None:
        """Remember each folder the archive served; a store whose recorded folder is gone
        and that now lives elsewhere moved: one line says so, and the archive follows."""
        known = [line for line in self._config("--get-all", WORK_TREE_KEY).splitlines() if line]
        here = str(self.root)
        if here in known:
            return
        gone = [folder for folder in known if not Path(folder).is_dir()]
        if gone and not created:
            self.notes.append(f"the {self.agent} store moved from {gone[-1]} to {here}")
        self._config("--add", WORK_TREE_KEY, here)
        self._config("core.worktree", here)

    @property
    def config_root(self) -> Path:
        return self._config_root

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
        (`writing`, else one pass over /proc) or that a running agent may be writing (the
        newest of its working directory), none written in the last `quiet_minutes`."""
        if writing is None:
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
