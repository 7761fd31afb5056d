"""Where Claude Code keeps its sessions on this machine (checked in the real CLI: see
docs/stores.md)."""

from __future__ import annotations

from collections.abc import Mapping

from gitclaw_compress.formats.base import AgentHome, home_folder


def home(environ: Mapping[str, str]) -> AgentHome:
    """`CLAUDE_CONFIG_DIR`, else `~/.claude`; transcripts (and subagents') under `projects/`."""
    root, moved_by = home_folder(environ, "CLAUDE_CONFIG_DIR", ".claude")
    return AgentHome("claude", root, ("projects/**/*.jsonl",), moved_by)
