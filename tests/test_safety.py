"""Interrupted runs leave the old file or the new one, never a broken one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli, commit_session
from synthetic import typical_session

from gitclaw_compress.config import defaults
from gitclaw_compress.ops.compress import Compression
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.fileio import TEMP_PREFIX, AtomicFile

SESSION = ".GITCLAW/state/sessions/s.jsonl"


@pytest.fixture
def session(repo: Path) -> Path:
    return commit_session(repo, SESSION, typical_session(turns=4).data())


def test_an_interrupt_before_the_rename_leaves_the_original_and_no_temp_file(
    repo: Path, session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = session.read_bytes()

    def interrupted(self: AtomicFile, *args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(AtomicFile, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt), Compression(Repository(repo)) as run:
        run.add(session, defaults(), keep_turns=1, force=True)
        run.finish()
    assert session.read_bytes() == original
    assert not list(session.parent.glob(TEMP_PREFIX + "*"))
    # The archive commit landed first; running again finishes the job from scratch.
    monkeypatch.undo()
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    assert cli("restore", SESSION, "-o", "-", cwd=repo).stdout == original


def test_a_temp_file_left_by_a_killed_run_is_removed_by_the_next_run(
    repo: Path, session: Path
) -> None:
    stale = session.parent / f"{TEMP_PREFIX}{session.name}.abc123"
    stale.write_bytes(b"half written")
    other = session.parent / f"{TEMP_PREFIX}other.jsonl.abc123"
    other.write_bytes(b"another file's run")
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    assert not stale.exists()
    assert other.exists(), "temp files of other sessions belong to other runs"
