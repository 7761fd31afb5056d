"""End to end on real session histories, the way GitClaw runs: an agent run appends to the
committed (compressed) session, `gitclaw-compress compress` with no path, commit, push with
the archive ref; at the end fresh clones restore the last version byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flow_helpers import (
    HISTORY,
    commit_all,
    git,
    make_origin,
    marker_count,
    needs_history,
    ok,
    same_mtime,
    write,
)

NAMES = ("github-openclaw__issue-68", "gmi-youtube__6dcf7a0f")


def history(name: str) -> tuple[str, list[bytes]]:
    """The session's path in its repository, and every committed version, oldest first."""
    folder = HISTORY / name
    rows = [line.split("\t") for line in (folder / "commits.tsv").read_text().splitlines()]
    versions = [(folder / f"{row[0]}.jsonl").read_bytes() for row in rows]
    return rows[0][2], versions


@needs_history
@pytest.mark.parametrize("name", NAMES)
def test_agent_runs_compress_commit_push_and_clones_restore(tmp_path: Path, name: str) -> None:
    rel, versions = history(name)
    other_name = next(n for n in NAMES if n != name)
    # The unrelated session sits in the same folder; for issue-68 its last entry is newer.
    other_rel = f"{rel.rsplit('/', 1)[0]}/unrelated.jsonl"
    other_bytes = history(other_name)[1][-1]
    origin = make_origin(tmp_path)
    other = write(origin.work / other_rel, other_bytes)
    commit_all(origin.work, "an unrelated session")
    origin.push("main")
    session = origin.work / rel
    compressed_runs = 0
    previous = b""
    for number, version in enumerate(versions, start=1):
        assert version.startswith(previous)  # pi only appends
        session.parent.mkdir(parents=True, exist_ok=True)
        with open(session, "ab") as handle:  # the agent's run
            handle.write(version[len(previous) :])
        previous = version
        same_mtime(session, other)
        out = ok(origin.work, "compress", "--keep-turns", "1", "--json")
        document = json.loads(out.stdout)
        assert [entry["path"] for entry in document["files"]] == [rel], number
        assert document["selected"]["reason"] == "changed"
        compressed_runs += document["files"][0]["status"] == "compressed"
        assert other.read_bytes() == other_bytes  # never touched
        restored = ok(origin.work, "restore", rel, "-o", "-", "--no-fetch").stdout
        assert restored == version, number
        commit_all(origin.work, f"agent run {number}")
        origin.push("main", "refs/gitclaw/*:refs/gitclaw/*")
    assert compressed_runs >= 3
    final = session.read_bytes()
    assert marker_count(final) > 0 and len(final) < len(versions[-1])
    assert git(origin.work, "show", f"HEAD:{other_rel}", check=True).encode() == other_bytes

    shallow = origin.clone(tmp_path / "depth-1", "--depth", "1")
    assert (shallow / rel).read_bytes() == final
    ok(shallow, "restore", rel, "-o", "restored.jsonl")
    assert (shallow / "restored.jsonl").read_bytes() == versions[-1]
    ok(shallow, "verify")

    branch = origin.clone(tmp_path / "branch", "--single-branch", "--branch", "main")
    assert git(branch, "for-each-ref", "refs/gitclaw") == ""
    ok(branch, "restore", rel)
    assert (branch / rel).read_bytes() == versions[-1]
    assert (branch / other_rel).read_bytes() == other_bytes
