"""The real pi resumes from the compaction entries that `summarize` writes.

These tests need pi (.ci/install-pi.sh). They skip when it is missing, except when the
environment variable CI is set: then they fail (pi_harness.require_pi decides).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, corpus_files, git
from pi_harness import pi_context, read_entries, require_pi, run_pi_resume
from synthetic import SessionBuilder, big_text, text, thinking, tool_call

from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats import FORMATS

# What pi puts around a compaction summary (COMPACTION_SUMMARY_PREFIX/SUFFIX in messages.js).
PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
SUFFIX = "\n</summary>"


def session_in_repo(repo: Path, data: bytes, name: str = "s.jsonl") -> Path:
    path = repo / ".GITCLAW" / "state" / "sessions" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def summarize(repo: Path, path: Path, *args: str) -> dict[str, Any]:
    rel = str(path.relative_to(repo))
    report: dict[str, Any] = json.loads(cli("summarize", "--json", *args, rel, cwd=repo).stdout)
    return report


def anthropic_session(turns: int) -> SessionBuilder:
    s = SessionBuilder()  # claude-opus-4-6, anthropic-messages, signed thinking
    for n in range(turns):
        s.user(f"USER-{n}: port module {n}")
        s.assistant(
            thinking(f"Thinking about module {n}."),
            tool_call(f"toolu_r{n}", "read", {"path": f"src/m{n}.py"}),
            tool_call(f"toolu_l{n}", "bash", {"command": f"ls src/m{n}"}),
        )
        s.tool_result(f"toolu_r{n}", "read", big_text(f"m{n}", 80))
        s.tool_result(f"toolu_l{n}", "bash", f"m{n}.py")
        s.assistant(
            text(f"Writing m{n}.rs."),
            tool_call(f"toolu_w{n}", "write", {"path": f"src/m{n}.rs", "content": "fn f() {}"}),
        )
        s.tool_result(f"toolu_w{n}", "write", f"Wrote src/m{n}.rs")
        s.assistant(text(f"ASSISTANT-{n}: module {n} done."), stop="stop")
    return s


def _call_key(call_id: str, name: str, api: str) -> str:
    """How a tool call is recognised in a request: Gemini sends no ids, only names; the
    Responses API sends the call_id, the part of pi's "call_id|item_id" before the bar."""
    if api == "google-generative-ai":
        return name
    return call_id.split("|", 1)[0]


def kept_expectation(path: Path, api: str) -> tuple[list[str], list[str], list[str]]:
    """From the file alone: the user texts, tool calls and tool results that pi must send
    after the newest compaction summary (its kept entries, then the later ones)."""
    entries = [e for e in read_entries(path) if e.get("type") != "session"]
    position = max(i for i, e in enumerate(entries) if e["type"] == "compaction")
    compaction = entries[position]
    first = next(i for i, e in enumerate(entries) if e["id"] == compaction["firstKeptEntryId"])
    kept = [
        e["message"]
        for e in entries[first:position] + entries[position + 1 :]
        if e["type"] == "message"
    ]
    users = [
        "".join(b["text"] for b in m["content"] if b["type"] == "text")
        if isinstance(m["content"], list)
        else m["content"]
        for m in kept
        if m["role"] == "user"
    ]
    calls = [
        _call_key(b["id"], b["name"], api)
        for m in kept
        if m["role"] == "assistant" and m.get("stopReason") not in ("error", "aborted")
        for b in m["content"]
        if b["type"] == "toolCall"
    ]
    results = [
        _call_key(m["toolCallId"], m["toolName"], api) for m in kept if m["role"] == "toolResult"
    ]
    return users, calls, results


