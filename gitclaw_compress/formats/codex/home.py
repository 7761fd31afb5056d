"""Where Codex CLI keeps its rollouts on this machine (checked in the real CLI: see
docs/stores.md)."""

from __future__ import annotations

from collections.abc import Mapping

from gitclaw_compress.formats.shared.home import AgentHome, home_folder

# Its launcher is node running the package's script, which starts the native `codex`.
PROGRAM = ("codex", "@openai/codex")
# Codex holds its rollout open (read-write, append) for its whole run, checked with 0.169.0
# while it waits for the model: its appends after a rename would go to the old file.
KEEPS_OPEN = True


def home(environ: Mapping[str, str]) -> AgentHome:
    """`CODEX_HOME`, else `~/.codex`; rollouts under `sessions/YYYY/MM/DD/`, and under
    `archived_sessions/` once archived (one store: archiving moves a file inside it)."""
    root, moved_by = home_folder(environ, "CODEX_HOME", ".codex")
    globs = ("sessions/**/rollout-*.jsonl", "archived_sessions/**/rollout-*.jsonl")
    return AgentHome(
        "codex",
        root,
        globs,
        moved_by,
        PROGRAM,
        keeps_open=KEEPS_OPEN,
        folder_variables=("CODEX_HOME",),
    )
