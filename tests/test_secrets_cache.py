"""The record of clean lines: a run scans only the lines that are new since the last scan, a
line holding a finding is scanned on every run, a changed line or another scan key counts as
new, and a session with nothing new starts no scan and loads no engine."""

from __future__ import annotations

import os
import subprocess
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from flow_helpers import SESSIONS, commit_all, git, init, ok, tool, write
from secret_fixtures import planted, recall_kinds
from secret_recall import BUILDERS
from synthetic import SessionBuilder, big_text, text, tool_call

from gitclaw_compress.config import load_config
from gitclaw_compress.formats import detect_file
from gitclaw_compress.secrets import cleanlines
from gitclaw_compress.secrets.check import ScanResult, SecretsFound, scan_sessions
from gitclaw_compress.secrets.cleanlines import (
    CLEAN_LINES,
    OLD_CLEAN_FILES,
    CleanLines,
    cache_file,
    known_clean,
    read_session,
)
from gitclaw_compress.secrets.engine import SKIP_RULES, scan_key
from gitclaw_compress.secrets.findings import Finding
from gitclaw_compress.secrets.parallel import ParallelGuard
from gitclaw_compress.secrets.scan import scan_file, skip_rules_digest
from gitclaw_compress.store.archive import Repository

SECRETS = planted(11)
REL = f"{SESSIONS}/a.jsonl"


def clean_session(turns: int = 3, output_lines: int = 20) -> SessionBuilder:
    session = SessionBuilder()
    for turn in range(turns):
        session.user(f"task {turn}")
        arguments = {"command": f"ls src{turn}"}
        session.assistant(tool_call(f"c{turn}", "bash", arguments))
        session.tool_result(f"c{turn}", "bash", big_text(f"out{turn}", output_lines))
        session.assistant(text(f"done {turn}"))
    return session


def repository(tmp_path: Path, data: bytes) -> tuple[Repository, Path]:
    root = init(tmp_path / "repo")
    return Repository(root), write(root / REL, data)


def scanned(repo: Repository, path: Path) -> ScanResult:
    result = ScanResult()
    scan_sessions(repo, [path], result)
    return result


def new_lines(repo: Repository, path: Path) -> list[int]:
    record = CleanLines.load(repo.git_dir, REL)
    with read_session(path, REL, record) as session:
        return [line.number for line in session.new()]


def test_the_skip_rules_in_the_scan_key_are_those_of_the_formats() -> None:
    # A changed secret_free_keys or secret_sealed_keys must change the key (then update
    # engine.SKIP_RULES): lines recorded clean under other rules are not trusted.
    assert skip_rules_digest() == SKIP_RULES


def test_an_appended_secret_is_found_and_only_new_lines_are_scanned(tmp_path: Path) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    assert scanned(repo, path).findings == []
    count = len(session.data().splitlines())
    assert new_lines(repo, path) == [] and known_clean(repo, [path])

    line, secret = SECRETS["github"]
    session.user(f"use this: {line}")
    session.assistant(text("ok"))
    path.write_bytes(session.data())
    assert new_lines(repo, path) == [count + 1, count + 2]
    assert not known_clean(repo, [path])
    found = scanned(repo, path).findings
    assert [(f.line, f.rule) for f in found] == [(count + 1, "github-pat")]
    assert secret.encode() not in cache_file(repo.git_dir, REL).read_bytes()
    # The line with the finding is not recorded: every run scans it again and reports it.
    assert new_lines(repo, path) == [count + 1]
    assert [f.line for f in scanned(repo, path).findings] == [count + 1]
    assert not known_clean(repo, [path])


def test_a_changed_earlier_line_is_scanned_again(tmp_path: Path) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    scanned(repo, path)
    lines = session.data().split(b"\n")
    line, _ = SECRETS["stripe"]
    number = next(i for i, data in enumerate(lines) if b"task 1" in data)
    lines[number] = lines[number].replace(b"task 1", f"task 1 {line}".encode())
    path.write_bytes(b"\n".join(lines))
    assert not known_clean(repo, [path])
    assert new_lines(repo, path) == [number + 1]
    assert [f.line for f in scanned(repo, path).findings] == [number + 1]


