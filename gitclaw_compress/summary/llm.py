"""Plain-HTTP clients for the LLM that writes continuation summaries (stdlib urllib, no SDKs).

Two wire protocols, chosen by ``summary.provider``; both are non-streaming.

``openai``: OpenAI-compatible chat completions, ``POST {base_url}/chat/completions`` with
``Authorization: Bearer <key>``. ``base_url`` ends at the API version, as the servers document
it: ``https://api.openai.com/v1`` (the default), ``https://openrouter.ai/api/v1``,
``http://localhost:11434/v1`` (Ollama), ``http://localhost:8000/v1`` (vLLM),
``http://localhost:8080/v1`` (llama.cpp). The key is optional: with no ``api_key_env`` no
Authorization header is sent.

``anthropic``: the Messages API, ``POST {base_url}/v1/messages`` with ``x-api-key`` and
``anthropic-version: 2023-06-01``. ``base_url`` is the API root without the version, as in
Anthropic's SDKs: ``https://api.anthropic.com`` (the default); a trailing ``/v1`` is accepted
and dropped. The key is required; ``api_key_env`` defaults to ``ANTHROPIC_API_KEY``.

Every request has a timeout (``timeout_s`` bounds the connect and each wait for bytes, not the
whole call). Timeouts, connection errors, HTTP 429 and 5xx are retried up to ``max_retries``
times with exponential backoff and jitter, or after ``Retry-After`` seconds when the server
sends it (capped). Other failures raise at once. Every failure is a one-line ``GitClawError``
naming the provider, the host, the status, the server's message and the setting to change;
the API key never appears in it, and redirects are not followed, so the key goes nowhere else.
"""

from __future__ import annotations

import http.client
import math
import os
import random
import re
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import SplitResult, urlsplit

import orjson

from gitclaw_compress import __version__
from gitclaw_compress.errors import GitClawError

PROVIDERS = ("openai", "anthropic")
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
DEFAULT_API_KEY_ENVS: dict[str, str | None] = {"openai": None, "anthropic": "ANTHROPIC_API_KEY"}
ANTHROPIC_VERSION = "2023-06-01"

DEFAULT_MAX_TOKENS = 1500
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3

BACKOFF_BASE_S = 1.0  # first retry waits 0.5-1 s, then 1-2 s, 2-4 s, ...
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 60.0
SERVER_MESSAGE_CHARS = 200


@dataclass(frozen=True)
class ProviderSettings:
    """The ``summary.*`` settings that pick and configure the provider."""

    provider: str = "openai"
    base_url: str | None = None  # None or "": the provider's default
    model: str = ""  # required
    # None or "": openai sends no key, anthropic reads ANTHROPIC_API_KEY
    api_key_env: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES


@dataclass(frozen=True)
class CompletionRequest:
    system: str  # "" sends no system prompt
    user: str
    model: str
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = DEFAULT_TEMPERATURE

    @classmethod
    def from_settings(
        cls,
        settings: ProviderSettings,
        *,
        system: str,
        user: str,
        temperature: float = DEFAULT_TEMPERATURE,
    ) -> CompletionRequest:
        return cls(system, user, settings.model, settings.max_tokens, temperature)


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None  # None when the server did not report it
    output_tokens: int | None = None


@dataclass(frozen=True)
class CompletionResult:
    text: str
    model: str  # as the server reported it, else the requested model
    provider: str
    usage: Usage
    attempts: int  # HTTP requests made, 1 + retries
    stop_reason: str | None = None  # "length" (openai) / "max_tokens" (anthropic): truncated


class LLMClient(Protocol):
    def complete(self, request: CompletionRequest) -> CompletionResult: ...


def make_client(
    settings: ProviderSettings,
    *,
    env: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
) -> HTTPClient:
    """Check the settings, read the API key from the environment, and return a client."""
    return HTTPClient(settings, env=os.environ if env is None else env, sleep=sleep, rand=rand)


def backoff_delay(retry: int, rand: float) -> float:
    """Seconds to wait before retry number ``retry`` (1-based); ``rand`` is in [0, 1)."""
    ceiling: float = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (retry - 1))
    return ceiling * (0.5 + 0.5 * rand)


