"""The one exception type that the CLI turns into a one-line error and an exit code."""

from __future__ import annotations

import shlex

EXIT_OK = 0
EXIT_PROBLEMS = 1  # the command ran and found problems (verify, --check, secrets, doctor)
EXIT_USAGE = 2  # bad command-line usage (click's own code)
EXIT_ERROR = 3  # the command could not do its job; nothing was changed


class GitClawError(Exception):
    """An expected failure. Its message is one line: what failed, where, and what to do."""

    def __init__(
        self, message: str, *, exit_code: int = EXIT_ERROR, details: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.details = details or []  # lines printed before the one line (one file each)


def shell_line(*words: str) -> str:
    """A command line to print for the user to paste: every word shell-quoted, since remote
    names, refs and paths come from the repository and its config, not from us."""
    return shlex.join(words)


JSON_META_KEY = "gitclaw_compress.json"  # set by --json, so that errors print JSON too