def _text(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type", "text") in kinds)


def sent(body: dict[str, Any], api: str) -> tuple[list[str], list[str], list[str]]:
    """The same three lists from a request body, leaving out the summary (the first user
    message) and the prompt of the resume (the last user text)."""
    users: list[str] = []
    calls: list[str] = []
    results: list[str] = []
    if api == "anthropic-messages":
        for message in body["messages"]:
            blocks = message["content"]
            if isinstance(blocks, str):
                blocks = [{"type": "text", "text": blocks}]
            if message["role"] == "user":
                if any(b["type"] == "text" for b in blocks):
                    users.append(_text(blocks))
                results += [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
            else:
                calls += [b["id"] for b in blocks if b["type"] == "tool_use"]
    elif api == "openai-responses":
        for item in body["input"]:
            if item.get("role") == "user":
                users.append(_text(item["content"], ("input_text",)))
            elif item.get("type") == "function_call":
                calls.append(item["call_id"])
            elif item.get("type") == "function_call_output":
                results.append(item["call_id"])
    elif api == "google-generative-ai":
        for content in body["contents"]:
            parts = content["parts"]
            if content["role"] == "user" and any("text" in p for p in parts):
                users.append("".join(p["text"] for p in parts if "text" in p))
            calls += [p["functionCall"]["name"] for p in parts if "functionCall" in p]
            results += [p["functionResponse"]["name"] for p in parts if "functionResponse" in p]
    else:  # openai-completions (OpenAI, OpenRouter, the fake provider)
        for message in body["messages"]:
            if message["role"] == "user":
                users.append(_text(message["content"]))
            elif message["role"] == "assistant":
                calls += [c["id"] for c in message.get("tool_calls") or []]
            elif message["role"] == "tool":
                results.append(message["tool_call_id"])
    return users[1:-1], calls, results


def first_text(body: dict[str, Any], api: str) -> str:
    """The text of the first message the model gets after the system prompt."""
    if api == "google-generative-ai":
        first = body["contents"][0]
        assert first["role"] == "user"
        return "".join(p["text"] for p in first["parts"])
    items = body["input"] if api == "openai-responses" else body["messages"]
    first = next(m for m in items if m.get("role") not in ("system", "developer"))
    assert first["role"] == "user"
    return _text(first["content"], ("text", "input_text"))


def assert_pi_resumes_from_the_summary(path: Path, tmp_path: Path, **run: Any) -> dict[str, Any]:
    """Checks pi's request on resume of `path`, and returns it (a test checks more of it)."""
    original = path.read_bytes()
    entry = read_entries(path)[-1]
    assert entry["type"] == "compaction"
    result = run_pi_resume(path, tmp_path=tmp_path, **run)
    assert path.read_bytes() == original  # pi ran on a copy
    [body] = result.bodies
    # The request begins with the summary, exactly as written...
    assert first_text(body, result.api) == PREFIX + entry["summary"] + SUFFIX
    # ...and then holds only the kept entries (and pi's new prompt).
    assert sent(body, result.api) == kept_expectation(path, result.api)
    # pi's own context builder agrees with ours (the resume `summarize` cuts on).
    pi = FORMATS["pi"]
    conversation = pi.resume(list(pi.views(lines_from_bytes(original))))
    ours = [message.entry_id for message in conversation.messages]
    assert [m["entryId"] for m in pi_context(path)] == ours
    return body


@pytest.mark.parametrize("keep", [("--keep-turns", "1"), ("--keep-tokens", "900")])
def test_pi_resumes_from_a_summary_of_a_synthetic_session(
    repo: Path, tmp_path: Path, keep: tuple[str, str]
) -> None:
    require_pi(node=True)
    path = session_in_repo(repo, anthropic_session(4).data())
    report = summarize(repo, path, *keep)
    assert report["status"] == "summarized"
    first_kept = next(e for e in read_entries(path) if e.get("id") == report["first_kept_entry_id"])
    if keep[0] == "--keep-tokens":  # a cut inside a turn, at an assistant message
        assert first_kept["message"]["role"] == "assistant"
    else:
        assert first_kept["message"]["content"][0]["text"] == "USER-3: port module 3"
    body = assert_pi_resumes_from_the_summary(path, tmp_path, api="anthropic")
    rest = json.dumps(body["messages"][1:])
    assert "USER-0" not in rest and "ASSISTANT-0" not in rest  # summarized, so gone
    assert "USER-3" in rest  # kept


def test_pi_resumes_after_two_chained_rounds(repo: Path, tmp_path: Path) -> None:
    require_pi(node=True)
    session = anthropic_session(3)
    path = session_in_repo(repo, session.data())
    first = summarize(repo, path, "--keep-turns", "1")
    # pi appends the next turns as children of the compaction entry (the leaf).
    start = len(session.lines)
    session._last = first["compaction_id"]
    session._ids = iter(range(0x100, 0x200))  # type: ignore[assignment]
    session.user("USER-NEW: one more module")
    session.assistant(text("ASSISTANT-NEW: done"), stop="stop")
    with open(path, "ab") as handle:
        handle.write(b"".join(line + b"\n" for line in session.lines[start:]))
    second = summarize(repo, path, "--keep-turns", "1")
    assert (first["round"], second["round"]) == (1, 2)
    body = assert_pi_resumes_from_the_summary(path, tmp_path, api="anthropic")
    summary_text = first_text(body, "anthropic-messages")
    assert summary_text.count("Continuation summary, round") == 1
    assert "round 2" in summary_text and "USER-0: port module 0" in summary_text
    assert "USER-NEW" in json.dumps(body["messages"][1:])


CORPUS = corpus_files()


@pytest.mark.parametrize(
    "source",
    CORPUS or [pytest.param(None, marks=pytest.mark.skip(reason="no ../shared/corpus/pi"))],
    ids=[p.name for p in CORPUS] or ["no-corpus"],
)
def test_pi_resumes_a_summarized_corpus_session(repo: Path, tmp_path: Path, source: Path) -> None:
    require_pi(node=True)
    path = repo / ".GITCLAW" / "state" / "sessions" / source.name
    path.parent.mkdir(parents=True)
    shutil.copyfile(source, path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    report = summarize(repo, path, "--keep-turns", "1")
    if report["status"] != "summarized":  # one turn, or a short first one: cut by tokens
        report = summarize(repo, path, "--keep-tokens", "300")
    if report["status"] != "summarized":
        # Too short to gain anything: the summary would be larger than what it replaces.
        assert report["tokens_before_estimated"] < 5_000, report
        pytest.skip(f"{source.name}: {report['reason']}")
    assert report["tokens_after"] < report["tokens_before_estimated"]
    entries = read_entries(path)
    # The chain from the leaf reaches the root unless the file's own chain is cut.
    by_id = {e.get("id"): e for e in entries[1:]}
    current: dict[str, Any] | None = entries[-1]
    while current is not None and current.get("parentId") is not None:
        current = by_id.get(current["parentId"])
    assert_pi_resumes_from_the_summary(path, tmp_path, api="native", validate=current is not None)
