"""`verify [PATH…]`: every stub resolves, every hash matches, every object is on the ref."""

from __future__ import annotations

import re
from pathlib import Path

import click

from gitclaw_compress.commands.common import (
    archive_access,
    config_for,
    config_option,
    echo_json,
    existing_path,
    json_option,
    no_fetch_option,
    open_repo,
    plural,
    require_session,
    session_path,
)
from gitclaw_compress.commands.progress import FINDING, progress_for
from gitclaw_compress.core.marker import NOT_IN
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError
from gitclaw_compress.ops.verify import VerifyReport, verify_file
from gitclaw_compress.progress import Progress, file_size, running
from gitclaw_compress.store.access import ArchiveAccess

# The remedies appended to a problem after "; " (`ArchiveAccess.hint`, `archive_fix`).
REMEDY = re.compile(
    r"; (?=get the archive with: |add the remote it was pushed to |fetching it failed: "
    r"|put the store's archive back |\S+ could not be asked; |\S+ has no \S+ to fetch either: )"
)


def split_remedy(problem: str) -> tuple[str, str]:
    """A problem without its remedy, and the remedy ("" if it has none)."""
    found = REMEDY.search(problem)
    if found is None:
        return problem, ""
    return problem[: found.start()], problem[found.end() :]


LINE_PROBLEM = re.compile(r"^(?P<rel>.+?):(?P<line>\d+): (?P<text>.*)$")
OBJECT_ID = re.compile(r"\b[0-9a-f]{40}(?:[0-9a-f]{24})?\b")
NOT_HERE = re.compile(rf"archived object (?P<oid>[0-9a-f]+) {NOT_IN} ")
SHOWN_LINES = 5  # line numbers listed for a cause, the rest counted


def by_cause(problems: list[str]) -> list[str]:
    """The problems of one file as one line per cause (not one per line and object).

    Problems that only differ in line number and object id are one cause; an object that is
    not in this clone at all is not also reported as unreachable from the archive ref.
    """
    missing = {match["oid"] for problem in problems if (match := NOT_HERE.search(problem))}
    groups: dict[tuple[str, str], list[str]] = {}
    texts: dict[tuple[str, str], set[str]] = {}
    alone: list[tuple[tuple[str, str], str]] = []
    for problem in problems:
        match = LINE_PROBLEM.match(problem)
        if match is None:
            alone.append(((problem, ""), problem))
            continue
        text = match["text"]
        ids = OBJECT_ID.findall(text)
        if ids and "is not reachable from" in text and set(ids) <= missing:
            continue  # said by "not in this clone" for the same object
        key = (match["rel"], OBJECT_ID.sub("…", text))
        if key not in groups:
            alone.append((key, ""))
        groups.setdefault(key, []).append(match["line"])
        texts.setdefault(key, set()).add(text)
    lines: list[str] = []
    for key, problem in alone:
        if problem:
            lines.append(problem)
            continue
        rel, text = key
        if len(texts[key]) == 1:  # one object for all of them: name it
            [text] = texts[key]
        numbers = list(dict.fromkeys(groups[key]))
        if len(numbers) == 1:
            lines.append(f"{rel}:{numbers[0]}: {text}")
            continue
        shown = ", ".join(numbers[:SHOWN_LINES])
        more = f" and {len(numbers) - SHOWN_LINES} more" if len(numbers) > SHOWN_LINES else ""
        lines.append(f"{rel}: lines {shown}{more}: {text}")
    return lines


@click.command("verify")
@existing_path(nargs=-1, required=False, folders=True)
@no_fetch_option
@config_option
@json_option
def command(
    paths: tuple[Path, ...], no_fetch: bool, config_path: Path | None, as_json: bool
) -> None:
    """Check compressed session files against the git archive.

    Exits 1 and lists the problems if a stub does not resolve, a hash does not match, or an
    archived object is not reachable from the archive ref. A clone that lacks the archive
    fetches it from archive.remote once first (unless --no-fetch). A folder stands for the
    session files under it.
    """
    progress = progress_for(as_json, finding=not paths or any(path.is_dir() for path in paths))
    paths = _sessions(paths, config_path, progress)
    repo = open_repo(paths[0])
    accesses: dict[str, ArchiveAccess] = {}
    reports: list[VerifyReport] = []
    with running(progress, "verifying", paths, repo.relative, file_size) as announced:
        for path in announced:
            access = archive_access(repo, path, config_path, no_fetch)
            access = accesses.setdefault(access.ref, access)
            reports.append(verify_file(repo, path, access.ref, access=access))
    problems = [problem for report in reports for problem in report.problems]
    if as_json:
        echo_json({"ok": not problems, "files": [report.as_json() for report in reports]})
    else:
        _print(reports)
    if problems:
        raise click.exceptions.Exit(EXIT_PROBLEMS)


def _sessions(
    paths: tuple[Path, ...], config_path: Path | None, progress: Progress
) -> tuple[Path, ...]:
    """The session files to verify: those named (a folder: the sessions under it), else
    every session compress would take; each must be one."""
    try:
        if not paths:
            from gitclaw_compress.ops.flow import select

            repo = open_repo(Path.cwd())
            skipped: list[str] = []  # a file where sessions live that is none: as compress does
            found, _ = select(
                repo, config_for(repo, None, config_path), (), take_all=True, warnings=skipped
            )
            progress.clear()  # the warnings go out on lines of their own
            for warning in skipped:
                click.echo(f"gitclaw-compress: warning: {warning}", err=True)
            progress.begin(FINDING, 0)
            paths = tuple(found)
            if not paths:
                raise GitClawError(f"no session files found under {repo.root}")
        from gitclaw_compress.ops.flow import expand_folder

        folders = [str(path) for path in paths if path.is_dir()]
        paths = tuple(one for path in paths for one in expand_folder(session_path(path)))
        if folders and not paths:
            raise GitClawError(f"no session files found under {', '.join(folders)}")
        for path in paths:
            require_session(path)
    except BaseException:
        progress.clear()  # an error's line starts at the margin
        raise
    return paths


def _print(reports: list[VerifyReport]) -> None:
    """Each file's status and problems by cause, each remedy once, then killed runs' leftovers."""
    remedies: list[str] = []
    for report in reports:
        count = len(report.problems)
        status = "ok" if not count else f"{count} problem{'' if count == 1 else 's'}"
        counted = (
            f"{plural(report.compressed_lines, 'compressed line')}, read back from "
            f"{plural(report.objects, 'archive object')}"
            if report.compressed_lines
            else "no compressed line"
        )
        click.echo(f"{status}: {report.path} ({counted})")
        texts = []
        for problem in report.problems:
            text, remedy = split_remedy(problem)
            texts.append(text)
            if remedy and remedy not in remedies:
                remedies.append(remedy)
        for text in by_cause(texts):
            click.echo(f"  {text}")
    for remedy in remedies:  # said once, not on every line it applies to
        click.echo(f"to fix: {remedy}")
    leftovers = sorted({item for report in reports for item in report.leftovers})
    if leftovers:  # killed git runs leave these; git never removes them by itself
        click.echo(
            f"note: {len(leftovers)} leftover(s) of killed git runs, safe to delete while "
            f"no git command runs: {', '.join(leftovers)}"
        )
