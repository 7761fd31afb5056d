"""Tests of the agent CLI harness pieces that need no CLI: the fake server's WebSocket refusal,
the request checkers and comparisons, where each CLI looks for its file, and the synthetic
transcripts' line shapes."""

from __future__ import annotations

import base64
import http.client
import json
import os
from pathlib import Path
from typing import Any

import pytest
from agent_fixtures import claude_transcript, codex_rollout, copilot_events, png
from agent_harness import (
    AgentError,
    claude_project_dir,
    claude_session_id,
    codex_model,
    codex_session_id,
    copilot_session_id,
    find_agent,
    place_codex_rollout,
    require_agent,
)
from conftest import IN_CI_ENV
from fake_llm_sse import (
    FakeLLMServer,
    check_claude_code_request,
    check_request,
    empty_text_blocks,
    sealed_reasoning,
    tool_call_ids,
)


def _records(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in data.split(b"\n")]


# --------------------------------------------------------------------------------------
# Fake server
# --------------------------------------------------------------------------------------


def test_fake_server_refuses_a_websocket_upgrade_with_426() -> None:
    with FakeLLMServer() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request(
            "GET",
            "/v1/responses",
            headers={
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": base64.b64encode(b"0123456789abcdef").decode(),
            },
        )
        assert conn.getresponse().status == 426
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/v1/models")
        assert conn.getresponse().status == 404
        conn.close()


def test_fake_server_routes_anthropic_on_the_path_alone_and_uses_its_checker() -> None:
    body = {"model": "m", "messages": [{"role": "system", "content": "skills"}], "stream": True}
    with FakeLLMServer(checker=lambda protocol, _body: [f"seen {protocol}"]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("POST", "/v1/messages?beta=true", body=json.dumps(body))
        response = conn.getresponse()
        assert response.status == 400
        assert "seen anthropic-messages" in response.read().decode()
        conn.close()
    assert server.requests[0]["problems"] == ["seen anthropic-messages"]


# --------------------------------------------------------------------------------------
# Checkers and comparisons
# --------------------------------------------------------------------------------------


def test_claude_code_checker_allows_system_messages_and_unsigned_thinking() -> None:
    last: dict[str, Any] = {"type": "text", "text": "next"}
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "skill listing"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "t", "signature": ""}],
            },
            {"role": "user", "content": [last]},
        ]
    }
    assert check_claude_code_request("anthropic-messages", body) == []
    strict = check_request("anthropic-messages", body)
    assert "messages.1: bad role 'system'" in strict
    assert "messages.2.content.0.signature: Field required" in strict
    last["text"] = " "
    assert check_claude_code_request("anthropic-messages", body) == [
        "messages.3.content.0: text content blocks must contain non-whitespace text"
    ]


def test_responses_checker_pairs_function_and_custom_tool_calls() -> None:
    def item(kind: str, call_id: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "call_id": call_id, **fields}

    good = [
        item("function_call", "a", arguments="{}"),
        item("function_call_output", "a", output=[{"type": "input_image", "image_url": "x"}]),
        item("custom_tool_call", "b", input="*** Begin Patch"),
        item("custom_tool_call_output", "b", output="ok"),
    ]
    assert check_request("openai-responses", {"input": good}) == []
    lost_output = check_request("openai-responses", {"input": good[:3]})
    assert lost_output == ["No tool output found for function call b."]
    orphan = check_request("openai-responses", {"input": good[1:2]})
    assert orphan == ["input[0]: No tool call found for function call output with call_id a."]
    crossed = [good[2], item("function_call_output", "b", output="ok")]
    assert "No tool call found" in check_request("openai-responses", {"input": crossed})[0]
    emptied = [{"type": "reasoning", "summary": [], "encrypted_content": ""}]
    assert check_request("openai-responses", {"input": emptied}) == [
        "input[0].encrypted_content: invalid_encrypted_content"
    ]


