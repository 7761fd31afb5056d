"""A line that arrives already carrying a marker (a fork or a copy of a compressed session,
a line pasted from another file) is refused by compress before anything is written, in one
line that names the file and the line, and restore never turns it into another line's
original with exit 0: for every format and every marker version (v1 payloads, v2 and v3
intact versions)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from flow_helpers import commit_all, init, one_line_error, tool, v2_marker, write
from synthetic import typical_session
from synthetic_claude import typical_session as claude_session
from synthetic_codex import typical_rollout
from synthetic_copilot import typical_events

from gitclaw_compress.core.marker import read_marker

SESSIONS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "pi": ("sessions/pi.jsonl", lambda: typical_session().data()),
    "claude": ("sessions/claude.jsonl", lambda: claude_session().data()),
    "codex": ("sessions/rollout.jsonl", lambda: typical_rollout().data()),
    "copilot": ("sessions/events.jsonl", lambda: typical_events().data()),
}
THRESHOLD_ZERO = b'{"session": {"sizeThresholdKB": 0}}'
V3 = re.compile(rb',"gitclawCompress":"3:[^"]*"\}$')


def as_v2(line: bytes) -> bytes:
    """The same compressed line with the v2 marker the release before v3 wrote."""
    marker = read_marker(line, "test")
    assert marker is not None and marker.intact is not None and marker.lines is not None
    v2 = v2_marker(*marker.intact, bytes.fromhex(marker.sha256), marker.size, marker.lines)
    return V3.sub(lambda _: b',"gitclawCompress":' + orjson.dumps(v2) + b"}", line)


def compressed_copy(tmp_path: Path, kind: str, version: str) -> tuple[Path, Path, bytes]:
    """A repository where a compressed line of the session was copied into its original at
    line 4 and committed, as a fork or a copy of a compressed session would be."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", THRESHOLD_ZERO)
    rel, make = SESSIONS[kind]
    original = make()
    session = write(repo / rel, original)
    if version != "v1":  # committed first: compress writes markers naming that version
        commit_all(repo, "session")
    done = tool(repo, "compress", "--keep-turns", "1", rel)
    assert done.returncode == 0, done.stderr
    commit_all(repo, "compressed")
    marked = [line for line in session.read_bytes().split(b"\n") if b'"gitclawCompress"' in line]
    copied = marked[-1]  # a line far from line 4
    if version == "v2":
        copied = as_v2(copied)
    assert (b'"gitclawCompress":"3:' in copied) == (version == "v3")
    lines = original.split(b"\n")
    forked = b"\n".join([*lines[:3], copied, *lines[3:]])
    session.write_bytes(forked)
    commit_all(repo, "a copy of a compressed line")
    return repo, session, forked


def refused_and_never_restored_wrong(
    repo: Path, other: Path, other_rel: str, number: int, forked: bytes
) -> str:
    """`compress` refuses `other` at line `number`, changing nothing, and `restore` never
    gives other bytes than `forked` with exit 0; compress's one-line error."""
    done = tool(repo, "compress", "--keep-turns", "1", other_rel)
    assert done.returncode == 3, done.stdout
    error = one_line_error(done)
    assert error.startswith(f"gitclaw-compress: error: {other_rel}:{number}: the line carries")
    assert other.read_bytes() == forked
    out = repo.parent / "out.jsonl"
    restored = tool(repo, "restore", "-o", str(out), other_rel)
    if restored.returncode == 0:  # never wrong bytes with exit 0
        assert out.read_bytes() == forked
    else:
        assert f"{other_rel}:{number}:" in one_line_error(restored) and not out.exists()
    return error


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
@pytest.mark.parametrize("kind", sorted(SESSIONS))
def test_a_line_that_arrives_with_a_marker_is_refused(
    tmp_path: Path, kind: str, version: str
) -> None:
    repo, session, forked = compressed_copy(tmp_path, kind, version)
    rel = SESSIONS[kind][0]
    done = tool(repo, "compress", "--keep-turns", "1", rel)
    assert done.returncode == 3, done.stdout
    assert one_line_error(done).startswith(f"gitclaw-compress: error: {rel}:4: the line carries")
    assert "nothing was changed" in one_line_error(done)
    assert session.read_bytes() == forked  # nothing written
    out = tmp_path / "out.jsonl"
    restored = tool(repo, "restore", "-o", str(out), rel)
    if restored.returncode == 0:  # never wrong bytes with exit 0
        assert out.read_bytes() == forked
    else:
        assert f"{rel}:4:" in one_line_error(restored) and not out.exists()


