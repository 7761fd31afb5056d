"""Each real CLI, offline against the local fake LLM server in a fresh HOME, runs the hook
`install --agents` wrote when a session ends, beside the hook another tool had configured
there; `uninstall --agents` then leaves that agent's settings as they were, byte for byte.

Checked with Claude Code 2.1.197, Codex CLI 0.169.0, Copilot CLI 1.0.102 and pi 0.73.1
(docs/agent-hooks.md). The hook starts the pass detached; the test waits for it by pid.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from agent_harness import COPILOT_XDG_CACHE, require_agent
from agent_hook_helpers import digest, wait_for_hooks
from fake_llm_sse import FakeLLMServer, check_claude_code_request, check_request, hermetic_cli_env

from gitclaw_compress.cli import COMMANDS

PROMPT = "hello"


@dataclass
class Setup:
    env: dict[str, str]
    argv: list[str]
    settings: Path  # the file our install changes or adds
    other_ran: Path  # what the other tool's hook writes when it runs


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def claude(root: Path, home: Path, work: Path, url: str) -> Setup:
    config = home / ".claude"
    config.mkdir()
    other = root / "other-tool.out"
    trust = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    first_start = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": ["x"], "rejected": []},
        "projects": {str(work): trust},
    }
    (config / ".claude.json").write_text(json.dumps(first_start))
    hook = {"type": "command", "command": f"cat > {shlex.quote(str(other))}"}
    settings = {"model": "sonnet", "hooks": {"SessionEnd": [{"hooks": [hook]}]}}
    (config / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    env = {
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "x",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    argv = [str(require_agent("claude")), "-p", PROMPT, "--output-format", "json"]
    return Setup(env, argv, config / "settings.json", other)


def codex(root: Path, home: Path, work: Path, url: str) -> Setup:
    codex_home = home / ".codex"
    codex_home.mkdir()
    other = root / "other-tool.out"
    notifier = _script(root / "notifier", f'printf "%s\\n" "$@" > {shlex.quote(str(other))}')
    config = (
        f'# the user\'s own\nnotify = [{json.dumps(str(notifier))}, "first"]\n'
        f'openai_base_url = {json.dumps(url + "/v1")}\nmodel = "gpt-5.1-codex-mini"\n'
    )
    (codex_home / "config.toml").write_text(config)
    env = {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "x"}
    argv = [str(require_agent("codex")), "exec", "--skip-git-repo-check", PROMPT]
    return Setup(env, argv, codex_home / "config.toml", other)


def copilot(root: Path, home: Path, work: Path, url: str) -> Setup:
    hooks = home / ".copilot" / "hooks"
    hooks.mkdir(parents=True)
    other = root / "other-tool.out"
    hook = {"type": "command", "bash": f"cat > {shlex.quote(str(other))}", "timeoutSec": 30}
    (hooks / "other-tool.json").write_text(
        json.dumps({"version": 1, "hooks": {"sessionEnd": [hook]}})
    )
    env = {
        "XDG_CACHE_HOME": str(COPILOT_XDG_CACHE),
        "COPILOT_PROVIDER_BASE_URL": url + "/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "x",
        "COPILOT_OFFLINE": "true",
        "COPILOT_MODEL": "fake-model",
    }
    argv = [str(require_agent("copilot")), "-p", PROMPT, "--allow-all-tools"]
    return Setup(env, argv, hooks / "gitclaw-compress.json", other)


def pi(root: Path, home: Path, work: Path, url: str) -> Setup:
    agent = home / ".pi" / "agent"
    (agent / "extensions").mkdir(parents=True)
    other = root / "other-tool.out"
    model = {"id": "fake-model", "contextWindow": 128000, "maxTokens": 4096}
    provider = {"baseUrl": url + "/v1", "api": "openai-completions", "apiKey": "x"}
    models = {"providers": {"fake": {**provider, "models": [model]}}}
    (agent / "models.json").write_text(json.dumps(models))
    settings = {"compaction": {"enabled": False}, "retry": {"enabled": False}}
    (agent / "settings.json").write_text(json.dumps(settings))
    (agent / "extensions" / "other-tool.ts").write_text(
        'import { writeFileSync } from "node:fs";\n'
        "export default function (pi: any) {\n"
        f'  pi.on("session_shutdown", () => writeFileSync({json.dumps(str(other))}, "ran"));\n'
        "}\n"
    )
    env = {"PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    argv = [str(require_agent("pi")), "--provider", "fake", "--model", "fake-model", "-p", PROMPT]
    return Setup(env, argv, agent / "extensions" / "gitclaw-compress.ts", other)


SETUPS = {"claude": claude, "codex": codex, "copilot": copilot, "pi": pi}
CHECKERS = {"claude": check_claude_code_request}
# How the hook names the session in the log, from the file the CLI wrote.
SESSION_FILES = {
    "claude": ".claude/projects/*/*.jsonl",
    "codex": ".codex/sessions/*/*/*/rollout-*.jsonl",
    "copilot": ".copilot/session-state/*/events.jsonl",
    "pi": ".pi/agent/sessions/*/*.jsonl",
}


def session_named(agent: str, session: Path) -> str:
    if agent == "claude":
        return f"session {session.stem} "
    if agent == "codex":
        return f"thread {session.stem[-36:]} "
    if agent == "copilot":
        return f"session {session.parent.name} "
    return f"session {session} "


def gitclaw(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("agent", list(SETUPS))
def test_the_real_cli_runs_our_hook_beside_the_other_one_and_uninstall_restores_it(
    agent: str, tmp_path: Path
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "tmp").mkdir(parents=True)
    work.mkdir()
    with FakeLLMServer(checker=CHECKERS.get(agent, check_request)) as server:
        setup = SETUPS[agent](tmp_path, home, work, server.url)
        env = {**hermetic_cli_env(home), "TMPDIR": str(home / "tmp"), **setup.env}
        before = digest(setup.settings)
        assert "installed our" in gitclaw(env, "install", "--agents", agent)
        ran = subprocess.run(
            setup.argv,
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert server.requests, "the CLI sent nothing to the fake server"
    lines = [line for line in wait_for_hooks(env) if f" {agent}: " in line]
    sessions = list(home.glob(SESSION_FILES[agent]))
    assert len(sessions) == 1, sessions
    named = session_named(agent, sessions[0])
    assert any(named in line and "started a pass" in line for line in lines), lines
    ended = [line for line in lines if "pass ended: exit" in line]
    assert ended, lines
    if "stores" in COMMANDS:
        assert all("exit 0" in line for line in ended), lines
    assert setup.other_ran.exists(), "the hook configured before ours did not run"
    if agent == "codex":  # the same argument ours got: the payload of the same turn
        first, payload = setup.other_ran.read_text().splitlines()
        assert first == "first" and json.loads(payload)["thread-id"] in named

    doctor = gitclaw(env, "doctor", "--agents")
    assert f"installed: {setup.settings.name}" not in doctor  # the full path is named
    assert f"in {setup.settings}" in doctor and "last: " in doctor
    gitclaw(env, "uninstall", "--agents", agent)
    assert digest(setup.settings) == before
