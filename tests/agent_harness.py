"""Run the real Claude Code, Codex and Copilot CLIs offline, resuming a transcript file.

``run_resume`` puts the transcript where that CLI looks for it, in a
hermetic home under ``tmp_path``, runs the CLI's non-interactive resume with one prompt
against a :class:`~fake_llm_sse.FakeLLMServer` on 127.0.0.1, and returns an
:class:`AgentRun` with the recorded requests and the CLI's exit code and output. The
recipes are the checked ones of ``../shared/docs/agent-formats.md``, with what this harness
found on top (noted where it matters).

The CLIs are installed by ``.ci/install-agents.sh`` into ``<repo>/.cache/agents`` (or found
through ``GITCLAW_CLAUDE_BIN``, ``GITCLAW_CODEX_BIN``, ``GITCLAW_COPILOT_BIN``). Nothing here
touches the network except 127.0.0.1.

Typical use from a pytest test::

    claude = require_agent("claude")
    run = run_resume("claude", transcript, tmp_path=tmp_path).check()
    run.body["messages"]
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest
from conftest import CORPUS, IN_CI_ENV
from fake_llm_sse import (
    FakeLLMServer,
    check_claude_code_request,
    check_request,
    hermetic_cli_env,
)
from pi_harness import chain_reaches_root, find_pi, prepare_pi_run, resume_mode
from shared_runs import shared_run

from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats.claude.rules import FORMAT as CLAUDE

REPO = Path(__file__).resolve().parent.parent
AGENTS_CACHE = REPO / ".cache" / "agents"
AGENTS = ("claude", "codex", "copilot")
# Every CLI `run_resume` runs: pi's too, with what tests/pi_harness.py knows about it.
RESUMABLE = ("pi", *AGENTS)

DEFAULT_PROMPT = "next"
DEFAULT_TIMEOUT = 180.0
FALLBACK_CODEX_MODEL = "gpt-5.1-codex-mini"

# Copilot unpacks its 235 MB runtime into $XDG_CACHE_HOME/copilot/pkg on first start. One
# unpacked copy per installed version is shared by every run instead of one per test home.
COPILOT_XDG_CACHE = AGENTS_CACHE / "xdg-cache"

# What the interactive Claude Code screen shows when rendering a transcript went wrong.
# The footer of Claude Code's input box when it waits for a prompt: the default, and the one
# of a session resumed in a permission mode it recorded ("auto mode on (shift+tab to cycle)").
CLAUDE_IDLE = ("? for shortcuts", "(shift+tab to cycle)")
QUIET_CAPTURES = 3  # a ready screen that printed nothing for this many captures is at rest
CLAUDE_SCREEN_ERRORS = (
    "TypeError",
    "ReferenceError",
    "SyntaxError",
    "undefined is not",
    "Cannot read propert",
    "is not a function",
    "No conversation found",
    "Something went wrong",
)


class AgentError(RuntimeError):
    """An agent CLI could not be run, timed out, or did not do what the test needs."""


# --------------------------------------------------------------------------------------
# Locating the CLIs
# --------------------------------------------------------------------------------------


def find_agent(name: str) -> Path | None:
    """The CLI binary: ``$GITCLAW_<NAME>_BIN`` if set (returned even if missing, so that a
    wrong setting fails loudly), else ``<repo>/.cache/agents/node_modules/.bin/<name>``
    (pi: see ``pi_harness.find_pi``)."""
    if name == "pi":
        return find_pi()
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}")
    configured = os.environ.get(f"GITCLAW_{name.upper()}_BIN")
    if configured:
        return Path(configured)
    local = AGENTS_CACHE / "node_modules" / ".bin" / name
    return local if local.exists() else None


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip the calling test, except when the environment variable ``CI`` is set (to
    anything but ``false``), or was when the run started (conftest unsets it for each test
    and sets ``IN_CI_ENV``): then FAIL it, so CI cannot pass by skipping every resume test."""
    import pytest

    if os.environ.get("CI", "").lower() not in ("", "0", "false") or os.environ.get(IN_CI_ENV):
        pytest.fail(f"{reason}; CI is set, so this is a failure, not a skip")
    pytest.skip(reason)


def require_agent(name: str) -> Path:
    """The CLI binary, or skip the calling test when it is not installed (fail in CI)."""
    binary = find_agent(name)
    if binary is None:
        skip_unless_ci(f"{name} is not installed (run .ci/install-agents.sh)")
    return binary


