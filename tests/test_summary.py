"""The pure part of summarizing: the resume path, cut point, facts, prompt, summaries, record."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from conftest import corpus_files, needs_corpus
from synthetic import SessionBuilder, big_text, text, thinking, tool_call, typical_session

from gitclaw_compress.core.context import Context, measure_context, read_context
from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import FORMATS
from gitclaw_compress.model import (
    MODIFIED_FILES,
    READ_FILES,
    SUMMARY_META,
    TOOL_CALL,
    TOOL_RESULT,
    EntryView,
    Message,
    SummaryRequest,
)
from gitclaw_compress.summary.compose import extractive_summary, llm_summary
from gitclaw_compress.summary.facts import FACTS_HEADING, extract_facts
from gitclaw_compress.summary.plan import (
    KeepPolicy,
    NoSummary,
    SummaryPlan,
    plan_summary,
    valid_cuts,
)
from gitclaw_compress.summary.prompt import (
    EXTRACTIVE_NOTE,
    SECTIONS,
    PromptLimits,
    build_prompt,
    summary_body,
)
from gitclaw_compress.summary.text import trim_middle
from gitclaw_compress.tokens.estimate import get_estimator

PI = FORMATS["pi"]

EST = get_estimator("chars4")
TASK = "Build the parser — ünïcödé ✓ 日本語\n\nKeep `src/` tidy.\n  Indented line stays."


def context_of(data: bytes) -> Context:
    return read_context(PI, lines_from_bytes(data), EST)


def path_of(data: bytes) -> list[EntryView]:
    """The views on the resume path, root first."""
    context = context_of(data)
    on_path = set(context.conversation.path)
    return [view for view in context.views if view.number in on_path]


def messages_of(data: bytes) -> list[Message]:
    """The conversation pi resumes with."""
    return context_of(data).messages


def plan_of(data: bytes, keep: KeepPolicy) -> SummaryPlan:
    plan = plan_summary(context_of(data), keep, EST)
    assert isinstance(plan, SummaryPlan), plan
    return plan


def role(message: Message) -> str | None:
    """pi's own role of the message."""
    return message.label


def parallel_session() -> SessionBuilder:
    """Turns whose assistant messages make two tool calls at once, plus a failed bash call
    that a later bash call fixes."""
    s = SessionBuilder()
    s.user(TASK)
    s.assistant(
        tool_call("r1", "read", {"path": "src/a.py"}),
        tool_call("r2", "read", {"path": "src/b.py"}),
    )
    s.tool_result("r1", "read", big_text("a", 30))
    s.tool_result("r2", "read", big_text("b", 30))
    s.assistant(
        text("I decided to use a recursive descent parser instead of regexes."),
        tool_call("w1", "write", {"path": "src/parser.py", "content": big_text("p", 40)}),
    )
    s.tool_result("w1", "write", "Wrote src/parser.py")
    s.assistant(tool_call("b1", "bash", {"command": "pytest -q tests/test_parser.py"}))
    s.tool_result("b1", "bash", "E   ImportError: cannot import name 'parse'\n1 failed", error=True)
    s.assistant(
        text("The import fails because the function is called parse_all. Fixing it."),
        tool_call("e1", "edit", {"path": "src/parser.py", "oldText": "x", "newText": "y"}),
    )
    s.tool_result("e1", "edit", "Edited 1 place")
    s.assistant(tool_call("b2", "bash", {"command": "pytest -q"}))
    s.tool_result("b2", "bash", "3 passed")
    s.assistant(text("All tests pass."), stop="stop")
    s.user("Now add a CLI. You must not add dependencies.")
    s.assistant(tool_call("w2", "write", {"path": "src/cli.py", "content": "print()"}))
    s.tool_result("w2", "write", "Wrote src/cli.py")
    s.assistant(text("Added src/cli.py."), stop="stop")
    s.user("Write the docs.")
    s.assistant(
        tool_call("w3", "write", {"path": "docs/index.md", "content": "# Parser"}),
        tool_call("r3", "read", {"path": "README.md"}),
    )
    s.tool_result("w3", "write", "Wrote docs/index.md")
    s.tool_result("r3", "read", "# Readme")
    s.assistant(text("Docs written."), stop="stop")
    return s


# --------------------------------------------------------------------------------------
# Active path and context
# --------------------------------------------------------------------------------------


