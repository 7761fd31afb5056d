"""What a new user meets on the agents' stores, command by command as the docs print them:
each answer true, one line, and the exit code of what happened."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import synthetic
from agent_hook_helpers import session_bytes
from conftest import cli, commit_session
from test_stores import OLD, SESSIONS, Machine, machine, put

__all__ = ["machine"]  # the fixture, used by name


def run_env(machine: Machine, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args],
        cwd=machine.home.parent,
        env={**os.environ, **env},
        capture_output=True,
        check=False,
    )


def test_a_store_done_before_an_interrupt_is_reported(machine: Machine) -> None:
    """Ctrl-C while the second store runs: the first store's lines are out already."""
    done = run_env(machine, "stores", GITCLAW_COMPRESS_INTERRUPT_AT="store-done")
    assert done.returncode == 130
    assert b"claude: compressed projects/" in done.stdout
    assert b"claude: " + str(machine.home / ".claude").encode() + b": 1 session" in done.stdout
    assert b"codex:" not in done.stdout
    assert done.stderr.endswith(b"\n") and b"interrupted" in done.stderr
    # The store done said its lines once: the interrupt points up to them, not again (it
    # named every compressed session a second time, where docs/stores.md promises one line).
    assert (done.stdout + done.stderr).count(b"projects/-home-u-proj/") == 1, done.stderr
    assert done.stderr.count(b"\n") == 1 and b"listed above" in done.stderr


def test_status_of_a_store_session_names_commands_that_work_anywhere(
    machine: Machine, tmp_path: Path
) -> None:
    """The commands status prints name the session by its full path, and the sizes it
    gives are those compress then writes (its stubs name the full path too)."""
    rel = ".claude/projects/-home-u-proj/9e0c2e0a-1111-4222-8333-444455556666.jsonl"
    put(machine.home, rel, session_bytes("claude").replace(b"8f1c2e0a", b"9e0c2e0a"), old=False)
    machine.run("stores", "claude")  # the store has its archive; the fresh one is left alone
    path = machine.path(rel)
    status = orjson.loads(cli("status", str(path), "--json", cwd=tmp_path).stdout)
    for name, saving in status["savings"].items():
        assert saving["command"].endswith(f" {path}"), name
    done = orjson.loads(cli("compress", str(path), "--dry-run", "--json", cwd=tmp_path).stdout)
    [report] = done["files"]
    assert report["deep_bytes_after"] == status["savings"]["deep"]["bytes_after"]
    cli("compress", str(path), cwd=tmp_path)
    assert path.stat().st_size == status["savings"]["compress"]["bytes_after"]


def test_files_that_are_no_session_are_not_counted_as_sessions(machine: Machine) -> None:
    folder = ".claude/projects/-home-u-proj/"
    put(machine.home, folder + "empty.jsonl", b"")
    put(machine.home, folder + "other.jsonl", b'{"foo":1}\n')
    locked = folder + "5e0c2e0a-1111-4222-8333-444455556666.jsonl"
    put(machine.home, locked, session_bytes("claude").replace(b"8f1c2e0a", b"5e0c2e0a"))
    machine.path(locked).chmod(0o444)
    done = machine.run("stores", "claude")
    [line] = [line for line in done.stdout.decode().splitlines() if "archive" in line]
    assert ": 2 sessions, 1 compressed (" in line
    assert ", 1 read-only (left alone), 2 other files that are no session (skipped);" in line
    assert b"other.jsonl: not a session transcript of a supported format" in done.stderr
    runs = orjson.loads(machine.run("stores", "claude", "--json").stdout)["stores"]
    assert (runs[0]["sessions"], runs[0]["not_sessions"], runs[0]["read_only"]) == (2, 2, 1)


def test_an_interrupt_in_a_store_stops_the_pass_and_names_the_full_path(
    machine: Machine,
) -> None:
    """Ctrl-C between renames in the first store: the pass stops there (the other stores
    are not compressed), in one line that names the session by its full path."""
    done = run_env(machine, "stores", GITCLAW_COMPRESS_INTERRUPT_AT="renamed")
    assert done.returncode == 130
    [line] = done.stderr.decode().splitlines()
    claude = machine.path(SESSIONS["claude"])
    assert line.endswith(
        f": interrupted after compressing {claude}; every file is either the old one or the new one"
    )
    for agent in ("codex", "copilot", "pi"):
        rel = SESSIONS[agent]
        assert machine.path(rel).read_bytes() == machine.originals[rel], agent


