"""The pre-push check of the commits a push would send: the session files each commit the
remote lacks added or changed, and in a changed one only the lines its parent did not have
(the diff, not the whole history). A session committed before this tool ran, or with the
scan off, would otherwise go out with its secret."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitclaw_compress.config import Config
from gitclaw_compress.core.lines import RawLine, lines_from_bytes
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError, shell_line
from gitclaw_compress.secrets.check import ScanResult, baseline_for
from gitclaw_compress.secrets.findings import Finding
from gitclaw_compress.store.archive import Repository

ZERO = frozenset({"0" * 40, "0" * 64})


@dataclass(frozen=True, slots=True)
class Pushed:
    """One ref of the push: the commit it sends and what the remote has there (or zeros)."""

    local_oid: str
    remote_oid: str


def new_commits(repo: Repository, remote: str, pushed: Sequence[Pushed]) -> list[str]:
    """The commits of the push the remote lacks, oldest first: reachable from a pushed tip,
    not from the remote's tip of that ref nor from any ref this clone has of the remote."""
    tips = [ref.local_oid for ref in pushed if ref.local_oid not in ZERO]
    if not tips:
        return []
    have = [
        f"^{ref.remote_oid}"
        for ref in pushed
        if ref.remote_oid not in ZERO and repo.rev_parse(f"{ref.remote_oid}^{{commit}}")
    ]
    out = repo.git(
        "rev-list", "--reverse", "--topo-order", *tips, *have, "--not", f"--remotes={remote}"
    )
    return out.decode().split()


def _changed_sessions(
    repo: Repository, commit: str, globs: list[str]
) -> list[tuple[str, str, str]]:
    """(path, old blob or zeros, new blob) of each session file the commit added or changed
    against its first parent (every file of a root commit)."""
    specs = [f":(glob){pattern}" for pattern in globs]
    out = repo.git(
        "diff-tree",
        "-r",
        "-z",
        "--root",
        "--no-commit-id",
        "--diff-filter=AMT",
        "--no-renames",
        commit,
        "--",
        *specs,
    )
    fields = out.split(b"\0")
    changed = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.decode().split()
        if len(parts) >= 5:
            changed.append((path.decode("utf-8", "surrogateescape"), parts[2], parts[3]))
    return changed


def _new_lines(repo: Repository, old: str, new: str) -> tuple[list[RawLine], list[RawLine]]:
    """(every line of the new blob, the lines the old one did not have)."""
    data = repo.reader.get(new) or b""
    lines = lines_from_bytes(data)
    if old in ZERO:
        return lines, lines
    seen = {line.data for line in lines_from_bytes(repo.reader.get(old) or b"")}
    return lines, [line for line in lines if line.data not in seen]


def scan_pushed(
    repo: Repository, config: Config, remote: str, pushed: Sequence[Pushed]
) -> tuple[ScanResult, dict[str, str]]:
    """The findings in the session lines the new commits bring, and the commit that brought
    each finding's file version (`findings[i].object` is the blob). A merge commit is not
    diffed: the commits it brings are in the range themselves."""
    from gitclaw_compress.formats import detect
    from gitclaw_compress.secrets.scan import scan_lines

    result = ScanResult()
    brought: dict[str, str] = {}  # finding id + file -> commit
    done: set[tuple[str, str]] = set()
    for commit in new_commits(repo, remote, pushed):
        for path, old, new in _changed_sessions(repo, commit, config["sessions.globs"]):
            if (old, new) in done:
                continue
            done.add((old, new))
            result.files += 1
            lines, fresh = _new_lines(repo, old, new)
            if not fresh:
                continue
            try:
                fmt = detect(lines, path)
            except GitClawError:
                fmt = None
            for finding in scan_lines(fresh, fmt, path, new):
                result.findings.append(finding)
                brought.setdefault(f"{finding.id} {finding.file}", commit)
    baseline = baseline_for(repo, config)
    result.accepted = {f.hash for f in result.findings if baseline.accepts(f)}
    return result, brought


class SecretsInCommits(GitClawError):
    """A commit the push would send holds a session line with an unaccepted secret."""

    def __init__(self, found: list[Finding], brought: dict[str, str], remote: str) -> None:
        where = sorted({(brought[f"{f.id} {f.file}"], f.file) for f in found})
        named = "; ".join(f"commit {commit[:12]} {file}" for commit, file in where)
        ids = sorted({f.id for f in found})
        accept = shell_line("gitclaw-compress", "scan", *[w for i in ids for w in ("--accept", i)])
        files = sorted({f.file for f in found})
        rewrite = shell_line("git", "filter-repo", "--replace-text", "SECRETS.txt")
        super().__init__(
            f"{len(ids)} secret(s) in commits this push would send to {remote} ({named}; "
            f"ids {', '.join(ids)}); the push stops. Either remove them from those commits "
            f"(`{rewrite}`, with SECRETS.txt listing each secret, or `git rebase -i` to amend "
            f"{', '.join(files)}), then rotate the secret; or, to send them anyway, accept "
            f"them with `{accept}`",
            exit_code=EXIT_PROBLEMS,
        )
        self.details = [f"{brought[f'{f.id} {f.file}'][:12]} {f.text()}" for f in found]


def guard_commits(
    repo: Repository, config: Config, remote: str, pushed: Sequence[Pushed]
) -> list[str]:
    """Raise SecretsInCommits when a new commit brings an unaccepted finding and
    `scan.block` is on; with it off, a warning each (masked)."""
    if not config["scan.enabled"]:
        return []
    result, brought = scan_pushed(repo, config, remote, pushed)
    found = result.open
    if found and config["scan.block"]:
        raise SecretsInCommits(found, brought, remote)
    return [
        f"secret in commit {brought[f'{f.id} {f.file}'][:12]} this push sends: {f.text()}"
        for f in found
    ]