def test_active_path_follows_parent_ids_from_the_last_entry() -> None:
    s = SessionBuilder()
    first = s.user("one")
    abandoned = s.assistant(text("a"), stop="stop")
    s._last = first  # a branch: the next entry is another child of the first message
    two = s.user("two")
    last = s.assistant(text("b"), stop="stop")
    path = path_of(s.data())
    assert [n.id for n in path][1:] == [first, two, last]
    assert abandoned not in {n.id for n in path}


def test_the_path_is_read_as_pi_reads_it_invalid_utf8_and_entries_without_ids() -> None:
    s = SessionBuilder()
    first = s.user("one")
    reply = s.assistant(text("a"), stop="stop")
    data = s.data().rstrip(b"\n") + b"\n"
    data += (
        b'{"type":"message","id":"bad00001","parentId":"' + reply.encode() + b'",'
        b'"message":{"role":"user","content":"caf\xe9"}}\n'
        b'{"type":"message","parentId":"bad00001","message":{"role":"user","content":"no id"}}\n'
    )
    path = path_of(data)
    assert [n.id for n in path][-4:] == [first, reply, "bad00001", None]
    assert path[-2].messages[0].parts[0].text == "caf\ufffd"
    messages = messages_of(data)
    assert [m.line for m in messages] == [n.number for n in path if n.messages]
    # a compaction entry must name real ids: no cut at, and no parent from, an id-less entry
    assert not valid_cuts(messages)[-1]
    refused = plan_summary(context_of(data), KeepPolicy(turns=1), EST)
    assert isinstance(refused, NoSummary) and "no id" in refused.reason


def test_a_missing_parent_cuts_the_path_there() -> None:
    s = SessionBuilder()
    s.user("lost")
    s.assistant(text("lost too"), stop="stop")
    s._last = "deadbeef"  # not in the file
    kept = s.user("kept")
    path = path_of(s.data())
    assert [n.id for n in path] == [kept]


def test_context_nodes_after_a_compaction_follow_pi() -> None:
    s = SessionBuilder()
    s.user("old")
    kept = s.user("kept")
    compaction = s.entry("compaction", summary="S", firstKeptEntryId=kept, tokensBefore=1)
    after = s.user("after")
    messages = messages_of(s.data())
    assert [m.entry_id for m in messages] == [compaction, kept, after]


# --------------------------------------------------------------------------------------
# The cut point
# --------------------------------------------------------------------------------------


def test_no_cut_ever_separates_a_tool_call_from_its_results() -> None:
    messages = messages_of(parallel_session().data())
    valid = valid_cuts(messages)
    for position, ok in enumerate(valid):
        if not ok:
            continue
        assert role(messages[position]) in ("user", "assistant")
        before = {p.call_id for m in messages[:position] for p in m.parts if p.kind == TOOL_CALL}
        results_after = {
            p.call_id for m in messages[position:] for p in m.parts if p.kind == TOOL_RESULT
        }
        assert not before & results_after, position
    # Between a call and its last result nothing is valid, not even a user message.
    s = SessionBuilder()
    s.user("go")
    s.assistant(tool_call("c1", "bash", {"command": "sleep 1"}))
    steer = s.user("a message typed while the tool ran")
    s.tool_result("c1", "bash", "done")
    messages = messages_of(s.data())
    assert not valid_cuts(messages)[[m.entry_id for m in messages].index(steer)]


@pytest.mark.parametrize("tokens", [1, 50, 200, 400, 800, 1200, 2000, 3000])
def test_keep_tokens_keeps_at_least_k_and_cuts_at_a_valid_place(tokens: int) -> None:
    context = context_of(parallel_session().data())
    messages = context.messages
    plan = plan_summary(context, KeepPolicy(tokens=tokens), EST)
    if isinstance(plan, NoSummary):
        assert "fit in" in plan.reason or "no place" in plan.reason
        return
    valid = valid_cuts(messages)
    assert valid[plan.cut]
    assert plan.kept_tokens >= tokens
    # The nearest such cut: from the next valid place on, fewer than K tokens are left.
    later = next((i for i in range(plan.cut + 1, len(messages)) if valid[i]), None)
    if later is not None:
        assert sum(m.tokens for m in messages[later:]) < tokens


def test_keep_turns_cuts_at_the_nth_last_user_message() -> None:
    data = parallel_session().data()
    plan = plan_of(data, KeepPolicy(turns=2))
    users = [m for m in plan.messages if role(m) == "user"]
    assert plan.first_kept.entry_id == users[-2].entry_id
    assert plan.turn_start is None
    assert plan.round == 1 and plan.start == 0
    assert isinstance(plan_summary(context_of(data), KeepPolicy(turns=3), EST), NoSummary)


