"""Damage to compressed files and to the archive: restore never returns wrong bytes with
success, and verify never says ok when something is wrong.

Each trial damages one compressed line (a byte flip or a truncation at a random position,
or a broken marker) or one archived object (deleted, or its content swapped), then runs
verify and restore in process. A trial ends one of three ways: restore refused (an error),
restore gave the original bytes (from the commit that holds the intact line), or restore
gave wrong bytes without an error, which must never happen.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS_SESSIONS, cli, commit_session, corpus_files, git, needs_corpus
from flow_helpers import v3_count, writing_v2_markers
from format_cases import SYNTHETIC
from synthetic import typical_session

from gitclaw_compress.config import defaults
from gitclaw_compress.core.lines import MARKER_BYTES, join_lines
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.ops.compress import Compression
from gitclaw_compress.ops.restore import restored_lines
from gitclaw_compress.ops.verify import verify_file
from gitclaw_compress.store.access import ArchiveAccess
from gitclaw_compress.store.archive import Repository

SESSION = ".GITCLAW/state/sessions/s.jsonl"
REF = "refs/gitclaw/archive"
# The first synthetic session of each format (tests/format_cases.py).
FORMAT_ORIGINALS = [(name, cases[0][1]) for name, cases in SYNTHETIC.items()]


@dataclass
class Tally:
    trials: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    verify_missed: list[str] = field(default_factory=list)

    def line(self, label: str) -> str:
        return (
            f"{label}: {self.trials} trials, {self.outcomes['refused']} refused, "
            f"{self.outcomes['restored']} restored from history, "
            f"{self.outcomes['wrong']} wrong with exit 0"
        )


def compress(repo: Path, path: Path) -> None:
    with Compression(Repository(repo)) as run:
        report = run.add(path, defaults(), keep_turns=1, force=True)
        run.finish()
    assert report.status == "compressed"


def attempt(
    repo: Path, path: Path, original: bytes, tally: Tally, what: str, damaged: bool = True
) -> None:
    """Run verify and restore on the damaged state; count the outcome. A change that is not
    damage (`damaged` false: a plain line appended) must verify ok and restore."""
    repository = Repository(repo)
    try:
        verified = verify_file(repository, path, REF, access=ArchiveAccess(repository, REF))
        if not damaged and verified.problems:
            tally.verify_missed.append(f"NOT OK, THOUGH INTACT: {what}: {verified.problems}")
        if damaged and not verified.problems:
            tally.verify_missed.append(what)
        try:
            restored = join_lines(restored_lines(repository, path, REF))
        except GitClawError as error:
            assert "\n" not in str(error) and "Error(" not in str(error), str(error)
            tally.outcomes["refused"] += 1
            return
        tally.outcomes["restored" if restored == original else "wrong"] += 1
        if restored != original:
            tally.verify_missed.append(f"WRONG BYTES: {what}")
    finally:
        repository.close()
        tally.trials += 1


def compressed_line_spans(data: bytes) -> list[tuple[int, int]]:
    spans = []
    start = 0
    for line in data.split(b"\n"):
        if MARKER_BYTES in line:
            spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def damage_lines(
    repo: Path, path: Path, original: bytes, seeds: range, tally: Tally, label: str
) -> None:
    """Flip a byte or cut a compressed line at a random position, one damage per trial."""
    compressed = path.read_bytes()
    spans = compressed_line_spans(compressed)
    assert spans
    for seed in seeds:
        rng = random.Random(seed)
        start, end = rng.choice(spans)
        position = rng.randrange(start, end)
        if seed % 2:
            flipped = compressed[position] ^ (1 << rng.randrange(8))
            damaged = compressed[:position] + bytes([flipped]) + compressed[position + 1 :]
            what = f"{label} seed {seed}: flip at {position}"
        else:
            damaged = compressed[:position] + compressed[end:]
            what = f"{label} seed {seed}: cut line at {position}..{end}"
        path.write_bytes(damaged)
        attempt(repo, path, original, tally, what)
    path.write_bytes(compressed)


BROKEN_MARKERS = [
    (b'"v":1', b'"v":9'),
    (b'"sha256":"', b'"sha256":"0'),
    (b'"size":', b'"size":-'),
    (b'"parts":[', b'"parts":[1,'),
    (b'"oid":"', b'"oid":"HEAD:../x'),
    (b'"path":["', b'"path":[true,"'),
    (b'"commit":"', b'"commit":"HEAD '),
    (b'"v":2', b'"v":9'),
    (b'"intact":{', b'"intact":[{'),
    (b'"blob":"', b'"blob":"HEAD:../x'),
    (b'"line":', b'"line":-'),
    (b'"line":', b'"line":0'),
    (b'"gitclawCompress":{', b'"gitclawCompress":[{'),
    (b'"gitclawCompress":"3:', b'"gitclawCompress":"9:'),
    (b'"gitclawCompress":"3:', b'"gitclawCompress":"3:HEAD:../x:'),
    (b'"gitclawCompress":"3:', b'"gitclawCompress":["3:'),
    (b'"gitclawCompress":"3:', b'"gitclawCompress":"3:0:'),
    (b':ui"', b':UI"'),
]


def break_markers(repo: Path, path: Path, original: bytes, tally: Tally, label: str) -> None:
    compressed = path.read_bytes()
    for old, new in BROKEN_MARKERS:
        if old not in compressed:
            continue
        spot = compressed.rindex(old)  # in the last compressed line that has it
        path.write_bytes(compressed[:spot] + new + compressed[spot + len(old) :])
        attempt(repo, path, original, tally, f"{label}: marker {new!r}")
    path.write_bytes(compressed)


def loose_object(repo: Path, oid: str) -> Path:
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


def explode_packs(repo: Path) -> None:
    """Every object loose, so that a test can delete, swap or corrupt one."""
    git(repo, "-c", "pack.compression=0", "repack", "-q")  # nothing loose yet; unpack below
    packs = list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    moved = repo.parent / "packs"
    moved.mkdir(exist_ok=True)
    for pack in packs:
        data = pack.read_bytes()
        for suffix in (".pack", ".idx", ".rev"):
            sibling = pack.with_suffix(suffix)
            if sibling.exists():
                shutil.move(sibling, moved / sibling.name)
        subprocess.run(["git", "unpack-objects", "-q"], cwd=repo, input=data, check=True)


def damage_objects(repo: Path, path: Path, original: bytes, tally: Tally, label: str) -> None:
    """Delete one archived object (a payload or an intact blob that a v2 or v3 marker reads), or
    swap its content for another blob's."""
    explode_packs(repo)
    archived = git(repo, "ls-tree", "-r", REF, "--", "blobs", "intact").splitlines()
    oids = sorted(line.split()[2] for line in archived)
    assert oids
    first = oids[0]
    # Any other blob of the archive tree (another payload, or the empty record file).
    second = next(
        oid
        for oid in sorted(line.split()[2] for line in git(repo, "ls-tree", "-r", REF).splitlines())
        if oid != first
    )
    for what, change in (("deleted", "delete"), ("swapped", "swap")):
        saved = loose_object(repo, first).read_bytes()
        target = loose_object(repo, first)
        os.chmod(target, 0o644)
        if change == "delete":
            target.unlink()
        else:
            target.write_bytes(loose_object(repo, second).read_bytes())
        attempt(repo, path, original, tally, f"{label}: object {what}")
        target.write_bytes(saved)


