"""Codex's own compaction record written by `FORMAT.summary_record`: a `compacted` line whose
replacement history is the summary and then the kept tail. Appended to the corpus and to
synthetic rollouts, it is resumed by the real Codex CLI (offline), and the first request
holds the summary and the kept tail only, every tool pair whole and sealed reasoning as it
was, and agrees with `FORMAT.resume`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_harness import corpus_transcripts
from codex_requests import compare, resume_in_cli, resumed
from fake_llm_sse import conversation, request_size, sealed_reasoning, tool_call_ids
from synthetic_codex import RolloutBuilder, compacted_rollout, context_turns, typical_rollout

from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats.codex.rules import FORMAT
from gitclaw_compress.model import SUMMARY, TEXT, SummaryRequest

SUMMARY_TEXT = "TEST-SUMMARY-7f3a: the user asked for listings and patches; all done."


def last_turn_start(data: bytes, turns_kept: int = 1) -> int:
    """The line of the task_started that opens the newest `turns_kept` turns."""
    starts = [
        line.number
        for line in lines_from_bytes(data)
        if (entry := parse_entry(line.data)) is not None
        and entry.get("type") == "event_msg"
        and entry["payload"].get("type") == "task_started"
    ]
    return starts[-turns_kept]


def with_record(data: bytes, summary: str = SUMMARY_TEXT, first_kept: int | None = None) -> bytes:
    lines = lines_from_bytes(data)
    request = SummaryRequest(
        summary=summary,
        first_kept=first_kept if first_kept is not None else last_turn_start(data),
        leaf=lines[-1].number,
        tokens_before=100_000,
        timestamp="2026-11-23T12:00:00.000Z",
    )
    record = FORMAT.summary_record(lines, request)
    assert len(record) == 1 and b"\n" not in record[0]
    return data + record[0] + b"\n"


def input_texts(body: dict[str, Any]) -> list[str]:
    return [
        str(part.get("text"))
        for item in conversation(body)
        for part in item.get("content") or []
        if isinstance(part, dict)
    ]


def call_ids_from(data: bytes, first: int) -> list[str]:
    """The call ids of the response items on lines `first` and later, in order."""
    ids = []
    for line in lines_from_bytes(data)[first - 1 :]:
        entry = parse_entry(line.data) or {}
        payload = entry.get("payload") or {}
        if entry.get("type") == "response_item" and payload.get("type") in (
            "function_call",
            "custom_tool_call",
        ):
            ids.append(str(payload["call_id"]))
    return ids


def encrypted_from(data: bytes, first: int) -> list[str]:
    found = []
    for line in lines_from_bytes(data)[first - 1 :]:
        entry = parse_entry(line.data) or {}
        payload = entry.get("payload") or {}
        if entry.get("type") == "response_item" and "encrypted_content" in payload:
            found.append(str(payload["encrypted_content"]))
    return found


def check_summarized(data: bytes, tmp_path: Path, name: str) -> tuple[int, int]:
    """Append a record keeping the last turn, resume with and without it, check the first
    request; (request bytes without, with). The items from the file must shrink by 60% or
    more; the whole request too on real rollouts, where the CLI's fixed part (its tool
    definitions and new-turn context, 30 KB or more) is small beside the conversation."""
    first_kept = last_turn_start(data)
    summarized = with_record(data, first_kept=first_kept)
    before = resume_in_cli(data, tmp_path / "before", name)
    after = resume_in_cli(summarized, tmp_path / "after", name)
    body = after.body
    texts = input_texts(body)
    assert any(SUMMARY_TEXT in text for text in texts)
    # None of the summarized messages: no prompt or call of an older turn.
    older_prompts = {
        str(entry["payload"]["message"])
        for line in lines_from_bytes(data)[: first_kept - 1]
        if (entry := parse_entry(line.data)) is not None
        and entry.get("type") == "event_msg"
        and entry["payload"].get("type") == "user_message"
    }
    assert not older_prompts & set(texts)
    assert tool_call_ids(body) == call_ids_from(data, first_kept)
    outputs = {
        str(item.get("call_id")): item.get("output")
        for item in conversation(body)
        if str(item.get("type")).endswith("_output")
    }
    assert set(outputs) == set(tool_call_ids(body))
    assert "aborted" not in outputs.values()
    sealed = [
        item["encrypted_content"] for item in conversation(body) if "encrypted_content" in item
    ]
    assert sealed == encrypted_from(data, first_kept)
    assert compare(resumed(summarized), body) == []
    # The items from the file: what resume rebuilds (the CLI's new turn comes after them).
    sizes = [
        len(orjson.dumps(run.body["input"][: len(resumed(source).messages)]))
        for run, source in ((before, data), (after, summarized))
    ]
    assert sizes[1] <= sizes[0] * 0.4, sizes
    return request_size(before.request), request_size(after.request)


def compacted_then_four_turns() -> RolloutBuilder:
    """Codex's own (sealed) compaction, then four turns: a record after an older one."""
    builder = compacted_rollout()
    builder.full_turn(5)
    builder.full_turn(6)
    return builder