def test_a_store_whose_archive_is_gone_is_named_once(machine: Machine) -> None:
    machine.run("stores", "claude")
    shutil.rmtree(machine.archive("claude"))
    done = machine.run("stores", "claude", check=False)
    assert done.returncode == 3
    [line] = done.stderr.decode().splitlines()
    root = machine.home / ".claude"
    assert line.startswith(f"claude: {root}: the claude store holds compressed sessions (")
    assert line.count(str(root)) == 1


def test_restore_in_a_store_keeps_each_sessions_modification_time(
    machine: Machine, tmp_path: Path
) -> None:
    """As compress does: restored old sessions must not become the newest (`pi -c`)."""
    machine.run("stores")
    claude, pi = machine.path(SESSIONS["claude"]), machine.path(SESSIONS["pi"])
    cli("restore", str(claude), cwd=tmp_path)
    assert claude.read_bytes() == machine.originals[SESSIONS["claude"]]
    assert claude.stat().st_mtime == OLD
    cli("restore", "--all", cwd=pi.parents[2])  # inside the store, as the docs say
    assert pi.read_bytes() == machine.originals[SESSIONS["pi"]]
    assert pi.stat().st_mtime == OLD


def test_a_dry_run_before_the_first_says_there_is_no_archive_once(machine: Machine) -> None:
    done = machine.run("stores", "codex", "--dry-run")
    archive = machine.archive("codex")
    [line] = done.stdout.decode().splitlines()[-1:]
    assert line.endswith(f"; no archive yet ({archive}; the first run that compresses makes it)")
    assert done.stderr == b""
    assert not archive.exists()


def test_doctor_and_verify_in_a_store_speak_of_its_archive_not_of_a_clone(machine: Machine) -> None:
    machine.run("stores", "copilot")
    archive = str(machine.archive("copilot"))
    store = machine.path(SESSIONS["copilot"]).parents[2]
    assert b"0 not restorable from this store's archive" in cli("doctor", cwd=store).stdout
    git = ["git", "--git-dir", archive]
    subprocess.run([*git, "update-ref", "-d", "refs/gitclaw/archive"], check=True)
    subprocess.run([*git, "reflog", "expire", "--expire=now", "--all"], check=True)
    subprocess.run([*git, "gc", "-q", "--prune=now"], check=True)
    done = cli("doctor", cwd=store, check=False)
    assert done.returncode == 1
    assert b"1 not restorable from this store's archive" in done.stdout
    [problem] = [line for line in done.stdout.decode().splitlines() if line.startswith("problem")]
    assert f"cannot be restored from this store's archive ({archive});" in problem
    assert "git remote add" not in problem
    done = cli("verify", str(machine.path(SESSIONS["copilot"])), cwd=store, check=False)
    assert done.returncode == 1
    # Each line's payload is missing from the store's archive, which is no clone (it said
    # "is not in this clone"); the way back names no remote unless the user named one.
    assert f"is not in the store's archive ({archive})".encode() in done.stdout
    assert b"this clone" not in done.stdout
    [remedy] = [line for line in done.stdout.decode().splitlines() if line.startswith("to fix")]
    assert remedy == (
        "to fix: put the store's archive back from your backup, or fetch refs/gitclaw/archive "
        "into it from the remote you pushed it to, if you named one (docs/stores.md)"
    )
    assert b"did not write there" not in done.stdout  # the archive lost it, not the file
    config = machine.home / ".config" / "gitclaw-compress" / "compression.json"
    config.write_bytes(
        orjson.dumps({**orjson.loads(config.read_bytes()), "stores": {"remote": "backup"}})
    )
    done = cli("verify", str(machine.path(SESSIONS["copilot"])), cwd=store, check=False)
    [remedy] = [line for line in done.stdout.decode().splitlines() if line.startswith("to fix")]
    assert remedy.endswith(
        "or fetch refs/gitclaw/archive into it from 'backup', the remote stores.remote names: "
        f"`git --git-dir {archive} fetch backup refs/gitclaw/archive:refs/gitclaw/archive` "
        "(docs/stores.md)"
    )
    done = cli("restore", str(machine.path(SESSIONS["copilot"])), "-o", "-", cwd=store, check=False)
    assert done.returncode == 3
    [line] = done.stderr.decode().splitlines()
    assert f"but the store's archive ({archive}) has no record of it" in line


def test_doctor_agents_says_a_hook_has_not_run_yet(machine: Machine) -> None:
    machine.run("install", "--agents", "claude")
    done = machine.run("doctor", "--agents")
    [line] = [line for line in done.stdout.decode().splitlines() if "Claude Code" in line]
    assert line.endswith("settings.json; has not run yet")


