"""The agents' own stores on one machine: `gitclaw-compress stores` on the corpus.

    python bench/stores.py [--corpus ../shared/corpus] [--copies N] [--synthetic-mb MB]
                           [--scan on|off] [--source DIR] [--restore all|sample|none]

Builds a fresh HOME whose four stores (Claude Code, Codex, Copilot CLI, pi) hold every
corpus file of their format at the agent's default place (N copies each, with fresh ids in
their names, written long ago; or, `--synthetic-mb`, a synthetic store of that size built by
bench/synthetic_store.py, each copy a distinct session), runs `gitclaw-compress stores`
three times (the second run reads each compressed session again and finds it unchanged, the
third finds each unchanged by its stat), restores the sessions byte for byte after
`git gc --prune=now`, and prints per store: the bytes the agent loads before and after, the
archive's size (as written, and after gc), and the wall time and CPU time (user + system,
of the command and its git children) of the three runs, with the sessions each held for a
secret. Sizes in KB (1 KB = 1024 bytes).

`--scan off` writes `"scan": {"enabled": false}` to the user's compression.json (the stores
pass as it was before it scanned); `--source DIR` runs the gitclaw_compress package of
another checkout (`git worktree add DIR main`), to compare two versions on the same store.

A script, not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shared_corpus import CORPUS
from synthetic_store import build_store

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


HELD = re.compile(r"\w+: held (.+?) \(untouched\): ")
SOURCE: Path | None = None  # another checkout's package (`--source`)


@dataclass
class Run:
    seconds: float  # wall
    cpu: float  # user + system of the command and its children
    stdout: bytes
    stderr: bytes

    @property
    def held_paths(self) -> list[str]:
        """Sessions held for a secret (one `AGENT: held PATH (untouched): …` line each)."""
        found = (HELD.match(line.decode()) for line in self.stderr.splitlines())
        return [match.group(1) for match in found if match]

    @property
    def held(self) -> int:
        return len(self.held_paths)


def tool(home: Path, *args: str) -> Run:
    """The command run in `home`; exit 0, or 1 when it held sessions for a secret."""
    env = {**os.environ, **HERMETIC, "HOME": str(home)}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "PI_CODING_AGENT_DIR"):
        env.pop(name, None)
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    if SOURCE is not None:
        env["PYTHONPATH"] = str(SOURCE)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=home,
        env=env,
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode not in (0, 1) or (
        done.returncode == 1 and b"(untouched)" not in done.stderr
    ):
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr[-2000:].decode()}")
    return Run(seconds, cpu, done.stdout, done.stderr)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    global SOURCE
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--synthetic-mb", type=int, default=0)
    parser.add_argument("--scan", choices=("on", "off"), default="on")
    parser.add_argument("--source", type=Path)
    parser.add_argument("--restore", choices=("all", "sample", "none"), default="all")
    options = parser.parse_args()
    SOURCE = options.source.resolve() if options.source else None
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        if options.synthetic_mb:
            written = build_store(home, options.synthetic_mb << 20)
            sums = {}
            for path in (path for paths in written.values() for path in paths):
                os.utime(path, (OLD, OLD))
                sums[path] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            sums = place(home, options.corpus, options.copies)
        if options.scan == "off":
            config = home / ".config" / "gitclaw-compress" / "compression.json"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text('{"scan": {"enabled": false}}')
        stores = {
            "claude": home / ".claude",
            "codex": home / ".codex",
            "copilot": home / ".copilot",
            "pi": home / ".pi" / "agent",
        }
        before = {agent: folder_bytes(root) for agent, root in stores.items()}
        runs = [tool(home, "stores") for _ in range(3)]
        after = {agent: folder_bytes(root) for agent, root in stores.items()}
        held = runs[0].held_paths
        if held:  # the user accepts what was found (`scan PATH --accept-all`), then two runs
            for held_path in held:
                tool(home, "scan", held_path, "--no-archive", "--accept-all")
            runs += [tool(home, "stores") for _ in range(2)]
        archives = home / ".local" / "share" / "gitclaw-compress" / "stores"
        written_bytes = {agent: folder_bytes(archives / agent) for agent in stores}
        for agent in stores:
            subprocess.run(
                ["git", "--git-dir", str(archives / agent), "gc", "-q", "--prune=now"],
                check=True,
                env={**os.environ, **HERMETIC},
            )
        packed = {agent: folder_bytes(archives / agent) for agent in stores}
        checked = list(sums)
        if options.restore == "sample":
            checked = random.Random(0).sample(checked, min(20, len(checked)))
        elif options.restore == "none":
            checked = []
        restored = 0
        for path in checked:
            data = tool(home, "restore", str(path), "-o", "-").stdout
            assert hashlib.sha256(data).hexdigest() == sums[path], path
            restored += 1
        total = sum(before.values())
        print(
            f"{len(sums)} sessions, {total / (1 << 20):,.1f} MiB; "
            f"{f'the package in {SOURCE}' if SOURCE else f'scan {options.scan}'}; "
            f"{os.cpu_count()} cores (shared), load average "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
        )
        names = ("first", "second", "third", "after accepting, fourth", "fifth")
        for name, run in zip(names, runs, strict=False):
            print(
                f"{name} run: {run.seconds:.2f} s wall, {run.cpu:.2f} s CPU, "
                f"{run.held} held for secrets"
            )
        print("| store | sessions | loads before | loads after | archive written | after gc |")
        print("|---|---:|---:|---:|---:|---:|")
        for agent, root in stores.items():
            count = sum(1 for path in sums if root in path.parents)
            print(
                f"| {agent} | {count} | {before[agent] / 1024:,.0f} KB | "
                f"{after[agent] / 1024:,.0f} KB | {written_bytes[agent] / 1024:,.0f} KB | "
                f"{packed[agent] / 1024:,.0f} KB |"
            )
        print(
            f"restored byte for byte after git gc --prune=now: {restored} of {len(checked)} "
            f"checked (held sessions are untouched: they restore as themselves)"
        )


if __name__ == "__main__":
    main()
