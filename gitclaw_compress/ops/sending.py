"""Whether something sends the archive to the remote: without it, the originals that a run
left only in the archive (new payloads, staged versions: `FileReport.archive_only`) live
only in this clone, and a fresh clone (or the next CI run, on a runner that was thrown away)
cannot restore them. An original that a commit of the branch holds is no such case.

The ways to send it: our pre-push hook (`gitclaw-compress install`), pre-commit's
gitclaw-compress-push-archive hook with pre-commit's pre-push script installed, `--push`
on this run, the GitHub Action's push (its input `push`), or, on purpose, none:
`archive.localOnly`. `compress` and `step` say so in one line when none is set up; with
`CI=true` (a runner that is thrown away) it is an error before anything is written.
"""

from __future__ import annotations

import os

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.ops.githooks import PRE_COMMIT_CONFIG as PRE_COMMIT_CONFIG
from gitclaw_compress.ops.githooks import PUSH_ARCHIVE_HOOK as PUSH_ARCHIVE_HOOK
from gitclaw_compress.ops.githooks import hook_state, pre_commit_state
from gitclaw_compress.store.repository import Repository

INSTALL = "gitclaw-compress install"


def pre_commit_sends(repo: Repository) -> bool:
    """pre-commit's push-archive hook is configured and its pre-push script installed."""
    return pre_commit_state(repo).sends


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unsent_archive(
    repo: Repository, compressed: int, *, local_only: bool, ref: str, remote: str, pushes: bool
) -> str | None:
    """The one line to say when a run compresses `compressed` sessions whose archive nothing
    sends to `remote`, or None: nothing compressed, `pushes` (this run or its caller
    pushes), `local_only` (their configs say archive.localOnly), no such remote (`doctor`
    covers that), or a hook that sends it."""
    if not compressed or pushes or local_only or not repo.sessions_travel:
        return None  # (an agent's store: its archive stays here unless a remote is named)
    if not repo.has_remote(remote):
        return None
    if hook_state(repo).installed or pre_commit_sends(repo):
        return None
    sessions = "1 compressed session" if compressed == 1 else f"{compressed} compressed sessions"
    return (
        f"the originals of {sessions} are only in this clone's {ref}, and nothing sends that "
        f"ref to {remote} (no pre-push hook, no --push): a fresh clone could not restore them; "
        f"run `{INSTALL}` (git push then sends it), or `gitclaw-compress push` after each "
        "run, or set archive.localOnly to true to keep it here on purpose"
    )


class UnsentArchiveError(GitClawError):
    """In CI, a run would leave originals only on a runner that is thrown away."""


def refuse_in_ci(line: str | None) -> None:
    """With CI=true, the line is an error before anything is written (exit 3)."""
    if line is not None and in_ci():
        raise UnsentArchiveError(
            f"CI=true: {line}; nothing was changed (in a workflow, run `step --push`, or "
            "the GitHub Action with push: true)"
        )