def test_sealed_reasoning_finds_every_kind_in_order() -> None:
    anthropic = {
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "t", "signature": "s"}],
            },
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "d"}]},
        ]
    }
    assert sealed_reasoning(anthropic) == [repr(("t", "s", None)), repr((None, None, "d"))]
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}
    compaction = {"type": "compaction", "encrypted_content": "gBBBB"}
    assert sealed_reasoning({"input": [reasoning, compaction]}) == [
        repr(reasoning),
        repr(compaction),
    ]
    chat = {"messages": [{"role": "assistant", "reasoning_opaque": "op", "reasoning_text": "rt"}]}
    assert sealed_reasoning(chat) == [repr(("rt", "op"))]


def test_tool_call_ids_and_empty_text_blocks_across_protocols() -> None:
    anthropic = {
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
            {"role": "user", "content": [{"type": "text", "text": ""}]},
        ]
    }
    assert tool_call_ids(anthropic) == ["t1"]
    assert empty_text_blocks(anthropic) == ["2.content.0"]
    chat = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "  "},
        ]
    }
    assert tool_call_ids(chat) == ["c1"]
    assert empty_text_blocks(chat) == ["1.content"]
    responses = {
        "input": [
            {"type": "custom_tool_call", "call_id": "p1", "input": "patch"},
            {"type": "custom_tool_call_output", "call_id": "p1", "output": ""},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]},
        ]
    }
    assert tool_call_ids(responses) == ["p1"]
    assert empty_text_blocks(responses) == ["1.output"]


# --------------------------------------------------------------------------------------
# Where each CLI looks
# --------------------------------------------------------------------------------------


def test_claude_project_dir_replaces_every_character_but_letters_and_digits(
    tmp_path: Path,
) -> None:
    where = claude_project_dir(tmp_path / "cfg", Path("/tmp/pytest_of root/x.y:z"))
    assert where == tmp_path / "cfg" / "projects" / "-tmp-pytest-of-root-x-y-z"


def test_codex_rollout_lands_under_todays_date_with_a_fresh_mtime(tmp_path: Path) -> None:
    source = tmp_path / "rollout.jsonl"
    source.write_bytes(codex_rollout().data)
    os.utime(source, (0, 0))
    placed = place_codex_rollout(source, tmp_path / "codex")
    assert placed.read_bytes() == source.read_bytes()
    assert placed.name.startswith("rollout-") and placed.name.endswith(
        f"-{codex_session_id(source)}.jsonl"
    )
    assert placed.relative_to(tmp_path / "codex" / "sessions").parts[0].isdigit()
    assert placed.stat().st_mtime > 1e9
    assert codex_model(source) == "gpt-5.1-codex-mini"


def test_session_ids_are_read_from_each_format(tmp_path: Path) -> None:
    for make, read in (
        (claude_transcript, claude_session_id),
        (codex_rollout, codex_session_id),
        (copilot_events, copilot_session_id),
    ):
        transcript = make()
        path = tmp_path / f"{make.__name__}.jsonl"
        path.write_bytes(transcript.data)
        assert read(path) == transcript.session_id
    path.write_bytes(b'{"type":"summary"}\n')
    with pytest.raises(AgentError, match=r"no session\.start record"):
        copilot_session_id(path)


def test_a_missing_cli_skips_locally_and_fails_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent_harness.AGENTS_CACHE", tmp_path / "nothing")
    monkeypatch.delenv("GITCLAW_CODEX_BIN", raising=False)
    assert find_agent("codex") is None
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(IN_CI_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="codex is not installed"):
        require_agent("codex")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        require_agent("codex")
    monkeypatch.setenv("GITCLAW_CODEX_BIN", str(tmp_path / "my-codex"))
    assert require_agent("codex") == tmp_path / "my-codex"


# --------------------------------------------------------------------------------------
# Synthetic transcripts: every field kind, in the shapes the CLIs write
# --------------------------------------------------------------------------------------


def test_png_is_a_real_png() -> None:
    data = png()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


