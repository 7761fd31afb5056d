"""A transcript still resumes in its agent's real CLI: Claude Code, OpenAI Codex and GitHub
Copilot CLI, each run offline against the fake LLM server (tests/agent_harness.py).

Uncompressed transcripts (synthetic and the shared corpus) prove the harness and the CLIs.
Compressed ones prove the product, for every format at once, in test_resume_contract.py;
here stay the checks that only one agent needs. The CLIs are required in CI
(``require_agent``).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from agent_fixtures import TRANSCRIPTS
from agent_harness import (
    AGENTS,
    SESSION_IDS,
    AgentRun,
    claude_interactive_screen,
    corpus_transcripts,
    representative_transcripts,
    require_agent,
    require_tmux,
    run_resume,
    view_text,
)
from conftest import accept_corpus_secrets, cli, git
from fake_llm_sse import (
    conversation,
    empty_text_blocks,
    sealed_reasoning,
    tool_call_ids,
)

from gitclaw_compress.core.lines import MARKER_BYTES, MARKER_KEY
from gitclaw_compress.core.marker import is_ui_only
from gitclaw_compress.formats.codex.rules import PATCH_EVENTS, REPLY_COPIES

# Where each agent's transcript lives in a repository that commits it (the compressor may
# recognize the format by its path as well as by its lines).
REPO_PATHS = {
    "claude": ".claude/projects/-home-runner-work-demo-demo/{id}.jsonl",
    "codex": ".codex/sessions/2026/03/30/rollout-2026-03-30T19-00-00-{id}.jsonl",
    "copilot": "state/copilot/.copilot/session-state/{id}/events.jsonl",
}


def corpus_params() -> list[Any]:
    """(agent, transcript) for a compacted and a plain corpus transcript of each agent (the
    whole corpus: bench/resume_sweep.py)."""
    params = [
        pytest.param(
            agent,
            path,
            id=f"{agent}-{path.name}",
        )
        for agent in AGENTS
        for path in representative_transcripts(agent)
    ]
    no_corpus = pytest.mark.skip(reason="no ../shared/corpus")
    return params or [pytest.param("", Path(), id="no-corpus", marks=no_corpus)]


def _synthetic(agent: str, tmp_path: Path) -> Path:
    path = tmp_path / f"synthetic-{agent}.jsonl"
    path.write_bytes(TRANSCRIPTS[agent]().data)
    return path


def _resume(agent: str, transcript: Path, tmp_path: Path, shared: bool = False) -> AgentRun:
    """With `shared`, the resume of the same bytes another test made (agent_harness): for
    checks that do not compare one run's bytes with another's."""
    require_agent(agent)
    return run_resume(agent, transcript, tmp_path=tmp_path, shared=shared).check()


def _compress(agent: str, source: Path, repo: Path, *options: str) -> Path:
    """Commit ``source`` where the agent's transcripts live, then compress it with the real
    CLI, keeping the last turn. Fails (does not skip) when nothing was compressed."""
    session_id = SESSION_IDS[agent](source)
    path = repo / REPO_PATHS[agent].format(id=session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    accept_corpus_secrets(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    cli("compress", "--force", "--keep-turns", "1", *options, str(path), cwd=repo)
    compressed = path.read_bytes()
    assert compressed != source.read_bytes(), f"compress left {source.name} unchanged"
    assert b'"gitclawCompress"' in compressed
    return path


# --------------------------------------------------------------------------------------
# Uncompressed
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", list(AGENTS))
def test_synthetic_transcript_resumes(agent: str, tmp_path: Path) -> None:
    transcript = TRANSCRIPTS[agent]()
    run = _resume(agent, _synthetic(agent, tmp_path), tmp_path, shared=True)
    assert len(run.llm_requests) == 1
    unserved = [r["path"] for r in run.requests if r["protocol"] is None]
    assert unserved == [], "the CLI needs a route the fake server does not answer"
    raw = run.request["raw"]
    for name, marker in transcript.markers.items():
        assert json.dumps(marker)[1:-1] in raw, f"{name} did not reach the model"
    body = run.body
    assert empty_text_blocks(body) == []
    expected_calls = {
        "claude": ["toolu_01Read", "toolu_01Edit", "toolu_01Bash", "toolu_01Task", "toolu_01Shot"],
        "codex": ["call_01Shell", "call_01Image", "call_01Patch"],
        "copilot": ["tooluse_01Docs", "tooluse_01Log"],
    }
    assert tool_call_ids(body) == expected_calls[agent]
    # Claude replays both signed thinking blocks, Codex all three reasoning items; Copilot's
    # bring-your-own-key mode does not send reasoningOpaque back at all.
    assert len(sealed_reasoning(body)) == {"claude": 2, "codex": 3, "copilot": 0}[agent]


def test_claude_resume_starts_at_the_compact_boundary(tmp_path: Path) -> None:
    run = _resume("claude", _synthetic("claude", tmp_path), tmp_path, shared=True)
    assert "an early question" not in run.request["raw"]


def test_codex_falls_back_from_the_websocket_to_http(tmp_path: Path) -> None:
    run = _resume("codex", _synthetic("codex", tmp_path), tmp_path, shared=True)
    assert [(r["method"], r["headers"].get("upgrade")) for r in run.requests] == [
        ("GET", "websocket"),
        ("POST", None),
    ]
    assert run.request["path"] == "/v1/responses"


def test_claude_drops_a_broken_pair_silently_so_call_ids_are_compared(tmp_path: Path) -> None:
    """Claude Code (2.1.197 and 2.1.332) leaves a tool call out of the request, with no error,
    when its result names another id: only comparing the call ids with the uncompressed resume's (as
    test_resume_contract.py does) catches a compressor that breaks a pair."""
    source = _synthetic("claude", tmp_path)
    good = _resume("claude", source, tmp_path / "good", shared=True)
    data = source.read_bytes()
    source.write_bytes(data.replace(b'"tool_use_id":"toolu_01Bash"', b'"tool_use_id":"toolu_x"'))
    broken = _resume("claude", source, tmp_path / "broken")
    assert "toolu_01Bash" in tool_call_ids(good.body)
    assert tool_call_ids(broken.body) == [
        i for i in tool_call_ids(good.body) if i != "toolu_01Bash"
    ]


@pytest.mark.parametrize(("agent", "source"), corpus_params())
def test_corpus_transcript_resumes(agent: str, source: Path, tmp_path: Path) -> None:
    run = _resume(agent, source, tmp_path, shared=True)
    body = run.body
    assert len(run.llm_requests) == 1
    assert conversation(body) and tool_call_ids(body)
    assert empty_text_blocks(body) == []


# --------------------------------------------------------------------------------------
# Claude Code's interactive transcript view (tmux)
# --------------------------------------------------------------------------------------


def _assert_renders(
    transcript: Path, tmp_path: Path, texts: list[str], *, detailed: bool = False
) -> str:
    require_agent("claude")
    require_tmux()
    screen = claude_interactive_screen(
        transcript, tmp_path=tmp_path, expect=texts[-1], detailed=detailed
    )
    for text in texts:
        assert text in screen, f"{text!r} is not on the screen:\n{screen}"
    return screen


def test_claude_interactive_view_renders_the_synthetic_transcript(tmp_path: Path) -> None:
    markers = TRANSCRIPTS["claude"]().markers
    screen = _assert_renders(
        _synthetic("claude", tmp_path),
        tmp_path,
        [markers["turn1"], markers["turn1_answer"], markers["turn2"], markers["final"]],
    )
    assert "Error" not in screen  # the transcript itself holds no such word


def test_claude_detailed_view_renders_tool_results(tmp_path: Path) -> None:
    """ctrl+o renders each toolUseResult: Bash stdout and stderr, the image's size."""
    markers = TRANSCRIPTS["claude"]().markers
    screen = _assert_renders(
        _synthetic("claude", tmp_path),
        tmp_path,
        ["200 passed", "warning: slow test", "Read image (", markers["final"]],
        detailed=True,
    )
    assert "Error" not in screen