def test_a_record_under_another_scan_key_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    scanned(repo, path)
    assert known_clean(repo, [path])
    key = scan_key()
    other = key.replace("confidence", "conf")
    monkeypatch.setattr("gitclaw_compress.secrets.cleanlines.scan_key", lambda: other)
    assert not known_clean(repo, [path])
    assert len(new_lines(repo, path)) == len(session.data().splitlines())


def soon(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Stats taken from now on are taken at `path`'s last change, within the racy second,
    however long the run takes to get there on a loaded machine."""
    changed = os.stat(path)
    at = max(changed.st_mtime_ns, changed.st_ctime_ns)
    monkeypatch.setattr(cleanlines, "clock", lambda: at)


def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stats taken from now on are taken two seconds after the file's last change, as when
    a session is scanned a while after the agent wrote it (no sleep needed)."""
    monkeypatch.setattr(cleanlines, "clock", lambda: time.time_ns() + 2 * 10**9)


def unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, reading a session's lines for the record fails the test."""

    def refuse(handle: object) -> Iterator[object]:
        raise AssertionError("the session file was read")

    monkeypatch.setattr(cleanlines, "iter_lines", refuse)


def test_a_file_unchanged_since_its_clean_scan_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    later(monkeypatch)
    assert scanned(repo, path).findings == []
    stat = CleanLines.load(repo.git_dir, REL).stat
    assert stat is not None and stat.trusted and stat.matches(os.stat(path))
    with monkeypatch.context() as patched:
        unread(patched)
        assert known_clean(repo, [path])  # by its stat alone
        session.assistant(text("one more line"))
        with open(path, "ab") as handle:  # as an agent appends: the same inode, grown
            handle.write(session.data().splitlines(keepends=True)[-1])
        assert not known_clean(repo, [path])  # grown: the scan reads it, once
    assert new_lines(repo, path) == [len(session.data().splitlines())]
    path.write_bytes(session.data()[:-10])  # shorter: read to tell
    assert not known_clean(repo, [path])


def test_a_recorded_stat_that_no_longer_matches_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    with monkeypatch.context() as patched:
        later(patched)
        scanned(repo, path)
    assert CleanLines.load(repo.git_dir, REL).stat is not None
    copy = path.with_name("copy.jsonl")  # the same lines in a new file, as a checkout writes
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)
    soon(monkeypatch, path)
    assert known_clean(repo, [path])  # another inode: read, every line clean
    assert CleanLines.load(repo.git_dir, REL).stat is None  # just written: racy, not kept
    later(monkeypatch)
    assert known_clean(repo, [path])
    stat = CleanLines.load(repo.git_dir, REL).stat
    assert stat is not None and stat.matches(os.stat(path))


def test_a_same_size_rewrite_within_the_second_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rewrite keeps size, inode and (set back with os.utime) mtime: only the racy rule
    # keeps the stat from vouching for it. The scan's stat is taken within a second of the
    # last change (mtime set an hour back: the ctime is now), so no stat is recorded.
    line, _ = SECRETS["stripe"]
    escaped = orjson.dumps(line)[1:-1]
    session = clean_session()
    session.user("task " + "x" * len(escaped))
    data = session.data()
    repo, path = repository(tmp_path, data)
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(hour_ago, hour_ago))
    soon(monkeypatch, path)
    assert scanned(repo, path).findings == []
    assert CleanLines.load(repo.git_dir, REL).stat is None  # racy: not trusted
    before = os.stat(path)
    assert data.count(b"x" * len(escaped)) == 1
    with open(path, "r+b") as handle:  # in place: the same inode
        handle.write(data.replace(b"x" * len(escaped), escaped))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert not known_clean(repo, [path])
    assert [f.rule for f in scanned(repo, path).findings] == ["stripe-access-token"]


def test_a_stat_is_recorded_only_for_a_file_with_no_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = clean_session()
    line, _ = SECRETS["github"]
    session.user(f"use this: {line}")
    repo, path = repository(tmp_path, session.data())
    later(monkeypatch)
    assert len(scanned(repo, path).findings) == 1
    assert CleanLines.load(repo.git_dir, REL).stat is None
    assert not known_clean(repo, [path])


