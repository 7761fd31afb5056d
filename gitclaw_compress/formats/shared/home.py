"""An agent's own store on this machine (what each agent's home.py returns), and the folders
the agents pick from the environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class AgentHome:
    """An agent's own store: the folder it keeps sessions in (the work tree of the archive
    the tool keeps elsewhere), its session files as globs relative to it, and the
    environment variable that chose the folder (None: the default)."""

    agent: str  # the format's name
    root: Path
    globs: tuple[str, ...]
    moved_by: str | None = None
    # A running agent: a word of its command line (the program's name, or its package's),
    # and the folder (relative to `root`) where it writes the sessions of its working
    # directory; its newest session there is the one it may be running. None: unknown.
    program: tuple[str, ...] = ()
    cwd_folder: Callable[[str], str] | None = None
    # Whether the agent holds its session open for its whole run (Codex) rather than opening
    # it for each append (the rest): where open files cannot be listed, no session of such
    # an agent is rewritten while one of its processes runs.
    keeps_open: bool = False
    # The ids of the processes that mark a session as theirs while they run (Copilot CLI's
    # `inuse.<pid>.hold` beside its events.jsonl); None: the agent leaves no such mark.
    holders: Callable[[Path], list[int]] | None = None
    # The variables that can name the store's folder, the agent's own first: a folder an
    # archive served is opened as the agent would see it with one of them set to it.
    folder_variables: tuple[str, ...] = ()


def home_folder(
    environ: Mapping[str, str], name: str | None, *default: str, tilde: bool = False
) -> tuple[Path, str | None]:
    """The folder the environment variable `name` names (a leading ~ expanded when the
    agent does, `tilde`), else `default` under the user's home; and the variable, if it
    chose."""
    home = user_home(environ)
    value = environ.get(name, "") if name else ""
    if not value:
        return Path(home, *default), None
    if tilde and (value == "~" or value.startswith(("~/", "~\\"))):
        value = home + value[1:]
    return Path(value), name


def user_home(environ: Mapping[str, str], windows: bool = os.name == "nt") -> str:
    """The home the agents use: HOME; on Windows `%USERPROFILE%` (Node's `os.homedir()` and
    Codex read it there, not HOME, which Git Bash sets too)."""
    if windows and environ.get("USERPROFILE"):
        return environ["USERPROFILE"]
    return environ.get("HOME") or os.path.expanduser("~")
