"""What the secret scan finds and what it costs (docs/secrets.md carries the figures).

    python bench/secrets_cost.py [--runs N]

1. Recall: every kind of tests/secret_fixtures.recall_kinds planted in every format and slot
   (tests/secret_recall.py builds them at run time); a table of kinds x formats, each cell
   the slots found of the slots planted.
2. False positives: the findings on the shared corpus, per file (rule, masked).
3. No-op `step` on a committed session, whole process, CPU (user + system of the child,
   medians of N): with no finding, and with a finding the baseline accepts (settled).
4. `step` with one new turn: the largest corpus file (pi) committed compressed by a `step`,
   its last turn appended again, `step`: scan on and off (`scan.enabled`), interleaved, each
   run on a fresh copy of the repository (the records of clean lines as the step before
   left them).
5. `compress` of about 57 MB of corpus Claude Code content with the scan (the records of
   clean lines dropped before each run, so every line is scanned) against Cozempic's
   `treat FILE -rx standard --execute` on a copy of the same file (`--cozempic PATH` names
   its executable, installed in a venv of its own), interleaved, with a temporary HOME and
   CLAUDE_CONFIG_DIR and its opt-outs set.
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

from shared_corpus import CORPUS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from secret_fixtures import planted  # noqa: E402
from secret_recall import BUILDERS, SLOTS, recall  # noqa: E402
from synthetic import typical_session  # noqa: E402

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


def _config(repo: Path, scan: bool) -> None:
    body = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1},"scan":{"enabled":'
    (repo / "compression.json").write_bytes(body + (b"true}}" if scan else b"false}}"))


def _median_line(name: str, values: list[float]) -> str:
    spread = f"{min(values):.3f}-{max(values):.3f}"
    return f"| {name} | {statistics.median(values):.3f} | {spread} |"


def step_one_turn(runs: int) -> None:
    source = CORPUS / "pi" / "game__1a9ce069.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if b'"role":"user"' in line]
    head, turn = lines[: starts[-1]], lines[starts[-1] :]
    folder = Path(tempfile.mkdtemp(prefix="secrets-step-"))
    try:
        templates = {}
        for scan in (False, True):
            repo = folder / f"template-{scan}"
            repo.mkdir()
            _git(repo, "init", "-q")
            _git(repo, "config", "user.email", "bench@example.invalid")
            _git(repo, "config", "user.name", "bench")
            _config(repo, scan)
            path = repo / SESSION
            path.parent.mkdir(parents=True)
            path.write_bytes(b"".join(head))
            subprocess.run(
                [sys.executable, "-m", "gitclaw_compress", "step"], cwd=repo, capture_output=True
            )
            _git(repo, "add", "-A")
            _git(repo, "commit", "-qm", "compressed")
            with open(path, "ab") as out:
                out.write(b"".join(turn))
            templates[scan] = repo
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(runs + 1):
            for scan, template in templates.items():
                copy = folder / "run"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(template, copy, symlinks=True)
                times[scan].append(_cpu(copy, "step"))
        print(
            f"| `step`, one new turn ({len(b''.join(turn)) // 1024} KB) | CPU s, median | min-max |"
        )
        print("|---|---:|---|")
        for scan in (False, True):
            print(_median_line("scan on" if scan else "scan off", times[scan][1:]))
        extra = statistics.median(times[True][1:]) - statistics.median(times[False][1:])
        print(f"\nthe scan adds {extra:+.3f} s of CPU ({runs} interleaved runs)\n")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _claude_content(path: Path, size: int) -> None:
    files = sorted((CORPUS / "claude").glob("*.jsonl"))
    first, _, body = files[0].read_bytes().partition(b"\n")
    bodies = [body] + [f.read_bytes().partition(b"\n")[2] for f in files[1:]]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(first + b"\n")
        written = len(first) + 1
        while written < size:
            for chunk in bodies:
                out.write(chunk if chunk.endswith(b"\n") else chunk + b"\n")
                written += len(chunk) + 1


def against_cozempic(runs: int, cozempic: str, megabytes: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="secrets-cozempic-"))
    rel = ".claude/projects/-home-runner-work-demo-demo/5f0c2a4e-1b7d-4c3a-9e21.jsonl"
    try:
        repo = folder / "repo"
        repo.mkdir()
        _git(repo, "init", "-q")
        _git(repo, "config", "user.email", "bench@example.invalid")
        _git(repo, "config", "user.name", "bench")
        _config(repo, True)
        session = repo / rel
        _claude_content(session, megabytes * 1000 * 1000)
        # The cc-test transcript printed a `.env` token (the corpus's one finding): accept it,
        # as a user would, so that compress goes on (every line is still scanned each run).
        accept = [sys.executable, "-m", "gitclaw_compress", "scan", rel, "--accept-all"]
        subprocess.run(accept, cwd=repo, capture_output=True)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "agent run")
        original = session.read_bytes()
        home = folder / "home"
        env = {
            **os.environ,
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "COZEMPIC_NO_TELEMETRY": "1",
            "COZEMPIC_NO_AUTO_UPDATE": "1",
            "COZEMPIC_NO_GLOBAL_INIT": "1",
            "COZEMPIC_NO_AUTO_INIT": "1",
        }
        records = repo / ".git" / "gitclaw-compress" / "secrets-clean-lines"
        compress = [sys.executable, "-m", "gitclaw_compress", "compress", "--force", rel]
        treat = folder / "treat.jsonl"
        on, off = "gitclaw-compress compress, scan on", "gitclaw-compress compress, scan off"
        times: dict[str, list[float]] = {on: [], off: [], "cozempic": []}
        for round_ in range(runs + 1):
            _config(repo, False)
            session.write_bytes(original)
            without = _timed(compress, repo, os.environ.copy())
            _config(repo, True)
            shutil.rmtree(records, ignore_errors=True)
            session.write_bytes(original)
            ours = _timed(compress, repo, os.environ.copy())
            home.mkdir(exist_ok=True)
            treat.write_bytes(original)
            theirs = _timed(
                [cozempic, "treat", str(treat), "-rx", "standard", "--execute"], folder, env
            )
            if round_:  # the first round warms them up
                times[on].append(ours)
                times[off].append(without)
                times["cozempic"].append(theirs)
        what = f"{len(original) / 1e6:.1f} MB of corpus Claude Code content"
        print(f"| {what} | CPU s, median | min-max |")
        print("|---|---:|---|")
        for name, values in times.items():
            print(_median_line(name, values))
        print(f"\n({runs} interleaved runs, load {os.getloadavg()[0]:.1f})\n")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    error = process.stderr.read() if process.stderr else b""
    if os.waitstatus_to_exitcode(status) not in (0,):
        raise SystemExit(f"{argv[:4]} failed: {error.decode()[-500:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cozempic", help="Cozempic's executable (else that part is skipped)")
    parser.add_argument("--mb", type=int, default=57)
    parser.add_argument(
        "--only", default="recall,corpus,noop,step,cozempic", help="which parts to run"
    )
    args = parser.parse_args()
    parts = set(args.only.split(","))
    if "recall" in parts:
        recall_table()
    if CORPUS.is_dir() and "corpus" in parts:
        corpus_table()
    if "noop" in parts:
        noop_step(args.runs)
    if CORPUS.is_dir() and "step" in parts:
        step_one_turn(args.runs)
    if CORPUS.is_dir() and args.cozempic and "cozempic" in parts:
        against_cozempic(args.runs, args.cozempic, args.mb)


if __name__ == "__main__":
    main()
