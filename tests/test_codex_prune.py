"""Budget pruning on Codex rollouts: a line a budget policy chose (`Scope.prune`) gets its tool
output stubbed, wherever it is, and nothing else; the real CLI resumes the result with every
tool pair intact. The core is driven directly: the policy that picks lines reads pi's
entries until the layers above the formats read `Format.resume`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_harness import corpus_transcripts
from codex_requests import compare, resume_in_cli, resumed
from fake_llm_sse import sealed_reasoning, tool_call_ids
from synthetic_codex import typical_rollout

from gitclaw_compress.core.compressor import CompressSettings, compress_lines, scan
from gitclaw_compress.core.lines import RawLine, join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.core.stubs import is_stub
from gitclaw_compress.formats.codex.rules import FORMAT
from gitclaw_compress.model import TOOL

REF = ".codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-019d417c.jsonl"


def output_lines(lines: list[RawLine]) -> list[int]:
    """Every line that holds a tool output."""
    found = []
    for line in lines:
        entry = parse_entry(line.data) or {}
        payload = entry.get("payload") or {}
        if entry.get("type") == "response_item" and str(payload.get("type")).endswith("_output"):
            found.append(line.number)
    return found


def prune(
    data: bytes, chosen: set[int] | None = None, keep_turns: int = 1
) -> tuple[bytes, dict[str, bytes], set[int]]:
    """Compress with `chosen` (default: every tool output) pruned; the new bytes, the
    archived payloads and the lines it prunes."""
    lines = lines_from_bytes(data)
    chosen = set(output_lines(lines)) if chosen is None else chosen
    settings = CompressSettings(keep_turns=keep_turns)
    plan = dataclasses.replace(scan(lines, settings, FORMAT), pruned=frozenset(chosen))
    out, payloads = [], {}
    for result in compress_lines(lines, plan, settings, session_ref=REF):
        out.append(result.line)
        payloads.update({payload.oid: payload.data for payload in result.payloads})
    return join_lines(out), payloads, chosen


def restore(data: bytes, payloads: dict[str, bytes]) -> bytes:
    return join_lines(restore_line(line, "s", payloads.get) for line in lines_from_bytes(data))


def entries(data: bytes) -> list[dict[str, Any]]:
    return [parse_entry(line.data) or {} for line in lines_from_bytes(data)]


def without_marker(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key != "gitclawCompress"}


def test_a_pruned_line_in_the_kept_turn_gets_only_its_output_stubbed() -> None:
    data = typical_rollout(turns=3).data()
    pruned, payloads, chosen = prune(data, keep_turns=1)
    assert restore(pruned, payloads) == data
    before, after = entries(data), entries(pruned)
    last_turn = max(i for i, e in enumerate(before) if e["payload"].get("type") == "task_started")
    kept_outputs = [n for n in chosen if n - 1 > last_turn]
    assert len(kept_outputs) == 3  # the shell, the image and the patch of the kept turn
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        if index + 1 in chosen:
            output, original = new["payload"]["output"], old["payload"]["output"]
            assert type(output) is type(original)
            text = output if isinstance(output, str) else output[0]["text"]
            assert is_stub(text)
            rest = {k: v for k, v in new["payload"].items() if k != "output"}
            assert rest == {k: v for k, v in old["payload"].items() if k != "output"}
        elif index > last_turn:
            assert new == old  # nothing else in the kept turn changes
    for old, new in zip(before, after, strict=True):
        assert dict(FORMAT.sealed(old)) == dict(FORMAT.sealed(without_marker(new)))


def test_pruning_only_some_outputs_leaves_the_others() -> None:
    data = typical_rollout(turns=2).data()
    lines = lines_from_bytes(data)
    newest = output_lines(lines)[-1]
    pruned, _, _ = prune(data, {newest}, keep_turns=2)  # nothing is before the kept turns
    changed = [
        number
        for number, (old, new) in enumerate(zip(entries(data), entries(pruned), strict=True), 1)
        if old != without_marker(new)
    ]
    assert changed == [newest]


def test_pruning_twice_changes_nothing() -> None:
    data = typical_rollout(turns=2).data()
    once, _, chosen = prune(data)
    twice, payloads, _ = prune(once, chosen)
    assert twice == once and not payloads


def test_resume_sees_the_stubs_and_the_real_cli_resumes_a_pruned_rollout(tmp_path: Path) -> None:
    data = typical_rollout(turns=3).data()
    pruned, _, _ = prune(data)
    conversation = resumed(pruned)
    results = [m.parts[0].text for m in conversation.messages if m.role == TOOL]
    assert len(results) == 9 and all(is_stub(text) for text in results)
    original = resume_in_cli(data, tmp_path / "original").body
    run = resume_in_cli(pruned, tmp_path / "pruned")
    assert compare(conversation, run.body) == []
    assert tool_call_ids(run.body) == tool_call_ids(original)
    assert sealed_reasoning(run.body) == sealed_reasoning(original)
    assert len(orjson.dumps(run.body)) < len(orjson.dumps(original))


CORPUS = corpus_transcripts("codex")


@pytest.mark.skipif(not CORPUS, reason="no ../shared/corpus/codex")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_a_corpus_rollout_with_every_output_pruned_resumes_in_the_real_cli(
    path: Path, tmp_path: Path
) -> None:
    data = path.read_bytes()
    pruned, payloads, _ = prune(data, keep_turns=1)
    assert restore(pruned, payloads) == data
    run = resume_in_cli(pruned, tmp_path, path.name)
    assert compare(resumed(pruned), run.body) == []
    outputs = [orjson.dumps(i) for i in run.body["input"] if str(i.get("type")).endswith("_output")]
    stubbed = [output for output in outputs if b"gitclaw-compress" in output]
    # An output shorter than its stub stays as it is (the core keeps edits that save bytes):
    # how many that leaves is the rollout's (rollout__019d47a1 sends 33 outputs, 22 of them
    # under 720 bytes), so only the long ones must all be stubs.
    assert stubbed
    assert all(len(output) < 1000 for output in outputs if output not in stubbed)
