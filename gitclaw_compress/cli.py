"""The command-line edge: registers the commands and turns GitClawError into one line.

Exit codes: 0 success; 1 problems found (verify failed, `--check` would change files);
2 usage error; 3 the command could not do its job and changed nothing; 130 interrupted.
"""

from __future__ import annotations

from typing import Any

import click

from gitclaw_compress import __version__
from gitclaw_compress.commands import (
    compress,
    context,
    prune,
    restore,
    show,
    stats,
    status,
    step,
    summarize,
    sync,
    verify,
)
from gitclaw_compress.errors import GitClawError


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GitClawError as error:
            click.echo(f"gitclaw-compress: error: {error}", err=True)
            ctx.exit(error.exit_code)
        except KeyboardInterrupt:
            click.echo("gitclaw-compress: interrupted; nothing was changed", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gitclaw-compress")
def cli() -> None:
    """Restorable compression of agent sessions kept in git.

    Old turns lose their bulk (tool outputs, written files, images, thinking); every dropped
    byte goes to the git archive ref, and `restore` brings the original back byte for byte.
    """


for command in (
    compress.command,
    step.command,
    restore.command,
    verify.command,
    show.command,
    stats.command,
    status.command,
    context.command,
    prune.command,
    sync.push_command,
    sync.fetch_command,
    summarize.command,
):
    cli.add_command(command)


def main() -> None:
    cli.main(prog_name="gitclaw-compress")


if __name__ == "__main__":  # pragma: no cover
    main()
