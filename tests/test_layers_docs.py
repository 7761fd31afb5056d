"""docs/layers.md shows `status`, `context` and `prune --dry-run` on a synthetic file of each
format; each example is what the command prints, byte for byte.

Regenerate the examples after a change: `python tests/test_layers_docs.py` rewrites them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from conftest import GIT_ENV, git
from synthetic import typical_session
from synthetic_claude import typical_session as claude_session
from synthetic_codex import typical_rollout
from synthetic_copilot import typical_events

DOC = Path(__file__).resolve().parent.parent / "docs" / "layers.md"

# One synthetic session per format, at its format's default location.
EXAMPLES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "pi": (".GITCLAW/state/sessions/issue-7.jsonl", lambda: typical_session(turns=2).data()),
    "claude": (
        ".claude/projects/-home-dev-project/5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11.jsonl",
        lambda: claude_session(turns=2).data(),
    ),
    "codex": (
        ".codex/sessions/2026/03/30/rollout-2026-03-30T19-22-40-019d417c.jsonl",
        lambda: typical_rollout(turns=2).data(),
    ),
    "copilot": (
        ".copilot/session-state/53c12c90/events.jsonl",
        lambda: typical_events().data(),
    ),
}
# What the prune example runs with, so that these small files have something to prune.
PRUNE_CONFIG = ("prune.json", b'{"prune": {"minimumTokens": 0, "protectTokens": 1000}}\n')
COMMANDS = {
    "status": ("status",),
    "context": ("context",),
    "prune": ("prune", "--dry-run", "--config", PRUNE_CONFIG[0]),
}
BLOCK = re.compile(r"<!-- example: (\w+) (\w+) -->\n```\n(.*?)```\n", re.S)


def outputs(repo: Path) -> dict[tuple[str, str], str]:
    """Each example as the doc shows it: the command line, then what it printed."""
    for path, make in EXAMPLES.values():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(make())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent runs")
    (repo / PRUNE_CONFIG[0]).write_bytes(PRUNE_CONFIG[1])
    found = {}
    for name, (path, _) in EXAMPLES.items():
        for command, args in COMMANDS.items():
            done = subprocess.run(
                [sys.executable, "-m", "gitclaw_compress", *args, path],
                cwd=repo,
                capture_output=True,
                text=True,
                check=True,
            )
            line = shlex.join(["gitclaw-compress", *args, path])
            found[(name, command)] = f"$ {line}\n{done.stdout}"
    return found


def documented() -> dict[tuple[str, str], str]:
    return {(m[1], m[2]): m[3] for m in BLOCK.finditer(DOC.read_text())}


def test_every_format_has_each_example(repo: Path) -> None:
    assert set(documented()) == {(name, command) for name in EXAMPLES for command in COMMANDS}


def test_the_examples_are_what_the_commands_print(repo: Path) -> None:
    shown = documented()
    for key, output in outputs(repo).items():
        assert shown.get(key) == output, f"docs/layers.md: the {key} example is stale"


def rewrite() -> None:
    """Put what the commands print now into docs/layers.md."""
    with tempfile.TemporaryDirectory() as temp:
        home, repo = Path(temp) / "home", Path(temp) / "repo"
        home.mkdir()
        repo.mkdir()
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        os.environ.update({**GIT_ENV, "HOME": str(home), "XDG_CONFIG_HOME": str(home)})
        git(repo, "init", "-q")
        found = outputs(repo)

    def replace(match: re.Match[str]) -> str:
        body = found[(match[1], match[2])]
        return f"<!-- example: {match[1]} {match[2]} -->\n```\n{body}```\n"

    DOC.write_text(BLOCK.sub(replace, DOC.read_text()))


if __name__ == "__main__":
    rewrite()