def require_tmux() -> str:
    """The tmux binary, or skip the calling test when it is missing (fail in CI, except on
    Windows, where tmux does not run)."""
    if os.name == "nt":
        import pytest

        pytest.skip("needs tmux, which does not run on Windows")
    tmux = shutil.which("tmux")
    if tmux is None:
        skip_unless_ci("tmux is not installed")
    return tmux


def _binary(name: str) -> Path:
    binary = find_agent(name)
    if binary is None:
        raise AgentError(f"{name} is not installed: run .ci/install-agents.sh")
    return binary


# --------------------------------------------------------------------------------------
# What a run produced
# --------------------------------------------------------------------------------------


@dataclass
class AgentRun:
    """One resume of a transcript by a real CLI."""

    agent: str
    session_id: str
    placed: Path  # the copy of the transcript that the CLI resumed (and may have appended to)
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def llm_requests(self) -> list[dict[str, Any]]:
        """The requests that hit an LLM route (not WebSocket attempts or other GETs)."""
        return [r for r in self.requests if r["protocol"] is not None and r["method"] == "POST"]

    @property
    def request(self) -> dict[str, Any]:
        """The last LLM request: the one that carried the resumed conversation."""
        if not self.llm_requests:
            raise AgentError(f"{self.agent} sent no LLM request\n{self.describe()}")
        return self.llm_requests[-1]

    @property
    def body(self) -> dict[str, Any]:
        body = self.request["body"]
        if not isinstance(body, dict):
            raise AgentError(f"{self.agent} sent a request body that is not a JSON object")
        return body

    @property
    def problems(self) -> list[str]:
        """What the fake server's checker found wrong in the LLM requests."""
        return [p for r in self.llm_requests for p in r["problems"]]

    def describe(self) -> str:
        return (
            f"argv: {self.argv}\nexit code: {self.returncode}\n"
            f"stdout:\n{self.stdout[-4000:]}\nstderr:\n{self.stderr[-4000:]}"
        )

    def check(self) -> AgentRun:
        """This run, if the CLI exited 0 and sent an LLM request that passed the checker."""
        if self.problems:
            raise AgentError(f"the fake API rejected the request: {self.problems}")
        if self.returncode != 0:
            raise AgentError(f"{self.agent} exited with {self.returncode}\n{self.describe()}")
        for sign in FAILURE_SIGNS.get(self.agent, ()):
            if sign in self.stderr:
                raise AgentError(f"{self.agent} said {sign!r}\n{self.describe()}")
        _ = self.request
        return self


# --------------------------------------------------------------------------------------
# Shared plumbing
# --------------------------------------------------------------------------------------


def _fresh_root(tmp_path: Path, agent: str) -> Path:
    """A folder for one run that does not exist yet."""
    root = Path(tmp_path) / f"{agent}-run"
    n = 0
    while root.exists():
        n += 1
        root = Path(tmp_path) / f"{agent}-run-{n}"
    return root


def _run_root(tmp_path: Path, agent: str) -> tuple[Path, Path]:
    """A fresh home and working directory for one run."""
    root = _fresh_root(tmp_path, agent)
    home, workdir = root / "home", root / "work"
    (home / "tmp").mkdir(parents=True)
    workdir.mkdir()
    return home, workdir


def _cli_env(home: Path) -> dict[str, str]:
    # TMPDIR too: Claude Code keeps a claude-<uid> folder there.
    return {**hermetic_cli_env(home), "TMPDIR": str(home / "tmp")}


@dataclass
class Placement:
    """A transcript copied where one CLI looks for it, and how to resume it there."""

    session_id: str
    placed: Path
    workdir: Path
    env: dict[str, str]
    argv: list[str]


