"""The stores pass scans each session at rest before compressing it, as `compress` does: a
session with a finding the baseline does not accept is held (byte for byte, nothing of it in
the store's archive), named with its finding ids and the commands to go on, and the pass
exits 1; the other sessions are compressed. After the user accepts or redacts, the next pass
compresses it. The agent hook's pass logs the held sessions, and `doctor --agents` says so
in its own words, apart from a real failure."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import synthetic_claude
from conftest import cli
from secret_fixtures import planted

OLD = 1_700_000_000  # an mtime long ago: at rest
PROJECT = ".claude/projects/-home-u-proj"
SECRET = f"{PROJECT}/0a0a0a0a-1111-4222-8333-444455556666.jsonl"
CLEAN = f"{PROJECT}/0b0b0b0b-1111-4222-8333-444455556666.jsonl"
CONFIG = {"session": {"sizeThresholdKB": 0, "turnThresholdBeforeCompress": 1}}


def _session(secret_line: str | None) -> bytes:
    """Two sessions of their own (ids and first line: the archive keys records by it)."""
    data = synthetic_claude.typical_session(4).data()
    own = "0a0a0a0a" if secret_line is not None else "0b0b0b0b"
    data = data.replace(synthetic_claude.SESSION_ID[:8].encode(), own.encode())
    data = data.replace(b"leaf-0001", f"leaf-{own}".encode())
    if secret_line is not None:  # in an old turn's tool output: what compress drops
        marker = b'"content":"'
        at = data.index(marker, data.index(b'"tool_result"'))
        escaped = orjson.dumps(secret_line)[1:-1]
        data = data[: at + len(marker)] + escaped + b"\\n" + data[at + len(marker) :]
    return data


def _put(home: Path, rel: str, data: bytes) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME with a Claude Code store of two sessions at rest, one of them holding a
    token in an old tool output."""
    home = Path(os.environ["HOME"])
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"):
        monkeypatch.delenv(name, raising=False)
    _put(home, SECRET, _session(planted(7)["github"][0]))
    _put(home, CLEAN, _session(None))
    config = home / ".config" / "gitclaw-compress" / "compression.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(orjson.dumps(CONFIG))
    return home


def _secret() -> bytes:
    return planted(7)["github"][1].encode()


def _archive(home: Path) -> Path:
    return home / ".local" / "share" / "gitclaw-compress" / "stores" / "claude"


