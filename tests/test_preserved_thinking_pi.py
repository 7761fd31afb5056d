"""pi with an Anthropic model sends every turn's signed thinking back, as Claude Code does: a
compressed session of a model with preserved thinking still resumes in the real ``pi``
against a fake API that runs the prefix check (tests/fake_preserved_thinking.py). Before
the pi format knew of it, the kept turn's thinking was refused with the 400 and pi exited 1.
The format's own rule on synthetic sessions: test_preserved_thinking_format.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, git
from fake_llm_sse import FakeLLMServer, sealed_reasoning
from fake_preserved_thinking import PreservedThinking
from pi_harness import _hermetic_env, find_pi, require_pi

MODEL = "claude-opus-5-5"
NOTES = "".join(f"line {n}: what the notes say about step {n}\n" for n in range(120))


class PiSession:
    """A pi session file and an agent folder whose provider speaks Anthropic Messages to
    the fake server; each turn reads a notes file (thinking and a read call, then text)."""

    def __init__(self, root: Path) -> None:
        self.home, self.agent, self.work = root / "home", root / "agent", root / "work"
        for folder in (self.home, self.agent, self.work):
            folder.mkdir(parents=True)
        self.notes = self.work / "notes.txt"
        self.notes.write_text(NOTES)
        self.file = root / "sessions" / "session.jsonl"
        self.file.parent.mkdir()
        settings = {"compaction": {"enabled": False}, "retry": {"enabled": False}}
        (self.agent / "settings.json").write_text(json.dumps(settings))

    def turn(self, server: FakeLLMServer, prompt: str) -> tuple[int, list[dict[str, Any]]]:
        """Run one turn: pi's exit code and the requests it sent."""
        model = {"id": MODEL, "reasoning": True, "contextWindow": 200000, "maxTokens": 8192}
        provider = {"baseUrl": server.url, "api": "anthropic-messages", "apiKey": "x"}
        providers = {"fake": {**provider, "models": [model]}}
        (self.agent / "models.json").write_text(json.dumps({"providers": providers}))
        pi = find_pi()
        assert pi is not None
        argv = [str(pi), "--provider", "fake", "--model", MODEL, "--session", str(self.file)]
        before = len(server.requests)
        done = subprocess.run(
            [*argv, "-p", prompt],
            cwd=self.work,
            env=_hermetic_env(self.home, self.agent),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        sent = [r for r in server.requests[before:] if r["protocol"] == "anthropic-messages"]
        return done.returncode, sent


def _statuses(requests: list[dict[str, Any]]) -> list[object]:
    return [r.get("status") for r in requests]


@pytest.mark.parametrize("options", [(), ("--deep",)], ids=["default", "deep"])
def test_a_compressed_pi_session_keeps_its_preserved_thinking_valid(
    options: tuple[str, ...], repo: Path, tmp_path: Path
) -> None:
    require_pi()
    session = PiSession(tmp_path / "pi")
    model = PreservedThinking(read_path=str(session.notes), read_tool=("read", "path"))
    with FakeLLMServer(anthropic=model) as server:
        built = []
        for n in range(3):
            code, sent = session.turn(server, f"turn {n}: read notes.txt")
            assert code == 0
            built += sent
        assert set(_statuses(built)) == {200}  # the control: pi appends
        assert model.verdicts[-1].checked == 5
        path = repo / ".pi/sessions/session.jsonl"
        path.parent.mkdir(parents=True)
        shutil.copyfile(session.file, path)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "agent run")
        cli("compress", "--force", "--keep-turns", "1", *options, str(path), cwd=repo)
        restored = cli("restore", str(path), "-o", "-", cwd=repo).stdout
        assert restored == session.file.read_bytes()
        shutil.copyfile(path, session.file)
        code, resumed = session.turn(server, "turn 3: read notes.txt again")
    assert (code, _statuses(resumed)) == (0, [200, 200])
    # By default every block goes back as it was; deep empties them all (pi leaves an empty
    # block out), in the kept turn too, so that none comes back with a changed prefix.
    assert len(sealed_reasoning(resumed[0]["body"])) == (0 if options else 6)
    assert model.dropped == []
