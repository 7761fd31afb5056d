"""Where pi keeps its sessions on this machine (its `dist/config.js` and `main.js`, checked
in the real CLI: see docs/stores.md)."""

from __future__ import annotations

from collections.abc import Mapping

from gitclaw_compress.formats.base import AgentHome, home_folder

SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"  # the sessions folder itself, files directly in it


def home(environ: Mapping[str, str]) -> AgentHome:
    """`PI_CODING_AGENT_SESSION_DIR`, else `sessions/` (one folder per working directory)
    of `PI_CODING_AGENT_DIR`, else of `~/.pi/agent`; a leading ~ expanded, as pi does."""
    if environ.get(SESSION_DIR):
        root, moved_by = home_folder(environ, SESSION_DIR, tilde=True)
        return AgentHome("pi", root, ("**/*.jsonl",), moved_by)
    root, moved_by = home_folder(environ, "PI_CODING_AGENT_DIR", ".pi", "agent", tilde=True)
    return AgentHome("pi", root, ("sessions/**/*.jsonl",), moved_by)
