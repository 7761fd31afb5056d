"""`show ENTRY_ID` without a path: the session is the one under `sessions.globs` that holds
the id. Stubs name it so for ids unique across sessions (uuids), and keep the path for ids
unique only inside their file (pi's short ids, `L<n>`); stubs written with the path stay
valid and a re-run never rewrites them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from flow_helpers import (
    commit_all,
    git,
    json_strings,
    make_origin,
    ok,
    one_line_error,
    path_with,
    shim_bin,
    tool,
    write,
)
from format_cases import FORMAT_CASES, FormatCase
from synthetic_claude import typical_session as claude_session
from synthetic_copilot import typical_events

from gitclaw_compress.cli import cli
from gitclaw_compress.core import stubs
from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats import detect

COMMAND = re.compile(r'Full (?:output|call|entry): (gitclaw-compress show [^\n"]+)')
# Formats whose entry ids are uuids: their stubs name no path.
WITHOUT_PATH = {"copilot"}  # the formats whose stubs name a uuid alone
BY_SESSION_ID = {"codex"}  # lines without ids, named by the session's id and the line
COPILOT = next(case for case in FORMAT_CASES if case.name == "copilot")
SESSION_A = COPILOT.place("0b1f6c29-aaaa-4000-8000-000000000001")
SESSION_B = COPILOT.place("0b1f6c29-bbbb-4000-8000-000000000002")
# A Claude Code transcript and the copy Entire CLI keeps of it on its checkpoints branch.
CLAUDE_SESSION = ".claude/projects/-home-dev-project/5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11.jsonl"
ENTIRE_COPY = "c0/70516b3fa9/0/full.jsonl"


def stub_commands(data: bytes) -> dict[str, int]:
    """The command every stub of the file names -> the number of the line it stands on."""
    found: dict[str, int] = {}
    for line in lines_from_bytes(data):
        entry = parse_entry(line.data)
        if entry is None or "gitclawCompress" not in entry:
            continue
        for text in json_strings(entry):
            for command in COMMAND.findall(text):
                found.setdefault(command, line.number)
    return found


def agent_bash(command: str, cwd: Path, bin_dir: Path) -> subprocess.CompletedProcess[bytes]:
    """The command as the agent's bash tool runs it."""
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=path_with(bin_dir), capture_output=True, check=False
    )


@pytest.mark.parametrize("case", [pytest.param(case, id=case.name) for case in FORMAT_CASES])
def test_stubs_name_the_path_only_when_the_id_needs_it(case: FormatCase, tmp_path: Path) -> None:
    """Every stub's command, copied into bash in a `--depth 1` clone (at its root and in a
    folder below), prints the original line; uuids go without the path."""
    origin = make_origin(tmp_path)
    _, make = case.synthetic[0]
    original = make()
    relpath = case.place("5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11")
    session = write(origin.work / relpath, original)
    commit_all(origin.work)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", relpath)
    commit_all(origin.work, "compressed")
    origin.push("main", "refs/gitclaw/*:refs/gitclaw/*")
    commands = stub_commands(session.read_bytes())
    assert len(commands) >= 2, commands

    fmt = detect(lines_from_bytes(original), relpath)
    before = lines_from_bytes(original)
    for command, number in commands.items():
        entry = parse_entry(before[number - 1].data)
        entry_id = (fmt.entry_id(entry) if entry else None) or f"L{number}"
        if case.name in WITHOUT_PATH:
            assert command == f"gitclaw-compress show {entry_id}"
        elif case.name in BY_SESSION_ID:
            session_id = fmt.session_id(parse_entry(before[0].data) or {})
            assert command == f"gitclaw-compress show {session_id} {entry_id}"
        else:
            assert command == f"gitclaw-compress show {relpath} {entry_id}"

    checkout = origin.clone(tmp_path / "agent-checkout", "--depth", "1")
    below = checkout / relpath.split("/")[0]
    bin_dir = shim_bin(tmp_path / "bin")
    for index, (command, number) in enumerate(sorted(commands.items())[:3]):
        cwd = below if index % 2 else checkout
        done = agent_bash(f"{command} --raw", cwd, bin_dir)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout == before[number - 1].data + b"\n", command
    assert git(checkout, "status", "--porcelain") == ""  # show changed nothing


