"""The agents' own stores: `stores` compresses the sessions at rest in each agent's default
folder, into an archive the tool keeps outside it, and every command works on them."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import synthetic
from agent_hook_helpers import held_open, session_bytes
from conftest import cli
from test_hardening import fill

from gitclaw_compress.store import live

# POSIX only: Windows skips this module (see LINUX_ONLY_MODULES in conftest.py).
resource = pytest.importorskip("resource", reason="POSIX only")

OLD = 1_700_000_000  # an mtime long ago: at rest
SESSIONS = {
    "claude": ".claude/projects/-home-u-proj/8f1c2e0a-1111-4222-8333-444455556666.jsonl",
    "codex": ".codex/sessions/2026/01/02/rollout-2026-01-02T10-00-00-"
    "019d417c-54dd-7ee3-b9e7-538a07d03f7a.jsonl",
    "copilot": ".copilot/session-state/3cdc08e6-694b-4b26-8a81-476f98130e89/events.jsonl",
    "pi": ".pi/agent/sessions/--home-u-proj--/2026-01-02T10-00-00-000Z_abc.jsonl",
}
FRESH = ".pi/agent/sessions/--home-u-proj--/2026-01-03T10-00-00-000Z_new.jsonl"
HELD = ".claude/projects/-home-u-proj/0e0c2e0a-1111-4222-8333-444455556666.jsonl"


@dataclass
class Machine:
    home: Path
    originals: dict[str, bytes]  # home-relative path -> bytes

    def path(self, rel: str) -> Path:
        return self.home / rel

    def archive(self, agent: str) -> Path:
        return self.home / ".local" / "share" / "gitclaw-compress" / "stores" / agent

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return cli(*args, cwd=self.home.parent, check=check)

    def restored(self, rel: str) -> bytes:
        return self.restored_path(self.path(rel))

    def restored_path(self, path: Path) -> bytes:
        return self.run("restore", str(path), "-o", "-").stdout


def put(home: Path, rel: str, data: bytes, *, old: bool = True) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if old:
        os.utime(path, (OLD, OLD))


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Machine:
    """A fresh HOME with the stores of all four agents at their default places, each with
    one session written long ago, and a pi session written just now."""
    home = Path(os.environ["HOME"])
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"):
        monkeypatch.delenv(name, raising=False)
    originals = {}
    for agent, rel in SESSIONS.items():
        originals[rel] = session_bytes(agent)
        put(home, rel, originals[rel])
    originals[FRESH] = session_bytes("pi")
    put(home, FRESH, originals[FRESH], old=False)
    config = home / ".config" / "gitclaw-compress" / "compression.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(
        orjson.dumps({"session": {"sizeThresholdKB": 0, "turnThresholdBeforeCompress": 1}})
    )
    return Machine(home, originals)


@pytest.fixture
def in_use(machine: Machine) -> Iterator[Path]:
    """A Claude Code session that another process holds open for writing (as a running
    agent does), written long ago."""
    data = session_bytes("claude").replace(b"8f1c2e0a", b"0e0c2e0a")
    put(machine.home, HELD, data)
    machine.originals[HELD] = data
    with held_open(machine.path(HELD)):
        yield machine.path(HELD)


def stores_json(machine: Machine, *args: str, check: bool = True) -> dict[str, dict[str, object]]:
    done = machine.run("stores", *args, "--json", check=check)
    return {run["agent"]: run for run in orjson.loads(done.stdout)["stores"]}


def statuses(run: dict[str, object]) -> dict[str, str]:
    files = run["files"]
    assert isinstance(files, list)
    return {file["path"]: file["status"] for file in files}


def test_stores_compresses_exactly_the_sessions_at_rest(machine: Machine, in_use: Path) -> None:
    runs = stores_json(machine)
    assert sorted(runs) == ["claude", "codex", "copilot", "pi"]
    for agent, rel in SESSIONS.items():
        store_rel = rel.split("/", 2 if agent == "pi" else 1)[-1]
        assert statuses(runs[agent]) == {store_rel: "compressed"}, agent
        assert len(machine.path(rel).read_bytes()) < len(machine.originals[rel])
        assert machine.path(rel).stat().st_mtime == OLD  # agents list sessions by mtime
    assert runs["pi"]["fresh"] == [FRESH.split("/", 2)[-1]]
    assert runs["claude"]["in_use"] == [HELD.split("/", 1)[-1]]
    for rel in (FRESH, HELD):
        assert machine.path(rel).read_bytes() == machine.originals[rel]
    for rel, original in machine.originals.items():
        assert machine.restored(rel) == original, rel
    for agent in SESSIONS:  # nothing of the archive hangs on loose or unreachable objects
        subprocess.run(
            ["git", "--git-dir", str(machine.archive(agent)), "gc", "-q", "--prune=now"],
            check=True,
        )
    for rel, original in machine.originals.items():
        assert machine.restored(rel) == original, rel
        assert b"ok:" in machine.run("verify", str(machine.path(rel))).stdout


def test_a_second_run_changes_nothing(machine: Machine) -> None:
    stores_json(machine)
    after_first = {rel: machine.path(rel).read_bytes() for rel in machine.originals}
    runs = stores_json(machine)
    for agent in SESSIONS:
        assert set(statuses(runs[agent]).values()) == {"unchanged"}, agent
    assert {rel: machine.path(rel).read_bytes() for rel in machine.originals} == after_first


def test_a_dry_run_writes_nothing(machine: Machine) -> None:
    runs = stores_json(machine, "--dry-run")
    assert all(run["state"] == "done" for run in runs.values())
    assert not (machine.home / ".local").exists()
    for rel, original in machine.originals.items():
        assert machine.path(rel).read_bytes() == original


def test_agents_named_and_unknown(machine: Machine) -> None:
    runs = stores_json(machine, "codex")
    assert list(runs) == ["codex"]
    assert not machine.archive("claude").exists()
    done = machine.run("stores", "nano", check=False)
    assert done.returncode == 2
    assert b"nano" in done.stderr


def test_every_command_takes_a_session_in_a_store(machine: Machine, tmp_path: Path) -> None:
    rel = SESSIONS["pi"]
    done = machine.run("compress", str(machine.path(rel)), "--keep-turns", "1")
    assert b"compressed" in done.stdout
    assert machine.archive("pi").is_dir()
    stub = machine.path(rel).read_bytes()
    command = f"gitclaw-compress show {machine.path(rel)} ".encode()
    assert command in stub  # a stub names the full path: the agent runs it from its project
    entry = stub.split(command, 1)[1][:8].decode()
    shown = cli("show", str(machine.path(rel)), entry, "--raw", cwd=tmp_path).stdout
    assert shown.rstrip(b"\n") in machine.originals[rel].split(b"\n")
    for args in (("stats",), ("status",), ("context",), ("verify",), ("scan",)):
        done = cli(*args, str(machine.path(rel)), cwd=tmp_path, check=False)
        assert done.returncode in (0, 1), (args, done.stderr)
        assert b"Traceback" not in done.stderr
    done = cli("restore", str(machine.path(rel)), cwd=tmp_path)
    assert machine.path(rel).read_bytes() == machine.originals[rel]
    done = cli("prune", str(machine.path(rel)), "--dry-run", cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    cli("summarize", str(machine.path(rel)), "--offline", cwd=tmp_path)
    grown = machine.path(rel).read_bytes()
    assert grown.startswith(machine.originals[rel]) and len(grown) > len(machine.originals[rel])


def test_a_removed_archive_is_one_line_and_changes_nothing(machine: Machine) -> None:
    stores_json(machine, "claude")
    compressed = machine.path(SESSIONS["claude"]).read_bytes()
    subprocess.run(["rm", "-rf", str(machine.archive("claude"))], check=True)
    done = machine.run("stores", "claude", check=False)
    assert done.returncode == 3
    assert done.stderr.count(b"\n") == 1 and b"archive" in done.stderr
    assert machine.path(SESSIONS["claude"]).read_bytes() == compressed
    done = machine.run("restore", str(machine.path(SESSIONS["claude"])), check=False)
    assert done.returncode == 3
    assert done.stderr.count(b"\n") == 1 and b"no archive" in done.stderr


def test_a_store_that_moved_keeps_its_archive(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores_json(machine, "claude")
    moved = machine.home / "elsewhere"
    (machine.home / ".claude").rename(moved)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved))
    done = machine.run("stores", "claude")
    assert b"moved" in done.stderr + done.stdout
    rel = SESSIONS["claude"].split("/", 1)[1]
    restored = machine.run("restore", str(moved / rel), "-o", "-").stdout
    assert restored == machine.originals[SESSIONS["claude"]]


def test_two_runs_at_once_one_waits_for_nothing(machine: Machine) -> None:
    from gitclaw_compress.ops.stores import homes, open_store

    home = next(home for home in homes(os.environ) if home.agent == "claude")
    with open_store(home, os.environ, create=True) as store, store.lock("stores", "claude"):
        done = machine.run("stores", "claude")
    assert done.returncode == 0
    lines = (done.stdout + done.stderr).decode().splitlines()
    assert len(lines) == 1 and "locked by another gitclaw-compress run" in lines[0]
    assert machine.path(SESSIONS["claude"]).read_bytes() == machine.originals[SESSIONS["claude"]]


def test_files_that_cannot_grow_are_one_line_and_change_nothing(machine: Machine) -> None:
    """Files may not grow past 8 KB (writes fail as on a full disk, without root); nothing
    is lost."""

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "stores", "pi"],
        cwd=machine.home.parent,
        capture_output=True,
        preexec_fn=small_files,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.count(b"\n") == 1
    for rel, original in machine.originals.items():
        assert machine.path(rel).read_bytes() == original


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs (as tests/test_hardening.py makes one): root and mount(8) are needed."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def claude_on_small_disk(
    machine: Machine, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The Claude Code store, and its archive, on a 3 MB filesystem of their own."""
    store = small_disk / "claude"
    shutil.copytree(machine.home / ".claude", store)
    for path in store.rglob("*.jsonl"):
        os.utime(path, (OLD, OLD))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(store))
    monkeypatch.setenv("XDG_DATA_HOME", str(small_disk / "data"))
    return store / SESSIONS["claude"].split("/", 1)[1]


