"""Finding session files in a repository."""

from __future__ import annotations

from pathlib import Path

from gitclaw_compress.archive import Repository
from gitclaw_compress.config import Config


def all_sessions(repo: Repository, config: Config) -> list[Path]:
    """Every file matching the configured session globs, sorted by path."""
    found: set[Path] = set()
    for pattern in config["sessions.globs"]:
        found.update(path for path in repo.root.glob(pattern) if path.is_file())
    return sorted(found)
