"""`show [PATH] ENTRY_ID`: print the full original of one entry; the command the stubs name."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

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
    private_until_done,
    session_path,
)
from gitclaw_compress.core.stubs import findable_anywhere
from gitclaw_compress.errors import EXIT_USAGE, GitClawError
from gitclaw_compress.ops.render import render_line
from gitclaw_compress.ops.show import (
    Held,
    differing_copies,
    held_line,
    original_of,
    sessions_of,
    tool_names,
)
from gitclaw_compress.store.repository import NotARepositoryError, Repository
from gitclaw_compress.units import plural

if TYPE_CHECKING:
    from gitclaw_compress.store.access import ArchiveAccess


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

    This is the command the stubs name. Without PATH, it finds the sessions that hold
    ENTRY_ID among every file under sessions.globs, or, if none does, among the other .jsonl
    files of the work tree (stubs leave the path out for uuids); copies of one session (a
    checkpoint, a fork) are fine when each gives the same entry, and when they differ it
    names them. Ids unique only inside one file (short ids, `L42` line numbers) need PATH,
    or the session's id in its place (`show SESSION_ID L42`: Codex's stubs, as a rollout's
    lines have no ids; it finds the rollouts whose first line names that session).
    PATH may be relative to the repository root, so the command copied from a stub works
    from any folder of the checkout, and in a `--depth 1` clone it fetches the archive ref
    once (unless --no-fetch).
    """
    if raw and as_json:
        raise GitClawError(
            "--raw prints the line's exact bytes, --json a JSON document; give one of them",
            exit_code=EXIT_USAGE,
        )
    if len(arguments) > 2:
        raise click.UsageError(f"Got unexpected extra argument ({arguments[2]})")
    if not arguments or (len(arguments) == 1 and session_path(Path(arguments[0])).exists()):
        raise click.UsageError("Missing argument 'ENTRY_ID'.")
    entry_id = arguments[-1]
    repo, found = _held(arguments, config_path)
    printer = _Printer(repo, config_path, no_fetch, as_text=not (raw or as_json))
    printed, masked = printer(found[0])
    for copy in found[1:]:  # copies of one session (a checkpoint, a fork) may hold the id
        if printer(copy)[0] != printed:
            raise differing_copies(entry_id, found)
    names = [held.rel for held in found]
    if len(found) > 1:
        click.echo(
            f"gitclaw-compress: note: the same entry is in {plural(len(names), 'session')}: "
            f"{', '.join(names)}",
            err=True,
        )
    if masked:
        click.echo(f"gitclaw-compress: note: {masked} secret(s) masked", err=True)
    if as_json:  # the original entry itself, as a JSON value (the exact bytes: --raw)
        shown = {"path": names[0], "entry_id": entry_id, "entry": orjson.loads(printed)}
        searched = len(arguments) == 1 or _names_a_session(arguments[0])
        echo_json(shown | ({"copies": names} if searched else {}))
    elif raw:
        sys.stdout.buffer.write(printed + b"\n")
        sys.stdout.buffer.flush()
    else:
        click.echo(printed.decode())


def _held(arguments: tuple[str, ...], config_path: Path | None) -> tuple[Repository, list[Held]]:
    """The entry `show [PATH] ENTRY_ID` names, as each session holding it has it: searched
    for by id alone, by the session's id, or read from PATH."""
    if len(arguments) == 1:
        return _sessions_holding(arguments[0], config_path)
    if _names_a_session(arguments[0]):
        session_id, entry_id = arguments
        return _sessions_holding(entry_id, config_path, session_id)
    path, entry_id = SessionPathType().convert(arguments[0], None, None), arguments[1]
    repo = open_repo(path)
    return repo, [held_line(repo, path, entry_id)]


def _names_a_session(first: str) -> bool:
    """Whether `show FIRST ENTRY_ID` names the session by its id (Codex's stubs: `show
    SESSION_ID L42`), not by a path: no such file, and a uuid-like id."""
    return findable_anywhere(first) and not session_path(Path(first)).exists()


def _sessions_holding(
    entry_id: str, config_path: Path | None, session_id: str | None = None
) -> tuple[Repository, list[Held]]:
    """The sessions of this work tree that hold the id (with `session_id`: line `entry_id`
    of the sessions of that id), else of the agents' own stores (an agent runs the command
    its stub names from its project)."""
    try:
        repo = open_repo(Path.cwd())
        config = config_for(repo, None, config_path)
        return repo, sessions_of(repo, config, entry_id, session_id)
    except GitClawError as error:
        import os

        from gitclaw_compress.ops.stores import stores_holding

        private_until_done()
        try:
            return stores_holding(entry_id, os.environ, session_id)
        except GitClawError as none_there:
            raise (none_there if isinstance(error, NotARepositoryError) else error) from None


class _Printer:
    """What `show` prints for the entry a session holds: its original line (restored, and
    masked when `scan.enabled`), or the text for people; one archive access per archive
    setting, so a run fetches at most once."""

    def __init__(
        self, repo: Repository, config_path: Path | None, no_fetch: bool, *, as_text: bool
    ) -> None:
        self.repo, self.config_path, self.no_fetch = repo, config_path, no_fetch
        self.as_text = as_text
        self.accesses: dict[tuple[object, ...], ArchiveAccess] = {}

    def __call__(self, held: Held) -> tuple[bytes, int]:
        """The bytes printed, and how many secrets were masked in them."""
        config = config_for(self.repo, held.path, self.config_path)
        key = (config["archive.ref"], config["archive.remote"], config["archive.autoFetch"])
        if key not in self.accesses:
            self.accesses[key] = archive_access(
                self.repo, held.path, self.config_path, self.no_fetch
            )
        original, masked = original_of(self.repo, held, self.accesses[key]), 0
        if config["scan.enabled"]:  # never print a secret
            from gitclaw_compress.secrets.mask import mask_line

            original, masked = mask_line(original)
        if not self.as_text:
            return original, masked
        names = tool_names(held.path, held.fmt)
        return render_line(held.fmt, 0, orjson.loads(original), names).encode(), masked