def test_a_token_cut_inside_a_turn_records_the_turn_start() -> None:
    data = typical_session(turns=3).data()
    cuts = []
    for tokens in range(100, 6000, 100):
        plan = plan_summary(context_of(data), KeepPolicy(tokens=tokens), EST)
        if isinstance(plan, SummaryPlan) and plan.turn_start is not None:
            cuts.append(plan)
    assert cuts, "no token budget cut inside a turn"
    for plan in cuts:
        assert role(plan.first_kept) == "assistant"
        assert plan.turn_start is not None and role(plan.turn_start) == "user"
        assert plan.turn_start.line < plan.first_kept.line


def test_nothing_to_summarize() -> None:
    s = SessionBuilder()
    s.user("hello")
    s.assistant(text("hi"), stop="stop")
    reason = plan_summary(context_of(s.data()), KeepPolicy(turns=1), EST)
    assert isinstance(reason, NoSummary) and "1 turn in the session" in reason.reason
    reason = plan_summary(context_of(s.data()), KeepPolicy(tokens=10_000), EST)
    assert isinstance(reason, NoSummary) and "fit in" in reason.reason
    s.entry("compaction", summary="x", firstKeptEntryId="00000002", tokensBefore=1)
    reason = plan_summary(context_of(s.data()), KeepPolicy(tokens=1), EST)
    assert isinstance(reason, NoSummary) and "ends with a compaction" in reason.reason


def test_second_round_starts_where_the_first_kept_messages_start() -> None:
    s = parallel_session()
    data = s.data()
    first = plan_of(data, KeepPolicy(turns=2))
    kept = first.first_kept.entry_id
    s.entry("compaction", summary="R1", firstKeptEntryId=kept, tokensBefore=9)
    s.user("Round two request.")
    s.assistant(text("ok"), stop="stop")
    second = plan_of(s.data(), KeepPolicy(turns=1))
    assert second.round == 2
    assert second.messages[second.start].entry_id == kept
    assert second.previous == "R1"
    summarized = {m.entry_id for m in second.summarized}
    assert kept in summarized
    assert not summarized & {m.entry_id for m in first.summarized}


# --------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------


def test_facts_task_files_tools_errors_and_decisions() -> None:
    plan = plan_of(parallel_session().data(), KeepPolicy(turns=1))
    facts = extract_facts(plan.history)
    assert facts.task == TASK  # word for word, newlines and all
    assert [text for _, text in facts.requests] == ["Now add a CLI. You must not add dependencies."]
    assert facts.modified_files == ["src/cli.py", "src/parser.py"]
    assert facts.files["src/parser.py"].writes == 1 and facts.files["src/parser.py"].edits == 1
    assert facts.read_files == ["src/a.py", "src/b.py"]
    counts = {use.name: (use.calls, use.failed) for use in facts.tools}
    assert counts == {"read": (2, 0), "write": (2, 0), "bash": (2, 1), "edit": (1, 0)}
    bash = next(use for use in facts.tools if use.name == "bash")
    assert bash.notable[0] == "bash `pytest -q tests/test_parser.py`"  # the failed one first
    [error] = facts.errors
    assert error.what == "bash `pytest -q tests/test_parser.py`"
    assert error.message == "E ImportError: cannot import name 'parse'"
    assert error.outcome.startswith("resolved: the next bash call succeeded (bash `pytest -q`")
    assert error.followed_by is not None and "parse_all" in error.followed_by
    assert any("recursive descent" in d for d in facts.decisions)
    assert any(d.startswith("user:") and "must not add" in d for d in facts.decisions)


def test_an_unresolved_error_and_a_failed_model_request() -> None:
    s = SessionBuilder()
    s.user("go")
    s.assistant(tool_call("b1", "bash", {"command": "make"}))
    s.tool_result("b1", "bash", "\n\nmake: *** No rule to make target", error=True)
    failed = s.assistant(text(""), stop="error")
    s.assistant(text("retrying"), stop="stop")
    s.user("next")
    plan = plan_of(s.data(), KeepPolicy(turns=1))
    errors = extract_facts(plan.history).errors
    assert errors[0].message == "make: *** No rule to make target"
    assert errors[0].outcome == "no later bash call before the cut"
    assert errors[1].entry_id == failed and errors[1].what == "model API"
    assert errors[1].outcome.startswith("resolved: the next model request succeeded")