def another_session(original: bytes) -> bytes:
    """The same lines under another header (another session's id): a session of its own,
    with no record in the archive."""
    header, rest = original.split(b"\n", 1)
    entry = orjson.loads(header)
    entry["gitclawTest"] = "another session"  # any change of line 1 is another session
    return orjson.dumps(entry) + b"\n" + rest


@pytest.mark.parametrize("kind", sorted(SESSIONS))
def test_a_v1_line_copied_into_a_session_with_no_record_is_refused(
    tmp_path: Path, kind: str
) -> None:
    """A line with a v1 marker copied from a compressed session into another session that
    the archive has no record of, on a line HEAD holds: compress refuses it, and restore
    never gives the copied line's original with exit 0 (it did, in every format: a v1
    marker names no line, and HEAD holding the line was taken as compress having written
    it there)."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", THRESHOLD_ZERO)
    rel, make = SESSIONS[kind]
    original = make()
    session = write(repo / rel, original)
    assert tool(repo, "compress", "--keep-turns", "1", rel).returncode == 0  # v1 markers
    commit_all(repo, "compressed")
    marked = [
        line for line in session.read_bytes().split(b"\n") if b'"gitclawCompress":{"v":1' in line
    ]
    other_rel = rel.replace(".jsonl", "-other.jsonl")
    lines = another_session(original).split(b"\n")
    forked = b"\n".join([*lines[:3], marked[-1], *lines[3:]])
    other = write(repo / other_rel, forked)
    commit_all(repo, "a copy of a compressed line in another session")
    error = refused_and_never_restored_wrong(repo, other, other_rel, 4, forked)
    assert "archived for another session" in error and "nothing was changed" in error
    out = tmp_path / "out.jsonl"
    assert tool(repo, "restore", "-o", str(out), rel).returncode == 0  # the source is fine


def test_a_fork_that_archives_the_same_payloads_keeps_its_own_lines(tmp_path: Path) -> None:
    """The other side of the check above: a fork of a session (its lines under another
    header) compressed after it archives payloads the first run archived already; its own
    run records it, so its v1 lines are its own, and it restores byte for byte."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", THRESHOLD_ZERO)
    rel, make = SESSIONS["pi"]
    original = make()
    write(repo / rel, original)
    assert tool(repo, "compress", "--keep-turns", "1", rel).returncode == 0
    fork_rel = rel.replace(".jsonl", "-fork.jsonl")
    fork = another_session(original)
    write(repo / fork_rel, fork)
    assert tool(repo, "compress", "--keep-turns", "1", fork_rel).returncode == 0
    commit_all(repo, "both compressed")
    assert tool(repo, "compress", "--keep-turns", "1", fork_rel).returncode == 0
    out = tmp_path / "out.jsonl"
    assert tool(repo, "restore", "-o", str(out), fork_rel).returncode == 0
    assert out.read_bytes() == fork
    assert b"ok:" in tool(repo, "verify", fork_rel).stdout


@pytest.mark.parametrize("version", ["v2", "v3"])
@pytest.mark.parametrize("kind", sorted(SESSIONS))
def test_an_intact_marker_copied_to_its_own_line_number_in_another_session_is_refused(
    tmp_path: Path, kind: str, version: str
) -> None:
    """A v2 or v3 marker names line N of a version of its session; copied to line N of
    another session (a fork that takes the compressed line in place of its own), its line
    number fits, so only the version it names tells: that is another session's."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", THRESHOLD_ZERO)
    rel, make = SESSIONS[kind]
    original = make()
    session = write(repo / rel, original)
    commit_all(repo, "session")
    assert tool(repo, "compress", "--keep-turns", "1", rel).returncode == 0
    commit_all(repo, "compressed")
    compressed = session.read_bytes().split(b"\n")
    number = max(i for i, line in enumerate(compressed, 1) if b'"gitclawCompress":"3:' in line)
    copied = compressed[number - 1] if version == "v3" else as_v2(compressed[number - 1])
    other_rel = rel.replace(".jsonl", "-other.jsonl")
    lines = another_session(original).split(b"\n")
    lines[number - 1] = copied
    forked = b"\n".join(lines)
    other = write(repo / other_rel, forked)
    commit_all(repo, "another session with a compressed line in place of its own")
    refused_and_never_restored_wrong(repo, other, other_rel, number, forked)
