"""What the tool writes for an agent's store is as private as the store's sessions.

Claude Code and Copilot CLI write their sessions mode 600 in folders mode 700; the archive
that holds what was cut from them, and the caches, locks and logs a store run writes under
the user's data and config folders, get the same: folders 700, files 600 (a file git makes
read-only, a pack, 400), whatever the umask. Three means: a run that works on a store does
so under umask 077 (its git children inherit it); the archive's `core.sharedRepository=0600`
makes git itself force those modes on what it writes there, by whatever command; and an
archive made by an older version (no such setting) is tightened once, path by path.
A repository's own `.git` keeps git's normal behaviour: its owner decides.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

PRIVATE_UMASK = 0o077
SHARED_REPOSITORY = "0600"  # git's own way to force the modes of what it writes


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and folders made in the block are for this user alone (umask 077)."""
    previous = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(previous)


def make_private_folder(folder: Path) -> None:
    """`folder` and its missing parents, made 700 (an existing one is left as it is)."""
    with private_umask():
        folder.mkdir(parents=True, exist_ok=True)


def tighten(folder: Path) -> int:
    """Take every permission of group and others off `folder` and everything under it (no
    symlink followed); the number of paths changed."""
    changed = 0
    for base, folders, files in os.walk(folder):
        for name in [*folders, *files, None]:
            path = os.path.join(base, name) if name is not None else base
            with contextlib.suppress(OSError):
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode) or not mode & 0o077:
                    continue
                os.chmod(path, stat.S_IMODE(mode) & ~0o077)
                changed += 1
    return changed


def private_opener(path: str, flags: int) -> int:
    """For `open(…, opener=private_opener)`: a file made new is mode 600."""
    return os.open(path, flags, 0o600)
