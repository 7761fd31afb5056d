"""`install`, `uninstall`, `pre-push` and `doctor` with real git: after `install`, a plain
`git push` sends the archive, and a depth-1 clone of that remote restores byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result
from flow_helpers import (
    SESSIONS,
    Origin,
    commit_all,
    git,
    make_origin,
    ok,
    path_with,
    session_bytes,
    shim_bin,
    write,
)

from gitclaw_compress.cli import cli

SESSION = f"{SESSIONS}/issue-1.jsonl"
ARCHIVE = "refs/gitclaw/archive"
PREVIOUS_HOOK = b"""#!/bin/sh
echo "previous hook: $1" >> "$(dirname "$0")/../previous-hook.log"
cat >> "$(dirname "$0")/../previous-hook.log"
"""


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def plain_push(origin: Origin, tmp_path: Path, *refs: str) -> subprocess.CompletedProcess[str]:
    """`git push` exactly as a user types it, with gitclaw-compress on PATH for the hook."""
    env = path_with(shim_bin(tmp_path / "bin"))
    return subprocess.run(
        ["git", "push", "-q", "origin", *refs],
        cwd=origin.work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def remote_archive(origin: Origin) -> str:
    return git(origin.bare, "for-each-ref", "--format=%(objectname)", ARCHIVE).strip()


@pytest.fixture
def compressed(tmp_path: Path) -> tuple[Origin, bytes]:
    """An agent clone whose committed session is compressed; the archive is not pushed."""
    origin = make_origin(tmp_path)
    original = session_bytes(6)
    write(origin.work / SESSION, original)
    commit_all(origin.work, "agent run")
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    commit_all(origin.work, "compressed")
    return origin, original


def test_after_install_a_plain_push_sends_the_archive_and_a_shallow_clone_restores(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, original = compressed
    result = run(origin.work, monkeypatch, "install")
    assert result.exit_code == 0 and result.stdout.startswith("installed "), result.output
    done = plain_push(origin, tmp_path, "main")
    assert done.returncode == 0, done.stderr
    assert remote_archive(origin) == git(origin.work, "rev-parse", ARCHIVE).strip()
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    ok(clone, "restore", SESSION)  # fetches the archive from origin: it is there now
    assert (clone / SESSION).read_bytes() == original


def test_without_install_a_plain_push_leaves_the_archive_behind(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure install fixes, and what doctor reports about it."""
    origin, _ = compressed
    assert plain_push(origin, tmp_path, "main").returncode == 0
    assert remote_archive(origin) == ""
    result = run(origin.work, monkeypatch, "doctor", "--json")
    found = orjson.loads(result.stdout)
    assert result.exit_code == 1
    assert found["pre_push_hook"]["installed"] is False
    assert found["archive"]["state"] == "missing"
    assert found["compressed_sessions"] == 1 and found["unrestorable"] == []
    clone = origin.clone(tmp_path / "shallow", "--depth", "1")
    result = run(clone, monkeypatch, "doctor")
    assert result.exit_code == 1
    assert "1 not restorable from this clone" in result.stdout, result.stdout


