"""Claude Code's record of the files the model has seen, rebuilt on resume from the newest
Read, Write or Edit of each path: the newest Write of a file stays whole in any turn, so the
real `claude` (2.1.332) never tells the model that a file it wrote "changed on disk" when it
did not (every file after a fresh clone is newer than the session), nor pastes the file."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_harness import _binary, _cli_env, claude_project_dir, require_agent
from fake_llm_sse import FakeLLMServer, check_claude_code_request
from synthetic_claude import SESSION_ID, ClaudeSession, text

from gitclaw_compress.config import defaults
from gitclaw_compress.core.compressor import compress_entry_lines
from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.core.stubs import STUB_PREFIX
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.claude.rules import WRITE_KEPT_MAX_BYTES

NOTE = "changed on disk"


def _run(data: bytes, **overrides: Any) -> list[bytes]:
    settings = dataclasses.replace(defaults().compress_settings(), keep_turns=1, **overrides)
    lines = lines_from_bytes(data)
    out, _ = compress_entry_lines(lines, settings, "s.jsonl", fmt=detect(lines, "s.jsonl"))
    return [line.data for line in out]


def _body(size: int) -> str:
    return "".join(f"line {n} of the file the model wrote, padded\n" for n in range(size // 44))


def _session(work: Path, body: str, *then: tuple[str, dict[str, Any], str]) -> tuple[bytes, Path]:
    """Turn 1 writes `work/app.py` (then makes the calls in `then`: name, input, result);
    two more turns of text follow, so turn 1 is an older turn at keep 1."""
    session = ClaudeSession(cwd=str(work))
    target = work / "app.py"
    session.user("Turn 1: write app.py")
    session.tool_use("toolu_w1", "Write", {"file_path": str(target), "content": body})
    written: dict[str, Any] = {"type": "create", "filePath": str(target), "content": body}
    written |= {"structuredPatch": [], "originalFile": None}
    session.tool_result("toolu_w1", f"File created successfully at: {target}", written)
    for number, (name, arguments, result) in enumerate(then):
        session.tool_use(f"toolu_then{number}", name, {"file_path": str(target), **arguments})
        session.tool_result(f"toolu_then{number}", result, {"filePath": str(target)})
    session.assistant(text("Wrote it."))
    for turn in (2, 3):
        session.user(f"Turn {turn}")
        session.assistant(text(f"Answer {turn}."))
    return session.data(), target


def _write_content(lines: list[bytes]) -> object:
    for line in lines:
        record = orjson.loads(line)
        for block in record.get("message", {}).get("content", []):
            if isinstance(block, dict) and block.get("id") == "toolu_w1":
                return block["input"]["content"]
    raise AssertionError("no Write call")


@pytest.mark.parametrize("deep", [False, True])
def test_the_newest_write_of_a_file_stays_whole(deep: bool) -> None:
    body = _body(4000)
    data, _ = _session(Path("/home/dev/project"), body)
    once = _run(data, deep=deep)
    assert _write_content(once) == body
    assert _run(b"\n".join(once) + b"\n", deep=deep) == once, "a second run changed the file"


@pytest.mark.parametrize(
    "then",
    [
        ("Read", {}, "1\tline 0 of the file"),
        ("Edit", {"old_string": "line 0", "new_string": "line zero"}, "updated"),
    ],
)
def test_a_write_is_stubbed_when_a_newer_call_is_the_files_record(
    then: tuple[str, dict[str, Any], str],
) -> None:
    """Claude Code records a Read's text (never compared with the file) or reads an Edit's
    file itself: the Write's content then is no record, and its stub costs nothing."""
    data, _ = _session(Path("/home/dev/project"), _body(4000), then)
    content = _write_content(_run(data))
    assert isinstance(content, str) and content.startswith(STUB_PREFIX)


def test_a_read_that_claude_code_does_not_record_leaves_the_write_whole() -> None:
    unchanged = "File unchanged since last read. The content from the earlier Read is current."
    data, _ = _session(Path("/home/dev/project"), _body(4000), ("Read", {}, unchanged))
    assert _write_content(_run(data)) == _body(4000)


def test_a_write_before_the_newest_compact_boundary_is_stubbed() -> None:
    """Claude Code resumes from its newest compact boundary: what came before is no record."""
    data, _ = _session(Path("/home/dev/project"), _body(4000))
    session = ClaudeSession(cwd="/home/dev/project")
    session.lines = data.split(b"\n")[:-1]
    session.last = orjson.loads(session.lines[-1])["uuid"]
    session.chain("system", subtype="compact_boundary", compactMetadata={"trigger": "manual"})
    session.user("The summary.", isCompactSummary=True)
    session.user("Turn 4")
    session.assistant(text("Answer 4."))
    content = _write_content(_run(session.data()))
    assert isinstance(content, str) and content.startswith(STUB_PREFIX)


def test_a_write_larger_than_the_note_claude_code_would_paste_is_stubbed() -> None:
    body = _body(WRITE_KEPT_MAX_BYTES + 2000)
    content = _write_content(_run(_session(Path("/home/dev/project"), body)[0]))
    assert isinstance(content, str) and content.startswith(STUB_PREFIX)


def _resume(root: Path, data: bytes) -> str:
    """The last Messages request of `claude -p --resume` on `data`, as sent."""
    home, work, config = root / "home", root / "work", root / "home" / ".claude"
    project = claude_project_dir(config, work)
    project.mkdir(parents=True)
    (project / f"{SESSION_ID}.jsonl").write_bytes(data)
    trusted = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    settings = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["x"], "rejected": []},
        "projects": {str(work): trusted},
    }
    (config / ".claude.json").write_text(json.dumps(settings))
    with FakeLLMServer(checker=check_claude_code_request) as server:
        env = {
            **_cli_env(home),
            "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "x",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        argv = [str(_binary("claude")), "-p", "--resume", SESSION_ID, "Anything new?"]
        done = subprocess.run(
            [*argv, "--output-format", "json"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        requests = [r for r in server.requests if r["protocol"] == "anthropic-messages"]
    assert done.returncode == 0, f"claude exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert not [p for r in requests for p in r["problems"]]
    return str(requests[-1]["raw"])


@pytest.mark.parametrize("deep", [False, True])
def test_claude_resumes_a_compressed_write_without_a_false_changed_file_note(
    tmp_path: Path, deep: bool
) -> None:
    """The file on disk is what the session wrote, but newer than the session, as after a
    clone: `claude` tells the model nothing about it, for the original and the compressed
    session alike (with the Write's content stubbed, it pasted the file as "changed")."""
    require_agent("claude")
    root = tmp_path / "run"
    (root / "home" / "tmp").mkdir(parents=True)
    (root / "home" / ".claude").mkdir()
    (root / "work").mkdir()
    body = _body(4000)
    data, target = _session(root / "work", body)
    target.write_text(body)
    compressed = b"\n".join(_run(data, deep=deep)) + b"\n"
    assert STUB_PREFIX.encode() in compressed, "nothing was compressed"
    request = _resume(root, compressed)
    assert NOTE not in request, "claude said a file the session wrote changed on disk"
    assert json.dumps(body)[1:-1] in request, "the Write's content was not sent whole"
