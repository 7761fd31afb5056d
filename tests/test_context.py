"""What the model sees on resume: the context module, `context`, and the match with pi itself.

The tests against pi run tests/node/context.mjs (pi's own buildSessionContext and
convertToLlm). They skip when pi is not installed (.ci/install-pi.sh) unless CI is set, in
which case they fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import cli, corpus_files, git
from pi_harness import pi_context, require_pi
from synthetic import SessionBuilder, big_text, compaction_session, text, tool_call

from gitclaw_compress.core.compressor import (
    CompressSettings,
    compress_entry_lines,
    compress_lines,
    git_blob_id,
    plan_lines,
)
from gitclaw_compress.core.context import Context, level_for, measure_context, read_context
from gitclaw_compress.core.lines import MARKER_KEY, join_lines, lines_from_bytes
from gitclaw_compress.formats import FORMATS, detect
from gitclaw_compress.model import COMPACTION, SUMMARY
from gitclaw_compress.tokens.estimate import get_estimator

SESSION = ".GITCLAW/state/sessions/s.jsonl"
CHARS4 = get_estimator("chars4")


def context_of(data: bytes) -> Context:
    return read_context(FORMATS["pi"], lines_from_bytes(data), CHARS4)


def ours(repo: Path, path: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(cli("context", "--json", path, cwd=repo).stdout)[
        "messages"
    ]
    return messages


def same_as_pi(repo: Path, path: str) -> None:
    """Same count, same roles in the same order, same source entries as pi (pi's roles in
    neutral words: a summary is a summary, a tool result a tool's output)."""
    pi = pi_context(repo / path)
    mine = ours(repo, path)
    neutral = {"user": "user", "assistant": "assistant", "toolResult": "tool"}
    summaries = {"compactionSummary", "branchSummary"}
    assert [m["role"] for m in mine] == [
        SUMMARY if m["sourceRole"] in summaries else neutral[m["role"]] for m in pi
    ]
    assert [m["source_role"] for m in mine] == [m["sourceRole"] for m in pi]
    assert [m["entry_id"] for m in mine] == [m["entryId"] for m in pi]


# --- the context module ------------------------------------------------------------------


def test_compaction_summary_first_then_kept_entries_then_the_rest() -> None:
    session = compaction_session()
    context = context_of(session.data())
    kinds = {view.number: view.kind for view in context.views}
    summary = context.messages[0]
    assert (summary.role, summary.label, kinds[summary.line]) == (
        SUMMARY,
        "compactionSummary",
        COMPACTION,
    )
    # The later compaction wins: its summary, then from its firstKeptEntryId ("Turn 2").
    assert context.compaction == summary.line
    assert "later compaction" not in summary.parts[0].text
    first = context.messages[1]
    entries = [json.loads(line) for line in session.lines]
    by_id = {e["id"]: e for e in entries[1:]}
    assert first.entry_id is not None
    assert by_id[first.entry_id]["message"]["content"][0]["text"] == "Turn 2: now the tests"
    assert [message.label for message in context.messages[1:]] == [
        "user",
        "assistant",
        "toolResult",
        "bashExecution",  # the one with excludeFromContext is dropped, as convertToLlm does
        "assistant",  # ended in error: in the context, but providers drop it
        "user",
        "branchSummary",
        "custom",
        "assistant",
        "toolResult",
        "user",
        "assistant",
    ]
    # pi sends summaries, bash executions and custom messages as user messages.
    assert [m.role for m in context.messages].count("user") + [
        m.role for m in context.messages
    ].count(SUMMARY) == 7
    error_reply = context.messages[5]
    assert not error_reply.sent and error_reply not in context.sent()
    # The abandoned branch and Turn 1 (before firstKeptEntryId) are not in the context.
    left_out = {
        e["id"]
        for e in entries[1:]
        if str(e.get("message", {}).get("content")).count("Read them.")
        + str(e.get("message", {}).get("content")).count("go back.")
    }
    assert len(left_out) == 2
    assert left_out.isdisjoint(message.entry_id for message in context.messages)
    assert context.model == "claude-opus-4-6"


def test_a_missing_parent_cuts_the_history_and_a_cycle_ends_the_walk() -> None:
    session = SessionBuilder()
    session.user("old")
    session.assistant(text("old reply"), stop="stop")
    session._last = "deadbeef"  # a parent that is not in the file
    kept = session.user("new")
    session.assistant(text("new reply"), stop="stop")
    context = context_of(session.data())
    assert context.messages[0].entry_id == kept
    assert len(context.messages) == 2
    looped = session.data().replace(b'"parentId":"deadbeef"', f'"parentId":"{kept}"'.encode())
    assert len(context_of(looped).messages) == 2


def test_recorded_usage_is_preferred_and_later_messages_are_estimated() -> None:
    session = SessionBuilder()
    session.user("go")
    session.assistant(text("first"), stop="stop", total_tokens=1000)
    session.user("x" * 400)  # 100 tokens with chars4
    size = measure_context(context_of(session.data()), CHARS4)
    assert (size.source, size.usage_tokens, size.trailing_tokens) == ("usage+estimate", 1000, 100)
    assert size.tokens == 1100
    session.assistant(text("second"), stop="stop", total_tokens=1500)
    assert measure_context(context_of(session.data()), CHARS4).tokens == 1500
    session.assistant(text("crashed"), stop="error", total_tokens=99999)
    size = measure_context(context_of(session.data()), CHARS4)
    assert (size.source, size.tokens) == ("usage", 1500)  # pi ignores usage of failed replies


def test_without_usable_usage_every_message_is_estimated() -> None:
    session = SessionBuilder()
    session.user("x" * 400)
    session.assistant(text("y" * 800), stop="stop", total_tokens=0)
    size = measure_context(context_of(session.data()), CHARS4)
    assert (size.source, size.tokens, size.estimator) == ("estimate", 300, "chars4")


def test_usage_is_not_trusted_after_compaction_or_compression() -> None:
    session = compaction_session()
    context = context_of(session.data())
    size = measure_context(context, CHARS4)
    # The last reply with usage ("All green.") comes after the compaction: trusted.
    assert size.source == "usage"
    stale = SessionBuilder()
    first = stale.user("go")
    stale.assistant(text("before"), stop="stop", total_tokens=50_000)
    stale.entry("compaction", summary="short", firstKeptEntryId=first, tokensBefore=50_000)
    size = measure_context(context_of(stale.data()), CHARS4)
    assert size.source == "estimate" and size.usage_tokens == 50_000
    assert size.note is not None and "before the compaction" in size.note
    marked = SessionBuilder()
    marked.user("go")
    marked.assistant(tool_call("r", "read", {"path": "a"}))
    marked.tool_result("r", "read", big_text("a", 200))
    marked.assistant(text("done"), stop="stop", total_tokens=40_000)
    data = marked.data()
    lines, _ = compress_entry_lines(
        lines_from_bytes(data),
        CompressSettings(keep_turns=0),
        "s",
        fmt=detect(lines_from_bytes(data), "s"),
    )
    compressed = join_lines(lines)
    assert compressed != data
    size = measure_context(context_of(compressed), CHARS4)
    assert size.source == "estimate" and size.note is not None and "compressed" in size.note
    assert measure_context(context_of(data), CHARS4).source == "usage"


def test_usage_recorded_after_a_compression_is_trusted_again() -> None:
    session = SessionBuilder()
    session.user("go")
    session.assistant(tool_call("r", "read", {"path": "a"}))
    session.tool_result("r", "read", big_text("a", 200))
    session.assistant(text("done"), stop="stop", total_tokens=40_000)
    lines, _ = compress_entry_lines(
        lines_from_bytes(session.data()),
        CompressSettings(keep_turns=0),
        "s",
        fmt=detect(lines_from_bytes(session.data()), "s"),
    )
    compressed = join_lines(lines)
    marker = orjson.loads(compressed.split(b"\n")[4])[MARKER_KEY]
    assert marker["lines"] == len(session.lines)  # the file's length when it was compressed
    # pi resumes the compressed file and records the usage of what it sent.
    count = len(session.lines)
    session.user("and now?")
    session.assistant(text("all good"), stop="stop", total_tokens=9_000)
    appended = compressed + b"".join(line + b"\n" for line in session.lines[count:])
    size = measure_context(context_of(appended), CHARS4)
    assert (size.source, size.tokens, size.note) == ("usage", 9_000, None)
    # A marker that does not say when (an older one) is not trusted.
    old = appended.replace(b',"lines":%d' % count, b"")
    assert old != appended
    assert measure_context(context_of(old), CHARS4).source == "estimate"


def test_usage_recorded_after_a_v3_compression_is_trusted_again() -> None:
    """The same with the file committed before it was compressed (a v3 marker, its line
    count the last field); a count past the usage's line means the usage came before."""
    session = SessionBuilder()
    session.user("go")
    session.assistant(tool_call("r", "read", {"path": "a"}))
    session.tool_result("r", "read", big_text("a", 200))
    session.assistant(text("done"), stop="stop", total_tokens=40_000)
    data = session.data()
    settings = CompressSettings(keep_turns=0)
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, settings, session_ref="s", fmt=detect(lines, "s"))
    blob = git_blob_id(data)
    outputs = compress_lines(lines, plan, settings, session_ref="s", intact_blob=lambda _: blob)
    compressed = join_lines(output.line for output in outputs)
    count = len(session.lines)
    marker = orjson.loads(compressed.split(b"\n")[4])[MARKER_KEY]
    assert marker.startswith(f"3:{blob}:5:") and marker.endswith(f":{count}")
    session.user("and now?")
    session.assistant(text("all good"), stop="stop", total_tokens=9_000)
    appended = compressed + b"".join(line + b"\n" for line in session.lines[count:])
    size = measure_context(context_of(appended), CHARS4)
    assert (size.source, size.tokens, size.note) == ("usage", 9_000, None)
    later = appended.replace(b':%d"' % count, b':%d"' % (count + 2))
    assert later != appended
    assert measure_context(context_of(later), CHARS4).source == "estimate"


