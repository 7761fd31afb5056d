"""`install`, `uninstall` and `pre-push`: the archive travels with every plain `git push`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    config_for,
    config_option,
    echo_json,
    json_option,
    open_repo,
)
from gitclaw_compress.errors import shell_line
from gitclaw_compress.ops.githooks import (
    branches_needing_archive,
    hook_state,
    install,
    parse_push_lines,
    pre_commit_push,
    uninstall,
)
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.remote import push_archive


def _say(repo: Repository, message: str, as_json: bool, **more: object) -> None:
    """What install or uninstall did, and how the hook stands now."""
    if as_json:
        echo_json({"ok": True, "message": message, **more, "hook": hook_state(repo).as_json()})
        return
    click.echo(message)


@click.command("install")
@json_option
def install_command(as_json: bool) -> None:
    """Install a pre-push hook that pushes refs/gitclaw/* along with your branches.

    After it, a plain `git push` of a branch that holds compressed sessions also sends the
    archive, so every clone can restore them. A pre-push hook already there is kept and run
    first; nothing is overwritten. Where pre-commit's script is the pre-push hook, this one
    becomes pre-push.legacy, which pre-commit runs. The hook records this interpreter, so it
    works without gitclaw-compress on PATH. `gitclaw-compress uninstall` undoes it.
    """
    repo = open_repo(Path.cwd())
    _say(repo, install(repo), as_json)


@click.command("uninstall")
@json_option
def uninstall_command(as_json: bool) -> None:
    """Remove the pre-push hook that `install` wrote (and only that one), wherever it is.

    That is the hooks folder git uses now, every folder `install` wrote into (before
    core.hooksPath changed), and .git/hooks. A hook that was there before `install` is put
    back; other hooks are left alone. To undo the compression itself, run
    `gitclaw-compress restore --all` and commit the result.
    """
    repo = open_repo(Path.cwd())
    done = uninstall(repo)
    removed = [str(path) for path in done.removed]
    restored = [str(path) for path in done.restored]
    _say(repo, done.message, as_json, removed=removed, restored=restored)


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

    def check_commits() -> None:
        """A session line with a secret in a commit the remote lacks stops the push (a
        warning each if unblocked), whether or not the archive goes too."""
        from gitclaw_compress.secrets.pushed import Pushed, guard_commits

        refs = [Pushed(p.local_oid, p.remote_oid or "0" * 40) for p in pushed]
        for warning in guard_commits(repo, config, target, refs):
            click.echo(f"gitclaw-compress: warning: {warning}", err=True)

    if not branches:
        check_commits()
        document["pushed"] = False
        if as_json:
            echo_json(document)
        return
    if not repo.has_remote(target):
        # `git push URL`: no remote name to push the archive to by itself.
        click.echo(
            f"gitclaw-compress: warning: pushing to a URL, not a remote; send the archive "
            f"with: {shell_line('git', 'push', target, f'{ref}:{ref}')}",
            err=True,
        )
        check_commits()
        document["pushed"] = False
        if as_json:
            echo_json(document)
        return
    from gitclaw_compress.secrets.check import guard_push

    # A secret in an archive object stops the push (a warning each if unblocked).
    for warning in guard_push(repo, config):
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    check_commits()
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