def test_accepting_a_finding_in_a_store_names_the_baseline_where_it_is(
    machine: Machine,
) -> None:
    from secret_fixtures import planted

    line, _ = next(value for value in planted(3).values() if value[0])
    session = synthetic.typical_session(6)
    session.user(f"here: {line}")
    put(machine.home, SESSIONS["pi"], session.data())
    assert machine.run("stores", "pi", check=False).returncode == 1  # held for the finding
    (machine.home / ".config" / "gitclaw-compress" / "compression.json").unlink()  # defaults
    done = machine.run("scan", "--accept-all", str(machine.path(SESSIONS["pi"])))
    baseline = machine.home / ".config" / "gitclaw-compress" / ".gitclaw-secrets.json"
    first = done.stdout.decode().splitlines()[0]
    assert first.startswith("accepted ") and first.endswith(f" into {baseline}")
    assert baseline.is_file()


def test_an_archive_cloned_back_from_its_remote_restores(machine: Machine, tmp_path: Path) -> None:
    """docs/stores.md: push it with --remote, lose it, `git clone --mirror` it back."""
    machine.run("stores", "codex")
    remote = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    archive = machine.archive("codex")
    subprocess.run(
        ["git", "--git-dir", str(archive), "remote", "add", "backup", str(remote)], check=True
    )
    assert b"pushed to backup" in machine.run("stores", "codex", "--remote", "backup").stdout
    shutil.rmtree(archive)
    subprocess.run(["git", "clone", "-q", "--mirror", str(remote), str(archive)], check=True)
    path = machine.path(SESSIONS["codex"])
    assert b"ok:" in cli("verify", str(path), cwd=tmp_path).stdout
    assert (
        cli("restore", str(path), "-o", "-", cwd=tmp_path).stdout
        == machine.originals[SESSIONS["codex"]]
    )


def test_a_folder_that_is_neither_a_repository_nor_a_store_points_at_stores(
    tmp_path: Path,
) -> None:
    done = cli("status", cwd=tmp_path, check=False)
    assert done.returncode == 3
    [line] = done.stderr.decode().splitlines()
    assert "not inside a git repository nor an agent's store" in line
    assert "for the agents' own sessions: gitclaw-compress stores" in line


