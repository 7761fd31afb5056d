"""The pre-push hook scans the session lines of the commits a push sends that the remote
lacks: a secret there stops the push, naming the commit, the file and the way out; an
accepted one goes; a commit the remote has is not read again."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flow_helpers import SESSIONS, git, make_origin, path_with, shim_bin, tool, write
from secret_fixtures import planted
from synthetic import typical_session

CONFIG = b'{"session":{"sizeThresholdKB":1000000}}'  # nothing to compress: the scan alone


def _push(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = path_with(shim_bin(tmp_path / "bin"))
    return subprocess.run(
        ["git", "push", "origin", "HEAD:refs/heads/main"], cwd=repo, capture_output=True, env=env
    )


def test_a_push_whose_new_commit_holds_a_secret_is_refused_naming_commit_and_file(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    repo = origin.work
    write(repo / "compression.json", CONFIG)
    clean = f"{SESSIONS}/issue-1.jsonl"
    write(repo / clean, typical_session(turns=3).data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "clean session")
    assert tool(repo, "install").returncode == 0
    assert _push(repo, tmp_path).returncode == 0
    line, secret = planted(5)["github"]
    data = typical_session(turns=3).data()
    rel = f"{SESSIONS}/issue-2.jsonl"
    write(repo / rel, data.replace(b'"text":"', f'"text":"{line} '.encode(), 1))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run, scan off")
    commit = git(repo, "rev-parse", "HEAD").strip()
    refused = _push(repo, tmp_path)
    printed = refused.stdout + refused.stderr
    assert refused.returncode != 0, printed.decode()
    assert f"commit {commit[:12]} {rel}".encode() in printed
    assert b"git filter-repo" in printed and b"gitclaw-compress scan --accept" in printed
    assert secret.encode() not in printed
    assert git(repo, "ls-remote", origin.url, "refs/heads/main").split()[0] != commit
    assert tool(repo, "scan", rel, "--accept-all").returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "accept the finding")
    done = _push(repo, tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "ls-remote", origin.url, "refs/heads/main").split()[0] == head


def test_only_the_commits_the_remote_lacks_are_read(tmp_path: Path) -> None:
    from gitclaw_compress.secrets.pushed import Pushed, new_commits
    from gitclaw_compress.store.archive import Repository

    origin = make_origin(tmp_path)
    repo = origin.work
    write(repo / "a.txt", b"a")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    write(repo / "b.txt", b"b")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    tip = git(repo, "rev-parse", "HEAD").strip()
    assert new_commits(Repository(repo), "origin", [Pushed(tip, "0" * 40)]) == [tip]
