"""A streaming fake LLM server on 127.0.0.1 and request checkers, for the harnesses that run
real agent CLIs offline: pi (tests/pi_harness.py) and Claude Code, Codex and Copilot CLI
(tests/agent_harness.py).

The server answers Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini
with one short streamed reply and records every request. The checkers apply a conservative
subset of the rules the real APIs enforce with HTTP 400, so a broken context fails the CLI
here as it would in production; :func:`sealed_reasoning`, :func:`empty_text_blocks` and
:func:`request_size` compare what a compressed and an uncompressed resume sent.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_REPLY = "OK from the fake LLM."

# A checker gets the protocol of a request (see protocol_for_path) and its parsed body and
# returns the problems a real API would answer with HTTP 400.
RequestChecker = Callable[[str | None, Any], list[str]]
# An Anthropic Messages responder gets the body and the lower-cased headers of a request and
# returns ``(200, (content blocks, stop_reason))`` or ``(status, error body)``; see
# tests/fake_preserved_thinking.py.
AnthropicResponder = Callable[[dict[str, Any], dict[str, str]], tuple[int, Any]]


def hermetic_cli_env(home: Path) -> dict[str, str]:
    """The environment of an agent CLI run that may reach only this server: a home of its
    own, no proxy for 127.0.0.1, no colours, UTF-8."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "NO_COLOR": "1",
    }
    for key in ("NODE_EXTRA_CA_CERTS", "SYSTEMROOT"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


# --------------------------------------------------------------------------------------
# Streamed replies
# --------------------------------------------------------------------------------------


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    """Encode server-sent events. A payload that is a str is sent as is."""
    out = []
    for name, payload in events:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        if name is not None:
            out.append(f"event: {name}\n")
        out.append(f"data: {data}\n\n")
    return "".join(out).encode()


def _openai_chat_stream(model: str, text: str) -> bytes:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    return _sse(
        [
            (
                None,
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": ""},
                            "finish_reason": None,
                        }
                    ],
                },
            ),
            (
                None,
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
                },
            ),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (
                None,
                {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            ),
            (None, "[DONE]"),
        ]
    )


def _anthropic_stream(model: str, text: str) -> bytes:
    return _sse(
        [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": 10,
                            "output_tokens": 1,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0,
                        },
                    },
                },
            ),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            ("ping", {"type": "ping"}),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def _anthropic_blocks_stream(model: str, blocks: list[dict[str, Any]], stop_reason: str) -> bytes:
    """A streamed reply of text, thinking (with its signature) and tool_use blocks."""
    start: dict[str, Any] = {
        "id": "msg_fake_" + hashlib.sha256(json.dumps(blocks).encode()).hexdigest()[:16],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(blocks):
        kind = block["type"]
        opening: dict[str, Any]
        deltas: list[dict[str, Any]]
        if kind == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:  # tool_use
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def _openai_responses_stream(model: str, text: str) -> bytes:
    item_id = "msg_fake"
    part = {"type": "output_text", "text": "", "annotations": []}
    done_item = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{**part, "text": text}],
    }
    response = {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "in_progress",
        "output": [],
    }
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": response}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {
                    "type": "message",
                    "id": item_id,
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                },
            },
        ),
        (
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "part": part,
            },
        ),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
        ),
        (
            "response.output_text.done",
            {
                "type": "response.output_text.done",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "text": text,
            },
        ),
        (
            "response.content_part.done",
            {
                "type": "response.content_part.done",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "part": {**part, "text": text},
            },
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {
                    **response,
                    "status": "completed",
                    "output": [done_item],
                    "usage": usage,
                },
            },
        ),
    ]
    for i, (_name, payload) in enumerate(events):
        payload["sequence_number"] = i
    return _sse(events)


def _google_stream(model: str, text: str) -> bytes:
    return _sse(
        [
            (
                None,
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": {
                        "promptTokenCount": 10,
                        "candidatesTokenCount": 5,
                        "totalTokenCount": 15,
                    },
                    "modelVersion": model,
                },
            ),
        ]
    )


def protocol_for_path(path: str) -> str | None:
    """Which LLM protocol a request path belongs to, or None."""
    route = path.split("?", 1)[0]
    if route.endswith("/chat/completions"):
        return "openai-completions"
    if route.endswith("/messages"):
        return "anthropic-messages"
    if route.endswith("/responses"):
        return "openai-responses"
    if route.endswith(":streamGenerateContent") or route.endswith(":generateContent"):
        return "google-generative-ai"
    return None


# --------------------------------------------------------------------------------------
# Request checks: a few rules the real APIs enforce with HTTP 400, so that a broken
# context fails the pi run here as it would in production. They are deliberately
# conservative (only rules documented by the providers' error messages).
# --------------------------------------------------------------------------------------


