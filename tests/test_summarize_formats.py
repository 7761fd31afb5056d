"""`summarize` on every format, through the real commands, in hermetic repositories.

One list, `CASES`: a format added to it gets every check. Each case gives a synthetic session
of five turns (file tools, a shell command, a failed call, a decision, a constraint), how its
agent appends one more turn after a record, the keep option its record supports, and how its
real CLI is resumed. The checks:

- `summarize --offline` appends the agent's own record and changes no original byte; `context`
  and `status` show what the agent will send now; `compress` afterwards keeps the last turns
  and the record byte for byte; `restore` of a summarized file is the file itself; a second
  `summarize` chains over the first;
- the LLM path against the local fake server: the prompt holds the facts read from the
  format's own tool calls, the second round holds the first summary, a failed request writes
  nothing;
- a format whose record cannot keep messages (Copilot CLI) refuses `--keep-tokens` in one
  line, before any request to the LLM;
- the real CLI resumes the summarized file (synthetic, and each corpus file of four turns or
  more): the first request holds the summary, none of the summarized prompts, the kept tail
  with every tool pair, sealed reasoning only as it was, and is at least 60% smaller; after two
  chained rounds it resumes from the newest.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_harness import corpus_transcripts, require_agent, run_resume
from conftest import cli, corpus_files, git
from fake_llm_http import FakeLLMServer, error_reply, openai_reply
from fake_llm_sse import conversation, sealed_reasoning, tool_call_ids
from flow_helpers import json_strings
from pi_harness import chain_reaches_root, require_pi, run_pi_resume
from synthetic import SessionBuilder
from synthetic import big_text as pi_big_text
from synthetic import text as pi_text
from synthetic import thinking as pi_thinking
from synthetic import tool_call as pi_tool_call
from synthetic_claude import SESSION_ID as CLAUDE_SESSION_ID
from synthetic_claude import ClaudeSession
from synthetic_claude import signed_thinking as claude_thinking
from synthetic_claude import text as claude_text
from synthetic_codex import RolloutBuilder, listing
from synthetic_copilot import EventsBuilder, big_text
from test_claude_summary import newest_turns_share

from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats import FORMATS
from gitclaw_compress.model import Conversation
from gitclaw_compress.summary.plan import AFTER_COMPACTION_SHARE

TURNS = 5
# The turns appended after a first record. One is not enough: with one turn kept, it would be
# more than 40% of the conversation since that record, which a second round may not leave.
MORE = 2
KEY_ENV = "GITCLAW_TEST_SUMMARY_KEY"
LLM_TEXT = "## What was accomplished\nLLM-SUMMARY-TEXT: modules ported."
HEADER = "Continuation summary, round "
# What every synthetic session holds, for the facts to find (per turn n).
DECISION = "I decided to keep the parser table-driven because it is simpler."
CONSTRAINT = "You must never change the public API."
FAILURE = "FAILED: test_parser_1 expected 3 got 4"


def prompt(n: int) -> str:
    return f"PROMPT-{n}: port module {n}. {CONSTRAINT}"


def reply(n: int) -> str:
    return f"REPLY-{n}: module {n} is ported. {DECISION}"


# --------------------------------------------------------------------------------------
# pi
# --------------------------------------------------------------------------------------


def pi_turns(builder: SessionBuilder, turns: range) -> None:
    for n in turns:
        builder.user(prompt(n))
        builder.assistant(
            pi_thinking(f"Thinking about module {n}."),
            pi_tool_call(f"toolu_r{n}", "read", {"path": f"src/m{n}.py"}),
            pi_tool_call(f"toolu_b{n}", "bash", {"command": f"make test-{n}"}),
        )
        builder.tool_result(f"toolu_r{n}", "read", pi_big_text(f"m{n}", 80))
        builder.tool_result(f"toolu_b{n}", "bash", FAILURE if n == 1 else f"ok {n}", error=n == 1)
        builder.assistant(
            pi_text(f"Writing m{n}.rs."),
            pi_tool_call(f"toolu_w{n}", "write", {"path": f"src/m{n}.rs", "content": "fn f() {}"}),
        )
        builder.tool_result(f"toolu_w{n}", "write", f"Wrote src/m{n}.rs")
        builder.assistant(pi_text(reply(n)), stop="stop")


def pi_session() -> bytes:
    builder = SessionBuilder()  # claude-opus-4-6, signed thinking
    pi_turns(builder, range(1, TURNS + 1))
    return builder.data()


def pi_more(data: bytes) -> bytes:
    """More turns, as pi appends them: children of the leaf (the compaction entry)."""
    builder = SessionBuilder()
    builder.lines.clear()
    builder._ids = itertools.count(0x1000)
    builder._last = orjson.loads(lines_from_bytes(data)[-1].data)["id"]
    pi_turns(builder, range(TURNS + 1, TURNS + 1 + MORE))
    return data + builder.data()


def pi_resume(path: Path, tmp_path: Path, shared: bool = False) -> dict[str, Any]:
    """pi with the session's own provider and model (signed thinking replayed as it was)."""
    require_pi(node=True)
    validate = chain_reaches_root(path)  # a cut-off chain is sent as pi finds it
    run = run_pi_resume(path, tmp_path=tmp_path, api="native", validate=validate, shared=shared)
    bodies = run.bodies
    return bodies[0]


