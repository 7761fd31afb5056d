"""Memory and time when one line of a session is huge: compress, restore and verify.

    python bench/huge_line.py [--sizes 10 26 50] [--formats claude copilot pi]
                              [--places store store-noscan repo repo-noscan] [--ascii]
                              [--workdir DIR]
    python bench/huge_line.py --corpus [--repeat 3]

Each session is a corpus session of its format whose first tool result (before the last
4 turns, so `compress` stubs it) is grown with corpus text until its line is SIZE MB
(1 MB = 1,000,000 bytes), written as each agent writes it: Claude Code holds the text twice
(`tool_result` and `toolUseResult`), Copilot CLI twice (`content` and `detailedContent`), pi
once. The text has emoji, so Python holds it at 4 bytes a character; with `--ascii` the
filler keeps only its ASCII characters (1 byte each).

Places:
- `store`: the session where the agent keeps it under a fresh HOME (written long ago), the
  archive where `stores` keeps it; the secret scan on (`scan.enabled`, the default).
- `store-noscan`: the same with `scan.enabled: false` in the tool's config folder.
- `repo`: an untracked file in a fresh git repository, the scan on.
- `repo-noscan`: the same with `scan.enabled: false`.

For each it prints the wall time and peak RSS (GNU time's %M, bench/measured.py) of
`compress PATH`, `restore PATH -o OUT` (the sha256 of OUT checked against the original) and
`verify PATH`.

`--corpus` times `compress` (and its peak) of every corpus file in a fresh repository and in
a store instead, `--repeat` times each (the median): the ordinary sessions, to check that a
change for huge lines does not slow them.

A script, not a test: it writes hundreds of MB into a temp folder.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from measured import HERMETIC_GIT, Measured, run_measured
from shared_corpus import CORPUS
from synthetic_store import corpus_sessions

RULE_CACHE = "GITCLAW_COMPRESS_RULE_CACHE"
OLD = 1_700_000_000  # the sessions' mtime: long at rest
MOVED = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
)


def corpus_text(ascii_only: bool = False) -> str:
    """Every corpus session's text, as one string: the filler of the grown tool result
    (`ascii_only`: without its other characters)."""
    text = "".join(
        p.read_text("utf-8", "replace")
        for fmt in ("claude", "codex", "pi")
        for p in corpus_sessions(fmt)
    )
    return text.encode("ascii", "ignore").decode() if ascii_only else text


def filler(text: str, size: int) -> str:
    """`size` characters of `text`, wrapping around."""
    return (text * (size // len(text) + 1))[:size]


def characters_for(text: str, line_bytes: int, copies: int) -> int:
    """How many characters of filler make `copies` copies take about `line_bytes` as JSON."""
    sample = text[: 1 << 20]
    per_char = len(orjson.dumps(sample)) / len(sample)
    return int(line_bytes / copies / per_char)


def _grow(
    source: Path, line_bytes: int, grow: Callable[[dict[str, Any], str], int], text: str
) -> bytes:
    """The corpus session with its first line that `grow` accepts grown to `line_bytes`."""
    lines = source.read_bytes().split(b"\n")
    limit = max(1, len(lines) // 3)  # well before the kept turns
    for number, line in enumerate(lines[:limit]):
        if not line:
            continue
        entry = orjson.loads(line)
        copies = grow(entry, "")
        if copies:
            overhead = len(line)
            characters = characters_for(text, line_bytes - overhead, copies)
            for _ in range(2):  # once more with the measured bytes a character takes
                grow(entry, filler(text, characters))
                grown = orjson.dumps(entry)
                characters = int(characters * (line_bytes - overhead) / (len(grown) - overhead))
            lines[number] = grown
            return b"\n".join(lines)
    raise SystemExit(f"{source.name}: no tool result to grow")


def _claude(entry: dict[str, Any], body: str) -> int:
    content = (entry.get("message") or {}).get("content")
    result = entry.get("toolUseResult")
    if not (
        isinstance(content, list)
        and content
        and isinstance(content[0], dict)
        and content[0].get("type") == "tool_result"
        and isinstance(result, dict)
        and isinstance(result.get("file"), dict)
    ):
        return 0
    if body:
        content[0]["content"] = body
        result["file"]["content"] = body
    return 2


def _copilot(entry: dict[str, Any], body: str) -> int:
    if entry.get("type") != "tool.execution_complete":
        return 0
    result = entry["data"].get("result")
    if not isinstance(result, dict) or "content" not in result:
        return 0
    if body:
        result["content"] = body
        result["detailedContent"] = body
    return 2


def _pi(entry: dict[str, Any], body: str) -> int:
    message = entry.get("message") or {}
    content = message.get("content")
    if message.get("role") != "toolResult" or not isinstance(content, list) or not content:
        return 0
    if body:
        content[0]["text"] = body
    return 1


def build(fmt: str, line_bytes: int, ascii_only: bool = False) -> bytes:
    text = corpus_text(ascii_only)
    if fmt == "claude":
        source = next(p for p in corpus_sessions("claude") if p.name.startswith("entire-cli"))
        return _grow(source, line_bytes, _claude, text)
    if fmt == "copilot":
        return _grow(corpus_sessions("copilot")[0], line_bytes, _copilot, text)
    source = next(p for p in corpus_sessions("pi") if p.name.startswith("game"))
    return _grow(source, line_bytes, _pi, text)


STORE_PATHS = {
    "claude": ".claude/projects/-home-u-project/{}.jsonl",
    "codex": ".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-{}.jsonl",
    "copilot": ".copilot/session-state/{}/events.jsonl",
    "pi": ".pi/agent/sessions/--home-u-project--/2026-01-01T00-00-00-000Z_{}.jsonl",
}


def place(root: Path, where: str, fmt: str, data: bytes, name: str) -> tuple[Path, dict[str, str]]:
    """The session written where `where` says, and the environment to run the tool in."""
    home = root / "home"
    if home.exists():
        shutil.rmtree(home)
    (home / "data").mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if key not in MOVED}
    env.update(HERMETIC_GIT, HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME="")
    # The scan's compiled rules, kept from run to run as on a user's machine (compiling
    # them in each fresh HOME would take seconds of every run).
    env[RULE_CACHE] = str(root / "rules")
    if where.startswith("store"):
        path = home / STORE_PATHS[fmt].format(name)
        if where == "store-noscan":  # the tool's own config folder, as for any store
            config = home / ".config" / "gitclaw-compress" / "compression.json"
            config.parent.mkdir(parents=True)
            config.write_text('{"scan": {"enabled": false}}\n')
    else:
        repo = home / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
        if where == "repo-noscan":
            (repo / "compression.json").write_text('{"scan": {"enabled": false}}\n')
        path = repo / "sessions" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))
    return path, env


def tool(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitclaw_compress", *args]


def mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def describe(step: str, measured: Measured, extra: str = "") -> str:
    return f"{step}: {measured.seconds:5.1f} s, peak {mb(measured.peak_rss):>9}{extra}"


def warm_up(root: Path) -> None:
    """Compile the scan's rules into the cache once, before anything is measured."""
    source = min(corpus_sessions("pi"), key=lambda p: p.stat().st_size)
    path, env = place(root, "repo", "pi", source.read_bytes(), "warm-up")
    subprocess.run(tool("scan", str(path)), cwd=path.parent, env=env, capture_output=True)


