"""The archive is as private as the sessions: after `stores`, and the commands that read a
store, under a umask of 022, no file or folder of any archive, and nothing else the runs
wrote, is readable by group or others; an archive an older version made readable is
tightened on the next run, which says so once. A repository's own `.git` keeps git's
normal modes (its owner decides)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_stores import SESSIONS, Machine, machine

__all__ = ["machine"]  # the fixture, used by name


def run_022(machine: Machine, *args: str, cwd: Path | None = None) -> bytes:
    """`gitclaw-compress ARGS` under umask 022, as most shells have it; stdout + stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=cwd or machine.home.parent,
        capture_output=True,
        umask=0o022,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout + done.stderr


def every_path(folder: Path) -> dict[Path, int]:
    """Every path under `folder` (itself too), with its permission bits."""
    found = {folder: stat.S_IMODE(folder.lstat().st_mode)}
    for base, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(base, name)
            found[path] = stat.S_IMODE(path.lstat().st_mode)
    return found


def loose(paths: dict[Path, int]) -> list[str]:
    return [f"{mode:o} {path}" for path, mode in sorted(paths.items()) if mode & 0o077]


def test_nothing_a_store_run_writes_is_readable_by_others(machine: Machine, tmp_path: Path) -> None:
    before = every_path(machine.home)
    run_022(machine, "stores")
    data = machine.home / ".local" / "share" / "gitclaw-compress"
    assert sorted(path.name for path in (data / "stores").iterdir()) == sorted(SESSIONS)
    # The commands that read a store, and git run by hand in an archive, keep it so.
    for agent, rel in SESSIONS.items():
        session = str(machine.path(rel))
        run_022(machine, "verify", session, cwd=tmp_path)
        run_022(machine, "restore", session, "-o", "-", cwd=tmp_path)
        run_022(machine, "status", session, cwd=tmp_path)
        archive = str(machine.archive(agent))
        subprocess.run(["git", "--git-dir", archive, "gc", "-q"], check=True, umask=0o022)
    events = machine.path(SESSIONS["copilot"]).read_bytes()
    entry = events.split(b"Full output: gitclaw-compress show ", 1)[1][:36].decode()
    run_022(machine, "show", entry, cwd=tmp_path)
    after = every_path(machine.home)
    written = {path: mode for path, mode in after.items() if path not in before}
    assert any("objects/pack" in str(path) for path in written)  # the walk sees the packs
    assert loose(written) == []
    assert loose(every_path(data)) == []
    for rel in SESSIONS.values():  # a session keeps its own mode
        assert after[machine.path(rel)] == before[machine.path(rel)]


def test_an_archive_an_older_version_made_is_tightened_once(machine: Machine) -> None:
    run_022(machine, "stores", "claude")
    data = machine.home / ".local" / "share" / "gitclaw-compress"
    archive = str(machine.archive("claude"))
    # As an older version left it: no setting, folders 755, files 644, packs 444.
    subprocess.run(["git", "--git-dir", archive, "config", "--unset", "core.sharedRepository"])
    for path, mode in every_path(data).items():
        path.chmod(mode | (0o055 if path.is_dir() else mode >> 3 & 0o044 | 0o044))
    assert loose(every_path(data)) != []
    said = run_022(machine, "stores", "claude").decode()
    notes = [line for line in said.splitlines() if "readable by others" in line]
    assert len(notes) == 1 and "folders 700, files 600" in notes[0], said
    assert loose(every_path(data)) == []
    again = run_022(machine, "stores", "claude").decode()
    assert "readable by others" not in again
    rel = SESSIONS["claude"]
    assert machine.restored(rel) == machine.originals[rel]


def test_a_repositorys_own_git_dir_keeps_gits_modes(repo: Path) -> None:
    from agent_hook_helpers import session_bytes

    session = repo / "session.jsonl"
    session.write_bytes(session_bytes("pi"))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, umask=0o022)
    subprocess.run(["git", "commit", "-qm", "s"], cwd=repo, check=True, umask=0o022)
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", str(session), "--keep-turns", "1"],
        cwd=repo,
        capture_output=True,
        umask=0o022,
    )
    assert done.returncode == 0, done.stderr
    modes = every_path(repo / ".git")
    assert modes[repo / ".git" / "refs" / "gitclaw"] == 0o755
    config = subprocess.run(
        ["git", "config", "--get", "core.sharedRepository"], cwd=repo, capture_output=True
    )
    assert config.stdout == b""


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_the_hooks_log_and_records_are_for_this_user_alone(
    machine: Machine, umask: int, tmp_path: Path
) -> None:
    """The agent hook's log, lock and install records: one event, with the pass it starts
    (which compresses the store under the same umask)."""
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "install", "--agents", "claude"],
        cwd=tmp_path,
        capture_output=True,
        umask=umask,
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "hook", "--pass", "claude"],
        cwd=tmp_path,
        capture_output=True,
        umask=umask,
    )
    data = machine.home / ".local" / "share" / "gitclaw-compress"
    hooks = data / "agent-hooks"
    assert any(hooks.glob("claude-*.json")) and (hooks / "hooks.log").is_file(), done.stderr
    assert loose(every_path(data)) == []
