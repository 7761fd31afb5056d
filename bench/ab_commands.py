"""Two builds of the tool, A and B, timed on the same commands, interleaved. A script, not a
test: it prints numbers.

    python bench/ab_commands.py --a PYTHON[:SRC] --b PYTHON[:SRC] [--rounds 30]
                                [--file codex/rollout__019d406b.jsonl]

Each side is a Python interpreter (a virtual environment with the tool's dependencies) and,
optionally, a folder that holds the `gitclaw_compress` package to run (put first on
PYTHONPATH: an exported commit, say). One corpus file is committed into a fresh repository
(own HOME, fixed identity) per side, where its agent keeps it. Each round runs, for each
command, A and B in a random order:

- compress: `compress FILE` on a fresh copy of the committed repository (the copy untimed);
- restore: `restore FILE -o -` on the repository compressed and committed;
- status: `status FILE` there;
- step: `step` there once its no-op answer is cached (the pre-commit hook on a commit that
  touched no session).

Wall time of the whole process, start-up included. Prints the median of each command per
side, B/A of the medians, and the median of each round's B/A (A and B ran seconds apart, so
a load that drifts weighs on both). On a machine other work shares, more rounds steady the
medians; a run of one build against itself shows how far apart noise puts them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# The repository layout and git identity of bench/deep.py.
from deep import GIT_ENV, LAYOUT
from shared_corpus import CORPUS

COMMANDS = ("compress", "restore", "status", "step")


@dataclass
class Side:
    name: str
    python: str
    source: str | None
    work: Path
    times: dict[str, list[float]] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {**os.environ, **GIT_ENV, "HOME": str(self.work / "home")}
        env.pop("PYTHONPATH", None)
        if self.source:
            env["PYTHONPATH"] = self.source
        return env

    def tool(self, args: list[str], cwd: Path) -> float:
        start = time.perf_counter()
        done = subprocess.run(
            [self.python, "-m", "gitclaw_compress", *args],
            cwd=cwd,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        took = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(
                f"{self.name}: {' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()}"
            )
        return took


def _git(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def prepare(side: Side, source: Path) -> str:
    """The committed repository (`template`) and its compressed, committed copy (`done`);
    the file's path in them."""
    (side.work / "home").mkdir(parents=True)
    template = side.work / "template"
    template.mkdir()
    env = side.env()
    _git(["init", "-q"], template, env)
    rel = LAYOUT[source.parent.name].format(stem=source.stem)
    (template / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, template / rel)
    _git(["add", "-A"], template, env)
    _git(["commit", "-qm", "agent run"], template, env)
    done = side.work / "done"
    shutil.copytree(template, done, symlinks=True)
    side.tool(["compress", rel], done)
    _git(["commit", "-qam", "compressed"], done, env)
    side.tool(["step"], done)  # its no-op answer, cached
    return rel


def run_once(side: Side, command: str, rel: str, round_: int) -> float:
    if command == "compress":
        fresh = side.work / f"fresh{round_}"
        shutil.copytree(side.work / "template", fresh, symlinks=True)
        try:
            return side.tool(["compress", rel], fresh)
        finally:
            shutil.rmtree(fresh)
    args = {"restore": ["restore", rel, "-o", "-"], "status": ["status", rel], "step": ["step"]}
    return side.tool(args[command], side.work / "done")


def _side(name: str, spec: str, work: Path) -> Side:
    python, _, source = spec.partition(":")
    return Side(name, python, source or None, work / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="PYTHON[:SRC] of side A")
    parser.add_argument("--b", required=True, help="PYTHON[:SRC] of side B")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--file", default="codex/rollout__019d406b.jsonl")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    source = CORPUS / options.file
    if not source.is_file():
        raise SystemExit(f"{source}: no such corpus file")
    shuffle = random.Random(options.seed).shuffle
    with tempfile.TemporaryDirectory() as temp:
        sides = [_side("A", options.a, Path(temp)), _side("B", options.b, Path(temp))]
        rel = ""
        for side in sides:
            rel = prepare(side, source)
        for round_ in range(options.rounds):
            for command in COMMANDS:
                order = list(sides)
                shuffle(order)
                for side in order:
                    took = run_once(side, command, rel, round_)
                    side.times.setdefault(command, []).append(took)
    a, b = sides
    print(
        f"{options.file}, {options.rounds} rounds: command, median A and B (s), B/A of the "
        "medians, median of each round's B/A"
    )
    for command in COMMANDS:
        ma, mb = statistics.median(a.times[command]), statistics.median(b.times[command])
        paired = statistics.median(
            tb / ta for ta, tb in zip(a.times[command], b.times[command], strict=True)
        )
        print(f"  {command:<9} {ma:7.3f} {mb:7.3f}  {mb / ma:6.3f}  {paired:6.3f}")


if __name__ == "__main__":
    main()
