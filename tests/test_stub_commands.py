"""The command a stub names, run the way the agent runs it: its bash tool, in its checkout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import orjson
from flow_helpers import (
    SESSIONS,
    commit_all,
    git,
    json_strings,
    make_origin,
    ok,
    path_with,
    session_bytes,
    shim_bin,
    write,
)

SESSION = f"{SESSIONS}/2026-02-20T11-44-20-711Z_0b1f6c29.jsonl"
COMMAND = re.compile(r"Full (?:output|call|entry): (gitclaw-compress show [^\n]+)")


def stub_commands(data: bytes) -> dict[str, str]:
    """entry id -> the command its stubs name, as the model reads it in the stub text."""
    found: dict[str, str] = {}
    for line in data.split(b"\n"):
        if b"gitclawCompress" not in line:
            continue
        entry = orjson.loads(line)
        for text in json_strings(entry["message"]):
            for command in COMMAND.findall(text):
                assert found.setdefault(entry["id"], command) == command
    return found


def agent_bash(command: str, cwd: Path, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=path_with(bin_dir),
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_in_a_stub_prints_the_full_content(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    session = write(origin.work / SESSION, session_bytes(3))
    originals = {
        orjson.loads(line)["id"]: orjson.loads(line)
        for line in session.read_bytes().split(b"\n")[1:]
        if line
    }
    commit_all(origin.work)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    commit_all(origin.work, "compressed")
    origin.push("main", "refs/gitclaw/*:refs/gitclaw/*")
    commands = stub_commands(session.read_bytes())
    assert len(commands) >= 4
    bin_dir = shim_bin(tmp_path / "bin")

    # A tool output: the stub kept a preview; the command gives back every line.
    result_id, command = next(
        (entry_id, command)
        for entry_id, command in commands.items()
        if originals[entry_id]["message"]["role"] == "toolResult"
        and "file0 line 199" in originals[entry_id]["message"]["content"][0]["text"]
    )
    assert command == f"gitclaw-compress show {SESSION} {result_id}"
    full = originals[result_id]["message"]["content"][0]["text"]
    assert full not in session.read_text()

    # The agent's next run: a fresh `--depth 1` checkout, bash from the repository root
    # and from a folder below it.
    checkout = origin.clone(tmp_path / "agent-checkout", "--depth", "1")
    for cwd in (checkout, checkout / ".GITCLAW"):
        done = agent_bash(command, cwd, bin_dir)
        assert done.returncode == 0, done.stderr
        assert full in done.stdout

    # Every stub's command works, and prints the parts that the stub left out.
    for entry_id, command in commands.items():
        done = agent_bash(command, checkout, bin_dir)
        assert done.returncode == 0, (command, done.stderr)
        message = originals[entry_id]["message"]
        for block in message.get("content", []):
            if block.get("type") == "text" and block["text"].strip():
                assert block["text"] in done.stdout
            if block.get("type") == "toolCall":
                for value in block["arguments"].values():
                    if isinstance(value, str) and len(value) > 100:
                        assert value in done.stdout
    assert git(checkout, "status", "--porcelain") == ""  # show changed nothing
