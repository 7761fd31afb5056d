"""Options and helpers shared by the commands."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from gitclaw_compress.commands.progress import progress_for
from gitclaw_compress.config import Config, defaults, load_config
from gitclaw_compress.core.lines import (
    RawLine,
    lines_from_bytes,
)
from gitclaw_compress.errors import JSON_META_KEY, GitClawError
from gitclaw_compress.ops.discovery import Discovery, sessions_under
from gitclaw_compress.ops.flow import select
from gitclaw_compress.progress import SILENT, Progress, file_size, running
from gitclaw_compress.special_files import refuse_special
from gitclaw_compress.store.agent_store import in_a_store, store_root
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.repository import NotARepositoryError
from gitclaw_compress.units import human_bytes as human_bytes
from gitclaw_compress.units import plural as plural
from gitclaw_compress.units import size_change

if TYPE_CHECKING:  # loaded by the commands that use them, not by every command
    from gitclaw_compress.core.context import OriginalLine
    from gitclaw_compress.formats import Format
    from gitclaw_compress.ops.report import FileReport
    from gitclaw_compress.store.access import ArchiveAccess

F = TypeVar("F", bound=Callable[..., Any])

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="compression.json to use (default: the agent folder's, then the repository's).",
)


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[JSON_META_KEY] = True
    return value


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    callback=_remember_json,
    is_eager=True,  # known before any argument fails, so that failure prints JSON too
    help="Print JSON for machines (errors too).",
)
no_fetch_option = click.option(
    "--no-fetch",
    is_flag=True,
    help="Never fetch the archive from the remote; print the command that would instead.",
)


class SessionPathType(click.ParamType[Path]):
    """A session file argument; a folder is refused in one line (exit 3), not with usage,
    unless the command takes the sessions under a folder (`folders`)."""

    name = "path"

    def __init__(self, folders: bool = False) -> None:
        self.folders = folders

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = session_path(Path(value))  # as stubs and `status` name it: from the root too
        refuse_special(path)  # reading a FIFO or a device could wait for ever
        if path.is_dir() and not self.folders:
            raise GitClawError(f"{path}: is a directory, not a session file; nothing was changed")
        return path


def existing_path(required: bool = True, nargs: int = 1, folders: bool = False) -> Callable[[F], F]:
    """PATH arguments; with `folders`, a folder stands for the sessions under it."""
    return click.argument(
        "paths" if nargs != 1 else "path",
        nargs=nargs,
        required=required,
        type=SessionPathType(folders),
    )


def require_session(path: Path, where: str | None = None) -> None:
    """A readable session file whose line 1 is a session header; else one GitClawError."""
    source = where or str(path)
    if path.is_dir():
        raise GitClawError(f"{source}: is a directory, not a session file; nothing was changed")
    if not path.is_file():
        raise GitClawError(f"{source}: no such session file; nothing was changed")
    from gitclaw_compress.formats import detect_file

    detect_file(path, source)


def open_repo(path: Path, *, create_store: bool = False, dry_run: bool = False) -> Repository:
    """The place `path` lives in: the agent store that holds it once its archive exists
    (even inside a git work tree, such as a home folder kept in git), else its git
    repository, else the agent store that holds it (its archive made on first use when
    `create_store`: a command that writes; a `dry_run` of one makes it in a folder of its
    own that is thrown away at exit, as `stores --dry-run` does, so that it writes nothing)."""
    import os

    try:
        repo = Repository(path.absolute())
    except NotARepositoryError:
        repo = None
    if repo is None or in_a_store(path, os.environ):  # no format is loaded otherwise
        from gitclaw_compress.ops.stores import home_of, store_at
        from gitclaw_compress.store.agent_store import archive_path

        environ: dict[str, str] = dict(os.environ)
        home = home_of(path, environ) if create_store and dry_run and repo is None else None
        if home is not None and not (archive_path(home.agent, environ) / "HEAD").is_file():
            import shutil
            import tempfile

            scratch = tempfile.mkdtemp(prefix="gitclaw-compress-dry-run-")
            click.get_current_context().call_on_close(
                lambda: shutil.rmtree(scratch, ignore_errors=True)
            )
            environ["XDG_DATA_HOME"] = scratch
        from gitclaw_compress.store.private import private_umask

        with private_umask():  # opening may make the archive
            store = store_at(path, environ, create=create_store if repo is None else None)
        if store is not None:
            private_until_done()
            for note in store.notes:
                click.echo(f"gitclaw-compress: note: {note}", err=True)
            return store
    if repo is None:
        return Repository(path.absolute())  # the one-line "not inside a git repository"
    return repo


def private_until_done() -> None:
    """What a command that works in an agent's store writes (its archive, caches, locks, a
    baseline) is for this user alone until the command ends (store/private.py); a command
    in a repository keeps the user's umask."""
    import os

    from gitclaw_compress.store.private import PRIVATE_UMASK

    ctx = click.get_current_context(silent=True)
    if ctx is None or ctx.meta.get(PRIVATE_META_KEY):
        return
    previous = os.umask(PRIVATE_UMASK)
    ctx.meta[PRIVATE_META_KEY] = True
    ctx.call_on_close(lambda: os.umask(previous))