# --------------------------------------------------------------------------------------
# Codex CLI
# --------------------------------------------------------------------------------------


def codex_turns(builder: RolloutBuilder, turns: range) -> None:
    for n in turns:
        turn_id = builder.start_turn(prompt(n))
        builder.reasoning()
        call_id = builder.call_id()
        builder.item(
            "function_call",
            name="shell_command",
            arguments=orjson.dumps({"command": f"make test-{n}"}).decode(),
            call_id=call_id,
        )
        output = f"Exit code: 1\nOutput:\n{FAILURE}" if n == 1 else f"Exit code: 0\nOutput:\nok {n}"
        builder.item("function_call_output", call_id=call_id, output=output)
        builder.shell(turn_id, f"cat src/m{n}.py", listing(f"m{n}", 120))
        builder.apply_patch(turn_id, f"src/m{n}.rs")
        builder.reply(turn_id, reply(n))


def codex_session() -> bytes:
    builder = RolloutBuilder()
    codex_turns(builder, range(1, TURNS + 1))
    return builder.data()


def codex_more(data: bytes) -> bytes:
    builder = RolloutBuilder()
    builder.lines.clear()
    builder._calls = itertools.count(900)
    builder._turns = itertools.count(900)
    codex_turns(builder, range(TURNS + 1, TURNS + 1 + MORE))
    return data + builder.data()


def codex_resume(path: Path, tmp_path: Path, shared: bool = False) -> dict[str, Any]:
    require_agent("codex")
    return run_resume("codex", path, tmp_path=tmp_path, shared=shared).check().body


# --------------------------------------------------------------------------------------
# Copilot CLI
# --------------------------------------------------------------------------------------


def copilot_turns(events: EventsBuilder, turns: range) -> None:
    for n in turns:
        events.user(prompt(n))
        bash: dict[str, Any] = (
            {"content": FAILURE, "success": False} if n == 1 else {"content": f"ok {n}"}
        )
        events.turn(
            [
                ("view", {"path": f"/work/src/m{n}.py"}, {"content": big_text(f"m{n}", 80)}),
                ("bash", {"command": f"make test-{n}", "description": "Test"}, bash),
                (
                    "create",
                    {"path": f"/work/src/m{n}.rs", "file_text": "fn f() {}"},
                    {"content": f"Created file /work/src/m{n}.rs"},
                ),
            ],
            reply(n),
        )
        if n == 1:  # the CLI records a failure's text as `error.message`
            for index, line in enumerate(events.lines):
                event = orjson.loads(line)
                if event["data"].get("success") is False and "error" not in event["data"]:
                    event["data"]["error"] = {"message": FAILURE}
                    events.lines[index] = orjson.dumps(event)


def copilot_session() -> bytes:
    events = EventsBuilder()
    events.start()
    copilot_turns(events, range(1, TURNS + 1))
    return events.data()


def copilot_more(data: bytes) -> bytes:
    events = EventsBuilder()
    events._ids = itertools.count(0x9000)
    events._calls = itertools.count(900)
    events._last = orjson.loads(lines_from_bytes(data)[-1].data)["id"]
    copilot_turns(events, range(TURNS + 1, TURNS + 1 + MORE))
    return data + events.data()


def copilot_resume(path: Path, tmp_path: Path, shared: bool = False) -> dict[str, Any]:
    require_agent("copilot")
    return run_resume("copilot", path, tmp_path=tmp_path, shared=shared).check().body


# --------------------------------------------------------------------------------------
# Claude Code
# --------------------------------------------------------------------------------------