def test_claude_transcript_has_every_field_kind() -> None:
    data = claude_transcript().data
    assert not data.endswith(b"\n")
    lines = data.split(b"\n")
    glued = [raw for raw in lines if b'}{"type":"summary"' in raw]
    assert len(glued) == 1
    records = [json.loads(raw) for raw in lines if raw not in glued]
    kinds = {r["type"] for r in records}
    assert {"user", "assistant", "system", "progress", "file-history-snapshot"} <= kinds
    blocks = [
        b
        for r in records
        if isinstance(r.get("message", {}).get("content"), list)
        for b in r["message"]["content"]
    ]
    assert {b["type"] for b in blocks} >= {"text", "image", "thinking", "tool_use", "tool_result"}
    assert all(b["signature"] for b in blocks if b["type"] == "thinking")
    results = [b["content"] for b in blocks if b["type"] == "tool_result"]
    assert any(isinstance(c, str) for c in results) and any(isinstance(c, list) for c in results)
    extras = [r["toolUseResult"] for r in records if "toolUseResult" in r]
    assert any("originalFile" in e for e in extras)
    assert any("content" in e.get("file", {}) for e in extras)
    assert any("base64" in e.get("file", {}) for e in extras)
    assert any("stdout" in e and "stderr" in e for e in extras)
    assert any(r.get("data", {}).get("type") == "agent_progress" for r in records)
    boundary = next(r for r in records if r.get("subtype") == "compact_boundary")
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"]
    summary = records[records.index(boundary) + 1]
    assert summary["isCompactSummary"] is True and summary["parentUuid"] == boundary["uuid"]
    # The chain from the last line reaches the boundary through parentUuid links.
    by_uuid = {r["uuid"]: r for r in records if "uuid" in r}
    current: dict[str, Any] | None = records[-1]
    seen = 0
    while current is not None and current.get("parentUuid"):
        current = by_uuid.get(current["parentUuid"])
        seen += 1
    assert current is boundary and seen > 10


def test_codex_rollout_has_every_field_kind() -> None:
    records = _records(codex_rollout().data.rstrip(b"\n"))
    assert records[0]["type"] == "session_meta"
    assert all(set(r) == {"timestamp", "type", "payload"} for r in records)
    kinds = {(r["type"], r["payload"].get("type")) for r in records}
    assert {
        ("turn_context", None),
        ("response_item", "message"),
        ("response_item", "function_call"),
        ("response_item", "function_call_output"),
        ("response_item", "custom_tool_call"),
        ("response_item", "custom_tool_call_output"),
        ("response_item", "reasoning"),
        ("event_msg", "user_message"),
        ("event_msg", "exec_command_end"),
        ("event_msg", "task_started"),
        ("event_msg", "task_complete"),
        ("event_msg", "token_count"),
    } <= kinds
    payloads = [r["payload"] for r in records]
    outputs = [p["output"] for p in payloads if p.get("type") == "function_call_output"]
    assert any(isinstance(o, str) for o in outputs)
    assert any(isinstance(o, list) and o[0]["type"] == "input_image" for o in outputs)
    assert all(p["encrypted_content"] for p in payloads if p.get("type") == "reasoning")
    assert any(p.get("images") for p in payloads if p.get("type") == "user_message")
    contexts = [p for r, p in zip(records, payloads, strict=True) if r["type"] == "turn_context"]
    assert len(contexts) == 2 and all(len(p["user_instructions"]) > 5000 for p in contexts)


def test_copilot_events_have_every_field_kind() -> None:
    records = _records(copilot_events().data.rstrip(b"\n"))
    assert all(set(r) == {"type", "data", "id", "timestamp", "parentId"} for r in records)
    kinds = [r["type"] for r in records]
    assert kinds[0] == "session.start"
    assert {
        "user.message",
        "assistant.turn_start",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_end",
        "session.resume",
    } <= set(kinds)
    resume = kinds.index("session.resume")
    assert records[resume]["data"]["eventCount"] == resume + 1
    messages = [r["data"] for r in records if r["type"] == "assistant.message"]
    assert any(m["toolRequests"] and m["reasoningOpaque"] and m["reasoningText"] for m in messages)
    results = [r["data"]["result"] for r in records if r["type"] == "tool.execution_complete"]
    assert all({"content", "detailedContent", "contents"} <= set(result) for result in results)
