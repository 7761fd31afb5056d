"""A fault campaign: SIGINT at many delays in the first second of real commands, on a real
transcript of each format. A script, not a test: it prints counts.

    python scripts/fault_campaign.py [--delays 20] [--start 0] [--until 1.0] [--commands …]
                                     [--load N] [--fresh-scan]

For each format (the smallest corpus file of ../shared/corpus/<format>, or with --largest
the largest; skipped when absent)
it builds a repository where the session is committed, compressed and committed again (so
restore, verify and prune have work), then for each command and each of --delays delays
in [--start, --until) seconds it starts the command, sends SIGINT after the delay, and
waits (60 s at most: longer is a hang). After each run it checks:

- a hang: the command did not end within 60 s;
- a crash: death by a signal other than SIGINT (-11 and friends), or an exit code outside
  0, 1, 3 and 130;
- more than one line on stderr for an exit of 130 (a traceback at start-up counts here,
  apart, when it came before our first statement: Python's own start);
- a third state: the session file is neither the bytes before the run nor a file whose
  restore gives the original (restore exits 0 and gives other bytes: a wrong restore);
- a wrong restore: `restore -o -` exits 0 with bytes that are not the original (for
  `summarize`, not the original followed by the lines it appended).

Then it puts the session back as it was (the committed compressed version).

--load N keeps N processes busy on the CPU meanwhile (a loaded machine: the interrupt lands
at other points). --fresh-scan forgets the lines recorded as scanned before each run, so that
the secret scan runs in its thread beside the compression (otherwise the session is known
clean and no thread starts): the hang of issue 32 needed that thread.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
FORMATS = ("pi", "claude", "codex", "copilot")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "campaign",
    "GIT_AUTHOR_EMAIL": "campaign@example.invalid",
    "GIT_COMMITTER_NAME": "campaign",
    "GIT_COMMITTER_EMAIL": "campaign@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
COMMANDS: dict[str, list[str]] = {
    "compress": ["compress", "--force", "--keep-turns", "1", "{s}"],
    "restore": ["restore", "{s}"],
    "verify": ["verify", "--no-fetch", "{s}"],
    "status": ["status", "{s}"],
    "prune": ["prune", "--target-percent", "1", "{s}"],
    "summarize": ["summarize", "--offline", "--keep-turns", "1", "{s}"],
    "redact": ["redact", "--all", "{s}"],
    "scan": ["scan", "{s}"],
    "stats": ["stats", "{s}"],
    "step": ["step", "--keep-turns", "1"],
}
TOOL = [sys.executable, "-m", "gitclaw_compress"]
ENV = {**os.environ, **GIT_ENV}
ENV.pop("CI", None)


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, capture_output=True, check=True).stdout


def tool(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*TOOL, *args], cwd=repo, env=ENV, capture_output=True, timeout=120)


def corpus_file(kind: str, largest: bool) -> Path | None:
    files = sorted((CORPUS / kind).glob("*.jsonl"), key=lambda path: path.stat().st_size)
    return (files[-1] if largest else files[0]) if files else None


def build(root: Path, kind: str, source: Path) -> tuple[Path, str, bytes]:
    repo = root / kind
    session = f"sessions/{source.name}"
    (repo / "sessions").mkdir(parents=True)
    original = source.read_bytes()
    (repo / session).write_bytes(original)
    (repo / "compression.json").write_bytes(
        b'{"session": {"sizeThresholdKB": 0}, "scan": {"block": false}}'
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "session")
    done = tool(repo, "compress", "--keep-turns", "1", session)
    if done.returncode != 0:
        sys.exit(f"{kind}: compress failed: {done.stderr.decode()}")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    return repo, session, original


def forget_scans(repo: Path) -> None:
    """Drop the records of lines scanned clean: the next run scans them again, in its thread."""
    shutil.rmtree(repo / ".git" / "gitclaw-compress" / "secrets-clean-lines", ignore_errors=True)


def busy(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` processes that spin on the CPU until they are killed."""
    spin = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]


def one_run(repo: Path, args: list[str], delay: float) -> tuple[int | None, bytes]:
    """Exit code (None: a hang) and stderr of one run interrupted after `delay` seconds."""
    process = subprocess.Popen(
        [*TOOL, *args], cwd=repo, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    time.sleep(delay)
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None, b""
    return process.returncode, err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delays", type=int, default=20)
    parser.add_argument("--start", type=float, default=0.0)
    parser.add_argument("--until", type=float, default=1.0)
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--largest", action="store_true", help="the largest corpus file")
    parser.add_argument("--load", type=int, default=0, help="CPU-bound processes meanwhile")
    parser.add_argument("--fresh-scan", action="store_true", help="scan in a thread each run")
    parser.add_argument("--why", action="store_true", help="print the line of an exit 1 or 3")
    options = parser.parse_args()
    span = options.until - options.start
    delays = [options.start + span * n / options.delays for n in range(options.delays)]
    counts: collections.Counter[str] = collections.Counter()
    exits: collections.Counter[str] = collections.Counter()
    root = Path(tempfile.mkdtemp(prefix="gitclaw-campaign-"))
    load = busy(options.load)
    try:
        for kind in options.formats.split(","):
            source = corpus_file(kind, options.largest)
            if source is None:
                print(f"{kind}: no corpus file, skipped")
                continue
            repo, session, original = build(root, kind, source)
            committed = (repo / session).read_bytes()
            for name in options.commands.split(","):
                args = [word.replace("{s}", session) for word in COMMANDS[name]]
                for delay in delays:
                    before = (repo / session).read_bytes()
                    if options.fresh_scan:
                        forget_scans(repo)
                    code, err = one_run(repo, args, delay)
                    counts["runs"] += 1
                    exits[str(code)] += 1
                    where = f"{kind} {name} at {delay:.2f} s"
                    lines = err.decode(errors="replace").strip().splitlines()
                    if code is None:
                        counts["hangs"] += 1
                        print(f"HANG {where}")
                    elif code not in (0, 1, 3, 130, -signal.SIGINT):
                        counts["crashes"] += 1
                        print(f"CRASH {where}: exit {code}: {lines[-3:]}")
                    elif code in (1, 3) and options.why:
                        print(f"EXIT {code} {where}: {lines[-1:]}")
                    elif len(lines) > 1 and code in (130, -2):
                        early = any("<frozen" in line or "site" in line for line in lines)
                        counts["tracebacks before our code" if early else "many lines"] += 1
                        print(f"LINES {where}: exit {code}: {lines[-2:]}")
                    after = (repo / session).read_bytes()
                    restored = tool(repo, "restore", "-o", "-", session)
                    good = restored.stdout == original or (
                        name == "summarize" and restored.stdout.startswith(original)
                    )
                    if restored.returncode == 0 and not good:
                        counts["wrong restores"] += 1
                        print(f"WRONG RESTORE {where}")
                    if after != before and restored.returncode != 0:
                        counts["third states"] += 1
                        print(f"THIRD STATE {where}: {restored.stderr.decode()[:200]}")
                    (repo / session).write_bytes(committed)
        print(f"exit codes: {dict(sorted(exits.items()))}")
        for key in ("runs", "hangs", "crashes", "wrong restores", "third states"):
            print(f"{key}: {counts[key]}")
        for key in ("many lines", "tracebacks before our code"):
            print(f"{key}: {counts[key]}")
    finally:
        for process in load:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