def claude_turns(session: ClaudeSession, turns: range) -> None:
    for n in turns:
        session.user(prompt(n))
        session.assistant(claude_thinking(f"Thinking about module {n}."))
        session.tool_use(f"toolu_r{n}", "Read", {"file_path": f"src/m{n}.py"})
        session.tool_result(f"toolu_r{n}", pi_big_text(f"m{n}", 200), {"type": "text"})
        session.tool_use(f"toolu_b{n}", "Bash", {"command": f"make test-{n}"})
        if n == 1:
            session.tool_result(f"toolu_b{n}", FAILURE, "Error: " + FAILURE, is_error=True)
        else:
            session.tool_result(f"toolu_b{n}", f"ok {n}", {"stdout": f"ok {n}"})
        session.tool_use(f"toolu_w{n}", "Write", {"file_path": f"src/m{n}.rs", "content": "x"})
        session.tool_result(f"toolu_w{n}", f"Wrote src/m{n}.rs", {"type": "create"})
        session.assistant(claude_text(reply(n)))


def claude_session() -> bytes:
    session = ClaudeSession()
    claude_turns(session, range(1, TURNS + 1))
    return session.data()


def claude_more(data: bytes) -> bytes:
    """More turns, as Claude Code appends them: from the newest line (the summary)."""
    session = ClaudeSession()
    # New ids for each call: one block per record the file has already.
    session._ids = itertools.count(0x9000 + 0x1000 * max(data.count(b'"compact_boundary"') - 1, 0))
    session.last = orjson.loads(lines_from_bytes(data)[-1].data)["uuid"]
    claude_turns(session, range(TURNS + 1, TURNS + 1 + MORE))
    return data + session.data()


def claude_resume(path: Path, tmp_path: Path, shared: bool = False) -> dict[str, Any]:
    require_agent("claude")
    return run_resume("claude", path, tmp_path=tmp_path, shared=shared).check().body


# --------------------------------------------------------------------------------------
# The list of formats
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str  # the format's name in FORMATS
    place: str  # where its agent's transcript lives in a repository
    session: Callable[[], bytes]
    more: Callable[[bytes], bytes]  # MORE turns, appended after a record
    keep: tuple[str, ...]  # the keep option its record supports
    # The real CLI's first request body (`shared`: agent_harness.run_resume's).
    resume: Callable[..., dict[str, Any]]
    corpus: list[Path] = field(default_factory=list)
    keeps_messages: bool = True  # False: the record carries the summary alone
    corpus_keep: tuple[str, ...] = ()  # the keep for real sessions (default: summary.keepTokens)
    # Facts its synthetic session must yield: files changed and read, a command, the error.
    facts: tuple[str, ...] = ()


CASES = [
    Case(
        "pi",
        ".GITCLAW/state/sessions/2026-02-20T11-44-20-711Z_0b1f6c29.jsonl",
        pi_session,
        pi_more,
        ("--keep-turns", "1"),
        pi_resume,
        corpus=corpus_files(),
        corpus_keep=("--keep-tokens", "10000"),
        facts=("src/m1.rs", "src/m2.py", "make test-1", FAILURE),
    ),
    Case(
        "codex",
        ".codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-019d417c.jsonl",
        codex_session,
        codex_more,
        ("--keep-turns", "1"),
        codex_resume,
        corpus=corpus_transcripts("codex"),
        corpus_keep=("--keep-turns", "1"),
        facts=("src/m1.rs", "make test-1", "cat src/m2.py", FAILURE),
    ),
    Case(
        "copilot",
        ".copilot/session-state/5e5a0c1e-0000-4000-8000-000000000001/events.jsonl",
        copilot_session,
        copilot_more,
        ("--keep-turns", "0"),
        copilot_resume,
        corpus=corpus_transcripts("copilot"),
        corpus_keep=("--keep-turns", "0"),
        keeps_messages=False,
        facts=("/work/src/m1.rs", "/work/src/m2.py", "make test-1", FAILURE),
    ),
]
CASES.append(
    Case(
        "claude",
        f".claude/projects/-home-dev-project/{CLAUDE_SESSION_ID}.jsonl",
        claude_session,
        claude_more,
        ("--keep-turns", "1"),
        claude_resume,
        corpus=corpus_transcripts("claude"),
        corpus_keep=("--keep-turns", "1"),
        facts=("src/m1.rs", "src/m2.py", "make test-1", FAILURE),
    )
)
IDS = [case.name for case in CASES]


