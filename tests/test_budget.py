"""Budget pruning and target mode: what they touch, what they never touch, and the way back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS_SESSIONS, cli, corpus_files, git, needs_corpus
from format_cases import FORMAT_CASES, FormatCase
from synthetic import SessionBuilder, text, thinking, tool_call

from gitclaw_compress.core.compressor import (
    BudgetSettings,
    CompressSettings,
    SessionPlan,
    compress_lines,
    plan_lines,
)
from gitclaw_compress.core.context import read_context
from gitclaw_compress.core.lines import MARKER_KEY, join_lines, lines_from_bytes
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.core.stubs import STUB_PREFIX
from gitclaw_compress.formats import FORMATS, detect
from gitclaw_compress.model import call_names
from gitclaw_compress.tokens.estimate import get_estimator

REF = ".GITCLAW/state/sessions/s.jsonl"
CHARS4 = get_estimator("chars4")


def output(label: str) -> str:
    """100 lines of 39 characters, 3,999 characters in all: 1,000 tokens with chars4."""
    return "\n".join(f"{label} line {number:03d} ".ljust(39, "x") for number in range(100))


def settings(keep_turns: int = 4, **budget: Any) -> CompressSettings:
    budget.setdefault("strategy", "tokens")
    budget.setdefault("protect_turns", 0)
    return CompressSettings(keep_turns=keep_turns, budget=BudgetSettings(**budget))


def run(data: bytes, config: CompressSettings) -> tuple[bytes, dict[str, bytes], SessionPlan]:
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, config, session_ref=REF, fmt=detect(lines, REF), estimator=CHARS4)
    payloads: dict[str, bytes] = {}
    out = []
    for result in compress_lines(lines, plan, config, session_ref=REF):
        out.append(result.line)
        payloads.update({payload.oid: payload.data for payload in result.payloads})
    return join_lines(out), payloads, plan


def restore(data: bytes, payloads: dict[str, bytes]) -> bytes:
    return join_lines(restore_line(line, "s", payloads.get) for line in lines_from_bytes(data))


def reads(
    session: SessionBuilder,
    count: int,
    *,
    prefix: str = "r",
    tool: str = "read",
    total_tokens: int = 18237,
) -> list[str]:
    """`count` tool calls, each answered by a 1,000-token output; returns the output ids."""
    ids = []
    for index in range(count):
        call = f"{prefix}{index}"
        session.assistant(tool_call(call, tool, {"path": f"{call}.py"}), total_tokens=total_tokens)
        ids.append(session.tool_result(call, tool, output(f"{prefix}{index}")))
    return ids


def changed(before: bytes, after: bytes) -> set[str]:
    """Ids of the entries whose line changed."""
    old, new = before.split(b"\n"), after.split(b"\n")
    assert len(old) == len(new)
    return {orjson.loads(b)["id"] for a, b in zip(old, new, strict=True) if a != b}


def context_tokens(data: bytes) -> int:
    context = read_context(FORMATS["pi"], lines_from_bytes(data), CHARS4)
    return sum(message.tokens for message in context.sent())


def test_output_helper_is_1000_tokens() -> None:
    assert len(output("r0")) == 3999 and CHARS4.count(output("r0")) == 1000


def test_budget_pruning_protects_the_newest_tokens() -> None:
    session = SessionBuilder()
    session.user("go")
    ids = reads(session, 8)
    session.assistant(text("done"), stop="stop")
    original = session.data()
    compressed, payloads, plan = run(original, settings(protect_tokens=2500, minimum_tokens=0))
    # Newest first: "done", output 7 (1,000), call 7, output 6 (2,000 so far), call 6, then
    # output 5 crosses 2,500: it and everything older is outside the protected window.
    assert changed(original, compressed) == set(ids[:6])
    assert plan.pruned and plan.budget is not None
    # The oldest protected message is the call that output 6 answers.
    assert plan.budget.protected_entry == f"{int(ids[6], 16) - 1:08x}"
    for entry_id in ids[:6]:
        line = next(orjson.loads(x) for x in compressed.split(b"\n") if entry_id.encode() in x)
        [stub] = line["message"]["content"]
        assert stub["text"].startswith(f"{STUB_PREFIX} Output of read ")
        assert f"gitclaw-compress show {REF} {entry_id}" in stub["text"]
    assert restore(compressed, payloads) == original
    wider, _, _ = run(original, settings(protect_tokens=5500, minimum_tokens=0))
    assert changed(original, wider) == set(ids[:3])


def test_nothing_is_pruned_under_the_minimum() -> None:
    session = SessionBuilder()
    session.user("go")
    reads(session, 6)
    session.assistant(text("done"), stop="stop")
    original = session.data()
    _, _, plan = run(original, settings(protect_tokens=1500, minimum_tokens=0))
    assert plan.budget is not None
    freed = plan.budget.freed_tokens
    # Outputs 0 to 4 are outside the window: 1,000 tokens each, less their stubs.
    assert 5 * 800 < freed < 5 * 1000
    exact, payloads, plan = run(original, settings(protect_tokens=1500, minimum_tokens=freed))
    assert len(plan.pruned) == 5 and restore(exact, payloads) == original
    above, payloads, plan = run(original, settings(protect_tokens=1500, minimum_tokens=freed + 1))
    assert above == original and payloads == {} and not plan.pruned
    assert plan.budget is not None and "under the minimum" in plan.budget.decision


def test_protected_tools_compaction_summaries_and_incomplete_outputs_are_never_pruned() -> None:
    session = SessionBuilder()
    first = session.user("go")
    skills = reads(session, 2, prefix="s", tool="skill")
    errors = []
    for index in range(2):
        call = f"e{index}"
        session.assistant(tool_call(call, "bash", {"command": "make"}))
        errors.append(session.tool_result(call, "bash", output(call), error=True))
    session.assistant(tool_call("u", "bash", {"command": "sleep"}))
    # An output without a boolean isError is not one pi wrote for a finished tool.
    unfinished = session.message(
        {
            "role": "toolResult",
            "toolCallId": "u",
            "toolName": "bash",
            "content": [{"type": "text", "text": output("u")}],
        }
    )
    session.user("more")
    compaction = session.entry(
        "compaction",
        summary=output("summary"),
        firstKeptEntryId=first,
        tokensBefore=90_000,
    )
    note = session.entry("custom_message", customType="note", content=output("note"))
    reads(session, 1, prefix="late")
    session.assistant(text("done"), stop="stop")
    original = session.data()
    compressed, payloads, _ = run(original, settings(protect_tokens=0, minimum_tokens=0))
    touched = changed(original, compressed)
    assert set(errors) <= touched  # failed tools are completed outputs too
    assert touched.isdisjoint({*skills, unfinished, compaction, note})
    custom, _, _ = run(
        original, settings(protect_tokens=0, minimum_tokens=0, protected_tools=frozenset())
    )
    assert set(skills) <= changed(original, custom)
    assert restore(compressed, payloads) == original


def test_the_floor_of_recent_turns_is_never_pruned() -> None:
    session = SessionBuilder()
    session.user("turn 1")
    old = reads(session, 3, prefix="a")
    session.user("turn 2")
    recent = reads(session, 3, prefix="b")
    session.assistant(text("done"), stop="stop")
    original = session.data()
    compressed, _, _ = run(original, settings(protect_tokens=0, minimum_tokens=0, protect_turns=1))
    assert changed(original, compressed) == set(old)
    everything, _, _ = run(original, settings(protect_tokens=0, minimum_tokens=0))
    assert changed(original, everything) == {*old, *recent}


def test_pruning_is_idempotent_and_does_not_churn_on_small_growth() -> None:
    session = SessionBuilder()
    session.user("go")
    reads(session, 8)
    session.assistant(text("done"), stop="stop")
    config = settings(protect_tokens=2500, minimum_tokens=3000)
    first, first_payloads, _ = run(session.data(), config)
    assert first != session.data()
    again, payloads, plan = run(first, config)
    assert again == first and payloads == {} and not plan.pruned
    # A new turn pushes one more output out of the window: 1,000 tokens, under the minimum.
    grown_session = session
    old_count = len(grown_session.lines)
    grown_session.user("one more")
    reads(grown_session, 1, prefix="n")
    grown_session.assistant(text("ok"), stop="stop")
    grown = first + b"".join(line + b"\n" for line in grown_session.lines[old_count:])
    later, payloads, plan = run(grown, config)
    assert later == grown and payloads == {}
    assert plan.budget is not None and "under the minimum" in plan.budget.decision
    assert restore(first, first_payloads) == b"".join(
        line + b"\n" for line in grown_session.lines[:old_count]
    )


def test_already_compressed_content_is_never_pruned_again() -> None:
    session = SessionBuilder()
    session.user("turn 1")
    reads(session, 3, prefix="a")
    session.user("turn 2")
    reads(session, 3, prefix="b")
    session.assistant(text("done"), stop="stop")
    turns, turn_payloads, _ = run(session.data(), CompressSettings(keep_turns=1))
    marked = {
        orjson.loads(line)["id"] for line in turns.split(b"\n") if MARKER_KEY.encode() in line
    }
    assert marked
    pruned, payloads, _ = run(turns, settings(protect_tokens=0, minimum_tokens=0))
    assert changed(turns, pruned).isdisjoint(marked)
    assert restore(pruned, {**turn_payloads, **payloads}) == session.data()


def test_both_is_the_union_of_turns_and_tokens() -> None:
    session = SessionBuilder()
    session.user("turn 1")
    thought = session.assistant(thinking("Let me think. " * 40), text("Reading."), stop="stop")
    session.user("turn 2")
    recent = reads(session, 4)
    session.assistant(text("done"), stop="stop")
    original = session.data()
    common = {"protect_tokens": 2500, "minimum_tokens": 0}
    turns, _, _ = run(original, settings(keep_turns=1, strategy="turns", **common))
    tokens, _, _ = run(original, settings(keep_turns=1, strategy="tokens", **common))
    both, payloads, _ = run(original, settings(keep_turns=1, strategy="both", **common))
    assert changed(original, turns) == {thought}
    assert changed(original, tokens) == set(recent[:2])
    assert changed(original, both) == {thought, *recent[:2]}
    assert restore(both, payloads) == original


def target_session() -> SessionBuilder:
    """Two turns, ten 1,000-token outputs, no recorded usage (so the context is estimated)."""
    session = SessionBuilder(model="tiny-model")
    session.user("turn 1")
    reads(session, 8, prefix="a", total_tokens=0)
    session.user("turn 2")
    reads(session, 2, prefix="b", total_tokens=0)
    session.assistant(text("done"), stop="stop", total_tokens=0)
    return session


def target(percent: int) -> CompressSettings:
    # usable = 11,000 - min(1,000, 32,000) - 0 = 10,000 tokens
    overrides = {"tiny-model": {"context_window": 11_000, "max_output": 1_000}}
    return settings(
        strategy="turns",
        target_percent=percent,
        protect_turns=1,
        reserve_tokens=0,
        model_overrides=overrides,
    )


def test_target_mode_compresses_oldest_first_just_until_the_target() -> None:
    original = target_session().data()
    before = context_tokens(original)
    assert before > 10_000  # over the usable context: critical
    compressed, payloads, plan = run(original, target(60))
    after = context_tokens(compressed)
    assert plan.budget is not None and plan.budget.target_tokens == 6_000
    assert after <= 6_000 < before
    assert plan.budget.freed_tokens == before - after
    # Whole lines before the cut, oldest first; nothing from the cut on.
    old, new = original.split(b"\n"), compressed.split(b"\n")
    cut = plan.window_start - 1  # 0-based index of the first line left alone
    assert cut > 2 and old[cut:] == new[cut:]
    outputs = [i for i in range(cut) if b'"toolResult"' in old[i]]
    assert outputs and all(old[i] != new[i] for i in outputs)
    assert any(b'"turn 1"' not in line and line != new[i] for i, line in enumerate(old))
    # No further than needed: leave the newest compressed output as it was and the target
    # is missed.
    undo = new[:]
    undo[outputs[-1]] = old[outputs[-1]]
    assert context_tokens(b"\n".join(undo)) > 6_000
    assert restore(compressed, payloads) == original
    again, payloads, plan = run(compressed, target(60))
    assert again == compressed and payloads == {}
    assert plan.budget is not None and "within the target" in plan.budget.decision


def test_target_mode_never_touches_the_floor() -> None:
    original = target_session().data()
    compressed, payloads, plan = run(original, target(1))
    assert plan.budget is not None and "out of reach" in plan.budget.decision
    old, new = original.split(b"\n"), compressed.split(b"\n")
    turn_2 = next(i for i, line in enumerate(old) if b'"turn 2"' in line)
    assert old[turn_2:] == new[turn_2:]
    outputs = [i for i in range(turn_2) if b'"toolResult"' in old[i]]
    assert len(outputs) == 8 and all(old[i] != new[i] for i in outputs)
    assert restore(compressed, payloads) == original


# --- the command line --------------------------------------------------------------------


@pytest.fixture
def session_file(repo: Path) -> Path:
    path = repo / REF
    path.parent.mkdir(parents=True)
    session = SessionBuilder()
    session.user("go")
    reads(session, 70, total_tokens=0)  # 70,000 tokens of outputs, estimated
    session.assistant(text("done"), stop="stop", total_tokens=0)
    session.user("thanks")  # the newest turn is the floor (prune.protectTurns)
    session.assistant(text("welcome"), stop="stop", total_tokens=0)
    path.write_bytes(session.data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def test_prune_command_archives_and_restores(repo: Path, session_file: Path) -> None:
    original = session_file.read_bytes()
    checked = cli("prune", "--check", REF, cwd=repo, check=False)
    assert checked.returncode == 1 and session_file.read_bytes() == original
    report = json.loads(cli("prune", "--json", REF, cwd=repo).stdout)["files"][0]
    assert report["status"] == "compressed"
    assert report["budget"]["freed_tokens"] >= 20_000
    assert "pruned, " in report["budget"]["decision"]
    assert len(session_file.read_bytes()) < len(original)
    again = cli("prune", REF, cwd=repo).stdout.decode()
    assert again.startswith("unchanged") and "nothing to prune" in again
    git(repo, "gc", "-q", "--prune=now")
    assert cli("verify", REF, cwd=repo).returncode == 0
    assert cli("restore", REF, "-o", "-", cwd=repo).stdout == original


def test_compress_follows_the_configured_strategy(repo: Path, session_file: Path) -> None:
    original = session_file.read_bytes()
    out = cli("compress", "--force", REF, cwd=repo).stdout.decode()
    assert "nothing new to compress" in out  # one turn: the turns policy keeps it all
    (repo / "compression.json").write_text('{"prune": {"strategy": "tokens"}}')
    report = json.loads(cli("compress", "--force", "--json", REF, cwd=repo).stdout)["files"][0]
    assert report["status"] == "compressed" and report["budget"]["freed_tokens"] >= 20_000
    assert cli("restore", REF, "-o", "-", cwd=repo).stdout == original


def test_prune_target_brings_a_critical_session_down(repo: Path, session_file: Path) -> None:
    original = session_file.read_bytes()
    (repo / "compression.json").write_text(
        '{"models": {"overrides": {"claude-opus-4-6": {"context_window": 76000, '
        '"max_output": 4000}}}, "tokens": {"reserve": 0}, "prune": {"protectTurns": 0}}'
    )
    status = json.loads(cli("status", "--json", REF, cwd=repo).stdout)
    assert status["level"] == "critical" and status["usable_tokens"] == 72_000
    assert status["savings"]["target"]["context_tokens_after"] <= 43_200
    out = cli("prune", "--target", REF, cwd=repo).stdout.decode()
    assert out.startswith("pruned") and "target 43,200 tokens (60% of 72,000 usable)" in out
    after = json.loads(cli("status", "--json", REF, cwd=repo).stdout)
    assert after["source"] == "estimate" and after["context_tokens"] <= 43_200
    assert after["level"] == "ok"
    assert cli("restore", REF, "-o", "-", cwd=repo).stdout == original


# --- the corpus --------------------------------------------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@needs_corpus
def test_restore_is_byte_identical_on_the_corpus_after_pruning(corpus_repo: Path) -> None:
    repo = corpus_repo
    paths = [f"{CORPUS_SESSIONS}/{source.name}" for source in corpus_files()]
    (repo / "compression.json").write_text('{"prune": {"minimumTokens": 1000}}')
    cli("prune", *paths, cwd=repo)
    pruned = {path: (repo / path).read_bytes() for path in paths}
    cli("prune", *paths, cwd=repo)
    assert {path: (repo / path).read_bytes() for path in paths} == pruned  # idempotent
    cli("prune", "--target-percent", "5", *paths, cwd=repo)
    cli("compress", "--force", "--keep-turns", "1", *paths, cwd=repo)
    git(repo, "gc", "-q", "--prune=now")
    assert cli("verify", *paths, cwd=repo).returncode == 0
    changed_files = 0
    for source, path in zip(corpus_files(), paths, strict=True):
        changed_files += (repo / path).read_bytes() != source.read_bytes()
        restored = cli("restore", path, "-o", "-", cwd=repo).stdout
        assert sha(restored) == sha(source.read_bytes()), path
    assert changed_files >= 4


@pytest.mark.parametrize("case", FORMAT_CASES, ids=lambda case: case.name)
def test_protected_tools_are_never_pruned_in_any_format(case: FormatCase) -> None:
    """`prune.protectedTools` holds for every format, also where a result's line names no
    tool (Copilot CLI names it only on the call): with every tool of the file protected,
    nothing is pruned; with none, something is."""
    data = case.synthetic[0][1]()
    lines = lines_from_bytes(data)
    fmt = FORMATS[case.name]
    every_tool = frozenset(call_names(fmt.views(lines)).values())
    assert every_tool
    unprotected = settings(protect_tokens=0, minimum_tokens=0, protected_tools=frozenset())
    plan = plan_lines(lines, unprotected, session_ref=REF, fmt=fmt, estimator=CHARS4)
    assert plan.pruned
    protected = settings(protect_tokens=0, minimum_tokens=0, protected_tools=every_tool)
    plan = plan_lines(lines, protected, session_ref=REF, fmt=fmt, estimator=CHARS4)
    assert not plan.pruned and plan.budget is not None and not plan.budget.candidates
    assert plan.budget.decision.startswith("budget pruning: nothing to prune ("), plan.budget
