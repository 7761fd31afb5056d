"""`doctor`: are the hooks installed, is the archive on the remote, can every session be
restored from this clone?"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    human_bytes,
    json_option,
    open_repo,
    plural,
)
from gitclaw_compress.commands.verify import NOT_HERE, split_remedy
from gitclaw_compress.config import CONFIG_NAME, find_config_file, load_config
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError, shell_line
from gitclaw_compress.ops.agenthooks.state import AgentHookState, hook_states
from gitclaw_compress.ops.flow import select
from gitclaw_compress.ops.githooks import (
    hook_state,
    hooks_left_behind,
    pre_commit_state,
)
from gitclaw_compress.ops.sending import PRE_COMMIT_CONFIG, PUSH_ARCHIVE_HOOK
from gitclaw_compress.ops.verify import OFF_REF, verify_file
from gitclaw_compress.store.access import ArchiveAccess
from gitclaw_compress.store.agent_store import archive_size
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.intact import file_only_in_archive
from gitclaw_compress.store.remote import archive_fix, archive_state
from gitclaw_compress.store.session_lines import has_compressed_line


def _pre_commit(repo: Repository) -> dict[str, Any]:
    """pre-commit's side as `uninstall` reads it too (`pre_commit_state`)."""
    return pre_commit_state(repo).as_json()


def _configs_without_local_only(
    repo: Repository, compressed: list[Path], config_path: Path | None
) -> list[str]:
    """The compression.json files, as `compress` finds them for each compressed session
    (`--config`, its agent folder's such as .GITCLAW/compression.json, the root's), that
    leave archive.localOnly false; "compression.json" (the root's) where there is none."""
    names: set[str] = set()
    local_only: dict[Path | None, bool] = {}
    for path in compressed:
        found = find_config_file(path, repo.config_root, config_path)
        if found not in local_only:
            local_only[found] = load_config(path, repo.config_root, config_path)[
                "archive.localOnly"
            ]
        if not local_only[found]:
            names.add(CONFIG_NAME if found is None else _shown(repo, found))
    return sorted(names)


def _shown(repo: Repository, path: Path) -> str:
    """A config file as the user names it: repository-relative when it is inside."""
    try:
        return repo.relative(path)
    except GitClawError:
        return str(path)


def diagnose(repo: Repository, config_path: Path | None) -> dict[str, Any]:
    """What `doctor` finds in `repo`: its hooks, its archive, its sessions and the problems
    among them, as a JSON document (`command` adds the agents' own hooks to it)."""
    config = config_for(repo, None, config_path)
    ref, remote = config["archive.ref"], config["archive.remote"]
    skipped: list[str] = []  # files where sessions live that are none: not counted
    sessions, _ = select(repo, config, (), take_all=True, warnings=skipped)
    compressed = [path for path in sessions if has_compressed_line(path)]
    unrestorable, history_only = _restorable(repo, compressed, ref, remote)
    archive = archive_state(repo, ref, remote)
    hook = hook_state(repo)
    left_behind = hooks_left_behind(repo)
    problems: list[str] = [hook.problem] if hook.problem else []
    problems += _restore_problems(repo, unrestorable, history_only, archive["state"], ref, remote)
    if compressed and archive["state"] in ("missing", "behind"):
        problems.append(f"{remote} lacks this clone's {ref}; send it with: gitclaw-compress push")
    shared = _configs_without_local_only(repo, compressed, config_path)
    archive["local_only"] = not shared if compressed else config["archive.localOnly"]
    if not repo.sessions_travel:  # an agent's store: its archive stays here unless asked
        archive["local_only"] = archive["store"] = True
    if (
        compressed
        and archive["state"] == "no-remote"
        and not archive["local_only"]
        and not (unrestorable or history_only)  # whose fix already says to add the remote
    ):
        # Those a fresh clone of the branch could not restore, by compress's own rule.
        only = [p for p in compressed if file_only_in_archive(repo, p, repo.relative(p))]
        if only:
            names = _configs_without_local_only(repo, only, config_path)
            problems.append(_no_remote(len(compressed), len(only), remote, ref, names))
    return {
        "ok": not problems,
        "repository": str(repo.root),
        "kind": repo.kind,
        "git_dir": str(repo.git_dir),
        "git_dir_bytes": archive_size(repo.git_dir) if repo.kind == "store" else None,
        "pre_push_hook": hook.as_json() | {"left_behind": [str(p) for p in left_behind]},
        "pre_commit": _pre_commit(repo),
        "archive": {"ref": ref, **archive},
        "sessions": len(sessions),
        "skipped": skipped,
        "compressed_sessions": len(compressed),
        "unrestorable": unrestorable,
        "history_only": history_only,
        "problems": problems,
    }


