"""Sessions too large to load, loaded again: a Copilot CLI events.jsonl over 512 MiB and a
Claude Code transcript with one tool result over 10 MB, each resumed in its real CLI before
and after gitclaw-compress.

    python bench/too_large.py [--workdir DIR] [--copilot-mib 560] [--tool-result-mb 12.8]
                              [--only copilot|claude] [--timeout 900]

Both files are built from corpus content into a temp folder (never into the project):
- Copilot CLI: the corpus session's header, then its turns again and again (each copy with
  ids of its own, bench/synthetic_store.py's Variant, and toolCallIds made unique), every
  tool result grown with corpus text (as `content` and `detailedContent`, which Copilot
  writes twice), until the file is `--copilot-mib` MiB.
- Claude Code: a corpus transcript whose first file read returns `--tool-result-mb` million
  characters of corpus text (in the tool_result and in `toolUseResult`, as Claude Code
  writes a Read).

For each it prints time and peak memory (RSS, from wait4) of: the real CLI's resume of the
file as built (offline, against the local fake LLM server of the tests, as
tests/agent_harness.py runs it), `gitclaw-compress compress` on it where the agent keeps it
(the CLI's HOME holds the agent's own store; the archive is where `stores` keeps it),
`restore -o` with the sha256 of the original, and the CLI's resume of the compressed file.

A script, not a test: it takes minutes and GBs. 1 MiB = 1,048,576 bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from measured import HERMETIC_GIT, Measured, mib, run_measured
from shared_corpus import CORPUS
from synthetic_store import Variant, corpus_sessions

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from agent_harness import (  # noqa: E402 (the tests' folder is not a package)
    COPILOT_XDG_CACHE,
    _cli_env,
    claude_project_dir,
    find_agent,
)
from fake_llm_sse import (  # noqa: E402
    FakeLLMServer,
    RequestChecker,
    check_claude_code_request,
    check_request,
)

# The real APIs refuse a request over the model's context window with HTTP 400 ("prompt is
# too long"); the tests' fake server does not count tokens, so the bench adds that rule, with
# about 4 bytes of request JSON to a token.
CONTEXT_WINDOW = 200_000
TOOL_CALL_ID = re.compile(rb'"(tooluse_[A-Za-z0-9]+|call_[A-Za-z0-9]+|toolu_[A-Za-z0-9]+)"')


def corpus_text() -> str:
    """Every corpus session's text, as one string: the filler of the grown tool results."""
    parts = [
        p.read_text("utf-8", "replace")
        for fmt in ("claude", "codex", "pi")
        for p in corpus_sessions(fmt)
    ]
    return "".join(parts)


def filler(text: str, size: int, offset: int) -> str:
    """`size` characters of `text` from `offset` on, wrapping around."""
    out = []
    while size > 0:
        start = offset % len(text)
        piece = text[start : start + size]
        out.append(piece)
        size -= len(piece)
        offset += len(piece)
    return "".join(out)


# ----------------------------------------------------------------------------------------
# Building the files
# ----------------------------------------------------------------------------------------


