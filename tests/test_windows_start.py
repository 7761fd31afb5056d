"""The tool starts and works where the POSIX-only modules are absent, as on Windows: every
command below runs in a fresh interpreter whose `fcntl`, `termios`, `pty`, `pwd`, `grp` and
`resource` cannot be imported, and whose `signal` and `os` lack what Windows lacks (signal
masks, SIGSTOP, SIGIO, O_NOFOLLOW, chown, getuid). `os.name` stays "posix" (the
path classes are chosen by it at import), so the Windows branches of their own are checked
by forcing their inputs (see the last tests); the live-writer check is forced to Windows'
rule: open files, read and write alike.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, accept_corpus_secrets, git
from synthetic_claude import typical_session

from gitclaw_compress.formats.claude.home import home as claude_home
from gitclaw_compress.formats.shared.home import user_home
from gitclaw_compress.store import live
from gitclaw_compress.store.agent_store import config_home, data_home

SHIM = """
import os, signal, _signal, sys
import psutil  # its Linux backend needs pwd and resource; on Windows it has its own
for name in ("fcntl", "termios", "pty", "pwd", "grp", "resource"):
    sys.modules[name] = None  # import raises ImportError, as on Windows
# (SIGKILL stays: the standard library's POSIX subprocess sends it; ours never names it.)
for module in (signal, _signal):
    for name in ("pthread_sigmask", "pthread_kill", "sigpending", "sigtimedwait", "SIGSTOP",
                 "SIGIO", "SIG_BLOCK", "SIG_UNBLOCK", "SIG_SETMASK"):
        if hasattr(module, name):
            delattr(module, name)
for name in ("O_NOFOLLOW", "chown", "getuid", "geteuid", "getgid", "fchown"):
    if hasattr(os, name):
        delattr(os, name)
