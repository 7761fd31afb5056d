"""Our pre-push hook beside pre-commit's, in every order of installation, with the real
pre-commit (its migration mode included) and a real `git push` to a local bare remote; and the
hook without the tool on PATH, or with the tool gone."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import yaml
from click.testing import CliRunner, Result
from flow_helpers import (
    SESSIONS,
    Origin,
    commit_all,
    git,
    make_origin,
    needs_pre_commit,
    ok,
    pre_commit_exe,
    session_bytes,
    write,
)

from gitclaw_compress.cli import cli

SESSION = f"{SESSIONS}/issue-1.jsonl"
ARCHIVE = "refs/gitclaw/archive"
NO_TOOL_PATH = "/usr/local/bin:/usr/bin:/bin"  # git and sh; neither gitclaw-compress nor a venv
FOREIGN_HOOK = b"""#!/bin/sh
echo "foreign hook: $1" >> "$(dirname "$0")/../foreign-hook.log"
cat > /dev/null
"""
# A pre-commit hook at the pre-push stage that leaves a trace: pre-commit's hooks ran.
PRE_COMMIT_CONFIG = {
    "repos": [
        {
            "repo": "local",
            "hooks": [
                {
                    "id": "trace",
                    "name": "trace",
                    "entry": "sh -c 'echo ran >> .git/pre-commit-push.log'",
                    "language": "system",
                    "stages": ["pre-push"],
                    "always_run": True,
                    "pass_filenames": False,
                }
            ],
        }
    ]
}


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def push(work: Path, *refs: str) -> subprocess.CompletedProcess[str]:
    """A plain `git push` with neither gitclaw-compress nor pre-commit on PATH."""
    return subprocess.run(
        ["git", "push", "-q", "origin", *refs],
        cwd=work,
        env={**os.environ, "PATH": NO_TOOL_PATH},
        capture_output=True,
        text=True,
        check=False,
    )


def remote_archive(origin: Origin) -> str:
    return git(origin.bare, "for-each-ref", "--format=%(objectname)", ARCHIVE).strip()


def hooks(origin: Origin) -> Path:
    return origin.work / ".git" / "hooks"


@pytest.fixture
def compressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Origin:
    """An agent clone whose committed session is compressed; the archive is not pushed."""
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    origin = make_origin(tmp_path)
    write(origin.work / ".pre-commit-config.yaml", yaml.safe_dump(PRE_COMMIT_CONFIG).encode())
    write(origin.work / SESSION, session_bytes(6))
    commit_all(origin.work, "agent run")
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    commit_all(origin.work, "compressed")
    return origin


def pre_commit(origin: Origin, *args: str) -> None:
    subprocess.run([pre_commit_exe(), *args], cwd=origin.work, check=True, capture_output=True)


def ours(origin: Origin, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(origin.work, monkeypatch, "install")
    assert result.exit_code == 0, result.output


def foreign(origin: Origin, _monkeypatch: pytest.MonkeyPatch) -> None:
    write(hooks(origin) / "pre-push", FOREIGN_HOOK).chmod(0o755)


def pre_commit_install(origin: Origin, _monkeypatch: pytest.MonkeyPatch) -> None:
    pre_commit(origin, "install", "-t", "pre-commit", "-t", "pre-push")


def pre_commit_uninstall(origin: Origin, _monkeypatch: pytest.MonkeyPatch) -> None:
    pre_commit(origin, "uninstall", "-t", "pre-commit", "-t", "pre-push")


Step = Callable[[Origin, pytest.MonkeyPatch], None]
ORDERS: dict[str, list[Step]] = {
    "ours-alone": [ours],
    "ours-then-pre-commit": [ours, pre_commit_install],
    "pre-commit-then-ours": [pre_commit_install, ours],
    "ours-pre-commit-ours": [ours, pre_commit_install, ours],
    "pre-commit-ours-pre-commit": [pre_commit_install, ours, pre_commit_install],
    "foreign-ours-pre-commit": [foreign, ours, pre_commit_install],
    "foreign-pre-commit-ours": [foreign, pre_commit_install, ours],
    "ours-pre-commit-uninstalled": [ours, pre_commit_install, pre_commit_uninstall],
}


@needs_pre_commit
@pytest.mark.parametrize("order", list(ORDERS))
def test_both_hooks_run_in_every_order_and_doctor_and_uninstall_tell_the_truth(
    order: str, compressed: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = compressed
    steps = ORDERS[order]
    for step in steps:
        step(origin, monkeypatch)
    pre_commit_in_front = steps[-1] is not pre_commit_uninstall and pre_commit_install in steps
    doctor = run(origin.work, monkeypatch, "doctor")
    assert "pre-push hook: installed" in doctor.stdout, doctor.stdout
    assert "gitclaw-compress install" not in doctor.stdout, doctor.stdout
    state = orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)
    hook = state["pre_push_hook"]
    assert hook["installed"] and hook["problem"] is None and hook["current"], hook
    assert hook["run_by_pre_commit"] is hook["pre_commit_script"] is pre_commit_in_front

    done = push(origin.work, "main")
    assert done.returncode == 0, done.stderr
    assert "migration mode" not in done.stderr
    assert remote_archive(origin) == git(origin.work, "rev-parse", ARCHIVE).strip()
    traces = origin.work / ".git" / "pre-commit-push.log"
    assert traces.exists() is pre_commit_in_front
    if pre_commit_in_front:
        assert traces.read_text() == "ran\n"  # once: pre-commit never ran inside itself
    if foreign in steps:
        assert (origin.work / ".git" / "foreign-hook.log").read_text() == "foreign hook: origin\n"
    doctor = orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)
    assert doctor["ok"] and doctor["archive"]["state"] == "up-to-date", doctor

    result = run(origin.work, monkeypatch, "uninstall")
    assert result.stdout.startswith("removed "), result.stdout
    names = sorted(path.name for path in hooks(origin).iterdir() if "sample" not in path.name)
    if foreign in steps:  # the foreign hook is back where pre-commit or git runs it
        expected = ["pre-commit", "pre-push", "pre-push.legacy"] if pre_commit_in_front else []
        assert names == (expected or ["pre-push"]), names
        back = hooks(origin) / ("pre-push.legacy" if pre_commit_in_front else "pre-push")
        assert back.read_bytes() == FOREIGN_HOOK
    elif pre_commit_in_front:
        assert names == ["pre-commit", "pre-push"], names
    else:
        assert names == [], names  # pre-commit uninstall removed its own
    state = orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)
    assert state["pre_push_hook"]["installed"] is False
    assert run(origin.work, monkeypatch, "uninstall").stdout.startswith("not installed")
    commit_all(origin.work, "one more")
    done = push(origin.work, "main")
    assert done.returncode == 0, done.stderr


@needs_pre_commit
def test_install_repairs_what_an_older_install_did_after_pre_commit(
    compressed: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The older install chained pre-commit's script behind a hook pre-commit had already
    moved to pre-push.legacy: every push failed with "installed in migration mode"."""
    origin = compressed
    ours(origin, monkeypatch)
    pre_commit_install(origin, monkeypatch)
    folder = hooks(origin)
    old = (folder / "pre-push.legacy").read_text().replace("# hook version 3\n", "")
    old = old.replace('[ -n "$PRE_COMMIT_RUNNING_LEGACY" ] &&', "false &&")
    (folder / "pre-push.legacy").write_text(old)
    (folder / "pre-push").rename(folder / "pre-push.before-gitclaw-compress")
    write(folder / "pre-push", old.encode()).chmod(0o755)
    done = push(origin.work, "main")
    assert done.returncode != 0 and "migration mode" in done.stderr  # the state reported
    doctor = run(origin.work, monkeypatch, "doctor")
    assert doctor.exit_code == 1 and "repair it with: gitclaw-compress install" in doctor.stdout

    result = run(origin.work, monkeypatch, "install")
    assert "pre-commit's script is the pre-push hook again" in result.stdout, result.stdout
    done = push(origin.work, "main")
    assert done.returncode == 0, done.stderr
    assert remote_archive(origin)
    assert orjson.loads(run(origin.work, monkeypatch, "doctor", "--json").stdout)["ok"]


