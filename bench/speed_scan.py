"""Issue 35's secret-scan, first-run and no-op figures, each a ratio measured in one run
(interleaved rounds, medians; the load average is printed with each part).

    python bench/speed_scan.py [--runs 5] [--mb 60] [--before REV]
                               [--only findings,scan,first,noop]

- findings: the scan's findings on every corpus file and on planted secrets of every kind in
  every format (tests/secret_recall.py's sessions, built at run time), read by this tree and
  by REV's (`git archive REV`, default `main`): they must be the same (exit 1 if not).
- scan: `compress --force` of about MB of one real Claude Code transcript repeated (the
  largest corpus Claude Code file: its first line, then its other lines again and again),
  with the scan (the records of clean lines dropped before each run, so every line is
  scanned), without it, and REV's with it; and Cozempic standard (`treat FILE -rx standard
  --execute`) on a copy, installed by bench/deep.py in a temporary virtual environment and
  run with a temporary HOME and its telemetry, auto-update and init off. CPU of each
  process (user + system, every thread and child); ratios to Cozempic.
- first: in a new HOME each round (no compiled rules), `stores --dry-run claude` over one
  corpus Claude Code session, run three times, and in another new HOME `compress --force` of
  a committed copy in a repository, three times (the copy and its records put back each
  time): wall and CPU, the first run against the third (the second compiles the candidate
  rules the first wrote); `stores` the same in REV's tree (a new HOME of its own); and the
  line a first run shows while it waits, with its estimate.
- noop: a no-op `step` (a committed session, nothing to do) against `python -c pass`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from deep import COZEMPIC_ENV, install_cozempic
from shared_corpus import CORPUS

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_REL = ".claude/projects/-home-runner-work-demo-demo/5f0c2a4e-1b7d-4c3a-9e21.jsonl"
SETTINGS = '"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}'
# Bytecode caching as users have it; no rule cache of the caller's (each part picks its own).
ENV = {
    key: value
    for key, value in os.environ.items()
    if key not in ("PYTHONDONTWRITEBYTECODE", "GITCLAW_COMPRESS_RULE_CACHE", "PYTHONPATH")
}
FINDINGS = """
import json, sys
from pathlib import Path
from gitclaw_compress.formats import detect_file
from gitclaw_compress.secrets.scan import scan_file
rows = []
for name in sys.argv[1:]:
    path = Path(name)
    for f in scan_file(path, path.name, detect_file(path, path.name)):
        rows.append([path.name, f.line, [str(step) for step in f.path], f.rule, f.hash, f.sealed])
