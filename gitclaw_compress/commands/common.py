"""Options and helpers shared by the commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from gitclaw_compress.archive import Repository
from gitclaw_compress.config import Config, defaults, load_config
from gitclaw_compress.engine import ArchiveAccess, FileReport
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import Format, detect
from gitclaw_compress.session import RawLine, lines_from_bytes

F = TypeVar("F", bound=Callable[..., Any])

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="compression.json to use (default: the agent folder's, then the repository's).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
no_fetch_option = click.option(
    "--no-fetch",
    is_flag=True,
    help="Never fetch the archive from the remote; print the command that would instead.",
)


def existing_path(required: bool = True, nargs: int = 1) -> Callable[[F], F]:
    return click.argument(
        "paths" if nargs != 1 else "path",
        nargs=nargs,
        required=required,
        type=click.Path(dir_okay=False, path_type=Path),
    )


def open_repo(path: Path) -> Repository:
    return Repository(path.absolute())


def config_for(repo: Repository, session: Path | None, explicit: Path | None) -> Config:
    return load_config(session, repo.root, explicit)


def archive_access(
    repo: Repository, session: Path | None, explicit: Path | None, no_fetch: bool
) -> ArchiveAccess:
    """How restore/verify/show reach archived payloads (fetching once when allowed)."""
    config = config_for(repo, session, explicit)

    def notify(message: str) -> None:
        click.echo(f"gitclaw-compress: {message}", err=True)

    return ArchiveAccess.from_config(repo, config, fetch=not no_fetch, notify=notify)


def session_path(path: Path) -> Path:
    """PATH as given, or, when it is relative and missing here, PATH from the repository root.

    Stubs name sessions by their repository-relative path, so the command an agent copies
    from a stub works from any folder of the checkout.
    """
    if path.exists() or path.is_absolute():
        return path
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


def read_session(path: Path, explicit: Path | None) -> SessionFile:
    """Read a session whole, check line 1, and find its config (defaults outside git)."""
    if not path.is_file():
        raise GitClawError(f"{path}: no such session file")
    lines = lines_from_bytes(path.read_bytes())
    fmt = detect(lines, str(path))
    try:
        repo: Repository | None = Repository(path.absolute())
    except GitClawError:
        repo = None
    if repo is not None:
        config = load_config(path, repo.root, explicit)
        return SessionFile(lines, fmt, config, repo.relative(path), repo)
    config = load_config(None, path.parent, explicit) if explicit else defaults()
    return SessionFile(lines, fmt, config, str(path), None)


def echo_json(value: object) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def change_summary(verb: str, report: FileReport, tail: str) -> str:
    """One line for a file that was (or would be) rewritten: sizes, lines, objects, `tail`."""
    saved = 1 - report.bytes_after / report.bytes_before if report.bytes_before else 0
    return (
        f"{verb} {report.path}: {human_bytes(report.bytes_before)} -> "
        f"{human_bytes(report.bytes_after)} (-{saved:.1%}); {report.lines_compressed} "
        f"lines, {report.objects} objects archived; {tail}"
    )