def test_show_by_id_prints_text_json_and_raw_of_the_one_session_that_holds_it(
    tmp_path: Path,
) -> None:
    repo = make_origin(tmp_path).work
    data = typical_events().data()
    write(repo / SESSION_A, data)
    # The same bytes outside sessions.globs are not a session: never searched.
    write(repo / "notes" / "events.jsonl", data)
    commit_all(repo)
    line = lines_from_bytes(data)[3]
    entry_id = orjson.loads(line.data)["id"]

    raw = ok(repo / "notes", "show", entry_id, "--raw")
    assert raw.stdout == line.data + b"\n"
    shown = orjson.loads(ok(repo, "show", entry_id, "--json").stdout)
    assert shown["path"] == SESSION_A and shown["entry"] == orjson.loads(line.data)
    assert ok(repo, "show", entry_id).stdout == ok(repo, "show", SESSION_A, entry_id).stdout


def test_in_a_depth_1_clone_show_by_id_fetches_the_archive_once_unless_told_not_to(
    tmp_path: Path,
) -> None:
    origin = make_origin(tmp_path)
    original = typical_events().data()
    session = write(origin.work / SESSION_A, original)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION_A)  # payloads archived
    commit_all(origin.work, "compressed")
    origin.push("main", "refs/gitclaw/*:refs/gitclaw/*")
    command, number = next(iter(stub_commands(session.read_bytes()).items()))
    entry_id = command.split()[-1]
    checkout = origin.clone(tmp_path / "agent-checkout", "--depth", "1")

    refused = one_line_error(tool(checkout, "show", entry_id, "--no-fetch", "--raw"))
    assert refused.startswith(f"gitclaw-compress: error: {SESSION_A}:{number}: ")
    assert "gitclaw-compress fetch" in refused
    done = ok(checkout, "show", entry_id, "--raw")
    assert done.stdout == lines_from_bytes(original)[number - 1].data + b"\n"
    assert done.stderr.decode().count("fetching refs/gitclaw/archive from origin") == 1


def test_a_symlink_to_a_session_is_the_same_session(tmp_path: Path) -> None:
    repo = make_origin(tmp_path).work
    data = typical_events().data()
    write(repo / SESSION_A, data)
    link = repo / SESSION_B
    link.parent.mkdir(parents=True)
    link.symlink_to(repo / SESSION_A)
    commit_all(repo)
    line = lines_from_bytes(data)[3]
    shown = orjson.loads(ok(repo, "show", orjson.loads(line.data)["id"], "--json").stdout)
    assert shown["path"] == SESSION_A


@pytest.mark.parametrize("compressed", [(CLAUDE_SESSION,), (CLAUDE_SESSION, ENTIRE_COPY)])
def test_copies_of_one_session_that_hold_the_id_show_the_entry(
    compressed: tuple[str, ...], tmp_path: Path
) -> None:
    """Entire keeps a copy of the Claude Code transcript beside it: the command a stub names
    prints the entry, in a `--depth 1` clone, whether the copy is compressed or intact."""
    origin = make_origin(tmp_path)
    original = claude_session().data()
    for relpath in (CLAUDE_SESSION, ENTIRE_COPY):
        write(origin.work / relpath, original)
    commit_all(origin.work)
    for relpath in compressed:
        ok(origin.work, "compress", "--force", "--keep-turns", "1", relpath)
    commit_all(origin.work, "compressed")
    origin.push("main", "refs/gitclaw/*:refs/gitclaw/*")
    stubbed = stub_commands((origin.work / CLAUDE_SESSION).read_bytes())
    command, number = sorted(stubbed.items())[0]
    entry_id = command.split()[-1]
    line = lines_from_bytes(original)[number - 1].data
    checkout = origin.clone(tmp_path / "agent-checkout", "--depth", "1")
    both = f"{CLAUDE_SESSION}, {ENTIRE_COPY}"

    raw = ok(checkout, "show", entry_id, "--raw")
    assert raw.stdout == line + b"\n"
    stderr = raw.stderr.decode()
    # The intact copy's blob is the compressed line's original file: nothing to fetch then.
    fetches = 1 if ENTIRE_COPY in compressed else 0
    assert stderr.count("fetching refs/gitclaw/archive from origin") == fetches
    assert f"gitclaw-compress: note: the same entry is in 2 sessions: {both}\n" in stderr
    shown = orjson.loads(ok(checkout, "show", entry_id, "--json").stdout)
    assert shown == {
        "path": CLAUDE_SESSION,
        "entry_id": entry_id,
        "entry": orjson.loads(line),
        "copies": [CLAUDE_SESSION, ENTIRE_COPY],
    }
    text = ok(checkout, "show", entry_id)
    assert text.stdout == ok(checkout, "show", ENTIRE_COPY, entry_id).stdout
    assert text.stdout == ok(checkout, "show", CLAUDE_SESSION, entry_id).stdout
    assert "the same entry is in 2 sessions" in text.stderr.decode()
    assert git(checkout, "status", "--porcelain") == ""  # show changed nothing


