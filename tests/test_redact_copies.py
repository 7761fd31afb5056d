"""`redact` of one session leaves every other session as it was, even one that shares its
header line (agents fork sessions; Entire keeps a `full.jsonl` copy in each checkpoint):
copies of one session share the archive's list of file records, and redact used to drop
that whole list, so the others then showed as damaged in `verify` and `restore`."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import cli
from flow_helpers import SESSIONS, git, init, tool, write
from secret_fixtures import planted
from synthetic import SessionBuilder, big_text, text, thinking, tool_call

SECRET_LINE, SECRET = planted(11)["github"]
CONFIG = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1},"scan":{"block":false}}'

AT_REST = 1_700_000_000  # an mtime long ago: a store's pass takes only sessions at rest
# (user text, tool output) per turn
Turns = list[tuple[str, str]]


def _pi(turns: Turns) -> bytes:
    session = SessionBuilder()
    for number, (ask, output) in enumerate(turns):
        session.user(ask)
        session.assistant(thinking(f"t{number}"), tool_call(f"c{number}", "bash", {"n": number}))
        session.tool_result(f"c{number}", "bash", output)
        session.assistant(text(f"done {number}"))
    return session.data()


def _claude(turns: Turns) -> bytes:
    from synthetic_claude import ClaudeSession

    session = ClaudeSession()
    for number, (ask, output) in enumerate(turns):
        session.user(ask)
        call = f"toolu_{number:020d}"
        session.tool_use(call, "Bash", {"command": f"cat f{number}"})
        session.tool_result(call, output, {"stdout": output, "stderr": "", "interrupted": False})
        session.assistant({"type": "text", "text": f"done {number}"})
    return session.data()


def _codex(turns: Turns) -> bytes:
    from synthetic_codex import RolloutBuilder

    rollout = RolloutBuilder()
    for number, (ask, output) in enumerate(turns):
        turn_id = rollout.start_turn(ask)
        rollout.shell(turn_id, f"cat f{number}", output)
        rollout.reply(turn_id, f"done {number}")
    return rollout.data()


def _copilot(turns: Turns) -> bytes:
    from synthetic_copilot import EventsBuilder

    events = EventsBuilder()
    events.start()
    for number, (ask, output) in enumerate(turns):
        events.user(ask)
        result = {"content": output, "detailedContent": output}
        events.turn([("bash", {"command": f"cat f{number}"}, result)], f"done {number}")
    return events.data()


CLAUDE = ".claude/projects/-repo/00000000-0000-4000-8000-00000000000{}.jsonl"
CODEX = ".codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-{}.jsonl"
COPILOT = ".copilot/session-state/00000000-0000-4000-8000-00000000000{}/events.jsonl"
# name -> (builder, the path of each of three sessions of that format)
FORMATS: dict[str, tuple[Callable[[Turns], bytes], str]] = {
    "pi": (_pi, SESSIONS + "/{}.jsonl"),
    "claude": (_claude, CLAUDE),
    "codex": (_codex, CODEX),
    "copilot": (_copilot, COPILOT),
}


def _sessions(build: Callable[[Turns], bytes]) -> tuple[bytes, bytes]:
    """Two sessions with the same first lines that part later: the first holds a secret in
    an old turn's tool output (archived by compress) and in its last turn (kept)."""
    shared = [("start", big_text("shared", 40))]
    secret = [
        ("read the env", big_text("env", 40) + f"\n{SECRET_LINE}\n"),
        ("go on", big_text("a-later", 40)),
        (f"last: {SECRET_LINE}", "ok"),
    ]
    other = [
        ("something else", big_text("b", 40)),
        ("more", big_text("b-later", 40)),
        ("end", "ok"),
    ]
    return build(shared + secret), build(shared + other)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("name", list(FORMATS))
def test_redact_leaves_sessions_that_share_its_header_intact(tmp_path: Path, name: str) -> None:
    build, where = FORMATS[name]
    a_rel, b_rel, c_rel = (where.format(n) for n in "123")
    with_secret, other = _sessions(build)
    assert with_secret.split(b"\n", 1)[0] == other.split(b"\n", 1)[0]
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    originals = {a_rel: with_secret, b_rel: other, c_rel: other}  # c: a byte copy of b
    for rel, data in originals.items():
        write(repo / rel, data)
    for rel in originals:
        done = tool(repo, "compress", rel)
        assert done.returncode == 0, done.stderr.decode()
        assert (repo / rel).read_bytes() != originals[rel], rel  # something was compressed
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions")
    done = tool(repo, "redact", a_rel, "--all")
    assert done.returncode == 0, done.stderr.decode()
    leaked = SECRET.encode() in (repo / a_rel).read_bytes()
    assert not leaked
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")  # what the others need stays reachable
    for rel in (b_rel, c_rel):
        checked = tool(repo, "verify", "--no-fetch", rel)
        assert checked.returncode == 0, (rel, checked.stdout.decode(), checked.stderr.decode())
        assert b"damaged" not in checked.stdout + checked.stderr
        out = tmp_path / "restored"
        restored = tool(repo, "restore", rel, "-o", str(out))
        assert restored.returncode == 0, (rel, restored.stderr.decode())
        assert _digest(out.read_bytes()) == _digest(originals[rel]), rel
        assert b"redact" not in restored.stderr, rel
    checked = tool(repo, "verify", "--no-fetch", a_rel)
    assert checked.returncode == 0, checked.stderr.decode()
    restored = tool(repo, "restore", a_rel, "-o", "-")
    assert restored.returncode == 0, restored.stderr.decode()
    assert b"redacted by `gitclaw-compress redact`" in restored.stderr
    marker = re.search(rb"\[REDACTED:[a-z0-9-]+\]", restored.stderr)
    assert marker is not None, restored.stderr
    # the original, byte for byte, with the secret's marker in its place
    expected = with_secret.replace(SECRET.encode(), marker.group())
    assert _digest(restored.stdout) == _digest(expected)