CLAUDE_CORPUS = representative_transcripts("claude")
# Deep drops signed thinking of old turns: the smallest corpus file that holds some (Entire's).
DEEP_VIEWED = (
    sorted(
        (path for path in corpus_transcripts("claude") if path.name.startswith("entire-cli__")),
        key=lambda path: path.stat().st_size,
    )[:1]
    or CLAUDE_CORPUS[:1]
)


@pytest.mark.parametrize(
    "source",
    CLAUDE_CORPUS or [pytest.param(Path(), marks=pytest.mark.skip(reason="no corpus"))],
    ids=[p.name for p in CLAUDE_CORPUS] or ["no-corpus"],
)
def test_claude_interactive_view_renders_a_corpus_transcript(source: Path, tmp_path: Path) -> None:
    text = view_text(source)
    assert text, f"{source.name} has no typed prompt and no reply"
    _assert_renders(source, tmp_path, [text])


def test_claude_interactive_view_renders_a_compressed_transcript(
    repo: Path, tmp_path: Path
) -> None:
    require_agent("claude")
    markers = TRANSCRIPTS["claude"]().markers
    compressed = _compress("claude", _synthetic("claude", tmp_path), repo)
    texts = [markers["turn1"], markers["turn2"], markers["final"]]
    assert "Error" not in _assert_renders(compressed, tmp_path / "short", texts)
    assert "Error" not in _assert_renders(compressed, tmp_path / "long", texts, detailed=True)


