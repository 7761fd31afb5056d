"""Every command line we print for the user to paste is shell-quoted when a part of it comes
from the repository (its config, a remote, a URL, a path): pasted into a real shell, a hostile
remote name runs nothing."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
from flow_helpers import (
    SESSIONS,
    commit_all,
    git,
    init,
    make_origin,
    ok,
    session_bytes,
    tool,
    write,
)

SESSION = f"{SESSIONS}/issue-1.jsonl"
HOSTILE = "up$(touch PWNED);touch 'PWNED2' && touch PWNED3"


def pasted_into_a_shell(command: str, where: Path) -> list[str]:
    """Run the printed command in a real shell with `git` and `gitclaw-compress` replaced by
    a recorder; return the words each received. Nothing else may run."""
    bin_dir = where / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("git", "gitclaw-compress"):
        recorder = bin_dir / name
        recorder.write_text(f'#!/bin/sh\nprintf "%s\\0" {name} "$@" > "{where}/argv"\n')
        recorder.chmod(0o755)
    subprocess.run(
        ["sh", "-c", command], cwd=where, env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, check=False
    )
    assert not list(where.glob("PWNED*")), "the pasted command ran text from the repository"
    return (where / "argv").read_bytes().decode().split("\0")[:-1]


def commands_in(text: str) -> list[str]:
    """The command lines a message gives: in backticks, or after `with: ` / `run: ` to the
    end of the line (or of the parentheses it opened)."""
    found = re.findall(r"`([^`]+)`", text)
    for line in text.splitlines():
        match = re.search(r"\((?:with|run): (.*)\)$", line) or re.search(
            r"(?:with|run): (.*)$", line
        )
        if match:
            found.append(match.group(1))
    return [command for command in found if command.startswith(("git ", "gitclaw-compress "))]


def hostile_config(repo: Path) -> None:
    write(repo / "compression.json", orjson.dumps({"archive": {"remote": HOSTILE}}))


def test_a_hostile_remote_name_in_the_config_is_quoted_everywhere_it_is_printed(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    write(origin.work / SESSION, session_bytes(6))
    commit_all(origin.work)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    commit_all(origin.work, "compressed")
    git(origin.work, "push", "-q", "origin", "main")
    clone = origin.clone(tmp_path / "clone", "--depth", "1")
    hostile_config(clone)
    messages = [
        tool(clone, "restore", "-o", "out.jsonl", SESSION).stderr.decode(),
        tool(clone, "verify", SESSION).stdout.decode(),
        tool(clone, "doctor").stdout.decode(),
        tool(clone, "push").stderr.decode(),
        tool(clone, "fetch").stderr.decode(),
    ]
    seen = 0
    for message in messages:
        for command in commands_in(message):
            words = pasted_into_a_shell(command, tmp_path)
            assert words == shlex.split(command)
            if HOSTILE in command or shlex.quote(HOSTILE) in command:
                assert HOSTILE in words, (command, words)
                seen += 1
    assert seen >= 4, messages  # the remote name was printed (quoted) in several places


def test_a_hostile_url_in_the_pre_push_warning_is_quoted(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    write(origin.work / SESSION, session_bytes(6))
    commit_all(origin.work)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    commit_all(origin.work, "compressed")
    target = init(tmp_path / "evil$(touch PWNED).git", bare=True)
    head = git(origin.work, "rev-parse", "HEAD").strip()
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "pre-push", str(target), str(target)],
        cwd=origin.work,
        input=f"refs/heads/main {head} refs/heads/main {'0' * 40}\n".encode(),
        capture_output=True,
        check=False,
    )
    message = done.stderr.decode()
    [command] = commands_in(message)
    assert pasted_into_a_shell(command, tmp_path) == [
        "git",
        "push",
        str(target),
        "refs/gitclaw/archive:refs/gitclaw/archive",
    ]
