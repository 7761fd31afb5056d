"""Where Copilot CLI keeps its sessions on this machine (checked in the real CLI: see
docs/stores.md)."""

from __future__ import annotations

from collections.abc import Mapping

from gitclaw_compress.formats.base import AgentHome, home_folder


def home(environ: Mapping[str, str]) -> AgentHome:
    """`COPILOT_HOME`, else `~/.copilot`; one folder per session under `session-state/`."""
    root, moved_by = home_folder(environ, "COPILOT_HOME", ".copilot")
    globs = ("session-state/*/events.jsonl",)
    return AgentHome("copilot", root, globs, moved_by, folder_variables=("COPILOT_HOME",))
