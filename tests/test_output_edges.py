"""What the user sees at the edges of output: a reader that goes away (a real pipe closed
early, as `| head` does), usage errors under --json."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import commit_session
from synthetic import big_text, typical_session

from gitclaw_compress.cli import COMMANDS

SESSION = ".GITCLAW/state/sessions/issue-1.jsonl"
EXIT_BROKEN_PIPE = 0  # the reader's choice, not a failure (README: exit codes)


@pytest.fixture
def big_session(repo: Path) -> tuple[Path, str]:
    """A committed, compressed session whose restore, context and one entry are each far
    larger than a pipe's buffer; and the id of that big entry."""
    session = typical_session(turns=40)
    session.user("one more")
    entry_id = session.tool_result("call_huge", "read", big_text("huge", 20000))
    session.assistant({"type": "text", "text": "done"}, stop="stop")
    path = commit_session(repo, SESSION, session.data())
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--force", SESSION],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return path, entry_id


def read_a_little_then_close(repo: Path, *args: str) -> tuple[int, bytes]:
    """Run the tool into a real pipe, read its first bytes, close the pipe (as `head`
    does) while the tool still has a lot to write, and return its exit code and stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert len(process.stdout.read(100)) == 100
    process.stdout.close()
    err = process.stderr.read()
    return process.wait(), err


@pytest.mark.parametrize(
    "args",
    [
        ("restore", "-o", "-", SESSION),
        ("context", SESSION),
        ("context", "--json", SESSION),
        ("show", SESSION, "ENTRY"),
        ("show", "--raw", SESSION, "ENTRY"),
        ("verify", "--json", SESSION, SESSION, SESSION, SESSION),
    ],
    ids=["restore", "context", "context-json", "show", "show-raw", "verify-json"],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(
    repo: Path, big_session: tuple[Path, str], args: tuple[str, ...]
) -> None:
    _, entry_id = big_session
    args = tuple(entry_id if word == "ENTRY" else word for word in args)
    code, err = read_a_little_then_close(repo, *args)
    assert err == b"", err
    assert code == EXIT_BROKEN_PIPE


@pytest.mark.parametrize(
    "args",
    [
        ("compress", "--json", "--bogus"),
        ("compress", "--bogus", "--json"),
        ("restore", "--json"),
        ("verify", "--json", "--keep-turns", "x"),
        ("stats", "--json", "--keep-turns", "x"),
    ],
)
def test_usage_errors_under_json_print_the_json_error(repo: Path, args: tuple[str, ...]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2, done
    document = orjson.loads(done.stdout)
    assert document["ok"] is False and document["exit_code"] == 2
    assert document["error"] and "\n" not in document["error"]
    assert done.stderr.decode().count("\n") == 1, done.stderr
    assert done.stderr.startswith(b"gitclaw-compress: error: ")


def test_usage_errors_without_json_are_one_line_with_the_usage(repo: Path) -> None:
    """As every error: one line (click's own is three: Usage, Try, Error), exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--bogus"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.count(b"\n") == 1, done.stderr
    assert done.stderr.startswith(b"gitclaw-compress: error: no such option '--bogus' (usage: ")
    assert b"gitclaw-compress compress [OPTIONS] [PATHS]..." in done.stderr


@pytest.mark.parametrize("command", [*COMMANDS, ""])
def test_every_command_gives_a_usage_error_in_one_line(repo: Path, command: str) -> None:
    """Every command (and the tool itself), with an option it lacks: one line naming it and
    the command's usage, exit 2; under --json the same as JSON on stdout."""
    words = [command] if command else []
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", *words, "--no-such-option", *extra],
            cwd=repo,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.count(b"\n") == 1, (command, done.stderr)
        assert done.stderr.startswith(b"gitclaw-compress: error: "), done.stderr
        assert b"--no-such-option" in done.stderr and b"--help" in done.stderr
        assert b"Usage:" not in done.stderr and b"Try '" not in done.stderr
        if extra and command:
            document = orjson.loads(done.stdout)
            assert (document["ok"], document["exit_code"]) == (False, 2)


@pytest.mark.parametrize("as_json", [False, True])
def test_issue_with_a_path_is_a_usage_error(
    repo: Path, big_session: tuple[Path, str], as_json: bool
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--issue", "99", SESSION]
        + (["--json"] if as_json else []),
        cwd=repo,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2, done
    if as_json:
        assert orjson.loads(done.stdout)["exit_code"] == 2


def test_a_session_held_open_by_a_writer_gets_exactly_one_line(repo: Path) -> None:
    path = commit_session(repo, SESSION, typical_session(turns=6).data())
    with open(path, "ab"):  # the agent is still running: the file is open for writing
        done = subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "compress", "--force", SESSION],
            cwd=repo,
            capture_output=True,
            check=False,
        )
    assert done.returncode == 0
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitclaw-compress: warning: "), lines
    assert lines[0].endswith("in use by another process; nothing was changed") or (
        "in use by another process (process " in lines[0]
        and lines[0].endswith("; nothing was changed")
    )


def test_push_json_says_nothing_was_pushed_when_the_remote_had_it(
    repo: Path, big_session: tuple[Path, str], tmp_path: Path
) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(bare)], cwd=repo, check=True)

    def push() -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-m", "gitclaw_compress", "push", "--json"],
            cwd=repo,
            capture_output=True,
            check=True,
        )
        document: dict[str, object] = orjson.loads(done.stdout)
        return document

    first = push()
    assert first["pushed"] is True and first["reason"] is None
    again = push()
    assert again["pushed"] is False and again["reason"] == "up-to-date", again
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "push"], cwd=repo, capture_output=True
    )
    assert (
        done.stdout.decode()
        == "nothing to push: origin has this clone's refs/gitclaw/archive already\n"
    )


def test_help_names_every_format_not_pi_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--help"],
        capture_output=True,
        check=True,
    )
    text = " ".join(done.stdout.decode().split())
    assert "pi session files" not in text
    assert "Compress the old turns of agent session files in place" in text
    for name in ("pi", "Claude Code", "Codex", "Copilot CLI"):
        assert name in text


@pytest.mark.parametrize("command", ["verify", "show", "stats", "status", "context"])
def test_a_command_that_changes_nothing_never_says_nothing_was_changed(
    repo: Path, command: str
) -> None:
    """`verify nope.jsonl` ended with "nothing was changed", which it never does anyway;
    commands that write still say it."""
    args = [command, "nope.jsonl", *(["x"] if command == "show" else [])]
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args], cwd=repo, capture_output=True
    )
    assert done.returncode in (2, 3) and done.stderr.count(b"\n") == 1, done.stderr
    assert b"nothing was changed" not in done.stderr, done.stderr
    wrote = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "restore", "nope.jsonl"],
        cwd=repo,
        capture_output=True,
    )
    assert wrote.stderr.endswith(b"no such session file; nothing was changed\n"), wrote.stderr
