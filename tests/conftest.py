"""Hermetic git for every test: own HOME, no system config, fixed author and dates."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO_ROOT = Path(__file__).resolve().parent.parent
# The shared corpus beside the checkout; CORPUS_ENV points the tests elsewhere (a folder that
# does not exist shows that every corpus test skips cleanly without it).
CORPUS_ENV = "GITCLAW_TEST_CORPUS"
CORPUS = Path(os.environ.get(CORPUS_ENV) or REPO_ROOT.parent / "shared" / "corpus")

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}
# Whether this run is CI's. The fixture below unsets CI for every test, so a harness asks
# IN_CI_ENV instead when a missing agent CLI must fail the run, not skip (agent_harness.py).
IN_CI_ENV = "GITCLAW_TEST_IN_CI"
RUN_IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false")
# What the machine's environment may set that moves where the tool or an agent reads and
# writes, or changes what it says: never the test's, unless the test sets it. CI=true turns
# a warning into an error (ops/sending.py) and hides progress; the others would share one
# data folder (hook log, locks, archives) or one agent store between tests.
MACHINE_ENV = (
    "CI",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "PI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_SESSION_DIR",
    "GITCLAW_COMPRESS_INTERRUPT_AT",
    "GITCLAW_COMPRESS_TRACEBACK",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CEILING_DIRECTORIES",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "PRE_COMMIT",
    "PRE_COMMIT_HOME",
    "COLUMNS",
    "LINES",
)


# What only Linux has (file leases, /proc, unshare, tmpfs mounts, pidfd) or only POSIX
# (file modes, signals to a process, terminals): the tests that need it skip elsewhere
# (the workflow's macOS and Windows jobs), each with its reason. One helper for a test, one
# table for a whole module.
ON_LINUX = sys.platform.startswith("linux")


def linux_only(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not ON_LINUX, reason=f"needs Linux: {reason}")


LINUX_ONLY_MODULES = {
    "test_live_writers.py": "file leases (fcntl F_SETLEASE) and /proc/locks",
    "test_interrupts.py": "SIGINT, SIGTERM and SIGKILL sent to a run",
    "test_no_leaked_processes.py": "/proc to find the processes a run left",
    "test_agent_hooks.py": "/proc and pidfd to wait for the detached passes",
    "test_agent_hooks_real.py": "/proc and pidfd to wait for the detached passes",
    "test_stores_e2e.py": "/proc and pidfd to wait for the detached passes",
    "test_permissions.py": "POSIX file modes and owners",
    "test_special_files.py": "FIFOs and devices",
    "test_progress.py": "a pseudo-terminal (pty, termios)",
    "test_reporting.py": "a pseudo-terminal (pty)",
    "test_hardening.py": "POSIX file modes, resource limits and signals",
    "test_stores.py": "POSIX file modes, resource limits and /proc",
    "test_new_user.py": "POSIX file modes, signals and /proc",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ON_LINUX:
        return
    for item in items:
        reason = LINUX_ONLY_MODULES.get(item.path.name)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs Linux: {reason}"))


@pytest.fixture(scope="session")
def rule_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compiled secret-rule cache for the run: each fresh HOME would compile it again."""
    return tmp_path_factory.mktemp("secret-rules")


@pytest.fixture(scope="session")
def hook_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This project at a commit, as pre-commit's `repo:` (it installs the hook with pip)."""
    from flow_helpers import project_snapshot

    return project_snapshot(tmp_path_factory.mktemp("hook-source") / "gitclaw-compress")


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hook environment of `hook_source` for the run: pre-commit builds it once, as it
    would on a machine (a clone and a pip install, the same for every test that commits)."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(autouse=True)
def hermetic_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, rule_cache: Path
) -> None:
    monkeypatch.setenv("GITCLAW_COMPRESS_RULE_CACHE", str(rule_cache))
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    if os.name == "nt":  # where the agents and the tool look there (formats/shared/home.user_home)
        monkeypatch.setenv("USERPROFILE", str(home))
        monkeypatch.delenv("LOCALAPPDATA", raising=False)
        monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    for key in MACHINE_ENV:  # a test that means CI (or any of them) sets it
        monkeypatch.delenv(key, raising=False)
    for key in list(os.environ):
        if key.startswith("GITCLAW_COMPRESS_") and key != "GITCLAW_COMPRESS_RULE_CACHE":
            monkeypatch.delenv(key)  # the Action's inputs (action.py reads every one)
    if RUN_IN_CI:
        monkeypatch.setenv(IN_CI_ENV, "1")
    else:
        monkeypatch.delenv(IN_CI_ENV, raising=False)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    yield root


def commit_session(repo: Path, relpath: str, data: bytes) -> Path:
    """Write a session into the repository and commit it, as the agent's run does."""
    path = repo / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    return path


def corpus_files(kind: str = "pi") -> list[Path]:
    folder = CORPUS / kind
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


needs_corpus = pytest.mark.skipif(
    not (CORPUS / "pi").is_dir(), reason=f"shared corpus not found at {CORPUS}"
)

CORPUS_SESSIONS = ".GITCLAW/state/sessions"


@pytest.fixture
def corpus_repo(repo: Path) -> Path:
    """A repository whose last commit holds every corpus pi session under CORPUS_SESSIONS."""
    folder = repo / CORPUS_SESSIONS
    folder.mkdir(parents=True)
    for path in corpus_files():
        shutil.copyfile(path, folder / path.name)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions as the agent committed them")
    return repo


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run the installed console script, as users and hooks do."""
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", *args], cwd=cwd, capture_output=True
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}: {done.stderr.decode()}")
    return done


@functools.cache
def corpus_secret_hashes() -> frozenset[str]:
    """The sha256s of what the scan finds in the corpus: one real secret, a `.env` token the
    shared cc-test transcript printed (docs/secrets.md). Found at run time, never written
    down."""
    from gitclaw_compress.formats import detect_file
    from gitclaw_compress.secrets.scan import scan_file

    return frozenset(
        finding.hash
        for path in sorted(CORPUS.glob("*/*.jsonl"))
        for finding in scan_file(path, path.name, detect_file(path, path.name))
    )


def accept_corpus_secrets(repo: Path) -> None:
    """Accept the corpus's findings in `repo`'s baseline, as the transcript's owner would, so
    that `compress` of a corpus file goes on (a held session stays as it was)."""
    import orjson

    accepted = [
        {"hash": digest, "rule": "secret-assignment", "where": "the shared corpus"}
        for digest in sorted(corpus_secret_hashes())
    ]
    body = {"version": 1, "accepted": accepted}
    (repo / ".gitclaw-secrets.json").write_bytes(orjson.dumps(body))