@pytest.mark.parametrize(
    "make",
    [lambda: typical_rollout(turns=4), lambda: context_turns(5), compacted_then_four_turns],
    ids=["typical", "context", "compacted"],
)
def test_the_real_cli_resumes_from_the_record_on_synthetic_rollouts(
    make: Any, tmp_path: Path
) -> None:
    builder: RolloutBuilder = make()
    check_summarized(builder.data(), tmp_path, "rollout.jsonl")


CORPUS = [p for p in corpus_transcripts("codex") if p.read_bytes().count(b'"user_message"') >= 4]


@pytest.mark.skipif(not CORPUS, reason="no ../shared/corpus/codex")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_the_real_cli_resumes_from_the_record_on_the_corpus(path: Path, tmp_path: Path) -> None:
    without, with_ = check_summarized(path.read_bytes(), tmp_path, path.name)
    print(f"{path.name}: {without:,} -> {with_:,} request bytes")
    assert with_ <= without * 0.4


def test_the_record_only_appends_and_resume_honours_it() -> None:
    data = typical_rollout(turns=3).data()
    summarized = with_record(data)
    assert summarized.startswith(data)
    record = orjson.loads(summarized[len(data) :])
    assert record["type"] == "compacted" and set(record["payload"]) == {
        "message",
        "replacement_history",
    }
    conversation_ = resumed(summarized)
    assert conversation_.compaction == len(lines_from_bytes(summarized))
    summary = conversation_.messages[1]
    assert summary.role == SUMMARY and SUMMARY_TEXT in summary.parts[0].text
    assert summary.parts[0].kind == TEXT
    # The base instructions, the summary, then the last turn from its prompt on.
    assert [m.line for m in conversation_.messages[2:]] == [conversation_.compaction] * (
        len(conversation_.messages) - 2
    )


def test_a_kept_output_pulls_its_call_in() -> None:
    data = typical_rollout(turns=2).data()
    lines = lines_from_bytes(data)
    output_line = next(
        line.number
        for line in lines
        if b'"function_call_output"' in line.data and line.number > last_turn_start(data)
    )
    summarized = with_record(data, first_kept=output_line)
    history = orjson.loads(summarized[len(data) :])["payload"]["replacement_history"]
    calls = [i["call_id"] for i in history if i["type"] in ("function_call", "custom_tool_call")]
    outputs = [i["call_id"] for i in history if str(i["type"]).endswith("_output")]
    assert calls == outputs and calls