class _Failure(Exception):
    """One failed attempt: what happened, whether to retry, and what to change."""

    def __init__(
        self, what: str, hint: str, *, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint
        self.retryable = retryable
        self.retry_after = retry_after


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # Returning None makes urllib raise HTTPError for the 3xx instead of following it.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class HTTPClient:
    """An ``LLMClient`` speaking the openai or anthropic protocol over urllib."""

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        env: Mapping[str, str],
        sleep: Callable[[float], None],
        rand: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.provider = settings.provider
        self._sleep = sleep
        self._rand = rand
        _check_settings(settings)
        base = (settings.base_url or DEFAULT_BASE_URLS[self.provider]).rstrip("/")
        if self.provider == "anthropic":
            self.url = base.removesuffix("/v1") + "/v1/messages"
        else:
            self.url = base + "/chat/completions"
        parts = urlsplit(self.url)
        self.host = _host(parts)
        self._path = parts.path
        self.key_env = settings.api_key_env or DEFAULT_API_KEY_ENVS[self.provider]
        self._key = _read_key(self.provider, self.key_env, env)
        self._headers = _headers(self.provider, self._key)
        self._opener = urllib.request.build_opener(_NoRedirect)

    def complete(self, request: CompletionRequest) -> CompletionResult:
        body = orjson.dumps(self._body(request))
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = self._post(body)
            except _Failure as failure:
                if not failure.retryable or attempt > self.settings.max_retries:
                    after = f" after {attempt} attempts" if attempt > 1 else ""
                    # from None: the cause holds the server's text before the key is redacted
                    raise self._error(f"{failure.what}{after}", failure.hint) from None
                delay = failure.retry_after
                if delay is None:
                    delay = backoff_delay(attempt, self._rand())
                self._sleep(min(delay, RETRY_AFTER_CAP_S))
                continue
            return self._parse(raw, request, attempt)

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        user = {"role": "user", "content": request.user}
        body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
        body["temperature"] = request.temperature
        if self.provider == "anthropic":
            if request.system:
                body["system"] = request.system
            body["messages"] = [user]
        else:
            system = [{"role": "system", "content": request.system}] if request.system else []
            body["messages"] = [*system, user]
            body["stream"] = False
        return body

    def _post(self, body: bytes) -> bytes:
        req = urllib.request.Request(self.url, data=body, headers=self._headers, method="POST")
        try:
            with self._opener.open(req, timeout=self.settings.timeout_s) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as err:
            raise self._http_failure(err) from None
        except urllib.error.URLError as err:
            raise _network_failure(err.reason, self.settings.timeout_s) from err
        except (OSError, http.client.HTTPException) as err:
            raise _network_failure(err, self.settings.timeout_s) from err

    def _http_failure(self, err: urllib.error.HTTPError) -> _Failure:
        status = err.code
        try:
            detail = _server_message(err.read())
        except (OSError, http.client.HTTPException):
            detail = ""
        finally:
            err.close()
        what = f"HTTP {status}" + (f" ({detail})" if detail else "")
        location = err.headers.get("Location")
        hint = _http_hint(status, location, self.key_env, self._path, self.settings.max_retries)
        retryable = status == 429 or status >= 500
        retry_after = _retry_after(err.headers.get("Retry-After"))
        return _Failure(what, hint, retryable=retryable, retry_after=retry_after)

    def _parse(self, raw: bytes, request: CompletionRequest, attempts: int) -> CompletionResult:
        check = f"check that summary.base_url serves the {self.provider} API"
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            snippet = _one_line(raw.decode("utf-8", "replace")) or "an empty body"
            raise self._error(f"invalid JSON in the reply ({snippet})", check) from None
        if not isinstance(data, dict):
            raise self._error("unexpected reply (not a JSON object)", check)
        if data.get("error"):  # some gateways (e.g. OpenRouter) report errors with HTTP 200
            what = f"error in the reply ({_server_message(raw)})"
            raise self._error(what, "check summary.model and summary.max_tokens")
        if self.provider == "anthropic":
            text, stop, usage = _anthropic_reply(data)
        else:
            text, stop, usage = _openai_reply(data)
        if text is None:
            raise self._error(f"unexpected reply (no {_SHAPES[self.provider]})", check)
        if not text.strip():
            if stop in ("length", "max_tokens"):
                hint = f"raise summary.max_tokens (now {request.max_tokens})"
                raise self._error("empty completion: it stopped at max_tokens", hint)
            raise self._error(f"empty completion (stop reason {stop})", "check summary.model")
        model = data.get("model")
        return CompletionResult(
            text=text,
            model=model if isinstance(model, str) and model else request.model,
            provider=self.provider,
            usage=usage,
            attempts=attempts,
            stop_reason=stop,
        )

    def _error(self, what: str, hint: str) -> GitClawError:
        message = _one_line(f"{self.provider} request to {self.host} failed: {what}; {hint}", 0)
        if self._key:
            message = message.replace(self._key, "[redacted]")
        return GitClawError(message)


def _headers(provider: str, key: str | None) -> dict[str, str]:
    """The request headers: JSON, who asks, and the key where the provider wants it."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"gitclaw-compress/{__version__}",
    }
    if provider == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _http_hint(
    status: int, location: str | None, key_env: str | None, path: str, max_retries: int
) -> str:
    """What to do about an HTTP error status, in the settings' words."""
    retries = f"summary.max_retries (now {max_retries})"
    if 300 <= status < 400:
        found = urlsplit(location or "")
        target = found.path or "?"
        if found.hostname:
            target = f"{found.scheme}://{_host(found)}{found.path}"
        return f"redirects are not followed: set summary.base_url to the final URL ({target})"
    if status in (401, 403):
        return (
            f"check the API key in the env var {key_env}"
            if key_env
            else "the server wants an API key: set summary.api_key_env to the variable with it"
        )
    if status == 404:
        return f"{path} was not found: check summary.base_url and summary.model"
    if status == 429:
        return f"rate limited: wait and try again, or raise {retries}"
    if status >= 500:
        return f"the server failed: try again later, or raise {retries}"
    return "check summary.model and summary.max_tokens"


def _network_failure(reason: object, timeout_s: float) -> _Failure:
    """A request that got no HTTP answer, and whether trying again may help."""
    where = "check summary.base_url and that the server is running"
    if isinstance(reason, TimeoutError):
        what = f"no response within {timeout_s:g}s"
        hint = f"raise summary.timeout_s, or {where}"
        return _Failure(what, hint, retryable=True)
    if isinstance(reason, ssl.SSLCertVerificationError):
        return _Failure(f"TLS certificate check failed ({reason})", where, retryable=False)
    if isinstance(reason, ConnectionRefusedError):
        return _Failure("connection refused", where, retryable=True)
    return _Failure(f"connection failed ({_one_line(str(reason))})", where, retryable=True)


_SHAPES = {"openai": "choices[0].message.content", "anthropic": "text block in content"}


def _check_settings(settings: ProviderSettings) -> None:
    if settings.provider not in PROVIDERS:
        raise GitClawError(
            f"unknown summary.provider {settings.provider!r}: use one of {', '.join(PROVIDERS)}"
        )
    if not settings.model.strip():
        raise GitClawError(f"no summary.model set: name the {settings.provider} model to use")
    if settings.base_url:
        parts = urlsplit(settings.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise GitClawError(
                f"summary.base_url {_one_line(settings.base_url)!r} is not an http(s) URL:"
                f" use e.g. {DEFAULT_BASE_URLS[settings.provider]}"
            )
    if settings.max_tokens < 1:
        raise GitClawError(f"summary.max_tokens is {settings.max_tokens}: use 1 or more")
    if not settings.timeout_s > 0:
        raise GitClawError(f"summary.timeout_s is {settings.timeout_s}: use more than 0")
    if settings.max_retries < 0:
        raise GitClawError(f"summary.max_retries is {settings.max_retries}: use 0 or more")


def _read_key(provider: str, key_env: str | None, env: Mapping[str, str]) -> str | None:
    if not key_env:
        return None
    key = env.get(key_env, "").strip()
    if not key:
        raise GitClawError(
            f"{provider} API key missing: set the env var {key_env}"
            " (or point summary.api_key_env at the variable that holds the key)"
        )
    if not key.isascii() or any(ch.isspace() or ord(ch) < 32 for ch in key):
        raise GitClawError(
            f"the env var {key_env} holds an invalid API key (spaces or non-ASCII characters)"
        )
    return key


def _openai_reply(data: dict[str, Any]) -> tuple[str | None, str | None, Usage]:
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    counts = Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, None, counts
    stop = choices[0].get("finish_reason")
    stop = stop if isinstance(stop, str) else None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None, stop, counts
    content = message.get("content")
    if content is None:  # e.g. a reasoning model that spent max_tokens before answering
        return "", stop, counts
    if isinstance(content, list):  # content parts, as some compatible servers send
        content = "".join(_texts(content))
    return (content if isinstance(content, str) else None), stop, counts


def _anthropic_reply(data: dict[str, Any]) -> tuple[str | None, str | None, Usage]:
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    counts = Usage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")))
    stop = data.get("stop_reason")
    stop = stop if isinstance(stop, str) else None
    content = data.get("content")
    if not isinstance(content, list):
        return None, stop, counts
    return "".join(_texts(content)), stop, counts


def _texts(blocks: list[Any]) -> list[str]:
    return [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _host(parts: SplitResult) -> str:
    """host[:port] of a URL, leaving out any user:password@."""
    host = parts.hostname or "?"
    return host if parts.port is None else f"{host}:{parts.port}"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; None for a missing or HTTP-date value."""
    try:
        seconds = float(value or "")
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _server_message(raw: bytes) -> str:
    """The short message in an error body: OpenAI/Anthropic/Ollama/FastAPI shapes, else text."""
    text = raw.decode("utf-8", "replace")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(data.get("message"), str):
            text = data["message"]
        elif isinstance(data.get("detail"), str):
            text = data["detail"]
    elif text.lstrip().startswith("<"):  # an HTML error page from a proxy
        text = re.sub(r"<[^>]*>", " ", text)
    return _one_line(text)


def _one_line(text: str, limit: int = SERVER_MESSAGE_CHARS) -> str:
    text = " ".join(text.split())
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