def test_a_file_read_and_found_clean_gets_its_stat_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scanned right after it was written (as `step` scans the lines it wrote): no stat. A
    # later check reads it, finds every line clean and records the stat for the next one.
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    soon(monkeypatch, path)
    scanned(repo, path)
    assert CleanLines.load(repo.git_dir, REL).stat is None
    assert known_clean(repo, [path])  # read: every line recorded
    assert CleanLines.load(repo.git_dir, REL).stat is None  # still within the second
    later(monkeypatch)
    assert known_clean(repo, [path])
    assert CleanLines.load(repo.git_dir, REL).stat is not None
    unread(monkeypatch)
    assert known_clean(repo, [path])


def test_a_record_for_other_first_lines_is_not_trusted(tmp_path: Path) -> None:
    # The same lines in another order may read as another format: every line is new then.
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    scanned(repo, path)
    lines = session.data().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], *reversed(lines[1:])]))
    assert not known_clean(repo, [path])


def test_a_clean_session_starts_no_scan(tmp_path: Path) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    config = load_config(None, repo.root, None)
    guard = ParallelGuard(repo, config, enabled=True)
    guard.start([path])
    assert guard.started  # never scanned: the scan runs
    guard.wait([])
    guard.cancel()
    guard.start([path])
    assert not guard.started  # every line scanned clean before: nothing starts


# A stand-in for the engine that fails on import: a scan that loads it fails the run.
BROKEN_ENGINE = "raise ImportError('the engine was loaded')\n"
THRESHOLD = b'{"session": {"sizeThresholdKB": 0}}'