def test_a_huge_task_is_cut_and_says_where_the_rest_is() -> None:
    s = SessionBuilder()
    task_id = s.user("T" * 20_000)
    s.assistant(text("ok"), stop="stop")
    s.user("more")
    facts = extract_facts(plan_of(s.data(), KeepPolicy(turns=1)).history)
    assert facts.task is not None and facts.task.startswith("T" * 12_000)
    assert f"8,000 more characters; it is entry {task_id}" in facts.task


# --------------------------------------------------------------------------------------
# Prompt and summaries
# --------------------------------------------------------------------------------------


def marked_session() -> SessionBuilder:
    s = SessionBuilder()
    s.user(TASK)
    s.assistant(thinking("THINK " * 10), tool_call("c1", "bash", {"command": "cat big.log"}))
    huge = "HEAD-MARKER\n" + "x" * 30_000 + "\nMIDDLE-MARKER\n" + "y" * 30_000 + "\nTAIL-MARKER"
    s.tool_result("c1", "bash", huge)
    s.assistant(text("The log is long."), stop="stop")
    s.user("Second request")
    s.assistant(text("Done."), stop="stop")
    return s


def test_prompt_has_the_sections_the_facts_and_trimmed_tool_results() -> None:
    plan = plan_of(marked_session().data(), KeepPolicy(turns=1))
    facts = extract_facts(plan.history)
    system, user = build_prompt(plan, facts, PromptLimits(tool_result_chars=600), 1500)
    assert "Do not continue the conversation" in system
    for section in SECTIONS:
        assert f"## {section}" in user
    assert "<conversation>" in user and "<extracted-facts" in user
    assert f"<original-task>\n{TASK}\n</original-task>" in user
    assert "HEAD-MARKER" in user and "TAIL-MARKER" in user
    assert "MIDDLE-MARKER" not in user
    assert "characters trimmed" in user
    assert "<previous-summary" not in user
    assert len(user) < 10_000
    assert "stay well under 1500 tokens" in user


def test_prompt_input_is_bounded_by_max_input_tokens() -> None:
    s = SessionBuilder()
    s.user("FIRST-REQUEST")
    for n in range(200):
        s.assistant(tool_call(f"c{n}", "bash", {"command": f"step {n}"}))
        s.tool_result(f"c{n}", "bash", f"OUT-{n} " + "z" * 1500)
    s.assistant(text("LAST-REPLY"), stop="stop")
    s.user("next")
    plan = plan_of(s.data(), KeepPolicy(turns=1))
    _, user = build_prompt(plan, extract_facts(plan.history), PromptLimits(2000, 10_000), 100)
    conversation = user.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0]
    assert len(conversation) <= 10_000 * 4
    assert "FIRST-REQUEST" in conversation and "LAST-REPLY" in conversation
    assert "messages omitted to fit summary.maxInputTokens" in conversation
    assert "OUT-100 " not in conversation


def test_round_two_prompt_integrates_the_previous_summary_without_its_facts() -> None:
    s = marked_session()
    first = plan_of(s.data(), KeepPolicy(turns=1))
    facts = extract_facts(first.history)
    body = "## What was accomplished\nREAD-THE-LOG-MARKER"
    summary = llm_summary(first, facts, body, model="m", provider="openai")
    s.entry(
        "compaction", summary=summary, firstKeptEntryId=first.first_kept.entry_id, tokensBefore=1
    )
    s.user("Third request")
    s.assistant(text("ok"), stop="stop")
    second = plan_of(s.data(), KeepPolicy(turns=1))
    _, user = build_prompt(second, extract_facts(second.history), PromptLimits(), 1500)
    previous = user.split('<previous-summary round="1">\n', 1)[1].split("</previous-summary>")[0]
    assert previous.strip() == body
    assert "This is round 2" in user
    assert user.count("<original-task>") == 1  # the facts once, freshly extracted


def test_summary_body_strips_header_and_facts_and_keeps_foreign_summaries() -> None:
    plan = plan_of(marked_session().data(), KeepPolicy(turns=1))
    facts = extract_facts(plan.history)
    assert summary_body(llm_summary(plan, facts, "BODY", model="m", provider="p")) == "BODY"
    extractive = extractive_summary(plan, facts)
    assert FACTS_HEADING not in summary_body(extractive)
    assert EXTRACTIVE_NOTE not in summary_body(extractive)
    pi_own = "## Goal\nx\n\n<read-files>\na\n</read-files>"
    assert summary_body(pi_own) == pi_own