"""
# A transcript written on Windows (its paths are `E:\\…`), else a synthetic one.
WINDOWS_TRANSCRIPT = CORPUS / "claude" / "cc-test__db3f6604.jsonl"
SESSION = ".claude/projects/E--CC-test/db3f6604-0000-4000-8000-000000000001.jsonl"


@pytest.fixture
def shim(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "shim"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(SHIM)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, live.FORCE_ENV: "any-mode"}


def run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args], cwd=cwd, env=env, capture_output=True
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert b"a bug in gitclaw-compress" not in done.stderr, done.stderr.decode()
    return done


def transcript() -> bytes:
    if WINDOWS_TRANSCRIPT.is_file():
        return WINDOWS_TRANSCRIPT.read_bytes()
    return typical_session(6).data()


def test_the_shim_takes_away_what_windows_lacks(shim: dict[str, str], tmp_path: Path) -> None:
    probe = (
        "import signal, os\ntry:\n    import fcntl\nexcept ImportError:\n    print('no fcntl')\n"
    )
    probe += "print(hasattr(signal, 'pthread_sigmask'), hasattr(os, 'O_NOFOLLOW'))\n"
    done = subprocess.run([sys.executable, "-c", probe], env=shim, capture_output=True, text=True)
    assert done.stdout == "no fcntl\nFalse False\n", done.stderr


def test_help_compress_verify_restore_run_to_their_normal_result(
    shim: dict[str, str], repo: Path
) -> None:
    assert run(repo, shim, "--help").returncode == 0
    original = transcript()
    path = repo / SESSION
    path.parent.mkdir(parents=True)
    path.write_bytes(original)
    accept_corpus_secrets(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a session")
    done = run(repo, shim, "compress", "--keep-turns", "1", "--force", SESSION)
    assert done.returncode == 0 and b"compressed" in done.stdout, done.stderr.decode()
    assert path.read_bytes() != original
    assert run(repo, shim, "verify", SESSION).returncode == 0
    done = run(repo, shim, "restore", SESSION, "-o", "-")
    assert done.returncode == 0 and done.stdout == original
    done = run(repo, shim, "restore", SESSION)
    assert done.returncode == 0 and path.read_bytes() == original


def test_stores_dry_run_says_what_it_would_do_and_which_check_it_has(
    shim: dict[str, str], tmp_path: Path
) -> None:
    home = Path(shim["HOME"])
    session = home / SESSION
    session.parent.mkdir(parents=True)
    session.write_bytes(transcript())
    os.utime(session, (1_700_000_000, 1_700_000_000))
    plain = {key: value for key, value in shim.items() if key != "PYTHONPATH"}
    expected = run(tmp_path, plain, "stores", "claude", "--dry-run")
    done = run(tmp_path, shim, "stores", "claude", "--dry-run")
    assert done.returncode == expected.returncode, done.stderr.decode()
    first, *rest = done.stdout.decode().splitlines()
    assert first.startswith("gitclaw-compress: live-writer check: open files, read and write")
    assert rest == expected.stdout.decode().splitlines()[1:]
    assert done.stderr == expected.stderr
    parsed = orjson.loads(run(tmp_path, shim, "stores", "claude", "--dry-run", "--json").stdout)
    assert parsed["stores"][0]["sessions"] == 1


def test_the_agents_stores_and_ours_where_windows_keeps_them(tmp_path: Path) -> None:
    """On Windows the agents read `%USERPROFILE%` (Node's `os.homedir()`, Codex), not HOME,
    which Git Bash sets too; the tool keeps its data in `%LOCALAPPDATA%`, its settings in
    `%APPDATA%`, unless the XDG variables say otherwise."""
    profile, other = str(tmp_path / "profile"), str(tmp_path / "msys-home")
    env = {"USERPROFILE": profile, "HOME": other, "LOCALAPPDATA": "L", "APPDATA": "R"}
    assert user_home(env, windows=True) == profile
    assert user_home(env, windows=False) == other
    assert data_home(env, windows=True) == Path("L")
    assert config_home(env, windows=True) == Path("R", "gitclaw-compress")
    assert data_home(env, windows=False) == Path(other, ".local", "share")
    xdg = str(tmp_path / "xdg")
    assert data_home({**env, "XDG_DATA_HOME": xdg}, windows=True) == Path(xdg)
    assert claude_home({"HOME": other}).root == Path(other, ".claude")


def test_no_module_imports_a_posix_only_module_at_its_top() -> None:
    """Each use of fcntl, termios, pwd, grp or resource is inside a function that runs only
    where it exists (the subprocess tests above run those paths)."""
    import ast

    import gitclaw_compress

    posix_only = {"fcntl", "termios", "pwd", "grp", "resource", "pty", "tty"}
    found = []
    for path in Path(gitclaw_compress.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.name}: {name}" for name in names if name in posix_only]
    assert found == []


def test_no_module_names_a_signal_windows_lacks() -> None:
    """`signal.SIGKILL` and the rest appear only through getattr (the Windows start above
    keeps SIGKILL, which the standard library's POSIX subprocess needs)."""
    import gitclaw_compress

    posix_only = {"SIGKILL", "SIGSTOP", "SIGIO", "SIGHUP", "SIGUSR1", "SIGPIPE", "SIGALRM"}
    found = []
    for path in Path(gitclaw_compress.__file__).parent.rglob("*.py"):
        text = path.read_text()
        found += [f"{path.name}: {name}" for name in posix_only if f"signal.{name}" in text]
    assert found == []


def test_on_windows_a_file_held_open_cannot_be_replaced_and_is_left_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows refuses to replace a file another process holds open (without FILE_SHARE_DELETE):
    `os.replace` raises PermissionError there. Forced here: `os.name` "nt" and that error."""
    from gitclaw_compress.store import fileio

    target = tmp_path / "s.jsonl"
    target.write_bytes(b"old\n")
    atomic = fileio.AtomicFile(target)
    atomic.write(b"new\n")
    atomic.seal()

    def refused(source: object, destination: object) -> None:
        raise PermissionError(13, "The process cannot access the file")

    monkeypatch.setattr(os, "name", "nt")
    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(fileio.FileInUseError) as raised:
        atomic.replace()
    monkeypatch.undo()
    atomic.discard()
    message = str(raised.value)
    assert message == (
        f"{target}: in use by another process (Windows replaces no file that another process "
        "holds open); nothing was changed"
    )
    assert target.read_bytes() == b"old\n"
    assert [path.name for path in tmp_path.iterdir()] == ["s.jsonl"]
