"""Throughput and peak memory of compress and restore. A script, not a test: it prints numbers.

    python bench/benchmark.py [--size-mb 100] [--keep-turns 4] [--repeat 5]

Last, it runs bench/cpu_floor.py: whole-process CPU of `compress` and `restore` against an
orjson floor on large files built from the corpus content of every format, and a no-op
`step` against `python -c pass` (`--skip-floor` leaves that out).

It builds a synthetic pi session of the given size in a temporary git repository, commits it
(as GitClaw does), then times `compress` and `restore` in-process (no interpreter start-up),
including the git archive writes; `--repeat` times, each in a fresh repository, and prints
the median run and the spread. It does the same for a synthetic Claude Code transcript,
then for each file of ../shared/corpus/{pi,claude,codex,copilot} when that folder exists.
Peak memory is the process's maximum resident set size (ru_maxrss) and, separately, that of
the git child processes.
"""

from __future__ import annotations

import argparse
import base64
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cpu_floor  # bench/cpu_floor.py, beside this script
import orjson
from shared_corpus import CORPUS

from gitclaw_compress.config import defaults
from gitclaw_compress.ops.compress import Compression
from gitclaw_compress.ops.restore import restore_to_stream
from gitclaw_compress.store.archive import Repository

CORPUS_FORMATS = ("pi", "claude", "codex", "copilot")
MB = 1024 * 1024


def synthetic_session(path: Path, size_mb: int) -> None:
    """Turns of reads, writes, bash runs and an occasional screenshot, until size_mb."""
    target = size_mb * MB
    usage = {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500}
    counter = 0
    parent: str | None = None
    written = 0
    with open(path, "wb") as out:

        def add(message: dict[str, object]) -> None:
            nonlocal counter, parent, written
            counter += 1
            entry_id = f"{counter:08x}"
            line = orjson.dumps(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2026-03-01T10:00:00.000Z",
                    "message": message,
                }
            )
            out.write(line + b"\n")
            written += len(line) + 1
            parent = entry_id

        header = {"type": "session", "version": 3, "id": "bench", "timestamp": "2026", "cwd": "/"}
        out.write(orjson.dumps(header) + b"\n")
        turn = 0
        while written < target:
            turn += 1
            add({"role": "user", "content": [{"type": "text", "text": f"comment {turn}"}]})
            for step in range(40):
                call = f"call_{turn}_{step}"
                body = "\n".join(
                    f"{turn}:{step}:{n} def handler_{n}(request): return render(request, 'x')"
                    for n in range(300)
                )
                name, arguments = ("read", {"path": f"src/m{step}.py"})
                if step % 4 == 1:
                    name, arguments = ("write", {"path": f"src/m{step}.py", "content": body})
                add(
                    {
                        "role": "assistant",
                        "api": "anthropic-messages",
                        "usage": usage,
                        "stopReason": "toolUse",
                        "content": [
                            {
                                "type": "thinking",
                                "thinking": "plan " * 200,
                                "thinkingSignature": "S" * 800,
                            },
                            {"type": "toolCall", "id": call, "name": name, "arguments": arguments},
                        ],
                    }
                )
                content: list[dict[str, object]] = [{"type": "text", "text": body}]
                if step == 39:
                    image = base64.b64encode(os.urandom(200_000)).decode()
                    content.append({"type": "image", "data": image, "mimeType": "image/png"})
                add(
                    {
                        "role": "toolResult",
                        "toolCallId": call,
                        "toolName": name,
                        "content": content,
                        "isError": False,
                    }
                )
            add(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "done"}],
                    "stopReason": "stop",
                }
            )


def synthetic_claude_session(path: Path, size_mb: int) -> None:
    """A Claude Code transcript: turns of Read and Edit calls whose results carry the file in
    the tool_result and again in toolUseResult (originalFile, file.content), signed thinking,
    and one screenshot per turn, until size_mb."""
    target = size_mb * MB
    written = 0
    parent: str | None = None
    counter = 0
    with open(path, "wb") as out:

        def add(kind: str, message: dict[str, object], **extra: object) -> None:
            nonlocal parent, counter, written
            counter += 1
            uuid = f"00000000-0000-4000-8000-{counter:012x}"
            line = orjson.dumps(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "type": kind,
                    "message": message,
                    "uuid": uuid,
                    "timestamp": "2026-03-01T10:00:00.000Z",
                    "sessionId": "bench-session",
                    **extra,
                }
            )
            out.write(line + b"\n")
            written += len(line) + 1
            parent = uuid

        turn = 0
        while written < target:
            turn += 1
            add("user", {"role": "user", "content": f"comment {turn}"})
            for step in range(40):
                call = f"toolu_{turn}_{step}"
                body = "\n".join(
                    f"{turn}:{step}:{n} def handler_{n}(request): return render(request, 'x')"
                    for n in range(300)
                )
                name = "Edit" if step % 4 == 1 else "Read"
                arguments = {"file_path": f"src/m{step}.py"}
                if name == "Edit":
                    arguments |= {"old_string": body[:4000], "new_string": body[:4000] + "#"}
                message_id = f"msg_{turn}_{step}"
                add(
                    "assistant",
                    {
                        "id": message_id,
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "plan " * 200, "signature": "S" * 800}
                        ],
                    },
                )
                add(
                    "assistant",
                    {
                        "id": message_id,
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": call, "name": name, "input": arguments}
                        ],
                    },
                )
                content: list[dict[str, object]] = [{"type": "text", "text": body}]
                if step == 39:
                    image = base64.b64encode(os.urandom(200_000)).decode()
                    content.append(
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": image},
                        }
                    )
                ui: dict[str, object] = {
                    "type": "text",
                    "file": {"filePath": arguments["file_path"], "content": body},
                }
                if name == "Edit":
                    ui = {
                        "filePath": arguments["file_path"],
                        "originalFile": body,
                        "structuredPatch": [],
                    }
                add(
                    "user",
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": call, "content": content}
                        ],
                    },
                    toolUseResult=ui,
                )
            add(
                "assistant",
                {
                    "id": f"msg_{turn}_end",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "done"}],
                },
            )


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def max_rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux reports KiB


def cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def measure(repo_root: Path, session: Path, keep_turns: int) -> dict[str, float]:
    repo = Repository(repo_root)
    size = session.stat().st_size
    config = defaults()
    start, start_cpu = time.perf_counter(), cpu_s(resource.RUSAGE_SELF)
    with Compression(repo) as run:
        report = run.add(session, config, keep_turns=keep_turns, force=True)
        run.finish()
    compress_s = time.perf_counter() - start
    compress_cpu_s = cpu_s(resource.RUSAGE_SELF) - start_cpu
    start, start_cpu = time.perf_counter(), cpu_s(resource.RUSAGE_SELF)
    with open(os.devnull, "wb") as sink:
        restored = restore_to_stream(repo, session, config["archive.ref"], sink)
    restore_s = time.perf_counter() - start
    restore_cpu_s = cpu_s(resource.RUSAGE_SELF) - start_cpu
    repo.close()
    assert restored == size, "restore must give back every byte"
    return {
        "size_mb": size / MB,
        "after_mb": report.bytes_after / MB,
        "compress_s": compress_s,
        "compress_mbps": size / MB / compress_s,
        # This process's own CPU time: what the wall time is on an idle machine, where git's
        # zlib runs in parallel on another core; the figure to compare on a busy machine.
        "compress_cpu_mbps": size / MB / compress_cpu_s,
        "restore_s": restore_s,
        "restore_mbps": size / MB / restore_s,
        "restore_cpu_mbps": size / MB / restore_cpu_s,
    }


def prepared_repo(
    folder: Path, source: Path | None, size_mb: int, *, claude: bool = False
) -> tuple[Path, Path]:
    root = folder / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.name", "bench")
    git(root, "config", "user.email", "bench@example.invalid")
    session = root / ".GITCLAW" / "state" / "sessions" / "s.jsonl"
    session.parent.mkdir(parents=True)
    if source is None:
        (synthetic_claude_session if claude else synthetic_session)(session, size_mb)
    else:
        session.write_bytes(source.read_bytes())
    git(root, "add", "-A")
    git(root, "commit", "-qm", "agent run")
    return root, session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--keep-turns", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each synthetic file")
    parser.add_argument("--skip-floor", action="store_true", help="no CPU-against-floor part")
    options = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    header = (
        f"{'input':<44} {'MB':>7} {'after':>7} {'compress':>13} {'restore':>13}"
        "   (MB per CPU second of this process: compress, restore)"
    )
    print(header)
    rows: list[tuple[str, dict[str, float]]] = []
    spread: list[str] = []
    base_rss = max_rss_mb(resource.RUSAGE_SELF)
    for label, claude in (("pi", False), ("Claude Code", True)):
        runs = []
        for _ in range(options.repeat):  # a fresh repository each time
            with tempfile.TemporaryDirectory() as folder:
                root, session = prepared_repo(Path(folder), None, options.size_mb, claude=claude)
                runs.append(measure(root, session, options.keep_turns))
        runs.sort(key=lambda run: run["compress_mbps"])
        rows.append((f"synthetic {label} {options.size_mb} MB, median", runs[len(runs) // 2]))
        spread.append(
            f"{label}: compress {runs[0]['compress_mbps']:.1f} to "
            f"{runs[-1]['compress_mbps']:.1f} MB/s over {len(runs)} runs"
        )
        if not claude:
            peak = max_rss_mb(resource.RUSAGE_SELF)
            children = max_rss_mb(resource.RUSAGE_CHILDREN)
    for name, row in rows:
        print(
            f"{name:<44} {row['size_mb']:>7.1f} {row['after_mb']:>7.1f} "
            f"{row['compress_mbps']:>8.1f} MB/s {row['restore_mbps']:>8.1f} MB/s"
            f"   ({row['compress_cpu_mbps']:.1f}, {row['restore_cpu_mbps']:.1f})"
        )
    print(
        f"peak RSS: {peak:.0f} MB (before compress {base_rss:.0f} MB, so +{peak - base_rss:.0f} MB "
        f"for a {rows[0][1]['size_mb']:.0f} MB file); largest git child: {children:.0f} MB"
    )
    print("spread (a shared VM varies by a third from run to run): " + "; ".join(spread))
    if CORPUS.is_dir():
        total_in = total_c = total_r = 0.0
        sources = [
            path for kind in CORPUS_FORMATS for path in sorted((CORPUS / kind).glob("*.jsonl"))
        ]
        for source in sources:
            with tempfile.TemporaryDirectory() as folder:
                root, session = prepared_repo(Path(folder), source, 0)
                row = measure(root, session, 1)
            total_in += row["size_mb"]
            total_c += row["compress_s"]
            total_r += row["restore_s"]
            label = f"{source.parent.name}/{source.name}"
            print(
                f"{label[:44]:<44} {row['size_mb']:>7.2f} {row['after_mb']:>7.2f} "
                f"{row['compress_mbps']:>8.1f} MB/s {row['restore_mbps']:>8.1f} MB/s"
            )
        print(
            f"{'corpus (keep-turns 1), total':<44} {total_in:>7.2f} {'':>7} "
            f"{total_in / total_c:>8.1f} MB/s {total_in / total_r:>8.1f} MB/s"
        )
    if not options.skip_floor:
        print()
        cpu_floor.report(options.size_mb, options.repeat)


if __name__ == "__main__":
    main()
