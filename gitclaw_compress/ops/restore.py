"""Restoring the original of a session file, byte for byte, to itself, a file or a stream."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from gitclaw_compress.core.lines import MARKER_BYTES, READ_BUFFER, LineBatch, RawLine
from gitclaw_compress.core.marker import misplaced, written_v3_marker
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.ops.check import FileCheck, check_file
from gitclaw_compress.store.access import ArchiveAccess, commit_line_source
from gitclaw_compress.store.fileio import (
    AtomicFile,
    clean_stale_temps,
    disk_error,
    is_special,
)
from gitclaw_compress.store.git import GitFailureError
from gitclaw_compress.store.objects import BlobLinePool
from gitclaw_compress.store.repository import Repository
from gitclaw_compress.store.session_lines import open_lines


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
            where = f"{rel}:{line.number}"
            data = access.restore(source, where, from_commit(line.number), line.number)
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
            before = path.stat()
            written = restore_to_stream(repo, path, ref, atomic, access)
            atomic.seal()
            if output is None:
                keep_times(repo, atomic, before)
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


def keep_times(repo: Repository, atomic: AtomicFile, before: os.stat_result) -> None:
    """A store's session restored in place keeps its modification time, as compress keeps
    it: agents list and pick their sessions by it (`pi -c`, the resume pickers)."""
    if repo.keeps_times:
        os.utime(atomic.temp, ns=(before.st_atime_ns, before.st_mtime_ns))


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
    access = access if access is not None else ArchiveAccess(repo, ref)
    check = check_file(repo, path, ref, access)
    batch = LineBatch(sink.write)
    if check.status == "damaged" or check.replacements:  # line by line, with the repairs
        for line in restored_lines(repo, path, ref, access, check):
            batch.add(line)
        batch.flush()
        return batch.size
    restore_line = _line_restorer(repo, repo.relative(path), access)
    written = 0
    parts: list[bytes] = []
    pending = 0
    for block, number, ends_line in _marked_blocks(path):
        if ends_line is None:  # lines without a marker: their own originals, copied as they are
            parts.append(block)
            pending += len(block)
        else:
            part = restore_line(block, number)
            parts.append(part)
            if ends_line:
                parts.append(b"\n")
            pending += len(part) + ends_line
        if pending >= READ_BUFFER:
            sink.write(b"".join(parts))
            parts.clear()
            written += pending
            pending = 0
    if parts:
        sink.write(b"".join(parts))
        written += pending
    return written


def _line_restorer(
    repo: Repository, rel: str, access: ArchiveAccess
) -> Callable[[bytes, int], bytes]:
    """The original of a compressed line (bytes, number) of a file the whole-file check
    matched. A v3 marker as compress writes it is read by its match alone (the check found
    the line as compress wrote it) and its line taken from the blob, read forward, checked
    by its sha256. Any other line, and one whose original does not come out so (a missing
    or altered blob), goes the whole way: `ArchiveAccess.restore` (the commit where it is
    intact, a fetch, the one-line error)."""
    from_commit = commit_line_source(repo, rel)
    blobs = BlobLinePool(repo.root, repo.objects_dir)

    def restore(data: bytes, number: int) -> bytes:
        marker = written_v3_marker(data)
        if marker is not None and marker.intact is not None and misplaced(marker, number) is None:
            try:
                original = blobs.line(*marker.intact)
            except GitFailureError:  # a corrupt object: the whole way says so, in one line
                original = None
            if (
                original is not None
                and len(original) == marker.size
                and hashlib.sha256(original).hexdigest() == marker.sha256
            ):
                return original
        return access.restore(data, f"{rel}:{number}", from_commit(number), number)

    return restore


def _marked_blocks(
    path: Path, chunk_size: int = READ_BUFFER
) -> Iterator[tuple[bytes, int, bool | None]]:
    """The file as (bytes, line number, ends_line): runs of whole lines with no marker in
    them (ends_line None, the number of their first line), and each line that names the
    marker key on its own (without its newline; ends_line says whether one followed).

    Read in MiB chunks: a line without a marker, most of a file, is never a Python object
    of its own."""
    number = 1
    tail = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            data = tail + chunk if tail else chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # no line ends in it yet
                tail = data
                continue
            tail = data[cut:]
            position = 0
            while (hit := data.find(MARKER_BYTES, position, cut)) >= 0:
                start = data.rfind(b"\n", position, hit) + 1 or position
                end = data.index(b"\n", hit)
                if start > position:
                    yield data[position:start], number, None
                    number += data.count(b"\n", position, start)
                yield data[start:end], number, True
                number += 1
                position = end + 1
            if position < cut:
                yield data[position:cut], number, None
                number += data.count(b"\n", position, cut)
    if tail:  # the last line, without a newline
        yield tail, number, (None if MARKER_BYTES not in tail else False)
