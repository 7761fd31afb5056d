"""`restore PATH [-o OUT]`: rebuild the original file byte for byte."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gitclaw_compress.commands.common import config_for, config_option, existing_path, open_repo
from gitclaw_compress.engine import restore_file, restore_to_stream


@click.command("restore")
@existing_path()
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Write the original here ('-' for stdout) instead of replacing PATH.",
)
@config_option
def command(path: Path, output: Path | None, config_path: Path | None) -> None:
    """Rebuild the original session file, byte for byte, from the git archive.

    Lines appended after compression are kept as they are. Every restored line is checked
    against the sha256 recorded when it was compressed.
    """
    repo = open_repo(path)
    ref = config_for(repo, path, config_path)["archive.ref"]
    if output is not None and str(output) == "-":
        restore_to_stream(repo, path, ref, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    written = restore_file(repo, path, ref, output)
    click.echo(f"restored {output or path}: {written:,} bytes")
