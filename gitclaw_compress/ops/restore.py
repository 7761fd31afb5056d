"""Restoring the original of a session file, byte for byte, to itself, a file or a stream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

from gitclaw_compress.core.lines import MARKER_BYTES, LineBatch, RawLine
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.ops.access import ArchiveAccess, commit_line_source
from gitclaw_compress.ops.check import FileCheck, check_file
from gitclaw_compress.ops.session_lines import open_lines
from gitclaw_compress.store.fileio import (
    AtomicFile,
    clean_stale_temps,
    disk_error,
    is_special,
)
from gitclaw_compress.store.repository import Repository


def restored_lines(
    repo: Repository,
    path: Path,
    ref: str,
    access: ArchiveAccess | None = None,
    check: FileCheck | None = None,
) -> Iterator[RawLine]:
    """The original lines of a (possibly compressed) session file.

    A file that fails the whole-file check is refused; a damaged line is taken from the
    version that the check found intact, when there is one.
    """
    rel = repo.relative(path)
    from_commit = commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    check = check if check is not None else check_file(repo, path, ref, access)
    if check.status == "damaged":
        raise GitClawError(f"{check.problems[0]}; nothing was restored")
    replacements = check.replacements
    with open_lines(path) as lines:
        for line in lines:
            source = replacements.get(line.number, line.data) if replacements else line.data
            if MARKER_BYTES not in source:  # a line never compressed is its own original
                yield line if source is line.data else RawLine(line.number, source, line.newline)
                continue
            data = access.restore(source, f"{rel}:{line.number}", from_commit(line.number))
            yield line if data is line.data else RawLine(line.number, data, line.newline)


def restore_file(
    repo: Repository,
    path: Path,
    ref: str,
    output: Path | None,
    access: ArchiveAccess | None = None,
) -> int:
    """Write the original file to `output` (in place when None); returns the bytes written.

    A device or pipe is written as a stream; a symlink is followed, never replaced.
    """
    target = (output if output is not None else path).resolve()
    rel = repo.relative(path)
    with repo.lock(rel, rel, reading=output is not None):
        if output is None:
            clean_stale_temps(target, repo.git_dir)
        if output is not None and is_special(target):
            try:
                with open(target, "wb") as sink:
                    return restore_to_stream(repo, path, ref, sink, access)
            except OSError as error:
                raise disk_error(error, target, "writing") from None
        git_dir = repo.git_dir if _inside(target, repo.root) else None
        if output is not None:
            clean_stale_temps(target, git_dir)
        atomic = AtomicFile(
            target,
            mode_from=path if output is not None else None,
            git_dir=git_dir,
            doing="restoring",
        )
        try:
            written = restore_to_stream(repo, path, ref, atomic, access)
            atomic.seal()
            atomic.replace(rel if output is None else str(output))
        except OSError as error:
            atomic.discard()
            raise disk_error(error, target, "writing") from None
        except KeyboardInterrupt:
            atomic.discard()
            if atomic.replaced:  # the interrupt came just after the rename
                raise GitClawError(
                    f"interrupted after restoring {output or rel}", exit_code=130
                ) from None
            raise
        except BaseException:
            atomic.discard()
            raise
    return written


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def restore_to_stream(
    repo: Repository,
    path: Path,
    ref: str,
    sink: IO[bytes] | AtomicFile,
    access: ArchiveAccess | None = None,
) -> int:
    batch = LineBatch(sink.write)
    for line in restored_lines(repo, path, ref, access):
        batch.add(line)
    batch.flush()
    return batch.size