@pytest.fixture(autouse=True)
def _local_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv(KEY_ENV, "test-" + "summary-key")


def committed(repo: Path, case: Case, data: bytes) -> Path:
    path = repo / case.place
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def run_json(repo: Path, *args: str) -> Any:
    return json.loads(cli(*args, "--json", cwd=repo).stdout)


def summarize(repo: Path, path: Path, *args: str) -> dict[str, Any]:
    report: dict[str, Any] = run_json(repo, "summarize", *args, str(path.relative_to(repo)))
    return report


def resumed(name: str, data: bytes) -> Conversation:
    fmt = FORMATS[name]
    return fmt.resume(list(fmt.views(lines_from_bytes(data))))


# --------------------------------------------------------------------------------------
# Through the commands, offline
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_summarize_appends_the_record_and_context_and_status_honour_it(
    repo: Path, case: Case
) -> None:
    original = case.session()
    path = committed(repo, case, original)
    rel = str(path.relative_to(repo))
    before = run_json(repo, "status", rel)
    report = summarize(repo, path, "--offline", *case.keep)
    assert report["status"] == "summarized", report
    data = path.read_bytes()
    assert data.startswith(original) and len(data) > len(original)  # appended only
    conversation_ = resumed(case.name, data)
    assert conversation_.compaction is not None
    assert conversation_.compaction > len(lines_from_bytes(original))
    shown = run_json(repo, "context", rel)["messages"]
    assert [m["role"] for m in shown].count("summary") == 1
    users = [m["preview"] for m in shown if m["role"] == "user"]
    assert not [u for u in users if re.match(r"PROMPT-[1-4]\b", u)]
    assert len(shown) == len(conversation_.messages)
    # The requests sent as messages (a part of their own, not quoted in the summary text).
    requests = [p.text for m in conversation_.messages for p in m.parts if p.text[:7] == "PROMPT-"]
    assert requests == ([prompt(TURNS)] if case.keeps_messages else [])
    after = run_json(repo, "status", rel)
    sizes = [before["estimated_tokens"], after["context_tokens"]]
    assert after["messages"] == len(shown) and after["source"] == "estimate"
    assert sizes[1] <= 0.4 * sizes[0], sizes
    # Running again changes nothing: the file ends with the record.
    again = summarize(repo, path, "--offline", *case.keep)
    assert again["status"] == "nothing-to-summarize" and path.read_bytes() == data


