"""`summarize` against real git and local LLM servers on 127.0.0.1 (both protocols)."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, git
from fake_llm_http import (
    FakeLLMServer,
    Reply,
    anthropic_reply,
    error_reply,
    hold_reply,
    json_reply,
    openai_reply,
)
from synthetic import SessionBuilder, big_text, text, tool_call

from gitclaw_compress.config import load_config
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.summary.llm import LLMClient, ProviderSettings, make_client
from gitclaw_compress.summary.plan import KeepPolicy
from gitclaw_compress.summary.prompt import SECTIONS
from gitclaw_compress.summary.stage import summarize_file

SESSION = ".GITCLAW/state/sessions/2026-02-20T11-44-20-711Z_0b1f6c29.jsonl"
KEY_ENV = "GITCLAW_TEST_SUMMARY_KEY"
KEY = "sk-test-summary-0123456789"
TASK = "Port the parser to Rust — keep the API ✓\n\nNo new dependencies."
LLM_TEXT = "\n".join(f"## {name}\nLLM-SECTION-{n}" for n, name in enumerate(SECTIONS))
PROTOCOLS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv(KEY_ENV, KEY)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Growing:
    """A session that grows turn by turn, as pi appends to it (ids never repeat)."""

    def __init__(self) -> None:
        self.builder = SessionBuilder(model="fake-model")
        self.builder._ids = itertools.count(1)

    def turn(self, n: int, request: str | None = None) -> None:
        b = self.builder
        b.user(request or f"Request {n}: handle module{n}")
        b.assistant(tool_call(f"r{n}", "read", {"path": f"src/module{n}.py"}))
        b.tool_result(
            f"r{n}",
            "read",
            f"HEAD-{n}\n"
            + big_text(f"module{n}", 120)
            + f"\nMIDDLE-{n}\n"
            + big_text(f"rest{n}", 120)
            + f"\nTAIL-{n}",
        )
        b.assistant(
            text(f"I chose a table-driven design for module{n} because it is simpler."),
            tool_call(f"w{n}", "write", {"path": f"src/module{n}.rs", "content": "fn x() {}"}),
        )
        b.tool_result(f"w{n}", "write", f"Wrote src/module{n}.rs")
        b.assistant(text(f"Module {n} is ported."), stop="stop")

    def write(self, path: Path) -> None:
        path.write_bytes(self.builder.data())

    def append_after(self, path: Path, parent: str, turns: range) -> None:
        """New turns written the way pi appends them: the first new entry is a child of
        ``parent`` (the compaction entry, the file's leaf)."""
        start = len(self.builder.lines)
        self.builder._last = parent
        for n in turns:
            self.turn(n)
        with open(path, "ab") as handle:
            handle.write(b"".join(line + b"\n" for line in self.builder.lines[start:]))


@pytest.fixture
def grown(repo: Path) -> tuple[Path, Growing]:
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    session = Growing()
    session.turn(1, TASK)
    for n in range(2, 5):
        session.turn(n)
    session.write(path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path, session


def configure(repo: Path, **summary: Any) -> None:
    (repo / "compression.json").write_text(json.dumps({"summary": summary}))


def llm_config(repo: Path, protocol: str, server: FakeLLMServer, **extra: Any) -> None:
    base = server.url + "/v1" if protocol == "openai" else server.url
    configure(
        repo,
        provider=protocol,
        base_url=base,
        model="cheap-model",
        api_key_env=KEY_ENV,
        **extra,
    )


def reply_for(protocol: str, body: str = LLM_TEXT, **kwargs: Any) -> Reply:
    if protocol == "openai":
        return openai_reply(body, model="cheap-model-2026", **kwargs)
    return anthropic_reply(body, model="cheap-model-2026", **kwargs)


def prompt_of(protocol: str, body: dict[str, Any]) -> tuple[str, str]:
    """(system, user) prompts of a recorded request."""
    if protocol == "openai":
        system, user = body["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        return system["content"], user["content"]
    [user] = body["messages"]
    return body["system"], user["content"]


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def summarize(repo: Path, *args: str, check: bool = True) -> Any:
    done = cli("summarize", "--json", *args, SESSION, cwd=repo, check=check)
    return json.loads(done.stdout) if done.returncode == 0 else done


# --------------------------------------------------------------------------------------
# The request and the entry, for each protocol
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_llm_request_and_compaction_entry(
    repo: Path, grown: tuple[Path, Growing], protocol: str
) -> None:
    path, _ = grown
    before = path.read_bytes()
    leaf = entries(path)[-1]["id"]
    with FakeLLMServer(reply_for(protocol)) as server:
        llm_config(repo, protocol, server)
        report = summarize(repo, "--keep-turns", "2")
    [request] = server.requests
    body = request.json()
    # The request: provider route, model, low temperature, bounded output.
    assert request.path == ("/v1/chat/completions" if protocol == "openai" else "/v1/messages")
    if protocol == "openai":
        assert request.headers["authorization"] == f"Bearer {KEY}"
    else:
        assert request.headers["x-api-key"] == KEY
    assert body["model"] == "cheap-model"
    assert body["max_tokens"] == 1500
    assert 0 <= body["temperature"] <= 0.3
    system, user = prompt_of(protocol, body)
    assert "Do not continue the conversation" in system
    for section in SECTIONS:
        assert f"## {section}" in user
    assert f"<original-task>\n{TASK}\n</original-task>" in user
    assert "<previous-summary" not in user
    # Tool results are trimmed: head and tail stay, the middle goes.
    for n in (1, 2):
        assert f"HEAD-{n}" in user and f"TAIL-{n}" in user
        assert f"MIDDLE-{n}" not in user
    assert "characters trimmed" in user
    # Only this round's messages are in the conversation: the kept turns are not.
    conversation = user.split("<conversation>\n", 1)[1].split("</conversation>")[0]
    assert "Request 2" in conversation and "Request 3" not in conversation
    # The file: every old byte in place, one compaction line appended.
    after = path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    entry = entries(path)[-1]
    kept = [e for e in entries(path) if e.get("message", {}).get("role") == "user"][-2]
    assert entry["type"] == "compaction"
    assert re.fullmatch(r"[0-9a-f]{8}", entry["id"])
    assert entry["id"] not in {e.get("id") for e in entries(path)[:-1]}
    assert entry["parentId"] == leaf
    assert entry["firstKeptEntryId"] == kept["id"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["timestamp"])
    assert isinstance(entry["tokensBefore"], int) and entry["tokensBefore"] > 0
    assert entry["details"]["modifiedFiles"] == ["src/module1.rs", "src/module2.rs"]
    assert entry["details"]["readFiles"] == ["src/module1.py", "src/module2.py"]
    assert entry["details"]["gitclawSummary"] == {
        "round": 1,
        "model": "cheap-model-2026",
        "mode": "llm",
        "provider": protocol,
        "entriesSummarized": 12,
    }
    summary = entry["summary"]
    assert summary.startswith(
        f"Continuation summary, round 1 (written by cheap-model-2026 via {protocol}"
    )
    assert LLM_TEXT in summary
    assert TASK in summary and "src/module2.rs" in summary  # the facts, whatever the LLM says
    # The stats.
    assert report["status"] == "summarized"
    assert report["round"] == 1 and report["entries_summarized"] == 12
    assert report["provider"] == protocol and report["model"] == "cheap-model-2026"
    assert report["mode"] == "llm" and report["attempts"] == 1
    assert report["tokens_before"] == entry["tokensBefore"]
    assert 0 < report["tokens_after"] < report["tokens_before_estimated"]
    assert report["compaction_id"] == entry["id"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_second_round_prompt_holds_the_first_summary_and_numbers_the_round(
    repo: Path, grown: tuple[Path, Growing], protocol: str
) -> None:
    path, session = grown
    first_text = LLM_TEXT.replace("LLM-SECTION", "ROUND1")
    second_text = LLM_TEXT.replace("LLM-SECTION", "ROUND2")
    with FakeLLMServer(reply_for(protocol, first_text), reply_for(protocol, second_text)) as server:
        llm_config(repo, protocol, server)
        first = summarize(repo, "--keep-turns", "1")
        session.append_after(path, first["compaction_id"], range(5, 8))
        second = summarize(repo, "--keep-turns", "1")
    assert (first["round"], second["round"]) == (1, 2)
    _, user = prompt_of(protocol, server.requests[1].json())
    previous = user.split('<previous-summary round="1">\n', 1)[1].split("</previous-summary>")[0]
    assert previous.strip() == first_text  # without the header and the facts
    assert "This is round 2" in user
    conversation = user.split("<conversation>\n", 1)[1].split("</conversation>")[0]
    # Round two covers the turn round one kept, and the new ones up to the last kept turn.
    assert "Request 4" in conversation and "Request 6" in conversation
    assert "Request 3" not in conversation and "Request 7" not in conversation
    entry = entries(path)[-1]
    assert entry["summary"].startswith("Continuation summary, round 2")
    assert second_text in entry["summary"] and first_text not in entry["summary"]
    # One summary carrying the facts of both rounds.
    assert TASK in entry["summary"]
    for n in (1, 3, 4, 6):
        assert f"src/module{n}.rs" in entry["summary"]
    assert entry["details"]["modifiedFiles"] == [f"src/module{n}.rs" for n in range(1, 7)]


# --------------------------------------------------------------------------------------
# Failures leave the file exactly as it was
# --------------------------------------------------------------------------------------


FAILURES = {
    "500": (error_reply(500, "upstream exploded"), "HTTP 500 (upstream exploded)"),
    "bad-json": (Reply(200, b"{not json", {"Content-Type": "application/json"}), "invalid JSON"),
    "429-exhausted": (
        error_reply(429, "slow down", {"Retry-After": "0"}),
        "HTTP 429 (slow down) after 2 attempts",
    ),
    "no-text": (json_reply({"unexpected": True}), "unexpected reply"),
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_llm_failure_leaves_the_file_byte_identical(
    repo: Path, grown: tuple[Path, Growing], protocol: str, failure: str
) -> None:
    path, _ = grown
    digest = sha(path)
    reply, expected = FAILURES[failure]
    with FakeLLMServer(default=reply) as server:
        llm_config(repo, protocol, server, max_retries=1 if failure.startswith("429") else 0)
        done = summarize(repo, "--keep-turns", "1", check=False)
    assert done.returncode == 3
    err = done.stderr.decode()
    assert err.count("\n") == 1
    assert f"{protocol} request to {server.host} failed" in err and expected in err
    assert "the file is unchanged" in err and "--offline" in err
    assert sha(path) == digest
    assert not list(path.parent.glob(".gitclaw-compress-tmp-*"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_429_then_success(repo: Path, grown: tuple[Path, Growing], protocol: str) -> None:
    path, _ = grown
    with FakeLLMServer(
        error_reply(429, "slow down", {"Retry-After": "0"}), reply_for(protocol)
    ) as server:
        llm_config(repo, protocol, server, max_retries=2)
        report = summarize(repo, "--keep-turns", "1")
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert report["attempts"] == 2 and report["status"] == "summarized"
    assert LLM_TEXT in entries(path)[-1]["summary"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_leaves_the_file_byte_identical(
    repo: Path, grown: tuple[Path, Growing], protocol: str
) -> None:
    path, _ = grown
    digest = sha(path)

    def quick(settings: ProviderSettings) -> LLMClient:
        return make_client(replace(settings, timeout_s=0.1), sleep=lambda _: None)

    with FakeLLMServer(hold_reply(), hold_reply()) as server:
        llm_config(repo, protocol, server, max_retries=1)
        config = load_config(path, repo)
        with pytest.raises(GitClawError, match=r"no response within 0\.1s after 2 attempts"):
            summarize_file(
                Repository(repo), path, config, keep=KeepPolicy(turns=1), client_factory=quick
            )
    assert len(server.requests) == 2
    assert sha(path) == digest
    assert not list(path.parent.glob(".gitclaw-compress-tmp-*"))


def test_truncated_summary_is_written_with_a_warning(
    repo: Path, grown: tuple[Path, Growing]
) -> None:
    path, _ = grown
    with FakeLLMServer(
        reply_for("openai", "## What was accomplished\nhalf", finish_reason="length")
    ) as server:
        llm_config(repo, "openai", server)
        done = cli("summarize", "--keep-turns", "1", SESSION, cwd=repo)
    assert b"stopped at summary.max_tokens" in done.stderr
    assert TASK in entries(path)[-1]["summary"]


def test_missing_key_is_one_line_and_changes_nothing(
    repo: Path, grown: tuple[Path, Growing], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = grown
    digest = sha(path)
    monkeypatch.delenv(KEY_ENV)
    configure(repo, provider="anthropic", model="m", api_key_env=KEY_ENV)
    done = summarize(repo, "--keep-turns", "1", check=False)
    assert done.returncode == 3
    assert f"set the env var {KEY_ENV}" in done.stderr.decode()
    assert sha(path) == digest


def test_a_held_lock_refuses_and_changes_nothing(repo: Path, grown: tuple[Path, Growing]) -> None:
    path, _ = grown
    digest = sha(path)
    with Repository(repo).lock(SESSION, SESSION):
        done = summarize(repo, check=False)
    assert done.returncode == 3 and b"locked by another gitclaw-compress run" in done.stderr
    assert sha(path) == digest


# --------------------------------------------------------------------------------------
# Offline mode
# --------------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield attempts


def test_offline_works_with_no_network_and_no_key(
    repo: Path,
    grown: tuple[Path, Growing],
    no_network: list[object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, _ = grown
    monkeypatch.delenv(KEY_ENV)
    # An LLM is configured, but --offline (offline=True) never touches it.
    configure(repo, provider="anthropic", model="m", api_key_env=KEY_ENV)
    config = load_config(path, repo)
    report = summarize_file(Repository(repo), path, config, keep=KeepPolicy(turns=1), offline=True)
    assert no_network == []
    assert report.mode == "extractive" and report.provider == "none"
    summary = entries(path)[-1]["summary"]
    assert "EXTRACTIVE" in summary and "without an LLM" in summary
    assert TASK in summary


def test_no_provider_means_extractive(repo: Path, grown: tuple[Path, Growing]) -> None:
    path, _ = grown
    report = summarize(repo, "--keep-tokens", "3000")
    assert report["mode"] == "extractive" and report["provider"] == "none"
    assert report["model"] is None and report["attempts"] == 0
    entry = entries(path)[-1]
    assert entry["details"]["gitclawSummary"]["mode"] == "extractive"
    assert report["tokens_after"] < report["tokens_before_estimated"]


def test_offline_flag_sends_nothing_to_a_configured_server(
    repo: Path, grown: tuple[Path, Growing]
) -> None:
    with FakeLLMServer(reply_for("openai")) as server:
        llm_config(repo, "openai", server)
        report = summarize(repo, "--offline", "--keep-turns", "1")
    assert server.requests == []
    assert report["mode"] == "extractive"


def test_offline_chaining_carries_the_facts_of_both_rounds(
    repo: Path, grown: tuple[Path, Growing]
) -> None:
    path, session = grown
    first = summarize(repo, "--keep-turns", "1")
    session.append_after(path, first["compaction_id"], range(5, 8))
    second = summarize(repo, "--keep-turns", "1")
    assert (first["round"], second["round"]) == (1, 2)
    compactions = [e for e in entries(path) if e["type"] == "compaction"]
    assert len(compactions) == 2
    summary = compactions[-1]["summary"]
    assert summary.startswith("Continuation summary, round 2 (extractive")
    assert summary.count("EXTRACTIVE") == 1 and summary.count("<original-task>") == 1
    assert TASK in summary  # from round one's range
    for n in range(1, 7):  # files of round one's range (1-3) and round two's (4-6)
        assert f"src/module{n}.rs" in summary
    assert "Request 6: handle module6" in summary
    assert "Request 7" not in summary  # the kept turn
    assert compactions[-1]["firstKeptEntryId"] != compactions[0]["firstKeptEntryId"]


def test_nothing_to_summarize_changes_nothing(repo: Path, grown: tuple[Path, Growing]) -> None:
    path, _ = grown
    digest = sha(path)
    report = summarize(repo, "--keep-turns", "4")
    assert report["status"] == "nothing-to-summarize"
    assert "4 turns in the session" in report["reason"]
    assert sha(path) == digest
    human = cli("summarize", "--keep-turns", "9", SESSION, cwd=repo).stdout.decode()
    assert human.startswith("nothing to summarize in")


def test_keep_options_exclude_each_other(repo: Path, grown: tuple[Path, Growing]) -> None:
    done = cli(
        "summarize", "--keep-turns", "1", "--keep-tokens", "5", SESSION, cwd=repo, check=False
    )
    assert done.returncode == 2 and b"not both" in done.stderr


def test_config_errors_name_the_key(repo: Path, grown: tuple[Path, Growing]) -> None:
    configure(repo, provider="gpt")
    done = summarize(repo, check=False)
    assert done.returncode == 3
    assert b"summary.provider must be one of none, openai, anthropic" in done.stderr
    configure(repo, whenLevel="always")
    done = summarize(repo, check=False)
    assert b"summary.whenLevel must be one of warning, critical" in done.stderr


# --------------------------------------------------------------------------------------
# Restore after compress and summarize
# --------------------------------------------------------------------------------------


def test_restore_gives_back_every_original_entry_after_compress_and_summarize(
    repo: Path, grown: tuple[Path, Growing]
) -> None:
    path, _ = grown
    original = path.read_bytes()
    cli("compress", "--force", "--keep-turns", "3", SESSION, cwd=repo)
    compressed = path.read_bytes()
    assert len(compressed) < len(original)
    assert summarize(repo, "--keep-turns", "1")["status"] == "summarized"
    compaction_line = path.read_bytes()[len(compressed) :]
    assert compaction_line.count(b"\n") == 1 and b'"type":"compaction"' in compaction_line
    git(repo, "gc", "-q", "--prune=now")
    cli("restore", SESSION, "-o", "restored.jsonl", cwd=repo)
    assert (repo / "restored.jsonl").read_bytes() == original + compaction_line
    cli("verify", SESSION, cwd=repo)


def test_a_file_without_a_final_newline_gets_one_before_the_entry(
    repo: Path, grown: tuple[Path, Growing]
) -> None:
    path, _ = grown
    data = path.read_bytes().rstrip(b"\n")
    path.write_bytes(data)
    summarize(repo, "--keep-turns", "1")
    after = path.read_bytes()
    assert after.startswith(data + b"\n")
    assert json.loads(after[len(data) + 1 :])["type"] == "compaction"


def short_first_turn(repo: Path, reply_chars: int) -> Path:
    path = repo / SESSION
    path.parent.mkdir(parents=True, exist_ok=True)
    s = SessionBuilder(model="fake-model")
    s.user("hi")
    s.assistant(text("h" * reply_chars), stop="stop")
    s.user("now the real work")
    s.assistant(text("done " * 500), stop="stop")
    path.write_bytes(s.data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def test_a_summary_that_would_not_shrink_the_context_is_not_written(repo: Path) -> None:
    path = short_first_turn(repo, 5)
    digest = sha(path)
    # Even the facts are larger than the turn they would replace: no LLM call is made.
    with FakeLLMServer(reply_for("openai")) as server:
        llm_config(repo, "openai", server)
        report = summarize(repo, "--keep-turns", "1")
    assert report["status"] == "nothing-to-summarize" and server.requests == []
    assert "fewer than the facts of a summary" in report["reason"]
    assert sha(path) == digest
    # A long LLM reply is caught after the call: still nothing is written.
    path = short_first_turn(repo, 2000)
    digest = sha(path)
    with FakeLLMServer(default=reply_for("openai", "word " * 4000)) as server:
        llm_config(repo, "openai", server, max_tokens=9000)
        report = summarize(repo, "--keep-turns", "1")
        human = cli("summarize", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    assert report["status"] == "not-smaller" and "nothing was written" in report["reason"]
    assert human.startswith(f"not summarized {SESSION}: the summary (~")
    assert len(server.requests) == 2
    assert sha(path) == digest


def compacted_before(repo: Path, last_reply_chars: int) -> Path:
    """A session compacted once, then three more turns: the last one's reply as long as asked."""
    path = repo / SESSION
    path.parent.mkdir(parents=True, exist_ok=True)
    s = SessionBuilder(model="fake-model")
    s.user("the first task")
    s.assistant(text("first " * 2000), stop="stop")
    kept = s.user("the second task")
    s.assistant(text("second " * 1000), stop="stop")
    s.entry("compaction", summary="Round one: the first task was done.", firstKeptEntryId=kept)
    s.user("the third task")
    s.assistant(text("third " * 2000), stop="stop")
    s.user("the last task")
    s.assistant(text("x" * last_reply_chars), stop="stop")
    path.write_bytes(s.data())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def test_after_a_compaction_a_round_that_would_leave_over_40_percent_is_not_written(
    repo: Path,
) -> None:
    # The newest turn holds most of what the agent sends since the last summary: no summary
    # can bring that under 40%, so no LLM call is made and the line says why.
    path = compacted_before(repo, 60_000)
    digest = sha(path)
    with FakeLLMServer(reply_for("openai")) as server:
        llm_config(repo, "openai", server)
        report = summarize(repo, "--keep-turns", "1")
        human = cli("summarize", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    assert report["status"] == "not-smaller" and server.requests == []
    assert "the kept part (the last 1 turn) holds 7" in report["reason"]
    assert human.startswith(f"not summarized {SESSION}: the kept part") and human.count("\n") == 1
    assert sha(path) == digest
    # A small last turn: the round is written, a second one.
    compacted_before(repo, 400)
    report = summarize(repo, "--keep-turns", "1", "--offline")
    assert report["status"] == "summarized" and report["round"] == 2


def test_a_file_that_grows_during_the_llm_call_is_left_to_its_writer(
    repo: Path, grown: tuple[Path, Growing]
) -> None:
    path, _ = grown
    late = b'{"type":"label","id":"feedface","parentId":null,"timestamp":"T","label":"x"}\n'

    class AppendingClient:
        """Answers like an LLM, but pi appends to the file while it "thinks"."""

        def complete(self, request: Any) -> Any:
            with open(path, "ab") as handle:
                handle.write(late)
            return make_client(
                ProviderSettings(provider="openai", base_url=server.url + "/v1", model="m")
            ).complete(request)

    before = path.read_bytes()
    with FakeLLMServer(reply_for("openai")) as server:
        llm_config(repo, "openai", server)
        config = load_config(path, repo)
        with pytest.raises(GitClawError, match="changed while it was being summarized"):
            summarize_file(
                Repository(repo),
                path,
                config,
                keep=KeepPolicy(turns=1),
                client_factory=lambda _: AppendingClient(),
            )
    assert path.read_bytes() == before + late
    assert not list(path.parent.glob(".gitclaw-compress-tmp-*"))
