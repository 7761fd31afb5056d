"""Run the real pi coding agent offline against a local fake LLM server.

Tests use this module to prove that pi still resumes a session file: pi loads the
file, rebuilds the model's context and sends one request to :class:`FakeLLMServer`,
which records the request so the test can look at what the model would have seen.

pi itself is installed by ``.ci/install-pi.sh`` into ``<repo>/.cache/pi`` (or found
through the ``GITCLAW_PI_BIN`` environment variable). Nothing here touches the
network except 127.0.0.1.

Typical use from a pytest test::

    from pi_harness import find_pi, pi_context, resume_with_pi

    bodies = resume_with_pi(session_path, api="anthropic", tmp_path=tmp_path)
    messages = pi_context(session_path)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The fake server and the request checkers are shared with tests/agent_harness.py; the
# names stay importable from here.
from conftest import CORPUS, IN_CI_ENV
from fake_llm_sse import DEFAULT_REPLY as DEFAULT_REPLY
from fake_llm_sse import FakeLLMServer as FakeLLMServer
from fake_llm_sse import check_request as check_request
from fake_llm_sse import hermetic_cli_env
from fake_llm_sse import protocol_for_path as protocol_for_path
from shared_runs import shared_run

REPO = Path(__file__).resolve().parent.parent
PI_CACHE = REPO / ".cache" / "pi"
PI_PACKAGE_NAME = "@mariozechner/pi-coding-agent"
CONTEXT_SCRIPT = Path(__file__).resolve().parent / "node" / "context.mjs"

DEFAULT_PROMPT = "Reply with OK."
DEFAULT_TIMEOUT = 180.0

# Provider and model used with api="openai-completions": a custom provider that pi does
# not know, so every assistant message in the session counts as "another model".
FAKE_PROVIDER = "fake"
FAKE_MODEL = "fake-model"
# Model used with api="anthropic" when the session has no anthropic model of its own.
DEFAULT_ANTHROPIC_MODEL = "claude-opus-4-6"

# Where each pi api expects its base URL to point (relative to the fake server's root).
# The built-in providers' baseUrls are: anthropic "https://api.anthropic.com" (the SDK adds
# /v1/messages), openai/openrouter ".../v1" (+ /chat/completions or /responses) and google
# ".../v1beta" (+ /models/<id>:streamGenerateContent).
_BASE_PATH_BY_API = {
    "anthropic-messages": "",
    "openai-completions": "/v1",
    "openai-responses": "/v1",
    "google-generative-ai": "/v1beta",
}


# --------------------------------------------------------------------------------------
# Locating pi
# --------------------------------------------------------------------------------------


def find_pi() -> Path | None:
    """The pi binary: ``$GITCLAW_PI_BIN`` if set, else ``<repo>/.cache/pi/node_modules/.bin/pi``.

    Returns None when neither is available. A set ``GITCLAW_PI_BIN`` is returned even if it
    does not exist, so that a wrong setting fails loudly instead of skipping tests.
    """
    env = os.environ.get("GITCLAW_PI_BIN")
    if env:
        return Path(env)
    local = PI_CACHE / "node_modules" / ".bin" / "pi"
    return local if local.exists() else None


def find_pi_package() -> Path | None:
    """The installed ``@mariozechner/pi-coding-agent`` package folder, found from the pi
    binary (``bin/pi`` is a symlink to ``<package>/dist/cli.js``)."""
    pi = find_pi()
    if pi is None or not pi.exists():
        return None
    for parent in pi.resolve().parents:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                if json.loads(manifest.read_text()).get("name") == PI_PACKAGE_NAME:
                    return parent
            except ValueError:
                pass
    return None


def pi_version() -> str | None:
    package = find_pi_package()
    if package is None:
        return None
    return str(json.loads((package / "package.json").read_text())["version"])


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise PiError("node is not on PATH")
    return node


class PiError(RuntimeError):
    """pi (or the node helper) failed; the message holds its stderr."""


# --------------------------------------------------------------------------------------
# Session helpers (Python side, read-only)
# --------------------------------------------------------------------------------------


def read_entries(session_path: Path) -> list[dict[str, Any]]:
    """Parse a session file the way pi does: split on ``\\n``, skip blank and bad lines."""
    entries = []
    for line in Path(session_path).read_text(encoding="utf-8").strip().split("\n"):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


def session_model(session_path: Path) -> dict[str, str | None]:
    """The model pi would restore on resume: the last ``model_change`` or assistant message
    on the path from the leaf (the last entry) to the root. Returns provider, modelId and
    api (the api of the last assistant message on that path, if any)."""
    entries = [e for e in read_entries(session_path) if e.get("type") != "session"]
    by_id = {e.get("id"): e for e in entries}
    path: list[dict[str, Any]] = []
    current = entries[-1] if entries else None
    while current is not None:
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if parent else None
    path.reverse()
    result: dict[str, str | None] = {"provider": None, "modelId": None, "api": None}
    for entry in path:
        if entry.get("type") == "model_change":
            result["provider"] = entry.get("provider")
            result["modelId"] = entry.get("modelId")
        elif entry.get("type") == "message" and entry["message"].get("role") == "assistant":
            message = entry["message"]
            result["provider"] = message.get("provider")
            result["modelId"] = message.get("model")
            result["api"] = message.get("api")
    return result


def copy_session_for_pi(session_path: Path, dest_dir: Path, cwd: Path) -> Path:
    """Copy a session for a pi run and point the copy's header ``cwd`` at ``cwd``.

    TEST-ONLY: pi (>= 0.65) refuses a session whose header cwd does not exist, and pi
    appends to the file it resumes. So pi always runs on this copy. Only line 1 of the
    copy is re-written; every other byte is copied as is. The product's own files never
    get their header changed.
    """
    data = Path(session_path).read_bytes()
    first, sep, rest = data.partition(b"\n")
    header = json.loads(first)
    if not isinstance(header, dict) or header.get("type") != "session":
        raise ValueError(f"{session_path}: line 1 is not a session header")
    header["cwd"] = str(cwd)
    new_first = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / Path(session_path).name
    dest.write_bytes(new_first + sep + rest)
    return dest


# --------------------------------------------------------------------------------------
# Running pi
# --------------------------------------------------------------------------------------


@dataclass
class PiRun:
    """What one pi resume produced."""

    provider: str
    model: str
    api: str
    requests: list[dict[str, Any]]
    session_copy: Path
    stdout: str
    stderr: str
    returncode: int
    argv: list[str] = field(default_factory=list)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies of the requests that hit an LLM route."""
        return [r["body"] for r in self.requests if r["protocol"] is not None]

    def appended_entries(self, original: Path) -> list[dict[str, Any]]:
        """Entries pi appended to the copy (beyond the lines of ``original``)."""
        n = len(read_entries(original))
        return read_entries(self.session_copy)[n:]