def test_extractive_summary_says_so_and_holds_the_facts() -> None:
    plan = plan_of(parallel_session().data(), KeepPolicy(turns=1))
    facts = extract_facts(plan.history)
    summary = extractive_summary(plan, facts)
    assert summary.startswith("Continuation summary, round 1 (extractive, no LLM")
    assert "EXTRACTIVE" in summary and "without an LLM" in summary
    assert TASK in summary
    assert "`src/parser.py` (written, edited)" in summary
    assert "Now add a CLI" in summary and "Added src/cli.py." in summary
    assert "<modified-files>\nsrc/cli.py\nsrc/parser.py\n</modified-files>" in summary
    assert summary == extractive_summary(plan, extract_facts(plan.history))  # deterministic


def test_compaction_entry_shape() -> None:
    data = parallel_session().data()
    plan = plan_of(data, KeepPolicy(turns=1))
    facts = extract_facts(plan.history)
    request = SummaryRequest(
        summary="S",
        first_kept=plan.first_kept.line,
        leaf=plan.leaf.number,
        tokens_before=plan.tokens_before,
        timestamp="T",
        details={
            READ_FILES: facts.read_files,
            MODIFIED_FILES: facts.modified_files,
            SUMMARY_META: {"round": 1},
        },
    )
    [line] = PI.summary_record(lines_from_bytes(data), request)
    entry: dict[str, Any] = orjson.loads(line)
    assert list(entry) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
    ]
    assert entry["parentId"] == plan.path[-1].id
    assert entry["firstKeptEntryId"] == plan.first_kept.entry_id
    assert len(entry["id"]) == 8 and entry["details"]["gitclawSummary"] == {"round": 1}
    assert entry["details"]["readFiles"] == ["src/a.py", "src/b.py"]
    assert entry["details"]["modifiedFiles"] == ["src/cli.py", "src/parser.py"]


def test_context_tokens_prefers_usage_then_distrusts_it_after_a_compaction() -> None:
    """The plan's tokens before come from the one "recorded usage plus estimate" rule."""

    def size(data: bytes) -> tuple[int, int, str]:
        found = measure_context(context_of(data), EST)
        return found.tokens, found.estimated, found.source

    s = SessionBuilder()
    s.user("q")
    kept = s.assistant(text("a" * 400), stop="stop")  # usage totalTokens 18237
    s.user("b" * 40)
    assert size(s.data()) == (18237 + 10, 100 + 1 + 10, "usage+estimate")
    s.entry("compaction", summary="c" * 80, firstKeptEntryId=kept, tokensBefore=1)
    assert size(s.data()) == (20 + 100 + 10, 130, "estimate")
    s.assistant(text("new"), stop="stop")  # usage recorded after the compaction is trusted
    assert size(s.data())[::2] == (18237, "usage")


def test_trim_middle() -> None:
    assert trim_middle("short", 10) == "short"
    trimmed = trim_middle("a" * 50 + "b" * 50, 30)
    assert trimmed.startswith("a" * 20) and trimmed.endswith("b" * 10)
    assert "[... 70 characters trimmed ...]" in trimmed


@needs_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_plans_cut_validly_and_summaries_are_bounded(path: Any) -> None:
    context = context_of(path.read_bytes())
    for keep in (KeepPolicy(turns=1), KeepPolicy(tokens=5000)):
        plan = plan_summary(context, keep, EST)
        if isinstance(plan, NoSummary):
            continue
        assert valid_cuts(context.messages)[plan.cut]
        summary = extractive_summary(plan, extract_facts(plan.history))
        assert len(summary) < 60_000


def test_pi_record_refuses_lines_without_ids() -> None:
    s = SessionBuilder()
    s.user("one")
    s.assistant(text("a"), stop="stop")
    data = (
        s.data()
        + b'{"type":"message","parentId":"00000003","message":{"role":"user","content":"x"}}\n'
    )
    lines = lines_from_bytes(data)
    request = SummaryRequest(
        summary="S", first_kept=3, leaf=len(lines), tokens_before=1, timestamp="T"
    )
    with pytest.raises(GitClawError, match=f"line {len(lines)} has no entry id"):
        PI.summary_record(lines, request)
