"""`doctor`: are the hooks installed, is the archive on the remote, can every session be
restored from this clone?"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    json_option,
    open_repo,
    plural,
)
from gitclaw_compress.errors import EXIT_PROBLEMS
from gitclaw_compress.ops.access import ArchiveAccess
from gitclaw_compress.ops.discovery import all_sessions
from gitclaw_compress.ops.githooks import hook_state
from gitclaw_compress.ops.session_lines import has_compressed_line
from gitclaw_compress.ops.verify import verify_file
from gitclaw_compress.store.archive import Repository

PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"


def _pre_commit(repo: Repository) -> dict[str, Any]:
    config = repo.root / PRE_COMMIT_CONFIG
    try:
        configured = "gitclaw-compress" in config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        configured = False
    hook = repo.git("rev-parse", "--git-path", "hooks/pre-commit").decode().strip()
    hook_path = Path(hook) if Path(hook).is_absolute() else repo.root / hook
    return {"configured": configured, "installed": hook_path.is_file()}


def _remote_archive(repo: Repository, ref: str, remote: str) -> dict[str, Any]:
    """Where the remote's archive ref stands against this clone's (asks the remote once)."""
    local = repo.rev_parse(ref)
    found: dict[str, Any] = {"remote": remote, "local_tip": local, "remote_tip": None}
    if not repo.has_remote(remote):
        found["state"] = "no-remote"
        return found
    done = subprocess.run(
        ["git", "ls-remote", "--refs", remote, ref], cwd=repo.root, capture_output=True
    )
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        found["state"] = "unreachable"
        found["error"] = lines[-1] if lines else f"exit code {done.returncode}"
        return found
    fields = done.stdout.decode().split()
    remote_tip = fields[0] if fields else None
    found["remote_tip"] = remote_tip
    if remote_tip is None:
        found["state"] = "missing" if local else "none"
    elif local is None or remote_tip == local:
        found["state"] = "up-to-date"
    elif repo.rev_parse(remote_tip) is not None and _contains(repo, remote_tip, local):
        found["state"] = "up-to-date"  # the remote moved on and includes this clone's archive
    else:
        found["state"] = "behind"
    return found


def _contains(repo: Repository, newer: str, older: str) -> bool:
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer], cwd=repo.root, capture_output=True
    )
    return done.returncode == 0


def diagnose(repo: Repository, config_path: Path | None) -> dict[str, Any]:
    config = config_for(repo, None, config_path)
    ref, remote = config["archive.ref"], config["archive.remote"]
    sessions = all_sessions(repo, config)
    compressed = [path for path in sessions if has_compressed_line(path)]
    unrestorable: list[dict[str, Any]] = []
    access = ArchiveAccess(repo, ref, remote=remote, auto_fetch=False)
    for path in compressed:
        report = verify_file(repo, path, ref, access=access)
        if report.problems:
            unrestorable.append({"path": report.path, "problem": report.problems[0]})
    archive = _remote_archive(repo, ref, remote)
    problems: list[str] = []
    if unrestorable:
        problems.append(
            f"{plural(len(unrestorable), 'session')} cannot be restored from this clone; "
            "get the archive with: gitclaw-compress fetch"
        )
    if compressed and archive["state"] in ("missing", "behind"):
        problems.append(f"{remote} lacks this clone's {ref}; send it with: gitclaw-compress push")
    return {
        "ok": not problems,
        "repository": str(repo.root),
        "pre_push_hook": hook_state(repo).as_json(),
        "pre_commit": _pre_commit(repo),
        "archive": {"ref": ref, **archive},
        "sessions": len(sessions),
        "compressed_sessions": len(compressed),
        "unrestorable": unrestorable,
        "problems": problems,
    }


ARCHIVE_STATES = {
    "up-to-date": "on {remote}, up to date",
    "behind": "{remote} lacks this clone's latest archive (run: gitclaw-compress push)",
    "missing": "not on {remote} (run: gitclaw-compress push)",
    "none": "none yet, here or on {remote}",
    "no-remote": "no remote {remote} (set archive.remote, or `git remote add {remote} URL`)",
    "unreachable": "{remote} could not be asked: {error}",
}


@click.command("doctor")
@config_option
@json_option
def command(config_path: Path | None, as_json: bool) -> None:
    """Check this clone: hooks installed, archive on the remote, every session restorable.

    Exits 1 when a compressed session cannot be restored from this clone, or when the
    remote lacks the archive that compressed sessions here need. Nothing is written.
    """
    repo = open_repo(Path.cwd())
    found = diagnose(repo, config_path)
    if as_json:
        echo_json(found)
    else:
        hook = found["pre_push_hook"]
        if hook["installed"]:
            chained = " (runs the previous hook first)" if hook["chained"] else ""
            hook_text = f"installed{chained}: git push sends the archive"
        else:
            hook_text = "not installed (run: gitclaw-compress install)"
        pre_commit = found["pre_commit"]
        pre_commit_text = (
            (
                "configured and installed"
                if pre_commit["installed"]
                else "configured, but not installed (run: pre-commit install)"
            )
            if pre_commit["configured"]
            else f"not configured in {PRE_COMMIT_CONFIG}"
        )
        archive = found["archive"]
        click.echo(f"pre-push hook: {hook_text}")
        click.echo(f"pre-commit:    {pre_commit_text}")
        click.echo(
            f"archive:       {archive['ref']} {ARCHIVE_STATES[archive['state']].format(**archive)}"
        )
        click.echo(
            f"sessions:      {plural(found['sessions'], 'session')}, "
            f"{found['compressed_sessions']} compressed, "
            f"{len(found['unrestorable'])} not restorable from this clone"
        )
        for item in found["unrestorable"]:
            click.echo(f"  {item['path']}: {item['problem']}")
        for problem in found["problems"]:
            click.echo(f"problem: {problem}")
    if found["problems"]:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