def _hermetic_env(home: Path, agent_dir: Path) -> dict[str, str]:
    return {
        **hermetic_cli_env(home),
        "TMPDIR": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
    }


def _write_agent_dir(agent_dir: Path, server_url: str, provider: str, api: str, model: str) -> None:
    agent_dir.mkdir(parents=True, exist_ok=True)
    base_url = server_url + _BASE_PATH_BY_API[api]
    if provider == FAKE_PROVIDER:
        providers: dict[str, Any] = {
            FAKE_PROVIDER: {
                "baseUrl": base_url,
                "api": api,
                "apiKey": "x",
                "models": [{"id": model, "contextWindow": 128000, "maxTokens": 4096}],
            }
        }
    else:
        # A built-in provider with only baseUrl (and a key) overrides where its built-in
        # models send requests; the model keeps its real api, provider and id, so pi sees
        # the session's assistant messages as "the same model" and replays signatures.
        providers = {provider: {"baseUrl": base_url, "apiKey": "x"}}
    (agent_dir / "models.json").write_text(json.dumps({"providers": providers}, indent=2))
    settings = {
        # One request per resume: no auto-compaction, no retries.
        "compaction": {"enabled": False},
        "retry": {"enabled": False, "provider": {"maxRetries": 0}},
    }
    (agent_dir / "settings.json").write_text(json.dumps(settings, indent=2))


