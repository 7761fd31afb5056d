"""Each real CLI, offline against the local fake LLM server in a fresh HOME, runs the hook
`install --agents` wrote when a session ends, beside the hook another tool had configured
there; `uninstall --agents` then leaves that agent's settings as they were, byte for byte.

Checked with Claude Code 2.1.332, Codex CLI 0.171.0, Copilot CLI 1.0.102 and pi 0.73.1
(before: Claude Code 2.1.197, Codex CLI 0.169.0)
(docs/agent-hooks.md). The hook starts the pass detached; the test waits for it by pid.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from agent_harness import (
    COPILOT_XDG_CACHE,
    claude_project_dir,
    claude_session_id,
    codex_session_id,
    copilot_session_id,
    require_agent,
)
from agent_hook_helpers import digest, run_agent, session_bytes, wait_for_hooks
from fake_llm_sse import FakeLLMServer, check_claude_code_request, check_request, hermetic_cli_env
from pi_harness import copy_session_for_pi

from gitclaw_compress.cli import COMMANDS
from gitclaw_compress.secrets.engine import CACHE_ENV

PROMPT = "hello"
AN_HOUR = 3600  # the age of a session at rest here (Codex zips a rollout idle for 7 days)
QUIET_MINUTES = 30  # stores.quietMinutes here: less than AN_HOUR, more than any test takes


def put_at_rest(agent: str, home: Path, work: Path) -> tuple[Path, list[str]]:
    """A session written an hour ago where the agent keeps them, and the arguments that
    resume it: the pass our hook starts compresses it, and the CLI resumes the result."""
    made = home / "tmp" / f"{agent}-at-rest.jsonl"
    made.write_bytes(session_bytes(agent))
    path, resume = put_in_store(agent, made, home, work)
    then = time.time() - AN_HOUR
    os.utime(path, (then, then))
    # Quiet for 30 minutes, not the default 5: the sessions the CLIs write during the test
    # are never at rest, however late a pass (at nice +10) gets to them on a loaded machine.
    compress_every_session(home, quietMinutes=QUIET_MINUTES)
    return path, resume


def compress_every_session(home: Path, **stores: int) -> None:
    """Settings under `home` that compress a session however small or short it is (and
    the `stores` settings given)."""
    config = home / ".config" / "gitclaw-compress" / "compression.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    thresholds = {"sizeThresholdKB": 0, "turnThresholdBeforeCompress": 1}
    config.write_bytes(orjson.dumps({"session": thresholds, "stores": stores}))


def put_in_store(agent: str, made: Path, home: Path, work: Path) -> tuple[Path, list[str]]:
    """A copy of the session file `made` where the agent keeps its sessions under `home`
    (for the CLIs that run in `work`), and the arguments that resume it."""
    if agent == "claude":
        session = claude_session_id(made)
        path = claude_project_dir(home / ".claude", work) / f"{session}.jsonl"
        resume = ["-p", "--resume", session, "next", "--output-format", "json"]
    elif agent == "codex":
        session = codex_session_id(made)
        day = datetime.datetime.now(datetime.UTC).strftime("%Y/%m/%d")
        path = home / ".codex" / "sessions" / day / f"rollout-2026-01-02T10-00-00-{session}.jsonl"
        resume = ["exec", "--skip-git-repo-check", "resume", session, "next"]
    elif agent == "copilot":
        session = copilot_session_id(made)
        path = home / ".copilot" / "session-state" / session / "events.jsonl"
        resume = [f"--resume={session}", "-p", "next", "--allow-all-tools"]
    else:  # pi refuses a session whose header's cwd is not there
        made = copy_session_for_pi(made, home / "tmp" / "pi", work)
        path = home / ".pi" / "agent" / "sessions" / "--elsewhere--" / made.name
        resume = ["--provider", "fake", "--model", "fake-model", "--session", str(path), "-p"]
        resume.append("next")
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(made, path)
    return path, resume


def api_problems(server: FakeLLMServer) -> list[str]:
    """What the fake server's checker found wrong in the LLM requests (the real API's 400s)."""
    asked = [r for r in server.requests if r["protocol"] and r["method"] == "POST"]
    return [problem for request in asked for problem in request["problems"]]


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
        # SessionEnd hooks get 1.5 s by default; on a loaded machine the start of ours alone
        # may take that long (docs/agent-hooks.md).
        "CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "60000",
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


def gitclaw(env: dict[str, str], *args: str, exits: int = 0, text: bool = True) -> Any:
    """What a command printed (bytes when not `text`), once it exited with `exits`."""
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == exits, done.stderr.decode()
    return done.stdout.decode("utf-8", "replace") if text else done.stdout


def test_one_install_then_each_real_cli_runs_our_hook_beside_the_other_one(
    tmp_path: Path,
) -> None:
    """One HOME with all four agents, each with a hook another tool configured and a session
    at rest: one `install --agents`; a session in each real CLI runs our hook, whose pass
    compresses the session at rest, which that CLI then resumes; one `uninstall --agents`
    leaves every settings file as it was."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "tmp").mkdir(parents=True)
    work.mkdir()
    base = {**hermetic_cli_env(home), "TMPDIR": str(home / "tmp")}
    # The run's compiled secret rules (conftest.py): the hook is under test, not their compile.
    base[CACHE_ENV] = os.environ[CACHE_ENV]
    with contextlib.ExitStack() as stack:
        servers = {
            agent: stack.enter_context(FakeLLMServer(checker=CHECKERS.get(agent, check_request)))
            for agent in SETUPS
        }
        setups = {}
        for agent, make in SETUPS.items():
            (tmp_path / agent).mkdir()  # what the other tool's hook writes, and its script
            setups[agent] = make(tmp_path / agent, home, work, servers[agent].url)
        every = {key: value for setup in setups.values() for key, value in setup.env.items()}
        env = {**base, **every}
        resting = {agent: put_at_rest(agent, home, work) for agent in SETUPS}
        originals = {agent: path.read_bytes() for agent, (path, _) in resting.items()}
        before = {agent: digest(setup.settings) for agent, setup in setups.items()}
        said = gitclaw(env, "install", "--agents")  # every agent found: all four
        assert said.count("installed our") == len(SETUPS), said

        def run(agent: str, argv: list[str]) -> None:
            server = servers[agent]
            asked = len(server.requests)
            run_agent(argv, work, {**base, **setups[agent].env})
            assert len(server.requests) > asked, f"{agent} sent nothing to the fake server"
            assert api_problems(server) == [], agent

        for agent, setup in setups.items():
            run(agent, setup.argv)
        log = wait_for_hooks(env)
        for agent, setup in setups.items():
            path = resting[agent][0]
            lines = [line for line in log if f" {agent}: " in line]
            sessions = [found for found in home.glob(SESSION_FILES[agent]) if found != path]
            assert len(sessions) == 1, sessions
            named = session_named(agent, sessions[0])
            assert any(named in line and "started a pass" in line for line in lines), lines
            ended = [line for line in lines if "pass ended: exit" in line]
            assert ended, lines
            assert setup.other_ran.exists(), f"{agent}: the hook that was there did not run"
            if agent == "codex":  # the same argument ours got: the payload of the same turn
                first, payload = setup.other_ran.read_text().splitlines()
                assert first == "first" and json.loads(payload)["thread-id"] in named
            if "stores" not in COMMANDS:
                continue
            # The pass compressed the session at rest, restorably, and the CLI resumes it;
            # the session just written is left alone.
            assert all("exit 0" in line for line in ended), lines
            assert b"gitclawCompress" in path.read_bytes()
            assert b"gitclawCompress" not in sessions[0].read_bytes()
            assert gitclaw(env, "restore", str(path), "-o", "-", text=False) == originals[agent]
            run(agent, [setup.argv[0], *resting[agent][1]])
        wait_for_hooks(env)  # the resumed sessions ended too (no new pass this soon)

    doctor = gitclaw(env, "doctor", "--agents", exits=0 if "stores" in COMMANDS else 1)
    for setup in setups.values():
        assert f"in {setup.settings}" in doctor
    assert doctor.count("; last: ") == len(SETUPS)
    gitclaw(env, "uninstall", "--agents")
    assert {agent: digest(setup.settings) for agent, setup in setups.items()} == before