def test_redact_in_an_agent_store_leaves_sessions_that_share_its_header_intact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same in Claude Code's own store, whose archive lives outside it and which has no
    commits: a file with no record there counts as damaged, so dropping the shared records
    left both others unrestorable."""
    home = Path(os.environ["HOME"])
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    with_secret, other = _sessions(_claude)
    project = home / ".claude" / "projects" / "-home-u-proj"
    originals = {
        project / f"0a0a0a0a-1111-4222-8333-44445555666{n}.jsonl": data
        for n, data in zip("123", (with_secret, other, other), strict=True)
    }
    for path, data in originals.items():
        write(path, data)
        os.utime(path, (AT_REST, AT_REST))
    config = home / ".config" / "gitclaw-compress" / "compression.json"
    write(config, CONFIG)
    cli("stores", "claude", cwd=home.parent)
    secret_path, *others = originals
    for path in originals:
        assert path.read_bytes() != originals[path], path  # compressed
    done = cli("redact", str(secret_path), "--all", cwd=home.parent)
    assert b"redacted 1 secret" in done.stdout, done.stderr.decode()
    archive = home / ".local" / "share" / "gitclaw-compress" / "stores" / "claude"
    subprocess.run(["git", "--git-dir", str(archive), "gc", "-q", "--prune=now"], check=True)
    for path in others:
        checked = cli("verify", str(path), cwd=home.parent, check=False)
        assert checked.returncode == 0, (path, checked.stdout.decode(), checked.stderr.decode())
        restored = cli("restore", str(path), "-o", "-", cwd=home.parent, check=False)
        assert restored.returncode == 0, restored.stderr.decode()
        assert _digest(restored.stdout) == _digest(originals[path]), path
        assert b"redact" not in restored.stderr
    restored = cli("restore", str(secret_path), "-o", "-", cwd=home.parent)
    assert b"redacted by `gitclaw-compress redact`" in restored.stderr
    leaked = SECRET.encode() in restored.stdout
    assert not leaked and b"[REDACTED:" in restored.stdout


def test_a_redacted_session_damaged_since_is_never_repaired_from_its_version_with_the_secret(
    tmp_path: Path,
) -> None:
    """The records of the version that held the secret stay on the archive (a copy or a
    fork may still be that version), but never count for the redacted file: damaged after
    `redact`, it is not repaired from its committed version, which holds the secret."""
    with_secret, _ = _sessions(_pi)
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    rel = f"{SESSIONS}/a.jsonl"
    path = write(repo / rel, with_secret)
    assert tool(repo, "compress", rel).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions")
    assert tool(repo, "redact", rel, "--all").returncode == 0
    lines = path.read_bytes().split(b"\n")
    at = next(n for n, line in enumerate(lines) if b"gitclawCompress" in line)
    lines[at] = lines[at].replace(b'"role":"', b'"role":"x', 1)  # a compressed line altered
    path.write_bytes(b"\n".join(lines))
    checked = tool(repo, "verify", "--no-fetch", rel)
    assert checked.returncode != 0, checked.stdout.decode()
    restored = tool(repo, "restore", rel, "-o", "-")
    leaked = SECRET.encode() in restored.stdout + restored.stderr + checked.stdout
    assert not leaked  # (a bool: a failure prints no secret)
    assert restored.returncode != 0, restored.stderr.decode()


def test_restore_all_says_which_session_was_redacted_and_restores_its_fork(tmp_path: Path) -> None:
    """`restore --all` takes each session by its own records: the fork that shares the
    redacted session's header comes back byte for byte, and only the redacted one is said
    to hold `[REDACTED:…]` markers, as `restore PATH` says."""
    with_secret, other = _sessions(_pi)
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    a_rel, b_rel = f"{SESSIONS}/a.jsonl", f"{SESSIONS}/b.jsonl"
    write(repo / a_rel, with_secret)
    write(repo / b_rel, other)
    assert tool(repo, "compress", SESSIONS).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions")
    assert tool(repo, "redact", a_rel, "--all").returncode == 0
    done = tool(repo, "restore", "--all")
    assert done.returncode == 0, done.stderr.decode()
    assert _digest((repo / b_rel).read_bytes()) == _digest(other)
    notes = [line for line in done.stderr.decode().splitlines() if "redacted by" in line]
    assert len(notes) == 1 and a_rel in notes[0], done.stderr.decode()
    leaked = SECRET.encode() in (repo / a_rel).read_bytes()
    assert not leaked and b"[REDACTED:" in (repo / a_rel).read_bytes()


def test_redact_with_nothing_to_redact_says_so_and_changes_nothing(tmp_path: Path) -> None:
    """A session with no secret: `redact --all` says there is nothing to redact (it said
    "redacted 0 secrets in 0 lines and 0 archive objects"), exit 0, nothing changed."""
    build, where = FORMATS["pi"]
    rel = where.format(1)
    _, clean = _sessions(build)
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    write(repo / rel, clean)
    assert tool(repo, "compress", rel).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "session")
    before = ((repo / rel).read_bytes(), git(repo, "for-each-ref"))
    done = tool(repo, "redact", rel, "--all")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == (
        f"{rel}: nothing to redact: no secret found in the session or its archive objects; "
        "nothing was changed\n"
    )
    assert ((repo / rel).read_bytes(), git(repo, "for-each-ref")) == before
