"""The README's pre-commit snippet, copied as it stands, with the real pre-commit.

Only the repository URL is replaced (by a local clone of this project, as the README's
OWNER placeholder asks); `rev:` and the commands that pin it and install the hooks are
taken from the README verbatim. Then a commit is compressed by the hook, and a plain
`git push` sends the archive, so a depth-1 clone of the remote restores byte for byte.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from flow_helpers import (
    PROJECT,
    SESSIONS,
    commit_all,
    git,
    init,
    marker_count,
    needs_pre_commit,
    ok,
    pre_commit_exe,
    session_bytes,
    write,
)

pytestmark = needs_pre_commit
PLACEHOLDER = "https://github.com/OWNER/gitclaw-compress"
SESSION = f"{SESSIONS}/issue-1.jsonl"


def readme_block(marker: str, language: str) -> str:
    """The fenced block that follows `<!-- marker` in the README."""
    readme = (PROJECT / "README.md").read_text()
    found = re.search(
        rf"<!-- {re.escape(marker)}[^>]*-->\n```{language}\n(.*?)```", readme, flags=re.S
    )
    assert found, f"README.md has no {language} block after <!-- {marker} -->"
    return found.group(1)


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=False)


def test_the_readme_snippet_works_as_copied(
    tmp_path: Path,
    hook_source: tuple[Path, str],
    pre_commit_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRE_COMMIT_HOME", str(pre_commit_home))
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    source, source_commit = hook_source
    snippet = readme_block("pre-commit-snippet", "yaml")
    assert PLACEHOLDER in snippet
    commands = [
        line for line in readme_block("pre-commit-commands", "sh").splitlines() if line.strip()
    ]
    assert commands and all(line.startswith("pre-commit ") for line in commands)

    bare = init(tmp_path / "origin.git", bare=True)
    repo = init(tmp_path / "agent-repo")
    git(repo, "remote", "add", "origin", bare.as_uri())
    write(repo / ".pre-commit-config.yaml", snippet.replace(PLACEHOLDER, str(source)).encode())
    # Small sessions of the test: compress from 1 KiB and keep one turn.
    write(
        repo / "compression.json",
        b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}',
    )
    for line in commands:
        argv = shlex.split(line)
        done = run(repo, pre_commit_exe(), *argv[1:])
        assert done.returncode == 0, f"{line}: {done.stdout}{done.stderr}"
    pinned = (repo / ".pre-commit-config.yaml").read_text()
    assert f"rev: {source_commit}" in pinned, pinned  # pinned to the full commit sha
    commit_all(repo, "pre-commit config")

    original = session_bytes(6)
    write(repo / SESSION, original)
    git(repo, "add", SESSION)
    first = run(repo, "git", "commit", "-qm", "agent run")
    assert first.returncode != 0
    assert "files were modified by this hook" in first.stdout + first.stderr
    assert marker_count((repo / SESSION).read_bytes()) > 0
    git(repo, "add", SESSION)
    second = run(repo, "git", "commit", "-qm", "agent run")
    assert second.returncode == 0, second.stdout + second.stderr

    pushed = run(repo, "git", "push", "-q", "origin", "main")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert (
        git(bare, "rev-parse", "refs/gitclaw/archive").strip()
        == git(repo, "rev-parse", "refs/gitclaw/archive").strip()
    )
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", bare.as_uri(), clone.name)
    ok(clone, "restore", SESSION)
    assert (clone / SESSION).read_bytes() == original
