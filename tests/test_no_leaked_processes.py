"""No command leaves a git process running behind it. In-process runs (as most tests do
them) used to leave one `git cat-file --batch` per command, waiting on a stdin pipe that the
unreaped Popen kept open, for as long as the test run lasted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import commit_session
from synthetic import typical_session

from gitclaw_compress.cli import cli

SESSION = ".GITCLAW/state/sessions/issue-1.jsonl"


def git_children() -> list[str]:
    """The git processes this process started that still run (zombies excluded)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            command = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == os.getpid() and state != "Z" and command.startswith("git"):
            found.append(command.strip())
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    "args",
    [
        ["compress", "--force", "--keep-turns", "1", SESSION],
        ["verify", SESSION],
        ["restore", "-o", "out.jsonl", SESSION],
        ["show", SESSION, "00000004"],
        ["stats", SESSION],
        ["context", SESSION],
        ["status", SESSION],
        ["doctor"],
        ["restore", "--all"],
    ],
    ids=lambda args: args[0] + ("-all" if "--all" in args else ""),
)
def test_a_command_leaves_no_git_process_behind(
    repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    commit_session(repo, SESSION, typical_session(turns=6).data())
    monkeypatch.chdir(repo)
    runner = CliRunner()
    if args[0] != "compress":
        assert (
            runner.invoke(cli, ["compress", "--force", "--keep-turns", "1", SESSION]).exit_code == 0
        )
    assert git_children() == []
    result = runner.invoke(cli, args)
    assert result.exit_code in (0, 1), result.output
    assert git_children() == []