def choose_model(
    session_path: Path, api: str, provider: str | None = None, model: str | None = None
) -> tuple[str, str, str]:
    """The provider, model and api pi resumes ``session_path`` with (see :func:`run_pi_resume`)."""
    recorded = session_model(session_path)

    if api == "openai-completions":
        use_provider, use_model, use_api = FAKE_PROVIDER, model or FAKE_MODEL, "openai-completions"
        if provider is not None:
            raise ValueError("provider= is fixed to 'fake' for api='openai-completions'")
    elif api == "anthropic":
        use_provider, use_api = "anthropic", "anthropic-messages"
        if model is not None:
            use_model = model
        elif recorded["provider"] == "anthropic" and recorded["modelId"]:
            use_model = str(recorded["modelId"])
        else:
            use_model = DEFAULT_ANTHROPIC_MODEL
    elif api == "native":
        use_provider = provider or str(recorded["provider"] or "")
        use_model = model or str(recorded["modelId"] or "")
        use_api = str(recorded["api"] or "")
        if not use_provider or not use_model:
            raise ValueError(f"{session_path}: no model recorded; pass provider= and model=")
        if use_api not in _BASE_PATH_BY_API:
            raise ValueError(f"{session_path}: api {use_api!r} is not served by FakeLLMServer")
    else:
        raise ValueError(f"unknown api {api!r}")

    return use_provider, use_model, use_api


def resume_mode(session_path: Path) -> str:
    """How a resume through ``agent_harness.run_resume`` talks to the fake server: with the
    session's own anthropic model (signed thinking replayed as recorded), else with its own
    provider and model, else (no model recorded) as the fake chat-completions provider."""
    recorded = session_model(session_path)
    if recorded["provider"] == "anthropic" and recorded["modelId"]:
        return "anthropic"
    if recorded["provider"] and recorded["modelId"] and recorded["api"] in _BASE_PATH_BY_API:
        return "native"
    return "openai-completions"


@dataclass
class PiSetup:
    """A copy of a session and a pi agent folder pointed at one fake server: how to run pi."""

    session_copy: Path
    workdir: Path
    env: dict[str, str]
    argv: list[str]
    provider: str
    model: str
    api: str


def prepare_pi_run(
    session_path: Path,
    root: Path,
    server_url: str,
    *,
    api: str,
    prompt: str,
    provider: str | None = None,
    model: str | None = None,
    extra_args: list[str] | None = None,
) -> PiSetup:
    """Everything under ``root``: a hermetic home, pi's agent folder with ``models.json``
    pointing at ``server_url``, and the test-only copy of the session pi resumes."""
    pi = find_pi()
    if pi is None:
        raise PiError("pi is not installed: run .ci/install-pi.sh or set GITCLAW_PI_BIN")
    use_provider, use_model, use_api = choose_model(session_path, api, provider, model)
    home = root / "home"
    agent_dir = root / "agent"
    workdir = root / "work"
    for d in (home, agent_dir, workdir):
        d.mkdir(parents=True)
    copy = copy_session_for_pi(session_path, root / "session", workdir)
    _write_agent_dir(agent_dir, server_url, use_provider, use_api, use_model)
    env = _hermetic_env(home, agent_dir)
    if use_provider == "anthropic":
        env["ANTHROPIC_API_KEY"] = "x"
    argv = [
        str(pi),
        "--provider",
        use_provider,
        "--model",
        use_model,
        "--session",
        str(copy),
        *(extra_args or []),
        "-p",
        prompt,
    ]
    return PiSetup(copy, workdir, env, argv, use_provider, use_model, use_api)