def test_a_branch_without_compressed_sessions_pushes_no_archive(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, _ = compressed
    run(origin.work, monkeypatch, "install")
    git(origin.work, "checkout", "-q", "--orphan", "docs")
    git(origin.work, "rm", "-rq", "--cached", ".")
    write(origin.work / "docs.md", b"no sessions here\n")
    git(origin.work, "add", "docs.md")
    git(origin.work, "commit", "-qm", "docs")
    assert plain_push(origin, tmp_path, "docs").returncode == 0
    assert remote_archive(origin) == ""


def test_install_chains_an_existing_hook_and_uninstall_puts_it_back(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, _ = compressed
    hook = origin.work / ".git" / "hooks" / "pre-push"
    write(hook, PREVIOUS_HOOK).chmod(0o755)
    result = run(origin.work, monkeypatch, "install")
    assert "runs the hook that was there first" in result.stdout, result.output
    assert run(origin.work, monkeypatch, "install").stdout.startswith("already installed")
    done = plain_push(origin, tmp_path, "main")
    assert done.returncode == 0, done.stderr
    log = (origin.work / ".git" / "previous-hook.log").read_text()
    head = git(origin.work, "rev-parse", "HEAD").strip()
    assert log.startswith("previous hook: origin\n") and f"refs/heads/main {head}" in log
    assert remote_archive(origin)  # and the archive went too
    doctor = orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)
    assert doctor["ok"] and doctor["archive"]["state"] == "up-to-date"
    assert doctor["pre_push_hook"]["installed"] and doctor["pre_push_hook"]["chained"]
    result = run(origin.work, monkeypatch, "uninstall")
    assert "previous hook again" in result.stdout
    assert hook.read_bytes() == PREVIOUS_HOOK
    assert not hook.with_name("pre-push.before-gitclaw-compress").exists()
    result = run(origin.work, monkeypatch, "uninstall")
    assert "not gitclaw-compress's; left alone" in result.stdout
    assert hook.read_bytes() == PREVIOUS_HOOK


def test_restore_all_with_uninstall_is_the_way_out(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, original = compressed
    other = session_bytes(5, session_id="other")
    write(origin.work / f"{SESSIONS}/issue-2.jsonl", other)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", f"{SESSIONS}/issue-2.jsonl")
    assert (origin.work / f"{SESSIONS}/issue-2.jsonl").read_bytes() != other
    run(origin.work, monkeypatch, "install")
    result = run(origin.work, monkeypatch, "restore", "--all", "--json")
    document = orjson.loads(result.stdout)
    assert result.exit_code == 0 and [f["status"] for f in document["files"]] == ["restored"] * 2
    assert (origin.work / SESSION).read_bytes() == original
    assert (origin.work / f"{SESSIONS}/issue-2.jsonl").read_bytes() == other
    result = run(origin.work, monkeypatch, "restore", "--all")
    assert result.stdout == f"nothing to restore: no compressed session under {origin.work}\n"
    assert run(origin.work, monkeypatch, "uninstall").stdout.startswith("removed ")
    assert not (origin.work / ".git" / "hooks" / "pre-push").exists()


def test_doctor_tells_a_session_that_restores_from_history_from_one_that_cannot(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full clone without the archive ref restores the lines from the commits where they
    are intact: doctor says so, and still asks for the archive."""
    origin, original = compressed
    assert plain_push(origin, tmp_path, "main").returncode == 0
    clone = origin.clone(tmp_path / "full")
    result = run(clone, monkeypatch, "doctor", "--json")
    found = orjson.loads(result.stdout)
    assert result.exit_code == 1
    assert found["unrestorable"] == [] and [s["path"] for s in found["history_only"]] == [SESSION]
    result = run(clone, monkeypatch, "doctor")
    assert "0 not restorable from this clone, 1 only from git history" in result.stdout
    assert "gitclaw-compress push" in result.stdout  # origin has none to fetch
    ok(origin.work, "push")  # the archive on origin, not yet in the clone
    found = orjson.loads(run(clone, monkeypatch, "doctor", "--json").stdout)
    assert found["archive"]["state"] == "not-fetched", found["archive"]
    assert "fetch" in found["problems"][0]
    ok(clone, "fetch")
    found = orjson.loads(run(clone, monkeypatch, "doctor", "--json").stdout)
    assert found["ok"] and found["archive"]["state"] == "up-to-date", found
    ok(clone, "restore", "--no-fetch", SESSION)
    assert (clone / SESSION).read_bytes() == original


def test_doctor_names_the_archive_ref_then_its_state(
    tmp_path: Path, compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One `ref: state` line, which reads right in every state ("refs/gitclaw/archive no
    remote 'origin'" did not)."""
    origin, _ = compressed
    result = run(origin.work, monkeypatch, "doctor")
    assert f"\narchive:       {ARCHIVE}: not on origin (run: gitclaw-compress push)\n" in (
        result.stdout
    ), result.stdout
    git(origin.work, "remote", "remove", "origin")
    result = run(origin.work, monkeypatch, "doctor")
    expected = f"{ARCHIVE}: no remote 'origin' (set archive.remote, or `git remote add origin URL`)"
    assert f"\narchive:       {expected}\n" in result.stdout, result.stdout


OTHER_TOOL_HOOK = b"#!/bin/sh\necho another tool's hook\n"


def test_uninstall_after_hooks_path_moved_removes_ours_from_both_folders(
    compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed in .git/hooks, then again after core.hooksPath moved: uninstall removes
    both copies of ours, puts back the hooks each one chained, and touches no other hook."""
    origin, _ = compressed
    old = origin.work / ".git" / "hooks"
    new = origin.work / ".githooks"
    write(old / "pre-push", PREVIOUS_HOOK).chmod(0o755)
    write(old / "pre-commit", OTHER_TOOL_HOOK).chmod(0o755)
    assert run(origin.work, monkeypatch, "install").exit_code == 0
    git(origin.work, "config", "core.hooksPath", ".githooks")
    write(new / "pre-push", OTHER_TOOL_HOOK).chmod(0o755)
    assert run(origin.work, monkeypatch, "install").stdout.startswith(f"installed {new}")

    result = run(origin.work, monkeypatch, "uninstall", "--json")
    document = orjson.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert document["removed"] == [str(new / "pre-push"), str(old / "pre-push")]
    assert document["restored"] == document["removed"]
    assert document["message"] == (
        f"removed the gitclaw-compress hook from {new}; {new / 'pre-push'} is the previous hook "
        f"again; removed the gitclaw-compress hook from {old} (a folder git no longer uses); "
        f"{old / 'pre-push'} is the previous hook again"
    )
    assert (old / "pre-push").read_bytes() == PREVIOUS_HOOK
    assert (new / "pre-push").read_bytes() == OTHER_TOOL_HOOK
    assert (old / "pre-commit").read_bytes() == OTHER_TOOL_HOOK
    leftovers = sorted(p.name for p in [*old.iterdir(), *new.iterdir()] if "sample" not in p.name)
    assert leftovers == ["pre-commit", "pre-push", "pre-push"], leftovers
    again = run(origin.work, monkeypatch, "uninstall")
    assert (
        again.stdout == f"not installed: {new / 'pre-push'} is not gitclaw-compress's; left alone\n"
    )


def test_uninstall_finds_ours_in_a_recorded_folder_git_no_longer_uses(
    compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, _ = compressed
    git(origin.work, "config", "core.hooksPath", "hooks-a")
    run(origin.work, monkeypatch, "install")
    git(origin.work, "config", "core.hooksPath", "hooks-b")
    result = run(origin.work, monkeypatch, "uninstall")
    ours = origin.work / "hooks-a" / "pre-push"
    assert result.stdout == f"removed {ours} (a folder git no longer uses)\n"
    assert not ours.exists()
    assert run(origin.work, monkeypatch, "uninstall").stdout.startswith("not installed: no ")


def test_doctor_names_our_hook_left_in_a_folder_git_no_longer_uses(
    compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `install`, core.hooksPath moved: doctor says the hook is not installed, and
    where the old copy is (harmless; uninstall removes it), not as a problem."""
    origin, _ = compressed
    git(origin.work, "config", "core.hooksPath", "hooks-a")
    run(origin.work, monkeypatch, "install")
    git(origin.work, "config", "core.hooksPath", "hooks-b")
    left = origin.work / "hooks-a" / "pre-push"
    result = run(origin.work, monkeypatch, "doctor")
    first = result.stdout.splitlines()[0]
    assert first.startswith("pre-push hook: not installed (run: gitclaw-compress install); ")
    assert f"a copy of ours is left in {left}, a folder git no longer uses" in first, first
    found = orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)
    assert found["pre_push_hook"]["left_behind"] == [str(left)]
    assert not any("hooks-a" in problem for problem in found["problems"]), found["problems"]
    run(origin.work, monkeypatch, "uninstall")
    found = orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)
    assert found["pre_push_hook"]["left_behind"] == []


def test_uninstall_finds_ours_in_git_hooks_without_a_record(
    compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An install before the record of folders wrote to .git/hooks, then core.hooksPath moved.
    origin, _ = compressed
    run(origin.work, monkeypatch, "install")
    (origin.work / ".git" / "gitclaw-compress" / "hook-folders").unlink()
    git(origin.work, "config", "core.hooksPath", ".githooks")
    assert run(origin.work, monkeypatch, "uninstall").stdout.startswith("removed ")
    assert not (origin.work / ".git" / "hooks" / "pre-push").exists()


def archive_only_originals(work: Path) -> None:
    """New turns compressed after the commit: their originals only the archive keeps (the
    committed session alone restores from the branch history in a fresh clone)."""
    path = work / SESSION
    write(path, path.read_bytes() + session_bytes(6).split(b"\n", 1)[1])
    ok(work, "compress", "--force", "--keep-turns", "1", SESSION)


def test_doctor_fails_when_no_remote_could_take_the_archive_unless_local_only_is_set(
    compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compressed sessions whose archive has no remote to go to: a fresh clone could not
    restore them, which needs the user's action (exit 1) unless they keep it local on
    purpose (archive.localOnly)."""
    origin, _ = compressed
    archive_only_originals(origin.work)
    url = git(origin.work, "remote", "get-url", "origin").strip()
    git(origin.work, "remote", "remove", "origin")
    result = run(origin.work, monkeypatch, "doctor")
    assert result.exit_code == 1, result.output
    problem = result.stdout.splitlines()[-1]
    assert problem.startswith(
        f"problem: 1 compressed session here, but no remote 'origin' to send {ARCHIVE} to"
    ), problem
    assert "`git remote add origin URL`" in problem and "gitclaw-compress push" in problem
    assert "set archive.localOnly to true in compression.json" in problem

    write(origin.work / "compression.json", b'{"archive": {"localOnly": true}}')
    result = run(origin.work, monkeypatch, "doctor", "--json")
    found = orjson.loads(result.stdout)
    assert result.exit_code == 0 and found["ok"] and found["problems"] == [], found
    assert found["archive"]["state"] == "no-remote" and found["archive"]["local_only"]
    text = run(origin.work, monkeypatch, "doctor").stdout
    expected = f"archive:       {ARCHIVE}: kept in this clone only (archive.localOnly; no "
    assert f"\n{expected}remote 'origin')\n" in text, text

    git(origin.work, "remote", "add", "origin", url)  # a remote again: the archive belongs there
    result = run(origin.work, monkeypatch, "doctor")
    assert result.exit_code == 1 and "origin lacks this clone's" in result.stdout, result.stdout


def test_doctor_reads_local_only_where_compress_reads_the_session_config(
    compressed: tuple[Origin, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GitClaw repository keeps its compression.json in the agent folder (.GITCLAW/):
    archive.localOnly there silences doctor as the root's does, and the problem names the
    file that applies to the session."""
    origin, _ = compressed
    archive_only_originals(origin.work)
    git(origin.work, "remote", "remove", "origin")
    agent_config = origin.work / ".GITCLAW" / "compression.json"
    write(agent_config, b'{"session": {"previewLines": 2}}')
    write(origin.work / "compression.json", b'{"archive": {"localOnly": true}}')
    result = run(origin.work, monkeypatch, "doctor")
    assert result.exit_code == 1, result.output
    problem = result.stdout.splitlines()[-1]
    assert "a fresh clone could not restore it;" in problem, problem
    assert problem.endswith("set archive.localOnly to true in .GITCLAW/compression.json")

    write(agent_config, b'{"archive": {"localOnly": true}}')
    (origin.work / "compression.json").unlink()
    result = run(origin.work, monkeypatch, "doctor", "--json")
    found = orjson.loads(result.stdout)
    assert result.exit_code == 0 and found["problems"] == [], found
    assert found["archive"]["local_only"], found
