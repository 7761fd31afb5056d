"""pi's own checks on real sessions (skipped without the corpus). The size target and the
restore after gc of every format's corpus are in test_cli_contract.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import CORPUS, CORPUS_SESSIONS, cli, corpus_files, git, needs_corpus

pytestmark = needs_corpus

SESSIONS = CORPUS_SESSIONS


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_invariants_header_window_line_count_and_idempotence(corpus_repo: Path) -> None:
    for source in corpus_files():
        path = f"{SESSIONS}/{source.name}"
        cli("compress", "--force", "--keep-turns", "2", path, cwd=corpus_repo)
        before = source.read_bytes().split(b"\n")
        after = (corpus_repo / path).read_bytes().split(b"\n")
        assert len(before) == len(after) and before[0] == after[0]
        users = [i for i, line in enumerate(before) if b'"role":"user"' in line]
        if len(users) > 2:
            assert before[users[-2] :] == after[users[-2] :]
        first = (corpus_repo / path).read_bytes()
        cli("compress", "--force", "--keep-turns", "2", path, cwd=corpus_repo)
        assert (corpus_repo / path).read_bytes() == first


@pytest.mark.parametrize(
    "history",
    sorted(p.name for p in (CORPUS / "pi-history").iterdir() if p.is_dir())
    if (CORPUS / "pi-history").is_dir()
    else [],
)
def test_history_replay_restores_every_version(repo: Path, history: str) -> None:
    """Each agent run appends to the committed, compressed file, then compress and commit."""
    versions = sorted((CORPUS / "pi-history" / history).glob("v*.jsonl"))
    path = repo / SESSIONS / f"{history}.jsonl"
    path.parent.mkdir(parents=True)
    previous = b""
    for version in versions:
        data = version.read_bytes()
        assert data.startswith(previous)
        with open(path, "ab") as handle:
            handle.write(data[len(previous) :])
        previous = data
        cli("compress", "--force", "--keep-turns", "1", str(path), cwd=repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"agent run {version.stem}")
        restored = cli("restore", str(path), "-o", "-", cwd=repo).stdout
        assert sha(restored) == sha(data), version.name
    git(repo, "gc", "-q", "--prune=now")
    assert sha(cli("restore", str(path), "-o", "-", cwd=repo).stdout) == sha(previous)