def test_a_really_full_disk_is_one_line_and_loses_nothing(
    machine: Machine, small_disk: Path, claude_on_small_disk: Path
) -> None:
    fill(small_disk)
    done = machine.run("stores", "claude", check=False)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count(b"\n") == 1 and b"no space left" in done.stderr.lower()
    assert claude_on_small_disk.read_bytes() == machine.originals[SESSIONS["claude"]]
    (small_disk / "filler").unlink()
    machine.run("stores", "claude")
    assert claude_on_small_disk.read_bytes() != machine.originals[SESSIONS["claude"]]
    assert machine.restored_path(claude_on_small_disk) == machine.originals[SESSIONS["claude"]]


def test_a_read_only_store_is_one_line_and_changes_nothing(
    machine: Machine, small_disk: Path, claude_on_small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(machine.home / "data"))  # the archive elsewhere
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    done = machine.run("stores", "claude", check=False)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count(b"\n") == 1 and b"read-only" in done.stderr.lower()
    assert claude_on_small_disk.read_bytes() == machine.originals[SESSIONS["claude"]]


def test_homes_follow_the_environment(tmp_path: Path) -> None:
    from gitclaw_compress.ops.stores import homes

    environ = {
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "c"),
        "CODEX_HOME": str(tmp_path / "x"),
        "COPILOT_HOME": str(tmp_path / "p"),
        "PI_CODING_AGENT_DIR": "~/pa",
    }
    found = {home.agent: home for home in homes(environ)}
    assert found["claude"].root == tmp_path / "c"
    assert found["codex"].root == tmp_path / "x"
    assert found["copilot"].root == tmp_path / "p"
    assert found["pi"].root == tmp_path / "pa"  # a leading ~, expanded as pi does
    assert found["pi"].globs == ("sessions/**/*.jsonl",)
    assert found["pi"].moved_by == "PI_CODING_AGENT_DIR"
    moved = homes({**environ, "PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "s")})
    pi = next(home for home in moved if home.agent == "pi")
    assert (pi.root, pi.moved_by) == (tmp_path / "s", "PI_CODING_AGENT_SESSION_DIR")
    (tmp_path / "pa").mkdir()
    (tmp_path / "pa" / "settings.json").write_text('{"sessionDir": "~/kept"}')
    pi = next(home for home in homes(environ) if home.agent == "pi")
    assert (pi.root, pi.moved_by) == (tmp_path / "kept", "settings.json sessionDir")
    defaults = {home.agent: home.root for home in homes({"HOME": str(tmp_path)})}
    assert defaults == {
        "claude": tmp_path / ".claude",
        "codex": tmp_path / ".codex",
        "copilot": tmp_path / ".copilot",
        "pi": tmp_path / ".pi" / "agent",
    }


def test_commands_with_no_path_inside_a_store(machine: Machine) -> None:
    pi_store = machine.home / ".pi" / "agent"
    done = cli("compress", "--json", cwd=pi_store)
    report = orjson.loads(done.stdout)
    assert [file["path"] for file in report["files"]] == [SESSIONS["pi"].split("/", 2)[-1]]
    assert report["selected"]["detail"].startswith("at rest in the store")
    assert machine.path(FRESH).read_bytes() == machine.originals[FRESH]
    assert b"ok:" in cli("verify", cwd=pi_store).stdout
    doctor = cli("doctor", cwd=pi_store)
    assert str(machine.archive("pi")).encode() in doctor.stdout
    assert b"pre-push" not in doctor.stdout
    cli("restore", "--all", cwd=pi_store)
    assert machine.path(SESSIONS["pi"]).read_bytes() == machine.originals[SESSIONS["pi"]]


def test_show_finds_an_id_alone_in_a_store(machine: Machine, tmp_path: Path) -> None:
    stores_json(machine, "copilot")
    events = machine.path(SESSIONS["copilot"]).read_bytes()
    entry = events.split(b"Full output: gitclaw-compress show ", 1)[1][:36].decode()
    shown = cli("show", entry, "--raw", cwd=tmp_path).stdout  # from the agent's project
    assert shown.rstrip(b"\n") in machine.originals[SESSIONS["copilot"]].split(b"\n")


def test_show_finds_a_codex_line_by_its_session_id_in_a_store(
    machine: Machine, tmp_path: Path
) -> None:
    """Codex's lines have no ids: its stubs name the rollout's session id and the line, and
    `show` run from the agent's project finds the rollout in the store by its first line."""
    stores_json(machine, "codex")
    rollout = machine.path(SESSIONS["codex"]).read_bytes()
    named = re.search(rb"gitclaw-compress show ([0-9a-f-]{36}) (L[0-9]+)", rollout)
    assert named is not None
    session_id, line = named[1].decode(), named[2].decode()
    assert str(machine.home).encode() not in rollout  # no stub names the store's path
    shown = cli("show", session_id, line, "--raw", cwd=tmp_path).stdout
    original = machine.originals[SESSIONS["codex"]].split(b"\n")
    assert shown == original[int(line.removeprefix("L")) - 1] + b"\n"


def test_the_archive_goes_only_to_a_remote_named(machine: Machine, tmp_path: Path) -> None:
    stores_json(machine, "codex")
    backup = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", str(backup)], check=True)
    archive = str(machine.archive("codex"))
    done = machine.run("stores", "codex", "--remote", "backup", check=False)
    assert done.returncode == 3 and b"remote add backup" in done.stderr  # not added yet
    subprocess.run(
        ["git", "--git-dir", archive, "remote", "add", "backup", str(backup)], check=True
    )
    runs = stores_json(machine, "codex", "--remote", "backup")
    assert runs["codex"]["pushed_to"] == "backup"
    tips = subprocess.run(
        ["git", "--git-dir", str(backup), "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        check=True,
    ).stdout.split()
    assert tips == [b"refs/gitclaw/archive"]


def test_a_home_kept_in_git_still_restores_from_the_store(machine: Machine) -> None:
    subprocess.run(["git", "init", "-q", str(machine.home)], check=True)
    stores_json(machine, "claude")
    rel = SESSIONS["claude"]
    assert machine.restored(rel) == machine.originals[rel]
    cli("restore", str(machine.path(rel)), cwd=machine.home)
    assert machine.path(rel).read_bytes() == machine.originals[rel]


def test_an_append_during_a_run_is_never_lost(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent opens its session to append at the worst moment: between the last check
    and the rename (the injection point of store/fileio.py), in another process."""
    from click.testing import CliRunner
    from test_live_writers import APPENDED, lease_breaking

    from gitclaw_compress.cli import cli as command_line
    from gitclaw_compress.store import fileio

    appender: list[subprocess.Popen[bytes]] = []

    def append_now(target: Path) -> None:
        write = "import sys; open(sys.argv[1], 'ab').write(sys.argv[2].encode())"
        line = (APPENDED % 3).decode()
        appender.append(subprocess.Popen([sys.executable, "-c", write, str(target), line]))
        while appender[0].poll() is None and not lease_breaking():
            pass  # until its open waits on our lease, or it is done (no lease here)

    monkeypatch.setattr(fileio, "before_rename", append_now)
    result = CliRunner().invoke(command_line, ["stores", "pi"])
    assert appender[0].wait() == 0
    monkeypatch.setattr(fileio, "before_rename", None)
    assert result.exit_code == 0, result.output
    rel = SESSIONS["pi"]
    data = machine.path(rel).read_bytes()
    assert data.endswith(APPENDED % 3)
    if b"gitclawCompress" not in data:  # left as it was: a pass that compressed nothing
        assert data == machine.originals[rel] + APPENDED % 3  # makes no archive
        return
    assert machine.restored(rel) == machine.originals[rel] + APPENDED % 3


def test_a_file_that_is_no_session_is_a_warning_not_the_end(machine: Machine) -> None:
    put(machine.home, ".claude/projects/-home-u-proj/empty.jsonl", b"")
    done = machine.run("stores", "claude")
    assert b"empty.jsonl: not a session transcript of a supported format" in done.stderr
    assert b"1 compressed" in done.stdout


@pytest.mark.parametrize("check", [None, "any-mode"], ids=["linux", "macos-windows-rule"])
def test_the_session_a_running_agent_may_write_is_left_alone(
    machine: Machine, check: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process named like the agent, working in a project: the newest session of that
    project's folder is left alone however old, the others of the folder are compressed
    (also with the check of macOS and Windows forced: no lease, every open counts)."""
    if check is not None:
        monkeypatch.setenv(live.FORCE_ENV, check)
    older = ".claude/projects/-work-proj/1e0c2e0a-1111-4222-8333-444455556666.jsonl"
    newest = ".claude/projects/-work-proj/2e0c2e0a-1111-4222-8333-444455556666.jsonl"
    for rel, when in ((older, OLD), (newest, OLD + 60)):
        data = session_bytes("claude").replace(b"8f1c2e0a", rel.split("/")[-1][:8].encode())
        put(machine.home, rel, data)
        os.utime(machine.path(rel), (when, when))
        machine.originals[rel] = data
    project = machine.home / "work" / "proj"
    project.mkdir(parents=True)
    # Claude Code works in /…/work/proj; its folder is named from that path.
    folder = "projects/" + "".join(c if c.isalnum() else "-" for c in str(project))
    (machine.home / ".claude" / folder).mkdir(parents=True)
    for rel in (older, newest):
        target = machine.home / ".claude" / folder / Path(rel).name
        machine.path(rel).rename(target)
    # Named claude from its exec on (Popen returns once it has exec'd): a shell's `exec -a`
    # was named bash until it ran, which a loaded machine could put after the pass began.
    agent = subprocess.Popen(
        ["claude"], executable=shutil.which("cat"), cwd=project, stdin=subprocess.PIPE
    )
    try:
        runs = stores_json(machine, "claude")
    finally:
        assert agent.stdin is not None
        agent.stdin.close()
        agent.wait()
    assert runs["claude"]["in_use"] == [f"{folder}/{Path(newest).name}"]
    assert statuses(runs["claude"])[f"{folder}/{Path(older).name}"] == "compressed"


def test_a_session_made_read_only_is_left_as_it_is(machine: Machine) -> None:
    rel = ".claude/projects/-home-u-proj/5e0c2e0a-1111-4222-8333-444455556666.jsonl"
    put(machine.home, rel, session_bytes("claude").replace(b"8f1c2e0a", b"5e0c2e0a"))
    machine.path(rel).chmod(0o444)
    done = machine.run("stores", "claude")
    assert b"5e0c2e0a-1111-4222-8333-444455556666.jsonl: read-only; left as it is" in done.stderr
    assert b"1 compressed" in done.stdout  # the other session
    assert b"gitclawCompress" not in machine.path(rel).read_bytes()


def test_a_session_that_cannot_be_compressed_does_not_stop_the_others(machine: Machine) -> None:
    stores_json(machine, "claude")  # the store has its archive
    good = ".claude/projects/-home-u-proj/7e0c2e0a-1111-4222-8333-444455556666.jsonl"
    put(machine.home, good, session_bytes("claude").replace(b"8f1c2e0a", b"7e0c2e0a"))
    bad = ".claude/projects/-home-u-proj/6e0c2e0a-1111-4222-8333-444455556666.jsonl"
    lines = session_bytes("claude").replace(b"8f1c2e0a", b"6e0c2e0a").split(b"\n")
    lines[3] = lines[3][:-1] + b',"gitclawCompress":"3:not-a-marker"}'  # a damaged marker
    put(machine.home, bad, b"\n".join(lines))
    done = machine.run("stores", "claude", check=False)
    assert done.returncode == 3
    refusals = [line for line in done.stderr.splitlines() if b": error: " in line]
    assert len(refusals) == 1 and b"6e0c2e0a" in refusals[0], done.stderr
    assert b"1 compressed" in done.stdout  # the good one
    assert machine.path(bad).read_bytes() == b"\n".join(lines)


def test_accepting_a_finding_in_a_store_makes_its_config_folder(machine: Machine) -> None:
    """The baseline of a store lives in the tool's config folder, which may not exist yet."""
    from secret_fixtures import planted

    line, _ = next(value for value in planted(3).values() if value[0])
    path = machine.path(SESSIONS["pi"])
    session = synthetic.typical_session(6)
    session.user(f"here: {line}")
    put(machine.home, SESSIONS["pi"], session.data())
    # The store's archive, where the scan keeps its records (the session is held: exit 1).
    assert machine.run("stores", "pi", check=False).returncode == 1
    shutil.rmtree(machine.home / ".config" / "gitclaw-compress")  # a user with no settings
    found = machine.run("scan", str(path), check=False)
    assert found.returncode == 1, found.stderr
    machine.run("scan", "--accept-all", str(path))
    assert machine.run("scan", str(path)).returncode == 0
