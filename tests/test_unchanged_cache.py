"""A no-op `step` skips the core for sessions that a run already found nothing to do in,
and never skips one that changed since, or whose settings changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flow_helpers import SESSIONS, commit_all, init, ok, session_bytes, tool, write
from synthetic import SessionBuilder, text, tool_call

CACHE = Path(".git") / "gitclaw-compress" / "unchanged.json"
# Small sessions are compressed too, so that a no-op run means "compressed, nothing left".
THRESHOLD_ZERO = b'{"session": {"sizeThresholdKB": 0}}'
# Every gain counts: the cache, not the minimum gain, is what decides in these sessions.
ANY_GAIN = b'{"session": {"sizeThresholdKB": 0, "minGainPercent": 0, "minGainBytes": 0}}'

# A command in a fresh interpreter, then which modules of the core it loaded.
PROBE = """
import sys
from gitclaw_compress.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="gitclaw-compress")
except SystemExit as done:
    assert not done.code, done.code
core = [name for name in ("gitclaw_compress.core.compressor", "gitclaw_compress.ops.compress")
        if name in sys.modules]
print("CORE:" + ",".join(core))
"""


def step_in_new_process(repo: Path, *args: str, command: str = "step") -> tuple[str, list[str]]:
    """What `step` (or `command`) printed, and the core modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, command, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    line, core = done.stdout.rsplit("CORE:", 1)
    return line.strip(), [name for name in core.strip().split(",") if name]


def compressed_and_committed(tmp_path: Path) -> tuple[Path, Path]:
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", THRESHOLD_ZERO)
    session = write(repo / SESSIONS / "a.jsonl", session_bytes(6))
    commit_all(repo)
    ok(repo, "step", "--keep-turns", "1")
    commit_all(repo, "compressed")
    return repo, session


def test_a_second_no_op_step_does_not_load_the_core(tmp_path: Path) -> None:
    repo, session = compressed_and_committed(tmp_path)
    first, core_first = step_in_new_process(repo, "--keep-turns", "1")
    second, core_second = step_in_new_process(repo, "--keep-turns", "1")
    assert "nothing to compress (1 unchanged)" in first and core_first, first
    assert second == first  # the same line, counts and format included
    assert core_second == []
    entry = json.loads((repo / CACHE).read_bytes())["entries"][str(session.resolve())]
    assert entry["report"]["status"] == "unchanged" and entry["report"]["format"] == "pi"


def test_an_append_after_a_no_op_run_is_compressed(tmp_path: Path) -> None:
    repo, session = compressed_and_committed(tmp_path)
    step_in_new_process(repo, "--keep-turns", "1")
    before = session.read_bytes()
    more = session_bytes(9).split(b"\n")[len(before.split(b"\n")) - 1 :]
    with open(session, "ab") as handle:
        handle.write(b"\n".join(more))
    line, core = step_in_new_process(repo, "--keep-turns", "1")
    assert "1 compressed" in line and core, line


def test_same_size_rewrite_with_another_mtime_is_read_again(tmp_path: Path) -> None:
    repo, session = compressed_and_committed(tmp_path)
    step_in_new_process(repo, "--keep-turns", "1")
    stat = session.stat()
    session.write_bytes(session.read_bytes())  # same bytes, new inode times
    os.utime(session, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    line, core = step_in_new_process(repo, "--keep-turns", "1")
    assert "1 unchanged" in line and core, line


def test_other_settings_are_not_answered_from_the_cache(tmp_path: Path) -> None:
    repo, _session = compressed_and_committed(tmp_path)
    step_in_new_process(repo, "--keep-turns", "1")
    _line, core = step_in_new_process(repo, "--keep-turns", "2")
    assert core  # keep 2 is another question
    write(
        repo / "compression.json", b'{"session": {"sizeThresholdKB": 0, "toolResultMaxBytes": 64}}'
    )
    _line, core = step_in_new_process(repo, "--keep-turns", "1")
    assert core  # so is another config


def test_a_damaged_cache_is_ignored_and_rewritten(tmp_path: Path) -> None:
    repo, _session = compressed_and_committed(tmp_path)
    write(repo / CACHE, b"{not json")
    line, core = step_in_new_process(repo, "--keep-turns", "1")
    assert "1 unchanged" in line and core
    assert json.loads((repo / CACHE).read_bytes())["v"] == 2
    _line, core = step_in_new_process(repo, "--keep-turns", "1")
    assert core == []


def test_dry_run_and_force_never_use_the_cache(tmp_path: Path) -> None:
    repo, _session = compressed_and_committed(tmp_path)
    step_in_new_process(repo, "--keep-turns", "1")
    for flag in ("--dry-run", "--force"):
        _line, core = step_in_new_process(repo, "--keep-turns", "1", flag, command="compress")
        assert core, flag
    _line, core = step_in_new_process(repo, "--keep-turns", "1", command="compress")
    assert core == []  # compress with no path shares the cache with step


def marginal_lines_session() -> bytes:
    """Tool calls whose `partialJson` copy is only worth a stub once the line sits intact in a
    commit (the v3 marker naming that blob is cheaper than one naming an archived payload)."""
    session = SessionBuilder()
    for turn, size in enumerate(range(60, 300, 20)):
        session.user(f"task {turn}")
        session.assistant(tool_call(f"c{turn}", "bash", {"command": "l" * size}))
        session.tool_result(f"c{turn}", "bash", "ok")
        session.assistant(text("ok"), stop="stop")
    return session.data()


def test_a_commit_that_makes_cheaper_markers_possible_is_not_answered_from_the_cache(
    tmp_path: Path,
) -> None:
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", ANY_GAIN)
    session = write(repo / SESSIONS / "a.jsonl", marginal_lines_session())
    ok(repo, "compress", "--keep-turns", "1", str(session))
    again = ok(repo, "compress", "--keep-turns", "1", str(session)).stdout.decode()
    assert again.startswith("unchanged")  # remembered as a no-op
    commit_all(repo, "compressed")
    check = tool(repo, "compress", "--keep-turns", "1", "--check", str(session))
    dry = ok(repo, "compress", "--keep-turns", "1", "--dry-run", str(session)).stdout.decode()
    real = ok(repo, "compress", "--keep-turns", "1", str(session)).stdout.decode()
    assert check.returncode == 1 and dry.startswith("would compress"), dry
    assert real.startswith("compressed"), real  # what --check and --dry-run said it would do
    lines_compressed = [line.split("; ")[1].split(",")[0] for line in (dry, real)]
    assert lines_compressed[0] == lines_compressed[1]  # "12 lines compressed" both times
    check_after = tool(repo, "compress", "--keep-turns", "1", "--check", str(session))
    assert check_after.returncode == 0, check_after.stdout
