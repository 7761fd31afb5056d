"""v3 (and v2) markers: a line that was committed (or staged) intact is not archived again;
its marker names the blob of that version and the line, and the archive tree references that
blob.

Restore must stay byte-identical wherever the blob is only kept alive by the archive ref:
after `git gc --prune=now`, after the branch's commits were squashed away, and in every kind
of clone (depth 1, one branch, a clone that fetched the archive ref). Files compressed by the
release before v2 (v1 markers only) must still restore, also after they grow and get v3
markers next to their v1 markers; so must files with the v2 markers of the release before v3,
which keep them byte for byte when they grow.
"""

from __future__ import annotations

import os
import re
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flow_helpers import (
    SESSIONS,
    Origin,
    commit_all,
    git,
    init,
    make_origin,
    marker_count,
    session_bytes,
    v3_count,
    write,
    writing_v2_markers,
)

from gitclaw_compress.cli import cli
from gitclaw_compress.core.lines import RawLine
from gitclaw_compress.core.marker import Marker, read_marker
from gitclaw_compress.ops.restore import restored_lines
from gitclaw_compress.store.access import ArchiveAccess
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.intact import IntactLines
from gitclaw_compress.store.objects import READ, BlobLineReader, ObjectReader, ObjectReadError

SESSION = f"{SESSIONS}/issue-1.jsonl"
ARCHIVE = "refs/gitclaw/archive"
PUSH_ALL = ("main", "refs/gitclaw/*:refs/gitclaw/*")
V1_BUNDLE = Path(__file__).resolve().parent / "data" / "v1-markers.bundle"
V1_SESSION = f"{SESSIONS}/v1.jsonl"


Invoke = Callable[..., Result]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """gitclaw-compress in process, in a given folder."""

    def invoke(cwd: Path, *args: str) -> Result:
        monkeypatch.chdir(cwd)
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return invoke


def ok(run: Invoke, cwd: Path, *args: str) -> Result:
    result = run(cwd, *args)
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


def grow(path: Path, turns: int) -> bytes:
    """One agent run appends new turns; returns the bytes it appended."""
    added = session_bytes(turns).split(b"\n", 1)[1]
    with open(path, "ab") as handle:
        handle.write(added)
    return added


def markers(data: bytes) -> list[tuple[int, Marker]]:
    """Every marker of a file, with its line number."""
    found = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        marker = read_marker(line, str(number))
        if marker is not None:
            found.append((number, marker))
    return found


def archive_paths(repo: Path, ref: str = ARCHIVE) -> list[str]:
    return git(repo, "ls-tree", "-r", "--name-only", ref).splitlines()


def two_runs(run: Invoke, repo: Path) -> bytes:
    """Two agent runs committed as they are, then compressed (every line is intact at HEAD,
    whose blob is HEAD~1's after the commit) and committed."""
    session = write(repo / SESSION, session_bytes(4))
    commit_all(repo, "agent run 1")
    original = session.read_bytes() + grow(session, 3)
    commit_all(repo, "agent run 2")
    ok(run, repo, "compress", "--keep-turns", "1", SESSION)
    commit_all(repo, "compressed")
    return original


def restore_to(run: Invoke, repo: Path, *options: str) -> bytes:
    ok(run, repo, "restore", SESSION, "-o", "restored.jsonl", *options)
    return (repo / "restored.jsonl").read_bytes()


def test_committed_lines_are_referenced_not_copied(run: Invoke, repo: Path) -> None:
    original = two_runs(run, repo)
    compressed = (repo / SESSION).read_bytes()
    found = markers(compressed)
    assert found and all(marker.intact is not None for _, marker in found)
    head_blob = git(repo, "rev-parse", "HEAD~1:" + SESSION).strip()
    assert {marker.intact for _, marker in found} == {(head_blob, number) for number, _ in found}
    paths = archive_paths(repo)
    assert f"intact/{head_blob[:2]}/{head_blob[2:]}/issue-1.jsonl" in paths
    assert not [path for path in paths if path.startswith("blobs/")]  # no payload copied
    assert b'"commit":' not in compressed  # the blob already says where the line is
    assert restore_to(run, repo, "--no-fetch") == original
    assert ok(run, repo, "verify", "--no-fetch").exit_code == 0


