"""A folder as PATH stands for the session files under it, recognized by content (every
format, any name, any depth): compress, verify, stats and restore take it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
from conftest import git
from synthetic import typical_session
from synthetic_claude import typical_session as claude_session
from synthetic_codex import typical_rollout
from synthetic_copilot import typical_events

FOLDER = "transcripts"
SESSIONS: dict[str, Callable[[], bytes]] = {
    f"{FOLDER}/pi/run.jsonl": lambda: typical_session(turns=6).data(),
    f"{FOLDER}/claude/deep/er/chat.jsonl": lambda: claude_session(turns=4).data(),
    f"{FOLDER}/codex/rollout.jsonl": lambda: typical_rollout(turns=4).data(),
    f"{FOLDER}/copilot/events.jsonl": lambda: typical_events().data(),
}
NOT_SESSIONS: dict[str, bytes] = {
    f"{FOLDER}/notes.jsonl": b'{"a":1}\n{"b":2}\n',
    f"{FOLDER}/readme.md": b"# not a session\n",
    "elsewhere/run.jsonl": typical_session(turns=6).data(),  # outside the folder
}


def tool(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args], cwd=repo, capture_output=True
    )


def populated(repo: Path) -> dict[str, bytes]:
    originals = {name: make() for name, make in SESSIONS.items()}
    for name, data in {**originals, **NOT_SESSIONS}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions")
    return originals


def test_compress_verify_stats_and_restore_take_the_sessions_under_a_folder(repo: Path) -> None:
    originals = populated(repo)
    done = tool(repo, "compress", "--force", "--keep-turns", "1", "--json", FOLDER)
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert sorted(file["path"] for file in report["files"]) == sorted(SESSIONS)
    assert all(file["status"] == "compressed" for file in report["files"]), report
    for name, data in NOT_SESSIONS.items():
        assert (repo / name).read_bytes() == data
    done = tool(repo, "compress", "--force", "--keep-turns", "1", FOLDER + "/")
    assert done.returncode == 0 and done.stdout.count(b"nothing new to compress") == 4

    done = tool(repo, "verify", "--json", FOLDER)
    assert done.returncode == 0, done.stdout
    assert sorted(file["path"] for file in orjson.loads(done.stdout)["files"]) == sorted(SESSIONS)

    done = tool(repo, "stats", "--json", FOLDER)
    assert done.returncode == 0, done.stderr
    document = orjson.loads(done.stdout)
    assert document["selected"]["reason"] == "folder" and len(document["files"]) == 4

    done = tool(repo, "restore", FOLDER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1].startswith("restored 4 sessions: ")
    for name, data in originals.items():
        assert (repo / name).read_bytes() == data


def test_a_folder_without_sessions_says_so(repo: Path) -> None:
    (repo / "empty" / "sub").mkdir(parents=True)
    (repo / "empty" / "sub" / "notes.jsonl").write_bytes(b'{"a":1}\n')
    done = tool(repo, "compress", "empty")
    assert done.returncode == 0
    assert done.stdout == b"gitclaw-compress: no session to compress (sessions under empty)\n"
    done = tool(repo, "verify", "empty")
    assert done.returncode == 3 and b"no session files found under empty" in done.stderr
    done = tool(repo, "restore", "empty")
    assert done.returncode == 0
    assert done.stdout == b"nothing to restore: no compressed session under empty\n"
    done = tool(repo, "restore", "-o", "out.jsonl", "empty")
    assert done.returncode == 2


def test_restore_all_with_a_folder_restores_the_sessions_under_it(repo: Path) -> None:
    # README and --help: `restore --all` restores the work tree, "with a folder as PATH,
    # every one under it".
    originals = populated(repo)
    done = tool(repo, "compress", "--force", "--keep-turns", "1", FOLDER, "elsewhere")
    assert done.returncode == 0, done.stderr
    elsewhere = (repo / "elsewhere/run.jsonl").read_bytes()
    assert elsewhere != NOT_SESSIONS["elsewhere/run.jsonl"]
    done = tool(repo, "restore", "--all", FOLDER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1].startswith("restored 4 sessions: ")
    for name, data in originals.items():
        assert (repo / name).read_bytes() == data
    assert (repo / "elsewhere/run.jsonl").read_bytes() == elsewhere  # outside: left alone
    done = tool(repo, "restore", "--all", f"{FOLDER}/pi/run.jsonl")  # a file is not a folder
    assert done.returncode == 2 and b"not several" in done.stderr


def test_every_command_takes_a_session_path_relative_to_the_repository_root(repo: Path) -> None:
    """The commands `status` suggests (and the stubs name) say the path from the repository
    root; they work from any folder of the checkout, as `show` and `prune` did already."""
    originals = populated(repo)
    name = f"{FOLDER}/pi/run.jsonl"
    here = repo / FOLDER / "codex"  # a folder where `name` does not resolve
    commands = [
        ("compress", name, "--keep-turns", "1"),
        ("stats", name),
        ("verify", name),
        ("status", name),
        ("context", name),
        ("restore", name, "-o", str(repo / "restored.jsonl")),
        ("scan", name, "--no-archive"),
        ("redact", name, "--all"),
        ("restore", name),
    ]
    for args in commands:
        done = tool(here, *args)
        assert done.returncode == 0, (args, done.stderr.decode())
    assert (repo / "restored.jsonl").read_bytes() == originals[name]
    assert (repo / name).read_bytes() == originals[name]  # compressed, then restored in place
