"""`show [PATH] ENTRY_ID`: print the full original of one entry; the command the stubs name."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from gitclaw_compress.commands.common import (
    SessionPathType,
    archive_access,
    config_for,
    config_option,
    echo_json,
    json_option,
    no_fetch_option,
    open_repo,
    session_path,
)
from gitclaw_compress.formats import detect_file
from gitclaw_compress.ops.render import render_line
from gitclaw_compress.ops.show import find_entry, session_of, tool_names


@click.command("show")
@click.argument("arguments", nargs=-1, metavar="[PATH] ENTRY_ID")
@click.option("--raw", is_flag=True, help="Print the original JSON line exactly as it was.")
@no_fetch_option
@config_option
@json_option
def command(
    arguments: tuple[str, ...],
    raw: bool,
    no_fetch: bool,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Print the full original of the entry ENTRY_ID: tool output, written file, thinking.

    This is the command the stubs name. Without PATH, it finds the one session that holds
    ENTRY_ID among every file under sessions.globs (stubs leave the path out for uuids);
    ids unique only inside one file (short ids, `L42` line numbers) need PATH. PATH may be
    relative to the repository root, so the command copied from a stub works from any
    folder of the checkout, and in a `--depth 1` clone it fetches the archive ref once
    (unless --no-fetch).
    """
    if len(arguments) > 2:
        raise click.UsageError(f"Got unexpected extra argument ({arguments[2]})")
    if not arguments or (len(arguments) == 1 and session_path(Path(arguments[0])).exists()):
        raise click.UsageError("Missing argument 'ENTRY_ID'.")
    if len(arguments) == 1:
        entry_id = arguments[0]
        repo = open_repo(Path.cwd())
        path = session_of(repo, config_for(repo, None, config_path), entry_id)
    else:
        path, entry_id = SessionPathType().convert(arguments[0], None, None), arguments[1]
        repo = open_repo(path)
    access = archive_access(repo, path, config_path, no_fetch)
    original = find_entry(repo, path, entry_id, access.ref, access)
    if config_for(repo, path, config_path)["scan.enabled"]:  # never print a secret
        from gitclaw_compress.secrets.mask import mask_line

        original, masked = mask_line(original)
        if masked:
            click.echo(f"gitclaw-compress: note: {masked} secret(s) masked", err=True)
    if as_json:  # the original entry itself, as a JSON value (the exact bytes: --raw)
        echo_json(
            {"path": repo.relative(path), "entry_id": entry_id, "entry": orjson.loads(original)}
        )
        return
    if raw:
        sys.stdout.buffer.write(original + b"\n")
        sys.stdout.buffer.flush()
        return
    fmt = detect_file(path, repo.relative(path))
    click.echo(render_line(fmt, 0, orjson.loads(original), tool_names(path, fmt)))
