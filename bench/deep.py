"""Deep compression on every corpus file, end to end. A script, not a test: it prints numbers.

    python bench/deep.py [--keep-turns 1] [--summarized [--summary-keep-tokens K]] [--resume]
                         [--breakdown] [--cozempic] [--json] [--deep-kept-max-bytes N]
                         [--formats pi claude codex copilot]

For each file of ../shared/corpus/{pi,claude,codex,copilot}, committed into a fresh git
repository where its agent keeps it, the real command line is run twice: `compress --force
--keep-turns N` (the defaults) and, in a second repository, the same with `--deep`. For the
deep run it checks what the issue asks:

- a second `compress --deep` changes nothing (the file's bytes are the same);
- after `git gc --prune=now`, `restore -o -` gives the original byte for byte;
- with `--summarized`, each file first gets its agent's own compaction record from `summarize`
  at its defaults (what the agent's own compaction keeps: pi the newest 20,000 estimated
  tokens, Claude Code and Copilot CLI nothing, Codex the newest requests copied; or
  `--summary-keep-tokens K`; Copilot CLI always `--keep-turns 0`, the only cut it resumes
  from), its summary written by the
  tests' fake LLM server (an OpenAI-compatible one that answers with a summary of the most
  `summary.max_tokens` allows, about 6,000 characters), and committed; the byte figures are
  then against the summarized file. A file `summarize` refuses is reported with its reason and
  not measured. With `--resume` the unsummarized file is resumed too: `after summarize` is
  what `summarize` then `compress` cut from the request the real CLI sends for the file as it
  was;
- with `--resume`, the agent's real CLI (tests/agent_harness.py, offline against the fake
  LLM server that applies the APIs' rules) resumes the original, the default and the deep
  file: the same number of messages and the same tool calls, in order, every signed block
  sent as before; it prints the bytes of the messages (`messages` or `input`) of each
  request, and of the whole request (system prompt and tools too);
- with `--breakdown` (Claude Code files, implies `--resume`), what the deep file's request
  holds, in bytes of JSON by category: `claude`'s own (system prompt, tools, its environment
  message and the new prompt), the kept turn (from the newest prompt a person typed), and in
  older turns the compaction summary, user and assistant text, tool-call inputs and tool
  results whole, our stubs (in results, inputs and text), the messages Claude Code makes of
  attachment lines (system role), thinking, and the JSON around them;
- with `--cozempic` (Claude Code files), Cozempic (PyPI `cozempic`, a lossy pruner) is
  installed in a temporary virtual environment, run with a temporary HOME and its telemetry,
  auto-update and init off (`cozempic treat FILE -rx standard --execute`) on the same file,
  and measured the same way (with `--resume`, its resumed request too).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from shared_corpus import CORPUS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
FORMATS = ("pi", "claude", "codex", "copilot")
LAYOUT = {
    "pi": ".GITCLAW/state/sessions/{stem}.jsonl",
    "claude": ".claude/projects/-home-runner-work-demo-demo/{stem}.jsonl",
    "codex": ".codex/sessions/2026/03/30/rollout-{stem}.jsonl",
    "copilot": "state/copilot/.copilot/session-state/{stem}/events.jsonl",
}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()}")
    return done.stdout


def _tool(args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    return _run([sys.executable, "-m", "gitclaw_compress", *args], cwd, env)


def _repository(root: Path, kind: str, source: Path, env: dict[str, str]) -> tuple[Path, str]:
    root.mkdir()
    _run(["git", "init", "-q"], root, env)
    relpath = LAYOUT[kind].format(stem=source.stem)
    (root / relpath).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, root / relpath)
    # The corpus's one finding (a `.env` token the cc-test transcript printed) would hold the
    # session: accept it, as its owner would (docs/secrets.md).
    _tool(["scan", relpath, "--accept-all"], root, env)
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "agent run"], root, env)
    return root, relpath


# The summary the fake LLM writes: as long as `summary.max_tokens` (1,500) lets a real one be,
# at about four characters a token.
SUMMARY_TEXT = "## What was accomplished\n" + "The parser was ported and its tests fixed. " * 140
SUMMARY_KEY_ENV = "GITCLAW_BENCH_SUMMARY_KEY"


class Refused(Exception):
    """`summarize` wrote nothing for this file: its reason."""


def _summarize(
    kind: str, repo: Path, relpath: str, url: str, env: dict[str, str], keep_tokens: int | None
) -> None:
    """`summarize` at its defaults (Copilot CLI: nothing kept), its summary from the fake LLM
    server at `url`; the record committed."""
    summary = {
        "provider": "openai",
        "base_url": url + "/v1",
        "model": "bench-model",
        "api_key_env": SUMMARY_KEY_ENV,
        "max_retries": 0,
    }
    (repo / "compression.json").write_bytes(orjson.dumps({"summary": summary}))
    keep = ["--keep-tokens", str(keep_tokens)] if keep_tokens is not None else []
    keep = ["--keep-turns", "0"] if kind == "copilot" else keep
    own = {**env, SUMMARY_KEY_ENV: "bench-" + "summary-key"}
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "summarize", "--json", *keep, relpath],
        cwd=repo,
        env=own,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise Refused(done.stderr.decode().strip().splitlines()[-1])
    report = orjson.loads(done.stdout)
    if report.get("status") != "summarized":
        raise Refused(f"{report.get('status')}: {report.get('reason', '')}".strip())
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-qm", "summarized"], repo, env)


def measure(
    kind: str,
    source: Path,
    keep: int,
    work: Path,
    env: dict[str, str],
    *,
    llm: str | None,
    summary_keep_tokens: int | None = None,
    deep_kept_max_bytes: int | None = None,
) -> dict[str, Any]:
    """Compressed by default and with `--deep`, each in its own repository; with `llm` (the
    fake LLM server's address), summarized first; `deep_kept_max_bytes`, the deep run's
    `session.deepKeptMaxBytes`."""
    files: dict[str, Path] = {"original": source}
    result: dict[str, Any] = {}
    for mode, extra in (("default", []), ("deep", ["--deep"])):
        repo, relpath = _repository(work / mode, kind, source, env)
        if llm is not None:
            _summarize(kind, repo, relpath, llm, env, summary_keep_tokens)
            files["unsummarized"] = source
            files["original"] = work / f"summarized{source.suffix}"
            shutil.copyfile(repo / relpath, files["original"])
        original = (repo / relpath).read_bytes()
        result["bytes"] = len(original)
        if mode == "deep" and deep_kept_max_bytes is not None:
            config = repo / "compression.json"
            settings = orjson.loads(config.read_bytes()) if config.exists() else {}
            settings["session"] = {"deepKeptMaxBytes": deep_kept_max_bytes}
            config.write_bytes(orjson.dumps(settings))
        args = ["compress", "--force", "--keep-turns", str(keep), *extra, relpath]
        _tool(args, repo, env)
        files[mode] = repo / relpath
        result[mode] = files[mode].stat().st_size
        if mode == "deep":
            first = files[mode].read_bytes()
            _tool(args, repo, env)
            result["second_run_changes_nothing"] = files[mode].read_bytes() == first
            _run(["git", "gc", "-q", "--prune=now"], repo, env)
            restored = _tool(["restore", relpath, "-o", "-"], repo, env)
            result["restores_after_gc"] = restored == original
    result["files"] = files
    return result


def resume(kind: str, files: dict[str, Path], work: Path) -> dict[str, Any]:
    """The real CLI's first request on resume of the original, default and deep files (and,
    after `summarize`, of the unsummarized one)."""
    from agent_harness import run_resume
    from fake_llm_sse import conversation, sealed_reasoning, tool_call_ids
    from test_claude_context import settings_only  # the effort message of Claude Code 2.1.332

    sent: dict[str, Any] = {}
    bodies = {}
    for mode, path in files.items():
        run = run_resume(kind, path, tmp_path=work / f"resume-{mode}").check()
        bodies[mode] = run.body
        sent[f"messages_{mode}"] = len(orjson.dumps(conversation(run.body)))
        sent[f"request_{mode}"] = len(orjson.dumps(run.body))
        if mode == "deep" and kind == "claude":  # an Anthropic message needs content
            sent["empty_messages"] = sum(
                1
                for message in conversation(run.body)
                if not message.get("content") and not settings_only(message)
            )
    if kind == "claude":
        sent["breakdown"] = request_breakdown(bodies["deep"])
    before, after = bodies["original"], bodies["deep"]
    # Deep drops old thinking whole: every signed block it sends was sent as it is before.
    signed_before = [b for b in sealed_reasoning(before) if not b.endswith(", '', None)")]
    signed_after = [b for b in sealed_reasoning(after) if not b.endswith(", '', None)")]
    signed_after = [b for b in signed_after if b in signed_before] if kind == "pi" else signed_after
    sent["same_messages"] = len(conversation(after)) == len(conversation(before))
    sent["same_tool_calls"] = tool_call_ids(after) == tool_call_ids(before)
    sent["signed_kept"] = all(block in signed_before for block in signed_after)
    return sent


def _content_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


def _typed(message: dict[str, Any]) -> bool:
    """A user message that opens a turn: text a person typed, no tool result."""
    blocks = _content_blocks(message)
    return (
        message.get("role") == "user"
        and not any(block.get("type") == "tool_result" for block in blocks)
        and any(
            block.get("type") == "text" and not block["text"].startswith("<system-reminder>")
            for block in blocks
        )
    )


def request_breakdown(body: dict[str, Any]) -> dict[str, int]:
    """Bytes of a Claude Code request by what they are (see the module's `--breakdown`)."""
    from gitclaw_compress.core.stubs import STUB_PREFIX

    def size(value: object) -> int:
        return len(orjson.dumps(value))

    found: dict[str, int] = {}

    def add(key: str, amount: int) -> None:
        found[key] = found.get(key, 0) + amount

    for key, value in body.items():
        if key != "messages":
            add("claude: system prompt, tools, settings", size(value))
    messages = body.get("messages") or []
    # The last user message is the new prompt; Claude Code's environment a system message.
    prompt = max(i for i, message in enumerate(messages) if message.get("role") == "user")
    typed = [i for i, message in enumerate(messages[:prompt]) if _typed(message)]
    kept_from = typed[-1] if typed else prompt
    for index, message in enumerate(messages):
        if index == prompt or (
            message.get("role") == "system" and b"# Environment" in orjson.dumps(message)[:200]
        ):
            add("claude: environment, new prompt", size(message))
            continue
        if index >= kept_from:
            add("kept turn", size(message))
            continue
        inner = 0
        for block in _content_blocks(message):
            inner += (block_size := size(block))
            add(_category(message.get("role"), block, STUB_PREFIX), block_size)
        add("older: JSON around the blocks", size(message) - inner)
    add("claude: system prompt, tools, settings", size(body) - sum(found.values()))
    return found


def _category(role: object, block: dict[str, Any], stub: str) -> str:
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text"))
        if role == "system":
            return "older: attachments (system messages)"
        if stub in text:
            return "older: stubs of text"
        if role == "assistant":
            return "older: assistant text"
        if "continued from a previous conversation" in text[:300]:
            return "older: compaction summary"
        return "older: reminders" if text.startswith("<system-reminder>") else "older: user text"
    if kind == "tool_use":
        stubbed = stub in str(block.get("input"))
        return "older: tool calls with a stubbed input" if stubbed else "older: tool calls"
    if kind == "tool_result":
        content = orjson.dumps(block.get("content")).decode()
        return "older: stubs of tool results" if stub in content else "older: tool results"
    return f"older: {kind}"


COZEMPIC_ENV = {
    "COZEMPIC_NO_TELEMETRY": "1",
    "COZEMPIC_NO_AUTO_UPDATE": "1",
    "COZEMPIC_NO_AUTO_INIT": "1",
    "COZEMPIC_NO_GLOBAL_INIT": "1",
    "COZEMPIC_NO_RECEIPTS": "1",
    "COZEMPIC_NUDGE_OFF": "1",
}


def install_cozempic(temp: Path, env: dict[str, str]) -> Path:
    """Cozempic in a virtual environment of its own under `temp`: its program."""
    venv = temp / "cozempic-venv"
    _run([sys.executable, "-m", "venv", str(venv)], temp, env)
    _run([str(venv / "bin" / "pip"), "install", "-q", "cozempic"], temp, env)
    shown = _run([str(venv / "bin" / "pip"), "show", "cozempic"], temp, env).decode()
    version = next(line for line in shown.splitlines() if line.startswith("Version:"))
    print(f"Cozempic {version.split()[-1]}", file=sys.stderr, flush=True)
    return venv / "bin" / "cozempic"


def cozempic(program: Path, source: Path, work: Path, env: dict[str, str]) -> Path:
    """A copy of `source` after `cozempic treat -rx standard --execute`, with a HOME of its
    own (Cozempic writes its backups and state there)."""
    home = work / "cozempic-home"
    home.mkdir()
    copy = work / "cozempic" / source.name
    copy.parent.mkdir()
    shutil.copyfile(source, copy)
    own = {**env, **COZEMPIC_ENV, "HOME": str(home)}
    _run([str(program), "treat", str(copy), "-rx", "standard", "--execute"], work, own)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep-turns", type=int, default=1)
    parser.add_argument("--summarized", action="store_true", help="after a compaction record")
    parser.add_argument("--summary-keep-tokens", type=int, help="summarize --keep-tokens K")
    parser.add_argument(
        "--deep-kept-max-bytes", type=int, help="the deep run's session.deepKeptMaxBytes"
    )
    parser.add_argument("--resume", action="store_true", help="resume each file in its CLI")
    parser.add_argument(
        "--breakdown", action="store_true", help="Claude Code: the deep request by category"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--cozempic", action="store_true", help="Claude Code: next to Cozempic")
    options = parser.parse_args()
    options.resume = options.resume or options.breakdown
    if not CORPUS.is_dir():
        raise SystemExit(f"no corpus at {CORPUS}")
    with tempfile.TemporaryDirectory() as temp, contextlib.ExitStack() as stack:
        home = Path(temp) / "home"
        home.mkdir()
        env = {**os.environ, **GIT_ENV, "HOME": str(home)}
        program = install_cozempic(Path(temp), env) if options.cozempic else None
        llm = None
        if options.summarized:
            from fake_llm_http import FakeLLMServer, openai_reply

            llm = stack.enter_context(FakeLLMServer(default=openai_reply(SUMMARY_TEXT))).url
        report = _measure_all(options, Path(temp), env, program, llm)
    if options.json:
        print(orjson.dumps(report).decode())
        return
    for kind in options.formats:
        rows = [row for name, row in report.items() if name.startswith(kind + "/")]
        if rows:
            print(_total(kind, rows, resumed=options.resume))
        if rows and options.breakdown and kind == "claude":
            print(_breakdown(rows))


def _breakdown(rows: list[dict[str, Any]]) -> str:
    """The deep requests' bytes by category, all files together, largest first."""
    found: dict[str, int] = {}
    for row in rows:
        for key, amount in row["breakdown"].items():
            found[key] = found.get(key, 0) + amount
    whole, original = sum(found.values()), sum(row["request_original"] for row in rows)
    lines = [f"the deep requests, {whole:,} bytes of JSON (original {original:,}):"]
    for key, amount in sorted(found.items(), key=lambda item: -item[1]):
        lines.append(f"  {key:<44} {amount:>10,}  {amount / whole:6.1%}")
    return "\n".join(lines)


def _measure_all(
    options: argparse.Namespace,
    temp: Path,
    env: dict[str, str],
    program: Path | None,
    llm: str | None,
) -> dict[str, dict[str, Any]]:
    report: dict[str, dict[str, Any]] = {}
    for kind in options.formats:
        for index, source in enumerate(sorted((CORPUS / kind).glob("*.jsonl"))):
            work = temp / f"{kind}-{index}"
            work.mkdir()
            try:
                row = measure(
                    kind,
                    source,
                    options.keep_turns,
                    work,
                    env,
                    llm=llm,
                    summary_keep_tokens=options.summary_keep_tokens,
                    deep_kept_max_bytes=options.deep_kept_max_bytes,
                )
            except Refused as refused:
                print(f"{kind}/{source.name}: summarize wrote nothing: {refused}", flush=True)
                continue
            files = row.pop("files")
            if program is not None and kind == "claude":
                files["cozempic"] = cozempic(program, files["original"], work, env)
                row["cozempic"] = files["cozempic"].stat().st_size
            if options.resume:
                row.update(resume(kind, files, work))
            report[f"{kind}/{source.name}"] = row
            if not options.json:
                print(_line(f"{kind}/{source.name}", row), flush=True)
    return report


def _total(kind: str, rows: list[dict[str, Any]], *, resumed: bool) -> str:
    total = sum(row["bytes"] for row in rows)
    default, deep = sum(row["default"] for row in rows), sum(row["deep"] for row in rows)
    line = f"{kind + ' (all files)':<50} {total:>10,} default {_cut(total, default)}"
    line += f" deep {_cut(total, deep)}"
    modes = ["default", "deep"]
    if all("cozempic" in row for row in rows):
        line += f" cozempic {_cut(total, sum(row['cozempic'] for row in rows))}"
        modes.append("cozempic")
    if resumed:
        for what in ("messages", "request"):
            sent = sum(row[f"{what}_original"] for row in rows)
            for mode in modes:
                now = sum(row[f"{what}_{mode}"] for row in rows)
                line += f"; {what} {mode} {_cut(sent, now)}"
            if all(f"{what}_unsummarized" in row for row in rows):
                before = sum(row[f"{what}_unsummarized"] for row in rows)
                for mode in modes:
                    now = sum(row[f"{what}_{mode}"] for row in rows)
                    line += f"; {what} after summarize, {mode} {_cut(before, now)}"
    return line


def _cut(before: int, after: int) -> str:
    return f"-{(before - after) / before:.1%}"


def _line(name: str, row: dict[str, Any]) -> str:
    text = (
        f"{name:<50} {row['bytes']:>10,} default {_cut(row['bytes'], row['default'])} "
        f"deep {_cut(row['bytes'], row['deep'])} second run no-op "
        f"{row['second_run_changes_nothing']} restores after gc {row['restores_after_gc']}"
    )
    if "cozempic" in row:
        text += f" cozempic {_cut(row['bytes'], row['cozempic'])}"
    if "messages_original" in row:
        for what in ("messages", "request"):
            sent = row[f"{what}_original"]
            text += f"; {what} sent {sent:,}:"
            for mode in ("default", "deep", "cozempic"):
                if f"{what}_{mode}" in row:
                    text += f" {mode} {_cut(sent, row[f'{what}_{mode}'])}"
            if f"{what}_unsummarized" in row:
                before = row[f"{what}_unsummarized"]
                text += f" (after summarize, against {before:,}:"
                for mode in ("default", "deep"):
                    text += f" {mode} {_cut(before, row[f'{what}_{mode}'])}"
                text += ")"
        text += (
            f"; same messages {row['same_messages']}, tool calls {row['same_tool_calls']}, "
            f"signed kept {row['signed_kept']}"
        )
        if "empty_messages" in row:
            text += f", empty messages {row['empty_messages']}"
    return text


if __name__ == "__main__":
    main()
