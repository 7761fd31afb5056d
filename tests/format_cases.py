"""The transcripts every format's contract is checked on: synthetic ones that always exist,
and the corpus files of that format when the shared corpus is there.

Each format adds its synthetic cases to `SYNTHETIC` (a name and a function that returns the
file's bytes) and its corpus folder to `CORPUS_FOLDERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import CORPUS
from synthetic import compaction_session, typical_session
from synthetic_claude import (
    broken_session,
    compacted_session,
    images_session,
    subagent_session,
)
from synthetic_claude import typical_session as claude_session
from synthetic_codex import compacted_rollout, rolled_back_rollout, typical_rollout
from synthetic_copilot import broken_events, typical_events

SYNTHETIC: dict[str, list[tuple[str, Callable[[], bytes]]]] = {
    "pi": [
        ("typical-anthropic", lambda: typical_session().data()),
        ("typical-responses", lambda: typical_session(api="openai-responses").data()),
        ("compaction", lambda: compaction_session().data()),
    ],
    "claude": [
        ("typical", lambda: claude_session().data()),
        ("images", lambda: images_session().data()),
        ("compacted", lambda: compacted_session().data()),
        ("subagent", lambda: subagent_session().data()),
        ("glued-line-no-final-newline", broken_session),
    ],
    "codex": [
        ("typical", lambda: typical_rollout().data()),
        ("rolled-back", lambda: rolled_back_rollout().data()),
        ("compacted", lambda: compacted_rollout().data()),
    ],
    "copilot": [
        ("typical", lambda: typical_events().data()),
        ("broken-lines", broken_events),
    ],
}

# The corpus folder and the glob of each format's files in it.
CORPUS_FOLDERS: dict[str, tuple[str, str]] = {
    "pi": ("pi", "*.jsonl"),
    "claude": ("claude", "*.jsonl"),
    "codex": ("codex", "*.jsonl"),
    "copilot": ("copilot", "*.jsonl"),
}


def corpus_cases(name: str) -> list[Path]:
    folder, pattern = CORPUS_FOLDERS.get(name, ("", ""))
    if not folder or not (CORPUS / folder).is_dir():
        return []
    return sorted((CORPUS / folder).glob(pattern))
