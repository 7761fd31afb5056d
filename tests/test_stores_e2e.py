"""The agents' own stores from end to end, with real components: a fresh HOME holds the
stores of all four agents, built from the smallest corpus session of each at its default
place; one `install --agents`; a corpus session resumed in each real CLI (offline, against
the local fake LLM server) ends and runs our hook, whose detached pass compresses every
session at rest and leaves alone the ones just written and the one a live process holds
open; every original restores byte for byte; each real CLI resumes its compressed session;
one `uninstall --agents` leaves every settings file as it was.

Waits for the detached passes by their pids (tests/agent_hook_helpers.py), never by time.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from agent_harness import SESSION_IDS, corpus_transcripts, require_agent
from agent_hook_helpers import digest, held_open, run_agent, wait_for_hooks
from fake_llm_sse import (
    FakeLLMServer,
    check_request,
    conversation,
    hermetic_cli_env,
    tool_call_ids,
)
from pi_harness import chain_reaches_root
from test_agent_hooks_real import (
    AN_HOUR,
    CHECKERS,
    QUIET_MINUTES,
    SETUPS,
    api_problems,
    compress_every_session,
    gitclaw,
    put_in_store,
    session_named,
)

from gitclaw_compress.core.lines import MARKER_BYTES
from gitclaw_compress.secrets.engine import CACHE_ENV

# What `install --agents` changes or adds, and the settings beside it that it must not touch.
SETTINGS_FILES = {
    "claude": [".claude/settings.json"],
    "codex": [".codex/config.toml"],
    "copilot": [".copilot/hooks/*.json"],
    "pi": [".pi/agent/settings.json", ".pi/agent/extensions/*"],
}


# What would move a store (docs/stores.md); this test sets none of them.
MOVED_BY = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "PI_CODING_AGENT_DIR")


def smallest_corpus_session(agent: str) -> Path:
    """The smallest corpus session of `agent` that its real CLI resumes against the fake
    server (pi: one whose parentId chain reaches the root, see pi_harness)."""
    found = [
        path for path in corpus_transcripts(agent) if agent != "pi" or chain_reaches_root(path)
    ]
    if not found:
        pytest.skip(f"no {agent} session in the shared corpus")
    return min(found, key=lambda path: path.stat().st_size)


def with_new_id(agent: str, source: Path, label: str, into: Path) -> Path:
    """A copy of `source` under another session id (every occurrence, same length), so that
    one corpus file gives an agent's store several sessions."""
    old = SESSION_IDS[agent](source)
    new = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{old}/{label}"))
    copy = into / f"{label}-{new}.jsonl"
    copy.write_bytes(source.read_bytes().replace(old.encode(), new.encode()))
    return copy


def settings_digests(home: Path) -> dict[str, str | None]:
    return {
        str(path.relative_to(home)): digest(path)
        for patterns in SETTINGS_FILES.values()
        for pattern in patterns
        for path in sorted(home.glob(pattern))
    }


def age(path: Path) -> float:
    then = time.time() - AN_HOUR
    os.utime(path, (then, then))
    return then