def run_resume(
    agent: str,
    transcript: Path,
    *,
    tmp_path: Path,
    prompt: str = DEFAULT_PROMPT,
    timeout: float = DEFAULT_TIMEOUT,
    shared: bool = False,
) -> AgentRun:
    """The non-interactive resume of a copy of ``transcript`` by ``agent``, against a fake
    LLM server that checks the requests with that agent's rules. With ``shared``, a copy of
    the run of the same bytes that an earlier test made (shared_runs.py): for a test that
    compares the requests by structure, not byte for byte (the paths in them differ)."""
    if shared:
        how = ("run_resume", agent, str(find_agent(agent)), prompt)
        return shared_run(
            how,
            Path(transcript).read_bytes(),
            lambda: run_resume(
                agent, transcript, tmp_path=tmp_path, prompt=prompt, timeout=timeout
            ),
        )
    checker = check_claude_code_request if agent == "claude" else check_request
    validate = VALIDATES.get(agent, lambda _: True)(Path(transcript))
    with FakeLLMServer(checker=checker, validate=validate) as server:
        where = PLACERS[agent](Path(transcript), Path(tmp_path), server.url, prompt)
        try:
            proc = subprocess.run(
                where.argv,
                cwd=where.workdir,
                env=where.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
            raise AgentError(
                f"{agent} timed out after {timeout}s\nargv: {where.argv}\n{stderr}"
            ) from exc
        return AgentRun(
            agent=agent,
            session_id=where.session_id,
            placed=where.placed,
            argv=where.argv,
            returncode=proc.returncode,
            stdout=proc.stdout,
            stderr=proc.stderr,
            requests=server.requests,
        )


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a JSONL file that parse as objects (a glued or broken line is skipped)."""
    for line in Path(path).read_bytes().split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


# --------------------------------------------------------------------------------------
# Claude Code
# --------------------------------------------------------------------------------------


def claude_session_id(transcript: Path) -> str:
    """The ``sessionId`` of a Claude Code transcript (its first record that has one)."""
    for record in _json_lines(transcript):
        if isinstance(record.get("sessionId"), str):
            return str(record["sessionId"])
    raise AgentError(f"{transcript}: no line has a sessionId")


def claude_project_dir(config_dir: Path, cwd: Path) -> Path:
    """Where Claude Code looks for the sessions of ``cwd``. Checked with 2.1.197, 2.1.332: every
    character that is not an ASCII letter or digit becomes ``-`` (also ``_`` and spaces,
    not only ``/ . \\ :``)."""
    return config_dir / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def place_claude(transcript: Path, tmp_path: Path, server_url: str, prompt: str) -> Placement:
    """``claude -p --resume <sessionId> <prompt>``: Claude Code sends one streaming
    ``POST /v1/messages?beta=true``."""
    home, workdir = _run_root(tmp_path, "claude")
    config_dir = home / ".claude"
    session_id = claude_session_id(transcript)
    project = claude_project_dir(config_dir, workdir)
    project.mkdir(parents=True)
    placed = project / f"{session_id}.jsonl"
    shutil.copyfile(transcript, placed)
    # Skip the first-start dialogs of the interactive UI: onboarding, trusting the folder
    # and approving the API key (recorded by its last 20 characters).
    settings = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["x"], "rejected": []},
        "projects": {
            str(workdir): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        },
    }
    (config_dir / ".claude.json").write_text(json.dumps(settings))
    env = {
        **_cli_env(home),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "ANTHROPIC_BASE_URL": server_url,
        "ANTHROPIC_API_KEY": "x",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    argv = [str(_binary("claude")), "-p", "--resume", session_id, prompt, "--output-format", "json"]
    return Placement(session_id, placed, workdir, env, argv)


def claude_interactive_screen(
    transcript: Path,
    *,
    tmp_path: Path,
    expect: str,
    detailed: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    quiet_seconds: float = 1.0,
) -> str:
    """Open ``transcript`` in the interactive ``claude --resume <id>`` under tmux and return
    the rendered screen (with its scrollback) once ``expect`` shows and the input prompt is
    ready. With ``detailed``, then press ctrl+o and return the detailed transcript view,
    which also renders each tool's ``toolUseResult`` (stdout, file contents, image sizes).

    Raises :class:`AgentError` with the last screen as soon as the view is ready (its idle
    footer, :data:`CLAUDE_IDLE`) and at rest without ``expect``, or as soon as the screen
    shows one of :data:`CLAUDE_SCREEN_ERRORS`; and if a view does not show within
    ``timeout`` seconds (a guard against a hang: a count of captures ran out early while the
    pane kept printing, as a slow start on a loaded machine does). Between captures it waits for the
    pane to print more (through ``tmux pipe-pane`` into a FIFO), or at most
    ``quiet_seconds`` when the pane is idle."""
    claude = _binary("claude")
    tmux = shutil.which("tmux")
    if tmux is None:
        raise AgentError("tmux is not installed")
    with FakeLLMServer(checker=check_claude_code_request) as server:
        where = place_claude(Path(transcript), tmp_path, server.url, DEFAULT_PROMPT)
        session_id, workdir, env = where.session_id, where.workdir, where.env
        # The classic renderer, whose output stays in the pane's scrollback: under tmux
        # 2.1.332 otherwise draws fullscreen (an alternate screen with a scrollback of its own,
        # virtualized), where a capture holds only the last screenful.
        env = {**env, "CLAUDE_CODE_NO_FLICKER": "0"}
        base = [tmux, "-S", str(workdir.parent / "tmux.sock"), "-f", "/dev/null"]
        env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        session = ["new-session", "-d", "-s", "claude", "-x", "200", "-y", "50", "-c", str(workdir)]
        command = [str(claude), "--resume", session_id]
        subprocess.run(
            [*base, *session, *env_args, *command],
            env={**env, "TERM": "xterm-256color"},
            check=True,
        )
        fifo = workdir.parent / "pane-output.fifo"
        os.mkfifo(fifo)
        output = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

        def capture_until(markers: tuple[str, ...]) -> str:
            """The screen once it shows ``expect`` and one of ``markers`` (the view is
            ready). A screen that shows a marker but not ``expect``, and then prints nothing
            for QUIET_CAPTURES captures in a row, is the view at rest: it fails at once with
            that screen."""
            screen = ""
            at_rest = 0  # captures in a row that showed a marker and printed nothing after
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                screen = subprocess.run(
                    [*base, "capture-pane", "-p", "-t", "claude", "-S", "-3000"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                errors = [e for e in CLAUDE_SCREEN_ERRORS if e in screen]
                if errors:
                    raise AgentError(f"claude shows {errors}:\n{screen}")
                ready = any(marker in screen for marker in markers)
                if ready and expect in screen:
                    return screen
                if ready and at_rest >= QUIET_CAPTURES:
                    raise AgentError(f"claude is ready but does not show {expect!r}:\n{screen}")
                printed = bool(select.select([output], [], [], quiet_seconds)[0])
                if printed:
                    with contextlib.suppress(BlockingIOError):
                        os.read(output, 1 << 16)
                at_rest = at_rest + 1 if ready and not printed else 0
            raise AgentError(f"claude did not show {expect!r} and one of {markers}:\n{screen}")

        try:
            pipe = f"cat >> {shlex.quote(str(fifo))}"
            subprocess.run([*base, "pipe-pane", "-t", "claude", "-O", pipe], check=True)
            screen = capture_until(CLAUDE_IDLE)
            if detailed:
                subprocess.run([*base, "send-keys", "-t", "claude", "C-o"], check=True)
                screen = capture_until(("Showing detailed transcript",))
            return screen
        finally:
            subprocess.run([*base, "kill-server"], capture_output=True, check=False)
            os.close(output)


# --------------------------------------------------------------------------------------
# OpenAI Codex
# --------------------------------------------------------------------------------------


def codex_session_id(transcript: Path) -> str:
    """The thread id of a Codex rollout: ``payload.id`` of its first line, ``session_meta``
    (Codex cannot resume a rollout without it)."""
    first = next(_json_lines(transcript), None)
    if first is None or first.get("type") != "session_meta":
        raise AgentError(f"{transcript}: line 1 is not a session_meta record")
    return str(first["payload"]["id"])


def codex_model(transcript: Path) -> str:
    """The model of the newest ``turn_context`` (what the thread ran with last)."""
    model = FALLBACK_CODEX_MODEL
    for record in _json_lines(transcript):
        payload = record.get("payload")
        if record.get("type") == "turn_context" and isinstance(payload, dict):
            model = str(payload.get("model") or model)
    return model


def place_codex_rollout(transcript: Path, codex_home: Path) -> Path:
    """Copy a rollout to ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`` for
    today, with a fresh mtime: Codex compresses rollouts idle for 7 days into .jsonl.zst."""
    now = datetime.datetime.now(datetime.UTC)
    folder = codex_home / "sessions" / now.strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    placed = folder / f"rollout-{now:%Y-%m-%dT%H-%M-%S}-{codex_session_id(transcript)}.jsonl"
    shutil.copyfile(transcript, placed)
    os.utime(placed)
    return placed


def place_codex(transcript: Path, tmp_path: Path, server_url: str, prompt: str) -> Placement:
    """``codex exec --skip-git-repo-check resume <id> <prompt>``.

    The thread keeps the provider its rollout recorded (``openai``: a custom provider is
    refused on resume), so ``openai_base_url`` in ``$CODEX_HOME/config.toml`` points it at the
    fake (``OPENAI_BASE_URL`` is not honoured). Codex tries a WebSocket first; the fake
    answers 426 and Codex falls back to ``POST /v1/responses`` (SSE)."""
    session_id = codex_session_id(transcript)
    home, workdir = _run_root(tmp_path, "codex")
    codex_home = home / ".codex"
    codex_home.mkdir()
    placed = place_codex_rollout(transcript, codex_home)
    config = (
        f"openai_base_url = {json.dumps(server_url + '/v1')}\n"
        f"model = {json.dumps(codex_model(transcript))}\n"
    )
    (codex_home / "config.toml").write_text(config)
    env = {**_cli_env(home), "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "x"}
    argv = [str(_binary("codex")), "exec", "--skip-git-repo-check", "resume", session_id, prompt]
    return Placement(session_id, placed, workdir, env, argv)


# --------------------------------------------------------------------------------------
# GitHub Copilot CLI
# --------------------------------------------------------------------------------------


def copilot_session_id(transcript: Path) -> str:
    """``data.sessionId`` of the ``session.start`` record of an events.jsonl."""
    for record in _json_lines(transcript):
        data = record.get("data")
        if record.get("type") == "session.start" and isinstance(data, dict):
            return str(data["sessionId"])
    raise AgentError(f"{transcript}: no session.start record")


def place_copilot(transcript: Path, tmp_path: Path, server_url: str, prompt: str) -> Placement:
    """``copilot --resume=<id> -p <prompt> --allow-all-tools``, the transcript placed at
    ``$HOME/.copilot/session-state/<id>/events.jsonl``.

    Bring-your-own-key mode with an OpenAI provider needs no login; Copilot sends a streaming
    ``POST /v1/chat/completions`` with the session's own model. In that mode it does not
    send ``reasoningOpaque`` back (checked with 1.0.102; the anthropic provider type does not
    either), so sealed reasoning cannot be observed in Copilot's requests."""
    session_id = copilot_session_id(transcript)
    home, workdir = _run_root(tmp_path, "copilot")
    folder = home / ".copilot" / "session-state" / session_id
    folder.mkdir(parents=True)
    placed = folder / "events.jsonl"
    shutil.copyfile(transcript, placed)
    env = {
        **_cli_env(home),
        "XDG_CACHE_HOME": str(COPILOT_XDG_CACHE),
        "COPILOT_PROVIDER_BASE_URL": server_url + "/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "x",
        "COPILOT_OFFLINE": "true",
        "COPILOT_MODEL": "fake-model",
    }
    argv = [str(_binary("copilot")), f"--resume={session_id}", "-p", prompt, "--allow-all-tools"]
    return Placement(session_id, placed, workdir, env, argv)


# --------------------------------------------------------------------------------------
# pi
# --------------------------------------------------------------------------------------


def pi_session_id(transcript: Path) -> str:
    """The ``id`` of a pi session's header (line 1)."""
    for record in _json_lines(transcript):
        if record.get("type") == "session" and isinstance(record.get("id"), str):
            return str(record["id"])
        break
    raise AgentError(f"{transcript}: line 1 is not a pi session header")


def place_pi(transcript: Path, tmp_path: Path, server_url: str, prompt: str) -> Placement:
    """``pi --provider <p> --model <m> --session <copy> -p <prompt>`` on a copy whose header
    ``cwd`` is the run's folder (pi refuses a missing one), its agent folder pointing the
    provider at the fake: the session's own anthropic model if it has one (signed thinking
    is then replayed), else its own provider and model, else the fake chat-completions
    provider (``pi_harness.resume_mode``)."""
    root = _fresh_root(tmp_path, "pi")
    setup = prepare_pi_run(transcript, root, server_url, api=resume_mode(transcript), prompt=prompt)
    session_id = pi_session_id(transcript)
    return Placement(session_id, setup.session_copy, setup.workdir, setup.env, setup.argv)


PLACERS = {
    "pi": place_pi,
    "claude": place_claude,
    "codex": place_codex,
    "copilot": place_copilot,
}
# What a CLI prints (and exits 0) when the run did not do what was asked.
FAILURE_SIGNS = {"pi": ("not found for provider",)}  # an unknown model: a custom one
# Whether the fake server holds a file's requests to the real API's rules: a real pi file
# whose parentId chain is cut resumes a conversation the API would refuse, compressed or not.
VALIDATES = {"pi": chain_reaches_root}
SESSION_IDS = {
    "pi": pi_session_id,
    "claude": claude_session_id,
    "codex": codex_session_id,
    "copilot": copilot_session_id,
}


def compacted(agent: str, transcript: Path) -> bool:
    """Whether the agent compacted this session before (a Claude Code compact boundary, a
    Codex `compacted` record)."""
    data = transcript.read_bytes()
    if agent == "claude":
        return b'"compact_boundary"' in data
    if agent == "codex":
        return re.search(rb'"type":\s*"compacted"', data) is not None
    return False


def representative_transcripts(agent: str) -> list[Path]:
    """The first compacted and the first plain corpus transcript of an agent (those there
    are): what the tests that run a real CLI per file take; bench/resume_sweep.py runs them
    all."""
    found = corpus_transcripts(agent)
    picked = [
        next((path for path in found if compacted(agent, path) is kind), None)
        for kind in (True, False)
    ]
    return [path for path in picked if path is not None]


def view_text(transcript: Path) -> str:
    """A text the interactive view of a Claude Code transcript shows (the first 24
    characters of a line): the last typed prompt on the resumed path after its newest compact
    boundary; with none there (compacted in the middle of a long tool loop), the last line of
    plain text of its last reply. The view starts at that boundary ("Conversation compacted",
    the summary behind ctrl+o), and of a long tail shows only the newest messages."""
    data = transcript.read_bytes()
    lines = lines_from_bytes(data)
    conversation = CLAUDE.resume(list(CLAUDE.views(lines)))
    on_path = {n for n in conversation.path if n > (conversation.compaction or 0)}
    prompt, reply = "", ""
    for line in lines:
        record = parse_entry(line.data) if line.number in on_path else None
        message = record.get("message") if record else None
        if not record or not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "user" and isinstance(content, str):
            typed = not record.get("isMeta") and not record.get("isCompactSummary")
            if typed and content.strip() and not content.startswith("<"):
                prompt = content.splitlines()[0]
        elif record.get("type") == "assistant" and isinstance(content, list):
            texts = [
                b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"
            ]
            reply = next(
                (row for text in texts[::-1] if isinstance(text, str) for row in _plain(text)),
                reply,
            )
    return (prompt or reply)[:24]


def _plain(markdown: str) -> list[str]:
    """The lines of a reply the view shows as written, newest first: not in a code block, no
    heading, list, quote or table, inline code and bold shown without their marks."""
    rows: list[str] = []
    fenced = False
    for row in markdown.splitlines():
        if row.lstrip().startswith("```"):
            fenced = not fenced
            continue
        shown = row.strip().replace("`", "").replace("**", "")
        if fenced or len(shown) < 8 or re.match(r"([-*+#>|]|\d+\.)", shown):
            continue
        if not re.search(r"[*_\[\]<|]", shown):
            rows.append(shown)
    return rows[::-1]


def corpus_file_params(paths: list[Path], what: str) -> list[Any]:
    """`paths` as pytest params named by file, or one skipped param that says what is
    missing (pytest's own skip of an empty set does not say why)."""
    if paths:
        return [pytest.param(path, id=path.name) for path in paths]
    reason = f"no {what} in the shared corpus at {CORPUS}"
    return [pytest.param(Path(), id="no-corpus", marks=pytest.mark.skip(reason=reason))]


def corpus_transcripts(agent: str) -> list[Path]:
    """The shared corpus's transcripts of one agent (empty when the corpus is absent); pi's
    are ``pi/*.jsonl``.
    Copilot files are ``copilot/<name>__events.jsonl`` (or ``copilot/<id>/events.jsonl``)."""
    folder = CORPUS / agent
    if not folder.is_dir():
        return []
    if agent == "copilot":
        return sorted({*folder.glob("*events.jsonl"), *folder.glob("*/events.jsonl")})
    return sorted(folder.glob("*.jsonl"))