# Without a keep option, what each agent's own compaction keeps (summary/stage.py AGENT_KEEP).
AGENT_DEFAULT = {
    "pi": "the newest 20,000 estimated tokens",
    "claude": "nothing",
    "codex": "no turn, only copies of the newest requests",
    "copilot": "nothing",
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_without_options_summarize_keeps_what_the_agents_own_compaction_keeps(
    repo: Path, case: Case
) -> None:
    original = case.session()
    path = committed(repo, case, original)
    report = summarize(repo, path, "--offline")
    assert report["keep"] == AGENT_DEFAULT[case.name], report
    if case.name == "pi":  # the synthetic session fits in 20,000 tokens; --keep-tokens wins
        assert report["status"] == "nothing-to-summarize" and path.read_bytes() == original
        assert summarize(repo, path, "--offline", "--keep-tokens", "500")["status"] == "summarized"
        return
    assert report["status"] == "summarized" and report["first_kept_entry_id"] is None, report
    data = path.read_bytes()
    assert data.startswith(original)
    conversation_ = resumed(case.name, data)
    kinds = {(m.role, p.kind) for m in conversation_.messages for p in m.parts}
    assert not {kind for _, kind in kinds} & {"tool_call", "tool_result", "thinking"}, kinds
    requests = [p.text for m in conversation_.messages for p in m.parts if p.text[:7] == "PROMPT-"]
    # Codex copies the newest requests before its summary, as its own compaction does; the
    # others send the summary alone, which quotes the last request whole.
    assert requests == ([prompt(n) for n in range(1, TURNS + 1)] if case.name == "codex" else [])
    summary = "\n".join(
        p.text for m in conversation_.messages for p in m.parts if m.role == "summary"
    )
    assert "no message after it is kept" in summary and prompt(TURNS) in summary


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_keep_tokens_cuts_where_the_record_can_keep_messages(repo: Path, case: Case) -> None:
    original = case.session()
    path = committed(repo, case, original)
    rel = str(path.relative_to(repo))
    with FakeLLMServer(default=openai_reply(LLM_TEXT)) as server:
        configure_llm(repo, server)
        done = cli("summarize", "--json", "--keep-tokens", "2000", rel, cwd=repo, check=False)
        assert len(server.requests) == (1 if case.keeps_messages else 0)
    if case.keeps_messages:
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["status"], report["mode"]) == ("summarized", "llm")
        assert report["tokens_after"] >= 2000 and path.read_bytes().startswith(original)
        return
    # Refused in one line, before any request to the LLM, and nothing written.
    assert done.returncode == 3 and path.read_bytes() == original
    error = done.stderr.decode()
    assert error.startswith(f"gitclaw-compress: error: {rel}: ") and error.count("\n") == 1
    # One reason, in a sentence: not "summaries is not supported (… keep no turns (…))".
    assert "a summary that keeps turns is not supported" in error and "summaries is" not in error
    assert "no turn can be kept" in error and "((" not in error and "))" not in error
    assert "`--keep-turns 0`" in error and len(error) - len(rel) < 220, error


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compress_after_summarize_keeps_the_record_and_restore_is_the_file(
    repo: Path, case: Case
) -> None:
    path = committed(repo, case, case.session())
    rel = str(path.relative_to(repo))
    summarize(repo, path, "--offline", *case.keep)
    summarized = path.read_bytes()
    record = lines_from_bytes(summarized)[len(lines_from_bytes(case.session())) :]
    # restore of a summarized file that was never compressed: the file itself
    restored = cli("restore", "-o", "-", rel, cwd=repo)
    assert restored.stdout == summarized and path.read_bytes() == summarized
    # the agent goes on after the record; compress keeps the new turns and the record
    grown = case.more(summarized)
    path.write_bytes(grown)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    cli("compress", "--force", "--keep-turns", str(MORE), rel, cwd=repo)
    compressed = path.read_bytes()
    assert compressed != grown  # the summarized turns before the record were compressed
    lines = lines_from_bytes(compressed)
    for line in record:
        assert lines[line.number - 1].data == line.data  # the record, byte for byte
    tail = grown[len(summarized) :]
    assert compressed.endswith(tail)  # the new turns, byte for byte
    # restore gives back the summarized file plus the new turn, byte for byte
    cli("restore", rel, cwd=repo)
    assert path.read_bytes() == grown


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_second_summarize_chains_over_the_first(repo: Path, case: Case) -> None:
    path = committed(repo, case, case.session())
    first = summarize(repo, path, "--offline", *case.keep)
    grown = case.more(path.read_bytes())
    path.write_bytes(grown)
    second = summarize(repo, path, "--offline", *case.keep)
    assert (first["round"], second["round"]) == (1, 2), second
    conversation_ = resumed(case.name, path.read_bytes())
    assert conversation_.compaction is not None  # the newest record
    assert conversation_.compaction > len(lines_from_bytes(grown))
    summaries = [m for m in conversation_.messages if m.role == "summary"]
    assert len(summaries) == 1
    summary = "\n".join(p.text for p in summaries[0].parts)
    assert HEADER + "2" in summary and HEADER + "1" not in summary
    # the facts of both rounds: the first round's task and the newest request
    assert "PROMPT-1" in summary and f"PROMPT-{TURNS}" in summary


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_round_counts_every_compaction_record_of_the_file(repo: Path, case: Case) -> None:
    """The round is one more than the records the file has, each format's records read by
    its own view. Before, it counted those on the resume path, which starts at the newest
    record: round 2 on a file with 3 records, in every format."""
    path = committed(repo, case, case.session())
    rounds: list[int] = []
    with FakeLLMServer(default=openai_reply(LLM_TEXT, model="cheap-model")) as server:
        configure_llm(repo, server)  # three rounds by the LLM, the fourth offline
        for offline in (False, False, False, True):
            if rounds:
                path.write_bytes(case.more(path.read_bytes()))
            args = ("--offline", *case.keep) if offline else case.keep
            rounds.append(summarize(repo, path, *args)["round"])
        assert '<previous-summary round="2">' in user_prompt(server)
    assert rounds == [1, 2, 3, 4], rounds
    summaries = [m for m in resumed(case.name, path.read_bytes()).messages if m.role == "summary"]
    summary = "\n".join(p.text for p in summaries[0].parts)
    assert HEADER + "4 " in summary, summary
    assert "## Earlier summary (round 3, written by an LLM)" in summary, summary


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_summary_stage_of_compress_writes_the_record(repo: Path, case: Case) -> None:
    keep = int(case.keep[1])
    summary = {"enabled": True, "whenLevel": "warning", "keepTurns": keep, "keepTokens": keep}
    tokens = {"warningPercent": 1, "criticalPercent": 2}
    small = {"context_window": 40_000, "max_output": 1_000}  # any session reaches 1%
    models = {"overrides": {m: small for m in ("claude-opus-4-6", "gpt-5.1-codex-mini",
                                               "claude-sonnet-4.6")}}  # fmt: skip
    config = {"summary": summary, "tokens": tokens, "models": models}
    (repo / "compression.json").write_text(json.dumps(config))
    path = committed(repo, case, case.session())
    rel = str(path.relative_to(repo))
    out = run_json(repo, "compress", "--force", rel)
    [stage] = out["summaries"]
    assert stage["ran"] and stage["warning"] is None, stage
    assert stage["summary"]["status"] == "summarized" and stage["summary"]["round"] == 1
    conversation_ = resumed(case.name, path.read_bytes())
    assert conversation_.compaction is not None
    assert conversation_.compaction > len(lines_from_bytes(case.session()))
    cli("verify", rel, cwd=repo)  # what compress did is intact


