"""The corpus figures of README's "status, context and prune on each format" table and of
docs/tokens.md's "Per format: estimate against recorded usage" table are what
`bench/layers.py --json` measures now. Skips without the shared corpus."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS, REPO_ROOT

LABELS = {"pi": "pi", "claude": "Claude Code", "codex": "Codex", "copilot": "Copilot CLI"}

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no shared corpus at {CORPUS}")


@pytest.fixture(scope="module")
def measured(rule_cache: Path) -> list[dict[str, Any]]:
    # The run's compiled secret rules (status scans): a module fixture comes before
    # hermetic_git sets them, and each format's fresh HOME would compile them again.
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "layers.py"), "--json"],
        env={**os.environ, "GITCLAW_COMPRESS_RULE_CACHE": str(rule_cache)},
        capture_output=True,
        check=True,
    )
    rows: list[dict[str, Any]] = [
        row for rows in orjson.loads(done.stdout)["formats"].values() for row in rows
    ]
    assert rows and not [row for row in rows if "error" in row]
    return rows


def table_rows(path: Path, heading: str) -> dict[tuple[str, str], list[str]]:
    """The rows of the first table after `heading` that starts `| format | file |`, by
    (format label, file), as cells."""
    text = path.read_text()
    after = text[text.index(heading) :]
    table = after[after.index("| format | file |") :]
    rows: dict[tuple[str, str], list[str]] = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[(cells[0], cells[1])] = cells
    return rows


def row_of(rows: dict[tuple[str, str], list[str]], one: dict[str, Any]) -> list[str]:
    """The table's row of a measured file: the file cell is a prefix of its name."""
    found = [
        cells
        for (label, name), cells in rows.items()
        if label == LABELS[one["format"]] and one["file"].startswith(name)
    ]
    assert len(found) == 1, (one["format"], one["file"])
    return found[0]


def savings(saving: dict[str, Any]) -> str:
    if not saving["tokens"] and not saving["bytes"]:
        return "0"
    return f"{saving['tokens']:,} tokens, {saving['bytes']:,} bytes"


def test_the_readme_table_is_what_bench_layers_measures(measured: list[dict[str, Any]]) -> None:
    rows = table_rows(REPO_ROOT / "README.md", "### status, context and prune on each format")
    for one in measured:
        cells = row_of(rows, one)
        assert cells[2] == str(one["messages"])
        assert cells[3].startswith(f"{one['context_tokens']:,} ({one['source']}")
        assert cells[4].endswith(f"{one['usable_tokens']:,}") or (
            f": {one['usable_tokens']:,} " in cells[4]
        )
        assert cells[5] == f"{one['percent']}"
        assert cells[6].startswith(savings(one["prune"]))
        eager = savings(one["prune_without_minimum"])
        assert cells[7] == eager or (cells[7] == "same" and eager == savings(one["prune"]))


def test_the_tokens_table_is_what_bench_layers_measures(measured: list[dict[str, Any]]) -> None:
    rows = table_rows(REPO_ROOT / "docs" / "tokens.md", "### Per format: estimate against")
    for one in measured:
        cells = row_of(rows, one)
        usage = "\u2013" if one["usage_tokens"] is None else f"{one['usage_tokens']:,}"
        assert cells[2:6] == [
            str(one["messages"]),
            usage,
            f"{one['context_tokens']:,} ({one['source']})",
            f"{one['chars4']:,}",
        ]
        if one["o200k"] is not None:
            assert cells[6] == f"{one['o200k']:,}"
