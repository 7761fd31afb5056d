"""`show PATH ENTRY_ID`: print the full original of one entry; the command the stubs name."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from gitclaw_compress.commands.common import config_for, config_option, existing_path, open_repo
from gitclaw_compress.engine import find_entry
from gitclaw_compress.render import render_entry


@click.command("show")
@existing_path()
@click.argument("entry_id")
@click.option("--raw", is_flag=True, help="Print the original JSON line exactly as it was.")
@config_option
def command(path: Path, entry_id: str, raw: bool, config_path: Path | None) -> None:
    """Print the full original of the entry ENTRY_ID: tool output, written file, thinking."""
    repo = open_repo(path)
    ref = config_for(repo, path, config_path)["archive.ref"]
    original = find_entry(repo, path, entry_id, ref)
    if raw:
        sys.stdout.buffer.write(original + b"\n")
        sys.stdout.buffer.flush()
        return
    click.echo(render_entry(orjson.loads(original)))
