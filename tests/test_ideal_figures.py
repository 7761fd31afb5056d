"""The corpus figures of docs/formats.md's "Measured" table and of README's "Supported
formats" table (and its `--deep` column, and docs/deep.md's) are what `bench/ideal.py --json`
measures now (a change of a default moves
them). Skips without the shared corpus."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, REPO_ROOT

from gitclaw_compress.units import human_bytes

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no shared corpus at {CORPUS}")

# docs/formats.md's rows: (format, file column) -> the corpus files the row sums.
FORMATS_ROWS = {
    ("pi", "6 files"): "pi/",
    ("Claude Code", "3 `cc-test` files"): "claude/cc-test",
    ("Claude Code", "4 Entire `full.jsonl`"): "claude/entire-cli",
    ("Claude Code", "all 7"): "claude/",
    ("Codex", "4 rollouts"): "codex/",
    ("Copilot CLI", "`gitclaw__53c12c90` (0.0.421)"): "copilot/",
}
README_ROWS = {
    "pi v3": "pi/",
    "Claude Code": "claude/",
    "OpenAI Codex CLI": "codex/",
    "GitHub Copilot CLI": "copilot/",
}
MINUS = "\u2212"  # the docs write a cut with the minus sign, not a hyphen
README_FIGURES = re.compile(
    r"\(\u2212(\d+\.\d)%, (\d+\.\d)% of (?:the ideal )?\u2212(\d+\.\d)%\); \u2212(\d+\.\d)% \| "
    r"\u2212(\d+\.\d)%, (\d+\.\d)% of \u2212(\d+\.\d)% \|"
)


def _measure(*flags: str) -> dict[str, dict[str, int]]:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "ideal.py"), "--json", *flags],
        capture_output=True,
        check=True,
    )
    files: dict[str, dict[str, int]] = orjson.loads(done.stdout)["files"]
    return files


Measured = tuple[dict[str, dict[str, int]], dict[str, dict[str, int]], dict[str, dict[str, int]]]


@pytest.fixture(scope="module")
def measured() -> Measured:
    return _measure(), _measure("--stub-ui-copies"), _measure("--deep")


def _sum(files: dict[str, dict[str, int]], prefix: str, key: str) -> int:
    chosen = [figures[key] for name, figures in files.items() if name.startswith(prefix)]
    assert chosen, prefix
    return sum(chosen)


def _percent(part: int, whole: int) -> str:
    return f"{part / whole:.1%}".removesuffix("%")


def _expected(measured: Measured, prefix: str) -> dict[str, str]:
    plain, ui_copies, deep = measured
    before = _sum(plain, prefix, "bytes")
    cut = before - _sum(plain, prefix, "after")
    ideal = _sum(plain, prefix, "ideal_cut")
    return {
        "before": f"{before:,}",
        "after": f"{before - cut:,}",
        "cut": _percent(cut, before),
        "ideal": _percent(ideal, before),
        "share": _percent(cut, ideal),
        "ui copies": _percent(before - _sum(ui_copies, prefix, "after"), before),
        "deep": _percent(before - _sum(deep, prefix, "after"), before),
        "deep share": _percent(
            before - _sum(deep, prefix, "after"), _sum(deep, prefix, "ideal_cut")
        ),
        "deep ideal": _percent(_sum(deep, prefix, "ideal_cut"), before),
    }


def _table_rows(path: Path, heading: str) -> list[list[str]]:
    """The rows (header first) of the first table after the heading."""
    text = path.read_text()
    rows: list[list[str]] = []
    for line in text[text.index(heading) :].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        if not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_measured_table_of_formats_md(measured: Measured) -> None:
    rows = _table_rows(REPO_ROOT / "docs" / "formats.md", "## Measured (corpus")
    found = {(row[0], row[1]): row[2:] for row in rows[1:]}
    assert set(found) == set(FORMATS_ROWS), sorted(found)
    for key, prefix in FORMATS_ROWS.items():
        want = _expected(measured, prefix)
        # A row that counts its files counts what the corpus holds now.
        counted = re.match(r"(?:all )?(\d+)\b", key[1])
        if counted is not None:
            assert int(counted[1]) == len([n for n in measured[0] if n.startswith(prefix)]), key
        before, after, cut, ideal, share, ui_copies = found[key]
        assert (before, after) == (want["before"], want["after"]), key
        assert cut == f"{MINUS}{want['cut']}%" and ideal == f"{MINUS}{want['ideal']}%", key
        assert share == f"{want['share']}%", key
        assert ui_copies == f"{MINUS}{want['ui copies']}%", key


def test_the_supported_formats_table_of_the_readme(measured: Measured) -> None:
    rows = _table_rows(REPO_ROOT / "README.md", "## Supported formats")
    found = {row[0]: " | ".join(row) + " |" for row in rows[1:]}
    assert set(found) == set(README_ROWS), sorted(found)
    for label, prefix in README_ROWS.items():
        want = _expected(measured, prefix)
        figures = README_FIGURES.search(found[label])
        assert figures is not None, found[label]
        expected = tuple(
            want[key]
            for key in ("cut", "share", "ideal", "ui copies", "deep", "deep share", "deep ideal")
        )
        assert figures.groups() == expected, label
        # Sizes as every command prints them (1 KB = 1024 bytes), not in decimal units.
        before = int(want["before"].replace(",", ""))
        after = int(want["after"].replace(",", ""))
        assert f"{human_bytes(before)} -> {human_bytes(after)} (" in found[label], label


def test_the_deep_table_of_deep_md(measured: Measured) -> None:
    rows = _table_rows(REPO_ROOT / "docs" / "deep.md", "`python bench/ideal.py --deep`")
    found = {row[0].split(" (")[0]: row[1:] for row in rows[1:]}
    assert set(found) == {"pi", "Claude Code", "Codex", "Copilot CLI"}, sorted(found)
    for label, prefix in zip(found, README_ROWS.values(), strict=True):
        want = _expected(measured, prefix)
        default, deep, share = found[label]
        assert default == f"{MINUS}{want['cut']}%" and deep == f"{MINUS}{want['deep']}%", label
        assert share == f"{want['deep share']}% of {MINUS}{want['deep ideal']}%", label


DEFAULT_TURNS = re.compile(r"<!-- default-turns -->(.*?)<!-- /default-turns -->", re.S)
DEFAULT_ROWS = {"pi": "pi/", "Claude Code": "claude/", "Codex": "codex/", "Copilot CLI": "copilot/"}


def test_readmes_figures_at_the_default_turns_are_what_the_bench_measures() -> None:
    """README's figures at the default of four kept turns (it gave none: a new user runs
    `compress` with no option) are `bench/ideal.py --keep-turns 4`, with the real names."""
    files = _measure("--keep-turns", "4")
    readme = (REPO_ROOT / "README.md").read_text()
    match = DEFAULT_TURNS.search(readme)
    assert match is not None
    said = " ".join(match.group(1).split())
    total = after = 0
    for name, prefix in DEFAULT_ROWS.items():
        count = sum(1 for file in files if file.startswith(prefix))
        before = _sum(files, prefix, "bytes")
        left = _sum(files, prefix, "after")
        total, after = total + before, after + left
        files_word = "file" if count == 1 else "files"
        expected = f"{name} {count} {files_word} {MINUS}{_percent(before - left, before)}%"
        assert expected in said, (expected, said)
    assert f"all {len(files)}: {MINUS}{_percent(total - after, total)}%" in said, said