PRIVATE_META_KEY = "gitclaw_compress.private"


def config_for(repo: Repository, session: Path | None, explicit: Path | None) -> Config:
    return load_config(session, repo.config_root, explicit)


def archive_access(
    repo: Repository, session: Path | None, explicit: Path | None, no_fetch: bool
) -> ArchiveAccess:
    """How restore/verify/show reach archived payloads (fetching once when allowed)."""
    config = config_for(repo, session, explicit)

    def notify(message: str) -> None:
        click.echo(f"gitclaw-compress: {message}", err=True)

    from gitclaw_compress.store.access import ArchiveAccess

    return ArchiveAccess.from_config(repo, config, fetch=not no_fetch, notify=notify)


def session_path(path: Path) -> Path:
    """PATH as given, or, when it is relative and missing here, PATH from the root of the
    agent store or the repository we are in.

    Stubs name sessions by their repository-relative path, so the command an agent copies
    from a stub works from any folder of the checkout; the commands name a store's
    sessions from the store's folder, so those paths work from any folder of the store.
    """
    if path.exists() or path.is_absolute():
        return path
    import os

    store = store_root(Path.cwd(), os.environ)
    if store is not None and (store / path).exists():
        return store / path
    try:
        root = Repository(Path.cwd()).root
    except GitClawError:
        return path
    candidate = root / path
    return candidate if candidate.exists() else path


@dataclass
class SessionFile:
    """A session read for a read-only command; inside a git repository or not."""

    lines: list[RawLine]
    format: Format
    config: Config
    ref: str  # the repository-relative path, or the path as given outside a repository
    repo: Repository | None

    def originals(self) -> OriginalLine | None:
        """The original of a compressed line, from this clone's archive (never fetched):
        what the context's size takes off the recorded usage (`measure_context`)."""
        if self.repo is None:
            return None
        from gitclaw_compress.store.access import line_originals

        return line_originals(self.repo, self.ref, self.config["archive.ref"])


def read_session(path: Path, explicit: Path | None) -> SessionFile:
    """Read a session whole, check line 1, and find its config (defaults outside git)."""
    if not path.is_file():
        raise GitClawError(f"{path}: no such session file")
    lines = lines_from_bytes(path.read_bytes())
    from gitclaw_compress.formats import detect

    fmt = detect(lines, str(path))
    try:  # a repository, or an agent's store with its archive
        repo: Repository | None = open_repo(path)
    except GitClawError:
        repo = None
    if repo is not None:
        config = load_config(path, repo.config_root, explicit)
        return SessionFile(lines, fmt, config, repo.relative(path), repo)
    config = load_config(None, path.parent, explicit) if explicit else defaults()
    return SessionFile(lines, fmt, config, str(path), None)


