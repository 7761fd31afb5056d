"""The LLM provider clients against real HTTP servers on 127.0.0.1 (see fake_llm_http)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from fake_llm_http import (
    FakeLLMServer,
    Reply,
    anthropic_reply,
    error_reply,
    hold_reply,
    json_reply,
    openai_reply,
)

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.summary.llm import (
    RETRY_AFTER_CAP_S,
    CompletionRequest,
    HTTPClient,
    ProviderSettings,
    Usage,
    backoff_delay,
    make_client,
)

KEY = "sk-test-SECRET-0123456789"
KEY_ENV = "GITCLAW_TEST_LLM_KEY"
REQUEST = CompletionRequest(
    system="You summarize coding sessions.",
    user="Summarize: the agent fixed the parser.",
    model="test-model",
    max_tokens=321,
    temperature=0.1,
)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib honours *_proxy variables; the fake servers are local.
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@dataclass
class Sleeps:
    """The injected sleep: records each delay instead of waiting."""

    delays: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client(
    server: FakeLLMServer,
    sleeps: Sleeps,
    *,
    provider: str = "openai",
    api_key_env: str | None = KEY_ENV,
    timeout_s: float = 5.0,
    max_retries: int = 3,
    base_url: str | None = None,
) -> HTTPClient:
    if base_url is None:
        base_url = server.url + ("/v1" if provider == "openai" else "")
    settings = ProviderSettings(
        provider=provider,
        base_url=base_url,
        model="test-model",
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        max_retries=max_retries,
    )
    return make_client(settings, env={KEY_ENV: KEY}, sleep=sleeps, rand=lambda: 0.5)


def failure(excinfo: pytest.ExceptionInfo[GitClawError]) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    assert KEY not in message
    return message


# -- the request each protocol sends, and the result ------------------------------------------


def test_openai_request_and_result(server: FakeLLMServer) -> None:
    server.add(openai_reply("The parser is fixed.", model="test-model-2024", finish_reason="stop"))
    sleeps = Sleeps()

    result = client(server, sleeps).complete(REQUEST)

    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in sent.headers
    assert sent.headers["content-type"] == "application/json"
    assert sent.json() == {
        "model": "test-model",
        "max_tokens": 321,
        "temperature": 0.1,
        "messages": [
            {"role": "system", "content": "You summarize coding sessions."},
            {"role": "user", "content": "Summarize: the agent fixed the parser."},
        ],
        "stream": False,
    }
    assert result.text == "The parser is fixed."
    assert result.model == "test-model-2024"
    assert result.provider == "openai"
    assert result.usage == Usage(input_tokens=11, output_tokens=7)
    assert result.attempts == 1
    assert result.stop_reason == "stop"
    assert sleeps.delays == []


def test_openai_without_api_key_env_sends_no_auth(server: FakeLLMServer) -> None:
    # Ollama / llama.cpp: no key configured, no Authorization header, no system message if empty.
    server.add(json_reply({"choices": [{"message": {"content": "ok"}}]}))
    request = CompletionRequest(system="", user="hi", model="llama3")

    result = client(server, Sleeps(), api_key_env=None).complete(request)

    (sent,) = server.requests
    assert "authorization" not in sent.headers
    assert sent.json()["messages"] == [{"role": "user", "content": "hi"}]
    assert sent.json()["max_tokens"] == 1500
    assert sent.json()["temperature"] == 0.2
    assert result.text == "ok"
    assert result.model == "llama3"  # the server did not say
    assert result.usage == Usage(None, None)


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_anthropic_request_and_result(server: FakeLLMServer, suffix: str) -> None:
    server.add(anthropic_reply("Summary.", model="claude-test"))
    sleeps = Sleeps()

    result = client(server, sleeps, provider="anthropic", base_url=server.url + suffix).complete(
        REQUEST
    )

    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "model": "test-model",
        "max_tokens": 321,
        "temperature": 0.1,
        "system": "You summarize coding sessions.",
        "messages": [{"role": "user", "content": "Summarize: the agent fixed the parser."}],
    }
    assert result.text == "Summary."
    assert result.model == "claude-test"
    assert result.provider == "anthropic"
    assert result.usage == Usage(input_tokens=13, output_tokens=5)
    assert result.attempts == 1
    assert result.stop_reason == "end_turn"
    assert sleeps.delays == []


def test_anthropic_joins_text_blocks_and_skips_others(server: FakeLLMServer) -> None:
    content = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "Part one. "},
        {"type": "text", "text": "Part two."},
    ]
    server.add(json_reply({"content": content, "stop_reason": "max_tokens"}))

    result = client(server, Sleeps(), provider="anthropic").complete(REQUEST)

    assert result.text == "Part one. Part two."
    assert result.stop_reason == "max_tokens"


def test_request_from_settings_uses_summary_model_and_max_tokens() -> None:
    settings = ProviderSettings(model="m", max_tokens=99)
    request = CompletionRequest.from_settings(settings, system="s", user="u")
    assert request == CompletionRequest("s", "u", "m", 99, 0.2)


# -- retries ------------------------------------------------------------------------------------


def test_timeout_is_retried_then_reported(server: FakeLLMServer) -> None:
    server.add(hold_reply(), hold_reply())  # never answers until the server is closed
    sleeps = Sleeps()

    with pytest.raises(GitClawError) as excinfo:
        client(server, sleeps, timeout_s=0.1, max_retries=1).complete(REQUEST)

    message = failure(excinfo)
    assert message.startswith(f"openai request to {server.host} failed:")
    assert "no response within 0.1s after 2 attempts" in message
    assert "raise summary.timeout_s" in message
    assert sleeps.delays == [0.75]


def test_429_then_success_honours_retry_after(server: FakeLLMServer) -> None:
    server.add(error_reply(429, "slow down", {"Retry-After": "7"}), openai_reply("done"))
    sleeps = Sleeps()

    result = client(server, sleeps).complete(REQUEST)

    assert result.text == "done"
    assert result.attempts == 2
    assert sleeps.delays == [7.0]
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [
        ({"Retry-After": "100000"}, RETRY_AFTER_CAP_S),  # capped
        ({"Retry-After": "0.5"}, 0.5),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.75),  # a date: plain backoff
        ({}, 0.75),
    ],
)
def test_429_delay(server: FakeLLMServer, retry_after: dict[str, str], expected: float) -> None:
    server.add(error_reply(429, "slow down", retry_after), anthropic_reply("done"))
    sleeps = Sleeps()

    client(server, sleeps, provider="anthropic").complete(REQUEST)

    assert sleeps.delays == [expected]


def test_500_exhausts_retries(server: FakeLLMServer) -> None:
    server.add(*[error_reply(500, "upstream exploded")] * 4)
    sleeps = Sleeps()

    with pytest.raises(GitClawError) as excinfo:
        client(server, sleeps, max_retries=3).complete(REQUEST)

    message = failure(excinfo)
    assert message == (
        f"openai request to {server.host} failed: HTTP 500 (upstream exploded) after 4 attempts;"
        " the server failed: try again later, or raise summary.max_retries (now 3)"
    )
    assert sleeps.delays == [0.75, 1.5, 3.0]  # exponential, with rand() == 0.5
    assert len(server.requests) == 4


def test_connection_refused_is_retried() -> None:
    # A port on which nothing listens: held (bound, never listening) for the whole test, so
    # that no other program on the machine can start listening on it meanwhile.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        base_url = f"http://127.0.0.1:{port}/v1"
        settings = ProviderSettings(base_url=base_url, model="m", max_retries=2)
        sleeps = Sleeps()

        with pytest.raises(GitClawError) as excinfo:
            make_client(settings, env={}, sleep=sleeps, rand=lambda: 0.0).complete(REQUEST)

    message = failure(excinfo)
    assert f"127.0.0.1:{port}" in message
    assert "connection refused after 3 attempts" in message
    assert "check summary.base_url" in message
    assert sleeps.delays == [0.5, 1.0]


@pytest.mark.parametrize(
    ("retry", "rand", "expected"),
    [(1, 0.0, 0.5), (1, 0.999, 0.9995), (2, 0.5, 1.5), (4, 1.0, 8.0), (20, 1.0, 30.0)],
)
def test_backoff_delay_is_exponential_with_jitter_and_capped(
    retry: int, rand: float, expected: float
) -> None:
    assert backoff_delay(retry, rand) == pytest.approx(expected)


# -- failures that are not retried ------------------------------------------------------------


def test_401_is_not_retried_and_never_shows_the_key(server: FakeLLMServer) -> None:
    server.add(error_reply(401, f"Incorrect API key provided: {KEY}"))
    sleeps = Sleeps()

    with pytest.raises(GitClawError) as excinfo:
        client(server, sleeps).complete(REQUEST)

    message = failure(excinfo)
    assert "HTTP 401 (Incorrect API key provided: [redacted])" in message
    assert f"check the API key in the env var {KEY_ENV}" in message
    assert sleeps.delays == []
    assert len(server.requests) == 1


def test_401_without_a_key_says_to_set_api_key_env(server: FakeLLMServer) -> None:
    server.add(error_reply(401, "missing bearer token"))

    with pytest.raises(GitClawError) as excinfo:
        client(server, Sleeps(), api_key_env=None).complete(REQUEST)

    assert "set summary.api_key_env" in failure(excinfo)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (error_reply(404, "model 'x' not found"), "/v1/chat/completions was not found"),
        (error_reply(400, "max_tokens too large"), "check summary.model and summary.max_tokens"),
        (Reply(302, headers={"Location": "{url}/elsewhere?token=1"}),
         "set summary.base_url to the final URL ({url}/elsewhere)"),  # not followed
    ],
)  # fmt: skip
def test_other_statuses_fail_at_once(server: FakeLLMServer, reply: Reply, expected: str) -> None:
    headers = {name: value.replace("{url}", server.url) for name, value in reply.headers.items()}
    expected = expected.replace("{url}", server.url)
    server.add(Reply(reply.status, reply.body, headers), openai_reply("followed the redirect"))
    sleeps = Sleeps()

    with pytest.raises(GitClawError) as excinfo:
        client(server, sleeps).complete(REQUEST)

    message = failure(excinfo)
    assert f"HTTP {reply.status}" in message
    assert expected in message
    assert sleeps.delays == []
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(200, b"<html>oops</html>"), "invalid JSON in the reply (<html>oops</html>)"),
        (Reply(200, b""), "invalid JSON in the reply (an empty body)"),
        (json_reply([1, 2]), "unexpected reply (not a JSON object)"),
        (json_reply({"choices": []}), "unexpected reply (no choices[0].message.content)"),
        (json_reply({"error": {"message": "no credits"}}), "error in the reply (no credits)"),
        (openai_reply("", finish_reason="length"), "raise summary.max_tokens (now 321)"),
    ],
)
def test_bad_replies(server: FakeLLMServer, reply: Reply, expected: str) -> None:
    server.add(reply)
    sleeps = Sleeps()

    with pytest.raises(GitClawError) as excinfo:
        client(server, sleeps).complete(REQUEST)

    message = failure(excinfo)
    assert message.startswith(f"openai request to {server.host} failed: ")
    assert expected in message
    assert sleeps.delays == []


def test_anthropic_reply_without_content_is_an_error(server: FakeLLMServer) -> None:
    server.add(openai_reply("wrong protocol"))

    with pytest.raises(GitClawError) as excinfo:
        client(server, Sleeps(), provider="anthropic").complete(REQUEST)

    assert "unexpected reply (no text block in content)" in failure(excinfo)


# -- settings -----------------------------------------------------------------------------------


def test_missing_api_key_env_names_the_variable() -> None:
    settings = ProviderSettings(model="m", api_key_env="MY_LLM_KEY")

    with pytest.raises(GitClawError, match=r"set the env var MY_LLM_KEY") as excinfo:
        make_client(settings, env={"OTHER": "x"})
    failure(excinfo)


def test_anthropic_reads_anthropic_api_key_by_default() -> None:
    settings = ProviderSettings(provider="anthropic", model="m")

    with pytest.raises(GitClawError, match=r"set the env var ANTHROPIC_API_KEY"):
        make_client(settings, env={})
    assert make_client(settings, env={"ANTHROPIC_API_KEY": "k"}).url == (
        "https://api.anthropic.com/v1/messages"
    )


def test_openai_default_base_url_needs_no_key() -> None:
    made = make_client(ProviderSettings(model="m"), env={})
    assert made.url == "https://api.openai.com/v1/chat/completions"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (ProviderSettings(provider="gemini", model="m"), "unknown summary.provider 'gemini'"),
        (ProviderSettings(model=""), "no summary.model set"),
        (ProviderSettings(model="m", base_url="localhost:11434"), "is not an http(s) URL"),
        (ProviderSettings(model="m", max_tokens=0), "summary.max_tokens is 0"),
        (ProviderSettings(model="m", timeout_s=0), "summary.timeout_s is 0"),
        (ProviderSettings(model="m", max_retries=-1), "summary.max_retries is -1"),
    ],
)
def test_bad_settings(settings: ProviderSettings, expected: str) -> None:
    with pytest.raises(GitClawError) as excinfo:
        make_client(settings, env={})
    assert expected in failure(excinfo)


def test_key_with_inner_whitespace_is_refused_without_showing_it() -> None:
    settings = ProviderSettings(model="m", api_key_env=KEY_ENV)

    with pytest.raises(GitClawError) as excinfo:
        make_client(settings, env={KEY_ENV: f"{KEY}\nInjected: 1"})
    assert KEY_ENV in failure(excinfo)
