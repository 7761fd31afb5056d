"""Every benchmark reads the corpus where the tests do: `GITCLAW_TEST_CORPUS` when set, else
../shared/corpus (bench/shared_corpus.py, as tests/conftest.py's CORPUS). The figure tests run
the benchmarks with the environment they were given, so a corpus elsewhere is measured there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, CORPUS_ENV, REPO_ROOT
from synthetic import typical_session
from synthetic_claude import typical_session as claude_session

BENCH = REPO_ROOT / "bench"


def test_no_benchmark_finds_the_corpus_by_itself() -> None:
    # A path to shared/ built anywhere but in bench/shared_corpus.py ignores the variable.
    own = [
        path.name
        for path in sorted(BENCH.glob("*.py"))
        if path.name != "shared_corpus.py"
        and re.search(
            r"""/ "shared"|"shared" /|\.\./shared""", path.read_text().split('"""', 2)[-1]
        )
    ]
    assert own == []
    readers = [p for p in sorted(BENCH.glob("*.py")) if re.search(r"\bCORPUS\b", p.read_text())]
    assert len(readers) >= 10
    for path in readers:
        text = path.read_text()
        if path.name != "shared_corpus.py":
            assert "from shared_corpus import CORPUS" in text, path.name
            assert not re.search(r"^CORPUS = ", text, re.M), path.name


def test_the_benchmarks_and_the_tests_name_one_folder(tmp_path: Path) -> None:
    probe = "import shared_corpus; print(shared_corpus.CORPUS)"
    for value in (str(tmp_path), ""):
        env = {"PATH": "/usr/bin:/bin", CORPUS_ENV: value}
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=BENCH, env=env, capture_output=True, text=True
        )
        expected = tmp_path if value else REPO_ROOT.parent / "shared" / "corpus"
        assert Path(done.stdout.strip()) == expected, done.stderr
    assert Path(os.environ.get(CORPUS_ENV) or expected) == CORPUS


@pytest.fixture
def small_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A corpus of two synthetic sessions, named by the variable (the shared one may be there
    too: the benchmarks must not read it)."""
    corpus = tmp_path / "corpus"
    (corpus / "pi").mkdir(parents=True)
    (corpus / "pi" / "synthetic-pi.jsonl").write_bytes(typical_session(4).data())
    (corpus / "claude").mkdir()
    (corpus / "claude" / "synthetic-claude.jsonl").write_bytes(claude_session(4).data())
    monkeypatch.setenv(CORPUS_ENV, str(corpus))
    return corpus


def bench_json(script: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    return document


def test_ideal_measures_the_corpus_the_variable_names(small_corpus: Path) -> None:
    files = bench_json("ideal.py")["files"]
    assert isinstance(files, dict)
    assert sorted(files) == ["claude/synthetic-claude.jsonl", "pi/synthetic-pi.jsonl"]


def test_layers_measures_the_corpus_the_variable_names(small_corpus: Path) -> None:
    # One format: it runs the commands themselves, four times a format.
    (small_corpus / "claude" / "synthetic-claude.jsonl").unlink()
    formats = bench_json("layers.py")["formats"]
    assert isinstance(formats, dict)
    assert sorted(formats) == ["pi"]
    assert [row["file"] for row in formats["pi"]] == ["synthetic-pi"]