def _restore_problems(
    repo: Repository,
    unrestorable: list[dict[str, Any]],
    history_only: list[dict[str, Any]],
    state: str,
    ref: str,
    remote: str,
) -> list[str]:
    """The problems of compressed sessions that cannot be restored here, or only from history."""
    problems: list[str] = []
    if unrestorable and repo.kind == "store":  # no clone, no origin: the archive is all
        problems.append(
            f"{plural(len(unrestorable), 'session')} cannot be restored from this store's "
            f"archive ({repo.git_dir}); put back the archive from your backup, or fetch "
            f"{ref} into it from the remote you pushed it to (docs/stores.md)"
        )
    elif unrestorable:
        problems.append(
            f"{plural(len(unrestorable), 'session')} cannot be restored from this clone; "
            + archive_fix(state, ref, remote)
        )
    if history_only:
        problems.append(
            f"{plural(len(history_only), 'session')} restore here only from git history, "
            f"not from {ref} (a rewritten history would lose them); "
            + archive_fix(state, ref, remote)
        )
    return problems


def _restorable(
    repo: Repository, compressed: list[Path], ref: str, remote: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The compressed sessions that cannot be restored here, and those that restore only
    from git history (each with its first problem), checked without a fetch."""
    unrestorable: list[dict[str, Any]] = []
    history_only: list[dict[str, Any]] = []
    access = ArchiveAccess(repo, ref, remote=remote, auto_fetch=False)
    for path in compressed:
        report = verify_file(repo, path, ref, access=access)
        if report.problems:
            missing = [problem for problem in report.problems if NOT_HERE.search(problem)]
            # Only off the archive ref: the lines still restore from the commits that hold
            # them intact, until a rewritten history drops those.
            off_ref = [problem for problem in report.problems if OFF_REF in problem]
            if not missing and len(off_ref) == len(report.problems):
                history_only.append({"path": report.path, "problem": off_ref[0]})
                continue
            unrestorable.append({"path": report.path, "problem": (missing or report.problems)[0]})
    return unrestorable, history_only


def _no_remote(compressed: int, only: int, remote: str, ref: str, shared: list[str]) -> str:
    """The problem of compressed sessions whose archive has no remote to go to: the `only`
    of them with originals that only the archive keeps (the others restore from the branch
    history in a fresh clone)."""
    add = shell_line("git", "remote", "add", remote, "URL")
    if only == compressed:
        them = "it" if compressed == 1 else "them"
        lacking = f"{plural(compressed, 'compressed session')} here, but no remote {remote!r} "
        lacking += f"to send {ref} to: a fresh clone could not restore {them}"
    else:
        rest = compressed - only
        lacking = (
            f"{plural(compressed, 'compressed session')} here, {only} with originals only "
            f"in {ref}, but no remote {remote!r} to send it to: a fresh clone could not "
            f"restore {'that one' if only == 1 else 'those'} (the "
            f"{'other restores' if rest == 1 else f'other {rest} restore'} from the branch "
            "history)"
        )
    return (
        f"{lacking}; add that remote "
        f"(`{add}`, or set archive.remote to the remote you push to), then run: "
        "gitclaw-compress push; "
        "to keep the archive in this clone on purpose, set archive.localOnly to true in "
        + " and ".join(shared)
    )


def hook_text(hook: dict[str, Any], pre_commit: dict[str, Any]) -> str:
    """What `git push` does about the archive, as the hooks stand (never a step that breaks
    the next push: with pre-commit's script in front, `install` writes pre-push.legacy)."""
    if hook["problem"]:
        return "does not work as it stands (see the problem below)"
    if hook["installed"]:
        where = (
            f" as {Path(hook['location']).name}, run by pre-commit's pre-push script"
            if hook["run_by_pre_commit"]
            else " (runs the previous hook first)"
            if hook["chained"]
            else ""
        )
        return f"installed{where}: git push sends the archive"
    if pre_commit["push_archive_configured"] and pre_commit["pre_push_installed"]:
        return f"pre-commit's {PUSH_ARCHIVE_HOOK} sends the archive with git push"
    if pre_commit["push_archive_configured"]:
        return (
            f"not installed; {PUSH_ARCHIVE_HOOK} is configured but pre-commit's pre-push "
            "script is not (run: pre-commit install -t pre-push, or gitclaw-compress install)"
        )
    return "not installed (run: gitclaw-compress install)"


ARCHIVE_STATES = {
    "up-to-date": "on {remote}, up to date",
    "not-fetched": "on {remote}, not in this clone (run: gitclaw-compress fetch)",
    "behind": "{remote} lacks this clone's latest archive (run: gitclaw-compress push)",
    "missing": "not on {remote} (run: gitclaw-compress push)",
    "none": "none yet, here or on {remote}",
    "no-remote": "no remote {remote!r} (set archive.remote, or `{add_remote}`)",
    "unreachable": "{remote} could not be asked: {error}",
}


def archive_text(archive: dict[str, Any]) -> str:
    if archive["state"] == "no-remote" and archive.get("store"):
        return "kept on this machine only (a store's archive is pushed only to a remote you name)"
    if archive["state"] == "no-remote" and archive["local_only"]:
        return f"kept in this clone only (archive.localOnly; no remote {archive['remote']!r})"
    add_remote = shell_line("git", "remote", "add", archive["remote"], "URL")
    return str(ARCHIVE_STATES[archive["state"]].format(add_remote=add_remote, **archive))


def agent_hook_text(state: AgentHookState) -> str:
    """One agent's hook for people: where it is, what it chains, when it last ran."""
    if state.installed:
        chained = f", then runs {state.chained}" if state.chained else ""
        text = f"installed: {state.event} in {state.file}{chained}"
    elif state.found:
        text = f"not installed (run: gitclaw-compress install --agents {state.agent})"
    else:
        text = "not installed (the agent's folder is not there)"
    if state.last:
        text += f"; last: {state.last}"
    elif state.installed:  # the log has no line of this agent's hook
        text += "; has not run yet"
    return f"{state.title}: {text}"


def _agent_hooks(as_json: bool) -> None:
    """`doctor --agents`: each agent's hook, wherever doctor runs."""
    from gitclaw_compress.store import live

    states = hook_states(os.environ)
    problems = [state.problem for state in states if state.problem]
    check = live.check().line()  # what the hooks' passes can tell of a running agent
    if as_json:
        agents = [state.as_json() for state in states]
        echo_json(
            {"ok": not problems, "agent_hooks": agents, "live_check": check, "problems": problems}
        )
    else:
        for state in states:
            click.echo(f"agent hook:    {agent_hook_text(state)}")
        click.echo(f"live writers:  {check.removeprefix('live-writer check: ')}")
        for problem in problems:
            click.echo(f"problem: {problem}")
    if problems:
        raise click.exceptions.Exit(EXIT_PROBLEMS)


@click.command("doctor")
@click.option(
    "--agents", "agents", is_flag=True, help="Only the agents' own hooks (anywhere, no repository)."
)
@config_option
@json_option
def command(agents: bool, config_path: Path | None, as_json: bool) -> None:
    """Check this clone: hooks installed, archive on the remote, every session restorable.

    Exits 1 when something needs your action: a compressed session cannot be restored from
    this clone, the remote lacks the archive that compressed sessions here need, or there
    is no remote to send it to (archive.localOnly: on purpose). Nothing is written.
    With --agents: each agent's own hook (`install --agents`) instead, and whether it works;
    without it, the agents whose hook is installed are listed too.
    """
    if agents:
        _agent_hooks(as_json)
        return
    repo = open_repo(Path.cwd())
    found = diagnose(repo, config_path)
    states = [state for state in hook_states(os.environ) if state.installed or state.problem]
    found["agent_hooks"] = [state.as_json() for state in states]
    found["problems"] += [state.problem for state in states if state.problem]
    found["ok"] = not found["problems"]
    for warning in found["skipped"]:
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    if as_json:
        echo_json(found)
    else:
        _print(found, states)
    if found["problems"]:
        raise click.exceptions.Exit(EXIT_PROBLEMS)


def _print(found: dict[str, Any], states: list[AgentHookState]) -> None:
    """`doctor` for people: the hooks (or the store), the archive, the sessions, the agents'
    hooks, then each problem."""
    pre_commit = found["pre_commit"]
    pre_commit_text = (
        (
            "configured and installed"
            if pre_commit["installed"]
            else "configured, but not installed (run: pre-commit install -t pre-commit"
            + (" -t pre-push)" if pre_commit["push_archive_configured"] else ")")
        )
        if pre_commit["configured"]
        else f"not configured in {PRE_COMMIT_CONFIG}"
    )
    hook = found["pre_push_hook"]
    left = "".join(
        f"; a copy of ours is left in {path}, a folder git no longer uses (harmless; "
        "`gitclaw-compress uninstall` removes every copy)"
        for path in hook["left_behind"]
    )
    if found["kind"] == "store":  # git hooks mean nothing there: where the archive is
        click.echo(
            f"store:         {found['repository']}; its archive {found['git_dir']} "
            f"({human_bytes(found['git_dir_bytes'])}; see docs/stores.md to move or "
            "back it up)"
        )
    else:
        click.echo(f"pre-push hook: {hook_text(hook, pre_commit)}{left}")
        click.echo(f"pre-commit:    {pre_commit_text}")
    archive = found["archive"]
    click.echo(f"archive:       {archive['ref']}: {archive_text(archive)}")
    click.echo(
        f"sessions:      {plural(found['sessions'], 'session')}, "
        f"{found['compressed_sessions']} compressed, "
        f"{len(found['unrestorable'])} not restorable from this "
        + ("store's archive" if found["kind"] == "store" else "clone")
        + (f", {len(found['history_only'])} only from git history" if found["history_only"] else "")
    )
    for item in found["unrestorable"]:  # the problem names the file; the fix is below
        click.echo(f"  {split_remedy(item['problem'])[0]}")
    for state in states:
        click.echo(f"agent hook:    {agent_hook_text(state)}")
    for problem in found["problems"]:
        click.echo(f"problem: {problem}")
