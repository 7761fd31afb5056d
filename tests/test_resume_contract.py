"""A compressed transcript still resumes in its agent's real CLI, checked the same way for
every format of `format_cases.FORMAT_CASES`, through one harness (`agent_harness.run_resume`,
offline against the fake LLM server that applies the real APIs' rules).

Each resumable synthetic transcript and each corpus file of the format is committed where its
agent puts it, compressed with the real CLI at --keep-turns 1, and resumed before and after:
- the CLI exits 0 and sends one request, which the fake API accepts (every tool call with its
  result, signed thinking well formed, no empty text blocks);
- the request holds as many messages and the same tool calls, in order;
- sealed reasoning (signed thinking, encrypted or opaque reasoning) is byte-identical (pi
  leaves out the old thinking compress emptied: what it sends is a part of what it sent);
- the request is smaller.
The agent-specific deeper checks stay in test_agent_resume.py and test_pi_resume.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agent_fixtures import PNG_BASE64
from agent_harness import PLACERS, SESSION_IDS, AgentRun, require_agent, run_resume
from conftest import accept_corpus_secrets, cli, commit_session
from fake_llm_sse import (
    conversation,
    empty_text_blocks,
    request_size,
    sealed_reasoning,
    tool_call_ids,
)
from format_cases import FORMAT_CASES, FormatCase


def _synthetic() -> list[object]:
    return [
        pytest.param(case, make, id=f"{case.name}-{label}")
        for case in FORMAT_CASES
        for label, make in case.resumable
    ]


def _corpus() -> list[object]:
    params: list[object] = [
        pytest.param(case, path.read_bytes, id=f"{case.name}-{path.stem}")
        for case in FORMAT_CASES
        for path in case.corpus()
    ]
    return params or [pytest.param(None, None, id="no-corpus", marks=pytest.mark.skip("no corpus"))]


def test_every_format_resumes_through_the_one_harness() -> None:
    assert sorted(PLACERS) == sorted(SESSION_IDS) == sorted(case.name for case in FORMAT_CASES)


def _resume(case: FormatCase, transcript: Path, tmp_path: Path, shared: bool = False) -> AgentRun:
    """With `shared`, the resume of the same bytes another test made (agent_harness): the
    original's run, compared with the copy's by structure and size, never byte for byte."""
    run = run_resume(case.name, transcript, tmp_path=tmp_path, shared=shared).check()
    assert len(run.llm_requests) == 1, "one request per resume"
    return run


def check_compressed_resume(
    case: FormatCase, data: bytes, repo: Path, tmp_path: Path, *options: str
) -> tuple[AgentRun, AgentRun]:
    require_agent(case.name)
    source = tmp_path / "source.jsonl"
    source.write_bytes(data)
    relpath = case.place(SESSION_IDS[case.name](source))
    accept_corpus_secrets(repo)
    path = commit_session(repo, relpath, data)
    cli("compress", "--force", "--keep-turns", "1", *options, relpath, cwd=repo)
    compressed = path.read_bytes()
    assert compressed != data and b'"gitclawCompress"' in compressed, "nothing was compressed"

    before = _resume(case, source, tmp_path / "before", shared=True)
    after = _resume(case, path, tmp_path / "after")
    sent_before, sent_after = before.body, after.body
    assert len(conversation(sent_after)) == len(conversation(sent_before)), "messages lost"
    # In order: every tool call kept, each with its result (the fake API refuses a call
    # without its result, or a result without its call).
    assert tool_call_ids(sent_after) == tool_call_ids(sent_before)
    sealed_before, sealed_after = sealed_reasoning(sent_before), sealed_reasoning(sent_after)
    if case.drops_old_thinking or "--deep" in options:
        # What is sent is sent byte for byte, in order (deep drops old thinking whole).
        remaining = iter(sealed_before)
        assert all(block in remaining for block in sealed_after), "sealed reasoning changed"
        if "--deep" in options and case.name == "claude":  # no reply is left empty
            assert all(message.get("content") for message in conversation(sent_after))
    else:
        assert sealed_after == sealed_before, "sealed reasoning changed"
    assert empty_text_blocks(sent_after) == [], "a stub left an empty text block"
    assert request_size(after.request) < request_size(before.request)
    return before, after


@pytest.mark.parametrize(("case", "make"), _synthetic())
def test_a_compressed_synthetic_transcript_resumes(
    case: FormatCase, make: Callable[[], bytes], repo: Path, tmp_path: Path
) -> None:
    data = make()
    before, after = check_compressed_resume(case, data, repo, tmp_path)
    if PNG_BASE64.encode() in data:
        # A person pasted an image in an old turn: the model got its base64 before, and now
        # a text stub that names it.
        assert PNG_BASE64[:64] in before.request["raw"]
        assert PNG_BASE64[:64] not in after.request["raw"]
        assert "User image elided: image/png" in after.request["raw"]


@pytest.mark.parametrize(("case", "read"), _corpus())
def test_a_compressed_corpus_transcript_resumes(
    case: FormatCase, read: Callable[[], bytes], repo: Path, tmp_path: Path
) -> None:
    check_compressed_resume(case, read(), repo, tmp_path)


def _deep_corpus() -> list[object]:
    """One corpus file per format, the first by name (Claude Code's has two compaction
    records and readable thinking, pi's holds the most bulk), and Claude Code's smallest with
    signed thinking, to keep the suite's time in check; bench/deep.py --resume resumes every
    one."""
    params: list[object] = []
    for case in FORMAT_CASES:
        files = sorted(case.corpus())
        if files:
            params.append(pytest.param(case, files[0].read_bytes, id=f"{case.name}-deep"))
        signed = [path for path in files if path.name.startswith("entire-cli__")]
        if case.name == "claude" and signed:
            smallest = min(signed, key=lambda path: path.stat().st_size)
            params.append(pytest.param(case, smallest.read_bytes, id="claude-signed-deep"))
    return params or [pytest.param(None, None, id="no-corpus", marks=pytest.mark.skip("no corpus"))]


@pytest.mark.parametrize(("case", "read"), _deep_corpus())
def test_a_deep_compressed_corpus_transcript_resumes(
    case: FormatCase, read: Callable[[], bytes], repo: Path, tmp_path: Path
) -> None:
    """`--deep` (kept-turn outputs over 8 KiB stubbed, UI copies everywhere, old thinking
    dropped whole): same messages, same tool calls, no signed block altered."""
    check_compressed_resume(case, read(), repo, tmp_path, "--deep")