# --------------------------------------------------------------------------------------
# The LLM path, against the local fake server
# --------------------------------------------------------------------------------------


def configure_llm(repo: Path, server: FakeLLMServer) -> None:
    summary = {
        "provider": "openai",
        "base_url": server.url + "/v1",
        "model": "cheap-model",
        "api_key_env": KEY_ENV,
        "max_retries": 0,
    }
    (repo / "compression.json").write_text(json.dumps({"summary": summary}))


def user_prompt(server: FakeLLMServer, index: int = -1) -> str:
    body = server.requests[index].json()
    content: str = body["messages"][-1]["content"]
    return content


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_llm_prompt_holds_the_facts_and_chains_over_the_first_summary(
    repo: Path, case: Case
) -> None:
    path = committed(repo, case, case.session())
    with FakeLLMServer(default=openai_reply(LLM_TEXT, model="cheap-model")) as server:
        configure_llm(repo, server)
        first = summarize(repo, path, *case.keep)
        assert (first["status"], first["mode"]) == ("summarized", "llm"), first
        prompt_text = user_prompt(server)
        for fact in case.facts:
            assert fact in prompt_text, fact
        assert DECISION in prompt_text and CONSTRAINT in prompt_text  # decisions, constraints
        assert "Next steps" in prompt_text  # the open tasks the LLM is asked for
        assert "PROMPT-1" in prompt_text  # the original task
        record = resumed(case.name, path.read_bytes())
        summary = next(m for m in record.messages if m.role == "summary")
        assert "LLM-SUMMARY-TEXT" in "\n".join(p.text for p in summary.parts)
        path.write_bytes(case.more(path.read_bytes()))
        second = summarize(repo, path, *case.keep)
        assert second["round"] == 2
        chained = user_prompt(server)
        assert '<previous-summary round="1">' in chained and "LLM-SUMMARY-TEXT" in chained
        assert len(server.requests) == 2


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_failed_llm_request_writes_nothing_and_offline_still_works(
    repo: Path, case: Case
) -> None:
    original = case.session()
    path = committed(repo, case, original)
    rel = str(path.relative_to(repo))
    with FakeLLMServer(default=error_reply(500, "overloaded")) as server:
        configure_llm(repo, server)
        done = cli("summarize", *case.keep, rel, cwd=repo, check=False)
        assert server.requests  # it was asked
    assert done.returncode == 3 and path.read_bytes() == original
    error = done.stderr.decode()
    assert error.count("\n") == 1 and "the file is unchanged" in error and "--offline" in error
    report = summarize(repo, path, "--offline", *case.keep)
    assert (report["status"], report["mode"]) == ("summarized", "extractive")


# --------------------------------------------------------------------------------------
# The real CLIs resume the summarized file
# --------------------------------------------------------------------------------------


def items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation of a request without the agent's instructions (system or developer
    messages, Codex's base instructions item): what the file gave it, and the new prompt."""
    found = conversation(body) or [c for c in body.get("contents") or [] if isinstance(c, dict)]
    return [item for item in found if item.get("role") not in ("system", "developer")]


