"""A compressed Claude Code session keeps its preserved thinking valid: the real ``claude``
(2.1.332) resumes it against a fake API that runs the prefix check of models with preserved
thinking (tests/fake_preserved_thinking.py) and is never refused.

Claude Code sends back the thinking blocks of every turn it resumes, not only of the tool
loop under way, so a stub in any line it sends before the newest signed block changes that
block's prefix. 2.1.197 answered the 400 by resending the request with every thinking block
stripped, 2.1.332 strips from the failing block on (the model loses its reasoning, and each
request costs two); these tests fail on the first 400.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from agent_harness import _binary, _cli_env, claude_project_dir, require_agent
from conftest import cli, git
from fake_llm_sse import FakeLLMServer, check_claude_code_request, sealed_reasoning
from fake_preserved_thinking import PreservedThinking

MODEL = "claude-opus-5-5"  # a model with preserved thinking
NOTES = "".join(f"line {n}: what the notes say about step {n}\n" for n in range(120))


class ClaudeSession:
    """One Claude Code session in a home and project folder of its own, whose turns each read
    a notes file (a tool loop: thinking and a Read call, then thinking and a text)."""

    def __init__(self, root: Path) -> None:
        self.home, self.work = root / "home", root / "work"
        (self.home / "tmp").mkdir(parents=True)
        self.work.mkdir()
        self.notes = self.work / "notes.txt"
        self.notes.write_text(NOTES)
        self.config = self.home / ".claude"
        self.config.mkdir()
        trusted = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        settings = {
            "hasCompletedOnboarding": True,
            "theme": "dark",
            "customApiKeyResponses": {"approved": ["x"], "rejected": []},
            "projects": {str(self.work): trusted},
        }
        (self.config / ".claude.json").write_text(json.dumps(settings))
        self.id = str(uuid.uuid4())
        self.started = False

    @property
    def transcript(self) -> Path:
        return claude_project_dir(self.config, self.work) / f"{self.id}.jsonl"

    def turn(self, server: FakeLLMServer, prompt: str) -> list[dict[str, Any]]:
        """Run one turn; return the Messages requests it sent."""
        env = {
            **_cli_env(self.home),
            "CLAUDE_CONFIG_DIR": str(self.config),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "x",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        which = ["--resume", self.id] if self.started else ["--session-id", self.id]
        argv = [str(_binary("claude")), "-p", *which, prompt, "--output-format", "json"]
        argv += ["--model", MODEL, "--allowedTools", "Read"]
        before = len(server.requests)
        done = subprocess.run(
            argv,
            cwd=self.work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, f"claude exited {done.returncode}:\n{done.stderr[-3000:]}"
        self.started = True
        return [r for r in server.requests[before:] if r["protocol"] == "anthropic-messages"]


def _refused(requests: list[dict[str, Any]]) -> list[str]:
    return [
        f"request {n}: {r.get('status')}"
        for n, r in enumerate(requests)
        if r.get("status") != 200 or r["problems"]
    ]


def _signed_blocks(transcript: Path) -> int:
    count = 0
    for line in transcript.read_bytes().splitlines():
        entry = json.loads(line)
        message = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(message, dict):
            count += sum(1 for b in message["content"] if b.get("type") == "thinking")
    return count


def _compress_in_place(transcript: Path, repo: Path, *options: str) -> bytes:
    """Compress the session as a repository that commits it would, keeping the last turn,
    and put it back where Claude Code resumes it."""
    path = repo / ".claude/projects/-home-runner-work-demo-demo" / transcript.name
    path.parent.mkdir(parents=True)
    shutil.copyfile(transcript, path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    cli("compress", "--force", "--keep-turns", "1", *options, str(path), cwd=repo)
    compressed = path.read_bytes()
    assert compressed != transcript.read_bytes(), "compress changed nothing"
    restored = cli("restore", str(path), "-o", "-", cwd=repo).stdout
    assert restored == transcript.read_bytes()
    transcript.write_bytes(compressed)
    return compressed


@pytest.mark.parametrize("options", [(), ("--deep",)], ids=["default", "deep"])
def test_a_compressed_session_keeps_its_preserved_thinking_valid(
    options: tuple[str, ...], repo: Path, tmp_path: Path
) -> None:
    require_agent("claude")
    session = ClaudeSession(tmp_path / "claude")
    model = PreservedThinking(read_path=str(session.notes))
    with FakeLLMServer(checker=check_claude_code_request, anthropic=model) as server:
        built = [r for n in range(3) for r in session.turn(server, f"turn {n}: read the notes")]
        # The control: Claude Code appends, so its own resumes pass the check.
        assert _refused(built) == []
        assert model.verdicts[-1].checked == 5
        signed = _signed_blocks(session.transcript)
        assert signed == 6
        compressed = _compress_in_place(session.transcript, repo, *options)
        assert b"[gitclaw" in compressed or b"gitclawCompress" in compressed
        resumed = session.turn(server, "turn 3: read the notes again")
    assert _refused(resumed) == []
    # By default every thinking block of every turn went back, none stripped or dropped;
    # deep drops them all whole, in the kept turn too (the turn was closed): none comes back
    # with a changed prefix, and no message is empty.
    first = resumed[0]["body"]
    assert len(sealed_reasoning(first)) == (0 if options else signed)
    assert all(message["content"] for message in first["messages"])
    assert model.dropped == []


def test_summarize_keeps_no_bound_thinking_behind_its_summary(repo: Path, tmp_path: Path) -> None:
    """A summary with kept turns would replace what their thinking is bound to (the real
    claude then got the 400 on every request): summarize refuses it, and with nothing kept
    the session resumes from the summary alone without a refusal."""
    require_agent("claude")
    session = ClaudeSession(tmp_path / "claude")
    model = PreservedThinking(read_path=str(session.notes))
    with FakeLLMServer(checker=check_claude_code_request, anthropic=model) as server:
        for n in range(2):
            session.turn(server, f"turn {n}: read the notes")
        path = repo / ".claude/projects/-home-runner-work-demo-demo" / session.transcript.name
        path.parent.mkdir(parents=True)
        shutil.copyfile(session.transcript, path)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "agent run")
        refused = cli("summarize", "--offline", "--keep-turns", "1", str(path), cwd=repo)
        assert b"preserved thinking" in refused.stdout
        assert path.read_bytes() == session.transcript.read_bytes()
        cli("summarize", "--offline", "--keep-turns", "0", str(path), cwd=repo)
        shutil.copyfile(path, session.transcript)
        resumed = session.turn(server, "turn 2: read the notes again")
    assert _refused(resumed) == []
    assert len(resumed[0]["body"]["messages"]) < 6  # the summary, not the turns
