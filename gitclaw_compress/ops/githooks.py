"""The pre-push hook that makes the archive travel with every `git push`, the git-lfs way.

`install` writes `<hooks dir>/pre-push`, which runs `gitclaw-compress pre-push "$@"` with
git's stdin. A pre-push hook that was there before is never overwritten: it is renamed to
`pre-push.before-gitclaw-compress` and run first, with the same arguments and stdin, and
`uninstall` puts it back. `uninstall` removes only a hook that `install` wrote.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.archive import Repository

HOOK_NAME = "pre-push"
CHAINED_SUFFIX = ".before-gitclaw-compress"
SIGNATURE = "# gitclaw-compress pre-push hook"
ZERO_OIDS = {"0" * 40, "0" * 64}

HOOK_SCRIPT = f"""#!/bin/sh
{SIGNATURE} (written by `gitclaw-compress install`; `gitclaw-compress uninstall` removes it).
# It sends refs/gitclaw/* (the archive of compressed sessions) along with every push of a
# branch that holds compressed sessions, so that other clones can restore them.
input=$(cat)
hooks_dir=$(dirname "$0")
chained="$hooks_dir/{HOOK_NAME}{CHAINED_SUFFIX}"
if [ -x "$chained" ]; then
  printf '%s\\n' "$input" | "$chained" "$@" || exit $?
fi
if ! command -v gitclaw-compress >/dev/null 2>&1; then
  echo >&2 "gitclaw-compress: not on PATH; this push would leave the archive behind." \\
    "Install it, or run 'gitclaw-compress uninstall' (or delete $0)."
  exit 2
fi
printf '%s\\n' "$input" | gitclaw-compress pre-push "$@"
"""


def hooks_dir(repo: Repository) -> Path:
    """Where git looks for hooks here (core.hooksPath honoured)."""
    out = repo.git("rev-parse", "--git-path", "hooks").decode().strip()
    path = Path(out)
    return path if path.is_absolute() else repo.root / path


def _is_ours(path: Path) -> bool:
    try:
        return SIGNATURE in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class HookState:
    path: Path
    installed: bool  # our hook is the pre-push hook
    chained: Path | None  # the hook that was there before, run first
    foreign: bool  # a pre-push hook that is not ours (install would chain it)

    def as_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "installed": self.installed,
            "chained": str(self.chained) if self.chained else None,
            "foreign": self.foreign,
        }


def hook_state(repo: Repository) -> HookState:
    path = hooks_dir(repo) / HOOK_NAME
    chained = path.with_name(HOOK_NAME + CHAINED_SUFFIX)
    installed = path.is_file() and _is_ours(path)
    return HookState(
        path,
        installed,
        chained if chained.exists() else None,
        path.exists() and not installed,
    )


def _write_executable(path: Path, text: str) -> None:
    temp = path.with_name(path.name + ".gitclaw-compress-new")
    temp.write_text(text, encoding="utf-8")
    temp.chmod(0o755)
    os.replace(temp, path)


def install(repo: Repository) -> str:
    """Install the pre-push hook; one line saying what was done."""
    state = hook_state(repo)
    if state.installed:
        return f"already installed: {state.path}"
    state.path.parent.mkdir(parents=True, exist_ok=True)
    chained = state.path.with_name(HOOK_NAME + CHAINED_SUFFIX)
    note = ""
    if state.foreign:
        if chained.exists():
            raise GitClawError(
                f"{state.path}: a pre-push hook is there and {chained.name} too; move one "
                "of them away, then install again; nothing was changed"
            )
        os.replace(state.path, chained)
        note = f"; it runs the hook that was there first ({chained.name})"
    _write_executable(state.path, HOOK_SCRIPT)
    return f"installed {state.path}{note}"


def uninstall(repo: Repository) -> str:
    """Remove our pre-push hook (only ours) and put back the one it chained."""
    state = hook_state(repo)
    if not state.installed:
        if state.foreign:
            return f"not installed: {state.path} is not gitclaw-compress's; left alone"
        return f"not installed: no {state.path}"
    state.path.unlink()
    if state.chained is not None:
        os.replace(state.chained, state.path)
        return f"removed the gitclaw-compress hook; {state.path} is the previous hook again"
    return f"removed {state.path}"


@dataclass(frozen=True, slots=True)
class PushedRef:
    local_ref: str
    local_oid: str
    remote_ref: str


def parse_push_lines(text: str) -> list[PushedRef]:
    """git's pre-push stdin: `<local ref> <local oid> <remote ref> <remote oid>` per line."""
    refs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 4:
            raise GitClawError(f"pre-push input line {number}: expected 4 fields, got {line!r}")
        refs.append(PushedRef(fields[0], fields[1], fields[2]))
    return refs


def pre_commit_push(env: Mapping[str, str]) -> tuple[str, list[PushedRef]]:
    """The remote and the pushed ref, from the variables pre-commit sets for pre-push hooks.

    pre-commit leaves PRE_COMMIT_TO_REF out when the push sends the whole history (a new
    remote), so the local branch's name stands for its commit then.
    """
    remote = env.get("PRE_COMMIT_REMOTE_NAME", "")
    local_branch = env.get("PRE_COMMIT_LOCAL_BRANCH", "")
    commit = env.get("PRE_COMMIT_TO_REF", "") or local_branch
    if not remote or not commit:
        raise GitClawError(
            "pre-push needs REMOTE (and git's refs on stdin), or pre-commit's "
            "PRE_COMMIT_REMOTE_NAME and PRE_COMMIT_LOCAL_BRANCH; the hooks pass them"
        )
    remote_branch = env.get("PRE_COMMIT_REMOTE_BRANCH", "") or "refs/heads/"
    return remote, [PushedRef(local_branch or commit, commit, remote_branch)]


def holds_compressed_sessions(repo: Repository, commit: str, globs: list[str]) -> bool:
    """Whether a session file of this commit's tree carries a gitclaw-compress marker."""
    specs = [f":(glob){pattern}" for pattern in globs]
    done = subprocess.run(
        ["git", "grep", "-q", "--fixed-strings", '"gitclawCompress"', commit, "--", *specs],
        cwd=repo.root,
        capture_output=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitClawError(f"git grep {commit} failed: {detail[-1] if detail else done.returncode}")
    return done.returncode == 0


def branches_needing_archive(
    repo: Repository, pushed: list[PushedRef], globs: list[str]
) -> list[str]:
    """The pushed branches whose new tip holds compressed sessions."""
    return [
        ref.remote_ref
        for ref in pushed
        if ref.local_oid not in ZERO_OIDS  # a deletion sends nothing
        and ref.remote_ref.startswith("refs/heads/")
        and holds_compressed_sessions(repo, ref.local_oid, globs)
    ]