def echo_json(value: object) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def change_summary(verb: str, report: FileReport, tail: str) -> str:
    """One line for a file that was (or would be) rewritten: sizes, lines, objects, `tail`."""
    archived = "" if report.status == "compressed" else " to write"
    return (
        f"{verb} {report.path}: {human_bytes(report.bytes_before)} -> "
        f"{human_bytes(report.bytes_after)} ({size_change(report.bytes_before, report.bytes_after)}"
        f"); {plural(report.lines_compressed, 'line')} compressed, "
        f"{plural(report.objects, 'new archive object')}{archived}; {tail}"
    )


all_option = click.option(
    "--all",
    "take_all",
    is_flag=True,
    help="Every session under sessions.globs, whatever its format.",
)


def sessions_to_report(
    path: Path | None, config_path: Path | None, warnings: list[str], *, take_all: bool = False
) -> tuple[list[Path], Discovery | None]:
    """PATH, the sessions under PATH when it is a folder, every session (`take_all`), or with
    none of these the sessions `compress` would take (see discovery.py)."""
    if path is not None and take_all:
        raise GitClawError("give a session path or --all, not both")
    if path is not None and path.is_dir():
        found = sessions_under(path)
        return found, Discovery(found, "folder", f"sessions under {path}")
    if path is not None:
        return [session_path(path)], None
    repo = open_repo(Path.cwd())
    config = load_config(None, repo.config_root, config_path)
    return select(repo, config, (), take_all=take_all, warnings=warnings)


def _session_ref(path: Path) -> str:
    """The repository-relative path of a session, for a line about it."""
    try:
        return Repository(path.absolute()).relative(path)
    except GitClawError:
        return str(path)


@contextlib.contextmanager
def _printed_after(progress: Progress) -> Iterator[None]:
    """What the block prints goes out once the progress line is away (a line on a terminal
    must not start after it); with no progress line, it goes out as it comes."""
    if progress is SILENT:
        yield
        return
    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held):
            yield
    finally:
        progress.clear()
        sys.stdout.write(held.getvalue())
        sys.stdout.flush()


def report_sessions(
    path: Path | None,
    config_path: Path | None,
    as_json: bool,
    report: Callable[[Path, bool], dict[str, Any]],
    *,
    take_all: bool = False,
) -> None:
    """Run `report(session, show)` on PATH, on every session (`take_all`), or on the sessions
    `compress` would take, and print the JSON of one session, or of the discovered ones with
    why they were chosen; the warnings of discovery, and a line when it found nothing.

    Of several sessions, one that the command cannot serve (its format lacks the ability)
    is one line naming the file, and the others are still reported; a single session named
    on the command line is an error instead."""
    from gitclaw_compress.formats.base import Unsupported

    warnings: list[str] = []
    several = path is None or path.is_dir()
    progress = progress_for(as_json, finding=True) if several else SILENT
    try:
        paths, found = sessions_to_report(path, config_path, warnings, take_all=take_all)
    finally:
        progress.clear()
    documents: list[dict[str, Any]] = []
    with running(progress, "reading", paths, _session_ref, file_size) as announced:
        for one in announced:
            ref = _session_ref(one)
            with _printed_after(progress):
                try:
                    documents.append(report(one, not as_json))
                except Unsupported as error:
                    located = error.at(ref)
                    if found is None:
                        raise located from None
                    documents.append({"path": ref, "error": str(located)})
                    if not as_json:
                        click.echo(str(located))
    if as_json:
        if found is None:
            echo_json(documents[0])
        else:
            selected = {"reason": found.reason, "detail": found.detail}
            echo_json({"selected": selected, "files": documents, "warnings": warnings})
        return
    for warning in warnings:
        click.echo(f"gitclaw-compress: warning: {warning}", err=True)
    if found is not None and not documents:
        click.echo(f"gitclaw-compress: no session found ({found.detail})")


def preserved_thinking_note(span: list[int] | None) -> str:
    """Why a session with preserved thinking compresses less: in words, with the lines."""
    if not span:
        return ""
    first, last = span
    lines = f"line {first}" if first == last else f"lines {first}-{last}"
    return (
        f"; less than it could: its model binds each thinking block to everything sent before "
        f"it (preserved thinking), so tool results, arguments and images the model sees on "
        f"{lines} stay as they are (docs/preserved-thinking.md)"
    )