def committed_compressed(repo: Path, relpath: str, original: bytes, version: int) -> Path:
    """The session compressed with v3 markers (the original committed first, so the archive
    references its blob), v2 markers (the same, as the release before v3 wrote them) or v1
    markers (never committed: payload blobs), then committed: HEAD holds the compressed file
    intact."""
    if version in (2, 3):
        path = commit_session(repo, relpath, original)
    else:
        git(repo, "commit", "-q", "--allow-empty", "-m", "before the session")
        path = repo / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(original)
    if version == 2:
        with writing_v2_markers():
            compress(repo, path)
    else:
        compress(repo, path)
    data = path.read_bytes()
    assert (v3_count(data) > 0) if version == 3 else (f'"v":{version},'.encode() in data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    return path


def run_suite(
    repo: Path, relpath: str, original: bytes, seeds: range, label: str, version: int = 3
) -> Tally:
    """Damage trials on a file compressed with v3 (or v2) markers (the original was
    committed first, so the archive references its blob) or v1 markers (never committed:
    payload blobs)."""
    tally = Tally()
    path = committed_compressed(repo, relpath, original, version)
    damage_lines(repo, path, original, seeds, tally, f"{label} (committed)")
    break_markers(repo, path, original, tally, f"{label} (committed)")
    # The same damage before the compressed file was ever committed: nothing to repair from.
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    git(repo, "reset", "-q")
    damage_lines(repo, path, original, seeds, tally, f"{label} (uncommitted)")
    break_markers(repo, path, original, tally, f"{label} (uncommitted)")
    damage_objects(repo, path, original, tally, label)
    return tally


def report(tally: Tally, label: str, both: bool = True) -> None:
    print(tally.line(label), file=sys.stderr)
    assert tally.outcomes["wrong"] == 0, tally.verify_missed
    assert not tally.verify_missed, tally.verify_missed
    assert tally.outcomes["restored"] and (tally.outcomes["refused"] or not both)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_damage_to_a_synthetic_session_is_refused_or_repaired(repo: Path, version: int) -> None:
    original = typical_session(turns=8).data()
    label = f"synthetic v{version}"
    tally = run_suite(repo, SESSION, original, range(60), label, version)
    report(tally, label)


OTHER_FORMATS = [(name, make) for name, make in FORMAT_ORIGINALS if name != "pi"]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("name", "make"), OTHER_FORMATS, ids=[n for n, _ in OTHER_FORMATS])
def test_damage_to_every_format_is_refused_or_repaired(
    repo: Path, name: str, make: Any, version: int
) -> None:
    """The same damage suite on the Claude Code, Codex and Copilot synthetic sessions."""
    label = f"{name} v{version}"
    tally = run_suite(repo, SESSION, make(), range(10), label, version)
    report(tally, label)