@pytest.mark.parametrize(
    "source",
    CLAUDE_CORPUS or [pytest.param(Path(), marks=pytest.mark.skip(reason="no corpus"))],
    ids=[p.name for p in CLAUDE_CORPUS] or ["no-corpus"],
)
def test_claude_interactive_view_renders_a_compressed_corpus_transcript(
    source: Path, repo: Path, tmp_path: Path
) -> None:
    require_agent("claude")
    compressed = _compress("claude", source, repo)
    _assert_renders(compressed, tmp_path, [view_text(source)])


# --------------------------------------------------------------------------------------
# stubUiCopies: the model sees nothing else
# --------------------------------------------------------------------------------------

# What a CLI puts in its first request that differs from run to run, whatever the file: a
# device id made for each fresh home (Claude Code); the ids and times of the turn Codex opens
# for the new prompt, and its client_metadata (an installation id made for each fresh home,
# that turn's ids, in a map whose key order changes from run to run), the last member; the
# time Copilot CLI stamps on the prompt. Everything else must match.
VARIES_PER_RUN = {
    "claude": [(r'"metadata":\{"user_id":"(?:[^"\\]|\\.)*"\}', '"metadata":{}')],
    "codex": [
        (r'"id":"msg_[0-9a-f-]+"', '"id":"msg_"'),
        (r'"turn_id":"[0-9a-f-]+"', '"turn_id":""'),
        (r'"create_time":[0-9.]+', '"create_time":0'),
        (r',"client_metadata":\{.*\}\}$', "}"),
    ],
    "copilot": [(r"<current_datetime>[^<]*</current_datetime>", "<current_datetime/>")],
}


def ui_only_marker(line: bytes) -> bool:
    """Whether a line carries a marker with the UI-only flag (v1 `"ui":true`, v3 `:ui`)."""
    return MARKER_BYTES in line and is_ui_only(json.loads(line).get(MARKER_KEY))


def _first_request(agent: str, transcript: Path, run_root: Path) -> str:
    """The raw first LLM request of a resume, with what varies per run made constant. Every
    run uses the same folder (removed after), so the paths the CLI sends are the same."""
    run = _resume(agent, transcript, run_root)
    raw = str(run.request["raw"])
    shutil.rmtree(run_root)
    for pattern, constant in VARIES_PER_RUN[agent]:
        raw = re.sub(pattern, constant, raw)
    return raw


