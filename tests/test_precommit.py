"""The hooks of .pre-commit-hooks.yaml, run by the real pre-commit from a clone of this
project, in a temporary repository: commit a big session, see it compressed, restore it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from flow_helpers import (
    PROJECT,
    SESSIONS,
    commit_all,
    git,
    init,
    marker_count,
    needs_pre_commit,
    ok,
    pre_commit_exe,
    session_bytes,
    write,
)

pytestmark = needs_pre_commit

BIG = f"{SESSIONS}/issue-1.jsonl"
OTHER = f"{SESSIONS}/issue-2.jsonl"


def project(
    tmp_path: Path,
    hook_source: tuple[Path, str],
    pre_commit_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    hook_id: str,
) -> Path:
    monkeypatch.setenv("PRE_COMMIT_HOME", str(pre_commit_home))
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    repo = init(tmp_path / "agent-repo")
    source, rev = hook_source
    config = {"repos": [{"repo": str(source), "rev": rev, "hooks": [{"id": hook_id}]}]}
    write(repo / ".pre-commit-config.yaml", yaml.safe_dump(config).encode())
    # Small sessions of the test: compress from 1 KiB and keep one turn.
    write(
        repo / "compression.json",
        b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}',
    )
    subprocess.run([pre_commit_exe(), "install"], cwd=repo, check=True, capture_output=True)
    commit_all(repo, "pre-commit config")
    return repo


def commit(repo: Path, message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-m", message], cwd=repo, capture_output=True, text=True, check=False
    )


def test_manifest_declares_the_hooks() -> None:
    hooks = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    by_id = {hook["id"]: hook for hook in hooks}
    assert set(by_id) == {
        "gitclaw-compress",
        "gitclaw-compress-stage",
        "gitclaw-compress-push-archive",
    }
    for hook in hooks:
        assert hook["language"] == "python"
        assert hook["require_serial"] is True
    for hook_id in ("gitclaw-compress", "gitclaw-compress-stage"):
        assert by_id[hook_id]["entry"].startswith("gitclaw-compress compress")
    assert "--stage" in by_id["gitclaw-compress-stage"]["entry"]
    assert "--stage" not in by_id["gitclaw-compress"]["entry"]
    push = by_id["gitclaw-compress-push-archive"]
    assert push["entry"] == "gitclaw-compress pre-push" and push["stages"] == ["pre-push"]
    assert push["pass_filenames"] is False and push["always_run"] is True


def test_hook_modifies_the_session_and_the_commit_goes_through_after_add(
    tmp_path: Path,
    hook_source: tuple[Path, str],
    pre_commit_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = project(tmp_path, hook_source, pre_commit_home, monkeypatch, "gitclaw-compress")
    other = write(repo / OTHER, session_bytes(4, session_id="other"))
    git(repo, "add", OTHER)
    git(repo, "commit", "-q", "--no-verify", "-m", "an older session, committed as it was")
    with open(other, "ab") as handle:  # an unstaged change the hook must not touch
        handle.write(b'{"unstaged":true}\n')
    other_dirty = other.read_bytes()
    big = write(repo / BIG, session_bytes(5))
    original = big.read_bytes()
    git(repo, "add", BIG)
    head = git(repo, "rev-parse", "HEAD")

    first = commit(repo, "agent run")
    assert first.returncode == 1
    output = first.stdout + first.stderr  # git shows the hook's output on stderr
    assert "files were modified by this hook" in output, output
    assert "compressed .GITCLAW/state/sessions/issue-1.jsonl" in output
    assert git(repo, "rev-parse", "HEAD") == head  # nothing was committed
    assert marker_count(big.read_bytes()) > 0
    assert git(repo, "show", f":{BIG}").encode() == original  # pre-commit never stages
    # The other session was not staged: not passed to the hook, not compressed, and its
    # unstaged change is back as it was.
    assert "issue-2" not in output
    assert other.read_bytes() == other_dirty and marker_count(other_dirty) == 0

    git(repo, "add", BIG)
    second = commit(repo, "agent run")
    assert second.returncode == 0, second.stdout + second.stderr
    committed = subprocess.run(
        ["git", "show", f"HEAD:{BIG}"], cwd=repo, capture_output=True, check=True
    ).stdout
    assert committed == big.read_bytes() and marker_count(committed) > 0
    ok(repo, "verify", BIG)
    ok(repo, "restore", BIG, "-o", "restored.jsonl")
    assert (repo / "restored.jsonl").read_bytes() == original


def test_stage_hook_compresses_and_commits_in_one_go(
    tmp_path: Path,
    hook_source: tuple[Path, str],
    pre_commit_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = project(tmp_path, hook_source, pre_commit_home, monkeypatch, "gitclaw-compress-stage")
    big = write(repo / BIG, session_bytes(5))
    original = big.read_bytes()
    git(repo, "add", "-A")
    done = commit(repo, "agent run")
    assert done.returncode == 0, done.stdout + done.stderr
    committed = subprocess.run(
        ["git", "show", f"HEAD:{BIG}"], cwd=repo, capture_output=True, check=True
    ).stdout
    assert marker_count(committed) > 0 and committed == big.read_bytes()
    assert git(repo, "status", "--porcelain") == ""
    # A fresh clone of the result, with the archive ref: byte for byte.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), clone.name)
    git(clone, "fetch", "-q", "origin", "refs/gitclaw/*:refs/gitclaw/*")
    ok(clone, "restore", BIG)
    assert (clone / BIG).read_bytes() == original
    assert os.environ["PRE_COMMIT_HOME"] == str(pre_commit_home)