@needs_corpus
@pytest.mark.parametrize("name", ["gitopenclaw__b1f6c294.jsonl", "github-openclaw__issue-68.jsonl"])
def test_damage_to_corpus_sessions_is_refused_or_repaired(repo: Path, name: str) -> None:
    source = next((path for path in corpus_files() if path.name == name), None)
    if source is None:
        pytest.skip(f"{name} is not in the corpus")
    original = source.read_bytes()
    tally = run_suite(repo, f"{CORPUS_SESSIONS}/{name}", original, range(24), name)
    report(tally, name)


def test_two_runs_with_appends_between_and_an_older_version_checked_out(repo: Path) -> None:
    """Records of two runs: damage anywhere is still caught, and an older compressed version
    that is checked out again verifies and restores."""
    full = typical_session(turns=10).data()
    lines = full.split(b"\n")
    users = [i for i, line in enumerate(lines) if b'"role":"user"' in line]
    first = b"\n".join(lines[: users[6]]) + b"\n"
    path = commit_session(repo, SESSION, first)
    compress(repo, path)
    git(repo, "commit", "-qam", "run 1 compressed")
    with open(path, "ab") as handle:
        handle.write(full[len(first) :])
    git(repo, "commit", "-qam", "agent appended")
    compress(repo, path)
    git(repo, "commit", "-qam", "run 2 compressed")
    assert len(Repository(repo).file_records(REF, _key(path))) == 2

    tally = Tally()
    damage_lines(repo, path, full, range(30), tally, "two runs")
    report(tally, "two runs", both=False)  # committed: every damaged line is in HEAD

    git(repo, "checkout", "HEAD~2", "--", SESSION)  # run 1's file, as it was committed
    repository = Repository(repo)
    verified = verify_file(repository, path, REF)
    assert not verified.problems and verified.whole_file == "matched", verified.problems
    assert join_lines(restored_lines(repository, path, REF)) == first


def _key(path: Path) -> str:
    from gitclaw_compress.store.archive_layout import header_key

    return header_key(path.read_bytes().split(b"\n", 1)[0])


# --- Lines inserted, duplicated, moved or swapped, on every format -------------------------


