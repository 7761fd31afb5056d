"""Secret scan on the shared corpus: findings per format, the engine's start-up, whole-process
`scan` throughput on the largest file, and what the scan adds to a run, scan off against scan
on (interleaved runs, medians of wall time and of CPU time of the whole process):

- the first `compress` of the largest file (nothing scanned before);
- the GitClaw flow: that session, all but its last turn compressed by `step` and committed,
  then the last turn appended and `step` run again: with the record of clean lines the last
  `step` left (a local clone) and without it (a fresh CI checkout); and a no-op `step`, in a
  fresh copy of the repository each time and again and again in the same one (a second `step`,
  the hook after `step`: there the scan trusts the file's stat and does not read it).

    python bench/secrets_scan.py [RUNS] [--compile] [--mb N] [--baseline DIR]

`--compile` also times compiling the rules into an empty cache (what a fresh machine pays);
`--mb N` also measures the first `compress` of a synthetic pi session of N MB
(bench/benchmark.py's generator); `--baseline DIR` (a source tree of another version, e.g.
`git archive` of an older commit, unpacked) runs every scan-on case in that version too, in
the same interleaved rounds.
"""

from __future__ import annotations

import collections
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from shared_corpus import CORPUS

TOOL = [sys.executable, "-m", "gitclaw_compress"]
REL = ".GITCLAW/state/sessions/big.jsonl"
SETTINGS = '"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}'
RECORDS = Path(".git") / "gitclaw-compress"
# Each version measured: suffix of its case names -> extra environment (this tree: none).
VERSIONS: dict[str, dict[str, str]] = {"": {}}


def _bytecode_cached(folder: Path) -> None:
    """Children keep compiled bytecode (in `folder`, not in the source tree), as an installed
    package has it: without it every process compiles each module it imports again."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cwd: Path, *args: str, version: str = "") -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (all its threads)."""
    env = {**os.environ, **VERSIONS[version]}
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run([*TOOL, *args], cwd=cwd, capture_output=True, check=False, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.decode()}")
    return wall, _children_cpu() - cpu


def _forget(repo: Path) -> None:
    """Drop the scan's records of clean lines and objects: measure a first scan."""
    for record in (repo / RECORDS).glob("secrets-clean*"):
        if record.is_dir():
            shutil.rmtree(record)
        else:
            record.unlink()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _repo(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "bench@example.com")
    _git(root, "config", "user.name", "bench")
    (root / "off.json").write_text(f'{{{SETTINGS},"scan":{{"enabled":false}}}}')
    (root / "on.json").write_text(f"{{{SETTINGS}}}")
    (root / REL).parent.mkdir(parents=True)
    return root


class Table:
    """Wall and CPU samples per case; rows of medians and the share the scan adds."""

    def __init__(self) -> None:
        self.samples: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)

    def add(self, case: str, sample: tuple[float, float]) -> None:
        self.samples[case].append(sample)

    def median(self, case: str) -> tuple[float, float]:
        rows = self.samples[case]
        return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)

    def row(self, case: str, base: str | None = None) -> str:
        wall, cpu = self.median(case)
        walls = [r[0] for r in self.samples[case]]
        line = f"| {case} | {wall:.2f} ({min(walls):.2f}-{max(walls):.2f}) | {cpu:.3f} |"
        if base is None:
            return line + " |"
        base_wall, base_cpu = self.median(base)
        added = f"+{(wall / base_wall - 1) * 100:.0f}% wall, +{(cpu / base_cpu - 1) * 100:.0f}% CPU"
        return f"{line} {added} |"


def interleaved(runs: int, cases: dict[str, Callable[[], tuple[float, float]]]) -> Table:
    table = Table()
    for run in cases.values():
        run()  # a warm-up: bytecode compiled, files in the page cache
    for _ in range(runs):
        for case, run in cases.items():
            table.add(case, run())
    return table


def findings_per_format(files: list[Path]) -> None:
    from gitclaw_compress.formats import detect_file
    from gitclaw_compress.secrets.scan import scan_file

    by_format: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for path in files:
        fmt = detect_file(path, path.name)
        for finding in scan_file(path, path.name, fmt):
            by_format[fmt.name][finding.rule] += 1
        by_format[fmt.name]["(files)"] += 1
    for name, counts in sorted(by_format.items()):
        print(f"{name}: {dict(counts)}")


def engine_start(compile_too: bool) -> None:
    code = (
        "import time,resource;t=time.process_time();from kingfisher_sdk import Rules;"
        "i=time.process_time();r=Rules(confidence='medium');"
        "print(f'import {i-t:.2f} s CPU, rules {time.process_time()-i:.2f} s CPU "
        "({r.cache_status})')"
    )
    for _ in range(3):
        subprocess.run([sys.executable, "-c", code], check=True)
    if compile_too:
        with tempfile.TemporaryDirectory() as empty:
            env = {**os.environ, "KF_RULE_CACHE_DIR": empty}
            subprocess.run([sys.executable, "-c", code], check=True, env=env)