def result_ids(body: dict[str, Any]) -> list[str]:
    """The call ids the tool results of a request answer (Gemini: the tools' names)."""
    ids: list[str] = []
    for item in conversation(body):
        content = item.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        ids += [str(b["tool_use_id"]) for b in blocks if b.get("type") == "tool_result"]
        if item.get("role") == "tool":
            ids.append(str(item.get("tool_call_id")))
        if str(item.get("type")).endswith("_output"):
            ids.append(str(item.get("call_id")))
    for content in body.get("contents") or []:
        parts = content.get("parts") or []
        ids += [str(p["functionResponse"]["name"]) for p in parts if "functionResponse" in p]
    return ids


def call_ids(body: dict[str, Any]) -> list[str]:
    ids = tool_call_ids(body)
    for content in body.get("contents") or []:
        parts = content.get("parts") or []
        ids += [str(p["functionCall"]["name"]) for p in parts if "functionCall" in p]
    return ids


@dataclass
class Resumed:
    request_before: int  # bytes of the whole first request
    request_after: int
    messages_before: int  # items of its conversation (instructions left out)
    messages_after: int
    conversation_before: int  # bytes of that conversation, the CLI's new prompt left out
    conversation_after: int


def check_resume(
    case: Case, repo: Path, tmp_path: Path, data: bytes, keep: tuple[str, ...]
) -> Resumed | str:
    """Summarize `data` with `keep`, resume it with and without the record in the real CLI,
    and check the first request. A string: why nothing was summarized."""
    path = committed(repo, case, data)
    name = Path(case.place).name
    (tmp_path / "before").mkdir()
    original = tmp_path / "before" / name
    original.write_bytes(data)
    report = summarize(repo, path, "--offline", *keep)
    if report["status"] != "summarized":
        return str(report["reason"])
    summarized = path.read_bytes()
    assert summarized.startswith(data)
    (tmp_path / "after").mkdir()
    copy = tmp_path / "after" / name
    copy.write_bytes(summarized)
    before = case.resume(original, tmp_path / "before", shared=True)  # compared by structure
    after = case.resume(copy, tmp_path / "after")
    sent = items(after)
    # The summary is there, once.
    header = f"{HEADER}{report['round']} "
    holding = [text for text in json_strings(sent) if header in text]
    assert len(holding) == 1, holding
    # None of the summarized requests is sent as a message.
    conversation_before = resumed(case.name, data)
    conversation_after = resumed(case.name, summarized)
    kept_lines = {m.line for m in conversation_after.messages} | set(
        line for m in conversation_after.messages for line in m.source_lines()
    )
    older = {
        text.strip()
        for m in conversation_before.messages
        if m.role == "user" and max(m.source_lines()) < min(kept_lines)
        for text in (p.text for p in m.parts)
        if len(text.strip()) >= 8
    }
    texts = {text.strip() for text in json_strings(sent) if header not in text}
    assert not older & texts, sorted(older & texts)[:3]
    # The kept tail with every tool pair, sealed reasoning only as it was sent before.
    calls, results = call_ids(after), result_ids(after)
    assert sorted(calls) == sorted(results), (calls, results)
    assert set(calls) <= set(call_ids(before))
    sealed = sealed_reasoning(after)
    assert set(sealed) <= set(sealed_reasoning(before))
    # The conversation the file gives: its last item is the CLI's new prompt, the same before
    # and after, and no part of the file (Claude Code 2.1.332 puts about 11 KB of reminders in
    # it: the environment, the model, tools, agents and skills that 2.1.197 put in its system
    # prompt).
    sizes = Resumed(
        len(orjson.dumps(before)),
        len(orjson.dumps(after)),
        len(items(before)),
        len(sent),
        len(orjson.dumps(items(before)[:-1])),
        len(orjson.dumps(sent[:-1])),
    )
    assert sizes.conversation_after <= 0.4 * sizes.conversation_before, sizes
    return sizes


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_real_cli_resumes_a_summarized_synthetic_session(
    repo: Path, tmp_path: Path, case: Case
) -> None:
    data = case.session()
    sizes = check_resume(case, repo, tmp_path, data, case.keep)
    assert isinstance(sizes, Resumed), sizes
    print(f"{case.name} synthetic: {sizes}")


def four_turns(case: Case, path: Path) -> bool:
    fmt = FORMATS[case.name]
    return sum(view.turn_start for view in fmt.views(lines_from_bytes(path.read_bytes()))) >= 4


