"""The transcripts every format's contract is checked on: synthetic ones that always exist,
and the corpus files of that format when the shared corpus is there.

Each format adds its synthetic cases to `SYNTHETIC` (a name and a function that returns the
file's bytes) and its corpus folder to `CORPUS_FOLDERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from agent_fixtures import TRANSCRIPTS, png
from conftest import CORPUS
from format_strategies import claude_sessions, codex_rollouts, copilot_events, pi_sessions
from hypothesis.strategies import SearchStrategy
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

from gitclaw_compress.formats import FORMATS

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


def session_params() -> list[object]:
    """Every synthetic case and corpus file of every format, as pytest params of (format
    name, a function that returns the session's bytes)."""
    cases: list[object] = []
    for name in FORMATS:
        for label, make in SYNTHETIC.get(name, []):
            cases.append(pytest.param(name, make, id=f"{name}-{label}"))
        for path in corpus_cases(name):
            cases.append(pytest.param(name, path.read_bytes, id=f"{name}-corpus-{path.stem}"))
    return cases


# --------------------------------------------------------------------------------------
# One list of format cases: what every contract needs to know about a format
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FormatCase:
    """Everything the contracts need to check a format: add one here and every check runs.

    `layouts` are the places its agent (or a repository that commits its files) puts a
    transcript, relative to the repository root; `{id}` stands for the session's name. The
    default globs must find each of them and the hooks' `files` pattern must match them;
    `not_sessions` are paths that must not be taken for sessions. `corpus_ratio` is the most
    its corpus files may weigh after `compress --keep-turns 1`, over all of them together.
    `strategy` generates its transcripts for the property test (format_strategies.py).
    `resumable` are the synthetic transcripts its real CLI resumes (agent_harness.run_resume
    runs it: `PLACERS` says how); `drops_old_thinking` says that its agent leaves out the
    thinking compress emptied before the kept turns (pi, with `session.stripThinking`), so a
    resume sends part of the sealed reasoning, unchanged."""

    name: str
    layouts: tuple[str, ...]
    not_sessions: tuple[str, ...]
    corpus_ratio: float
    resumable: tuple[tuple[str, Callable[[], bytes]], ...]
    strategy: Callable[[], SearchStrategy[bytes]]
    drops_old_thinking: bool = False

    @property
    def synthetic(self) -> list[tuple[str, Callable[[], bytes]]]:
        return SYNTHETIC[self.name]

    @property
    def home(self) -> str:
        """Where the contracts commit one of its transcripts."""
        return self.layouts[0]

    def place(self, session_id: str) -> str:
        return self.home.format(id=session_id)

    def corpus(self) -> list[Path]:
        return corpus_cases(self.name)


FORMAT_CASES: tuple[FormatCase, ...] = (
    FormatCase(
        "pi",
        layouts=(
            ".GITCLAW/state/sessions/{id}.jsonl",
            "agent/state/sessions/issue-1-{id}.jsonl",
        ),
        not_sessions=(".GITCLAW/sessions/not-state.jsonl", "src/sessions/data.jsonl"),
        corpus_ratio=0.35,
        resumable=(
            ("typical", lambda: typical_session(turns=4, pasted_image=png()).data()),
            ("compaction", lambda: compaction_session().data()),
        ),
        drops_old_thinking=True,
        strategy=pi_sessions,
    ),
    FormatCase(
        "claude",
        layouts=(
            ".claude/projects/-home-dev-project/{id}.jsonl",
            ".claude/projects/-home-dev-project/{id}/subagents/agent-a1b2c3.jsonl",
            "archive/claude/{id}/subagents/agent-a1b2c3.jsonl",
            "c0/70516b3fa9/0/full.jsonl",
        ),
        not_sessions=("src/data.jsonl", "claude/projects/{id}.jsonl"),
        corpus_ratio=0.64,
        resumable=(("fixture", lambda: TRANSCRIPTS["claude"]().data),),
        strategy=claude_sessions,
    ),
    FormatCase(
        "codex",
        layouts=(
            ".codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-{id}.jsonl",
            ".codex/archived_sessions/rollout-2026-03-30T19-22-40-{id}.jsonl",
            ".GITCLAW/state/codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-{id}.jsonl",
        ),
        not_sessions=("src/rollout-data.jsonl", ".codex/sessions/2026/03/31/history.jsonl"),
        corpus_ratio=0.78,
        resumable=(("fixture", lambda: TRANSCRIPTS["codex"]().data),),
        strategy=codex_rollouts,
    ),
    FormatCase(
        "copilot",
        layouts=(
            ".copilot/session-state/{id}/events.jsonl",
            "state/copilot/.copilot/session-state/{id}/events.jsonl",
            ".GITCLAW/state/copilot/.copilot/session-state/{id}/events.jsonl",
        ),
        not_sessions=("docs/session-state/c/events.jsonl", ".copilot/events.jsonl"),
        corpus_ratio=0.62,
        resumable=(("fixture", lambda: TRANSCRIPTS["copilot"]().data),),
        strategy=copilot_events,
    ),
)
