"""What config, input and the machine can throw at the write path: a failing git, symlinks
and devices, deep nesting, a full disk, foreign markers, leftovers of killed git runs."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import cli, commit_session, git
from format_cases import SYNTHETIC
from synthetic import text, typical_session

from gitclaw_compress.units import human_bytes

SESSION = ".GITCLAW/state/sessions/s.jsonl"

FAILING_GIT = """#!/bin/sh
# Fails the one subcommand named by $FAIL_GIT, passes everything else to the real git.
sub=""
skip=0
for arg in "$@"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  case "$arg" in
    -c|-C) skip=1 ;;
    -*) ;;
    *) sub="$arg"; break ;;
  esac
done
if [ "$sub" = "$FAIL_GIT" ]; then
  echo "fatal: simulated failure of git $sub" >&2
  exit 128
fi
exec "$REAL_GIT" "$@"
"""


@pytest.fixture
def session(repo: Path) -> Path:
    return commit_session(repo, SESSION, typical_session(turns=6).data())


@pytest.fixture
def failing_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "failing-bin"
    folder.mkdir()
    script = folder / "git"
    script.write_text(FAILING_GIT)
    script.chmod(0o755)
    monkeypatch.setenv("REAL_GIT", real)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    yield


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text, text
    assert text.count("\n") == 1, text
    return text


@pytest.mark.parametrize(
    ("command", "subcommand"),
    [
        ("compress", "rev-parse"),
        ("compress", "cat-file"),
        ("compress", "fast-import"),
        ("compress --stage", "add"),
        ("compress (discovery)", "status"),
        ("restore", "rev-parse"),
        ("restore", "cat-file"),
        ("restore", "ls-tree"),
        ("verify", "cat-file"),
        ("verify", "ls-tree"),
    ],
)
def test_a_failing_git_is_one_line_naming_the_command_and_exit_3(
    repo: Path,
    session: Path,
    failing_git: None,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    subcommand: str,
) -> None:
    if not command.startswith("compress"):
        cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    if (command, subcommand) == ("restore", "cat-file"):
        # restore reads a loose object itself; a packed one goes through `git cat-file`
        git(repo, "repack", "-adq")
    before = session.read_bytes()
    monkeypatch.setenv("FAIL_GIT", subcommand)
    args = {
        "compress": ("compress", "--force", "--keep-turns", "1", SESSION),
        "compress --stage": ("compress", "--force", "--keep-turns", "1", "--stage", SESSION),
        "compress (discovery)": ("compress", "--force", "--keep-turns", "1"),
        "restore": ("restore", SESSION),
        "verify": ("verify", "--no-fetch", SESSION),
    }[command]
    done = cli(*args, cwd=repo, check=False)
    line = one_line(done.stderr)
    assert done.returncode == 3, line
    assert f"git {subcommand}" in line and "simulated failure" in line, line
    if subcommand != "add":  # staging comes after the rewrite, which stands
        assert session.read_bytes() == before


@pytest.mark.parametrize("key", ["oid", "blob"])  # a v1 payload, a v3 intact blob
def test_a_marker_naming_a_path_outside_the_repository_is_one_line(
    repo: Path, session: Path, key: str
) -> None:
    name = SESSION
    if key == "oid":  # never committed intact: the marker names payloads
        name = SESSION.replace("s.jsonl", "new.jsonl")
        session = repo / name
        session.write_bytes(typical_session(turns=6).data())
    cli("compress", "--force", "--keep-turns", "1", name, cwd=repo)
    data = session.read_bytes()
    if key == "blob":  # a v3 marker: the blob is its second field
        start = data.index(b'"gitclawCompress":"3:') + len(b'"gitclawCompress":"3:')
        end = data.index(b":", start)
    else:
        start = data.index(b'"%s":"' % key.encode()) + len(key) + 4
        end = data.index(b'"', start)
    session.write_bytes(data[:start] + b"HEAD:../x" + data[end:])
    for args in (("verify", "--no-fetch", name), ("restore", name, "-o", "-")):
        done = cli(*args, cwd=repo, check=False)
        output = (done.stdout + done.stderr).decode()
        assert done.returncode in (1, 3) and f"{key} is not a git object id" in output, output
        assert "Traceback" not in output


def test_a_symlinked_session_compresses_its_target_and_stays_a_link(repo: Path) -> None:
    original = typical_session(turns=6).data()
    real = commit_session(repo, ".GITCLAW/state/sessions/real.jsonl", original)
    alias = real.parent / "alias.jsonl"
    alias.symlink_to("real.jsonl")
    done = cli("compress", "--force", "--keep-turns", "1", str(alias), cwd=repo)
    assert b"compressed .GITCLAW/state/sessions/real.jsonl" in done.stdout
    assert alias.is_symlink() and os.readlink(alias) == "real.jsonl"
    assert real.read_bytes() != original
    assert b"show .GITCLAW/state/sessions/real.jsonl" in real.read_bytes()
    assert cli("restore", str(real), "-o", "-", cwd=repo).stdout == original


def test_restore_writes_into_a_device_and_through_a_symlink(
    repo: Path, session: Path, tmp_path: Path
) -> None:
    original = session.read_bytes()
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    done = cli("restore", SESSION, "-o", "/dev/null", cwd=repo)
    assert f"restored /dev/null: {human_bytes(len(original))}".encode() in done.stdout
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    real = tmp_path / "out.jsonl"
    real.write_bytes(b"old")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    cli("restore", SESSION, "-o", str(link), cwd=repo)
    assert link.is_symlink() and real.read_bytes() == original


def deep(levels: int) -> bytes:
    return b"[" * levels + b'"bottom"' + b"]" * levels


def deep_result(entry_id: str, where: str, levels: int = 400) -> bytes:
    """A tool result nested 400 levels deep in its content or details (orjson reads 1024
    levels and writes 255)."""
    content = deep(levels) if where == "content" else b'[{"type":"text","text":"ok"}]'
    details = b',"details":' + deep(levels) if where == "details" else b""
    return (
        b'{"type":"message","id":"%s","parentId":null,"timestamp":"2026-02-20T11:50:00.000Z",'
        b'"message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":%s%s,'
        b'"isError":false,"timestamp":1771587860002}}' % (entry_id.encode(), content, details)
    )


def test_nesting_deeper_than_the_writer_goes_is_passed_through_with_a_warning(
    repo: Path,
) -> None:
    builder = typical_session(turns=2)
    deep_lines = [deep_result("deep0001", "content"), deep_result("deep0002", "details")]
    builder.lines.extend(deep_lines)
    for turn in range(3):
        builder.user(f"turn {turn}")
        builder.assistant(text("ok"), stop="stop")
    original = builder.data()
    for line in deep_lines:
        orjson.loads(line)  # the parser accepts it
    path = commit_session(repo, SESSION, original)
    done = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    assert b"nested too deeply" in done.stderr and b"Traceback" not in done.stderr
    numbers = [original.split(b"\n").index(line) + 1 for line in deep_lines]
    assert f"line(s) {numbers[0]}, {numbers[1]}".encode() in done.stderr, done.stderr
    for number, line in zip(numbers, deep_lines, strict=True):
        assert path.read_bytes().split(b"\n")[number - 1] == line
    assert b"compressed" in done.stdout
    assert cli("restore", SESSION, "-o", "-", cwd=repo).stdout == original


@pytest.mark.parametrize(
    ("name", "levels"),
    [("pi", 981), ("pi", 1022), *((name, 1000) for name in SYNTHETIC if name != "pi")],
)
def test_any_depth_behaves_as_documented(repo: Path, name: str, levels: int) -> None:
    """A line that compress rewrites, with a kept key nested past Python's recursion limit
    and up to what orjson reads: compressed or passed through, never a RecursionError."""
    original = SYNTHETIC[name][0][1]()
    path = commit_session(repo, SESSION, original)
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    number = next(i for i, line in enumerate(path.read_bytes().split(b"\n")) if b"gitclawC" in line)
    lines = original.split(b"\n")
    lines[number] = lines[number][:-1] + b',"deepExtra":' + deep(levels) + b"}"
    original = b"\n".join(lines)
    path.write_bytes(original)
    git(repo, "reset", "-q", "--hard")
    git(repo, "update-ref", "-d", "refs/gitclaw/archive")
    path.write_bytes(original)
    done = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo, check=False)
    assert done.returncode == 0 and b"RecursionError" not in done.stderr, done.stderr
    assert b"compressed" in done.stdout
    assert cli("restore", SESSION, "-o", "-", cwd=repo).stdout == original


def test_a_line_that_already_carries_the_marker_key_is_refused_up_front(
    repo: Path,
) -> None:
    lines = typical_session(turns=6).data().split(b"\n")
    lines[2] = lines[2][:-1] + b',"gitclawCompress":"mine"}'
    original = b"\n".join(lines)
    path = commit_session(repo, SESSION, original)
    done = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo, check=False)
    line = one_line(done.stderr)
    assert done.returncode == 3 and f"{SESSION}:3" in line and "nothing was changed" in line
    assert path.read_bytes() == original


def test_verify_names_leftovers_of_killed_git_runs(repo: Path, session: Path) -> None:
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    leftover = repo / ".git" / "objects" / "pack" / "tmp_pack_abc123"
    leftover.write_bytes(b"partial pack")
    crash = repo / ".git" / "fast_import_crash_4242"
    crash.write_text("fast-import crash report")
    done = cli("verify", "--no-fetch", SESSION, cwd=repo)
    assert b"tmp_pack_abc123" in done.stdout and b"fast_import_crash_4242" in done.stdout


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs: root and mount(8) are needed, so it skips elsewhere."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root and mount(8)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Use up every free byte of the filesystem that holds `folder`."""
    with open(folder / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
        try:
            while True:
                handle.write(b"\0")
        except OSError:
            pass


def test_a_full_disk_is_one_line_and_changes_nothing(small_disk: Path) -> None:
    repo = small_disk / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    original = typical_session(turns=6).data()
    path = commit_session(repo, SESSION, original)
    fill(small_disk)
    done = cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo, check=False)
    line = one_line(done.stderr)
    assert done.returncode == 3 and "nothing was changed" in line, line
    assert "no space left" in line.lower(), line
    assert path.read_bytes() == original
    (small_disk / "filler").unlink()
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    fill(small_disk)
    done = cli("restore", SESSION, "-o", str(small_disk / "out.jsonl"), cwd=repo, check=False)
    line = one_line(done.stderr)
    assert done.returncode == 3 and "no space left" in line.lower(), line


