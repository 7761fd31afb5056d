"""Rewrite the archive ref so that no commit reachable from it keeps a redacted secret: one
`git fast-import` replays every archive commit, oldest first, with each payload or intact
version that held a secret replaced by its redacted twin (same tree path scheme, new id)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.archive_layout import ARCHIVE_IDENTITY
from gitclaw_compress.store.git import git_env, git_failure
from gitclaw_compress.store.remote import REWRITTEN_FLAG


def _entries(repo: Repository, commit: str) -> list[tuple[str, str, str]]:
    out = repo.git("ls-tree", "-r", "-z", commit)
    rows = []
    for record in out.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            mode, _, oid = meta.decode().split(" ")
            rows.append((mode, oid, path.decode("utf-8", "surrogateescape")))
    return rows


def rewrite_archive(
    repo: Repository,
    ref: str,
    new_blobs: dict[str, bytes],
    rename: Callable[[str, str], tuple[str, str] | None],
    extra: dict[str, bytes],
    message: str,
) -> str:
    """Replay the archive's commits. `rename(path, oid)` gives the new tree path and id of
    an entry (None drops it); `new_blobs` are the contents to write for new ids; `extra` are
    files added to the last commit. Returns the new tip."""
    stream = _import_stream(repo, ref, new_blobs, rename, extra, message)
    done = subprocess.run(
        ["git", "fast-import", "--quiet", "--done", "--force"],
        cwd=repo.root,
        env=git_env(repo.root),
        input=stream,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise git_failure("fast-import", done.stderr, done.returncode)
    tip = repo.rev_parse(ref)
    assert tip is not None
    flag = repo.git_dir / "gitclaw-compress" / REWRITTEN_FLAG
    flag.parent.mkdir(parents=True, exist_ok=True)
    flag.write_text(tip + "\n")
    return tip


def _import_stream(
    repo: Repository,
    ref: str,
    new_blobs: dict[str, bytes],
    rename: Callable[[str, str], tuple[str, str] | None],
    extra: dict[str, bytes],
    message: str,
) -> bytes:
    """The `git fast-import` input of `rewrite_archive`: the new blobs, then every commit of
    `ref`, oldest first, with its entries renamed and `extra` added to the last."""
    listing = repo.git("rev-list", "--reverse", "--topo-order", "--parents", ref).decode()
    commits = [line.split() for line in listing.splitlines() if line.strip()]
    stream: list[bytes] = []
    marks: dict[str, int] = {}
    mark = 0
    for oid, data in new_blobs.items():
        mark += 1
        marks[oid] = mark
        stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
    extra_marks: dict[str, int] = {}
    for path, data in extra.items():
        mark += 1
        extra_marks[path] = mark
        stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
    commit_marks: dict[str, int] = {}
    for index, (commit, *parents) in enumerate(commits):
        header = repo.git("cat-file", "commit", commit)
        head, _, body = header.partition(b"\n\n")
        committer = next(
            (
                line[len(b"committer ") :]
                for line in head.split(b"\n")
                if line.startswith(b"committer ")
            ),
            b"%s 0 +0000" % ARCHIVE_IDENTITY.encode(),
        )
        last = index == len(commits) - 1
        if last:
            body = message.encode()
        mark += 1
        commit_marks[commit] = mark
        stream.append(b"commit %s\nmark :%d\ncommitter %s\n" % (ref.encode(), mark, committer))
        stream.append(b"data %d\n%s\n" % (len(body), body))
        for position, parent in enumerate(parents):
            word = b"from" if position == 0 else b"merge"
            stream.append(b"%s :%d\n" % (word, commit_marks[parent]))
        stream.append(b"deleteall\n")
        for mode, oid, path in _entries(repo, commit):
            renamed = rename(path, oid)
            if renamed is None:
                continue
            new_path, new_oid = renamed
            source = b":%d" % marks[new_oid] if new_oid in marks else new_oid.encode()
            stream.append(b"M %s %s %s\n" % (mode.encode(), source, new_path.encode()))
        if last:
            for path, blob_mark in extra_marks.items():
                stream.append(b"M 100644 :%d %s\n" % (blob_mark, path.encode()))
        stream.append(b"\n")
    stream.append(b"done\n")
    return b"".join(stream)
