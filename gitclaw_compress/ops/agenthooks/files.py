"""Where the agent hooks keep their files (the tool's data folder, `agent-hooks/` in it: the
records, the locks, the log), the words of the log that the pass writes and doctor reads, and
how a hook file is read and written whole."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.base import TITLES
from gitclaw_compress.store.agent_store import data_home
from gitclaw_compress.store.private import make_private_folder, private_opener

AGENTS = tuple(TITLES)  # every agent, in the formats' order
FOLDER = "agent-hooks"  # in the data folder: records, locks, the log
LOG_NAME = "hooks.log"
STORES_COMMAND = "stores"  # the one-shot pass over an agent's store
PASS_ENDED = re.compile(r": pass ended: exit (-?\d+) ")
PASS_STARTED = f": pass: gitclaw-compress {STORES_COMMAND} "
# A session the pass held for a secret, as the pass logs it (path, ids)
PASS_HELD = re.compile(r": pass held (.+) for secrets \(ids ([^)]*)\)$")


def data_folder(env: Mapping[str, str]) -> Path:
    """The tool's data folder: `$XDG_DATA_HOME/gitclaw-compress` (an absolute one, as the
    XDG spec says), else `~/.local/share/gitclaw-compress`; the stores' archives are there."""
    return data_home(env) / "gitclaw-compress"


def hooks_folder(env: Mapping[str, str]) -> Path:
    return data_folder(env) / FOLDER


def made_hooks_folder(env: Mapping[str, str]) -> Path:
    """`hooks_folder`, made if missing, for this user alone: a record holds the bytes ours
    replaced (a notify program's arguments may hold a token), the log names sessions."""
    folder = hooks_folder(env)
    make_private_folder(folder.parent)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    return folder


def log_path(env: Mapping[str, str]) -> Path:
    return hooks_folder(env) / LOG_NAME


def lock_path(env: Mapping[str, str], agent: str) -> Path:
    """Held by the running pass of an agent (flock): the hook starts no second one."""
    return hooks_folder(env) / f"{agent}.lock"


def hook_command(agent: str) -> list[str]:
    """What the agent runs: this interpreter and package, not whatever is on PATH then."""
    return [sys.executable, "-P", "-m", "gitclaw_compress", "hook", agent]


def read_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def cannot_write(path: Path, error: OSError) -> GitClawError:
    what = (error.strerror or str(error)).lower()
    return GitClawError(f"{path}: cannot write it ({what}); nothing was changed")


def write_file(path: Path, data: bytes, *, private: bool = False) -> None:
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
