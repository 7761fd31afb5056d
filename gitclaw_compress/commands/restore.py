"""`restore PATH [-o OUT]`: rebuild the original file byte for byte."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    archive_access,
    config_option,
    existing_path,
    no_fetch_option,
    open_repo,
    session_path,
)
from gitclaw_compress.engine import restore_file, restore_to_stream


@click.command("restore")
@existing_path()
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Write the original here ('-' for stdout) instead of replacing PATH.",
)
@no_fetch_option
@config_option
def command(path: Path, output: Path | None, no_fetch: bool, config_path: Path | None) -> None:
    """Rebuild the original session file, byte for byte, from the git archive.

    Lines appended after compression are kept as they are. Every restored line is checked
    against the sha256 recorded when it was compressed. In a clone that lacks archived
    payloads (`--depth 1`, single branch) it uses the commits where a line was intact, then
    fetches the archive ref from archive.remote once (unless --no-fetch).
    """
    path = session_path(path)
    repo = open_repo(path)
    access = archive_access(repo, path, config_path, no_fetch)
    ref = access.ref
    if output is not None and str(output) == "-":
        restore_to_stream(repo, path, ref, sys.stdout.buffer, access)
        sys.stdout.buffer.flush()
        return
    written = restore_file(repo, path, ref, output, access)
    click.echo(f"restored {output or path}: {written:,} bytes")
