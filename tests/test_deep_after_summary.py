"""`summarize` then `compress --deep` on a Claude Code session whose last turn holds half its
bytes. At their defaults the summary keeps nothing after it, as Claude Code's own compaction,
and quotes the last request; with `--keep-tokens 20000` (pi's rule) it keeps the newest
tokens, all in that turn, and deep stubs the kept turn's outputs over
`session.deepKeptMaxBytes`. Either way the real `claude` (offline, against the fake API) then
sends a request at least 60% smaller than for the session as it was, with every kept tool
call and its result, and no message empty. `bench/deep.py --summarized --resume` measures
every corpus file the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_harness import require_agent, run_resume
from conftest import cli, commit_session, git
from fake_llm_http import FakeLLMServer, openai_reply
from fake_llm_sse import conversation, request_size, tool_call_ids
from synthetic import big_text
from synthetic_claude import ClaudeSession, one_turn, text
from test_claude_context import settings_only

from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats.claude.rules import FORMAT

CLAUDE_PATH = ".claude/projects/-home-dev-project/5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11.jsonl"
KEY_ENV = "GITCLAW_TEST_SUMMARY_KEY"
SUMMARY = "## What was accomplished\nLLM-SUMMARY-TEXT: the modules were fixed. "


def heavy_last_turn(turns: int = 8, reads: int = 6) -> bytes:
    """`turns` ordinary turns, then one that reads `reads` large files (40 KB each)."""
    session = ClaudeSession()
    for turn in range(turns):
        one_turn(session, turn)
    session.user("Please read the logs.")
    for n in range(reads):
        session.tool_use(f"toolu_log{n}", "Read", {"file_path": f"/home/dev/project/log{n}.txt"})
        body = big_text(f"log {n}", 1000)
        session.tool_result(f"toolu_log{n}", body, {"type": "text", "file": {"content": body}})
    session.assistant(text("The logs show the same failure each time."))
    return session.data()


def last_turn_share(data: bytes) -> float:
    lines = lines_from_bytes(data)
    start = [view.number for view in FORMAT.views(lines) if view.turn_start][-1]
    return sum(len(line.data) + 1 for line in lines[start - 1 :]) / len(data)


@pytest.mark.parametrize("keep", [(), ("--keep-tokens", "20000")], ids=["default", "tokens"])
def test_summarize_then_deep_cuts_the_request_by_60_percent(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: tuple[str, ...]
) -> None:
    require_agent("claude")
    data = heavy_last_turn()
    assert last_turn_share(data) >= 0.5
    path = commit_session(repo, CLAUDE_PATH, data)
    monkeypatch.setenv(KEY_ENV, "test-" + "summary-key")
    with FakeLLMServer(default=openai_reply(SUMMARY)) as server:
        summary: dict[str, object] = {"provider": "openai", "base_url": server.url + "/v1"}
        summary |= {"model": "m", "api_key_env": KEY_ENV, "max_retries": 0}
        (repo / "compression.json").write_text(json.dumps({"summary": summary}))
        done = cli("summarize", "--json", *keep, CLAUDE_PATH, cwd=repo)
    assert json.loads(done.stdout)["status"] == "summarized"
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "summarized")
    summarized = path.read_bytes()
    cli("compress", "--deep", CLAUDE_PATH, cwd=repo)
    assert cli("restore", CLAUDE_PATH, "-o", "-", cwd=repo).stdout == summarized

    source = tmp_path / "before.jsonl"
    source.write_bytes(data)
    # The original's run, the same for both cases (compared by content and size): shared.
    before = run_resume("claude", source, tmp_path=tmp_path / "before", shared=True).check()
    after = run_resume("claude", path, tmp_path=tmp_path / "after").check()
    assert "LLM-SUMMARY-TEXT" in after.request["raw"]
    assert "log 5 line 500:" in before.request["raw"]
    assert "log 5 line 500:" not in after.request["raw"]
    if not keep:
        # Nothing kept: no tool call is sent, and the last request is the task it resumes.
        assert not tool_call_ids(after.body)
        assert "Please read the logs." in after.request["raw"]
    else:
        # The newest reads, kept after the summary, went as stubs, each call with its result
        # (the fake API refuses a call without it).
        kept = tool_call_ids(after.body)
        assert kept and kept == tool_call_ids(before.body)[-len(kept) :] and "toolu_log5" in kept
    sent = conversation(after.body)
    assert all(message.get("content") or settings_only(message) for message in sent)
    sizes = request_size(before.request), request_size(after.request)
    print(f"request {sizes[0]:,} -> {sizes[1]:,} bytes; last turn {last_turn_share(data):.0%}")
    assert sizes[1] <= 0.4 * sizes[0], sizes