def test_a_step_loads_the_engine_only_for_new_lines(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", THRESHOLD)
    session = clean_session(output_lines=400)
    path = write(repo / REL, session.data())
    commit_all(repo)
    compressed = ok(repo, "step", "--keep-turns", "1")  # records the lines it wrote too
    assert b"compressed" in compressed.stdout, compressed.stdout
    commit_all(repo, "compressed")
    shim = write(tmp_path / "shim" / "kingfisher_sdk" / "__init__.py", BROKEN_ENGINE.encode())
    env = {**os.environ, "PYTHONPATH": str(shim.parent.parent)}

    quiet = tool(repo, "step", "--keep-turns", "1", env=env)
    assert quiet.returncode == 0, quiet.stderr  # nothing new: no engine loaded

    session.user("one more task")
    session.assistant(text("done"))
    with open(path, "ab") as handle:
        handle.write(b"".join(session.data().splitlines(keepends=True)[-2:]))
    appended = tool(repo, "step", "--keep-turns", "1", env=env)
    assert appended.returncode != 0 and b"secret scanner" in appended.stderr


def test_a_finding_in_the_lines_a_run_wrote_is_reported(tmp_path: Path) -> None:
    # The lines compress rewrote are scanned after the write; a secret there (a stub could
    # cut a value where a rule then matches) stops the run, though the file was written.
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    guard = ParallelGuard(repo, load_config(None, repo.root, None), enabled=True)
    guard.start([path])
    guard.wait([])
    line, _ = SECRETS["slack"]
    session.user(line)
    path.write_bytes(session.data())
    with pytest.raises(SecretsFound, match=r"in the lines this run wrote .*do not commit"):
        guard.record([path], [])


def test_the_scan_streams_a_session_instead_of_holding_its_lines(tmp_path: Path) -> None:
    # 120 outputs of about 90 KB: the scan may hold a line and a batch of values, never the
    # file (a first scan held every new line: the whole file, for a session never scanned).
    session = clean_session(turns=120, output_lines=2000)
    data = session.data()
    assert len(data) > 10_000_000
    repo, path = repository(tmp_path, data)
    tracemalloc.start()
    try:
        result = scanned(repo, path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.findings == [] and result.files == 1
    assert peak < len(data) // 2, f"the scan held {peak:,} bytes of a {len(data):,}-byte file"


def records(repo: Repository) -> set[str]:
    return {path.name for path in (repo.git_dir / "gitclaw-compress" / CLEAN_LINES).iterdir()}


def test_a_scan_that_records_drops_the_records_of_sessions_that_are_gone(tmp_path: Path) -> None:
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    gone = write(repo.root / SESSIONS / "gone.jsonl", session.data())
    odd = write(repo.root / SESSIONS / "tab\tnew\nline é.jsonl", session.data())
    scan_sessions(repo, [path, gone, odd], ScanResult())
    kept = cache_file(repo.git_dir, REL).name
    odd_record = cache_file(repo.git_dir, repo.relative(odd)).name
    assert known_clean(repo, [odd])  # a path that needs escaping keeps its record
    folder = repo.git_dir / "gitclaw-compress"
    older_layout = write(folder / CLEAN_LINES / ("0" * 32), f"{scan_key()}\nlines\n".encode())
    old_files = write(folder / OLD_CLEAN_FILES, b"0" * 64 + b"\n")
    ended = subprocess.Popen(["true"])
    ended.wait()
    left_behind = write(folder / CLEAN_LINES / f"{kept}.{ended.pid}.tmp", b"partial")
    running = write(folder / CLEAN_LINES / f"{odd_record}.{os.getpid()}.tmp", b"partial")
    gone.unlink()

    # Nothing new: nothing is saved, nothing pruned (a no-op `step` does no more than before).
    scan_sessions(repo, [path], ScanResult())
    assert cache_file(repo.git_dir, f"{SESSIONS}/gone.jsonl").exists() and old_files.exists()

    session.user("one more task")
    path.write_bytes(session.data())
    scan_sessions(repo, [path], ScanResult())
    assert records(repo) == {kept, odd_record, running.name}
    assert not older_layout.exists() and not old_files.exists() and not left_behind.exists()
    assert known_clean(repo, [path, odd])


def test_the_records_of_another_work_tree_are_kept(tmp_path: Path) -> None:
    # The work trees of a repository share its records: a session that only the other work
    # tree holds is not gone.
    session = clean_session()
    repo, path = repository(tmp_path, session.data())
    commit_all(repo.root)
    other_root = tmp_path / "other"
    git(repo.root, "worktree", "add", "-q", str(other_root))
    other = Repository(other_root)
    only_there = write(other_root / SESSIONS / "b.jsonl", session.data())
    scan_sessions(other, [only_there], ScanResult())
    session.user("one more task")
    path.write_bytes(session.data())
    scan_sessions(repo, [path], ScanResult())  # saves, so prunes
    assert known_clean(other, [only_there]) and known_clean(repo, [path])


@pytest.mark.parametrize("fmt", sorted(BUILDERS))
def test_a_repeated_line_is_scanned_once_and_keeps_its_findings(tmp_path: Path, fmt: str) -> None:
    # A line's findings depend on its bytes alone: a line the file repeats is scanned once,
    # and each repeat gets that line's findings, on its own number, as a scan of every line
    # finds them.
    first, _, body = BUILDERS[fmt]().partition(b"\n")
    data = first + b"\n" + body * 3
    repo, path = repository(tmp_path, data)
    distinct = len(set(data.splitlines()))
    assert new_lines(repo, path) == list(range(1, distinct + 1))
    every_line = scan_file(path, REL, detect_file(path, REL))
    found = scanned(repo, path).findings
    assert len(found) == len(every_line) > 3 * len(recall_kinds())

    def rows(findings: list[Finding]) -> list[tuple[object, ...]]:
        return [(f.line, f.entry, f.path, f.rule, f.hash, f.sealed) for f in findings]

    assert rows(found) == rows(every_line)


def test_lines_that_differ_only_in_their_marker_are_scanned_once(tmp_path: Path) -> None:
    # The scan does not read the marker a rewritten line ends with (its line number differs
    # from copy to copy): the copies are scanned once and each keeps the findings.
    first, _, body = BUILDERS["claude"]().partition(b"\n")
    lines = body.splitlines()
    copies = [
        line[:-1] + b',"gitclawCompress":"3:' + f"{copy}:{number}".encode() + b'"}'
        for copy in range(3)
        for number, line in enumerate(lines)
    ]
    data = b"\n".join([first, *copies]) + b"\n"
    repo, path = repository(tmp_path, data)
    assert new_lines(repo, path) == list(range(1, len(set(lines)) + 2))
    every_line = scan_file(path, REL, detect_file(path, REL))
    found = scanned(repo, path).findings
    assert len(found) == len(every_line) > 3 * len(recall_kinds())
    assert [(f.line, f.entry, f.path, f.hash) for f in found] == [
        (f.line, f.entry, f.path, f.hash) for f in every_line
    ]
