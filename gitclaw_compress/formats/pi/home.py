"""Where pi keeps its sessions on this machine (its `dist/config.js`, `main.js` and
`core/settings-manager.js`, checked in the real CLI: tests/test_store_homes.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import orjson

from gitclaw_compress.formats.shared.home import AgentHome, home_folder

PROGRAM = ("pi", "pi-coding-agent")
# pi appends each entry with `appendFileSync` by path (its core/session-manager.js): it does
# not hold the session open between entries.
KEEPS_OPEN = False
SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"  # the sessions folder itself, files directly in it
SETTINGS_SESSION_DIR = "settings.json sessionDir"  # the same, from the agent folder's settings
AGENT_DIR = "PI_CODING_AGENT_DIR"
VARIABLES = (AGENT_DIR, SESSION_DIR)


def home(environ: Mapping[str, str]) -> AgentHome:
    """`PI_CODING_AGENT_SESSION_DIR`, else `sessionDir` of the agent folder's settings.json,
    else `sessions/` (one folder per working directory) of the agent folder:
    `PI_CODING_AGENT_DIR`, else `~/.pi/agent`. A leading ~ is expanded, as pi does."""
    if environ.get(SESSION_DIR):
        root, moved_by = home_folder(environ, SESSION_DIR, tilde=True)
        return AgentHome(
            "pi",
            root,
            ("**/*.jsonl",),
            moved_by,
            PROGRAM,
            _one_folder,
            KEEPS_OPEN,
            folder_variables=VARIABLES,
        )
    agent_dir, moved_by = home_folder(environ, AGENT_DIR, ".pi", "agent", tilde=True)
    configured = _settings_session_dir(agent_dir)
    if configured:
        root, _ = home_folder({**environ, SESSION_DIR: configured}, SESSION_DIR, tilde=True)
        globs = ("**/*.jsonl",)
        return AgentHome(
            "pi",
            root,
            globs,
            SETTINGS_SESSION_DIR,
            PROGRAM,
            _one_folder,
            KEEPS_OPEN,
            folder_variables=VARIABLES,
        )
    globs = ("sessions/**/*.jsonl",)
    return AgentHome(
        "pi",
        agent_dir,
        globs,
        moved_by,
        PROGRAM,
        cwd_folder,
        KEEPS_OPEN,
        folder_variables=VARIABLES,
    )


def cwd_folder(cwd: str) -> str:
    """pi's `getDefaultSessionDir`: `sessions/--<cwd without its leading slash, every / \\
    and : as ->--`."""
    safe = re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd))
    return f"sessions/--{safe}--"


def _one_folder(cwd: str) -> str:
    """A session folder of its own holds every working directory's sessions."""
    return "."


def _settings_session_dir(agent_dir: Path) -> str | None:
    """`sessionDir` of pi's global settings, if it names one (a project's own settings can
    move a project's sessions too; a store is one folder, so those are not followed)."""
    try:
        settings = orjson.loads((agent_dir / "settings.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    value = settings.get("sessionDir") if isinstance(settings, dict) else None
    return value if isinstance(value, str) and value else None