def shuffled_lines(data: bytes, rng: random.Random) -> list[tuple[str, bytes, bytes]]:
    """Every way one line move can damage the file: a duplicated line, an inserted JSON line,
    a line moved elsewhere, two lines swapped (a bad merge or edit does these). With each,
    what a right restore appends to the original: a plain line copied after the last line
    is an appended line like any other (a copied compressed line must be refused)."""
    lines = data.split(b"\n")[:-1]
    marked = [i for i, line in enumerate(lines) if MARKER_BYTES in line and i > 0]
    plain = [i for i, line in enumerate(lines) if MARKER_BYTES not in line and i > 0]
    out = []
    for pool, kind in ((marked, "compressed"), (plain, "plain")):
        if not pool:
            continue
        i = rng.choice(pool)
        j = rng.choice([k for k in range(1, len(lines)) if k != i])
        dup = [*lines[: i + 1], lines[i], *lines[i + 1 :]]
        inserted = [*lines[:i], b'{"type":"note","text":"inserted"}', *lines[i:]]
        moved = lines[:i] + lines[i + 1 :]
        moved.insert(j, lines[i])
        swapped = list(lines)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        last = [*lines[:-1], lines[i], lines[-1]]  # a copy just before the last line
        at_end = [*lines, lines[i]]  # a copy after the last line
        for what, result in (
            ("duplicated", dup),
            ("inserted before", inserted),
            ("moved", moved),
            ("swapped", swapped),
            ("copied before the last line", last),
            ("copied after the last line", at_end),
        ):
            appended = lines[i] + b"\n" if result is at_end and kind == "plain" else b""
            label = f"{kind} line {i + 1} {what} (with {j + 1})"
            out.append((label, b"\n".join(result) + b"\n", appended))
    return out


def move_lines(
    repo: Path, path: Path, original: bytes, seeds: range, tally: Tally, label: str
) -> None:
    compressed = path.read_bytes()
    for seed in seeds:
        for what, damaged, appended in shuffled_lines(compressed, random.Random(seed)):
            path.write_bytes(damaged)
            where = f"{label} seed {seed}: {what}"
            attempt(repo, path, original + appended, tally, where, damaged=not appended)
    path.write_bytes(compressed)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("name", "make"), FORMAT_ORIGINALS, ids=[n for n, _ in FORMAT_ORIGINALS])
def test_moved_lines_never_restore_wrongly(repo: Path, name: str, make: Any, version: int) -> None:
    original = make()
    tally = Tally()
    path = committed_compressed(repo, SESSION, original, version)
    move_lines(repo, path, original, range(1), tally, f"{name} v{version} (committed)")
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    git(repo, "reset", "-q")
    move_lines(repo, path, original, range(1), tally, f"{name} v{version} (uncommitted)")
    report(tally, f"{name} v{version}, moved lines", both=False)


@pytest.mark.parametrize(("name", "make"), FORMAT_ORIGINALS, ids=[n for n, _ in FORMAT_ORIGINALS])
def test_a_duplicated_line_is_refused_by_every_restore_mode(
    repo: Path, name: str, make: Any
) -> None:
    """The reported case: `sed -i '5p'` on a committed compressed file."""
    original = make()
    path = commit_session(repo, SESSION, original)
    compress(repo, path)
    git(repo, "commit", "-qam", "compressed")
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*lines[:5], lines[4], *lines[5:]]))
    damaged = path.read_bytes()
    out = repo / "out.jsonl"
    for args in (["restore", SESSION, "-o", str(out)], ["restore", SESSION], ["restore", "--all"]):
        done = cli(*args, cwd=repo, check=False)
        if done.returncode == 0:  # rebuilt: only the original is right
            restored = out.read_bytes() if "-o" in args else path.read_bytes()
            assert restored == original, (args, done.stdout)
            path.write_bytes(damaged)
        else:
            assert done.stderr.decode().count("\n") == 1, done.stderr
            assert path.read_bytes() == damaged
    assert cli("verify", SESSION, cwd=repo, check=False).returncode == 1


# --- Lines that arrive already carrying a marker --------------------------------------------

OTHER = ".GITCLAW/state/sessions/other.jsonl"