print(json.dumps(rows))
"""


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def timed(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    """CPU seconds of the process and every child it waited for."""
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    error = process.stderr.read() if process.stderr else b""
    if process.stderr:
        process.stderr.close()
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"{argv[:4]} failed: {error.decode()[-800:]}")
    return usage.ru_utime + usage.ru_stime


def wall_and_cpu(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    cpu = timed(argv, cwd, env, ok=(0, 1))
    return time.perf_counter() - start, cpu


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=ENV)


def tree_of(rev: str, folder: Path) -> Path:
    """This repository's package at `rev`, unpacked under `folder`."""
    target = folder / f"tree-{rev.replace('/', '-')}"
    target.mkdir()
    archive = subprocess.run(
        ["git", "archive", rev, "gitclaw_compress"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def with_tree(env: dict[str, str], tree: Path | None) -> dict[str, str]:
    return env if tree is None else {**env, "PYTHONPATH": str(tree)}


def median_line(name: str, values: list[float], unit: str = "s") -> str:
    spread = f"{min(values):.3f}-{max(values):.3f}"
    return f"| {name} | {statistics.median(values):.3f} {unit} | {spread} |"


# -- findings: the same before and after ------------------------------------------------------


def findings(before: Path, folder: Path) -> bool:
    sys.path.insert(0, str(ROOT / "tests"))
    from secret_recall import BUILDERS

    files = sorted(CORPUS.glob("*/*.jsonl")) + sorted(CORPUS.glob("pi-history/*/*.jsonl"))
    for fmt, build in BUILDERS.items():
        planted = folder / f"planted-{fmt}.jsonl"
        planted.write_bytes(build())
        files.append(planted)
    names = [str(path) for path in files]
    env = {**ENV, "GITCLAW_COMPRESS_RULE_CACHE": str(folder / "findings-rules")}
    read = {}
    # After: the first run in an empty rule cache (the engine's rules read every value), then
    # a later one (the two stages).
    runs = (("before", before), ("after, first run", ROOT), ("after", ROOT))
    for name, tree in runs:
        out = subprocess.run(
            [sys.executable, "-c", FINDINGS, *names],
            env=with_tree(env, tree),
            cwd=folder,
            check=True,
            capture_output=True,
        ).stdout
        read[name] = out
    same = len(set(read.values())) == 1
    count = len(json.loads(read["after"]))
    print(
        f"findings on {len(files) - len(BUILDERS)} corpus files and {len(BUILDERS)} planted "
        f"sessions: {count}; {'; '.join(read)}: {'the same' if same else 'DIFFERENT'}\n"
    )
    return same


# -- the scan against Cozempic -------------------------------------------------------------


def one_transcript(path: Path, megabytes: int) -> Path:
    """The largest corpus Claude Code transcript, its body repeated to about `megabytes`."""
    source = max((CORPUS / "claude").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    first, _, body = source.read_bytes().partition(b"\n")
    body = body if body.endswith(b"\n") else body + b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(first + b"\n")
        written = len(first) + 1
        while written < megabytes * 1_000_000:
            out.write(body)
            written += len(body)
    return source


def scan_against_cozempic(runs: int, megabytes: int, before: Path, folder: Path) -> None:
    repo = folder / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "bench")
    session = repo / CLAUDE_REL
    source = one_transcript(session, megabytes)
    env = {**ENV, "GITCLAW_COMPRESS_RULE_CACHE": str(folder / "rules")}
    tool = [sys.executable, "-m", "gitclaw_compress"]
    timed([*tool, "scan", CLAUDE_REL, "--accept-all"], repo, env, ok=(0, 1))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    original = session.read_bytes()
    program = install_cozempic(folder, ENV)
    home = folder / "cozempic-home"
    coz_env = {**ENV, **COZEMPIC_ENV, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    treat = folder / "treat.jsonl"
    records = repo / ".git" / "gitclaw-compress" / "secrets-clean-lines"
    compress = [*tool, "compress", "--force", CLAUDE_REL]

    def ours(scan: bool, tree: Path | None) -> float:
        (repo / "compression.json").write_text(
            f'{{{SETTINGS},"scan":{{"enabled":{str(scan).lower()}}}}}'
        )
        shutil.rmtree(records, ignore_errors=True)
        session.write_bytes(original)
        return timed(compress, repo, with_tree(env, tree))

    def theirs() -> float:
        home.mkdir(exist_ok=True)
        treat.write_bytes(original)
        return timed(
            [str(program), "treat", str(treat), "-rx", "standard", "--execute"], folder, coz_env
        )

    cases: dict[str, Callable[[], float]] = {
        "gitclaw-compress compress, scan on": lambda: ours(True, None),
        "gitclaw-compress compress, scan off": lambda: ours(False, None),
        "the same, scan on, before": lambda: ours(True, before),
        "Cozempic 1.8 treat -rx standard --execute": theirs,
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(runs + 1):
        for name, case in cases.items():
            seconds = case()
            if round_:  # the first round warms them up
                times[name].append(seconds)
    print(f"{len(original) / 1e6:.1f} MB: {source.name} repeated, `compress --force`, CPU")
    print("| run | CPU, median | min-max |\n|---|---:|---|")
    for name, values in times.items():
        print(median_line(name, values))
    names = list(cases)
    for name in names[:3]:
        ratios = [a / b for a, b in zip(times[name], times[names[3]], strict=True)]
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        print(f"{name} / Cozempic: {statistics.median(ratios):.2f}x (min-max {spread})")
    scan = [a - b for a, b in zip(times[names[0]], times[names[1]], strict=True)]
    print(f"the scan adds {statistics.median(scan):.3f} s ({runs} interleaved rounds, {load()})\n")


# -- the first run in a new HOME -------------------------------------------------------------


WAIT_LINE = "from gitclaw_compress.secrets.parallel import _waiting_for; print(_waiting_for())"


def first_runs(runs: int, before: Path, folder: Path) -> None:
    source = max((CORPUS / "claude").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    tool = [sys.executable, "-m", "gitclaw_compress"]
    stores: list[list[tuple[float, float]]] = [[], [], []]
    stores_before: list[list[tuple[float, float]]] = [[], [], []]
    compress: list[list[tuple[float, float]]] = [[], [], []]
    lines = []
    for round_ in range(runs):
        home = folder / f"home-{round_}"
        store = home / ".claude" / "projects" / "-home-u-p" / source.name
        store.parent.mkdir(parents=True)
        shutil.copyfile(source, store)
        os.utime(store, (1_700_000_000, 1_700_000_000))
        env = {**ENV, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
        for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR"):
            env.pop(name, None)
        lines.append(
            subprocess.run(
                [sys.executable, "-c", WAIT_LINE],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        for times in stores:
            times.append(wall_and_cpu([*tool, "stores", "claude", "--dry-run"], home, env))
        # the same in the tree before, in a new HOME of its own
        bhome = folder / f"bhome-{round_}"
        shutil.copytree(home / ".claude", bhome / ".claude")
        os.utime(bhome / ".claude" / "projects" / "-home-u-p" / source.name, (1_700_000_000,) * 2)
        benv = with_tree({**env, "HOME": str(bhome)}, before)
        for times in stores_before:
            times.append(wall_and_cpu([*tool, "stores", "claude", "--dry-run"], bhome, benv))
        # compress: a new HOME again (its own empty cache), in a repository
        chome = folder / f"chome-{round_}"
        repo = chome / "repo"
        (repo / CLAUDE_REL).parent.mkdir(parents=True)
        shutil.copyfile(source, repo / CLAUDE_REL)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "run")
        cenv = {**env, "HOME": str(chome)}
        original = (repo / CLAUDE_REL).read_bytes()
        for times in compress:
            (repo / CLAUDE_REL).write_bytes(original)
            shutil.rmtree(repo / ".git" / "gitclaw-compress", ignore_errors=True)
            times.append(wall_and_cpu([*tool, "compress", "--force", CLAUDE_REL], repo, cenv))
    size = f"{source.stat().st_size / 1e6:.1f} MB"
    print(f"first runs in a new HOME ({source.name}, {size}), {runs} rounds")
    print("| run | wall, median | CPU, median |\n|---|---:|---:|")
    for label, series in (
        ("stores --dry-run claude", stores),
        ("stores --dry-run claude, before", stores_before),
        ("compress --force", compress),
    ):
        for number, times in enumerate(series, 1):
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            print(f"| {label}, run {number} | {wall:.2f} s | {cpu:.2f} s |")
        extra = [a[0] - b[0] for a, b in zip(series[0], series[-1], strict=True)]
        print(f"| {label}: first minus last | {statistics.median(extra):+.2f} s | |")
    print(f"the line a first run shows while it waits: {lines[-1]!r} ({load()})\n")


# -- no-op step -----------------------------------------------------------------------------------


def noop(runs: int, folder: Path) -> None:
    repo = folder / "noop"
    session = repo / ".GITCLAW" / "state" / "sessions" / "s.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(b'{"type":"session","version":3,"id":"s","timestamp":"2026","cwd":"/"}\n')
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "run")
    env = {**ENV, "GITCLAW_COMPRESS_RULE_CACHE": str(folder / "rules")}
    step = [sys.executable, "-m", "gitclaw_compress", "step"]
    timed(step, repo, env)
    bare, steps = [], []
    for _ in range(runs):
        bare.append(timed([sys.executable, "-c", "pass"], repo, env))
        steps.append(timed(step, repo, env))
    ratios = [s / max(b, 1e-3) for s, b in zip(steps, bare, strict=True)]
    print("no-op `step` against `python -c pass`, CPU")
    print("| run | CPU, median | min-max |\n|---|---:|---|")
    print(median_line("python -c pass", bare))
    print(median_line("no-op step", steps))
    spread = f"{min(ratios):.1f}-{max(ratios):.1f}"
    ratio = statistics.median(ratios)
    print(f"ratio {ratio:.1f}x (min-max {spread}; goal <= 8; {runs} runs, {load()})\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mb", type=int, default=60)
    parser.add_argument("--before", default="main", help="the revision to compare with")
    parser.add_argument("--only", default="findings,scan,first,noop")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    same = True
    with tempfile.TemporaryDirectory(prefix="speed-scan-") as temp:
        folder = Path(temp)
        before = tree_of(args.before, folder) if parts & {"findings", "scan", "first"} else ROOT
        if "noop" in parts:
            noop(max(args.runs * 3, 9), folder)
        if CORPUS.is_dir() and "findings" in parts:
            same = findings(before, folder)
        if CORPUS.is_dir() and "scan" in parts:
            scan_against_cozempic(args.runs, args.mb, before, folder)
        if CORPUS.is_dir() and "first" in parts:
            first_runs(args.runs, before, folder)
    if not same:
        raise SystemExit("the findings differ from the revision's")


if __name__ == "__main__":
    main()
