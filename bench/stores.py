"""The agents' own stores on one machine: `gitclaw-compress stores` on the corpus.

    python bench/stores.py [--corpus ../shared/corpus] [--copies N]

Builds a fresh HOME whose four stores (Claude Code, Codex, Copilot CLI, pi) hold every
corpus file of their format at the agent's default place (N copies each, with fresh ids in
their names, written long ago), runs `gitclaw-compress stores` three times (the second run
reads each compressed session again and finds it unchanged, the third finds each unchanged
by its stat), restores every session byte for byte after `git gc --prune=now`,
and prints per store: the bytes the agent loads before and after, the archive's size (as
written, and after gc), and the wall time of both runs. Sizes in KB (1 KB = 1024 bytes).

A script, not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
OLD = 1_700_000_000
HERMETIC = {"GIT_CONFIG_NOSYSTEM": "1", "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": ""}


def place(home: Path, corpus: Path, copies: int) -> dict[Path, str]:
    """Every corpus file at its agent's default place; the sha256 of each, by path."""
    where: dict[str, Callable[[str, int], str]] = {
        "claude": lambda n, i: f".claude/projects/-home-u-p{i}/{n}.jsonl",
        "codex": lambda n, i: f".codex/sessions/2026/01/0{1 + i % 9}/rollout-{n}-{i}.jsonl",
        "copilot": lambda n, i: f".copilot/session-state/{n}-{i}/events.jsonl",
        "pi": lambda n, i: f".pi/agent/sessions/--home-u-p{i}--/{n}.jsonl",
    }
    sums = {}
    for agent, name_of in where.items():
        for source in sorted((corpus / agent).glob("*.jsonl")):
            for copy in range(copies):
                target = home / name_of(source.stem, copy)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                os.utime(target, (OLD, OLD))
                sums[target] = hashlib.sha256(target.read_bytes()).hexdigest()
    return sums


def tool(home: Path, *args: str) -> tuple[float, bytes]:
    env = {**os.environ, **HERMETIC, "HOME": str(home)}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "PI_CODING_AGENT_DIR"):
        env.pop(name, None)
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=home,
        env=env,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - start, done.stdout


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--copies", type=int, default=1)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        sums = place(home, options.corpus, options.copies)
        stores = {
            "claude": home / ".claude",
            "codex": home / ".codex",
            "copilot": home / ".copilot",
            "pi": home / ".pi" / "agent",
        }
        before = {agent: folder_bytes(root) for agent, root in stores.items()}
        first, _ = tool(home, "stores")
        second, _ = tool(home, "stores")
        third, _ = tool(home, "stores")
        after = {agent: folder_bytes(root) for agent, root in stores.items()}
        archives = home / ".local" / "share" / "gitclaw-compress" / "stores"
        written = {agent: folder_bytes(archives / agent) for agent in stores}
        for agent in stores:
            subprocess.run(
                ["git", "--git-dir", str(archives / agent), "gc", "-q", "--prune=now"],
                check=True,
                env={**os.environ, **HERMETIC},
            )
        packed = {agent: folder_bytes(archives / agent) for agent in stores}
        restored = 0
        for path, digest in sums.items():
            _, data = tool(home, "restore", str(path), "-o", "-")
            assert hashlib.sha256(data).hexdigest() == digest, path
            restored += 1
        print(
            f"{len(sums)} sessions; first run {first:.2f} s, second {second:.2f} s (each "
            f"compressed session read again, found unchanged), third {third:.2f} s (each a stat)"
        )
        print("| store | sessions | loads before | loads after | archive written | after gc |")
        print("|---|---:|---:|---:|---:|---:|")
        for agent, root in stores.items():
            count = sum(1 for path in sums if root in path.parents)
            print(
                f"| {agent} | {count} | {before[agent] / 1024:,.0f} KB | "
                f"{after[agent] / 1024:,.0f} KB | {written[agent] / 1024:,.0f} KB | "
                f"{packed[agent] / 1024:,.0f} KB |"
            )
        print(f"every original restored byte for byte after git gc --prune=now: {restored}")


if __name__ == "__main__":
    main()
