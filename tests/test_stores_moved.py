"""A store that a variable moved (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `COPILOT_HOME`,
`PI_CODING_AGENT_DIR`, `PI_CODING_AGENT_SESSION_DIR`) when `stores` ran stays restorable from
a shell without it: every command finds the session's archive from its path alone (the
archive records each folder it served). Two stores of one agent share its archive, and no
git setting that names one of them flips between them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from test_stores import OLD, SESSIONS, Machine, machine

__all__ = ["machine"]  # the fixture, used by name

# agent -> (the variable that moves its store, the session's path in the moved folder)
MOVED = {
    "claude": ("CLAUDE_CONFIG_DIR", SESSIONS["claude"].split("/", 1)[1]),
    "codex": ("CODEX_HOME", SESSIONS["codex"].split("/", 1)[1]),
    "copilot": ("COPILOT_HOME", SESSIONS["copilot"].split("/", 1)[1]),
    "pi": ("PI_CODING_AGENT_DIR", SESSIONS["pi"].split("/", 2)[2]),
    "pi-sessions": ("PI_CODING_AGENT_SESSION_DIR", SESSIONS["pi"].rsplit("/", 1)[1]),
}


def run(
    machine: Machine,
    *args: str,
    cwd: Path | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`gitclaw-compress ARGS` with `env` on top of the test's environment."""
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd or machine.home.parent,
        capture_output=True,
        env={**os.environ, **(env or {})},
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}: {done.stderr.decode()}")
    return done


def moved_store(machine: Machine, case: str) -> tuple[str, Path, Path, bytes]:
    """The agent's session moved into a folder of its own: (variable, folder, session,
    original bytes)."""
    agent = case.split("-")[0]
    variable, rel = MOVED[case]
    folder = machine.home / "moved" / case
    session = folder / rel
    session.parent.mkdir(parents=True)
    original = machine.originals[SESSIONS[agent]]
    session.write_bytes(original)
    os.utime(session, (OLD, OLD))
    if case == "pi-sessions":
        # pi keeps every working directory's sessions in such a folder: the newest is the one
        # any running pi on this machine may write (left alone); a newer one keeps the test
        # from depending on whether one runs.
        (folder / "2026-01-03T10-00-00-000Z_newer.jsonl").write_bytes(original)
    return variable, folder, session, original


def archive_config(machine: Machine, agent: str, *args: str) -> list[str]:
    done = subprocess.run(
        ["git", "--git-dir", str(machine.archive(agent)), "config", *args],
        capture_output=True,
    )
    return done.stdout.decode().splitlines()


@pytest.mark.parametrize("case", sorted(MOVED))
def test_a_moved_store_restores_verifies_and_shows_without_its_variable(
    machine: Machine, case: str, tmp_path: Path
) -> None:
    agent = case.split("-")[0]
    variable, folder, session, original = moved_store(machine, case)
    run(machine, "stores", agent, env={variable: str(folder)})
    compressed = session.read_bytes()
    assert compressed != original
    # A shell without the variable, in another folder (the agent's project):
    assert b"ok:" in run(machine, "verify", str(session), cwd=tmp_path).stdout
    assert run(machine, "restore", str(session), "-o", "-", cwd=tmp_path).stdout == original
    marker = b"gitclaw-compress show " + str(session).encode() + b" "
    if marker in compressed:  # the stub names the session and the id
        entry = re.split(rb"[^A-Za-z0-9_.:-]", compressed.split(marker, 1)[1], maxsplit=1)[0]
        entry = entry.decode()
        shown = run(machine, "show", str(session), entry, "--raw", cwd=tmp_path).stdout
        assert shown.rstrip(b"\n") in original.split(b"\n")
    run(machine, "restore", str(session), cwd=tmp_path)
    assert session.read_bytes() == original