def build_copilot(path: Path, target: int) -> str:
    """A Copilot CLI events.jsonl of at least `target` bytes; returns its session id."""
    source = corpus_sessions("copilot")[0].read_bytes().split(b"\n")
    lines = [line for line in source if line]
    head, body = lines[:2], lines[2:]
    session_id = orjson.loads(head[0])["data"]["sessionId"]
    completes = sum(b'"tool.execution_complete"' in line for line in body)
    repeats = 24
    grown = max(0, (target - len(b"\n".join(lines)) * repeats) // (repeats * completes * 2))
    text = corpus_text()
    written = 0
    last_id = orjson.loads(head[-1])["id"]
    offset = 0
    with open(path, "wb") as out:
        for line in head:
            out.write(line + b"\n")
            written += 1
        for repeat in range(repeats):
            variant = Variant(repeat + 1)
            variant._ids[session_id] = session_id  # the session is one session
            for number, line in enumerate(body):
                event = orjson.loads(TOOL_CALL_ID.sub(b'"\\1r%d"' % repeat, line))
                event = variant.value(event)
                if number == 0:
                    event["parentId"] = last_id
                data = event.get("data", {})
                if event["type"] == "session.resume":
                    data["eventCount"] = written + 1
                if event["type"] == "tool.execution_complete" and grown:
                    result = data.get("result")
                    if isinstance(result, dict):
                        extra = filler(text, grown, offset).translate(variant.letters)
                        offset += grown
                        result["content"] = str(result.get("content", "")) + "\n" + extra
                        result["detailedContent"] = (
                            str(result.get("detailedContent", "")) + "\n" + extra
                        )
                last_id = event["id"]
                out.write(orjson.dumps(event) + b"\n")
                written += 1
    return str(session_id)


def build_claude(path: Path, characters: int) -> str:
    """A Claude Code transcript whose first file read returns `characters` characters;
    returns its session id."""
    source = corpus_sessions("claude")
    chosen = next(p for p in source if p.name.startswith("entire-cli"))
    text = corpus_text()
    session_id = ""
    grown = False
    # Only a line some other line names as its parent is on the chain Claude Code resumes
    # (of two parallel tool results, one is a side branch it leaves out).
    parents = set(re.findall(rb'"parentUuid":"([0-9a-f-]{36})"', chosen.read_bytes()))
    with open(path, "wb") as out:
        for line in chosen.read_bytes().split(b"\n"):
            try:
                entry = orjson.loads(line) if line else None
            except orjson.JSONDecodeError:
                entry = None
            if isinstance(entry, dict):
                session_id = session_id or str(entry.get("sessionId", ""))
                result = entry.get("toolUseResult")
                content = (entry.get("message") or {}).get("content")
                if (
                    not grown
                    and str(entry.get("uuid", "")).encode() in parents
                    and isinstance(result, dict)
                    and isinstance(result.get("file"), dict)
                    and isinstance(content, list)
                    and content
                    and isinstance(content[0], dict)
                    and content[0].get("type") == "tool_result"
                ):
                    body = filler(text, characters, 0)
                    content[0]["content"] = body
                    result["file"]["content"] = body
                    result["file"]["numLines"] = body.count("\n") + 1
                    result["file"]["totalLines"] = body.count("\n") + 1
                    line = orjson.dumps(entry)
                    grown = True
            out.write(line + b"\n" if line else b"")
    if not grown:
        raise SystemExit(f"{chosen.name}: no file read to grow")
    return session_id


# ----------------------------------------------------------------------------------------
# Running the CLIs
# ----------------------------------------------------------------------------------------


def within_context(checker: RequestChecker) -> RequestChecker:
    def check(protocol: str | None, body: Any) -> list[str]:
        problems = checker(protocol, body)
        tokens = len(json.dumps(body)) // 4
        if tokens > CONTEXT_WINDOW:
            problems.append(f"prompt is too long: about {tokens} tokens > {CONTEXT_WINDOW}")
        return problems

    return check


# ----------------------------------------------------------------------------------------
# ----------------------------------------------------------------------------------------


@dataclass
class Resume:
    measured: Measured
    requests: int  # LLM requests the fake server got
    request_bytes: int  # the body of the last one
    problems: list[str]

    @property
    def ok(self) -> bool:
        return self.measured.returncode == 0 and self.requests > 0 and not self.problems

    def describe(self) -> str:
        why = ""
        if not self.ok:
            tail = self.measured.output[-600:].decode("utf-8", "replace").strip()
            why = " | " + " ".join(tail.split())[-300:]
        return (
            f"exit {self.measured.returncode}, {self.measured.seconds:.0f} s, peak RSS "
            f"{mib(self.measured.peak_rss)}, {self.requests} LLM request(s)"
            + (f" of {mib(self.request_bytes)}" if self.requests else "")
            + why
        )


def copilot_home(home: Path, session_id: str) -> Path:
    return home / ".copilot" / "session-state" / session_id / "events.jsonl"


def claude_home(home: Path, workdir: Path, session_id: str) -> Path:
    return claude_project_dir(home / ".claude", workdir) / f"{session_id}.jsonl"


def resume(agent: str, home: Path, workdir: Path, session_id: str, timeout: float) -> Resume:
    """The real CLI's non-interactive resume of the session under `home`."""
    binary = find_agent(agent)
    if binary is None:
        raise SystemExit(f"{agent} is not installed (.ci/install-agents.sh)")
    checker = check_claude_code_request if agent == "claude" else check_request
    with FakeLLMServer(checker=within_context(checker)) as server:
        env = {**_cli_env(home)}
        if agent == "copilot":
            env.update(
                XDG_CACHE_HOME=str(COPILOT_XDG_CACHE),
                COPILOT_PROVIDER_BASE_URL=server.url + "/v1",
                COPILOT_PROVIDER_TYPE="openai",
                COPILOT_PROVIDER_API_KEY="x",
                COPILOT_OFFLINE="true",
                COPILOT_MODEL="fake-model",
            )
            argv = [str(binary), f"--resume={session_id}", "-p", "next", "--allow-all-tools"]
        else:
            settings = {
                "hasCompletedOnboarding": True,
                "customApiKeyResponses": {"approved": ["x"], "rejected": []},
                "projects": {str(workdir): {"hasTrustDialogAccepted": True}},
            }
            (home / ".claude" / ".claude.json").write_text(json.dumps(settings))
            env.update(
                CLAUDE_CONFIG_DIR=str(home / ".claude"),
                ANTHROPIC_BASE_URL=server.url,
                ANTHROPIC_API_KEY="x",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                DISABLE_AUTOUPDATER="1",
            )
            argv = [str(binary), "-p", "--resume", session_id, "next", "--output-format", "json"]
        measured = run_measured(argv, cwd=workdir, env=env, timeout=timeout)
        posts = [r for r in server.requests if r["protocol"] is not None and r["method"] == "POST"]
        size = len(json.dumps(posts[-1]["body"])) if posts else 0
        problems = [p for r in posts for p in r["problems"]]
        return Resume(measured, len(posts), size, problems)


# ----------------------------------------------------------------------------------------
# One case
# ----------------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def tool(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitclaw_compress", *args]


def fresh_home(root: Path, name: str) -> tuple[Path, Path]:
    home, workdir = root / name / "home", root / name / "work"
    (home / "tmp").mkdir(parents=True)
    (home / ".claude").mkdir()
    workdir.mkdir()
    return home, workdir


def place(agent: str, built: Path, home: Path, workdir: Path, session_id: str) -> Path:
    target = (
        copilot_home(home, session_id)
        if agent == "copilot"
        else claude_home(home, workdir, session_id)
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, target)
    return target


def steps(agent: str, built: Path, session_id: str, root: Path, timeout: float) -> Iterator[str]:
    """Resume as built; compress in the store; restore; resume after. One line per step."""
    size = built.stat().st_size
    original = sha256(built)
    yield f"built: {mib(size)}"
    home, workdir = fresh_home(root, f"{agent}-before")
    place(agent, built, home, workdir, session_id)
    before = resume(agent, home, workdir, session_id, timeout)
    yield f"resume as built: {before.describe()}"
    shutil.rmtree(root / f"{agent}-before")

    home, workdir = fresh_home(root, f"{agent}-store")
    placed = place(agent, built, home, workdir, session_id)
    # The agent's own store under this HOME; its archive where `stores` keeps it.
    moved = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "PI_CODING_AGENT_DIR")
    env = {key: value for key, value in os.environ.items() if key not in moved}
    env.update(HERMETIC_GIT, HOME=str(home), XDG_DATA_HOME=str(root / "data"))
    compress = run_measured(tool("compress", str(placed)), cwd=home, env=env).check()
    last = compress.output.decode("utf-8", "replace").strip().splitlines()[-1]
    yield (
        f"gitclaw-compress compress: {compress.seconds:.0f} s, peak RSS "
        f"{mib(compress.peak_rss)}: {mib(size)} -> {mib(placed.stat().st_size)} ({last})"
    )
    restored = root / f"{agent}-restored.jsonl"
    restore = run_measured(tool("restore", str(placed), "-o", str(restored)), cwd=home, env=env)
    restore.check()
    same = sha256(restored) == original
    yield (
        f"gitclaw-compress restore -o: {restore.seconds:.0f} s, peak RSS "
        f"{mib(restore.peak_rss)}; byte for byte: {'yes' if same else 'NO'} (sha256)"
    )
    restored.unlink()
    after = resume(agent, home, workdir, session_id, timeout)
    yield f"resume after compress: {after.describe()}"
    if after.ok:
        return
    # Still too much for the model: the agent's own compaction record, written offline.
    summarize = run_measured(tool("summarize", "--offline", str(placed)), cwd=home, env=env)
    summarize.check()
    yield (
        f"gitclaw-compress summarize --offline: {summarize.seconds:.0f} s, peak RSS "
        f"{mib(summarize.peak_rss)}: {mib(placed.stat().st_size)}"
    )
    restore = run_measured(tool("restore", str(placed), "-o", str(restored)), cwd=home, env=env)
    restore.check()
    with open(restored, "rb") as handle:  # summarize appends: the original is the prefix
        prefix = hashlib.sha256()
        remaining = size
        while remaining and (chunk := handle.read(min(remaining, 1 << 20))):
            prefix.update(chunk)
            remaining -= len(chunk)
    same = prefix.hexdigest() == original
    yield (
        f"gitclaw-compress restore -o: {restore.seconds:.0f} s, peak RSS "
        f"{mib(restore.peak_rss)}; the original, byte for byte, then the summary: "
        f"{'yes' if same else 'NO'} (sha256)"
    )
    restored.unlink()
    after = resume(agent, home, workdir, session_id, timeout)
    yield f"resume after summarize: {after.describe()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temp folder)")
    parser.add_argument("--copilot-mib", type=int, default=560)
    parser.add_argument("--tool-result-mb", type=float, default=12.8)
    parser.add_argument("--only", choices=("copilot", "claude"))
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"the corpus is not at {CORPUS}")
    root = args.workdir or Path(tempfile.mkdtemp(prefix="too-large-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"work folder: {root}; {os.cpu_count()} cores (shared)")
    cases: list[tuple[str, Any]] = []
    if args.only in (None, "claude"):
        cases.append(("claude", lambda p: build_claude(p, int(args.tool_result_mb * 1e6))))
    if args.only in (None, "copilot"):
        cases.append(("copilot", lambda p: build_copilot(p, args.copilot_mib << 20)))
    for agent, build in cases:
        print(f"\n## {agent}")
        built = root / f"{agent}-built.jsonl"
        session_id = build(built)
        for line in steps(agent, built, session_id, root, args.timeout):
            print(f"- {line}", flush=True)
        built.unlink()
    if args.workdir is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
