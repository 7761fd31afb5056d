"""What the secret scan finds and what it costs (docs/secrets.md carries the figures).

    python bench/secrets_cost.py [--runs N]

1. Recall: every kind of tests/secret_fixtures.recall_kinds planted in every format and slot
   (tests/secret_recall.py builds them at run time); a table of kinds x formats, each cell
   the slots found of the slots planted.
2. False positives: the findings on the shared corpus, per file (rule, masked).
3. No-op `step` on a committed session, whole process, CPU (user + system of the child,
   medians of N): with no finding, and with a finding the baseline accepts (settled).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from secret_fixtures import planted  # noqa: E402
from secret_recall import BUILDERS, SLOTS, recall  # noqa: E402
from synthetic import typical_session  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
SESSION = ".GITCLAW/state/sessions/issue-1.jsonl"
CONFIG = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}'


def recall_table() -> None:
    results = {fmt: recall(fmt) for fmt in BUILDERS}
    kinds = sorted({kind for kind, _ in next(iter(results.values()))}, key=str)
    print(f"| kind | {' | '.join(BUILDERS)} |")
    print(f"|---|{'---:|' * len(BUILDERS)}")
    for kind in kinds:
        cells = [
            f"{sum(results[fmt][(kind, slot)] for slot in SLOTS)}/{len(SLOTS)}" for fmt in BUILDERS
        ]
        print(f"| {kind} | {' | '.join(cells)} |")
    total = sum(sum(r.values()) for r in results.values())
    planted_count = sum(len(r) for r in results.values())
    print(f"\nfound {total} of {planted_count} plants (slots: {', '.join(SLOTS)})\n")


def corpus_table() -> None:
    from gitclaw_compress.formats import detect_file
    from gitclaw_compress.secrets.scan import scan_file

    files = sorted(CORPUS.glob("*/*.jsonl")) + sorted(CORPUS.glob("pi-history/*/*.jsonl"))
    print("| corpus file | MB | findings |")
    print("|---|---:|---|")
    for path in files:
        found = scan_file(path, path.name, detect_file(path, path.name))
        what = ", ".join(sorted({f"{f.rule} {f.masked} (line {f.line})" for f in found})) or "0"
        name = path.relative_to(CORPUS)
        print(f"| {name} | {path.stat().st_size / 1e6:.2f} | {what} |")
    print()


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _cpu(cwd: Path, *args: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "gitclaw_compress", *args], cwd=cwd, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _repo(folder: Path, secret: bool) -> Path:
    repo = folder / ("settled" if secret else "clean")
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "bench@example.invalid")
    _git(repo, "config", "user.name", "bench")
    (repo / "compression.json").write_bytes(CONFIG)
    data = typical_session(turns=30).data()
    if secret:
        line, _ = planted(3)["github"]
        data = data.replace(b'"text":"', f'"text":"{line} '.encode(), 1)
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    if secret:
        subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "scan", SESSION, "--accept-all"],
            cwd=repo,
            capture_output=True,
        )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "session")
    subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "step"], cwd=repo, capture_output=True
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "compressed")
    return repo


def noop_step(runs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="secrets-cost-"))
    try:
        repos = {"no finding": _repo(folder, False), "accepted finding": _repo(folder, True)}
        times: dict[str, list[float]] = {name: [] for name in repos}
        for repo in repos.values():
            _cpu(repo, "step")  # warm-up
        for _ in range(runs):  # interleaved
            for name, repo in repos.items():
                times[name].append(_cpu(repo, "step"))
        print("| no-op `step` | CPU s, median | min-max |")
        print("|---|---:|---|")
        for name, values in times.items():
            spread = f"{min(values):.3f}-{max(values):.3f}"
            print(f"| {name} | {statistics.median(values):.3f} | {spread} |")
        median = {name: statistics.median(values) for name, values in times.items()}
        ratio = median["accepted finding"] / median["no finding"]
        load = os.getloadavg()[0]
        print(f"\naccepted / none: {ratio:.2f}x ({runs} interleaved runs, load {load:.1f})\n")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    recall_table()
    if CORPUS.is_dir():
        corpus_table()
    noop_step(args.runs)


if __name__ == "__main__":
    main()
