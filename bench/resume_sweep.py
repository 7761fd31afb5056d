"""Every corpus transcript through its agent's real CLI: what the suite checks on one compacted
and one plain file per agent (tests/agent_harness.py `representative_transcripts`), here on
all of them. A script, not a test: it prints numbers.

    python bench/resume_sweep.py [--agent claude] [--no-view] [--deep]

For each Claude Code, Codex and Copilot CLI file of ../shared/corpus: the real CLI's first
request on resume (offline, against the tests' fake server) against `context`'s model of it
(the format's `resume`: messages, roles, tool call ids; the checks of
tests/test_claude_context.py, tests/codex_requests.py and tests/test_copilot_conversation.py),
then the same for the file compressed at `--keep-turns 1` (with `--deep`, `compress --deep`);
for Claude Code, the interactive view (`claude --resume` under tmux) of both shows the text the
tests wait for. Each row says
what matched, the messages sent, the request's bytes before and after, and the seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from agent_harness import (  # noqa: E402 (the tests' folder is not a package)
    AGENTS,
    AgentError,
    claude_interactive_screen,
    compacted,
    corpus_transcripts,
    find_agent,
    run_resume,
    view_text,
)
from codex_requests import compare  # noqa: E402

# The same repository layout, git identity and runner as bench/deep.py (its --resume).
from deep import GIT_ENV, LAYOUT, _run  # noqa: E402
from fake_llm_sse import conversation  # noqa: E402
from test_claude_context import assert_first_request_matches  # noqa: E402
from test_copilot_conversation import assert_matches_request  # noqa: E402

from gitclaw_compress.core.lines import lines_from_bytes  # noqa: E402
from gitclaw_compress.formats import FORMATS  # noqa: E402
from gitclaw_compress.model import Conversation  # noqa: E402


def compressed(agent: str, source: Path, work: Path, env: dict[str, str], *options: str) -> Path:
    """The file compressed at --keep-turns 1 (and `options`) in a repository that commits it."""
    repo = work / "repo"
    repo.mkdir()
    _run(["git", "init", "-q"], repo, env)
    relpath = LAYOUT[agent].format(stem=source.stem)
    (repo / relpath).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, repo / relpath)
    tool = [sys.executable, "-m", "gitclaw_compress"]
    _run([*tool, "scan", relpath, "--accept-all"], repo, env)  # the corpus's one finding
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-qm", "agent run"], repo, env)
    _run([*tool, "compress", "--force", "--keep-turns", "1", *options, relpath], repo, env)
    return repo / relpath


def resumed(agent: str, data: bytes) -> Conversation:
    fmt = FORMATS[agent]
    return fmt.resume(list(fmt.views(lines_from_bytes(data))))


CHECKS: dict[str, Callable[[Conversation, dict[str, Any]], object]] = {
    "claude": assert_first_request_matches,
    "codex": lambda ours, body: [] if not (found := compare(ours, body)) else _fail(found),
    "copilot": assert_matches_request,
}


def _fail(problems: list[str]) -> None:
    raise AssertionError("; ".join(problems[:3]))


def request(agent: str, path: Path, work: Path) -> dict[str, Any]:
    """The first request on resume against `resume`: matched or why not, messages, bytes."""
    started = time.perf_counter()
    row: dict[str, Any] = {}
    try:
        body = run_resume(agent, path, tmp_path=work).check().body
        row["bytes"] = len(orjson.dumps(body))
        row["sent"] = len(conversation(body))
        CHECKS[agent](resumed(agent, path.read_bytes()), body)
        row["match"] = "yes"
    except (AssertionError, AgentError) as error:
        row["match"] = "NO: " + " ".join(str(error).split())[:120]
    row["seconds"] = time.perf_counter() - started
    return row


def view(path: Path, work: Path) -> str:
    text = view_text(path)
    started = time.perf_counter()
    try:
        claude_interactive_screen(path, tmp_path=work, expect=text)
        verdict = "shown"
    except AgentError as error:
        verdict = "NOT SHOWN: " + " ".join(str(error).split())[:80]
    return f"{verdict} ({time.perf_counter() - started:.1f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", choices=AGENTS, action="append")
    parser.add_argument("--no-view", action="store_true", help="skip Claude Code's tmux view")
    parser.add_argument("--deep", action="store_true", help="compress --deep")
    options = parser.parse_args()
    agents = options.agent or list(AGENTS)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    failures = 0
    with tempfile.TemporaryDirectory() as temp:
        home = Path(temp) / "home"
        home.mkdir()
        env = {**os.environ, **GIT_ENV, "HOME": str(home)}
        for agent in agents:
            if find_agent(agent) is None:
                print(f"{agent}: not installed (.ci/install-agents.sh)")
                continue
            for index, source in enumerate(corpus_transcripts(agent)):
                work = Path(temp) / f"{agent}-{index}"
                work.mkdir()
                small = compressed(agent, source, work, env, *(["--deep"] * options.deep))
                # Folders of one length: the CLIs send their working directory.
                rows = {
                    "original": request(agent, source, work / "original"),
                    "compressed": request(agent, small, work / "compress"),
                }
                kind = "compacted" if compacted(agent, source) else "plain"
                print(f"{agent}/{source.name} ({kind})", flush=True)
                for name, row in rows.items():
                    failures += row["match"] != "yes"
                    line = f"  {name:<10} match {row['match']}; sent {row.get('sent', '-')}"
                    line += f" items, {row.get('bytes', 0):,} bytes, {row['seconds']:.1f} s"
                    print(line, flush=True)
                if agent == "claude" and not options.no_view:
                    for name, path in (("original", source), ("compressed", small)):
                        shown = view(path, work / f"view-{name}")
                        failures += not shown.startswith("shown")
                        print(f"  view of {name}: {shown}", flush=True)
    print(f"{failures} checks failed")


if __name__ == "__main__":
    main()