def _check_anthropic(
    body: dict[str, Any], *, system_messages: bool = False, unsigned_thinking: bool = False
) -> list[str]:
    """``system_messages`` allows ``role: "system"`` entries in ``messages`` (Claude Code
    sends them); ``unsigned_thinking`` allows thinking blocks with an empty signature, as
    files written through third-party models behind Claude Code hold them."""
    problems: list[str] = []
    roles = ("user", "assistant", "system") if system_messages else ("user", "assistant")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: must be a non-empty list"]
    if messages[0].get("role") != "user":
        problems.append("messages.0: first message must use the user role")
    for i, msg in enumerate(messages):
        role, content = msg.get("role"), msg.get("content")
        if role not in roles:
            problems.append(f"messages.{i}: bad role {role!r}")
        if isinstance(content, str):
            if not content.strip():
                problems.append(f"messages.{i}: text content must be non-empty")
            continue
        if role == "system" and system_messages and content == [] and "output_config" in msg:
            continue  # a settings message (Claude Code 2.1.332 sends its effort so)
        if not isinstance(content, list) or not content:
            problems.append(f"messages.{i}: content must be a non-empty list or string")
            continue
        for j, block in enumerate(content):
            kind = block.get("type")
            where = f"messages.{i}.content.{j}"
            if kind == "text" and not str(block.get("text", "")).strip():
                problems.append(f"{where}: text content blocks must contain non-whitespace text")
            elif kind == "thinking":
                if role != "assistant":
                    problems.append(f"{where}: thinking block outside an assistant message")
                if not isinstance(block.get("thinking"), str):
                    problems.append(f"{where}.thinking: Field required")
                signature = block.get("signature")
                if not isinstance(signature, str) or not (signature or unsigned_thinking):
                    problems.append(f"{where}.signature: Field required")
            elif kind == "redacted_thinking":
                if not isinstance(block.get("data"), str) or not block["data"]:
                    problems.append(f"{where}.data: Field required")
            elif kind == "tool_use" and not isinstance(block.get("input"), dict):
                problems.append(f"{where}.input: Input should be a valid dictionary")
        # Every tool_use needs a tool_result right after; every tool_result needs its tool_use.
        if role == "assistant":
            uses = [b.get("id") for b in content if b.get("type") == "tool_use"]
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if uses:
                nxt_content = nxt.get("content") if nxt else None
                results = {
                    b.get("tool_use_id")
                    for b in (nxt_content if isinstance(nxt_content, list) else [])
                    if b.get("type") == "tool_result"
                }
                missing = [u for u in uses if u not in results]
                if missing:
                    problems.append(
                        f"messages.{i}: tool_use ids were found without tool_result blocks "
                        f"immediately after: {missing}"
                    )
        if role == "user":
            result_ids = [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
            if result_ids:
                prev = messages[i - 1] if i > 0 else {}
                prev_content = prev.get("content")
                uses_before = {
                    b.get("id")
                    for b in (prev_content if isinstance(prev_content, list) else [])
                    if b.get("type") == "tool_use"
                }
                orphans = [r for r in result_ids if r not in uses_before]
                if orphans:
                    problems.append(
                        f"messages.{i}: unexpected tool_use_id found in tool_result blocks: "
                        f"{orphans}. Each tool_result block must have a corresponding tool_use "
                        "block in the previous message."
                    )
    return problems


def _check_openai_chat(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: must be a non-empty list"]
    pending: list[str] = []
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "tool":
            if msg.get("tool_call_id") not in pending:
                problems.append(
                    f"messages.[{i}]: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            else:
                pending.remove(msg["tool_call_id"])
            if not isinstance(msg.get("content"), str | list):
                problems.append(f"messages.[{i}].content: must be a string or a list")
            continue
        if pending:
            problems.append(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {pending} (before messages.[{i}])"
            )
            pending = []
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            content = msg.get("content")
            if not calls and not content:
                problems.append(f"messages.[{i}]: assistant message needs content or tool_calls")
            for k, call in enumerate(calls):
                args = call.get("function", {}).get("arguments")
                if not isinstance(args, str):
                    problems.append(f"messages.[{i}].tool_calls.[{k}].function.arguments: string")
                pending.append(call.get("id"))
    if pending:
        problems.append(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. Missing: {pending}"
        )
    return problems


def _check_openai_responses(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    items = body.get("input")
    if not isinstance(items, list) or not items:
        return ["input: must be a non-empty list"]
    # Outputs must follow their call, and every call needs an output (for function calls
    # and custom tool calls such as Codex's apply_patch alike).
    open_calls: dict[str, str] = {}
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            open_calls[str(item.get("call_id"))] = kind
            field = "arguments" if kind == "function_call" else "input"
            if not isinstance(item.get(field), str):
                problems.append(f"input[{i}].{field}: must be a string")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_kind = open_calls.pop(str(item.get("call_id")), None)
            if call_kind is None or f"{call_kind}_output" != kind:
                problems.append(
                    f"input[{i}]: No tool call found for function call output "
                    f"with call_id {item.get('call_id')}."
                )
            if not isinstance(item.get("output"), str | list):
                problems.append(f"input[{i}].output: must be a string or a list")
        elif kind == "reasoning":
            if not isinstance(item.get("summary"), list):
                problems.append(f"input[{i}].summary: Missing required parameter")
            encrypted = item.get("encrypted_content")
            if encrypted is not None and (not isinstance(encrypted, str) or not encrypted):
                problems.append(f"input[{i}].encrypted_content: invalid_encrypted_content")
    for call_id in open_calls:
        problems.append(f"No tool output found for function call {call_id}.")
    return problems


def _check_google(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return ["contents: must be a non-empty list"]
    for i, content in enumerate(contents):
        if not content.get("parts"):
            problems.append(f"contents[{i}].parts: must not be empty")
    return problems


def check_request(protocol: str | None, body: Any) -> list[str]:
    """Problems a real API would answer with HTTP 400 (a conservative subset)."""
    if not isinstance(body, dict):
        return ["body: not a JSON object"]
    checker = {
        "anthropic-messages": _check_anthropic,
        "openai-completions": _check_openai_chat,
        "openai-responses": _check_openai_responses,
        "google-generative-ai": _check_google,
    }.get(protocol or "")
    return checker(body) if checker else []


def check_claude_code_request(protocol: str | None, body: Any) -> list[str]:
    """:func:`check_request` for what Claude Code sends: it puts ``role: "system"`` entries
    (skill listings, reminders) among the messages and replays thinking blocks with the
    empty signature that third-party models behind it recorded."""
    if protocol == "anthropic-messages" and isinstance(body, dict):
        return _check_anthropic(body, system_messages=True, unsigned_thinking=True)
    return check_request(protocol, body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self, raw: bytes) -> dict[str, Any]:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = {
            "method": self.command,
            "path": self.path,
            "protocol": protocol_for_path(self.path),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "raw": raw.decode("utf-8", "replace"),
            "problems": [],
        }
        with self.server.lock:
            self.server.requests.append(record)
        return record

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def do_POST(self) -> None:
        record = self._record(self._read_body())
        body = record["body"] if isinstance(record["body"], dict) else {}
        model = str(body.get("model") or "fake-model")
        text = self.server.reply
        protocol = record["protocol"]
        problems = self.server.checker(protocol, record["body"]) if self.server.validate else []
        record["problems"] = problems
        if self.server.error_status is not None or problems:
            message = "; ".join(problems) or "fake LLM error"
            error = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": message},
            }
            status = self.server.error_status or 400
            self._send(status, "application/json", json.dumps(error).encode())
        elif protocol == "openai-completions":
            self._send(200, "text/event-stream", _openai_chat_stream(model, text))
        elif protocol == "anthropic-messages" and self.server.anthropic is not None:
            headers = record["headers"]
            status, answer = self.server.anthropic(body, headers)
            record["status"] = status
            if status != 200:
                self._send(status, "application/json", json.dumps(answer).encode())
            else:
                blocks, stop_reason = answer
                self._send(
                    200, "text/event-stream", _anthropic_blocks_stream(model, blocks, stop_reason)
                )
        elif protocol == "anthropic-messages":
            self._send(200, "text/event-stream", _anthropic_stream(model, text))
        elif protocol == "openai-responses":
            self._send(200, "text/event-stream", _openai_responses_stream(model, text))
        elif protocol == "google-generative-ai":
            self._send(200, "text/event-stream", _google_stream(model, text))
        else:
            no_route = json.dumps({"error": {"message": f"fake LLM: no route {self.path}"}})
            self._send(404, "application/json", no_route.encode())

    def do_GET(self) -> None:
        self._record(b"")
        if self.headers.get("Upgrade", "").lower() == "websocket":
            # Codex tries a Responses WebSocket first. 426 makes it fall back to HTTP at
            # once; any other refusal costs five reconnects with backoff (about 6 s).
            self._send(426, "application/json", b'{"error":{"message":"fake LLM: no WebSocket"}}')
            return
        self._send(404, "application/json", b'{"error":{"message":"fake LLM: GET not served"}}')


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]
    lock: threading.Lock
    reply: str
    error_status: int | None
    validate: bool
    checker: RequestChecker
    anthropic: AnthropicResponder | None

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A CLI that drops a refused WebSocket or exits mid-stream resets its connection;
        # that is not a server error worth a traceback in the test output.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLLMServer:
    """A local streaming LLM endpoint for a real agent CLI, on 127.0.0.1 and an ephemeral port.

    It answers OpenAI chat completions (``POST .../chat/completions``), Anthropic
    Messages (``POST .../messages``, any query string), OpenAI Responses
    (``POST .../responses``) and Gemini (``POST ...:streamGenerateContent``) with one short
    fixed text, streamed as SSE. A WebSocket upgrade is refused with 426. Every request is
    recorded in :attr:`requests` as a dict with ``method``, ``path``, ``protocol``,
    ``headers`` (lower-case names), ``body`` (parsed JSON), ``raw`` (the body as text) and
    ``problems``.

    With ``anthropic`` (e.g. :class:`fake_preserved_thinking.PreservedThinking`), that
    responder answers each Anthropic Messages request that passed the checker instead.

    With ``validate`` (the default) each LLM request is first checked against a few rules
    the real API enforces with HTTP 400 (``checker``, :func:`check_request` unless given); a
    request that breaks one gets a 400 whose message lists the problems (also in the
    record's ``problems``), so the CLI fails as it would in production. With
    ``error_status`` set, every request is answered with that HTTP status and a JSON error
    body instead.

    Use it as a context manager::

        with FakeLLMServer() as server:
            ... server.url ...
        server.requests
    """

    def __init__(
        self,
        reply: str = DEFAULT_REPLY,
        *,
        error_status: int | None = None,
        validate: bool = True,
        checker: RequestChecker = check_request,
        anthropic: AnthropicResponder | None = None,
    ) -> None:
        self.reply = reply
        self.checker = checker
        self.anthropic = anthropic
        self.error_status = error_status
        self.validate = validate
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._requests: list[dict[str, Any]] = []

    def __enter__(self) -> FakeLLMServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.requests = self._requests
        server.lock = threading.Lock()
        server.reply = self.reply
        server.error_status = self.error_status
        server.validate = self.validate
        server.checker = self.checker
        server.anthropic = self.anthropic
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeLLMServer is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        if self._server is not None:
            with self._server.lock:
                return list(self._requests)
        return list(self._requests)

    @property
    def llm_requests(self) -> list[dict[str, Any]]:
        """Only the requests that hit one of the LLM routes."""
        return [r for r in self.requests if r["protocol"] is not None]


# --------------------------------------------------------------------------------------
# Comparing two resumes of one session (uncompressed, then compressed)
# --------------------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages (Anthropic, Chat Completions) or input items (Responses) of a request."""
    entries = body.get("messages", body.get("input"))
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def sealed_reasoning(body: dict[str, Any]) -> list[str]:
    """What a provider checks byte for byte, in order: Anthropic thinking blocks with their
    signatures and redacted thinking, OpenAI reasoning and compaction items (their
    ``encrypted_content``), and Copilot's ``reasoning_opaque`` with its text."""
    found: list[str] = []
    for entry in conversation(body):
        for block in _blocks(entry.get("content")):
            if block.get("type") in ("thinking", "redacted_thinking"):
                found.append(
                    repr((block.get("thinking"), block.get("signature"), block.get("data")))
                )
        if entry.get("type") == "reasoning" or "encrypted_content" in entry:
            found.append(repr(entry))
        if "reasoning_opaque" in entry:
            found.append(repr((entry.get("reasoning_text"), entry["reasoning_opaque"])))
    return found


def tool_call_ids(body: dict[str, Any]) -> list[str]:
    """Every tool call id of a request, in order: Anthropic ``tool_use`` ids, Chat
    Completions ``tool_calls`` ids, Responses function and custom tool call ids."""
    ids: list[str] = []
    for entry in conversation(body):
        blocks = _blocks(entry.get("content"))
        ids += [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        ids += [str(c.get("id")) for c in entry.get("tool_calls") or [] if isinstance(c, dict)]
        if entry.get("type") in ("function_call", "custom_tool_call"):
            ids.append(str(entry.get("call_id")))
    return ids


def empty_text_blocks(body: dict[str, Any]) -> list[str]:
    """Where a request holds a text part that is empty or only whitespace (Anthropic rejects
    them; elsewhere they are a sign that a stub lost its text)."""
    found: list[str] = []
    for i, entry in enumerate(conversation(body)):
        content = entry.get("content")
        if isinstance(content, str) and not content.strip() and entry.get("role") != "assistant":
            found.append(f"{i}.content")
        for j, block in enumerate(_blocks(content)):
            text = block.get("text")
            if block.get("type") in ("text", "input_text", "output_text") and (
                not isinstance(text, str) or not text.strip()
            ):
                found.append(f"{i}.content.{j}")
        output = entry.get("output")
        is_output = str(entry.get("type", "")).endswith("_output")
        if is_output and isinstance(output, str) and not output.strip():
            found.append(f"{i}.output")
    return found


def request_size(record: dict[str, Any]) -> int:
    """The size in bytes of a recorded request's body, as the CLI sent it."""
    return len(str(record["raw"]).encode("utf-8"))