def test_a_second_record_resumes_from_the_newest(tmp_path: Path) -> None:
    builder = context_turns(3)
    first = with_record(builder.data(), summary="FIRST-SUMMARY")
    builder.lines.append(first[len(builder.data()) :].rstrip(b"\n"))
    context_turns(2, builder, first=4)
    data = builder.data()
    summarized = with_record(data, summary="SECOND-SUMMARY")
    body = resume_in_cli(summarized, tmp_path).body
    texts = " ".join(input_texts(body))
    assert "SECOND-SUMMARY" in texts and "FIRST-SUMMARY" not in texts
    assert "prompt 5" in texts and "prompt 4" not in texts
    assert compare(resumed(summarized), body) == []
    assert sealed_reasoning(body)  # the kept turn's reasoning is sent as it was


def test_the_context_summarize_reports_is_what_status_then_reads(repo: Path) -> None:
    # Codex sends its instructions before the conversation; the summary leaves them in place,
    # so the context after it counts them too.
    from conftest import cli, commit_session

    path = ".codex/sessions/2026/03/30/rollout-2026-03-30T10-00-00-019d417c-0000.jsonl"
    commit_session(repo, path, typical_rollout(6).data())
    done = cli("summarize", "--json", "--offline", "--keep-turns", "1", path, cwd=repo)
    report = orjson.loads(done.stdout)
    assert report["status"] == "summarized"
    status = orjson.loads(cli("status", "--json", path, cwd=repo).stdout)
    now = status["context_tokens"]
    assert abs(report["tokens_after"] - now) <= now * 0.05, (report["tokens_after"], now)


def with_default_record(data: bytes, summary: str = SUMMARY_TEXT) -> bytes:
    """The record `summarize` writes at its default for Codex: no turn kept, the newest
    requests copied before the summary, as Codex's own compaction writes them."""
    lines = lines_from_bytes(data)
    request = SummaryRequest(
        summary=summary,
        first_kept=len(lines) + 1,
        leaf=lines[-1].number,
        tokens_before=100_000,
        timestamp="2026-11-23T12:00:00.000Z",
        copy_requests=True,
    )
    return data + FORMAT.summary_record(lines, request)[0] + b"\n"


def prompts_of(data: bytes) -> list[str]:
    return [
        str(entry["payload"]["message"])
        for line in lines_from_bytes(data)
        if (entry := parse_entry(line.data)) is not None
        and entry.get("type") == "event_msg"
        and entry["payload"].get("type") == "user_message"
    ]


def test_the_default_record_copies_the_newest_requests_and_no_reasoning(tmp_path: Path) -> None:
    data = typical_rollout(turns=4).data()
    assert encrypted_from(data, 1)  # the rollout has sealed reasoning
    summarized = with_default_record(data)
    history = orjson.loads(summarized[len(data) :])["payload"]["replacement_history"]
    # Codex's own shape: user messages, the summary last; no reply, call or reasoning item.
    assert {(item["type"], item["role"]) for item in history} == {("message", "user")}
    assert SUMMARY_TEXT in history[-1]["content"][0]["text"]
    copied = [item["content"][0]["text"] for item in history[:-1]]
    assert copied and all(prompt in copied for prompt in prompts_of(data))
    body = resume_in_cli(summarized, tmp_path, "rollout.jsonl").body
    assert any(SUMMARY_TEXT in text for text in input_texts(body))
    assert not tool_call_ids(body) and not sealed_reasoning(body)
    assert compare(resumed(summarized), body) == []


def test_the_default_record_keeps_requests_within_codex_budget() -> None:
    # A request over Codex's 20,000 tokens (bytes / 4) is cut to them, as Codex cuts it;
    # older requests beyond the budget are left to the summary.
    builder = typical_rollout(turns=2)
    data = builder.data()
    long = "x" * 100_000
    lines = lines_from_bytes(data)
    grown = data.replace(prompts_of(data)[-1].encode(), long.encode())
    assert grown != data and len(lines_from_bytes(grown)) == len(lines)
    history = orjson.loads(with_default_record(grown)[len(grown) :])["payload"][
        "replacement_history"
    ]
    texts = [item["content"][0]["text"] for item in history[:-1]]
    assert len(texts) == 1 and texts[0] != long and len(texts[0].encode()) <= 80_000 + 200