def test_the_hook_finds_the_tool_without_path(
    compressed: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = compressed
    ours(origin, monkeypatch)
    done = push(origin.work, "main")  # PATH holds neither gitclaw-compress nor the venv
    assert done.returncode == 0, done.stderr
    assert remote_archive(origin) == git(origin.work, "rev-parse", ARCHIVE).strip()


def _tool_gone(origin: Origin) -> None:
    hook = hooks(origin) / "pre-push"
    text = hook.read_text()
    start = text.index("\npython=") + 1
    end = text.index("\n", start)
    hook.write_text(text[:start] + "python=/nonexistent/venv/bin/python" + text[end:])


def test_with_the_tool_gone_a_branch_without_sessions_is_pushed_with_one_line(
    compressed: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = compressed
    ours(origin, monkeypatch)
    _tool_gone(origin)
    git(origin.work, "checkout", "-q", "--orphan", "docs")
    git(origin.work, "rm", "-rq", "--cached", ".")
    write(origin.work / "docs.md", b"no sessions here\n")
    git(origin.work, "add", "docs.md")
    git(origin.work, "commit", "-qm", "docs")
    done = push(origin.work, "docs")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "not found" in done.stderr and "goes ahead" in done.stderr
    assert "reinstall it and run 'gitclaw-compress install'" in done.stderr
    assert git(origin.bare, "rev-parse", "refs/heads/docs")
    assert remote_archive(origin) == ""
    doctor = run(origin.work, monkeypatch, "doctor")
    assert "cannot find gitclaw-compress" in doctor.stdout, doctor.stdout


def test_with_the_tool_gone_the_archive_still_travels_or_the_push_stops(
    compressed: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = compressed
    ours(origin, monkeypatch)
    _tool_gone(origin)
    git(origin.work, "push", "-q", "--no-verify", "origin", f"HEAD~1:{ARCHIVE}")
    done = push(origin.work, "main")  # the remote's archive is not an ancestor of ours
    assert done.returncode == 1
    assert "could not send refs/gitclaw/*" in done.stderr, done.stderr
    assert git(origin.bare, "for-each-ref", "refs/heads/main") == ""  # the branch stayed
    git(origin.bare, "update-ref", "-d", ARCHIVE)
    done = push(origin.work, "main")
    assert done.returncode == 0, done.stderr
    assert "sent refs/gitclaw/* to origin with plain git" in done.stderr
    assert remote_archive(origin) == git(origin.work, "rev-parse", ARCHIVE).strip()


@needs_pre_commit
def test_doctor_counts_pre_commits_push_archive_hook_and_advises_no_second_hook(
    compressed: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = compressed
    config = {
        "repos": [
            {
                "repo": "https://github.com/OWNER/gitclaw-compress",
                "rev": "main",
                "hooks": [{"id": "gitclaw-compress"}, {"id": "gitclaw-compress-push-archive"}],
            }
        ]
    }
    write(origin.work / ".pre-commit-config.yaml", yaml.safe_dump(config).encode())
    doctor = run(origin.work, monkeypatch, "doctor")
    assert "pre-push hook: not installed; gitclaw-compress-push-archive is configured" in (
        doctor.stdout
    )
    assert "pre-commit install -t pre-commit -t pre-push" in doctor.stdout, doctor.stdout
    pre_commit_install(origin, monkeypatch)  # installs scripts only; no hook is run here
    doctor = run(origin.work, monkeypatch, "doctor")
    assert (
        "pre-push hook: pre-commit's gitclaw-compress-push-archive sends the archive"
        in doctor.stdout
    )
    assert "gitclaw-compress install" not in doctor.stdout, doctor.stdout
    assert "pre-commit:    configured and installed" in doctor.stdout
    # uninstall reads the same script the same way: it runs our hook, from the config, and
    # uninstall says so and where to stop it (it said "runs no gitclaw-compress hook").
    said = run(origin.work, monkeypatch, "uninstall").stdout
    assert "runs no gitclaw-compress hook" not in said, said
    assert "runs gitclaw-compress's gitclaw-compress-push-archive hook" in said, said
    assert ".pre-commit-config.yaml" in said
    doctor = run(origin.work, monkeypatch, "doctor")  # uninstall left it alone: the same
    assert "pre-commit's gitclaw-compress-push-archive sends the archive" in doctor.stdout