CORPUS = [
    pytest.param(case, path, id=f"{case.name}-{path.name}")
    for case in CASES
    for path in case.corpus
    if four_turns(case, path)
]


@pytest.mark.skipif(not CORPUS, reason="no ../shared/corpus")
@pytest.mark.parametrize(("case", "source"), CORPUS)
def test_the_real_cli_resumes_a_summarized_corpus_file(
    repo: Path, tmp_path: Path, case: Case, source: Path
) -> None:
    data = source.read_bytes()
    sizes = check_resume(case, repo, tmp_path, data, case.corpus_keep)
    if isinstance(sizes, str):
        (tmp_path / "refused").mkdir()
        before = case.resume(source, tmp_path / "refused")
        assert_the_newest_turns_hold_the_bytes(case, data, before, sizes)
        print(f"{case.name} {source.name}: nothing written: {sizes}")
        return
    print(f"{case.name} {source.name}: {sizes}")
    # The conversation is at most 40% of what it was (checked above). The whole request only
    # shrinks: the CLI's own instructions and tools (77 KB for Claude Code 2.1.332) are no
    # part of the file, and after an earlier compaction they can outweigh the conversation.
    assert sizes.request_after < sizes.request_before, sizes


def assert_the_newest_turns_hold_the_bytes(
    case: Case, data: bytes, before: dict[str, Any], reason: str
) -> None:
    """`summarize` wrote nothing, for `reason`: show from the real CLI's request that the part
    it would keep holds more than a round may leave, so no summary could bring it down."""
    option, value = case.corpus_keep
    if option == "--keep-tokens":
        # The newest K estimated tokens (chars/4) hold all that the CLI sends of it.
        assert "fit in the newest" in reason, reason
        assert len(orjson.dumps(items(before))) <= 4 * int(value), reason
        return
    assert case.name == "claude", reason  # the one format whose newest turns are measured
    share = newest_turns_share(data, before, int(value))
    assert share > AFTER_COMPACTION_SHARE, (share, reason)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_real_cli_resumes_from_the_newest_of_two_chained_summaries(
    repo: Path, tmp_path: Path, case: Case
) -> None:
    path = committed(repo, case, case.session())
    summarize(repo, path, "--offline", *case.keep)
    path.write_bytes(case.more(path.read_bytes()))
    assert summarize(repo, path, "--offline", *case.keep)["round"] == 2
    copy = tmp_path / Path(case.place).name
    copy.write_bytes(path.read_bytes())
    sent = json_strings(items(case.resume(copy, tmp_path)))
    assert len([text for text in sent if f"{HEADER}2 " in text]) == 1
    assert not [text for text in sent if f"{HEADER}1 " in text]
    newest = [text for text in sent if text.strip().endswith(prompt(TURNS + MORE))]
    assert bool(newest) == case.keeps_messages  # the kept request of the newest turn


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_keep_turns_0_keeps_nothing_where_the_record_can_name_no_kept_message(
    repo: Path, case: Case
) -> None:
    original = case.session()
    path = committed(repo, case, original)
    rel = str(path.relative_to(repo))
    done = cli("summarize", "--offline", "--json", "--keep-turns", "0", rel, cwd=repo, check=False)
    if case.name == "pi":  # pi's entry names its first kept entry: refused, nothing written
        assert done.returncode == 3 and path.read_bytes() == original
        assert done.stderr.decode().count("\n") == 1 and b"keep a turn" in done.stderr
        return
    report = json.loads(done.stdout)
    assert report["status"] == "summarized" and report["first_kept_entry_id"] is None
    conversation_ = resumed(case.name, path.read_bytes())
    sent = [p.text for m in conversation_.messages for p in m.parts if m.role != "system"]
    assert not [text for text in sent if text.startswith("PROMPT-")]
    assert [m.role for m in conversation_.messages if m.role != "system"] == ["summary"]


@pytest.mark.parametrize("case", [c for c in CASES if c.name != "pi"], ids=lambda c: c.name)
def test_the_real_cli_resumes_from_a_summary_that_keeps_nothing(
    repo: Path, tmp_path: Path, case: Case
) -> None:
    sizes = check_resume(case, repo, tmp_path, case.session(), ("--keep-turns", "0"))
    assert isinstance(sizes, Resumed), sizes
    assert sizes.messages_after <= 3  # the summary and the CLI's new prompt (its context)