@pytest.mark.parametrize(("name", "make"), FORMAT_ORIGINALS, ids=[n for n, _ in FORMAT_ORIGINALS])
def test_a_line_that_arrives_with_a_marker_is_refused(repo: Path, name: str, make: Any) -> None:
    """A session whose agent wrote a line that carries a well-formed marker (here one that
    another session of this repository holds, so its objects exist): compress refuses it in
    one line naming the file and line and changes nothing; restore and verify refuse too.
    A file compress wrote itself stays a no-op when it runs again."""
    original = make()
    other = commit_session(repo, OTHER, original)
    compress(repo, other)
    git(repo, "commit", "-qam", "other compressed")
    before = other.read_bytes()
    assert cli("compress", OTHER, "--keep-turns", "1", "--force", cwd=repo).returncode == 0
    assert other.read_bytes() == before  # a re-run on what compress wrote is a no-op
    marked = [line for line in before.split(b"\n") if MARKER_BYTES in line]
    lines = original.split(b"\n")
    lines[0] += b" "  # another session: another header, so no record of its own yet
    number = len(lines) // 2
    lines.insert(number, marked[0])
    path = repo / SESSION
    path.write_bytes(b"\n".join(lines))
    refused_everywhere(repo, number + 1)
    # With records of its own, a marker after them is refused even once committed raw.
    del lines[number]
    path.write_bytes(b"\n".join(lines))
    compress(repo, path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    with open(path, "ab") as handle:
        handle.write(marked[0] + b"\n")
    git(repo, "commit", "-qam", "the agent's line, committed without the hook")
    refused_everywhere(repo, len(path.read_bytes().split(b"\n")) - 1)


def refused_everywhere(repo: Path, number: int) -> None:
    path = repo / SESSION
    arrived = path.read_bytes()
    done = cli("compress", SESSION, "--keep-turns", "1", "--force", cwd=repo, check=False)
    error = done.stderr.decode()
    assert done.returncode != 0 and error.count("\n") == 1, error
    assert f"{SESSION}:{number}:" in error and "nothing was changed" in error, error
    assert path.read_bytes() == arrived
    restored = cli("restore", SESSION, "-o", "-", cwd=repo, check=False)
    assert restored.returncode != 0 and f"{SESSION}:{number}:" in restored.stderr.decode()
    assert cli("verify", SESSION, cwd=repo, check=False).returncode == 1


# --- Corrupt objects that compressed lines are read back from -------------------------------


def corrupt_objects(repo: Path, path: Path, original: bytes, tally: Tally, label: str) -> None:
    """Each archived object in turn (the first three), corrupt as `git fsck` sees it: a loose
    object whose content no longer hashes to its name (its last byte changed, so the lines a
    v2 or v3 marker reads may still be right), then one git cannot inflate."""
    explode_packs(repo)
    archived = git(repo, "ls-tree", "-r", REF, "--", "blobs", "intact").splitlines()
    for oid in sorted({line.split()[2] for line in archived})[:3]:
        target = loose_object(repo, oid)
        saved = target.read_bytes()
        content = zlib.decompress(saved)
        os.chmod(target, 0o644)
        for how, data in (
            ("rehashed", zlib.compress(content[:-1] + bytes([content[-1] ^ 1]))),
            ("uninflatable", saved[:-8] + bytes(8)),
        ):
            target.write_bytes(data)
            fsck = subprocess.run(["git", "fsck", "--full"], cwd=repo, capture_output=True)
            assert fsck.returncode != 0 and oid.encode() in fsck.stderr + fsck.stdout
            attempt(repo, path, original, tally, f"{label}: object {oid[:8]} {how}")
        target.write_bytes(saved)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(("name", "make"), FORMAT_ORIGINALS, ids=[n for n, _ in FORMAT_ORIGINALS])
def test_corrupt_objects_are_named_by_verify(
    repo: Path, name: str, make: Any, version: int
) -> None:
    original = make()
    path = committed_compressed(repo, SESSION, original, version)
    tally = Tally()
    corrupt_objects(repo, path, original, tally, f"{name} v{version}")
    print(tally.line(f"{name} v{version}, corrupt objects"), file=sys.stderr)
    assert tally.trials and tally.outcomes["wrong"] == 0, tally.verify_missed
    assert not tally.verify_missed, tally.verify_missed