@pytest.mark.parametrize(
    ("tokens", "level"),
    [
        (0, "ok"),
        (749, "ok"),
        (750, "warning"),
        (899, "warning"),
        (900, "critical"),
        (2000, "critical"),
    ],
)
def test_levels_at_their_boundaries(tokens: int, level: str) -> None:
    assert level_for(tokens, 1000, 75, 90) == level


def test_no_usable_context_is_critical() -> None:
    assert level_for(0, 0, 75, 90) == "critical"


# --- the command ----------------------------------------------------------------------------


@pytest.fixture
def compaction_repo(repo: Path) -> Path:
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    path.write_bytes(compaction_session().data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return repo


def test_context_json_lists_messages_and_totals(compaction_repo: Path) -> None:
    report = json.loads(cli("context", "--json", SESSION, cwd=compaction_repo).stdout)
    messages, totals = report["messages"], report["totals"]
    assert messages[0]["role"] == SUMMARY and messages[0]["source_role"] == "compactionSummary"
    assert messages[0]["preview"].startswith("## Goal Read the files")
    assert all(m["tokens"] > 0 for m in messages)
    assert [m["sent"] for m in messages].count(False) == 1
    assert totals["active_messages"] == len(messages) == 13
    # Every entry that yields a message: 21 messages (the excluded bash run is not one),
    # 2 compactions, 1 branch summary, 1 custom message.
    assert totals["messages"] == 25
    assert totals["summaries"] == 3 and totals["active_summaries"] == 2
    assert totals["history_source"] == "file"
    assert totals["compression_ratio"] == round(
        totals["history_tokens"] / totals["estimated_tokens"], 2
    )
    assert totals["compression_ratio"] > 1  # Turn 1 and the abandoned branch are not sent
    human = cli("context", SESSION, cwd=compaction_repo).stdout.decode()
    assert "compactionSummary" in human and "totals: 25 messages, 13 active" in human


def test_context_history_counts_the_original_once_compressed(compaction_repo: Path) -> None:
    before = json.loads(cli("context", "--json", SESSION, cwd=compaction_repo).stdout)["totals"]
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=compaction_repo)
    after = json.loads(cli("context", "--json", SESSION, cwd=compaction_repo).stdout)["totals"]
    assert after["history_source"] == "original"
    assert after["history_tokens"] == before["history_tokens"]
    assert after["compressed_messages"] > 0
    assert after["estimated_tokens"] < before["estimated_tokens"]
    assert after["compression_ratio"] > before["compression_ratio"]


