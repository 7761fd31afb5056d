"""A scripted LLM HTTP server on 127.0.0.1 for tests: real sockets, stdlib only.

It answers each request with the next scripted ``Reply`` (then with ``default``) and records
every request, so a test can check exactly what a client sent::

    with FakeLLMServer(openai_reply("a summary")) as server:
        ...  # point the client at server.url + "/v1" (openai) or server.url (anthropic)
        assert server.requests[0].json()["model"] == "m"

A ``hold_reply()`` keeps the connection open without answering until the test sets
``server.release`` (closing the server sets it too), which is how a client timeout is tested
without sleeping.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

HOLD_LIMIT_S = 30.0  # a held reply gives up waiting for ``release`` after this


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    hold: bool = False  # wait until the server's ``release`` is set, then answer


Responder = Callable[[RecordedRequest], Reply]


def json_reply(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return Reply(status, json.dumps(obj).encode(), all_headers)


def error_reply(status: int, message: str, headers: Mapping[str, str] | None = None) -> Reply:
    """An error body in the shape both OpenAI and Anthropic use (``error.message``)."""
    body = {"type": "error", "error": {"type": "fake_error", "message": message}}
    return json_reply(body, status, headers)


def hold_reply() -> Reply:
    return Reply(hold=True)


def openai_reply(
    text: str,
    *,
    model: str = "fake-openai-model",
    input_tokens: int = 11,
    output_tokens: int = 7,
    finish_reason: str = "stop",
) -> Reply:
    return json_reply(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        }
    )


def anthropic_reply(
    text: str,
    *,
    model: str = "fake-anthropic-model",
    input_tokens: int = 13,
    output_tokens: int = 5,
    stop_reason: str = "end_turn",
) -> Reply:
    return json_reply(
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )


class FakeLLMServer:
    """Context manager: starts on an ephemeral port on enter, stops on exit."""

    def __init__(self, *replies: Reply, default: Reply | Responder | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self.release = threading.Event()
        self.default = default
        self._replies: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._started = False

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> FakeLLMServer:
        self._thread.start()
        self._started = True
        return self

    def close(self) -> None:
        self.release.set()
        if self._started:
            self._httpd.shutdown()
            self._thread.join()
            self._answer_waiting()
        self._httpd.server_close()  # joins the handler threads

    def _answer_waiting(self) -> None:
        """Answer (and so record) the connections that serve_forever had not accepted when
        it stopped: a client that timed out moves on at once, and on a loaded machine its
        last request can still wait to be accepted then."""
        self._httpd.socket.setblocking(False)
        while True:
            try:
                connection, address = self._httpd.get_request()
            except BlockingIOError:
                return
            connection.setblocking(True)
            self._httpd.process_request(connection, address)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        if isinstance(self.default, Reply):
            return self.default
        if self.default is not None:
            return self.default(request)
        return error_reply(400, f"fake_llm_http: no scripted reply left for {request.path}")


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() waits for the handlers
    fake: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self._answer()

    def do_GET(self) -> None:
        self._answer()

    def _answer(self) -> None:
        fake = cast(_Server, self.server).fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = fake._next_reply(RecordedRequest(self.command, self.path, headers, body))
        if reply.hold:
            fake.release.wait(HOLD_LIMIT_S)
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except OSError:  # the client gave up (timed out) and closed the connection
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass
