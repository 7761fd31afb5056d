"""How long an agent waits for our hook: wall time of `gitclaw-compress hook AGENT`, as the
agent runs it (the recorded interpreter, the payload on stdin or as the last argument), beside
`python -c pass` and `gitclaw-compress --version`. A script, not a test: it prints numbers.

    python bench/agent_hook.py [--repeat 15]

Each run is in a fresh HOME (a temporary folder), so the hook logs and starts a pass there;
the pass itself is detached and not timed (it is not what the agent waits for). The lock the
pass holds makes most hooks of a burst start none: the script waits for each pass to end
before the next run, so every run starts one.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
CLAUDE_PAYLOAD = b'{"session_id": "s-1", "transcript_path": "/x.jsonl", "reason": "other"}'
CODEX = '{"type": "agent-turn-complete", "thread-id": "t-1", "cwd": "/w"}'


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
    return time.perf_counter() - started


def wait_for_pass(home: Path, agent: str) -> None:
    lock = home / ".local" / "share" / "gitclaw-compress" / "agent-hooks" / f"{agent}.lock"
    if lock.exists():
        with open(lock, "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # until the pass ends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    module = [PYTHON, "-P", "-m", "gitclaw_compress"]
    cases = [
        ("python -c pass", [PYTHON, "-c", "pass"], b"", None),
        ("gitclaw-compress --version", [*module, "--version"], b"", None),
        ("hook claude (payload on stdin)", [*module, "hook", "claude"], CLAUDE_PAYLOAD, "claude"),
        ("hook codex (payload as argument)", [*module, "hook", "codex", CODEX], b"", "codex"),
    ]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.repeat} runs each")
    for name, argv, stdin, agent in cases:
        times = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as folder:
                env = {**os.environ, "HOME": folder}
                env.pop("XDG_DATA_HOME", None)
                times.append(timed(argv, stdin, env))
                if agent is not None:
                    wait_for_pass(Path(folder), agent)
        ms = sorted(round(t * 1000) for t in times)
        median = statistics.median(ms)
        print(f"{name:36} median {median:5.0f} ms  min {ms[0]:4} ms  max {ms[-1]:4} ms")


if __name__ == "__main__":
    main()
