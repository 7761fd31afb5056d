"""Moving the archive ref between clones: fetch it, push it, and merge two archives.

Two runs (two CI jobs, two clones) can each add a commit to the archive ref. The archive is
content-addressed (`blobs/<oid[:2]>/<oid[2:]>`, `intact/<oid[:2]>/<oid[2:]>/<name>`), so two
archives always merge without conflict: the merge commit's tree is the union of both trees.
`push_archive` and `fetch_archive` merge when the other side moved, so neither ever drops the
other's payloads and neither ever needs `--force`.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from typing import Any

from gitclaw_compress.errors import GitClawError, shell_line
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.archive_layout import ARCHIVE_IDENTITY
from gitclaw_compress.store.git import DURABLE, failure_detail, git_env

FETCH_SCRATCH = "refs/gitclaw-compress/fetched"  # outside refs/gitclaw/*: never pushed
PUSH_ATTEMPTS = 4


def fetch_command(ref: str, remote: str) -> str:
    """The one command a user runs to get the archive when it is missing."""
    words = ("gitclaw-compress", "fetch") + (() if remote == "origin" else ("--remote", remote))
    return shell_line(*words)


def _run(repo: Repository, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=repo.root, capture_output=True, check=False, env=git_env(repo.root)
    )


def _is_ancestor(repo: Repository, older: str, newer: str) -> bool:
    return _run(repo, "merge-base", "--is-ancestor", older, newer).returncode == 0


def _tree_entries(repo: Repository, commit: str) -> dict[str, str]:
    """path -> blob id of every payload in an archive commit."""
    return {entry.name: entry.oid for entry in repo.ls_tree(commit, recursive=True)}


def merge_archive(repo: Repository, ref: str, other: str) -> str:
    """Bring the commit `other` into the archive ref; returns the ref's new tip.

    Fast-forwards when it can; otherwise writes a merge commit whose tree is the union.
    """
    local = repo.rev_parse(ref)
    if local is None:
        repo.git("update-ref", ref, other, "0" * len(other))
        return other
    if local == other or _is_ancestor(repo, other, local):
        return local
    if _is_ancestor(repo, local, other):
        repo.git("update-ref", ref, other, local)
        return other
    ours, theirs = _tree_entries(repo, local), _tree_entries(repo, other)
    message = b"gitclaw-compress: merge archives"
    stream = [
        b"commit %s\n" % ref.encode(),
        b"committer %s %d +0000\n" % (ARCHIVE_IDENTITY.encode(), int(time.time())),
        b"data %d\n%s\n" % (len(message), message),
        b"from %s\n" % local.encode(),
        b"merge %s\n" % other.encode(),
    ]
    for path, oid in sorted(theirs.items()):
        if path not in ours:
            stream.append(b"M 100644 %s %s\n" % (oid.encode(), path.encode()))
    stream.append(b"\ndone\n")
    repo.git(*DURABLE, "fast-import", "--quiet", "--done", input=b"".join(stream))
    tip = repo.rev_parse(ref)
    if tip is None or tip == local:
        raise GitClawError(f"could not merge the fetched archive into {ref}")
    return tip


def _fetch_tip(repo: Repository, remote: str, ref: str) -> tuple[str | None, str]:
    """Fetch the remote's archive ref; (its tip or None when the remote has none, error)."""
    done = _run(repo, "fetch", "--quiet", "--no-tags", remote, f"+{ref}:{FETCH_SCRATCH}")
    if done.returncode != 0:
        detail = failure_detail(done.stderr, done.returncode)
        if "couldn't find remote ref" in detail:
            return None, ""
        return None, detail
    tip = repo.rev_parse(FETCH_SCRATCH)
    return tip, ""


def _drop_scratch(repo: Repository) -> None:
    _run(repo, "update-ref", "-d", FETCH_SCRATCH)


@dataclass(frozen=True, slots=True)
class FetchResult:
    remote_tip: str | None  # None: the remote has no archive ref
    local_tip: str | None


def fetch_archive(repo: Repository, ref: str, remote: str) -> FetchResult:
    """Fetch the archive ref from `remote` and merge it into the local one."""
    if not repo.has_remote(remote):
        raise GitClawError(
            f"no remote named {remote!r} in {repo.root}; add it with "
            f"`{shell_line('git', 'remote', 'add', remote, 'URL')}` (or set archive.remote) "
            "and fetch again"
        )
    with repo.lock(f"archive-ref:{ref}", ref):
        try:
            tip, error = _fetch_tip(repo, remote, ref)
            if error:
                raise GitClawError(f"{shell_line('git', 'fetch', remote, ref)} failed: {error}")
            if tip is None:
                return FetchResult(None, repo.rev_parse(ref))
            local = merge_archive(repo, ref, tip)
        finally:
            _drop_scratch(repo)
    repo.close()  # a fresh `git cat-file` sees the fetched packs for certain
    return FetchResult(tip, local)


@dataclass(frozen=True, slots=True)
class PushResult:
    pushed: bool  # the remote's ref moved (False: nothing was new, or nothing to push)
    tip: str | None
    merged: bool  # the remote had moved; its archive was merged in first
    reason: str | None = None  # why nothing was pushed: "no-local-archive" | "up-to-date"


REWRITTEN_FLAG = "archive-rewritten"  # `redact` rewrote the ref: only a forced push may send it


@dataclass(frozen=True, slots=True)
class RemoteTip:
    tip: str | None  # the remote's tip of the ref; None: it has none, or could not be asked
    error: str | None = None  # why the remote could not be asked (None: it answered)


