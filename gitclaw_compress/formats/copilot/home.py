"""Where Copilot CLI keeps its sessions on this machine (checked in the real CLI: see
docs/stores.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gitclaw_compress.formats.shared.home import AgentHome, home_folder

# Its launcher is node running the package's script, which starts the native `copilot`.
PROGRAM = ("copilot", "@github/copilot")
# Copilot CLI opens events.jsonl for each append (checked with 1.0.102 while it waits for
# the model: it is not among its open files), and holds `inuse.<pid>.hold` open beside it
# while the session runs.
KEEPS_OPEN = False
HOLD_PREFIX, HOLD_SUFFIX = "inuse.", ".hold"


def home(environ: Mapping[str, str]) -> AgentHome:
    """`COPILOT_HOME`, else `~/.copilot`; one folder per session under `session-state/`."""
    root, moved_by = home_folder(environ, "COPILOT_HOME", ".copilot")
    globs = ("session-state/*/events.jsonl",)
    return AgentHome(
        "copilot",
        root,
        globs,
        moved_by,
        PROGRAM,
        keeps_open=KEEPS_OPEN,
        holders=holders,
        folder_variables=("COPILOT_HOME",),
    )


def holders(session: Path) -> list[int]:
    """The processes that marked this session as theirs (`inuse.<pid>.hold` beside it)."""
    found = []
    try:
        names = [entry.name for entry in session.parent.iterdir()]
    except OSError:
        return []
    for name in names:
        if name.startswith(HOLD_PREFIX) and name.endswith(HOLD_SUFFIX):
            pid = name[len(HOLD_PREFIX) : -len(HOLD_SUFFIX)]
            if pid.isdigit():
                found.append(int(pid))
    return found
