"""`status`: context tokens and their source, usable tokens, the level, and the savings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS_SESSIONS, cli, commit_session, corpus_files, git, needs_corpus
from format_cases import FORMAT_CASES, FormatCase
from synthetic import SessionBuilder, big_text, text, tool_call, typical_session

SESSION = ".GITCLAW/state/sessions/s.jsonl"


@pytest.fixture
def session(repo: Path) -> Path:
    return commit_session(repo, SESSION, typical_session(turns=6).data())


def status(repo: Path, *args: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(cli("status", "--json", *args, SESSION, cwd=repo).stdout)
    return report


def test_status_reports_recorded_usage_and_the_models_usable_tokens(
    repo: Path, session: Path
) -> None:
    report = status(repo)
    # typical_session's last reply recorded totalTokens 18237, and nothing follows it.
    assert report["context_tokens"] == 18_237
    assert (report["source"], report["trailing_tokens"]) == ("usage", 0)
    assert report["usage_entry"] is not None and report["usage_tokens"] == 18_237
    assert report["model"] == "claude-opus-4-6"
    assert report["limits_source"] == "builtin:claude-opus-4.6+"
    assert report["usable_tokens"] == 1_000_000 - 32_000 - 16_384
    assert report["level"] == "ok" and report["percent"] == 1.9
    assert report["estimated_tokens"] > 0 and report["messages"] == 6 * 10
    assert set(report["savings"]) == {"compress", "deep", "prune", "target"}
    # Deep (UI copies in every turn too) saves more than the default, and says how.
    compress, deep = report["savings"]["compress"], report["savings"]["deep"]
    assert deep["bytes_after"] < compress["bytes_after"]
    assert deep["command"] == f"gitclaw-compress compress --deep {SESSION}"
    human = cli("status", SESSION, cwd=repo).stdout.decode()
    assert human.startswith(f"{SESSION}: ok") and "recorded usage of entry" in human
    assert "  deep     would free " in human


@pytest.mark.parametrize(
    ("window", "percents", "level"),
    [
        (31_000, {}, "ok"),  # 18,237 of 30,000 usable: 60.8%
        (25_000, {}, "warning"),  # of 24,000: 76.0%
        (21_000, {}, "critical"),  # of 20,000: 91.2%
        (31_000, {"warningPercent": 60}, "warning"),
        (31_000, {"warningPercent": 50, "criticalPercent": 60}, "critical"),
        (25_000, {"warningPercent": 80, "criticalPercent": 95}, "ok"),
    ],
)
def test_levels_follow_the_model_overrides_and_the_configured_percentages(
    repo: Path, session: Path, window: int, percents: dict[str, int], level: str
) -> None:
    config = {
        "tokens": {"reserve": 0, **percents},
        "models": {"overrides": {"claude-opus-4-6": {"context_window": window, "maxTokens": 1000}}},
    }
    (repo / ".GITCLAW" / "compression.json").write_text(json.dumps(config))
    report = status(repo)
    assert report["limits_source"] == "override"
    assert report["usable_tokens"] == window - 1000
    assert report["level"] == level


def test_savings_are_what_compress_and_prune_then_do(repo: Path, session: Path) -> None:
    report = status(repo, "--keep-turns", "1")
    compress = report["savings"]["compress"]
    assert compress["command"] == f"gitclaw-compress compress --keep-turns 1 {SESSION}"
    assert compress["lines"] > 0 and compress["tokens_saved"] > 0
    assert compress["bytes_before"] == session.stat().st_size
    # It compresses messages before the reply whose usage counts now: `status` then takes
    # what compression frees off that usage, and "context then" is that figure.
    assert compress["context_tokens_after"] == report["context_tokens"] - compress["tokens_saved"]
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    assert session.stat().st_size == compress["bytes_after"]
    after = status(repo, "--keep-turns", "1")
    assert after["savings"]["compress"]["lines"] == 0
    # Messages before the last recorded usage are compressed now: the usage, less them.
    assert after["source"] == "usage+estimate" and after["note"] is None
    assert after["compressed_tokens"] == compress["tokens_saved"]
    assert after["context_tokens"] == compress["context_tokens_after"]
    # Once pi has replied to the compressed file, its recorded usage counts again.
    git(repo, "commit", "-qam", "compressed")
    lines = session.read_bytes().split(b"\n")
    reply = json.loads(lines[-2])
    reply.update(id="feedf00d", parentId=reply["id"])
    reply["message"]["usage"]["totalTokens"] = 12_345
    with open(session, "ab") as handle:
        handle.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
    again = status(repo, "--keep-turns", "1")
    assert (again["source"], again["context_tokens"]) == ("usage", 12_345)


def test_no_recorded_usage_means_an_estimate_with_the_configured_estimator(repo: Path) -> None:
    builder = SessionBuilder(model="some-unknown-model")
    builder.user("x" * 4000)
    builder.assistant(text("y" * 400), stop="stop", total_tokens=0)
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    path.write_bytes(builder.data())
    report = status(repo)
    assert (report["source"], report["estimator"], report["context_tokens"]) == (
        "estimate",
        "chars4",
        1100,
    )
    assert report["limits_source"] == "fallback" and report["usable_tokens"] == 95_232
    (repo / "compression.json").write_text('{"tokens": {"estimator": "bytes4"}}')
    assert status(repo)["estimator"] == "bytes4"


def test_status_works_outside_a_repository(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(typical_session().data())
    report = json.loads(cli("status", "--json", str(path), cwd=tmp_path).stdout)
    assert report["level"] == "ok" and report["path"] == str(path)


def test_a_bad_override_is_a_one_line_error_naming_the_key(repo: Path, session: Path) -> None:
    (repo / "compression.json").write_text(
        '{"models": {"overrides": {"gpt-5.4": {"context_window": -1}}}}'
    )
    out = cli("status", SESSION, cwd=repo, check=False)
    assert out.returncode == 3 and out.stderr.count(b"\n") == 1
    assert b"models.overrides['gpt-5.4']" in out.stderr and b"context_window" in out.stderr


@needs_corpus
def test_status_on_every_corpus_file(corpus_repo: Path) -> None:
    """Every corpus session is measured from recorded usage. The Codex rollout records its
    window (258,400) and its last reply 180,311 tokens: a warning against its usable
    210,016 (against the 400,000 of gpt-5's default it looked far from full); the others
    record none, and are far from full against their model's default."""
    for source in corpus_files():
        path = f"{CORPUS_SESSIONS}/{source.name}"
        report = json.loads(cli("status", "--json", path, cwd=corpus_repo).stdout)
        assert report["source"] in ("usage", "usage+estimate"), source.name
        if source.name.startswith("rollout"):
            assert (report["context_window"], report["limits_source"]) == (258_400, "recorded")
            assert (report["context_tokens"], report["level"]) == (180_311, "warning")
            continue
        assert report["level"] == "ok", source.name
        assert 0 < report["context_tokens"] < report["usable_tokens"] * 0.4, source.name
        assert report["limits_source"].startswith("builtin:"), source.name


def test_prune_saving_is_what_prune_then_does(repo: Path, session: Path) -> None:
    (repo / "compression.json").write_text(
        '{"prune": {"protectTokens": 2000, "minimumTokens": 500}}'
    )
    prune = status(repo)["savings"]["prune"]
    assert prune["lines"] > 0 and prune["tokens_saved"] >= 500
    assert "pruned, " in prune["decision"]
    report = json.loads(cli("prune", "--json", SESSION, cwd=repo).stdout)["files"][0]
    assert session.stat().st_size == prune["bytes_after"] == report["bytes_after"]
    assert report["budget"]["freed_tokens"] == prune["tokens_saved"]
    assert status(repo)["savings"]["prune"]["lines"] == 0


@pytest.mark.parametrize("kind", ["pi", "claude"])
def test_context_then_is_the_figure_status_gives_after_the_run_with_its_source(
    repo: Path, kind: str
) -> None:
    """ "context then" is one figure from one source, the one `status` gives after the run:
    the recorded usage less what the run frees (estimated), also where it compresses
    messages before the reply that recorded it. Before, `status` then dropped the usage for
    the estimate: a level that moved for a reason that was not compression (a real Claude
    Code session went from 159,111 tokens, critical, to 78,126, warning, after a compress that
    freed 1,680)."""
    from synthetic_claude import typical_session as claude_session

    path = (
        SESSION if kind == "pi" else ".claude/projects/p/1b2c3d4e-0000-4000-8000-000000000001.jsonl"
    )
    data = typical_session(turns=6).data() if kind == "pi" else claude_session(6).data()
    commit_session(repo, path, data)
    report = json.loads(cli("status", "--json", "--keep-turns", "1", path, cwd=repo).stdout)
    assert report["source"] == "usage"
    compress = report["savings"]["compress"]
    # The Claude Code session records 15 tokens, fewer than compress frees: a usage that
    # cannot have counted them, so the figure then is the estimate less what it frees.
    kept = compress["tokens_saved"] < report["usage_tokens"]
    assert kept == (kind == "pi")
    base = report["context_tokens"] if kept else report["estimated_tokens"]
    predicted = max(0, base - compress["tokens_saved"])
    assert compress["context_tokens_after"] == predicted
    source = "recorded usage less what compression freed" if kept else "estimated with chars4"
    assert compress["context_source_after"] == source
    human = cli("status", "--keep-turns", "1", path, cwd=repo).stdout.decode()
    assert f"context then {predicted:,}, {source})" in human
    cli("compress", "--force", "--keep-turns", "1", path, cwd=repo)
    after = json.loads(cli("status", "--json", "--keep-turns", "1", path, cwd=repo).stdout)
    expected = (predicted, "usage+estimate" if kept else "estimate")
    assert (after["context_tokens"], after["source"]) == expected
    assert after["usage_tokens"] == report["usage_tokens"]
    said = cli("status", path, cwd=repo).stdout.decode()
    if kept:
        assert f"less {compress['tokens_saved']:,} estimated with chars4 that compression" in said
    else:
        assert "is more than it counted" in said


def test_compress_moves_the_level_by_what_it_frees_only(repo: Path) -> None:
    """Recorded usage far over the estimate (the provider counts what the file does not hold)
    and a compress that frees little: the figure moves by what it frees and the level stays
    critical. Before, the usage was dropped for the estimate after the compress, and the
    level fell to ok."""
    builder = SessionBuilder(model="tiny-model")
    for turn in range(5):
        builder.user(f"task {turn}")
        builder.assistant(tool_call(f"c{turn}", "bash", {"command": "ls"}), total_tokens=0)
        builder.tool_result(f"c{turn}", "bash", big_text(f"out{turn}", 60))
        builder.assistant(text(f"done {turn}"), stop="stop", total_tokens=0)
    builder.user("last")
    builder.assistant(text("done"), stop="stop", total_tokens=39_500)
    commit_session(repo, SESSION, builder.data())
    overrides = {"tiny-model": {"context_window": 42_000, "maxTokens": 1000}}
    (repo / "compression.json").write_text(
        json.dumps({"models": {"overrides": overrides}, "tokens": {"reserve": 1000}})
    )
    before = status(repo, "--keep-turns", "1")
    assert (before["context_tokens"], before["level"]) == (39_500, "critical")
    saved = before["savings"]["compress"]["tokens_saved"]
    assert saved > 0
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    after = status(repo, "--keep-turns", "1")
    assert after["estimated_tokens"] * 100 < 75 * after["usable_tokens"]  # the estimate: ok
    assert (after["context_tokens"], after["level"]) == (39_500 - saved, "critical")
    assert after["usage_tokens"] == 39_500 and after["note"] is None


def test_status_offers_no_command_that_a_secret_would_hold(repo: Path) -> None:
    """A session `compress` would hold for a secret: `status` names the secret's ids and
    what to run first (redact, or scan --accept), not `compress`; JSON: `held`. Before, it
    offered `compress`, which then held the session."""
    from secret_fixtures import planted

    line, secret = planted(3)["github"]
    data = typical_session(turns=6).data().replace(b'"text":"', f'"text":"{line} '.encode(), 1)
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    done = cli("status", "--keep-turns", "1", SESSION, cwd=repo)
    out = done.stdout.decode()
    assert f"gitclaw-compress compress --keep-turns 1 {SESSION}" not in out
    [held] = [row for row in out.splitlines() if row.startswith("  secret   ")]
    assert "would hold this session" in held and "redact" in held and "--accept" in held
    assert secret not in out + done.stderr.decode()
    report = status(repo, "--keep-turns", "1")
    assert report["held"] is not None and len(report["held"]["ids"]) == 1
    compressed = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo, check=False)
    assert compressed.returncode == 1 and path.read_bytes() == data  # as status said
    path.write_bytes(typical_session(turns=6).data())
    assert status(repo, "--keep-turns", "1")["held"] is None


