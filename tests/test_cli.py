"""The CLI against real git on pi sessions: archive, gc, restore, verify, errors that touch
nothing. The flow every format keeps (the no-op rerun among it) is in test_cli_contract.py."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from conftest import cli, commit_session, git
from synthetic import typical_session

from gitclaw_compress import __version__
from gitclaw_compress.store.archive import Repository

SESSION = ".GITCLAW/state/sessions/2026-02-20T11-44-20-711Z_0b1f6c29.jsonl"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def session(repo: Path) -> Path:
    return commit_session(repo, SESSION, typical_session(turns=6).data())


def test_compress_restore_byte_identical_after_gc(repo: Path, session: Path) -> None:
    original = session.read_bytes()
    out = cli("compress", "--force", "--keep-turns", "2", SESSION, cwd=repo)
    assert b"compressed" in out.stdout
    assert len(session.read_bytes()) < len(original) * 0.6
    git(repo, "gc", "-q", "--prune=now")
    cli("restore", SESSION, "-o", "restored.jsonl", cwd=repo)
    assert (repo / "restored.jsonl").read_bytes() == original
    cli("restore", SESSION, cwd=repo)
    assert session.read_bytes() == original


def test_archive_is_reachable_pushable_and_records_the_intact_version(
    repo: Path, session: Path, tmp_path: Path
) -> None:
    head_blob = git(repo, "rev-parse", f"HEAD:{SESSION}").strip()
    cli("compress", "--force", SESSION, cwd=repo)
    markers = [
        (number, json.loads(line)["gitclawCompress"])
        for number, line in enumerate(session.read_text().splitlines(), start=1)
        if '"gitclawCompress"' in line
    ]
    assert markers and all(
        isinstance(marker, str) and marker.startswith(f"3:{head_blob}:{number}:")
        for number, marker in markers
    )
    assert Repository(repo).archive_oids("refs/gitclaw/archive") == {head_blob}
    # A plain push of refs/gitclaw/* carries everything restore needs.
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    git(repo, "push", "-q", str(origin), "main", "refs/gitclaw/*:refs/gitclaw/*")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/gitclaw/*:refs/gitclaw/*")
    git(clone, "gc", "-q", "--prune=now")
    cli("restore", SESSION, "-o", "out.jsonl", cwd=clone)
    assert (clone / "out.jsonl").read_bytes() == typical_session(turns=6).data()


def test_dry_run_and_check_write_nothing(repo: Path, session: Path) -> None:
    before = sha(session)
    out = cli("compress", "--force", "--dry-run", "--json", SESSION, cwd=repo)
    [report] = json.loads(out.stdout)["files"]
    assert report["status"] == "would-compress" and report["bytes_after"] < report["bytes_before"]
    checked = cli("compress", "--force", "--check", SESSION, cwd=repo, check=False)
    assert checked.returncode == 1
    assert sha(session) == before
    assert git(repo, "for-each-ref", "refs/gitclaw") == ""


def test_size_threshold_and_disabled_config(repo: Path, session: Path) -> None:
    before = sha(session)
    (repo / "compression.json").write_text('{"session": {"sizeThresholdKB": 1000}}')
    out = cli("compress", SESSION, cwd=repo)
    assert b"smaller than session.sizeThresholdKB" in out.stdout
    (repo / "compression.json").write_text('{"session": {"enabled": false}}')
    out = cli("compress", "--force", SESSION, cwd=repo)
    assert b"session.enabled is false" in out.stdout
    assert sha(session) == before


def test_agent_folder_config_wins_over_the_repository_root(repo: Path, session: Path) -> None:
    (repo / "compression.json").write_text('{"session": {"enabled": false}}')
    (repo / ".GITCLAW" / "compression.json").write_text('{"session": {"sizeThresholdKB": 1}}')
    out = cli("compress", SESSION, cwd=repo)
    assert b"compressed" in out.stdout


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"session": {"sizeTresholdKB": 1}}', "unknown key 'session.sizeTresholdKB'"),
        ('{"session": {"stripThinking": "yes"}}', "session.stripThinking must be true or false"),
        ('{"session": {"toolCallMaxBytes": true}}', "session.toolCallMaxBytes must be an integer"),
        ('{"session": {"keepBackup": false}}', "session.keepBackup=false is not supported"),
        ('{"sesion": {}}', "unknown section 'sesion'"),
        ("{oops", "not valid JSON"),
    ],
)
def test_bad_config_is_a_one_line_error_naming_the_key(
    repo: Path, session: Path, document: str, message: str
) -> None:
    before = sha(session)
    (repo / "compression.json").write_text(document)
    out = cli("compress", "--force", SESSION, cwd=repo, check=False)
    assert out.returncode == 3
    err = out.stderr.decode()
    assert message in err and "compression.json" in err and err.count("\n") == 1
    assert sha(session) == before


def test_outside_git_is_a_one_line_error_and_the_file_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(typical_session().data())
    before = sha(path)
    out = cli("compress", "--force", str(path), cwd=tmp_path, check=False)
    assert out.returncode == 3
    assert b"not inside a git repository" in out.stderr and out.stderr.count(b"\n") == 1
    assert sha(path) == before


def test_broken_header_is_refused(repo: Path) -> None:
    path = repo / "s.jsonl"
    path.write_bytes(b'{"type":"message"}\n' + typical_session().data())
    out = cli("compress", "--force", "s.jsonl", cwd=repo, check=False)
    assert out.returncode == 3 and b"s.jsonl:1: not a pi session header" in out.stderr


def test_a_locked_file_is_an_error_and_untouched(repo: Path, session: Path) -> None:
    before = sha(session)
    with Repository(repo).lock(SESSION, SESSION):
        out = cli("compress", "--force", SESSION, cwd=repo, check=False)
    assert out.returncode == 3 and b"locked by another gitclaw-compress run" in out.stderr
    assert sha(session) == before


def test_verify_counts_each_object_once(repo: Path, session: Path) -> None:
    """Lines compressed after the session was committed all read back from that one version
    (compress said "0 new archive objects"): verify names 1 object, not one per line."""
    out = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    lines = int(out.split(" lines compressed")[0].rsplit(" ", 1)[1])
    assert lines > 1 and "0 new archive objects" in out, out
    said = cli("verify", SESSION, cwd=repo).stdout.decode()
    counted = f"{lines} compressed lines, read back from 1 archive object"
    assert said == f"ok: {SESSION} ({counted})\n", said
    report = json.loads(cli("verify", "--json", SESSION, cwd=repo).stdout)["files"][0]
    assert (report["compressed_lines"], report["objects"]) == (lines, 1)


def test_verify_finds_tampering_and_unreachable_objects(repo: Path, session: Path) -> None:
    cli("compress", "--force", SESSION, cwd=repo)
    assert cli("verify", SESSION, cwd=repo).returncode == 0
    good = session.read_bytes()
    session.write_bytes(good.replace(b'"stopReason":"toolUse"', b'"stopReason":"toolUsX"', 1))
    out = cli("verify", SESSION, cwd=repo, check=False)
    assert out.returncode == 1 and b"a compressed line was altered" in out.stdout
    session.write_bytes(good)
    git(repo, "update-ref", "-d", "refs/gitclaw/archive")
    out = cli("verify", "--json", SESSION, cwd=repo, check=False)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert not report["ok"] and "not reachable from refs/gitclaw/archive" in str(report)


def test_show_prints_what_a_stub_names(repo: Path, session: Path) -> None:
    cli("compress", "--force", SESSION, cwd=repo)
    stub_line = next(
        json.loads(line)
        for line in session.read_text().splitlines()
        if '"role":"toolResult"' in line and '"gitclawCompress"' in line
    )
    stub = stub_line["message"]["content"][0]["text"]
    command = next(part for part in stub.split("Full output: ")[1:]).split("\n")[0]
    argv = command.split()
    assert argv[:2] == ["gitclaw-compress", "show"]
    shown = cli(*argv[1:], cwd=repo).stdout.decode()
    assert "file0 line 199: lorem ipsum" in shown
    raw = cli(*argv[1:], "--raw", cwd=repo).stdout
    assert raw.rstrip(b"\n") in typical_session(turns=6).data().split(b"\n")


def test_stats_reports_bytes_by_kind(repo: Path, session: Path) -> None:
    data = json.loads(cli("stats", "--json", "--keep-turns", "1", SESSION, cwd=repo).stdout)
    kinds = data["kinds"]
    assert data["bytes_after"] < data["bytes_before"]
    assert kinds["toolResult text"]["after"] < kinds["toolResult text"]["before"]
    assert kinds["user text"]["after"] == kinds["user text"]["before"]
    assert data["turns"] == 6 and data["kept_turns"] == 1
    human = cli("stats", SESSION, cwd=repo).stdout.decode()
    assert "toolResult text" in human and "total" in human


def test_version() -> None:
    out = cli("--version", cwd=Path.cwd())
    assert __version__ in out.stdout.decode()


@pytest.mark.parametrize("version", [1, 3])  # 3: committed first, the marker names its blob
def test_sha256_repositories_archive_and_restore(tmp_path: Path, version: int) -> None:
    root = tmp_path / "repo256"
    root.mkdir()
    git(root, "init", "-q", "--object-format=sha256")
    path = root / SESSION
    path.parent.mkdir(parents=True)
    original = typical_session(turns=3).data()
    path.write_bytes(original)
    if version == 3:
        git(root, "add", "-A")
        git(root, "commit", "-qm", "agent run")
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=root)
    assert path.read_bytes() != original
    marked = b'"gitclawCompress":"3:' if version == 3 else b'"gitclawCompress":{"v":1,'
    assert marked in path.read_bytes()
    if version == 3:  # the marker names a blob of the repository's object format
        assert re.search(rb'"gitclawCompress":"3:[0-9a-f]{64}:', path.read_bytes())
    git(root, "gc", "-q", "--prune=now")
    assert cli("verify", SESSION, cwd=root).returncode == 0
    assert cli("restore", SESSION, "-o", "-", cwd=root).stdout == original


def test_malformed_lines_are_named_in_a_warning_and_pass_through(repo: Path) -> None:
    lines = typical_session(turns=3).data().split(b"\n")
    lines.insert(4, b"{not json")
    path = repo / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    out = cli("compress", "--force", "--keep-turns", "1", "s.jsonl", cwd=repo)
    assert b"s.jsonl: 1 line(s) that are not JSON objects passed through untouched (line 5)" in (
        out.stderr
    )
    assert path.read_bytes().split(b"\n")[4] == b"{not json"