def test_a_full_disk_names_the_file_in_summarize_and_restore_all(small_disk: Path) -> None:
    """Every out-of-space error names the file it was writing ("file operation: no space
    left on device" said neither, before)."""
    repo = small_disk / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    original = typical_session(turns=6).data()
    path = commit_session(repo, SESSION, original)
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    compressed = path.read_bytes()
    fill(small_disk)
    for command in (
        ("summarize", "--offline", "--keep-turns", "1", SESSION),
        ("restore", "--all"),
    ):
        done = cli(*command, cwd=repo, check=False)
        line = one_line(done.stderr)
        assert done.returncode == 3 and "no space left" in line.lower(), (command, line)
        assert f"{SESSION}: writing failed" in line, (command, line)
        assert path.read_bytes() == compressed


def test_a_read_only_filesystem_is_one_line_and_changes_nothing(small_disk: Path) -> None:
    repo = small_disk / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    original = typical_session(turns=6).data()
    path = commit_session(repo, SESSION, original)
    cli("compress", "--force", "--keep-turns", "1", SESSION, cwd=repo)
    git(repo, "commit", "-qam", "compressed")
    compressed = path.read_bytes()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    done = cli("restore", SESSION, cwd=repo, check=False)  # in place: a temp file is needed
    line = one_line(done.stderr)
    assert done.returncode == 3 and "read-only" in line.lower(), line
    assert path.read_bytes() == compressed