def test_a_fork_that_copied_the_lines_shows_the_entry(tmp_path: Path) -> None:
    """A fork starts a new file with the first lines of its parent: an id in those lines is
    in both, with the same entry."""
    repo = make_origin(tmp_path).work
    data = typical_events().data()
    lines = lines_from_bytes(data)
    write(repo / SESSION_A, data)
    write(repo / SESSION_B, b"".join(line.data + b"\n" for line in lines[:8]))
    commit_all(repo)
    ok(repo, "compress", "--force", "--keep-turns", "1", SESSION_A)
    # A stub in the parent, intact in the fork.
    command, number = min(
        stub_commands((repo / SESSION_A).read_bytes()).items(), key=lambda c: c[1]
    )
    assert number <= 8
    entry_id = command.split()[-1]

    done = ok(repo, "show", entry_id, "--raw")
    assert done.stdout == lines[number - 1].data + b"\n"
    assert f"2 sessions: {SESSION_A}, {SESSION_B}\n" in done.stderr.decode()


def test_an_id_whose_entries_differ_is_one_line_naming_the_sessions_and_the_command(
    tmp_path: Path,
) -> None:
    repo = make_origin(tmp_path).work
    data = typical_events().data()  # the same ids in both files
    lines = lines_from_bytes(data)
    changed = lines[3].data.replace(b'"turnId":"0"', b'"turnId":"9"')
    assert changed != lines[3].data
    write(repo / SESSION_A, data)
    write(repo / SESSION_B, data.replace(lines[3].data, changed))
    commit_all(repo)
    entry_id = orjson.loads(lines[3].data)["id"]
    same_id = orjson.loads(lines[2].data)["id"]  # same entry in both: shown
    assert ok(repo, "show", same_id, "--raw").stdout == lines[2].data + b"\n"

    for mode in ((), ("--raw",), ("--json",)):
        done = tool(repo, "show", entry_id, *mode)
        assert done.stdout == b"" or mode == ("--json",), (mode, done.stdout)
        error = one_line_error(done)
        assert error == (
            f"gitclaw-compress: error: 2 sessions hold an entry with id {entry_id!r}: "
            f"{SESSION_A}, {SESSION_B}; the entries differ; name one: "
            f"gitclaw-compress show {SESSION_A} {entry_id}\n"
        )
    command = error.rstrip("\n").split("name one: ")[1]
    named = ok(repo, *command.split()[1:], "--raw")
    assert named.stdout == lines[3].data + b"\n"
    assert ok(repo, "show", SESSION_B, entry_id, "--raw").stdout == changed + b"\n"
    refused = orjson.loads(tool(repo, "show", entry_id, "--json").stdout)
    assert refused["ok"] is False and "the entries differ" in refused["error"]


@pytest.mark.parametrize(
    ("entry_id", "says"),
    [
        ("00000000-0000-4000-8000-0000deadbeef", "no session holds an entry with id"),
        ("L4", "L4 is a line number"),
    ],
)
def test_an_id_no_session_holds_is_one_line_saying_where_it_looked(
    tmp_path: Path, entry_id: str, says: str
) -> None:
    repo = make_origin(tmp_path).work
    write(repo / SESSION_A, typical_events().data())
    commit_all(repo)
    error = one_line_error(tool(repo, "show", entry_id))
    assert says in error
    assert error.endswith(f"give the session path: gitclaw-compress show PATH {entry_id}\n")
    if not entry_id.startswith("L"):
        assert "searched 1 file under sessions.globs" in error