def test_the_stores_of_four_agents_from_install_to_uninstall(tmp_path: Path) -> None:
    for agent in SETUPS:
        require_agent(agent)
    corpus = {agent: smallest_corpus_session(agent) for agent in SETUPS}
    home, work = tmp_path / "home", tmp_path / "work"
    made = home / "tmp" / "made"
    made.mkdir(parents=True)
    work.mkdir()
    base = {**hermetic_cli_env(home), "TMPDIR": str(home / "tmp")}
    # The run's compiled secret rules (conftest.py): the stores are under test, not their compile.
    base[CACHE_ENV] = os.environ[CACHE_ENV]
    # A session is at rest after 30 quiet minutes: the ones written during the test never
    # are, however slow the machine; the corpus ones are an hour old.
    compress_every_session(home, quietMinutes=QUIET_MINUTES)
    with contextlib.ExitStack() as stack:
        servers = {
            agent: stack.enter_context(FakeLLMServer(checker=CHECKERS.get(agent, check_request)))
            for agent in SETUPS
        }
        setups = {}
        for agent, make in SETUPS.items():
            (tmp_path / agent).mkdir()  # what another tool's hook writes, and its script
            setups[agent] = make(tmp_path / agent, home, work, servers[agent].url)
            for name in MOVED_BY:  # each store at its default place, found with no variable
                setups[agent].env.pop(name, None)
        (home / ".claude.json").write_bytes((home / ".claude" / ".claude.json").read_bytes())
        env = {**base, **{k: v for setup in setups.values() for k, v in setup.env.items()}}

        # Each store: a corpus session at rest (compressed by the pass, then resumed), and
        # one the CLI resumes now, which ends and runs our hook (just written: left alone).
        at_rest: dict[str, tuple[Path, list[str], float]] = {}
        ending: dict[str, tuple[Path, list[str]]] = {}
        for agent, source in corpus.items():
            path, resume = put_in_store(agent, with_new_id(agent, source, "rest", made), home, work)
            at_rest[agent] = (path, resume, age(path))
            path, resume = put_in_store(agent, with_new_id(agent, source, "end", made), home, work)
            age(path)
            ending[agent] = (path, resume)
        # A pi session written just now, and a Claude Code one written long ago that a live
        # process holds open for writing.
        fresh, _ = put_in_store("pi", with_new_id("pi", corpus["pi"], "fresh", made), home, work)
        held, _ = put_in_store(
            "claude", with_new_id("claude", corpus["claude"], "held", made), home, work
        )
        age(held)
        originals = {
            path: path.read_bytes() for path in [*(p for p, _, _ in at_rest.values()), fresh, held]
        }
        # The corpus's Claude Code session printed a `.env` token (not live): the pass would
        # hold it for the secret (tests/test_stores_secrets.py); this user accepted it.
        gitclaw(env, "scan", "--no-archive", "--accept-all", str(at_rest["claude"][0]))
        settings_before = settings_digests(home)
        said = gitclaw(env, "install", "--agents")  # every agent found: all four
        assert said.count("installed our") == len(SETUPS), said

        def run(agent: str, resume: list[str]) -> dict[str, Any]:
            """The body of the last LLM request the CLI sent, resuming a session."""
            server = servers[agent]
            asked = len(server.requests)
            run_agent([setups[agent].argv[0], *resume], work, {**base, **setups[agent].env})
            asked_now = [
                r for r in server.requests[asked:] if r["protocol"] and r["method"] == "POST"
            ]
            assert asked_now, f"{agent} sent nothing to the fake server"
            assert api_problems(server) == [], agent
            body: dict[str, Any] = asked_now[-1]["body"]
            return body

        stack.enter_context(held_open(held))
        # The same corpus conversation, uncompressed: what the model is sent on resume.
        uncompressed = {agent: run(agent, resume) for agent, (_, resume) in ending.items()}
        log = wait_for_hooks(env)

        for agent, (path, _, mtime) in at_rest.items():
            lines = [line for line in log if f" {agent}: " in line]
            named = session_named(agent, ending[agent][0])
            assert any(named in line and "started a pass" in line for line in lines), lines
            ended = [line for line in lines if "pass ended: exit" in line]
            assert ended and all("exit 0" in line for line in ended), lines
            assert MARKER_BYTES in path.read_bytes(), f"{agent}: the session at rest was kept"
            assert len(path.read_bytes()) < len(originals[path])
            assert path.stat().st_mtime == mtime  # agents pick sessions by their mtime
            # The session that just ended is not at rest yet: a later pass takes it.
            assert MARKER_BYTES not in ending[agent][0].read_bytes(), agent
        for path in (fresh, held):
            assert path.read_bytes() == originals[path], path
        for path, original in originals.items():
            restored = gitclaw(env, "restore", str(path), "-o", "-", text=False)
            assert restored == original, path
        for agent, (_, resume, _) in at_rest.items():
            body = run(agent, resume)
            # Every message and tool call of the conversation still reaches the model.
            assert len(conversation(body)) == len(conversation(uncompressed[agent])), agent
            assert tool_call_ids(body) == tool_call_ids(uncompressed[agent]), agent
        wait_for_hooks(env)  # the resumed sessions ended too (no new pass this soon)

    gitclaw(env, "uninstall", "--agents")
    assert settings_digests(home) == settings_before
