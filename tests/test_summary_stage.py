"""The opt-in summary stage of `compress` (summary.enabled, summary.whenLevel)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, git
from fake_llm_http import FakeLLMServer, error_reply, openai_reply
from synthetic import SessionBuilder, big_text, text, tool_call

from gitclaw_compress.config import defaults, parse_config
from gitclaw_compress.core.context import context_fullness
from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats import detect
from gitclaw_compress.tokens.estimate import get_estimator

SESSION = ".GITCLAW/state/sessions/s.jsonl"
USABLE = 128_000 - 16_384 - 16_384  # fake-model: the fallback window, output and reserve


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def session_bytes(context_tokens: int) -> bytes:
    """Three turns; the last assistant message recorded ``context_tokens`` of usage."""
    s = SessionBuilder(model="fake-model")
    for n in range(3):
        s.user(f"Request {n}")
        s.assistant(tool_call(f"c{n}", "read", {"path": f"f{n}.py"}))
        s.tool_result(f"c{n}", "read", big_text(f"f{n}", 100))
        s.assistant(text(f"Read f{n}.py."), stop="stop")
    lines = s.data().split(b"\n")
    lines[-2] = lines[-2].replace(b'"totalTokens":18237', b'"totalTokens":%d' % context_tokens)
    return b"\n".join(lines)


def setup(repo: Path, context_tokens: int, **summary: Any) -> Path:
    path = repo / SESSION
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(session_bytes(context_tokens))
    (repo / "compression.json").write_text(
        json.dumps({"summary": {"enabled": True, "keepTurns": 1, **summary}})
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def compactions(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry["type"] == "compaction":
            found.append(entry)
    return found


def test_level_follows_recorded_usage_against_usable_tokens() -> None:
    for tokens, level in ((50_000, "ok"), (72_000, "warning"), (86_000, "critical")):
        found = context_fullness(
            lines_from_bytes(session_bytes(tokens)),
            detect(lines_from_bytes(session_bytes(tokens)), "session"),
            defaults().context_settings(),
            get_estimator("chars4"),
        )
        assert found.budget.usable == USABLE and found.size.source == "usage"
        assert found.size.tokens == tokens and found.level == level


def test_level_is_the_one_status_gives_with_the_configured_percentages() -> None:
    config = parse_config(b'{"tokens": {"warningPercent": 50, "criticalPercent": 60}}', "c")
    found = context_fullness(
        lines_from_bytes(session_bytes(50_000)),
        detect(lines_from_bytes(session_bytes(50_000)), "session"),
        config.context_settings(),
        get_estimator("chars4"),
    )
    assert found.level == "warning"  # 50,000 of 95,232 usable: 52.5%


def test_stage_runs_at_the_critical_level_and_not_again_after(repo: Path) -> None:
    path = setup(repo, 90_000)
    out = cli("compress", "--force", "--json", SESSION, cwd=repo)
    [stage] = json.loads(out.stdout)["summaries"]
    assert stage["ran"] is True and stage["level"] == "critical"
    assert stage["summary"]["status"] == "summarized" and stage["summary"]["round"] == 1
    [entry] = compactions(path)
    assert "EXTRACTIVE" in entry["summary"]
    # The next commit: the usage is older than the compaction, so the level is estimated
    # from what pi would now send, and the stage does not run again.
    out = cli("compress", "--force", "--json", SESSION, cwd=repo)
    [stage] = json.loads(out.stdout)["summaries"]
    assert stage["ran"] is False and stage["level"] == "ok"
    assert len(compactions(path)) == 1


def test_stage_waits_for_its_level(repo: Path) -> None:
    path = setup(repo, 75_000)  # warning
    out = cli("compress", "--force", SESSION, cwd=repo)
    assert b"summarized" not in out.stdout and compactions(path) == []
    (repo / "compression.json").write_text(
        json.dumps({"summary": {"enabled": True, "keepTurns": 1, "whenLevel": "warning"}})
    )
    out = cli("compress", "--force", SESSION, cwd=repo)
    assert b"summarized .GITCLAW/state/sessions/s.jsonl: round 1" in out.stdout
    assert len(compactions(path)) == 1


def test_stage_is_off_by_default(repo: Path) -> None:
    path = setup(repo, 90_000)
    (repo / "compression.json").write_text("{}")
    out = cli("compress", "--force", "--json", SESSION, cwd=repo)
    assert "summaries" not in json.loads(out.stdout)
    assert compactions(path) == []


def test_llm_failure_warns_in_one_line_and_does_not_block(repo: Path) -> None:
    with FakeLLMServer(default=error_reply(500, "down")) as server:
        path = setup(
            repo, 90_000, provider="openai", base_url=server.url + "/v1", model="m", max_retries=0
        )
        out = cli("compress", "--force", SESSION, cwd=repo)
    assert len(server.requests) == 1
    warnings = [line for line in out.stderr.decode().splitlines() if "summary stage" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("gitclaw-compress: warning: summary stage failed: ")
    assert "HTTP 500 (down)" in warnings[0] and "the file is unchanged" in warnings[0]
    assert compactions(path) == []
    cli("verify", SESSION, cwd=repo)  # what compress did is intact


def test_llm_failure_blocks_when_configured(repo: Path) -> None:
    with FakeLLMServer(default=error_reply(500, "down")) as server:
        path = setup(
            repo,
            90_000,
            provider="openai",
            base_url=server.url + "/v1",
            model="m",
            max_retries=0,
            blockCommitOnFailure=True,
        )
        out = cli("compress", "--force", SESSION, cwd=repo, check=False)
    assert out.returncode == 3
    assert b"HTTP 500 (down)" in out.stderr and out.stderr.count(b"\n") == 1
    assert compactions(path) == []


def test_stage_with_an_llm(repo: Path) -> None:
    with FakeLLMServer(openai_reply("## What was accomplished\nSTAGE-LLM")) as server:
        path = setup(repo, 90_000, provider="openai", base_url=server.url + "/v1", model="m")
        cli("compress", "--force", SESSION, cwd=repo)
    [entry] = compactions(path)
    assert "STAGE-LLM" in entry["summary"] and len(server.requests) == 1


def test_dry_run_and_check_never_summarize(repo: Path) -> None:
    path = setup(repo, 90_000)
    cli("compress", "--force", "--dry-run", SESSION, cwd=repo)
    cli("compress", "--force", "--check", SESSION, cwd=repo, check=False)
    assert compactions(path) == []


def test_step_summarizes_and_stages_the_file(repo: Path) -> None:
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    (repo / "README.md").write_text("x\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "init")
    path.write_bytes(session_bytes(90_000))  # the agent just wrote it: untracked
    (repo / "compression.json").write_text(
        json.dumps({"summary": {"enabled": True, "keepTurns": 1}})
    )
    out = cli("step", "--stage", cwd=repo)
    line = out.stdout.decode()
    assert line.count("\n") == 1 and "1 summarized, 1 staged" in line
    assert len(compactions(path)) == 1
    assert git(repo, "diff", "--cached", "--name-only").split() == [SESSION]
