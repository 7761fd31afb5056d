"""`install`, `uninstall` and `pre-push`: the archive travels with every plain `git push`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    json_option,
    open_repo,
)
from gitclaw_compress.config import Config
from gitclaw_compress.errors import EXIT_ERROR, GitClawError, shell_line
from gitclaw_compress.formats.base import TITLES
from gitclaw_compress.ops.githooks import (
    PushedRef,
    branches_needing_archive,
    hook_state,
    install,
    parse_push_lines,
    pre_commit_push,
    uninstall,
)
from gitclaw_compress.store.archive import Repository

if TYPE_CHECKING:
    from gitclaw_compress.ops.agenthooks.install import Done
from gitclaw_compress.store.remote import push_archive


def _say(repo: Repository, message: str, as_json: bool, **more: object) -> None:
    """What install or uninstall did, and how the hook stands now."""
    if as_json:
        echo_json({"ok": True, "message": message, **more, "hook": hook_state(repo).as_json()})
        return
    click.echo(message)


AGENT_NAMES = click.Choice(list(TITLES))
agents_option = click.option(
    "--agents",
    "agents_flag",
    is_flag=True,
    help="The agents' own hooks instead (each AGENT named, or every one found / installed).",
)


def _agents(agents_flag: bool, names: tuple[str, ...]) -> bool:
    if names and not agents_flag:
        raise click.UsageError("AGENT names go with --agents")
    return agents_flag


def _say_agents(done: Done, as_json: bool) -> None:
    """What was done for each agent; then the agents it could not do, exit 3."""
    from gitclaw_compress.ops.agenthooks.state import hook_states

    if as_json:
        states = [state.as_json() for state in hook_states(os.environ)]
        document = {"ok": not done.errors, "messages": done.lines, "errors": done.errors}
        echo_json(document | {"agent_hooks": states})
        if done.errors:
            raise click.exceptions.Exit(EXIT_ERROR)
        return
    for line in done.lines:
        click.echo(line)
    if done.errors:
        raise GitClawError("; ".join(done.errors))


@click.command("install")
@agents_option
@click.argument("names", metavar="[AGENT]...", nargs=-1, type=AGENT_NAMES)
@json_option
def install_command(agents_flag: bool, names: tuple[str, ...], as_json: bool) -> None:
    """Install a pre-push hook that pushes refs/gitclaw/* along with your branches.

    After it, a plain `git push` of a branch that holds compressed sessions also sends the
    archive, so every clone can restore them. A pre-push hook already there is kept and run
    first; nothing is overwritten. Where pre-commit's script is the pre-push hook, this one
    becomes pre-push.legacy, which pre-commit runs. The hook records this interpreter, so it
    works without gitclaw-compress on PATH. `gitclaw-compress uninstall` undoes it.

    With --agents: install into each agent's own lifecycle hook instead (every agent whose
    folder exists, or each AGENT named: claude, codex, copilot, pi), so that the end of a
    session runs `gitclaw-compress stores AGENT`, detached. Whatever hook is there keeps
    running; see docs/agent-hooks.md.
    """
    if _agents(agents_flag, names):
        from gitclaw_compress.ops.agenthooks.install import install as install_agents

        _say_agents(install_agents(names, os.environ), as_json)
        return
    repo = open_repo(Path.cwd())
    _say(repo, install(repo), as_json)


@click.command("uninstall")
@agents_option
@click.argument("names", metavar="[AGENT]...", nargs=-1, type=AGENT_NAMES)
@json_option
def uninstall_command(agents_flag: bool, names: tuple[str, ...], as_json: bool) -> None:
    """Remove the pre-push hook that `install` wrote (and only that one), wherever it is.

    That is the hooks folder git uses now, every folder `install` wrote into (before
    core.hooksPath changed), and .git/hooks. A hook that was there before `install` is put
    back; other hooks are left alone. To undo the compression itself, run
    `gitclaw-compress restore --all` and commit the result.

    With --agents: take our hook out of each agent named (or of every agent), leaving each
    file byte for byte as it was before `install --agents` (a file it made is deleted); a
    file that changed since keeps its other changes.
    """
    if _agents(agents_flag, names):
        from gitclaw_compress.ops.agenthooks.install import uninstall as uninstall_agents

        _say_agents(uninstall_agents(names, os.environ), as_json)
        return
    repo = open_repo(Path.cwd())
    done = uninstall(repo)
    removed = [str(path) for path in done.removed]
    restored = [str(path) for path in done.restored]
    _say(repo, done.message, as_json, removed=removed, restored=restored)


def _check_commits(repo: Repository, config: Config, target: str, pushed: list[PushedRef]) -> None:
    """A session line with a secret in a commit the remote lacks stops the push (a warning
    each if unblocked), whether or not the archive goes too."""
    from gitclaw_compress.secrets.pushed import Pushed, guard_commits

    refs = [Pushed(p.local_oid, p.remote_oid or "0" * 40) for p in pushed]
    for warning in guard_commits(repo, config, target, refs):
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)


@click.command("pre-push")
@click.argument("remote", required=False)
@click.argument("url", required=False)
@config_option
@json_option
def pre_push_command(
    remote: str | None, url: str | None, config_path: Path | None, as_json: bool
) -> None:
    """Run by the pre-push hook: git passes REMOTE, URL and the refs on stdin.

    When a pushed branch holds compressed sessions, push the archive ref to REMOTE first
    (merging if the remote's archive moved; never forced). If that fails, the push stops.
    Run by pre-commit's pre-push stage (hook gitclaw-compress-push-archive), it reads the
    remote and the ref from pre-commit's PRE_COMMIT_* variables instead.
    """
    if remote is None:
        target, pushed = pre_commit_push(os.environ)
    else:
        target, pushed = remote, parse_push_lines(sys.stdin.read())
    repo = open_repo(Path.cwd())
    config = config_for(repo, None, config_path)
    ref = config["archive.ref"]
    branches = branches_needing_archive(repo, pushed, config["sessions.globs"])
    document: dict[str, object] = {"ok": True, "branches": branches, "ref": ref}
    if not branches or not repo.has_remote(target):
        if branches:  # `git push URL`: no remote name to push the archive to by itself.
            click.echo(
                f"gitclaw-compress: warning: pushing to a URL, not a remote; send the archive "
                f"with: {shell_line('git', 'push', target, f'{ref}:{ref}')}",
                err=True,
            )
        _check_commits(repo, config, target, pushed)
        document["pushed"] = False
        if as_json:
            echo_json(document)
        return
    from gitclaw_compress.secrets.check import guard_push

    # A secret in an archive object stops the push (a warning each if unblocked).
    for warning in guard_push(repo, config):
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    _check_commits(repo, config, target, pushed)
    result = push_archive(repo, ref, target)
    document.update(
        {
            "pushed": result.pushed,
            "reason": result.reason,
            "merged": result.merged,
            "tip": result.tip,
        }
    )
    if as_json:
        echo_json(document)
        return
    if result.pushed:
        merged = " (merged with the remote's archive first)" if result.merged else ""
        click.echo(f"gitclaw-compress: pushed {ref} to {target}{merged}", err=True)