@pytest.mark.parametrize("case", FORMAT_CASES, ids=lambda case: case.name)
@pytest.mark.parametrize(
    "prune",
    [{}, {"minimumTokens": 0}, {"protectTokens": 1000, "minimumTokens": 10**9}],
    ids=["under-the-budget", "under-the-budget-no-minimum", "under-the-minimum"],
)
def test_a_prune_that_would_prune_nothing_says_so_plainly(
    repo: Path, case: FormatCase, prune: dict[str, int]
) -> None:
    """Whatever the format and whatever keeps the outputs, nothing pruned reads one way:
    the verdict first, the same words in the text and in --json."""
    path = case.place("5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11")
    commit_session(repo, path, case.synthetic[0][1]())
    (repo / "compression.json").write_text(json.dumps({"prune": prune}))
    report = json.loads(cli("status", "--json", path, cwd=repo).stdout)
    saving = report["savings"]["prune"]
    assert saving["lines"] == 0 and saving["tokens_saved"] == 0
    assert saving["decision"].startswith("budget pruning: nothing to prune ("), saving
    assert "pruned" not in saving["decision"] and report["savings"]["compress"]["decision"] == ""
    human = cli("status", path, cwd=repo).stdout.decode().splitlines()
    row = next(index for index, line in enumerate(human) if line.startswith("  prune "))
    assert human[row].endswith("would change nothing"), human[row]  # no command that does nothing
    assert human[row + 1].strip() == saving["decision"]
    assert sum("pruning" in line for line in human) == 1


