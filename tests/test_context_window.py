"""The context window `status`, `context` and `prune --target` count against: the one the agent
recorded in the session (Codex's `model_context_window`, Copilot CLI's `tokenLimit`), the
newest for the model in use, else the documented default of the model's family; each figure
says which. Before, a Codex rollout that records 258,400 was measured against 400,000."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import cli
from synthetic import typical_session
from synthetic_claude import typical_session as claude_session
from synthetic_codex import typical_rollout
from synthetic_copilot import typical_events

RESERVES = 32_000 + 16_384  # the reply's share (max_output capped at 32,000) and tokens.reserve


def put(repo: Path, name: str, data: bytes) -> str:
    (repo / name).write_bytes(data)
    return name


def status(repo: Path, name: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(cli("status", "--json", name, cwd=repo).stdout)
    return report


def context(repo: Path, name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(cli("context", "--json", name, cwd=repo).stdout)
    return document


def test_a_codex_rollout_is_measured_against_the_window_it_records(repo: Path) -> None:
    rollout = typical_rollout()  # each task_started records model_context_window 258,400
    name = put(repo, "rollout.jsonl", rollout.data())
    report = status(repo, name)
    assert (report["context_window"], report["limits_source"]) == (258_400, "recorded")
    assert report["usable_tokens"] == 258_400 - RESERVES
    human = cli("status", name, cwd=repo).stdout.decode()
    assert "  model    gpt-5.1-codex-mini: window 258,400 (recorded by the agent), " in human
    document = context(repo, name)
    assert (document["context_window"], document["limits_source"]) == (258_400, "recorded")
    header = cli("context", name, cwd=repo).stdout.decode().splitlines()[0]
    assert header.endswith(", model gpt-5.1-codex-mini, window 258,400 (recorded by the agent)")
    # The newest record counts (a token_count of a later reply).
    rollout.event("token_count", info={"model_context_window": 120_000}, rate_limits=None)
    put(repo, name, rollout.data())
    assert status(repo, name)["context_window"] == 120_000
    assert context(repo, name)["context_window"] == 120_000
    # A configured override still wins over what the session records.
    overrides = {"gpt-5.1-codex-mini": {"context_window": 100_000, "max_output": 10_000}}
    (repo / "compression.json").write_text(json.dumps({"models": {"overrides": overrides}}))
    report = status(repo, name)
    assert (report["context_window"], report["limits_source"]) == (100_000, "override")
    assert "window 100,000 (models.overrides)" in cli("status", name, cwd=repo).stdout.decode()


def test_a_codex_rollout_that_records_no_window_takes_the_models_default(repo: Path) -> None:
    data = typical_rollout().data().replace(b',"model_context_window":258400', b"")
    name = put(repo, "rollout.jsonl", data)
    report = status(repo, name)
    assert (report["context_window"], report["limits_source"]) == (400_000, "builtin:gpt-5")
    assert "window 400,000 (default for gpt-5)" in cli("status", name, cwd=repo).stdout.decode()


def test_copilot_takes_the_token_limit_it_recorded_for_the_model_in_use(repo: Path) -> None:
    events = typical_events()  # claude-sonnet-4.6, no window recorded
    name = put(repo, "events.jsonl", events.data())
    assert status(repo, name)["limits_source"] == "builtin:claude-sonnet-4.6+"
    events.event("session.truncation", tokenLimit=168_000, preTruncationTokensInMessages=9_000)
    put(repo, name, events.data())
    report = status(repo, name)
    assert (report["context_window"], report["limits_source"]) == (168_000, "recorded")
    assert context(repo, name)["context_window"] == 168_000
    # Another model selected after it: that window was another model's.
    events.event("session.model_change", previousModel="claude-sonnet-4.6", newModel="gpt-5.4")
    put(repo, name, events.data())
    report = status(repo, name)
    assert (report["context_window"], report["limits_source"]) == (272_000, "builtin:gpt-5.4+")


def test_claude_code_and_pi_record_no_window_and_take_the_documented_default(
    repo: Path,
) -> None:
    for name, data in (
        ("claude.jsonl", claude_session().data()),
        ("pi.jsonl", typical_session().data()),
    ):
        put(repo, name, data)
        report = status(repo, name)
        assert report["limits_source"].startswith("builtin:claude-"), name
        family = report["limits_source"].removeprefix("builtin:")
        window = f"window {report['context_window']:,} (default for {family})"
        assert window in cli("status", name, cwd=repo).stdout.decode(), name