def _archive_blobs(home: Path) -> bytes:
    """Every object of the store's archive, whole (loose or packed, reachable or not)."""
    done = subprocess.run(
        ["git", "--git-dir", str(_archive(home)), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    )
    return done.stdout


def _stores(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return cli("stores", "claude", *args, cwd=home.parent, check=False)


def _statuses(document: dict[str, Any]) -> dict[str, str]:
    (run,) = document["stores"]
    return {f["path"]: f["status"] for f in run["files"]}


def test_the_pass_holds_the_session_with_a_secret_and_compresses_the_other(home: Path) -> None:
    before = (home / SECRET).read_bytes()
    done = _stores(home, "--json")
    assert done.returncode == 1, done.stderr.decode()
    document = orjson.loads(done.stdout)
    store_rel = {SECRET: SECRET.split("/", 1)[1], CLEAN: CLEAN.split("/", 1)[1]}
    assert _statuses(document) == {store_rel[SECRET]: "held", store_rel[CLEAN]: "compressed"}
    (held,) = document["stores"][0]["held"]
    assert held["path"] == str(home / SECRET)  # by its full path: commands run from anywhere
    assert held["ids"] and all(len(finding_id) == 12 for finding_id in held["ids"])
    assert f"`gitclaw-compress redact {home / SECRET} --all`" in held["advice"]
    assert f"`gitclaw-compress scan {home / SECRET} --accept {held['ids'][0]}`" in held["advice"]
    assert (home / SECRET).read_bytes() == before
    assert len((home / CLEAN).read_bytes()) < len(_session(None))
    assert _secret() not in _archive_blobs(home)  # nothing of it was committed
    assert _secret() not in done.stdout + done.stderr

    words = _stores(home)  # again, for people: each held session on stderr, exit 1
    assert words.returncode == 1
    err = words.stderr.decode()
    assert f"claude: held {home / SECRET} (untouched): 1 secret(s) found" in err, err
    assert f"ids {held['ids'][0]}" in err
    assert "1 held for secrets (untouched)" in words.stdout.decode()
    assert _secret() not in words.stdout + words.stderr + _archive_blobs(home)


def test_a_dry_run_says_which_session_would_be_held(home: Path) -> None:
    done = _stores(home, "--dry-run")
    assert done.returncode == 1, done.stderr.decode()
    assert f"claude: would hold {home / SECRET} (untouched)" in done.stderr.decode()
    assert "1 would be held for secrets (untouched)" in done.stdout.decode()
    assert not _archive(home).exists()  # a dry run before the first run writes nothing
    assert (home / SECRET).read_bytes() == _session(planted(7)["github"][0])
    # The commands it names work before the first pass too (the archive is made for them).
    scanned = cli("scan", str(home / SECRET), "--no-archive", cwd=home.parent, check=False)
    assert scanned.returncode == 1, scanned.stderr
    assert b"github-pat" in scanned.stdout and _secret() not in scanned.stdout


def test_after_the_user_accepts_the_next_pass_compresses_it(home: Path) -> None:
    first = orjson.loads(_stores(home, "--json").stdout)
    (held,) = first["stores"][0]["held"]
    # `scan PATH --accept ID`, as the advice says, run from outside the store.
    accepted = cli("scan", str(home / SECRET), "--accept", held["ids"][0], cwd=home.parent)
    assert b"accepted 1 secret into " in accepted.stdout
    done = _stores(home, "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert _statuses(orjson.loads(done.stdout))[SECRET.split("/", 1)[1]] == "compressed"
    restored = cli("restore", str(home / SECRET), "-o", "-", cwd=home.parent).stdout
    assert restored == _session(planted(7)["github"][0])  # accepted: kept, restorable
    again = _stores(home)  # settled: the pass with nothing new holds nothing
    assert again.returncode == 0, again.stderr.decode()


def test_after_the_user_redacts_the_next_pass_compresses_it(home: Path) -> None:
    _stores(home)
    redacted = cli("redact", str(home / SECRET), "--all", cwd=home.parent)
    assert b"redacted 1 secret" in redacted.stdout, redacted.stderr
    assert _secret() not in (home / SECRET).read_bytes()
    done = _stores(home, "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert _statuses(orjson.loads(done.stdout))[SECRET.split("/", 1)[1]] == "compressed"
    assert _secret() not in _archive_blobs(home)
    scanned = cli("scan", str(home / SECRET), cwd=home.parent, check=False)
    assert scanned.returncode == 0, scanned.stdout + scanned.stderr


def test_the_hook_pass_logs_the_held_session_and_doctor_says_what_to_run(home: Path) -> None:
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "hook", "--pass", "claude"],
        cwd=home.parent,
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1
    log = home / ".local" / "share" / "gitclaw-compress" / "agent-hooks" / "hooks.log"
    text = log.read_text()
    ids = orjson.loads(_stores(home, "--json").stdout)["stores"][0]["held"][0]["ids"]
    assert f" claude: pass held {home / SECRET} for secrets (ids {', '.join(ids)})" in text, text
    assert " claude: pass ended: exit 1 " in text
    assert planted(7)["github"][1] not in text
    cli("install", "--agents", "claude", cwd=home.parent)
    doctor = cli("doctor", "--agents", cwd=home.parent, check=False)
    out = doctor.stdout.decode()
    assert doctor.returncode == 1  # held sessions wait for the user: something to do
    assert (
        f"problem: the last pass held 1 session for secrets: run "
        f"`gitclaw-compress scan {home / SECRET}`" in out
    ), out
    assert "ended with exit" not in out
    report = orjson.loads(cli("doctor", "--agents", "--json", cwd=home.parent, check=False).stdout)
    (claude,) = [state for state in report["agent_hooks"] if state["agent"] == "claude"]
    assert claude["held"] == [str(home / SECRET)]


def test_compress_in_a_repository_leaves_no_object_of_a_held_session(tmp_path: Path) -> None:
    """There the scan runs beside the compression, which has sent the held session's payloads
    to fast-import by the time the verdict comes: the run's pack is thrown away, so no
    object with the secret is left in .git (not even an unreachable one)."""
    from flow_helpers import SESSIONS, init, tool, write
    from synthetic import typical_session

    repo = init(tmp_path / "repo")
    write(repo / "compression.json", orjson.dumps({"session": CONFIG["session"]}))
    line, secret = planted(3)["github"]
    data = typical_session(turns=6).data()
    at = data.index(b'"text":"', data.index(b'"role":"toolResult"')) + len(b'"text":"')
    data = data[:at] + orjson.dumps(line)[1:-1] + b"\\n" + data[at:]  # an old tool output
    write(repo / SESSIONS / "held.jsonl", data)
    write(repo / SESSIONS / "clean.jsonl", typical_session(turns=6).data())
    done = tool(repo, "compress", "--all", "--json")
    assert done.returncode == 1, done.stderr.decode()
    statuses = {f["path"]: f["status"] for f in orjson.loads(done.stdout)["files"]}
    assert statuses == {f"{SESSIONS}/held.jsonl": "held", f"{SESSIONS}/clean.jsonl": "compressed"}
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True
    ).stdout
    assert b"gitclawCompress" in (repo / SESSIONS / "clean.jsonl").read_bytes()
    assert secret.encode() not in objects
    assert not list((repo / ".git" / "objects" / "pack").glob("tmp_pack_*"))


def test_a_session_unchanged_since_it_was_all_clean_costs_a_stat_and_two_short_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-op check of a pass over many sessions: a record with a trusted stat and no
    settled line answers from its first rows and its last, without reading its digests."""
    from gitclaw_compress.secrets import cleanlines
    from gitclaw_compress.secrets.cleanlines import CleanLines, FileStat, Sniff, known_clean_file

    monkeypatch.setattr(cleanlines, "clock", lambda: time.time_ns() + 5 * 10**9)  # not racy
    git_dir, session = tmp_path / "git", tmp_path / "s.jsonl"
    session.write_bytes(b'{"type":"session"}\n')
    with open(session, "rb") as handle:
        stat = FileStat.of(handle)
    sniff = Sniff("pi", 1, True, "0" * 64)
    clean = [f"{number:032x}" for number in range(1000)]
    CleanLines().save(git_dir, tmp_path, "s.jsonl", sniff, clean, stat)
    assert CleanLines.stat_alone(git_dir, "s.jsonl") == stat

    def no_load(*args: object) -> CleanLines:
        raise AssertionError("the whole record was read")

    with monkeypatch.context() as patched:
        patched.setattr(CleanLines, "load", no_load)
        assert known_clean_file(git_dir, tmp_path, "s.jsonl", session)
    # A settled line: the baseline decides, so the whole record is read.
    settled = {"f" * 32: frozenset({"a" * 64, "b" * 64, "c" * 64, "d" * 64})}
    CleanLines().save(git_dir, tmp_path, "s.jsonl", sniff, clean, stat, settled)
    assert CleanLines.stat_alone(git_dir, "s.jsonl") is None
    assert not known_clean_file(git_dir, tmp_path, "s.jsonl", session, frozenset())
    accepted = frozenset(next(iter(settled.values())))
    assert known_clean_file(git_dir, tmp_path, "s.jsonl", session, accepted)