def huge(args: argparse.Namespace, root: Path) -> None:
    for fmt in args.formats:
        for size in args.sizes:
            data = build(fmt, int(size * 1e6), args.ascii)
            longest = max(len(line) for line in data.split(b"\n"))
            digest = hashlib.sha256(data).hexdigest()
            for where in args.places:
                path, env = place(root, where, fmt, data, f"huge-{fmt}")
                cwd = path.parent
                compress = run_measured(tool("compress", str(path)), cwd=cwd, env=env).check()
                after = path.stat().st_size
                out = root / "restored.jsonl"
                restore = run_measured(tool("restore", str(path), "-o", str(out)), cwd=cwd, env=env)
                restore.check()
                same = hashlib.sha256(out.read_bytes()).hexdigest() == digest
                out.unlink()
                verify = run_measured(tool("verify", str(path)), cwd=cwd, env=env).check()
                print(
                    f"{fmt:8} {where:12} file {mb(len(data))}, longest line {mb(longest)} | "
                    + describe("compress", compress, f" -> {mb(after)}")
                    + " | "
                    + describe("restore", restore, "" if same else " NOT THE ORIGINAL")
                    + " | "
                    + describe("verify", verify),
                    flush=True,
                )
    shutil.rmtree(root / "home", ignore_errors=True)


def corpus(args: argparse.Namespace, root: Path) -> None:
    for fmt in ("claude", "codex", "copilot", "pi"):
        for source in corpus_sessions(fmt):
            data = source.read_bytes()
            for where in ("store", "repo"):
                runs = []
                for _ in range(args.repeat):
                    path, env = place(root, where, fmt, data, source.stem)
                    run = run_measured(tool("compress", str(path)), cwd=path.parent, env=env)
                    if run.returncode not in (0, 1):  # 1: held for a secret the corpus holds
                        run.check()
                    runs.append(run)
                seconds = statistics.median(r.seconds for r in runs)
                peak = statistics.median(r.peak_rss for r in runs)
                print(
                    f"{fmt:8} {where:6} {source.name[:40]:40} {mb(len(data)):>9}: compress "
                    f"{seconds:5.2f} s (median of {args.repeat}), peak {mb(int(peak))}",
                    flush=True,
                )
    shutil.rmtree(root / "home", ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[10, 26, 50])
    parser.add_argument("--formats", nargs="+", default=["claude", "copilot", "pi"])
    parser.add_argument(
        "--places", nargs="+", default=["store", "store-noscan", "repo", "repo-noscan"]
    )
    parser.add_argument(
        "--ascii", action="store_true", help="filler without non-ASCII characters (1 byte each)"
    )
    parser.add_argument("--corpus", action="store_true", help="ordinary sessions instead")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temp folder)")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"the corpus is not at {CORPUS}")
    root = args.workdir or Path(tempfile.mkdtemp(prefix="huge-line-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores (shared); 1 MB = 1,000,000 bytes")
    try:
        warm_up(root)
        (corpus if args.corpus else huge)(args, root)
    finally:
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