# --- the same messages as pi ------------------------------------------------------------------


def test_context_matches_pi_on_a_session_with_a_compaction_entry(compaction_repo: Path) -> None:
    """No corpus file holds a pi compaction entry; this synthetic one does (and a branch
    summary, an abandoned branch, custom and excluded bash messages, a failed reply)."""
    require_pi(node=True)
    same_as_pi(compaction_repo, SESSION)
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=compaction_repo)
    assert b'"gitclawCompress"' in (compaction_repo / SESSION).read_bytes()
    same_as_pi(compaction_repo, SESSION)


@pytest.mark.parametrize(
    "source",
    corpus_files() or [pytest.param(None, marks=pytest.mark.skip(reason="no ../shared/corpus"))],
    ids=[p.name for p in corpus_files()] or ["no-corpus"],
)
def test_context_matches_pi_on_the_corpus_before_and_after_compress(
    repo: Path, source: Path
) -> None:
    require_pi(node=True)
    path = f".GITCLAW/state/sessions/{source.name}"
    (repo / path).parent.mkdir(parents=True)
    shutil.copyfile(source, repo / path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions as the agent committed them")
    same_as_pi(repo, path)
    cli("compress", "--keep-turns", "1", "--force", path, cwd=repo)
    same_as_pi(repo, path)