def test_a_session_compressed_by_its_path_outside_the_globs_is_found_by_its_stubs(
    tmp_path: Path,
) -> None:
    """`compress PATH` takes a session wherever it is; its uuid stubs name no path either,
    so `show ID` looks at the work tree's other .jsonl files when no session under
    sessions.globs holds the id: the stub's command works in a `--depth 1` clone too."""
    origin = make_origin(tmp_path)
    original = typical_events().data()
    relpath = "logs/copilot/events.jsonl"  # under no default glob
    session = write(origin.work / relpath, original)
    commit_all(origin.work)
    ok(origin.work, "compress", "--force", "--keep-turns", "1", relpath)
    commit_all(origin.work, "compressed")
    origin.push("main", "refs/gitclaw/*:refs/gitclaw/*")
    command, number = sorted(stub_commands(session.read_bytes()).items())[0]
    assert command.split()[2:] == [command.split()[-1]], command  # the id alone

    checkout = origin.clone(tmp_path / "agent-checkout", "--depth", "1")
    done = agent_bash(f"{command} --raw", checkout / "logs", shim_bin(tmp_path / "bin"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == lines_from_bytes(original)[number - 1].data + b"\n"
    error = one_line_error(tool(checkout, "show", "00000000-0000-4000-8000-0000deadbeef"))
    assert "(searched 0 files under sessions.globs and 1 other .jsonl file in " in error


def test_show_without_an_id_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_origin(tmp_path).work
    write(repo / SESSION_A, typical_events().data())
    commit_all(repo)
    for args in ((), (SESSION_A,), (SESSION_A, "x", "y")):
        done = tool(repo, "show", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert b"(usage: gitclaw-compress show [OPTIONS] [PATH] ENTRY_ID;" in done.stderr
        assert done.stderr.count(b"\n") == 1, done.stderr


def _compress(repo: Path, keep_turns: int) -> None:
    done = CliRunner().invoke(
        cli, ["compress", "--force", "--keep-turns", str(keep_turns), SESSION_A]
    )
    assert done.exit_code == 0, done.output


def test_stubs_with_the_path_stay_valid_and_a_rerun_never_rewrites_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file compressed by the code that named the path in every stub (built here by that
    rule): a later run leaves its compressed lines byte for byte, stubs the newly old lines
    without the path, and every command of both kinds works."""
    repo = make_origin(tmp_path).work
    original = typical_events().data()
    session = write(repo / SESSION_A, original)
    commit_all(repo)
    monkeypatch.chdir(repo)
    with monkeypatch.context() as old_code:
        old_code.setattr(stubs, "findable_anywhere", lambda _entry_id: False)
        _compress(repo, keep_turns=2)
    old = session.read_bytes()
    old_commands = stub_commands(old)
    assert old_commands and all(f"show {SESSION_A} " in command for command in old_commands)
    commit_all(repo, "compressed by the old rule")

    _compress(repo, keep_turns=2)  # running again changes nothing
    assert session.read_bytes() == old

    _compress(repo, keep_turns=1)
    new = session.read_bytes()
    assert new != old
    before, after, first = lines_from_bytes(old), lines_from_bytes(new), lines_from_bytes(original)
    for was, now, source in zip(before, after, first, strict=True):
        if was.data != source.data:  # compressed by the old rule: untouched
            assert now.data == was.data
    new_commands = set(stub_commands(new)) - set(old_commands)
    assert new_commands and not any(SESSION_A in command for command in new_commands)
    commit_all(repo, "compressed again")
    assert tool(repo, "verify", SESSION_A).returncode == 0

    for command, number in stub_commands(new).items():
        done = ok(repo, *command.split()[1:], "--raw")
        assert done.stdout == first[number - 1].data + b"\n", command
    assert ok(repo, "restore", SESSION_A, "-o", "-").stdout == original


@pytest.mark.parametrize(
    ("entry_id", "findable"),
    [
        ("00000000-0000-4000-8000-00000000000b", True),  # Claude Code, Copilot CLI
        ("fc4ee226", False),  # pi: unique inside its file only
        ("L42", False),
        ("tooluse_0001", False),
        ("a-long-identifier-without-digits", False),
        ("00000000-0000-4000-8000-00000000000b x", False),
        ("-0000000-0000-4000-8000-00000000000b", False),  # would read as an option
    ],
)
def test_which_ids_go_without_the_path(entry_id: str, findable: bool) -> None:
    assert stubs.findable_anywhere(entry_id) is findable
    command = stubs.ShowCommands("s/a b.jsonl", ids_alone=True)(entry_id)
    assert ("'s/a b.jsonl'" not in command) is findable
