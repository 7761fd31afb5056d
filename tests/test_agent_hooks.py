"""`install --agents`, `uninstall --agents`, `doctor --agents` and the `hook` they install, on
each agent's own files in a fresh HOME (the real CLIs run them in test_agent_hooks_real.py):
whatever was configured keeps running, install twice changes nothing, uninstall puts every
byte back (a file install made is gone again), and doctor says what stands."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from agent_hook_helpers import wait_for_hooks
from click.testing import CliRunner

from gitclaw_compress.cli import COMMANDS, cli
from gitclaw_compress.formats import lifecycle_hook, registry
from gitclaw_compress.ops.agenthooks.files import (
    AGENTS,
    data_folder,
    hook_command,
    hooks_folder,
    lock_path,
)
from gitclaw_compress.ops.agenthooks.run import PASS_INTERVAL

HOME_FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/config.toml",
    "copilot": ".copilot/hooks/gitclaw-compress.json",
    "pi": ".pi/agent/extensions/gitclaw-compress.ts",
}
# What a user may have there before, as another tool or the user wrote it.
BEFORE = {
    "claude": b'{\n  "model": "opus",\n  "hooks": {\n    "SessionEnd": [\n      {\n'
    b'        "hooks": [{"type": "command", "command": "other-tool end"}]\n      }\n'
    b'    ],\n    "Stop": []\n  }\n}\n',
    "codex": b'# mine\nnotify = ["notify-send", "-t", "5"]  # keep\n\n[tui]\nnotify = true\n',
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def home() -> Path:
    return Path(os.environ["HOME"])


def test_every_format_knows_its_hook_and_the_default_says_unsupported() -> None:
    from gitclaw_compress.formats.base import FormatBase, Unsupported

    for name, fmt in registry().items():
        assert fmt.lifecycle_hook() is lifecycle_hook(name)
    with pytest.raises(Unsupported, match="a hook when a session ends is not supported"):
        FormatBase().lifecycle_hook()


@pytest.mark.parametrize(
    ("agent", "start"),
    [
        *((agent, start) for agent in AGENTS for start in ("absent", "empty-folder")),
        *((agent, "configured") for agent in BEFORE),  # the others' file is ours alone
    ],
)
def test_install_twice_then_uninstall_leaves_every_byte_as_it_was(agent: str, start: str) -> None:
    path = home() / HOME_FILES[agent]
    if start == "empty-folder":
        lifecycle_hook(agent).agent_folder(dict(os.environ)).mkdir(parents=True)
    if start == "configured":
        path.parent.mkdir(parents=True)
        path.write_bytes(BEFORE[agent])
    before = agents_files()
    folders = agents_folders()

    first = invoke("install", "--agents", agent)
    assert "installed our" in first
    text = path.read_bytes()
    assert (lifecycle_hook(agent).installed(text) or [])[:6] == hook_command(agent)
    assert "already installed" in invoke("install", "--agents", agent)
    assert path.read_bytes() == text  # twice: nothing changed
    assert hooks_folder(dict(os.environ)).stat().st_mode & 0o777 == 0o700  # our records

    said = invoke("uninstall", "--agents", agent)
    assert "as it was before install" in said or "removed" in said
    assert agents_files() == before
    assert agents_folders() == folders


def _agents_paths() -> list[Path]:
    """Everything in HOME but our data folder (its log and records) and the folders above it."""
    ours = data_folder(dict(os.environ))
    return [p for p in home().rglob("*") if not p.is_relative_to(ours) and p not in ours.parents]


def agents_files() -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in _agents_paths() if p.is_file()}


def agents_folders() -> set[Path]:
    return {p for p in _agents_paths() if p.is_dir()}


def test_install_keeps_what_was_configured_and_chains_codex_notify() -> None:
    for agent in ("claude", "codex"):
        path = home() / HOME_FILES[agent]
        path.parent.mkdir(parents=True)
        path.write_bytes(BEFORE[agent])
    said = invoke("install", "--agents", "claude", "codex")
    assert "it runs the previous one too: notify-send with 2 arguments" in said
    assert "-t" not in said.split()  # its arguments may hold a token: never printed
    claude = orjson.loads((home() / HOME_FILES["claude"]).read_bytes())
    commands = [h["command"] for g in claude["hooks"]["SessionEnd"] for h in g["hooks"]]
    assert commands[1] == "other-tool end" and "gitclaw_compress hook claude" in commands[0]
    assert claude["model"] == "opus" and claude["hooks"]["Stop"] == []
    import tomllib

    codex = tomllib.loads((home() / HOME_FILES["codex"]).read_text())
    assert codex["notify"] == [*hook_command("codex"), "--", "notify-send", "-t", "5"]
    assert codex["tui"] == {"notify": True}


def test_install_without_names_takes_the_agents_found_and_says_when_there_is_none() -> None:
    result = CliRunner().invoke(cli, ["install", "--agents"])
    assert result.exit_code == 3 and "no agent found" in result.output
    (home() / ".codex").mkdir()
    (home() / ".pi" / "agent").mkdir(parents=True)
    said = invoke("install", "--agents")
    assert "Codex CLI: installed" in said and "pi: installed" in said and "Claude" not in said
    assert not (home() / ".claude").exists()


def test_uninstall_after_the_file_changed_elsewhere_keeps_that_change() -> None:
    path = home() / HOME_FILES["claude"]
    path.parent.mkdir(parents=True)
    path.write_bytes(BEFORE["claude"])
    invoke("install", "--agents", "claude")
    # Claude Code writes its settings back with JSON.stringify(…, null, 2).
    document = orjson.loads(path.read_bytes())
    document["theme"] = "dark"
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    said = invoke("uninstall", "--agents", "claude")
    assert "the rest kept (it changed since)" in said
    left = orjson.loads(path.read_bytes())
    assert left == orjson.loads(BEFORE["claude"]) | {"theme": "dark"}


def test_a_file_the_agent_cannot_read_is_refused_in_one_line_and_left_alone() -> None:
    for agent, text in (("claude", b'{"hooks": [1]}'), ("codex", b"notify = 'x'\n")):
        path = home() / HOME_FILES[agent]
        path.parent.mkdir(parents=True)
        path.write_bytes(text)
        result = CliRunner().invoke(cli, ["install", "--agents", agent])
        assert result.exit_code == 3, result.output
        assert f"error: {path}: " in result.output and "nothing was changed" in result.output
        assert path.read_bytes() == text


def test_doctor_tells_the_truth_about_each_agent(tmp_path: Path) -> None:
    (home() / ".claude").mkdir()
    result = CliRunner().invoke(cli, ["doctor", "--agents"])
    assert result.exit_code == 0
    assert "Claude Code: not installed (run: gitclaw-compress install --agents claude)" in (
        result.output
    )
    invoke("install", "--agents", "claude", "codex")
    found = orjson.loads(invoke("doctor", "--agents", "--json"))
    states = {state["agent"]: state for state in found["agent_hooks"]}
    assert states["claude"]["installed"] and states["claude"]["current"]
    assert not states["copilot"]["installed"] and found["ok"]
    # The interpreter the hook records is gone: it would not run.
    path = home() / HOME_FILES["claude"]
    works = path.read_text()
    path.write_text(works.replace(sys.executable, str(tmp_path / "gone" / "python")))
    result = CliRunner().invoke(cli, ["doctor", "--agents"])
    assert result.exit_code == 1 and "which is gone" in result.output
    path.write_text(works)
    # The last pass failed: its exit and where its output is.
    from gitclaw_compress.ops.agenthooks.files import log_path

    log_path(dict(os.environ)).write_text(
        "2026-01-01T00:00:00Z claude: pass ended: exit 3 after 0.4s\n"
        "2026-01-01T00:00:01Z codex: pass ended: exit 0 after 0.4s\n"
    )
    result = CliRunner().invoke(cli, ["doctor", "--agents"])
    assert result.exit_code == 1, result.output
    assert "the last pass (stores claude) ended with exit 3" in result.output
    assert "stores codex" not in result.output
    log_path(dict(os.environ)).unlink()
    # Claude Code runs no hook at all with disableAllHooks (checked with 2.1.197).
    path.write_text(path.read_text().replace("{", '{"disableAllHooks": true, ', 1))
    result = CliRunner().invoke(cli, ["doctor", "--agents"])
    assert result.exit_code == 1 and "disableAllHooks is true in it" in result.output
    # Taken out by hand after install: not installed, and doctor says so.
    path.write_text("{}")
    result = CliRunner().invoke(cli, ["doctor", "--agents"])
    assert result.exit_code == 1 and "our hook was taken out after install" in result.output


def test_the_hook_logs_starts_one_pass_and_never_fails_the_agent() -> None:
    env = dict(os.environ)
    payload = '{"session_id": "s-1", "transcript_path": "/x.jsonl", "reason": "other"}'
    done = subprocess.run(
        [*hook_command("claude")], input=payload, capture_output=True, text=True, env=env
    )
    assert (done.returncode, done.stdout) == (0, "")
    lines = wait_for_hooks(env)
    assert any("claude: SessionEnd hook, session s-1 (other): started a pass" in x for x in lines)
    ended = [line for line in lines if "claude: pass ended: exit" in line]
    assert len(ended) == 1, lines
    if "stores" in COMMANDS:
        assert "exit 0" in ended[0]
    # Soon after a pass started, the hook starts none (Codex runs it after every turn);
    # once PASS_INTERVAL is over, it does again. "Soon" is set, not waited for: under load
    # the first pass (at nice +10) can itself outlast PASS_INTERVAL. A start that lies up
    # to a second ahead (rounded up, as earlier versions wrote it) is "just now" too.
    lock_path(env, "claude").write_text(f"{math.ceil(time.time()) + 1}\n")
    done = subprocess.run(hook_command("claude"), input=payload, text=True, env=env)
    assert done.returncode == 0
    assert re.search(r"a pass started \d+s ago; none started$", wait_for_hooks(env)[-1])
    lock_path(env, "claude").write_text(f"{time.time() - PASS_INTERVAL - 1:.0f}\n")
    subprocess.run(hook_command("claude"), input=payload, text=True, env=env, check=True)
    assert sum("started a pass" in line for line in wait_for_hooks(env)) == 2
    # While a pass runs (it holds the lock), the hook starts none; a payload that is not
    # JSON is no reason to fail.
    import fcntl

    with open(lock_path(env, "claude"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        done = subprocess.run(hook_command("claude"), input="not json", text=True, env=env)
    assert done.returncode == 0
    assert "the last pass still runs; none started" in wait_for_hooks(env)[-1]


def test_the_codex_hook_runs_the_notify_program_it_replaced_with_the_same_argument(
    tmp_path: Path,
) -> None:
    env = dict(os.environ)
    seen = tmp_path / "seen"
    previous = tmp_path / "previous-notify"
    previous.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}\nexit 7\n')
    previous.chmod(0o755)
    payload = '{"type": "agent-turn-complete", "thread-id": "t-1", "cwd": "/w"}'
    done = subprocess.run(
        [*hook_command("codex"), "--", str(previous), "first", payload], env=env, check=False
    )
    assert done.returncode == 7  # what the previous program said, as Codex would have seen
    assert seen.read_text() == f"first\n{payload}\n"
    assert any("codex: notify program" in line for line in wait_for_hooks(env))


@pytest.mark.parametrize("agent", list(BEFORE))
def test_install_from_another_interpreter_updates_ours_and_uninstall_still_restores(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = home() / HOME_FILES[agent]
    path.parent.mkdir(parents=True)
    path.write_bytes(BEFORE[agent])
    other = str(tmp_path / "old-venv" / "python")
    with monkeypatch.context() as patch:  # an install from another venv
        patch.setattr(sys, "executable", other)
        invoke("install", "--agents", agent)
    assert other.encode() in path.read_bytes()
    assert "updated our" in invoke("install", "--agents", agent)
    words = lifecycle_hook(agent).installed(path.read_bytes()) or []
    assert words[:6] == hook_command(agent) and other not in words
    if agent == "codex":  # still chained once, not to our older self
        assert words[6:] == ["--", "notify-send", "-t", "5"]
    invoke("uninstall", "--agents", agent)
    assert path.read_bytes() == BEFORE[agent]


def test_settings_kept_elsewhere_through_a_symlink_stay_a_symlink(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_bytes(BEFORE["claude"])
    link = home() / HOME_FILES["claude"]
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    invoke("install", "--agents", "claude")
    assert link.is_symlink() and b"gitclaw_compress" in dotfiles.read_bytes()
    invoke("uninstall", "--agents", "claude")
    assert link.is_symlink() and dotfiles.read_bytes() == BEFORE["claude"]


def test_a_read_only_agent_folder_is_one_line_and_nothing_changes() -> None:
    from test_bad_input import read_only

    path = home() / HOME_FILES["claude"]
    path.parent.mkdir(parents=True)
    path.write_bytes(BEFORE["claude"])
    with read_only(path.parent):
        result = CliRunner().invoke(cli, ["install", "--agents", "claude"])
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1 and str(path.parent) in result.output
    assert path.read_bytes() == BEFORE["claude"]
    found = orjson.loads(invoke("doctor", "--agents", "--json"))
    assert found["ok"] and not found["problems"]  # no record left that claims an install


def test_an_edit_elsewhere_keeps_it_and_still_gives_back_the_bytes_ours_replaced() -> None:
    path = home() / HOME_FILES["codex"]
    path.parent.mkdir(parents=True)
    path.write_bytes(BEFORE["codex"])
    invoke("install", "--agents", "codex")
    path.write_bytes(path.read_bytes() + b'model = "o3"\n')  # at the end: in [tui]
    said = invoke("uninstall", "--agents", "codex")
    assert "the rest kept (it changed since)" in said
    assert path.read_bytes() == BEFORE["codex"] + b'model = "o3"\n'  # and "# keep" is back


def test_uninstall_finds_every_folder_install_wrote_into(monkeypatch: pytest.MonkeyPatch) -> None:
    """One CLAUDE_CONFIG_DIR per account: uninstall, run without it, restores both."""
    accounts = [home() / ".claude-work", home() / ".claude-personal"]
    for folder in accounts:
        folder.mkdir()
        (folder / "settings.json").write_bytes(BEFORE["claude"])
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
        invoke("install", "--agents", "claude")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    said = invoke("uninstall", "--agents")
    assert said.count("as it was before install") == 2, said
    for folder in accounts:
        assert (folder / "settings.json").read_bytes() == BEFORE["claude"]
    assert not list(hooks_folder(dict(os.environ)).glob("*.json"))


def test_doctor_in_a_repository_lists_the_agents_whose_hook_is_installed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    found = orjson.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    assert found["agent_hooks"] == []
    invoke("install", "--agents", "pi")
    result = CliRunner().invoke(cli, ["doctor"])
    assert "agent hook:    pi: installed: extension on session_shutdown in " in result.output
    found = orjson.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    assert [state["agent"] for state in found["agent_hooks"]] == ["pi"]


def test_a_hook_that_cannot_log_or_start_a_pass_still_never_fails_the_agent(
    tmp_path: Path,
) -> None:
    """No data folder can be made (it would be under a file): exit 0, nothing printed, and
    Codex's previous notify program still runs with the payload."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    env = {**os.environ, "XDG_DATA_HOME": str(blocked / "data")}
    done = subprocess.run(hook_command("claude"), input=b"{}", capture_output=True, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    seen = tmp_path / "seen"
    previous = tmp_path / "previous-notify"
    previous.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}\n')
    previous.chmod(0o755)
    argv = [*hook_command("codex"), "--", str(previous), '{"thread-id": "t"}']
    assert subprocess.run(argv, env=env, check=False).returncode == 0
    assert seen.read_text() == '{"thread-id": "t"}\n'