def run_pi_resume(
    session_path: Path | str,
    *,
    tmp_path: Path,
    api: str = "openai-completions",
    provider: str | None = None,
    model: str | None = None,
    prompt: str = DEFAULT_PROMPT,
    reply: str = DEFAULT_REPLY,
    timeout: float = DEFAULT_TIMEOUT,
    validate: bool = True,
    allow_unknown_model: bool = False,
    extra_args: list[str] | None = None,
    shared: bool = False,
) -> PiRun:
    """Resume ``session_path`` (on a test-only copy) with the real pi and one prompt.

    ``api`` chooses how pi talks to the fake server:

    - ``"openai-completions"``: custom provider ``fake`` / model ``fake-model`` (OpenAI chat
      completions). Every assistant message is from "another model", so pi turns thinking
      into plain text and drops signatures.
    - ``"anthropic"``: built-in provider ``anthropic`` with its baseUrl pointed at the fake.
      The model is ``model``, else the session's model if that is an anthropic one, else
      ``claude-opus-4-6``. When it equals the session's model, signed thinking blocks are
      replayed exactly as a real Anthropic request would carry them.
    - ``"native"``: the session's own provider and model (or ``provider``/``model``), with
      that provider's baseUrl pointed at the fake. Works for anthropic-messages,
      openai-completions (e.g. openrouter), openai-responses (openai) and
      google-generative-ai (google) models.

    ``validate`` makes the fake server answer 400 to requests that break a rule of the real
    API (see :func:`check_request`), so pi fails. pi accepts a model id it does not know
    (it warns and treats it as a custom model, which is never "the same model" as the
    session's, so signatures are not replayed); unless ``allow_unknown_model`` is set,
    that warning is an error here.

    Raises :class:`PiError` (with pi's stderr) if pi exits non-zero, times out, sends no
    LLM request, or does not know the model.

    With ``shared``, a copy of the run of the same bytes with the same arguments that an
    earlier test made (shared_runs.py): for a test that compares the requests by structure,
    not byte for byte (the paths in them differ).
    """
    session_path = Path(session_path)
    if shared:
        how = (
            "run_pi_resume",
            str(find_pi()),
            repr(FakeLLMServer),  # a test that swaps the server gets a run of its own
            *map(repr, (api, provider, model, prompt, reply, validate, allow_unknown_model)),
            repr(extra_args),
        )
        return shared_run(
            how,
            session_path.read_bytes(),
            lambda: run_pi_resume(
                session_path,
                tmp_path=tmp_path,
                api=api,
                provider=provider,
                model=model,
                prompt=prompt,
                reply=reply,
                timeout=timeout,
                validate=validate,
                allow_unknown_model=allow_unknown_model,
                extra_args=extra_args,
            ),
        )
    root = Path(tmp_path) / f"pi-run-{uuid.uuid4().hex[:8]}"
    with FakeLLMServer(reply=reply, validate=validate) as server:
        setup = prepare_pi_run(
            session_path,
            root,
            server.url,
            api=api,
            prompt=prompt,
            provider=provider,
            model=model,
            extra_args=extra_args,
        )
        argv = setup.argv
        try:
            proc = subprocess.run(
                argv,
                cwd=setup.workdir,
                env=setup.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
            raise PiError(f"pi timed out after {timeout}s\nstderr:\n{stderr}") from exc
        requests = server.requests

    run = PiRun(
        provider=setup.provider,
        model=setup.model,
        api=setup.api,
        requests=requests,
        session_copy=setup.session_copy,
        stdout=proc.stdout,
        stderr=proc.stderr,
        returncode=proc.returncode,
        argv=argv,
    )
    problems = [p for r in requests for p in r.get("problems", [])]
    if proc.returncode != 0:
        raise PiError(
            f"pi exited with {proc.returncode}\nargv: {argv}\n"
            f"stderr:\n{proc.stderr}\nstdout:\n{proc.stdout}"
            + (f"\nfake server rejected the request: {problems}" if problems else "")
        )
    if not allow_unknown_model and "not found for provider" in proc.stderr:
        raise PiError(
            f"pi does not know model {setup.model!r} of {setup.provider!r}:\n{proc.stderr}"
        )
    if not run.bodies:
        raise PiError(f"pi sent no LLM request\nstderr:\n{proc.stderr}\nstdout:\n{proc.stdout}")
    return run


def resume_with_pi(
    session_path: Path | str,
    *,
    tmp_path: Path,
    api: str = "openai-completions",
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Resume ``session_path`` with the real pi; return the JSON bodies it sent to the LLM.

    See :func:`run_pi_resume` for ``api`` and the other keyword arguments.
    """
    return run_pi_resume(session_path, tmp_path=tmp_path, api=api, **kwargs).bodies


# --------------------------------------------------------------------------------------
# pi's own context builder (node helper)
# --------------------------------------------------------------------------------------


def pi_context_report(
    session_path: Path | str, *, full: bool = False, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, Any]:
    """Run ``tests/node/context.mjs`` on a session (read-only) and return its JSON report:
    ``{"messages": [...], "totals": {...}, "model": ..., "thinkingLevel": ..., ...}``."""
    package = find_pi_package()
    if package is None:
        raise PiError("pi is not installed: run .ci/install-pi.sh or set GITCLAW_PI_BIN")
    argv = [_node(), str(CONTEXT_SCRIPT), str(session_path)]
    if full:
        argv.append("--full")
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "PI_CODING_AGENT_DIR": str(scratch / "gitclaw-pi-context-agent-dir"),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "GITCLAW_PI_PACKAGE_DIR": str(package),
    }
    proc = subprocess.run(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise PiError(f"context.mjs exited with {proc.returncode}\nstderr:\n{proc.stderr}")
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def pi_context(session_path: Path | str, *, full: bool = False) -> list[dict[str, Any]]:
    """The messages pi would give the model on resume, in order, as built by pi's own
    ``buildSessionContext`` + ``convertToLlm``. Each dict has ``role`` (user, assistant or
    toolResult), ``sourceRole`` (pi's message role before conversion, e.g.
    compactionSummary), ``entryId``/``entryType`` (the session entry it came from), and a
    ``blocks`` summary; with ``full=True`` also the whole ``message``."""
    messages: list[dict[str, Any]] = pi_context_report(session_path, full=full)["messages"]
    return messages


def require_pi(*, node: bool = False) -> Path:
    """Return the pi binary, or skip the calling test when pi is not installed.

    When the environment variable ``CI`` is set, a missing pi FAILS the test instead of
    skipping it, so CI cannot pass by silently skipping every pi test. With ``node=True``
    the node binary (for :func:`pi_context`) is required too.
    """
    import pytest

    pi = find_pi()
    reason = None
    if pi is None:
        reason = "pi is not installed (run .ci/install-pi.sh or set GITCLAW_PI_BIN)"
    elif node and shutil.which("node") is None:
        reason = "node is not on PATH"
    if reason is not None:
        if os.environ.get("CI") or os.environ.get(IN_CI_ENV):  # conftest unsets CI
            pytest.fail(f"{reason}; CI is set, so this is a failure, not a skip")
        pytest.skip(reason)
    assert pi is not None
    return pi


def chain_reaches_root(session: Path) -> bool:
    """Whether the parentId chain from the last entry reaches the root (a real file's is cut)."""
    entries = [e for e in read_entries(session) if e.get("type") != "session"]
    by_id = {e["id"]: e for e in entries}
    current: dict[str, Any] | None = entries[-1] if entries else None
    while current is not None:
        parent = current.get("parentId")
        if parent is None:
            return True
        current = by_id.get(parent)
    return False


def iter_corpus(corpus_dir: Path | None = None) -> Iterator[Path]:
    """Session files of the shared corpus (``<repo>/../shared/corpus/pi/*.jsonl``)."""
    base = corpus_dir or (CORPUS / "pi")
    if base.is_dir():
        yield from sorted(base.glob("*.jsonl"))
