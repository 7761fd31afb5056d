"""Which layers a compress passes through, in order. A script, not a test: it prints numbers.

    python bench/layer_trace.py [--file pi/gitopenclaw__b1f6c294.jsonl] [--show]

A corpus file is committed into a fresh repository (own HOME, fixed identity) where its
agent keeps it, and `compress` of it runs in this process under `sys.setprofile` (the main
thread only: the secret scan's thread runs beside the flow, not in it). The layers are
tests/test_layering.py's `LAYERS` (leaves < config < tokens < core < formats < store <
secrets, summary < ops < commands/cli).

What counts, over the calls from a function of one package module into a function of
another (a call inside one module, and the code a module runs when it is imported, do not):

- entering a layer: a call from a higher layer into a lower one is the flow going down, and
  its return is the flow coming back: fine however often it happens (ops asking the store
  for a blob a thousand times is one step down, a thousand times).
- climbs: a call from a lower layer into a higher one, the lower layer calling back up
  through something handed to it. Counted as calls and as distinct (caller module, callee
  module) edges; the core calling the format it is handed (core -> formats) is the design
  (`CoreFormat`), and printed apart from the rest.
- re-entries: the flow's own steps are the calls the flow's module (ops/flow.py) makes into
  other modules. A re-entry is a step into a module (or layer) the flow had entered in an
  earlier step and left for another one since: the flow bouncing back to it between its
  stages (ops/unchanged.py once to look up, again to remember, again to save). A step into
  the module it is in already (consecutive steps) is not one.

Each line of `--show` is one step: the layer, the module and the function entered.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from shared_corpus import CORPUS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

# The repository layout and git identity of bench/deep.py.
from deep import GIT_ENV, LAYOUT  # noqa: E402
from test_layering import LAYERS  # noqa: E402

PACKAGE = "gitclaw_compress"
FLOW = "gitclaw_compress.ops.flow"

LAYER_NAMES = (
    "leaves",
    "config",
    "tokens",
    "core",
    "formats",
    "store",
    "secrets/summary",
    "ops",
    "commands/cli",
)


def layer(module: str) -> int:
    """The index in LAYERS of a package module."""
    top = module.split(".")[1] if "." in module else ""
    return next(i for i, names in enumerate(LAYERS) if top in names)


@dataclass
class Trace:
    """The cross-module calls of one run, in order: (caller module, callee module, callee
    function, whether the caller is the flow's own code)."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith(PACKAGE) or frame.f_code.co_name == "<module>":
            return
        back = frame.f_back
        while back is not None and not back.f_globals.get("__name__", "").startswith(PACKAGE):
            back = back.f_back  # through the standard library and click, to the package
        if back is None:
            return
        caller = back.f_globals["__name__"]
        if caller != callee and back.f_code.co_name != "<module>":
            self.calls.append((caller, callee, frame.f_code.co_qualname))


@dataclass
class Measure:
    modules: int
    climbs: int
    climb_edges: dict[tuple[str, str], int]
    steps: list[tuple[str, str]]  # (module, function) entered by the flow's own code
    module_reentries: int
    layer_reentries: int
    reentered: Counter[str]


def measure(trace: Trace) -> Measure:
    modules = {callee for _, callee, _ in trace.calls}
    edges: Counter[tuple[str, str]] = Counter(
        (caller, callee) for caller, callee, _ in trace.calls if layer(callee) > layer(caller)
    )
    steps = [(callee, function) for caller, callee, function in trace.calls if caller == FLOW]
    module_reentries = layer_reentries = 0
    reentered: Counter[str] = Counter()
    seen_modules: set[str] = set()
    seen_layers: set[int] = set()
    previous_module, previous_layer = FLOW, layer(FLOW)
    for module, _ in steps:
        if module != previous_module:
            if module in seen_modules:
                module_reentries += 1
                reentered[module] += 1
            seen_modules.add(module)
            previous_module = module
        if layer(module) != previous_layer:
            if layer(module) in seen_layers:
                layer_reentries += 1
            seen_layers.add(layer(module))
            previous_layer = layer(module)
    return Measure(
        len(modules),
        sum(edges.values()),
        dict(edges),
        steps,
        module_reentries,
        layer_reentries,
        reentered,
    )


def _git(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def traced_compress(source: Path, work: Path) -> Trace:
    """`compress` of `source`, committed where its agent keeps it, traced in this process."""
    kind = source.parent.name
    repo = work / "repo"
    home = work / "home"
    home.mkdir()
    env = {**os.environ, **GIT_ENV, "HOME": str(home)}
    repo.mkdir()
    _git(["init", "-q"], repo, env)
    rel = LAYOUT[kind].format(stem=source.stem)
    (repo / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, repo / rel)
    _git(["add", "-A"], repo, env)
    _git(["commit", "-qm", "agent run"], repo, env)
    os.environ.update(GIT_ENV)
    os.environ["HOME"] = str(home)
    os.chdir(repo)
    from gitclaw_compress.cli import cli

    trace = Trace()
    sys.setprofile(trace.profile)
    try:
        cli.main(["compress", rel], prog_name="gitclaw-compress", standalone_mode=False)
    finally:
        sys.setprofile(None)
    assert threading.current_thread() is threading.main_thread()
    return trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default="pi/gitopenclaw__b1f6c294.jsonl")
    parser.add_argument("--show", action="store_true", help="print every step of the flow")
    options = parser.parse_args()
    source = CORPUS / options.file
    if not source.is_file():
        raise SystemExit(f"{source}: no such corpus file")
    with tempfile.TemporaryDirectory() as temp:
        trace = traced_compress(source, Path(temp))
    result = measure(trace)
    if options.show:
        for module, function in result.steps:
            print(f"  {LAYER_NAMES[layer(module)]:>15}  {module}.{function}")
    designed = {edge: n for edge, n in result.climb_edges.items() if _designed(*edge)}
    other = {edge: n for edge, n in result.climb_edges.items() if not _designed(*edge)}
    print(f"file: {options.file}")
    print(f"modules entered: {result.modules}")
    print(
        f"climbs (a lower layer calling a higher one): {result.climbs} calls, "
        f"{len(result.climb_edges)} edges; through the format the core is handed: "
        f"{sum(designed.values())} calls, {len(designed)} edges; other: "
        f"{sum(other.values())} calls, {len(other)} edges"
    )
    for (caller, callee), count in sorted(other.items()):
        print(f"  {caller} -> {callee}: {count}")
    print(
        f"flow steps: {len(result.steps)}; re-entries: {result.module_reentries} into a "
        f"module left since, {result.layer_reentries} into a layer left since"
    )
    for module, count in result.reentered.most_common():
        print(f"  {module}: {count}")
    layers: list[str] = []
    for module, _ in result.steps:
        name = LAYER_NAMES[layer(module)]
        if not layers or layers[-1] != name:
            layers.append(name)
    print("layers in the order the flow enters them: " + " > ".join(layers))


def _designed(caller: str, callee: str) -> bool:
    """The core calling the format it is handed."""
    return caller.startswith(f"{PACKAGE}.core.") and callee.startswith(f"{PACKAGE}.formats.")


if __name__ == "__main__":
    main()