def first_compress(largest: Path, runs: int, root: Path) -> None:
    repo = _repo(root / f"first-{largest.stem}")
    target = repo / REL

    def run(config: str | None, version: str = "") -> Callable[[], tuple[float, float]]:
        def once() -> tuple[float, float]:
            shutil.copyfile(largest, target)
            target.chmod(0o644)
            _forget(repo)
            if config is None:
                return _timed(repo, "scan", "--no-archive", REL)
            return _timed(repo, "compress", REL, "--config", config, version=version)

        return once

    cases = {"off": run("off.json"), "scan": run(None)}
    cases.update({f"on{v}": run("on.json", v) for v in VERSIONS})
    table = interleaved(runs, cases)
    size = largest.stat().st_size / 1e6
    scan_wall, scan_cpu = table.median("scan")
    print(f"\n{largest.name} {size:.2f} MB, {runs} interleaved runs, medians")
    print(f"`scan --no-archive` (whole process): {scan_wall:.2f} s wall, {scan_cpu:.2f} s CPU")
    print("| first `compress` of it | wall s (min-max) | CPU s | the scan adds |")
    print("|---|---:|---:|---|")
    print(table.row("off").replace("| off |", "| scan off |"))
    for version in VERSIONS:
        print(table.row(f"on{version}", "off").replace("| on", "| scan on"))


def gitclaw_flow(largest: Path, runs: int, root: Path) -> None:
    from gitclaw_compress.core.lines import parse_entry
    from gitclaw_compress.formats import detect_file

    fmt = detect_file(largest, largest.name)
    lines = largest.read_bytes().splitlines(keepends=True)
    last_turn = max(
        i for i, data in enumerate(lines) if (e := parse_entry(data)) and fmt.is_turn_start(e)
    )
    template = _repo(root / "template")
    target = template / REL
    target.write_bytes(b"".join(lines[:last_turn]))
    _git(template, "add", "-A")
    _git(template, "commit", "-qm", "earlier runs")
    _timed(template, "step", "--config", "on.json")  # compresses, records the clean lines
    _git(template, "add", "-A")
    _git(template, "commit", "-qm", "compressed")
    turn = b"".join(lines[last_turn:])

    def run(
        config: str, record: bool, append: bool = True, version: str = ""
    ) -> Callable[[], tuple[float, float]]:
        def once() -> tuple[float, float]:
            work = root / "work"
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(template, work, symlinks=True)
            if not record:
                _forget(work)
            if append:
                with open(work / REL, "ab") as handle:
                    handle.write(turn)
            return _timed(work, "step", "--config", config, version=version)

        return once

    def again(config: str, version: str = "") -> Callable[[], tuple[float, float]]:
        """A no-op `step` in the same clone each time (the warm-up run records the stats)."""
        work = root / f"same{len(list(root.glob('same*')))}"
        shutil.copytree(template, work, symlinks=True)
        return lambda: _timed(work, "step", "--config", config, version=version)

    cases = {
        "scan off": run("off.json", True),
        "no-op step, scan off": run("off.json", True, append=False),
        "no-op step in the same clone, scan off": again("off.json"),
    }
    for v in VERSIONS:
        cases[f"scan on, clean lines recorded (local){v}"] = run("on.json", True, version=v)
        cases[f"scan on, no record (fresh checkout){v}"] = run("on.json", False, version=v)
        cases[f"no-op step, scan on{v}"] = run("on.json", True, append=False, version=v)
        cases[f"no-op step in the same clone, scan on{v}"] = again("on.json", v)
    # A stat is trusted a second after the file's last change (its ctime: the copy).
    time.sleep(1.1)
    table = interleaved(runs, cases)
    kb = len(turn) / 1e3
    print(f"\nGitClaw flow: committed compressed session + one appended turn ({kb:.0f} KB)")
    print("| `step` | wall s (min-max) | CPU s | the scan adds |")
    print("|---|---:|---:|---|")
    print(table.row("scan off"))
    for v in VERSIONS:
        print(table.row(f"scan on, clean lines recorded (local){v}", "scan off"))
        print(table.row(f"scan on, no record (fresh checkout){v}", "scan off"))
    for noop in ("no-op step", "no-op step in the same clone"):
        print(table.row(f"{noop}, scan off"))
        for v in VERSIONS:
            print(table.row(f"{noop}, scan on{v}", f"{noop}, scan off"))


def main() -> None:
    argv = sys.argv[1:]
    valued = ("--mb", "--baseline")
    args = [a for i, a in enumerate(argv) if not a.startswith("--") and argv[i - 1] not in valued]
    runs = int(args[0]) if args else 5
    if "--baseline" in argv:
        baseline = Path(argv[argv.index("--baseline") + 1]).resolve()
        VERSIONS[" (baseline)"] = {"PYTHONPATH": str(baseline)}
    files = sorted(CORPUS.glob("*/*.jsonl"))
    findings_per_format(files)
    engine_start("--compile" in sys.argv)  # the engine alone, in a bare interpreter
    largest = max(files, key=lambda p: p.stat().st_size)
    with tempfile.TemporaryDirectory() as tmp:
        _bytecode_cached(Path(tmp) / "pycache")
        first_compress(largest, runs, Path(tmp))
        gitclaw_flow(largest, runs, Path(tmp))
        if "--mb" in sys.argv:
            sys.path.insert(0, str(Path(__file__).parent))
            from benchmark import synthetic_session

            synthetic = Path(tmp) / "synthetic.jsonl"
            synthetic_session(synthetic, int(sys.argv[sys.argv.index("--mb") + 1]))
            first_compress(synthetic, runs, Path(tmp))
    print("load average:", " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print("rule cache:", os.environ.get("GITCLAW_COMPRESS_RULE_CACHE", "(default)"))


if __name__ == "__main__":
    main()
