"""The pre-push hook scans the session lines of the commits a push sends that the remote
lacks: a secret there stops the push, naming the commit, the file and the way out; an
accepted one goes; a commit the remote has is not read again."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flow_helpers import SESSIONS, git, make_origin, path_with, shim_bin, tool, write
from secret_fixtures import planted
from synthetic import SessionBuilder, big_text, text, tool_call, typical_session

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


def test_archive_objects_scanned_clean_under_other_rules_are_scanned_again(
    tmp_path: Path,
) -> None:
    """The record of archive objects scanned clean holds only under the same scan key: one
    written by an older version (no key line) does not let a secret through."""
    from gitclaw_compress.config import load_config
    from gitclaw_compress.secrets.check import ScanResult, archive_objects, scan_archive
    from gitclaw_compress.store.archive import Repository

    origin = make_origin(tmp_path)
    repo = origin.work
    lenient = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1},'
    write(repo / "compression.json", lenient + b'"scan":{"block":false}}')
    line, _ = planted(8)["stripe"]
    session = SessionBuilder()
    for turn in range(4):  # the secret in the first turn's tool output, which is archived
        session.user(f"task {turn}")
        session.assistant(tool_call(f"c{turn}", "bash", {"command": "cat .env"}))
        output = big_text(f"out{turn}", 60) + (f"\n{line}\n" if turn == 0 else "")
        session.tool_result(f"c{turn}", "bash", output)
        session.assistant(text("done"))
    rel = f"{SESSIONS}/issue-3.jsonl"
    write(repo / rel, session.data())
    assert tool(repo, "compress", rel).returncode == 0
    repository = Repository(repo)
    ref = load_config(None, repo, None)["archive.ref"]
    oids = [oid for oid, _ in archive_objects(repository, ref)]
    assert oids
    record = repo / ".git" / "gitclaw-compress" / "secrets-clean"
    record.write_text("".join(f"{oid}\n" for oid in oids))  # an older version's record
    result = ScanResult()
    scan_archive(repository, ref, result)
    assert result.findings
