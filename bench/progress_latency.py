"""How soon a person at a terminal sees progress on a long run, and how long the run takes.

    python bench/progress_latency.py [--sessions 500]

Builds a repository of N small synthetic pi sessions (committed, then compressed, so that
verify and restore --all have work), runs each long command on a pseudo-terminal, and prints
the seconds from the start of the process to the first progress line drawn, and to its end.
A script, not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from synthetic import typical_session

CLEAR = b"\r\x1b[K"
COMMANDS = [
    ("status", "--all"),
    ("scan",),
    ("verify",),
    ("compress", "--all", "--dry-run", "--force"),
    ("restore", "--all"),
]
ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, env={**os.environ, **ENV})


def timed(repo: Path, args: tuple[str, ...]) -> tuple[float | None, float]:
    """(seconds to the first progress line, seconds to the end), on a pseudo-terminal."""
    master, slave = os.openpty()
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    start = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=repo,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    first = None
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        if first is None and CLEAR in data:
            first = time.monotonic() - start
    os.close(master)
    process.wait()
    return first, time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=500)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder)
        git(repo, "init", "-q")
        sessions = repo / ".GITCLAW" / "state" / "sessions"
        sessions.mkdir(parents=True)
        for number in range(options.sessions):
            data = typical_session(turns=3).data()
            (sessions / f"s{number:04}.jsonl").write_bytes(data)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "sessions")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "gitclaw_compress",
                "compress",
                "--all",
                "--force",
                "--keep-turns",
                "1",
            ],
            cwd=repo,
            check=True,
            capture_output=True,
        )
        print(f"{options.sessions} sessions; seconds to the first progress line / to the end")
        for args in COMMANDS:
            first, total = timed(repo, args)
            shown = "none" if first is None else f"{first:.2f}"
            print(f"{' '.join(args):40} {shown:>6} / {total:6.2f}")


if __name__ == "__main__":
    main()
