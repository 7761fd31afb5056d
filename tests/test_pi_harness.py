"""Tests of the real-pi harness (tests/pi_harness.py) and of what pi sends on resume.

Tests that need pi skip when it is not installed (run .ci/install-pi.sh), except when the
environment variable CI is set: then they fail, so CI cannot pass by skipping them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pi_harness
import pytest
from conftest import IN_CI_ENV
from pi_harness import (
    DEFAULT_PROMPT,
    DEFAULT_REPLY,
    FakeLLMServer,
    PiError,
    chain_reaches_root,
    check_request,
    copy_session_for_pi,
    iter_corpus,
    pi_context,
    require_pi,
    run_pi_resume,
)

# Markers that must (or must not) reach the model.
USER_TEXT = "USER-MARKER-7f3a: list the files in the repository"
THINKING_TEXT = "THINKING-MARKER-2b9e: I should run ls."
SIGNATURE = "EpYBCkYICxgCKkSYNTHETICSIGNATURE" + "A" * 40 + "=="
TOOL_CALL_ID = "toolu_01SynthTestCall000001"
TOOL_ARGS = {"command": "ls -la", "timeout": 30}
TOOL_TEXT = "TOOLRESULT-MARKER-91c2\nREADME.md\npyproject.toml"
DETAILS_MARKER = "DETAILS-MARKER-4d1f (shown by the UI only)"
EXTRA_MARKER = "GITCLAW-EXTRA-MARKER-88aa"
FINAL_TEXT = "ASSISTANT-MARKER-55d0: the repository has two files."
MODEL = "claude-opus-4-6"


# --------------------------------------------------------------------------------------
# Synthetic sessions (format v3, shaped like real pi files)
# --------------------------------------------------------------------------------------


class _Writer:
    """Builds a v3 session line by line, each entry a child of the previous one."""

    def __init__(self, cwd: str = "/nonexistent/gitclaw-synthetic-cwd") -> None:
        self.lines: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 3,
                "id": str(uuid.uuid4()),
                "timestamp": "2026-02-20T11:44:20.711Z",
                "cwd": cwd,
            }
        ]
        self.last_id: str | None = None
        self.n = 0

    def add(self, entry_type: str, **fields: Any) -> str:
        self.n += 1
        entry_id = f"{0xA0000000 + self.n:08x}"
        entry = {
            "type": entry_type,
            "id": entry_id,
            "parentId": self.last_id,
            "timestamp": f"2026-02-20T11:45:{self.n:02d}.000Z",
            **fields,
        }
        self.lines.append(entry)
        self.last_id = entry_id
        return entry_id

    def message(self, message: dict[str, Any], **extra: Any) -> str:
        message.setdefault("timestamp", 1771587860000 + self.n * 1000)
        return self.add("message", message=message, **extra)

    def write(self, path: Path) -> Path:
        text = "".join(
            json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
            for line in self.lines
        )
        path.write_text(text, encoding="utf-8")
        return path


def _usage() -> dict[str, Any]:
    return {
        "input": 1694,
        "output": 285,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 1979,
        "cost": {
            "input": 0.00847,
            "output": 0.007125,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": 0.015595,
        },
    }


def _assistant(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": MODEL,
        "usage": _usage(),
        "stopReason": stop,
    }


def write_synthetic_session(path: Path) -> dict[str, str]:
    """header, model_change, thinking_level_change, user, assistant (thinking + toolCall),
    toolResult (text + details), assistant text. Returns the entry ids by name."""
    w = _Writer()
    ids = {}
    w.add("model_change", provider="anthropic", modelId=MODEL)
    w.add("thinking_level_change", thinkingLevel="medium")
    ids["user"] = w.message({"role": "user", "content": [{"type": "text", "text": USER_TEXT}]})
    ids["call"] = w.message(
        _assistant(
            [
                {"type": "thinking", "thinking": THINKING_TEXT, "thinkingSignature": SIGNATURE},
                {
                    "type": "toolCall",
                    "id": TOOL_CALL_ID,
                    "name": "bash",
                    "arguments": TOOL_ARGS,
                    "partialJson": json.dumps(TOOL_ARGS),
                    "gitclawCompress": EXTRA_MARKER,
                },
            ],
            "toolUse",
        ),
        gitclawCompress={"note": EXTRA_MARKER},
    )
    ids["result"] = w.message(
        {
            "role": "toolResult",
            "toolCallId": TOOL_CALL_ID,
            "toolName": "bash",
            "content": [{"type": "text", "text": TOOL_TEXT}],
            "details": {"diff": DETAILS_MARKER},
            "isError": False,
        }
    )
    ids["final"] = w.message(_assistant([{"type": "text", "text": FINAL_TEXT}], "stop"))
    w.write(path)
    return ids


@pytest.fixture
def synthetic(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "synthetic.jsonl"
    ids = write_synthetic_session(path)
    return path, ids


def _assert_common(run: pi_harness.PiRun, session: Path, original: bytes) -> None:
    assert len(run.bodies) == 1, [r["path"] for r in run.requests]
    raw = run.requests[0]["raw"]
    # Unknown fields and tool-result details are never sent to the model.
    assert EXTRA_MARKER not in raw
    assert "gitclawCompress" not in raw
    assert "DETAILS-MARKER" not in raw
    # pi appended our prompt and the fake reply to the COPY; the original is untouched.
    assert session.read_bytes() == original
    appended = run.appended_entries(session)
    assert [e["message"]["role"] for e in appended] == ["user", "assistant"]
    assert appended[-1]["message"]["content"] == [{"type": "text", "text": DEFAULT_REPLY}]
    assert appended[-1]["message"]["stopReason"] == "stop"


# --------------------------------------------------------------------------------------
# Harness pieces that need no pi
# --------------------------------------------------------------------------------------


def _post(url: str, body: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_fake_server_streams_openai_chat_completions() -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with FakeLLMServer(reply="pong") as server:
        status, text = _post(server.url + "/v1/chat/completions", body)
    assert status == 200
    data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert content == "pong"
    assert any(c["choices"] and c["choices"][0]["finish_reason"] == "stop" for c in chunks)
    assert [r["body"] for r in server.requests] == [body]
    assert server.requests[0]["path"] == "/v1/chat/completions"


def test_fake_server_streams_anthropic_messages() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with FakeLLMServer(reply="pong") as server:
        status, text = _post(server.url + "/v1/messages", body)
    assert status == 200
    events = [line[len("event: ") :] for line in text.splitlines() if line.startswith("event: ")]
    assert [e for e in events if e != "ping"] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    datas = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    deltas = [d["delta"]["text"] for d in datas if d["type"] == "content_block_delta"]
    assert deltas == ["pong"]
    assert server.requests[0]["body"] == body
    assert server.requests[0]["protocol"] == "anthropic-messages"


def test_fake_server_rejects_what_the_real_api_rejects() -> None:
    orphan = {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}],
            },
        ],
    }
    with FakeLLMServer() as server:
        status, text = _post(server.url + "/v1/messages", orphan)
    assert status == 400
    assert "tool_use_id" in text
    assert server.requests[0]["problems"]
    # And the checks accept a well-formed tool round trip.
    good = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ]
    }
    assert check_request("anthropic-messages", good) == []
    assert check_request(
        "openai-completions",
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "bash", "arguments": "{}"},
                        }
                    ],
                },
            ]
        },
    )  # tool call without a tool message


def test_copy_for_pi_changes_only_the_header_cwd(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    session, _ = synthetic
    original = session.read_bytes()
    workdir = tmp_path / "work"
    workdir.mkdir()
    copy = copy_session_for_pi(session, tmp_path / "copy", workdir)
    assert session.read_bytes() == original
    new = copy.read_bytes()
    assert new.split(b"\n", 1)[1] == original.split(b"\n", 1)[1]
    header, old_header = json.loads(new.split(b"\n", 1)[0]), json.loads(original.split(b"\n")[0])
    assert header["cwd"] == str(workdir)
    assert {k: v for k, v in header.items() if k != "cwd"} == {
        k: v for k, v in old_header.items() if k != "cwd"
    }


def test_require_pi_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pi_harness, "find_pi", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(IN_CI_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_pi()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        require_pi()


def test_find_pi_uses_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GITCLAW_PI_BIN", str(tmp_path / "my-pi"))
    assert pi_harness.find_pi() == tmp_path / "my-pi"


# --------------------------------------------------------------------------------------
# The real pi on a synthetic session
# --------------------------------------------------------------------------------------


def test_pi_resumes_synthetic_session_via_openai_completions(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    require_pi()
    session, _ = synthetic
    original = session.read_bytes()
    run = run_pi_resume(session, tmp_path=tmp_path, api="openai-completions")
    _assert_common(run, session, original)
    assert run.requests[0]["path"] == "/v1/chat/completions"
    body = run.bodies[0]
    assert body["model"] == "fake-model"
    messages = [m for m in body["messages"] if m["role"] != "system"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    user, call, tool, final, prompt = messages
    assert USER_TEXT in json.dumps(user["content"])
    # Another model: the thinking text is sent as plain content, the signature is not.
    assert call["content"] == THINKING_TEXT
    assert SIGNATURE not in run.requests[0]["raw"]
    assert call["tool_calls"] == [
        {
            "id": TOOL_CALL_ID,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps(TOOL_ARGS, separators=(",", ":"))},
        }
    ]
    assert tool == {"role": "tool", "content": TOOL_TEXT, "tool_call_id": TOOL_CALL_ID}
    assert final["content"] == FINAL_TEXT
    assert DEFAULT_PROMPT in json.dumps(prompt["content"])


def test_pi_resumes_synthetic_session_via_anthropic_with_signed_thinking(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    require_pi()
    session, _ = synthetic
    original = session.read_bytes()
    run = run_pi_resume(session, tmp_path=tmp_path, api="anthropic")
    _assert_common(run, session, original)
    assert run.model == MODEL
    request = run.requests[0]
    assert request["path"] == "/v1/messages"
    assert request["headers"].get("x-api-key") == "x"
    body = run.bodies[0]
    assert body["model"] == MODEL
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    user, call, result, final, prompt = body["messages"]
    assert [b["text"] for b in user["content"]] == [USER_TEXT]
    # Same provider, api and model: the signed thinking block goes back unchanged.
    assert call["content"] == [
        {"type": "thinking", "thinking": THINKING_TEXT, "signature": SIGNATURE},
        {"type": "tool_use", "id": TOOL_CALL_ID, "name": "bash", "input": TOOL_ARGS},
    ]
    # A text-only tool result is sent as one string.
    assert result["content"][0]["type"] == "tool_result"
    assert result["content"][0]["tool_use_id"] == TOOL_CALL_ID
    assert result["content"][0]["content"] == TOOL_TEXT
    assert result["content"][0]["is_error"] is False
    assert final["content"] == [{"type": "text", "text": FINAL_TEXT}]
    assert DEFAULT_PROMPT in json.dumps(prompt["content"])


def test_pi_sends_no_signature_to_a_different_anthropic_model(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    require_pi()
    session, _ = synthetic
    body = run_pi_resume(
        session, tmp_path=tmp_path, api="anthropic", model="claude-sonnet-4-5"
    ).bodies[0]
    call = body["messages"][1]
    assert call["content"][0] == {"type": "text", "text": THINKING_TEXT}
    assert all(
        b["type"] != "thinking"
        for m in body["messages"]
        for b in m["content"]
        if isinstance(m["content"], list)
    )


def test_pi_run_raises_with_stderr_when_the_api_rejects(
    synthetic: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_pi()
    session, _ = synthetic
    real = pi_harness.FakeLLMServer

    def failing(*args: Any, **kwargs: Any) -> FakeLLMServer:
        return real(*args, **{**kwargs, "error_status": 400})

    monkeypatch.setattr(pi_harness, "FakeLLMServer", failing)
    with pytest.raises(PiError, match="fake LLM error"):
        run_pi_resume(session, tmp_path=tmp_path, api="anthropic")


def test_pi_context_lists_the_messages_with_their_entries(
    synthetic: tuple[Path, dict[str, str]],
) -> None:
    require_pi(node=True)
    session, ids = synthetic
    original = session.read_bytes()
    messages = pi_context(session)
    assert session.read_bytes() == original
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert [m["entryId"] for m in messages] == [
        ids["user"],
        ids["call"],
        ids["result"],
        ids["final"],
    ]
    call = messages[1]
    assert [b["type"] for b in call["blocks"]] == ["thinking", "toolCall"]
    assert call["blocks"][0]["signatureChars"] == len(SIGNATURE)
    assert (call["provider"], call["model"], call["api"]) == (
        "anthropic",
        MODEL,
        "anthropic-messages",
    )
    assert messages[2]["toolCallId"] == TOOL_CALL_ID
    assert messages[2]["blocks"] == [{"type": "text", "chars": len(TOOL_TEXT)}]


def test_pi_context_after_compaction(tmp_path: Path) -> None:
    require_pi(node=True)
    w = _Writer()
    w.message({"role": "user", "content": "first question"})
    w.message(_assistant([{"type": "text", "text": "first answer"}], "stop"))
    kept = w.message({"role": "user", "content": "second question"})
    w.message(_assistant([{"type": "text", "text": "second answer"}], "stop"))
    compaction = w.add(
        "compaction",
        summary="SUMMARY-MARKER",
        firstKeptEntryId=kept,
        tokensBefore=1234,
        details={"readFiles": [], "modifiedFiles": []},
    )
    last = w.message({"role": "user", "content": "third question"})
    session = w.write(tmp_path / "compacted.jsonl")
    messages = pi_context(session, full=True)
    assert [(m["role"], m["sourceRole"], m["entryId"]) for m in messages] == [
        ("user", "compactionSummary", compaction),
        ("user", "user", kept),
        ("assistant", "assistant", messages[2]["entryId"]),
        ("user", "user", last),
    ]
    assert "SUMMARY-MARKER" in messages[0]["message"]["content"][0]["text"]
    assert "first question" not in json.dumps(messages)


# --------------------------------------------------------------------------------------
# The real pi on the shared corpus (skipped when the corpus is absent)
# --------------------------------------------------------------------------------------

CORPUS = list(iter_corpus())


@pytest.mark.parametrize(
    "session",
    CORPUS or [pytest.param(None, marks=pytest.mark.skip(reason="no ../shared/corpus/pi"))],
    ids=[p.name for p in CORPUS] or ["no-corpus"],
)
def test_pi_resumes_corpus_session(session: Path, tmp_path: Path) -> None:
    require_pi(node=True)
    original = session.read_bytes()
    context = pi_context(session, full=True)
    assert context, "pi builds no context from this file"
    intact = chain_reaches_root(session)
    # A file whose parentId chain is cut (a real one is) starts with an orphan toolResult,
    # which real APIs reject; pi must still load it and send a request.
    run = run_pi_resume(session, tmp_path=tmp_path, api="native", validate=intact)
    assert session.read_bytes() == original
    assert len(run.bodies) == 1
    assert DEFAULT_PROMPT in run.requests[0]["raw"]
    appended = run.appended_entries(session)
    assert appended[-1]["message"]["content"][0]["text"] == DEFAULT_REPLY
    if run.api == "anthropic-messages":
        # Same model: every signed, non-empty thinking block in the context is replayed
        # with its signature, unchanged.
        expected = [
            (b["thinking"], b["thinkingSignature"])
            for m in context
            if m["role"] == "assistant"
            for b in m["message"]["content"]
            if b["type"] == "thinking"
            and b.get("thinkingSignature")
            and b["thinking"].strip()
            and not b.get("redacted")
            and m["message"]["stopReason"] not in ("error", "aborted")
        ]
        sent = [
            (b["thinking"], b["signature"])
            for m in run.bodies[0]["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "thinking"
        ]
        assert sent == expected
