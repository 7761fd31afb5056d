"""Where each real agent CLI keeps its sessions when its environment variable moves the
store: `gitclaw-compress stores AGENT` compresses a session placed where `Format.home` says,
then the real CLI resumes (or continues) it there against the local fake server and appends
to it, and `restore` gives the original back with the appended lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import synthetic
import synthetic_claude
import synthetic_codex
import synthetic_copilot
from agent_harness import PLACERS, Placement, find_agent
from fake_llm_sse import FakeLLMServer, check_claude_code_request, check_request
from pi_harness import find_pi

from gitclaw_compress.ops.stores import homes, session_files
from gitclaw_compress.secrets.engine import CACHE_ENV


def move_claude(where: Placement, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    moved = tmp_path / "claude-elsewhere"
    shutil.move(where.env["CLAUDE_CONFIG_DIR"], moved)
    return moved, {"CLAUDE_CONFIG_DIR": str(moved)}


def move_codex(where: Placement, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    moved = tmp_path / "codex-elsewhere"
    shutil.move(where.env["CODEX_HOME"], moved)
    return moved, {"CODEX_HOME": str(moved)}


def move_copilot(where: Placement, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    moved = tmp_path / "copilot-elsewhere"
    shutil.move(str(Path(where.env["HOME"]) / ".copilot"), moved)
    # XDG_CONFIG_HOME does not move it (1.0.102): set beside, the session is still found.
    return moved, {"COPILOT_HOME": str(moved), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def move_pi(where: Placement, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """pi `-c` continues the newest session of its session folder: in
    PI_CODING_AGENT_SESSION_DIR, the files lie directly."""
    moved = tmp_path / "pi-sessions"
    moved.mkdir()
    shutil.move(str(where.placed), moved / where.placed.name)
    where.argv[where.argv.index("--session") : where.argv.index("--session") + 2] = ["-c"]
    return moved, {"PI_CODING_AGENT_SESSION_DIR": str(moved)}


CASES: dict[str, tuple[Callable[[], bytes], Callable[..., tuple[Path, dict[str, str]]]]] = {
    "claude": (lambda: synthetic_claude.typical_session(2).data(), move_claude),
    "codex": (lambda: synthetic_codex.typical_rollout(2).data(), move_codex),
    "copilot": (lambda: synthetic_copilot.typical_events().data(), move_copilot),
    "pi": (lambda: synthetic.typical_session(2).data(), move_pi),
}


@pytest.mark.parametrize("agent", sorted(CASES))
def test_the_real_cli_uses_the_store_that_home_names(agent: str, tmp_path: Path) -> None:
    if (find_pi() if agent == "pi" else find_agent(agent)) is None:
        pytest.skip(f"{agent} is not installed")
    make, move = CASES[agent]
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_bytes(make())
    checker = check_claude_code_request if agent == "claude" else check_request
    with FakeLLMServer(checker=checker) as server:
        where = PLACERS[agent](transcript, tmp_path, server.url, "next")
        before = where.placed.read_bytes()
        store, variables = move(where, tmp_path)
        env = {**where.env, **variables}
        home = next(home for home in homes(env) if home.agent == agent)
        assert home.root == store
        assert home.moved_by in variables
        found = session_files(home)
        assert len(found) == 1
        ours = {
            **env,
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            CACHE_ENV: os.environ[CACHE_ENV],  # the run's compiled secret rules (conftest.py)
        }
        settings = tmp_path / "config" / "gitclaw-compress" / "compression.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(
            '{"session": {"sizeThresholdKB": 0, "turnThresholdBeforeCompress": 1},'
            ' "stores": {"quietMinutes": 0}}'
        )
        tool = [sys.executable, "-m", "gitclaw_compress"]
        subprocess.run([*tool, "stores", agent], env=ours, check=True, capture_output=True)
        compressed = found[0].read_bytes()
        assert len(compressed) < len(before)
        done = subprocess.run(
            where.argv,
            cwd=where.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=240,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert server.requests, "the CLI did not find the session in the moved store"
    after = found[0].read_bytes()
    assert after.startswith(compressed) and len(after) > len(compressed)  # it appended there
    restored = subprocess.run(
        [*tool, "restore", str(found[0]), "-o", "-"], env=ours, check=True, capture_output=True
    ).stdout
    assert restored == before + after[len(compressed) :]