def test_summarize_names_the_context_status_gives_beside_its_estimate(
    repo: Path, session: Path
) -> None:
    """Where the kept tokens hold every message, `summarize` says so with the estimate it
    compared (its unit) and the context's size as `status` gives it, from the same source.
    Before, it gave only "the N estimated tokens in the session", where `status` gave the
    recorded usage: two figures for one fact."""
    report = status(repo)
    done = cli("summarize", "--offline", "--keep-tokens", "1000000", SESSION, cwd=repo)
    said = done.stdout.decode()
    assert said.startswith("nothing to summarize"), said
    assert "fit in the newest 1,000,000 estimated tokens" in said
    assert f"as `status` gives it: {report['context_tokens']:,} tokens, recorded usage" in said


def test_a_gain_under_the_minimum_leaves_the_file_and_status_says_so(repo: Path) -> None:
    """Compressing for a gain nobody would notice (a stub in a session of long messages)
    rewrites the agent's file and writes an archive commit for nothing: compress leaves it
    (session.minGainPercent 1, session.minGainBytes 1,024) and says why, status says the
    same, --force still compresses. Before, both compressed for 0.1%."""
    builder = SessionBuilder()
    for turn in range(6):
        builder.user(f"task {turn}: " + "words " * 6000)
        builder.assistant(tool_call(f"c{turn}", "bash", {"command": "ls"}))
        builder.tool_result(f"c{turn}", "bash", "x" * (900 if turn == 0 else 100))
        builder.assistant(text(f"done {turn}"), stop="stop")
    data = builder.data()
    path = commit_session(repo, SESSION, data)
    report = status(repo, "--keep-turns", "1")
    compress = report["savings"]["compress"]
    assert compress["lines"] == 0 and compress["tokens_saved"] == 0, compress
    assert "under session.minGainPercent 1% or session.minGainBytes 1,024" in compress["decision"]
    # stats' 'after' is what compress gives now: the file as it is, and why.
    stats = json.loads(cli("stats", "--json", "--keep-turns", "1", SESSION, cwd=repo).stdout)
    assert stats["bytes_after"] == stats["bytes_before"] == len(data), stats
    assert stats["compressed_lines"] == 0, stats
    assert stats["left_as_it_is"] == compress["decision"], stats
    shown = cli("stats", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    assert f"compress leaves it: {compress['decision']}" in shown, shown
    done = cli("compress", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    assert done.startswith(f"unchanged {SESSION}: compressing would gain only "), done
    assert path.read_bytes() == data
    forced = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo).stdout.decode()
    assert forced.startswith(f"compressed {SESSION}"), forced
    assert 0 < len(data) - path.stat().st_size < 1024
