"""The whole-file check costs the same per file for copies of one session as for distinct
sessions. A script, not a test: it prints numbers.

    python bench/verify_copies.py [--files 1000] [--turns 3]

Copies of one session share its header line, so they share one list of file records in
the archive (Entire keeps a `full.jsonl` copy of a session in each checkpoint; agents fork
sessions). It builds two repositories of `--files` pi sessions each, of the same size:
copies of one session, and sessions that differ in their header's id. It compresses each
folder in one run, commits, then times `verify` of the folder (the whole process, wall
clock) and prints seconds per file for both, and their ratio (the goal: within 2x).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
FOLDER = "agent/state/sessions"


def session(turns: int, session_id: str) -> bytes:
    """A pi session (format v3): each turn reads a file and answers."""
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-02-20T11:44:20.711Z",
            "cwd": "/home/runner/work/demo/demo",
        }
    ]
    parent = None
    for turn in range(turns):
        body = "\n".join(f"file{turn} line {n}: lorem ipsum dolor sit amet" for n in range(200))
        messages = [
            {"role": "user", "content": [{"type": "text", "text": f"task {turn}"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": f"c{turn}",
                        "name": "read",
                        "arguments": {"path": f"src/f{turn}.py"},
                    }
                ],
                "stopReason": "toolUse",
            },
            {
                "role": "toolResult",
                "toolCallId": f"c{turn}",
                "toolName": "read",
                "content": [{"type": "text", "text": body}],
                "isError": False,
            },
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"done {turn}"}],
                "stopReason": "stop",
            },
        ]
        for number, message in enumerate(messages):
            entry_id = f"{turn:04x}{number:04x}"
            lines.append(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-02-20T11:45:00.000Z",
                    "message": message,
                }
            )
            parent = entry_id
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def run(cwd: Path, *args: str) -> float:
    """Wall-clock seconds of one command; it must succeed."""
    env = {**os.environ, **GIT_ENV}
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def build(root: Path, files: int, turns: int, copies: bool) -> Path:
    repo = root / ("copies" if copies else "distinct")
    folder = repo / FOLDER
    folder.mkdir(parents=True)
    run(repo, "git", "init", "-q")
    (repo / "compression.json").write_bytes(b'{"session": {"sizeThresholdKB": 0}}')
    for number in range(files):
        session_id = "0b1f6c29-4cc6-402c-bcb0-000000000000"
        if not copies:
            session_id = f"0b1f6c29-4cc6-402c-bcb0-{number:012d}"
        (folder / f"s{number:05d}.jsonl").write_bytes(session(turns, session_id))
    tool = [sys.executable, "-m", "gitclaw_compress"]
    run(repo, *tool, "compress", "--keep-turns", "1", FOLDER)
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "compressed")
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=3)
    options = parser.parse_args()
    tool = [sys.executable, "-m", "gitclaw_compress"]
    with tempfile.TemporaryDirectory() as temp:
        per_file = {}
        for copies in (False, True):
            repo = build(Path(temp), options.files, options.turns, copies)
            size = (repo / FOLDER / "s00000.jsonl").stat().st_size
            seconds = run(repo, *tool, "verify", "--no-fetch", FOLDER)
            kind = "copies of one session" if copies else "distinct sessions"
            per_file[copies] = seconds / options.files
            print(
                f"verify {options.files} {kind} ({size / 1024:.1f} KB each): {seconds:.2f} s, "
                f"{per_file[copies] * 1000:.2f} ms per file"
            )
        print(f"copies / distinct, per file: {per_file[True] / per_file[False]:.2f}x")


if __name__ == "__main__":
    main()