def test_a_path_as_the_commands_print_it_works_from_any_folder_of_the_store(
    machine: Machine,
) -> None:
    """verify prints a store's session from the store's folder; that path, pasted in a
    folder of the store, names the session."""
    machine.run("stores", "claude")
    store = machine.home / ".claude"
    shown = SESSIONS["claude"].split("/", 1)[1]  # projects/-home-u-proj/….jsonl
    assert f"ok: {shown} (".encode() in cli("verify", str(store), cwd=store).stdout
    done = cli("verify", shown, cwd=store / "projects" / "-home-u-proj", check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok: {shown} (".encode())


def test_an_agent_named_without_a_store_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    home = Path(os.environ["HOME"])
    done = cli("stores", "claude", cwd=tmp_path)
    assert done.stdout.decode().splitlines() == [f"claude: no store at {home / '.claude'}"]


def test_a_dry_run_with_a_remote_the_archive_lacks_fails_as_the_run_does(machine: Machine) -> None:
    """`stores --dry-run --remote NAME` says what `stores --remote NAME` would: no such remote
    of the archive, exit 3 (before, the dry run exited 0 and the run then failed)."""
    machine.run("stores", "codex")
    rel = SESSIONS["codex"]
    before = machine.path(rel).read_bytes()
    runs = [
        machine.run("stores", "codex", *flags, "--remote", "nope", check=False)
        for flags in (["--dry-run"], [])
    ]
    for done in runs:
        assert done.returncode == 3, done.stdout
        said = (done.stdout + done.stderr).decode().splitlines()
        [line] = [row for row in said if "nope" in row]
        assert line.startswith("codex: the codex store's archive has no remote 'nope'; add it with")
    assert machine.path(rel).read_bytes() == before


def test_compress_says_why_a_session_with_preserved_thinking_compresses_less(
    repo: Path,
) -> None:
    """A Claude Code session of a model with preserved thinking: compress (its dry run and
    --json too), status and prune --target say which lines keep what the model sees, and
    why, in words."""
    from synthetic_claude import typical_session

    old = typical_session(3).data()
    data = old.replace(b'"model":"claude-opus-4-6"', b'"model":"claude-fable-5-1"')
    path = commit_session(repo, ".claude/projects/-p/s.jsonl", data)
    dry = cli("compress", "--dry-run", "--keep-turns", "1", str(path), cwd=repo).stdout
    assert b"preserved thinking" in dry and b"lines 1-" in dry, dry
    report = orjson.loads(
        cli("compress", "--dry-run", "--json", "--keep-turns", "1", str(path), cwd=repo).stdout
    )["files"][0]
    assert report["preserved_thinking"][0] == 1
    status = cli("status", "--keep-turns", "1", str(path), cwd=repo).stdout
    # compress and prune; deep drops every thinking block instead (the last turn is closed)
    assert status.count(b"(preserved thinking)") == 2, status
    saving = orjson.loads(cli("status", "--json", "--keep-turns", "1", str(path), cwd=repo).stdout)[
        "savings"
    ]
    assert saving["compress"]["preserved_thinking"][0] == 1
    full = data.replace(b'"input_tokens":10,', b'"input_tokens":140000,')
    target = commit_session(repo, ".claude/projects/-p/t.jsonl", full)
    pruned = cli("prune", "--target", "--dry-run", str(target), cwd=repo).stdout
    assert b"target mode" in pruned and b"(preserved thinking)" in pruned, pruned
    config = repo / "prune.json"
    config.write_text('{"prune": {"protectTokens": 1, "minimumTokens": 1, "protectTurns": 1}}')
    budget = cli("prune", "--dry-run", "--config", str(config), str(path), cwd=repo).stdout
    assert b"(preserved thinking)" in budget, budget
    done = cli("compress", "--keep-turns", "1", str(path), cwd=repo).stdout
    assert b"preserved thinking" in done, done
    earlier = commit_session(repo, ".claude/projects/-p/e.jsonl", old)
    plain = cli("compress", "--keep-turns", "1", str(earlier), cwd=repo).stdout
    assert b"preserved thinking" not in plain


def test_one_secret_in_two_places_is_counted_once(repo: Path) -> None:
    """The held line counts secrets as redact does (by id), not the places they were found."""
    from secret_fixtures import planted
    from synthetic_claude import typical_session

    token_line = planted(9)["github"][0]
    data = typical_session(4).data()
    escaped = orjson.dumps(token_line)[1:-1] + b"\\n"
    marker = b'"content":"'
    first = data.index(marker, data.index(b'"tool_result"')) + len(marker)
    second = data.index(marker, data.index(b'"tool_result"', first)) + len(marker)
    data = data[:first] + escaped + data[first:second] + escaped + data[second:]
    path = commit_session(repo, ".claude/projects/-p/s.jsonl", data)
    held = cli("compress", str(path), cwd=repo, check=False)
    assert held.returncode == 1
    found = orjson.loads(cli("scan", "--json", str(path), cwd=repo, check=False).stdout)
    assert len({f["id"] for f in found["findings"]}) == 1 < len(found["findings"])
    assert b"1 secret(s) found in session files" in held.stderr, held.stderr
    redacted = cli("redact", str(path), "--all", cwd=repo).stdout
    assert b"redacted 1 secret in 2 lines" in redacted, redacted


@pytest.mark.parametrize(
    "command",
    [("compress", "--dry-run"), ("compress", "--check"), ("prune", "--target", "--dry-run")],
)
def test_a_dry_run_on_a_store_session_before_the_first_pass_writes_no_archive(
    machine: Machine, command: tuple[str, ...]
) -> None:
    """As `stores --dry-run`: it says what the first run would do, and makes no archive."""
    path = machine.path(SESSIONS["claude"])
    done = machine.run(*command, str(path), check=False)
    assert done.returncode in (0, 1), done.stderr
    assert b"would " in done.stdout or b"unchanged" in done.stdout, done.stdout
    assert not machine.archive("claude").exists()
    assert path.read_bytes() == machine.originals[SESSIONS["claude"]]
    machine.run("compress", str(path))  # the run then makes it
    assert (machine.archive("claude") / "HEAD").is_file()


def test_summarize_says_it_refuses_for_preserved_thinking_not_that_there_is_nothing(
    repo: Path,
) -> None:
    """There is something to summarize: the line says it was not summarized, and why."""
    from synthetic_claude import typical_session

    data = typical_session(3).data().replace(b"claude-opus-4-6", b"claude-fable-5-1")
    path = commit_session(repo, ".claude/projects/-p/s.jsonl", data)
    done = cli("summarize", "--offline", "--keep-turns", "1", str(path), cwd=repo)
    line = done.stdout.decode()
    assert line.startswith("not summarized "), line
    assert "(preserved thinking)" in line and "nothing was written" in line
    assert "--keep-turns 0" in line and path.read_bytes() == data
    report = orjson.loads(
        cli("summarize", "--offline", "--json", "--keep-turns", "1", str(path), cwd=repo).stdout
    )
    assert report["refused"] is True and report["status"] == "nothing-to-summarize"


def test_a_dry_run_records_nothing_of_its_scan_even_for_a_file_scanned_clean(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/secrets.md: a dry run writes nothing, not even the record of lines scanned clean.
    A file whose lines were all recorded clean, read again with another stat (compressed
    since, or touched), got its new stat saved by `compress --dry-run` and `stores
    --dry-run`. In process, with the scan's clock moved on instead of a sleep."""
    from click.testing import CliRunner

    from gitclaw_compress.cli import cli as main
    from gitclaw_compress.secrets import cleanlines

    path = commit_session(repo, "sessions/s.jsonl", synthetic.typical_session(3).data())
    monkeypatch.chdir(repo)
    monkeypatch.setattr(cleanlines, "clock", lambda: time.time_ns() + 2 * 10**9)
    assert CliRunner().invoke(main, ["scan", str(path)]).exit_code == 0  # records it clean
    records = repo / ".git" / "gitclaw-compress" / "secrets-clean-lines"
    before = {p: p.read_bytes() for p in records.iterdir()}
    assert before  # the record of its clean lines
    os.utime(path, (1_700_000_000, 1_700_000_000))  # the same lines, another stat
    for flag in ("--dry-run", "--check"):
        done = CliRunner().invoke(main, ["compress", flag, "--keep-turns", "1", str(path)])
        assert done.exit_code in (0, 1), done.output
    assert {p: p.read_bytes() for p in records.iterdir()} == before


def test_stores_says_why_a_session_with_preserved_thinking_compresses_less(
    machine: Machine,
) -> None:
    """The session's line says why, and a later pass that finds nothing new says which
    sessions preserved thinking keeps as the model saw them (`compress PATH` says where)."""
    rel = SESSIONS["claude"]
    bound = machine.originals[rel].replace(b"claude-opus-4-6", b"claude-fable-5-1")
    put(machine.home, rel, bound)
    first = machine.run("stores", "claude").stdout.decode()
    assert "(preserved thinking)" in first, first
    again = machine.run("stores", "claude").stdout.decode()
    assert "1 with nothing to compress (in 1 of them, preserved thinking keeps" in again, again
    assert "preserved thinking" not in machine.run("stores", "codex").stdout.decode()


def test_an_unknown_finding_id_names_the_session(repo: Path) -> None:
    """redact --finding and scan --accept with an id no finding has: one line naming the
    session, exit 3, nothing changed."""
    path = commit_session(repo, "sessions/s.jsonl", synthetic.typical_session(3).data())
    before = path.read_bytes()
    for args in (
        ("redact", str(path), "--finding", "0" * 12),
        ("scan", str(path), "--accept", "0" * 12),
    ):
        done = cli(*args, cwd=repo, check=False)
        assert done.returncode == 3, done.stderr
        [line] = done.stderr.decode().splitlines()
        assert "sessions/s.jsonl: no finding has id 000000000000" in line, line
    assert path.read_bytes() == before


def test_the_archive_size_is_what_the_disk_holds_and_no_pass_makes_an_empty_one(
    machine: Machine,
) -> None:
    """A pass that compresses nothing makes no archive (it made an empty one); the size a
    pass prints is what the archive takes on disk, as `du` counts it (it printed the files'
    lengths: 62.8 KB of 452 KB)."""
    from gitclaw_compress.store.agent_store import archive_path
    from gitclaw_compress.units import human_bytes

    config = machine.home / ".config" / "gitclaw-compress" / "compression.json"
    kept = config.read_bytes()
    config.write_text('{"session": {"sizeThresholdKB": 100000}}')  # nothing is big enough
    archive = archive_path("claude", dict(os.environ))
    done = machine.run("stores", "claude")
    assert not archive.exists(), done.stdout
    assert b"no archive yet" in done.stdout and b"first run that compresses" in done.stdout
    config.write_bytes(kept)
    done = machine.run("stores", "claude")
    assert archive.is_dir(), done.stdout
    used = subprocess.run(
        ["du", "-s", "-B1", str(archive)], capture_output=True, check=True, text=True
    ).stdout.split()[0]
    on_disk = int(used)
    lengths = sum(p.stat().st_size for p in archive.rglob("*") if p.is_file())
    assert on_disk > lengths  # many small files, each a whole block or more
    line = next(row for row in done.stdout.decode().splitlines() if "; archive " in row)
    assert f"({human_bytes(on_disk)} on disk)" in line, (line, on_disk)