def remote_tip(repo: Repository, remote: str, ref: str) -> RemoteTip:
    """Ask the remote once (`git ls-remote`) where its `ref` stands, by the exact name: a
    pattern also matches names that only end like it (refs/backup/refs/gitclaw/archive)."""
    done = _run(repo, "ls-remote", "--refs", remote, ref)
    if done.returncode != 0:
        return RemoteTip(None, failure_detail(done.stderr, done.returncode))
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:
            return RemoteTip(oid)
    return RemoteTip(None)


def remote_may_hold(repo: Repository, remote: str, ref: str) -> bool:
    """Whether the remote may hold `ref`: it does, or it could not be asked."""
    found = remote_tip(repo, remote, ref)
    return found.error is not None or found.tip is not None


def push_archive(repo: Repository, ref: str, remote: str, force: bool = False) -> PushResult:
    """Push the archive ref; if the remote moved, merge its archive in and push again."""
    if repo.rev_parse(ref) is None:
        return PushResult(False, None, False, "no-local-archive")
    if not repo.has_remote(remote):
        raise GitClawError(
            f"no remote named {remote!r} to push {ref} to; add it with "
            f"`{shell_line('git', 'remote', 'add', remote, 'URL')}` (or set archive.remote)"
        )
    flag = repo.git_dir / "gitclaw-compress" / REWRITTEN_FLAG
    if flag.exists() and not remote_may_hold(repo, remote, ref):
        flag.unlink()  # nothing there could bring a redacted secret back: a plain push
    if flag.exists():  # merging the remote's archive back in would restore what was redacted
        if not force:
            raise GitClawError(
                f"{ref} was rewritten by `gitclaw-compress redact`; the remote's copy must be "
                "replaced, not merged: run `gitclaw-compress push --force`; nothing was pushed"
            )
        with repo.lock(f"archive-ref:{ref}", ref):
            tip = repo.rev_parse(ref)
            done = _run(repo, "push", "--quiet", "--no-verify", "--force", remote, f"{ref}:{ref}")
            if done.returncode != 0:
                raise GitClawError(
                    f"git push --force {remote} {ref} failed: "
                    f"{failure_detail(done.stderr, done.returncode)}"
                )
            flag.unlink()
            return PushResult(True, tip, False)
    merged = False
    with repo.lock(f"archive-ref:{ref}", ref):
        for _ in range(PUSH_ATTEMPTS):
            local = repo.rev_parse(ref)
            assert local is not None
            done = _run(repo, "push", "--porcelain", "--no-verify", remote, f"{ref}:{ref}")
            if done.returncode == 0:
                # `=` in porcelain output: the remote had this tip already.
                if any(line.startswith(b"=\t") for line in done.stdout.splitlines()):
                    return PushResult(False, local, merged, "up-to-date")
                return PushResult(True, local, merged)
            push_error = failure_detail(done.stderr, done.returncode)
            try:
                tip, fetch_error = _fetch_tip(repo, remote, ref)
                if tip is None or _is_ancestor(repo, tip, local):
                    # Not a race with another run: the push itself failed.
                    raise GitClawError(
                        f"{shell_line('git', 'push', remote, ref)} failed: "
                        f"{fetch_error or push_error}"
                    )
                merge_archive(repo, ref, tip)
                merged = True
            finally:
                _drop_scratch(repo)
    raise GitClawError(
        f"{shell_line('git', 'push', remote, ref)} kept being rejected after {PUSH_ATTEMPTS} "
        "merges; run `gitclaw-compress push` again"
    )


def archive_state(repo: Repository, ref: str, remote: str) -> dict[str, Any]:
    """Where the remote's archive ref stands against this clone's (asks the remote once):
    `state` is no-remote, unreachable, none (neither has it), missing (only this clone),
    not-fetched (only the remote), up-to-date or behind."""
    local = repo.rev_parse(ref)
    found: dict[str, Any] = {"remote": remote, "local_tip": local, "remote_tip": None}
    if not repo.has_remote(remote):
        found["state"] = "no-remote"
        return found
    asked = remote_tip(repo, remote, ref)
    if asked.error is not None:
        found["state"] = "unreachable"
        found["error"] = asked.error
        return found
    found["remote_tip"] = tip = asked.tip
    if tip is None:
        found["state"] = "missing" if local else "none"
    elif local is None:
        found["state"] = "not-fetched"
    elif tip == local:
        found["state"] = "up-to-date"
    elif repo.rev_parse(tip) is not None and _is_ancestor(repo, local, tip):
        found["state"] = "up-to-date"  # the remote moved on and includes this clone's archive
    else:
        found["state"] = "behind"
    return found


def archive_fix(state: str, ref: str, remote: str) -> str:
    """What gets archived objects that are not here, as the remote stands (`archive_state`):
    fetch only where the remote has something to fetch. The one advice `verify`, `restore`
    and `doctor` give for that fact."""
    if state in ("up-to-date", "behind", "not-fetched"):
        return f"get the archive with: {fetch_command(ref, remote)}"
    if state == "no-remote":
        add = shell_line("git", "remote", "add", remote, "URL")
        return f"add the remote it was pushed to (`{add}`), then: {fetch_command(ref, remote)}"
    if state == "unreachable":
        return f"{remote} could not be asked; once it can: {fetch_command(ref, remote)}"
    return (
        f"{remote} has no {ref} to fetch either: run `gitclaw-compress push` in the clone "
        "that compressed them"
    )
