"""Sessions held for a secret: `compress`, `step` and the hooks compress every other session
and leave these untouched, each named with its finding ids and the commands to go on, then
exit 1. Small on purpose: `ops/flow.py` imports it on every run, the scan only when needed."""

from __future__ import annotations

import re
from typing import Any

from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError

HELD = "held"  # the FileReport status of such a session (ops/flow.py writes it)
WOULD_HOLD = "would-hold"  # the same, in a dry run (--dry-run, --check): what the run would do


class SecretsHeld(GitClawError):
    """Open findings in session files, before anything was written: the run holds those
    sessions and goes on with the others. `sessions`: path, ids, advice, the findings
    masked (`found`) and as JSON (`check.held_sessions` builds them)."""

    def __init__(self, sessions: list[dict[str, Any]], message: str, details: list[str]) -> None:
        super().__init__(message, exit_code=EXIT_PROBLEMS)
        self.sessions = sessions
        self.details = details


def held_lines(held: list[dict[str, Any]], *, dry_run: bool = False) -> list[str]:
    """One line per held session, for stderr; a dry run says what the real run would do."""
    verb = "would hold" if dry_run else "held"
    return [
        f"{verb} {entry['path']} (untouched): {len(entry['ids'])} secret(s) found in "
        f"session files (ids {', '.join(entry['ids'])}); {entry['advice']}"
        for entry in held
    ]


# A held line as `held_lines` writes it, after whatever names the store ("claude: "): the
# agent hook's pass reads its path and ids back from the pass's output (ops/agenthooks/run.py).
HELD_LINE = re.compile(
    r"held (.+?) \(untouched\): \d+ secret\(s\) found in session files \(ids ([^)]*)\)"
)