@pytest.mark.parametrize(("agent", "source"), corpus_params())
def test_stubbing_ui_copies_leaves_the_first_request_byte_identical(
    agent: str, source: Path, tmp_path: Path
) -> None:
    """With stubUiCopies the file shrinks in the kept turns too, and the request the CLI sends
    on resume is byte for byte the one it sends without the option."""
    require_agent(agent)
    requests, files = {}, {}
    for option in (False, True):
        repo = tmp_path / f"repo-{option}"
        repo.mkdir()
        git(repo, "init", "-q")
        config = tmp_path / f"config-{option}.json"
        config.write_text(json.dumps({"session": {"stubUiCopies": option}}))
        # Four kept turns (the default): more UI copies in the kept window than one.
        options = ("--config", str(config), "--keep-turns", "4")
        compressed = _compress(agent, source, repo, *options)
        files[option] = compressed.read_bytes()
        requests[option] = _first_request(agent, compressed, tmp_path / "run")
    if agent == "codex" and not codex_ui_copies(source.read_bytes()):
        # Codex wrote no UI-only copy into this rollout: the option has nothing to stub, and
        # must change nothing.
        assert files[True] == files[False]
    else:
        assert len(files[True]) < len(files[False]), "the option stubbed nothing"
        assert any(ui_only_marker(line) for line in files[True].split(b"\n")), (
            "no UI-only copy stubbed in the kept turns"
        )
    assert requests[True] == requests[False], _first_difference(requests[False], requests[True])


def codex_ui_copies(data: bytes) -> bool:
    """Whether a rollout holds any event that only copies a command's output, a patch, a
    reply, a plan or a reasoning summary for the UI (what stubUiCopies stubs in Codex
    rollouts; the newest `task_complete` stays)."""
    answers = 0
    for raw in data.split(b"\n"):
        if b'"event_msg"' not in raw:
            continue
        payload = json.loads(raw).get("payload") or {}
        kind = payload.get("type")
        if kind in ("exec_command_end", "item_completed", *PATCH_EVENTS, *REPLY_COPIES):
            answers += kind == "task_complete"
            if kind != "task_complete" or answers > 1:
                return True
    return False


def _first_difference(a: str, b: str) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"without: {a[at - 200 : at + 200]!r}\nwith:    {b[at - 200 : at + 200]!r}"


@pytest.mark.parametrize(
    "source",
    CLAUDE_CORPUS or [pytest.param(Path(), marks=pytest.mark.skip(reason="no corpus"))],
    ids=[p.name for p in CLAUDE_CORPUS] or ["no-corpus"],
)
def test_claude_interactive_view_renders_a_transcript_with_ui_copies_stubbed(
    source: Path, repo: Path, tmp_path: Path
) -> None:
    """stubUiCopies stubs toolUseResult in the kept turn too: the transcript view (and its
    detailed view, which renders toolUseResult) still opens it."""
    require_agent("claude")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"session": {"stubUiCopies": True}}))
    compressed = _compress("claude", source, repo, "--config", str(config))
    _assert_renders(compressed, tmp_path / "short", [view_text(source)])
    _assert_renders(compressed, tmp_path / "long", [view_text(source)], detailed=True)


@pytest.mark.parametrize(
    "source",
    DEEP_VIEWED or [pytest.param(Path(), marks=pytest.mark.skip(reason="no corpus"))],
    ids=[p.name for p in DEEP_VIEWED] or ["no-corpus"],
)
def test_claude_interactive_view_renders_a_deep_compressed_transcript(
    source: Path, repo: Path, tmp_path: Path
) -> None:
    """--deep drops the thinking lines of old turns (their content becomes []), stubs old
    pasted text and attachments, trims old usage, and stubs large outputs in the kept turn:
    the transcript view and its detailed view still open it."""
    require_agent("claude")
    compressed = _compress("claude", source, repo, "--deep")
    _assert_renders(compressed, tmp_path / "short", [view_text(source)])
    _assert_renders(compressed, tmp_path / "long", [view_text(source)], detailed=True)