def test_show_of_an_id_alone_names_the_moved_store(machine: Machine, tmp_path: Path) -> None:
    """Copilot CLI's stubs name the id alone: `show ID` finds it in the moved store, and
    names that store, not the default one."""
    variable, folder, session, original = moved_store(machine, "copilot")
    run(machine, "stores", "copilot", env={variable: str(folder)})
    events = session.read_bytes()
    entry = events.split(b"Full output: gitclaw-compress show ", 1)[1][:36].decode()
    done = run(machine, "show", entry, "--raw", cwd=tmp_path)
    assert done.stdout.rstrip(b"\n") in original.split(b"\n")
    shown = orjson.loads(run(machine, "show", entry, "--json", cwd=tmp_path).stdout)
    assert Path(shown["path"]) == session or shown["path"] == str(session.relative_to(folder))
    missing = run(machine, "show", "no-such-id-anywhere", cwd=tmp_path, check=False)
    assert missing.returncode == 3
    assert str(folder).encode() in missing.stderr and b"copilot" in missing.stderr


def test_two_stores_of_one_agent_compressed_in_turn_both_restore(machine: Machine) -> None:
    rel = SESSIONS["claude"]
    variable, folder, session, original = moved_store(machine, "claude")
    other = original.replace(b"8f1c2e0a", b"7f1c2e0a")
    session.write_bytes(other)
    os.utime(session, (OLD, OLD))
    run(machine, "stores", "claude")
    second = run(machine, "stores", "claude", env={variable: str(folder)})
    assert b"serves 2 claude stores" in second.stderr + second.stdout
    run(machine, "stores", "claude")  # in turn: nothing flips, nothing is said again
    again = run(machine, "stores", "claude", env={variable: str(folder)})
    assert b"serves" not in again.stderr + again.stdout
    assert archive_config(machine, "claude", "--get-all", "core.worktree") == []
    served = archive_config(machine, "claude", "--get-all", "gitclaw.worktree")
    assert served == [str(machine.home / ".claude"), str(folder)]
    for path, data in ((machine.path(rel), machine.originals[rel]), (session, other)):
        assert path.read_bytes() != data
        assert run(machine, "restore", str(path), "-o", "-").stdout == data
        assert b"ok:" in run(machine, "verify", str(path)).stdout


def test_an_archive_of_the_older_layout_keeps_working_and_says_so_once(machine: Machine) -> None:
    """An older version named the last store run in `core.worktree`, and may not have listed
    it in `gitclaw.worktree`: the next run moves it there and says so in one line."""
    variable, folder, session, original = moved_store(machine, "claude")
    run(machine, "stores", "claude", env={variable: str(folder)})
    archive = str(machine.archive("claude"))
    subprocess.run(
        ["git", "--git-dir", archive, "config", "core.worktree", str(folder)], check=True
    )
    subprocess.run(["git", "--git-dir", archive, "config", "--unset-all", "gitclaw.worktree"])
    done = run(machine, "restore", str(session), "-o", "-")
    assert done.stdout == original
    notes = [line for line in done.stderr.decode().splitlines() if "core.worktree" in line]
    assert len(notes) == 1, done.stderr
    assert archive_config(machine, "claude", "--get-all", "core.worktree") == []
    assert archive_config(machine, "claude", "--get-all", "gitclaw.worktree") == [str(folder)]
    done = run(machine, "verify", str(session))
    assert b"core.worktree" not in done.stderr
    shutil.rmtree(machine.home / ".claude")  # the default store is not needed
    assert run(machine, "restore", str(session), "-o", "-").stdout == original


def test_show_of_an_id_alone_does_not_record_a_store_it_only_looked_at(
    machine: Machine, tmp_path: Path
) -> None:
    """`show ID` without the variable finds the id in the moved Claude store; the default
    `~/.claude` beside it, never compressed, is not opened (opening would record it as a
    store the archive serves), nor named in the search."""
    variable, folder, session, original = moved_store(machine, "claude")
    run(machine, "stores", "claude", env={variable: str(folder)})
    compressed = session.read_bytes()
    marker = b"gitclaw-compress show " + str(session).encode() + b" "
    entry = re.split(rb"[^A-Za-z0-9_.:-]", compressed.split(marker, 1)[1], maxsplit=1)[0]
    done = run(machine, "show", entry.decode(), "--raw", cwd=tmp_path)
    assert done.stdout.rstrip(b"\n") in original.split(b"\n")
    assert b"serves" not in done.stderr
    assert archive_config(machine, "claude", "--get-all", "gitclaw.worktree") == [str(folder)]
    missing = run(machine, "show", "no-such-id-anywhere", cwd=tmp_path, check=False)
    assert str(folder).encode() in missing.stderr
    assert str(machine.home / ".claude").encode() + b")" not in missing.stderr
