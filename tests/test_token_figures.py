"""One token figure per fact: on the corpus, `status` and `context` give the same figure
for the same file, from the same source, each with its label and the estimate beside it;
`summarize` says the figure the `status` that follows gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPUS, cli, commit_session

FILES = sorted(CORPUS.glob("*/*.jsonl")) if CORPUS.is_dir() else []
needs_files = pytest.mark.skipif(not FILES, reason=f"shared corpus not found at {CORPUS}")


def one_per_format() -> list[Path]:
    """The smallest file of each folder (format) that has something to summarize."""
    seen: dict[str, Path] = {}
    for path in FILES:
        kind, size = path.parent.name, path.stat().st_size
        if size >= 200_000 and (kind not in seen or size < seen[kind].stat().st_size):
            seen[kind] = path
    return list(seen.values())


def placed(repo: Path, source: Path) -> str:
    rel = f"sessions/{source.parent.name}/{source.name}"
    commit_session(repo, rel, source.read_bytes())
    return rel


@needs_files
@pytest.mark.parametrize("source", FILES, ids=[f"{p.parent.name}-{p.name}" for p in FILES])
def test_status_and_context_give_one_figure_with_its_source(repo: Path, source: Path) -> None:
    rel = placed(repo, source)
    status = json.loads(cli("status", "--json", rel, cwd=repo).stdout)
    totals = json.loads(cli("context", "--json", rel, cwd=repo).stdout)["totals"]
    assert (totals["context_tokens"], totals["context_source"]) == (
        status["context_tokens"],
        status["source"],
    )
    assert totals["estimated_tokens"] == status["estimated_tokens"]
    said = cli("status", rel, cwd=repo).stdout.decode().splitlines()[1]
    shown = cli("context", rel, cwd=repo).stdout.decode().splitlines()
    totals_line = next(line for line in shown if line.startswith("totals: "))
    label = said.split(" usable (", 1)[1].rsplit(")", 1)[0]
    assert f"context {status['context_tokens']:,} tokens ({label})" in totals_line
    if status["source"] != "estimate" and status["estimated_tokens"] != status["context_tokens"]:
        assert f"estimated with {status['estimator']}: {status['estimated_tokens']:,}" in label


@needs_files
@pytest.mark.parametrize("source", one_per_format(), ids=lambda p: p.parent.name)
def test_summarize_says_the_figure_status_then_gives(repo: Path, source: Path) -> None:
    rel = placed(repo, source)
    keep = "0" if source.parent.name == "copilot" else "1"  # Copilot CLI keeps no turn
    done = cli("summarize", "--offline", "--keep-turns", keep, "--json", rel, cwd=repo, check=False)
    report = json.loads(done.stdout)
    if report.get("status") != "summarized":
        pytest.skip(f"{source.name}: {report.get('reason') or report}")
    status = json.loads(cli("status", "--json", rel, cwd=repo).stdout)
    after = status["context_tokens"]
    assert abs(report["tokens_after"] - after) <= 0.05 * after, (report["tokens_after"], after)
    said = cli("status", rel, cwd=repo).stdout.decode().splitlines()[1]
    assert report["tokens_after_label"].split(";")[0] in said


GAME = CORPUS / "pi" / "game__1a9ce069.jsonl"


@pytest.mark.skipif(not GAME.is_file(), reason=f"no {GAME.name} in the shared corpus")
def test_the_status_example_of_tokens_md_is_what_status_prints(repo: Path) -> None:
    rel = ".GITCLAW/state/sessions/game__1a9ce069.jsonl"
    commit_session(repo, rel, GAME.read_bytes())
    doc = (Path(__file__).resolve().parent.parent / "docs" / "tokens.md").read_text()
    command = f"$ gitclaw-compress status {rel}\n"
    example = doc[doc.index(command) + len(command) :].split("```", 1)[0]
    assert cli("status", rel, cwd=repo).stdout.decode() == example
