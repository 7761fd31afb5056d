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
