"""The corpus figures of the README and docs, measured exactly. A script, not a test.

    python bench/corpus_figures.py [--keep-turns 1]

For each format, every file of ../shared/corpus/<format>/ is copied into a fresh git
repository at a path of that format's default layout (below), never committed (so every
compressed line gets a v1 marker and its payloads go to the archive), and compressed with
default settings except `--keep-turns` (and `--force`, so that a file under
`session.sizeThresholdKB` is measured too). It prints, per format and per file, the bytes
before and after and the change. Stubs name the session's path, so the figures hold for
these paths; a committed file gets shorter v2 markers and comes out a little smaller.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from gitclaw_compress.units import human_bytes, size_change

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
# Where each format's file goes in the repository ({name}: the corpus file's name).
LAYOUT = {
    "pi": ".GITCLAW/state/sessions/{name}",
    "claude": ".claude/projects/-repo/{name}",
    "codex": ".codex/sessions/{name}",
    "copilot": ".copilot/session-state/{stem}/events.jsonl",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def measure(kind: str, keep_turns: int) -> list[dict[str, object]]:
    files = sorted((CORPUS / kind).glob("*.jsonl"))
    if not files:
        return []
    with tempfile.TemporaryDirectory(prefix=f"corpus-{kind}-") as temp:
        repo = Path(temp)
        git(repo, "init", "-q")
        paths = []
        for source in files:
            rel = LAYOUT[kind].format(name=source.name, stem=source.stem)
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, repo / rel)
            paths.append(rel)
        command = [sys.executable, "-m", "gitclaw_compress", "compress", "--json", "--force"]
        done = subprocess.run(
            [*command, "--keep-turns", str(keep_turns), *paths],
            cwd=repo,
            capture_output=True,
            check=True,
        )
    reports: list[dict[str, object]] = orjson.loads(done.stdout)["files"]
    return reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep-turns", type=int, default=1)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"no corpus at {CORPUS}")
    print(f"uncommitted files, default settings, --keep-turns {args.keep_turns} (--force)")
    for kind in LAYOUT:
        reports = measure(kind, args.keep_turns)
        if not reports:
            continue
        before = sum(int(str(report["bytes_before"])) for report in reports)
        after = sum(int(str(report["bytes_after"])) for report in reports)
        files = f"{len(reports)} file{'' if len(reports) == 1 else 's'}"
        print(
            f"{kind}: {files}: {before:,} -> {after:,} bytes "
            f"({human_bytes(before)} -> {human_bytes(after)}, {size_change(before, after)})"
        )
        for report in reports:
            one_before, one_after = (
                int(str(report["bytes_before"])),
                int(str(report["bytes_after"])),
            )
            print(
                f"  {Path(str(report['path'])).name}: {one_before:,} -> {one_after:,} bytes "
                f"({size_change(one_before, one_after)})"
            )


if __name__ == "__main__":
    main()
