"""Where Claude Code keeps its sessions on this machine (checked in the real CLI: see
docs/stores.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from gitclaw_compress.formats.shared.home import AgentHome, home_folder

PROGRAM = ("claude", "@anthropic-ai/claude-code")
# Claude Code opens its transcript for each append (checked with 2.1.197 while it waits for
# the model: the transcript is not among its open files).
KEEPS_OPEN = False
VARIABLE = "CLAUDE_CONFIG_DIR"


def home(environ: Mapping[str, str]) -> AgentHome:
    """`CLAUDE_CONFIG_DIR`, else `~/.claude`; transcripts (and subagents') under `projects/`."""
    root, moved_by = home_folder(environ, VARIABLE, ".claude")
    globs = ("projects/**/*.jsonl",)
    return AgentHome(
        "claude",
        root,
        globs,
        moved_by,
        PROGRAM,
        project_folder,
        keeps_open=KEEPS_OPEN,
        folder_variables=(VARIABLE,),
    )


def project_folder(cwd: str) -> str:
    """Where Claude Code keeps the sessions of a working directory (checked with 2.1.332:
    every character that is not an ASCII letter or digit becomes `-`)."""
    return "projects/" + re.sub(r"[^A-Za-z0-9]", "-", cwd)
