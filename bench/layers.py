"""`status`, `context` and `prune` on every corpus file of every format. A script, not a test.

    python bench/layers.py [--json]

For each format, every file of ../shared/corpus/<format>/ (or of the folder that
`GITCLAW_TEST_CORPUS` names; a format whose folder is absent
is skipped) is committed into a fresh git repository at a path of that format's default
layout (below), and the commands themselves are run there, default settings:

- `context --all --json`: the messages the context holds (`active_messages`);
- `status --all --json`: the context tokens and their `source` (recorded usage, usage plus
  an estimate of what follows it, or an estimate), the recorded usage itself, the chars4
  estimate of every message sent, the model, its window and usable tokens, the level, and
  what `prune` and `prune --target` would save (`savings`: context tokens and bytes);
- `status --all --json` again with `prune.minimumTokens` 0 and `prune.targetPercent` 5, to
  show what budget pruning and target mode do where the defaults leave the file alone;
- `status --all --json` again with `tokens.estimator` o200k, when `toktok-rs` is installed.

Prints one table per format, or (`--json`) one document with every number.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from shared_corpus import CORPUS

# Where each format's file goes in the repository ({name}: the corpus file's name).
LAYOUT = {
    "pi": ".GITCLAW/state/sessions/{name}",
    "claude": ".claude/projects/-repo/{name}",
    "codex": ".codex/sessions/2026/03/30/rollout-{stem}.jsonl",
    "copilot": ".copilot/session-state/{stem}/events.jsonl",
}
# The second run: budget pruning without its minimum, and target mode at 5% of the usable
# context, to show what each would do where the defaults decide to do nothing.
EAGER = {"prune": {"minimumTokens": 0, "targetPercent": 5}}
RULE_CACHE = "GITCLAW_COMPRESS_RULE_CACHE"
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def o200k_installed() -> bool:
    from gitclaw_compress.tokens.estimate import o200k_available

    return o200k_available()


def run(repo: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        check=True,
    )
    document: dict[str, Any] = orjson.loads(done.stdout)
    return document


def by_path(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(one["path"]): one for one in document["files"]}


def measure(kind: str, o200k: bool) -> list[dict[str, Any]]:
    """One row per corpus file of `kind`: what the three commands report on it."""
    files = sorted((CORPUS / kind).glob("*.jsonl"))
    if not files:
        return []
    with tempfile.TemporaryDirectory(prefix=f"layers-{kind}-") as temp:
        root = Path(temp)
        repo, home = root / "repo", root / "home"
        repo.mkdir()
        home.mkdir()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), **GIT_ENV}
        if RULE_CACHE in os.environ:  # compiled secret rules, shared: the figures are the same
            env[RULE_CACHE] = os.environ[RULE_CACHE]
        subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
        names: dict[str, str] = {}
        for source in files:
            rel = LAYOUT[kind].format(name=source.name, stem=source.stem)
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, repo / rel)
            names[rel] = source.stem
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", "sessions"], cwd=repo, env=env, check=True)
        status = by_path(run(repo, env, "status", "--all", "--json"))
        context = by_path(run(repo, env, "context", "--all", "--json"))
        eager_config = root / "eager.json"
        eager_config.write_bytes(orjson.dumps(EAGER))
        eager = by_path(run(repo, env, "status", "--all", "--json", "--config", str(eager_config)))
        exact: dict[str, dict[str, Any]] = {}
        if o200k:
            config = root / "o200k.json"
            config.write_bytes(b'{"tokens": {"estimator": "o200k"}}')
            exact = by_path(run(repo, env, "status", "--all", "--json", "--config", str(config)))
    return [
        row(kind, names[rel], status[rel], context[rel], eager[rel], exact.get(rel))
        for rel in names
    ]


def saving(document: dict[str, Any], name: str) -> dict[str, Any]:
    one = document["savings"][name]
    return {
        "tokens": one["tokens_saved"],
        "bytes": one["bytes_before"] - one["bytes_after"],
        "lines": one["lines"],
        "decision": one["decision"],
    }


def row(
    kind: str,
    name: str,
    status: dict[str, Any],
    context: dict[str, Any],
    eager: dict[str, Any],
    exact: dict[str, Any] | None,
) -> dict[str, Any]:
    if "error" in status or "error" in context:
        return {"format": kind, "file": name, "error": status.get("error") or context["error"]}
    return {
        "format": kind,
        "file": name,
        "bytes": status["savings"]["prune"]["bytes_before"],
        "messages": context["totals"]["active_messages"],
        "context_tokens": status["context_tokens"],
        "source": status["source"],
        "usage_tokens": status["usage_tokens"],
        "trailing_tokens": status["trailing_tokens"],
        "chars4": status["estimated_tokens"],
        "o200k": exact["estimated_tokens"] if exact else None,
        "model": status["model"],
        "limits_source": status["limits_source"],
        "context_window": status["context_window"],
        "usable_tokens": status["usable_tokens"],
        "percent": status["percent"],
        "level": status["level"],
        "prune": saving(status, "prune"),
        "target": saving(status, "target"),
        "prune_without_minimum": saving(eager, "prune"),
        "target_at_5_percent": saving(eager, "target"),
    }


def ratio(estimate: int | None, context: int) -> str:
    return f"{estimate / context:.2f}" if estimate is not None and context else "-"


def number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def print_table(kind: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{kind}: the context")
    print(
        f"  {'file':<38} {'msgs':>5} {'context':>8} {'source':<14} {'usage':>8} "
        f"{'chars4':>8} {'o200k':>8} {'c4/ctx':>6} {'o2/ctx':>6}  {'model':<22} "
        f"{'window':>9} {'usable':>9} {'%':>5} level"
    )
    for one in rows:
        if "error" in one:
            print(f"  {one['file'][:38]:<38} {one['error']}")
            continue
        context = one["context_tokens"]
        print(
            f"  {one['file'][:38]:<38} {one['messages']:>5} {context:>8,} "
            f"{one['source']:<14} {number(one['usage_tokens']):>8} {number(one['chars4']):>8} "
            f"{number(one['o200k']):>8} {ratio(one['chars4'], context):>6} "
            f"{ratio(one['o200k'], context):>6}  {str(one['model'])[:22]:<22} "
            f"{one['context_window']:>9,} {one['usable_tokens']:>9,} {one['percent']:>5} "
            f"{one['level']}"
        )
    print(f"{kind}: what prune would save (context tokens / bytes)")
    print(
        f"  {'file':<38} {'prune':>20} {'prune --target':>20} {'minimum 0':>20} {'target 5%':>20}"
    )
    for one in rows:
        if "error" in one:
            continue
        cells = [
            f"{one[key]['tokens']:,} / {one[key]['bytes']:,}"
            for key in ("prune", "target", "prune_without_minimum", "target_at_5_percent")
        ]
        print(f"  {one['file'][:38]:<38} " + " ".join(f"{cell:>20}" for cell in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"no corpus at {CORPUS}")
    o200k = o200k_installed()
    results = {kind: measure(kind, o200k) for kind in LAYOUT}
    results = {kind: rows for kind, rows in results.items() if rows}
    if args.json:
        sys.stdout.write(orjson.dumps({"formats": results}, option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
        return
    print(
        "each file committed at its format's default location; default settings "
        "(minimum 0, target 5%: prune.minimumTokens 0, prune.targetPercent 5); "
        f"o200k {'installed' if o200k else 'not installed'}"
    )
    for kind, rows in results.items():
        print_table(kind, rows)


if __name__ == "__main__":
    main()