def test_second_run_changes_nothing(run: Invoke, repo: Path) -> None:
    two_runs(run, repo)
    before = (repo / SESSION).read_bytes()
    tip = git(repo, "rev-parse", ARCHIVE)
    result = ok(run, repo, "compress", "--force", "--keep-turns", "1", "--json", SESSION)
    assert '"status": "unchanged"' in result.output
    assert (repo / SESSION).read_bytes() == before
    assert git(repo, "rev-parse", ARCHIVE) == tip


def test_the_staged_version_serves_when_head_lacks_the_line(run: Invoke, repo: Path) -> None:
    """In a pre-commit hook the agent's new lines are staged, not committed."""
    session = write(repo / SESSION, session_bytes(5))
    original = session.read_bytes()
    git(repo, "add", "-A")
    staged = git(repo, "rev-parse", ":" + SESSION).strip()
    ok(run, repo, "compress", "--keep-turns", "1", SESSION)
    found = markers(session.read_bytes())
    assert found and {marker.oids for _, marker in found} == {(staged,)}
    commit_all(repo, "compressed")  # as a hook does: the agent's staged blob is replaced
    git(repo, "gc", "-q", "--prune=now")
    assert restore_to(run, repo, "--no-fetch") == original


def test_restore_after_gc_and_after_a_squash_merge(run: Invoke, repo: Path) -> None:
    """The commits that held the lines intact are gone: only the archive keeps the blob."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    original = two_runs(run, repo)
    git(repo, "gc", "-q", "--prune=now")
    assert restore_to(run, repo, "--no-fetch") == original
    intact_commit = git(repo, "rev-parse", "HEAD~1").strip()
    squashed = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD~3", "-m", "squash").strip()
    git(repo, "reset", "-q", "--hard", squashed)
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert git(repo, "cat-file", "-t", intact_commit, check=False) == ""  # really gone
    assert restore_to(run, repo, "--no-fetch") == original
    assert ok(run, repo, "verify", "--no-fetch").exit_code == 0


def test_a_missing_intact_blob_is_found_and_refused(run: Invoke, repo: Path) -> None:
    two_runs(run, repo)
    compressed = (repo / SESSION).read_bytes()
    blob = git(repo, "rev-parse", "HEAD~1:" + SESSION).strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    verified = run(repo, "verify", "--no-fetch", SESSION)
    assert verified.exit_code == 1 and blob in verified.output, verified.output
    refused = run(repo, "restore", SESSION)
    assert refused.exit_code == 3 and refused.stderr.count("\n") == 1, refused.stderr
    assert blob in refused.stderr and "is not in this clone" in refused.stderr
    assert (repo / SESSION).read_bytes() == compressed  # left as it was


def test_a_tampered_intact_blob_is_found_and_refused(run: Invoke, repo: Path) -> None:
    two_runs(run, repo)
    compressed = (repo / SESSION).read_bytes()
    blob = git(repo, "rev-parse", "HEAD~1:" + SESSION).strip()
    other = git(repo, "rev-parse", "HEAD:" + SESSION).strip()  # the compressed version
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    os.chmod(loose, 0o644)
    loose.write_bytes((repo / ".git" / "objects" / other[:2] / other[2:]).read_bytes())
    verified = run(repo, "verify", "--no-fetch", SESSION)
    assert verified.exit_code == 1 and "does not match the recorded sha256" in verified.output
    refused = run(repo, "restore", SESSION)
    assert refused.exit_code == 3 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"archived object {blob} does not match" in refused.stderr
    assert (repo / SESSION).read_bytes() == compressed


def test_each_intact_blob_is_streamed_once_per_restore(
    run: Invoke, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = two_runs(run, repo)
    blob = git(repo, "rev-parse", "HEAD~1:" + SESSION).strip()
    assert len(markers((repo / SESSION).read_bytes())) > 3
    asked: list[str] = []  # whole objects read into memory
    streamed: list[str] = []  # blobs read forward, line by line
    real_get = ObjectReader.get
    real_open = BlobLineReader.__init__

    def counting_get(self: ObjectReader, name: str) -> bytes | None:
        asked.append(name)
        return real_get(self, name)

    def counting_open(
        self: BlobLineReader, root: Path, oid: str, objects: Path | None = None
    ) -> None:
        streamed.append(oid)
        real_open(self, root, oid, objects)

    monkeypatch.setattr(ObjectReader, "get", counting_get)
    monkeypatch.setattr(BlobLineReader, "__init__", counting_open)
    repository = Repository(repo)
    try:
        access = ArchiveAccess(repository, ARCHIVE)
        data = b"".join(
            line.encode() for line in restored_lines(repository, repo / SESSION, ARCHIVE, access)
        )
    finally:
        repository.close()
    assert data == original
    assert streamed.count(blob) == 1 and blob not in asked  # read once, never held whole


def test_a_v3_marker_is_smaller_than_the_v2_and_v1_markers_it_replaces(
    run: Invoke, tmp_path: Path
) -> None:
    """The same session compressed never committed (v1) and committed first (v3, and v2 as
    the release before v3 wrote it)."""
    sizes = {}
    for version in (1, 2, 3):
        repo = tmp_path / f"v{version}"
        repo.mkdir()
        git(repo, "init", "-q")
        write(repo / SESSION, session_bytes(6))
        if version > 1:
            commit_all(repo)
        if version == 2:
            with writing_v2_markers():
                ok(run, repo, "compress", "--keep-turns", "1", SESSION)
        else:
            ok(run, repo, "compress", "--keep-turns", "1", SESSION)
        data = (repo / SESSION).read_bytes()
        if version == 3:
            assert v3_count(data) == marker_count(data) > 0
        else:
            assert data.count(f'"v":{version},'.encode()) == marker_count(data) > 0
        sizes[version] = len(data)
    assert sizes[3] < sizes[2] < sizes[1]


def test_v2_file_of_the_release_before_restores_and_keeps_its_markers(
    run: Invoke, repo: Path
) -> None:
    """A file compressed with v2 markers verifies and restores; run again it stays byte for
    byte; grown, its v2 lines stay as they are and the new lines get v3 markers."""
    session = write(repo / SESSION, session_bytes(5))
    original = session.read_bytes()
    commit_all(repo, "agent run 1")
    with writing_v2_markers():
        ok(run, repo, "compress", "--keep-turns", "1", SESSION)
    commit_all(repo, "compressed with v2 markers")
    v2_file = session.read_bytes()
    assert v2_file.count(b'"v":2,') == marker_count(v2_file) > 0 and not v3_count(v2_file)
    assert ok(run, repo, "verify", "--no-fetch").exit_code == 0
    assert restore_to(run, repo, "--no-fetch") == original
    ok(run, repo, "compress", "--force", "--keep-turns", "1", SESSION)
    assert session.read_bytes() == v2_file

    original += grow(session, 3)
    commit_all(repo, "agent run 2")
    ok(run, repo, "compress", "--keep-turns", "1", SESSION)
    commit_all(repo, "compressed")
    grown = session.read_bytes().split(b"\n")
    v2_lines = [
        (number, line) for number, line in enumerate(v2_file.split(b"\n")) if b'"v":2,' in line
    ]
    assert all(grown[number] == line for number, line in v2_lines)
    assert v3_count(session.read_bytes()) > 0
    assert ok(run, repo, "verify", "--no-fetch").exit_code == 0
    git(repo, "gc", "-q", "--prune=now")
    assert restore_to(run, repo, "--no-fetch") == original


# Clones of an origin whose branch was squashed: the blobs are on the archive ref alone.


@pytest.fixture
def squashed(run: Invoke, tmp_path: Path) -> tuple[Origin, bytes]:
    """Three agent runs (compress, commit, push with the archive), then the branch is
    squashed to one commit on the origin and the old commits are collected."""
    origin = make_origin(tmp_path)
    session = write(origin.work / SESSION, session_bytes(4))
    original = session.read_bytes()
    ok(run, origin.work, "step", "--keep-turns", "1")
    commit_all(origin.work, "run 1")
    for turns in (3, 2):
        original += grow(session, turns)
        ok(run, origin.work, "step", "--keep-turns", "1")
        commit_all(origin.work, "run")
    origin.push(*PUSH_ALL)
    data = session.read_bytes()
    found = markers(data)
    assert any(m.intact for _, m in found) and any(m.parts for _, m in found)  # v1 and v3
    squashed_commit = git(origin.work, "commit-tree", "HEAD^{tree}", "-m", "squash").strip()
    git(origin.work, "push", "-q", "--force", "origin", f"{squashed_commit}:refs/heads/main")
    git(origin.bare, "reflog", "expire", "--expire=now", "--all")
    git(origin.bare, "gc", "-q", "--prune=now")
    assert git(origin.bare, "rev-list", "--count", "main").strip() == "1"
    return origin, original


def test_depth_1_clone_of_a_squashed_branch(
    run: Invoke, tmp_path: Path, squashed: tuple[Origin, bytes]
) -> None:
    origin, original = squashed
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    assert restore_to(run, clone) == original  # fetches the archive by itself
    assert ok(run, clone, "verify", "--no-fetch").exit_code == 0


def test_branch_only_clone_of_a_squashed_branch(
    run: Invoke, tmp_path: Path, squashed: tuple[Origin, bytes]
) -> None:
    origin, original = squashed
    clone = origin.clone(tmp_path / "branch", "--single-branch", "--branch", "main")
    assert git(clone, "for-each-ref", "refs/gitclaw") == ""
    result = ok(run, clone, "restore", SESSION)
    assert "fetching refs/gitclaw/archive from origin" in result.stderr
    assert (clone / SESSION).read_bytes() == original


def test_clone_that_fetched_the_archive_ref(
    run: Invoke, tmp_path: Path, squashed: tuple[Origin, bytes]
) -> None:
    origin, original = squashed
    clone = origin.clone(tmp_path / "full")
    git(clone, "fetch", "-q", "origin", "refs/gitclaw/*:refs/gitclaw/*")
    git(clone, "gc", "-q", "--prune=now")
    assert restore_to(run, clone, "--no-fetch") == original
    assert ok(run, clone, "verify", "--no-fetch").exit_code == 0


def test_archives_with_intact_entries_merge_on_push(run: Invoke, tmp_path: Path) -> None:
    """Two clones reference different intact blobs; the second push merges the archives."""
    origin = make_origin(tmp_path)
    for name in ("a", "b"):
        write(origin.work / f"{SESSIONS}/{name}.jsonl", session_bytes(4, session_id=name))
    commit_all(origin.work, "sessions")
    origin.push("main")
    originals = {}
    for name in ("a", "b"):
        job = origin.clone(tmp_path / f"job-{name}")
        path = job / f"{SESSIONS}/{name}.jsonl"
        originals[name] = path.read_bytes() + grow(path, 2)
        ok(run, job, "step", "--keep-turns", "1", "--push")
        commit_all(job, f"job {name}")
        git(job, "pull", "-q", "--rebase", "origin", "main")
        git(job, "push", "-q", "origin", "HEAD:main")
    intact = [path for path in archive_paths(origin.bare) if path.startswith("intact/")]
    assert len(intact) == 2
    reader = origin.clone(tmp_path / "reader", "--depth", "1")
    for name in ("a", "b"):
        ok(run, reader, "restore", f"{SESSIONS}/{name}.jsonl")
        assert (reader / f"{SESSIONS}/{name}.jsonl").read_bytes() == originals[name]


# Files compressed by the release before v2 markers: tests/data/v1-markers.bundle (branch
# main and refs/gitclaw/archive) was made by that code (commit 67f40f6) with the CLI, in the
# steps that v1_original describes.


def v1_original() -> bytes:
    """The session in the bundle: session_bytes(4) compressed before it was ever committed
    (payloads only), committed; then 3 turns appended, compressed (some lines name the
    first commit) and committed. Both runs with --keep-turns 1."""
    return session_bytes(4) + session_bytes(3).split(b"\n", 1)[1]


def v1_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "v1"
    git(tmp_path, "clone", "-q", "--branch", "main", str(V1_BUNDLE), clone.name)
    git(clone, "fetch", "-q", str(V1_BUNDLE), f"{ARCHIVE}:{ARCHIVE}")
    return clone


def test_v1_markers_from_the_last_release_restore(run: Invoke, tmp_path: Path) -> None:
    clone = v1_clone(tmp_path)
    data = (clone / V1_SESSION).read_bytes()
    assert marker_count(data) == data.count(b'"v":1,') > 0 and b'"v":2,' not in data
    assert ok(run, clone, "verify", "--no-fetch").exit_code == 0
    ok(run, clone, "restore", V1_SESSION, "--no-fetch")
    assert (clone / V1_SESSION).read_bytes() == v1_original()


def test_v1_file_grows_and_gets_v3_markers_beside_its_v1_markers(
    run: Invoke, tmp_path: Path
) -> None:
    clone = v1_clone(tmp_path)
    session = clone / V1_SESSION
    original = v1_original() + grow(session, 3)
    commit_all(clone, "agent run 3")
    original += grow(session, 2)
    ok(run, clone, "compress", "--keep-turns", "1", V1_SESSION)
    commit_all(clone, "run 4, compressed")
    data = session.read_bytes()
    versions = re.findall(rb'"gitclawCompress":\{"v":(\d)', data)
    assert versions and set(versions) == {b"1"} and v3_count(data) > 0
    assert ok(run, clone, "verify", "--no-fetch").exit_code == 0
    git(clone, "gc", "-q", "--prune=now")
    ok(run, clone, "restore", V1_SESSION, "-o", "restored.jsonl", "--no-fetch")
    assert (clone / "restored.jsonl").read_bytes() == original


def test_lines_of_a_blob_are_read_forward_and_again_when_asked_for_an_earlier_one(
    tmp_path: Path,
) -> None:
    repo = init(tmp_path / "lines")
    lines = [b'{"n":%d}' % number for number in range(1, 8)]
    write(repo / "f.jsonl", b"\n".join(lines))  # no final newline: the last line still reads
    commit_all(repo)
    blob = git(repo, "rev-parse", "HEAD:f.jsonl").strip()
    repository = Repository(repo)
    try:
        access = ArchiveAccess(repository, ARCHIVE)
        asked = [5, 7, 2, 3, 9, 1]  # 2 after 7, and 1 after the end: the blob is read again
        got = [access._blob_line(blob, number) for number in asked]
        missing = access._blob_line("0" * 40, 1)
    finally:
        repository.close()
    assert got == [lines[4], lines[6], lines[1], lines[2], b"", lines[0]]
    assert missing is None and "0" * 40 in access.missing


LONG = b"x" * (READ + 5)  # a line longer than the piece a blob is read in


@pytest.mark.parametrize("loose", [True, False], ids=["read here", "through git"])
@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"\n",
        b"a",
        b"a\n",
        b"a\nb",
        b"a\nb\n",
        b"\n\nx\n\n",
        b"one\r\ntwo\n" * 3,
        LONG,
        b"a\n" + LONG + b"\nb\n" + LONG,
        b"\n" * (READ + 3),
    ],
    ids=lambda blob: repr(blob[:12]) + (f"...{len(blob)}" if len(blob) > 12 else ""),
)
def test_blob_parts_split_as_the_whole_blob_would(tmp_path: Path, blob: bytes, loose: bool) -> None:
    """Which lines a changed file still holds is worked out from the blob streamed line by
    line (never the whole blob at once): the parts are those of `blob.split(b"\\n")`, and
    each line asked for is that line, whether the loose object is read here or by git."""
    init(tmp_path)
    (tmp_path / "f").write_bytes(blob)
    oid = git(tmp_path, "hash-object", "-w", "f").strip()
    objects = tmp_path / ".git" / "objects" if loose else None
    reader = BlobLineReader(tmp_path, oid, objects)
    assert list(reader.parts()) == blob.split(b"\n")
    reader.close()
    lines = blob.split(b"\n")
    reader = BlobLineReader(tmp_path, oid, objects)
    asked = range(1, len(lines) + 2, 2)  # every other line, then one past the end
    padded = [*lines, b""]  # past the end: empty
    assert [reader.line(n) for n in asked] == [padded[min(n, len(padded)) - 1] for n in asked]
    reader.close()
    missing = BlobLineReader(tmp_path, "1" * 40, objects)
    assert list(missing.parts()) == []
    missing.close()


@pytest.mark.parametrize("how", ["truncated", "uninflatable", "longer than its header"])
def test_a_corrupt_loose_blob_is_one_line_error(tmp_path: Path, how: str) -> None:
    """A loose object read here that does not inflate, or whose length differs from its
    header's, stops the read with one line naming the object (as git's own error would)."""
    init(tmp_path)
    content = b"".join(
        b'{"n":%d,"text":"%s"}\n' % (n, os.urandom(300).hex().encode()) for n in range(9000)
    )
    (tmp_path / "f").write_bytes(content)
    oid = git(tmp_path, "hash-object", "-w", "f").strip()
    target = tmp_path / ".git" / "objects" / oid[:2] / oid[2:]
    saved = target.read_bytes()
    os.chmod(target, 0o644)
    damaged = {
        "truncated": saved[: len(saved) // 2],
        "uninflatable": saved[:-8] + bytes(8),
        "longer than its header": zlib.compress(b"blob %d\0" % (len(content) - 1) + content),
    }[how]
    target.write_bytes(damaged)
    reader = BlobLineReader(tmp_path, oid, tmp_path / ".git" / "objects")
    with pytest.raises(ObjectReadError) as raised:
        list(reader.parts())
    reader.close()
    assert oid in str(raised.value) and "\n" not in str(raised.value)


def test_lines_still_intact_in_a_changed_file_are_found_without_holding_the_blob(
    tmp_path: Path,
) -> None:
    """A file that is no longer HEAD's blob plus appended lines (line 2 edited) is compared
    with HEAD's blob line by line: the blob is streamed, never held (it was read whole, split
    and kept as a dict of digests: more than twice the file; now two 1 MiB buffers)."""
    root = init(tmp_path / "repo")
    lines = [b'{"n":%d,"text":"%s"}' % (n, b"x" * 400) for n in range(40_000)]
    path = write(root / SESSION, b"\n".join(lines) + b"\n")
    commit_all(root)
    lines[1] += b" "
    path.write_bytes(b"\n".join(lines) + b"\n")
    size = path.stat().st_size
    repo = Repository(root)
    tracemalloc.start()
    try:
        intact = IntactLines(repo, path, SESSION)
        held = [
            intact.blob_for(RawLine(n, data, True))
            for n, data in ((1, lines[0]), (2, lines[1]), (3, lines[2]))
        ]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    head = git(root, "rev-parse", f"HEAD:{SESSION}").strip()
    assert held == [head, None, head]
    assert peak < size // 4, f"held {peak:,} bytes for a {size:,}-byte file"
