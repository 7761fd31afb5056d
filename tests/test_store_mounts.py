"""Stores and repositories on mounts of their own: a bind-mounted store (the same device
number, yet a rename across the mount fails), a read-only bind mount, and a repository whose
git dir is on another filesystem than its work tree. Each needs root and `unshare -m` (or
mount(8)): skipped with the reason where they are not there."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_stores import SESSIONS, Machine, machine

__all__ = ["machine"]  # the fixture, used by name
CLAUDE = SESSIONS["claude"]


def _can_unshare() -> str | None:
    """Why a private mount namespace cannot be had here, or None."""
    if os.geteuid() != 0:
        return "bind mounts need root"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare(1) and mount(8) are needed"
    done = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if done.returncode != 0:
        return f"unshare -m fails here: {done.stderr.decode().strip()}"
    return None


def in_namespace(
    mounts: str, *args: str, cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """`gitclaw-compress ARGS` after `mounts` (shell commands), in a mount namespace of its
    own: nothing outside the test sees the mounts, and they end with it."""
    reason = _can_unshare()
    if reason is not None:
        pytest.skip(reason)
    command = shlex.join([sys.executable, "-m", "gitclaw_compress", *args])
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", f"{mounts} && exec {command}"],
        cwd=cwd,
        capture_output=True,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}: {done.stderr.decode()}")
    return done


def bind(folder: Path, *, read_only: bool = False) -> str:
    where = shlex.quote(str(folder))
    line = f"mount --bind {where} {where}"
    return line + (f" && mount -o remount,bind,ro {where}" if read_only else "")


def temp_names(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.name.startswith(".gitclaw-compress-tmp-")]


def test_a_bind_mounted_store_compresses_and_restores(machine: Machine) -> None:
    store = machine.home / ".claude"
    done = in_namespace(bind(store), "stores", "claude", cwd=machine.home)
    assert b"failed" not in done.stderr, done.stderr
    compressed = machine.path(CLAUDE).read_bytes()
    assert compressed != machine.originals[CLAUDE]
    assert temp_names(store) == []  # the fallback beside the file left nothing
    restored = in_namespace(
        bind(store), "restore", str(machine.path(CLAUDE)), "-o", "-", cwd=machine.home
    )
    assert restored.stdout == machine.originals[CLAUDE]
    in_namespace(bind(store), "restore", str(machine.path(CLAUDE)), cwd=machine.home)
    assert machine.path(CLAUDE).read_bytes() == machine.originals[CLAUDE]
    assert temp_names(store) == []


def test_a_read_only_bind_mount_says_read_only(machine: Machine) -> None:
    store = machine.home / ".claude"
    done = in_namespace(
        bind(store, read_only=True), "stores", "claude", cwd=machine.home, check=False
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "the filesystem is read-only" in lines[0], lines
    assert "cross-device" not in lines[0]
    assert machine.path(CLAUDE).read_bytes() == machine.originals[CLAUDE]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A folder with a 16 MB tmpfs of its own mounted on it, unmounted after the test."""
    reason = _can_unshare()
    if reason is not None:
        pytest.skip(reason)
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def git_dir_elsewhere(tmp_path: Path, tmpfs: Path) -> Iterator[tuple[Path, Path]]:
    """A repository whose git dir is on a tmpfs of its own (`--separate-git-dir`)."""
    work = tmp_path / "work"
    subprocess.run(
        ["git", "init", "-q", "--separate-git-dir", str(tmpfs / "git"), str(work)], check=True
    )
    yield work, tmpfs / "git"


@pytest.fixture
def linked_work_tree_elsewhere(tmp_path: Path, tmpfs: Path) -> Iterator[tuple[Path, Path]]:
    """A `git worktree` on a tmpfs of its own, its repository's git dir on the disk."""
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "0"], cwd=main, check=True)
    linked = tmpfs / "linked"
    subprocess.run(["git", "worktree", "add", "-q", str(linked)], cwd=main, check=True)
    yield linked, main / ".git"


@pytest.mark.parametrize("layout", ["separate git dir", "linked work tree"])
def test_a_git_dir_on_another_filesystem_keeps_temp_files_out_of_git(
    layout: str, request: pytest.FixtureRequest
) -> None:
    from agent_hook_helpers import session_bytes
    from conftest import cli

    fixture = "git_dir_elsewhere" if layout == "separate git dir" else "linked_work_tree_elsewhere"
    work, git_dir = request.getfixturevalue(fixture)
    original = session_bytes("pi")
    session = work / "session.jsonl"
    session.write_bytes(original)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(["git", "commit", "-qm", "session"], cwd=work, check=True)
    done = cli("compress", str(session), "--keep-turns", "1", cwd=work)
    assert b"compressed" in done.stdout, done.stdout
    assert session.read_bytes() != original
    assert temp_names(work) == []
    pattern = ".gitclaw-compress-tmp-*"
    assert pattern in (git_dir / "info" / "exclude").read_text().splitlines()
    cli("restore", str(session), cwd=work)
    assert session.read_bytes() == original
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=work, capture_output=True, check=True
    )
    assert status.stdout == b""


def test_a_rename_across_mounts_found_only_at_the_end_falls_back_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the first check cannot tell (a system that looks the name up before it compares
    mounts), the rename itself fails with EXDEV: the sealed file is copied beside the target,
    with its mode, and renamed from there; nothing is left behind."""
    import tempfile

    from gitclaw_compress.store import fileio

    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs /dev/shm on a filesystem of its own")
    elsewhere = Path(tempfile.mkdtemp(dir=shm))
    try:
        monkeypatch.setattr(fileio, "temp_folder", lambda target, git_dir: elsewhere)
        target = tmp_path / "session.jsonl"
        target.write_bytes(b"old\n")
        target.chmod(0o640)
        atomic = fileio.AtomicFile(target)
        assert atomic.temp.parent == elsewhere
        atomic.write(b"new\n")
        atomic.seal()
        atomic.replace()
        assert target.read_bytes() == b"new\n"
        assert target.stat().st_mode & 0o777 == 0o640
        assert list(elsewhere.iterdir()) == [] and temp_names(tmp_path) == []
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
