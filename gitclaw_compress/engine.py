"""File-level operations: the pure core plus the git archive, with locks and atomic writes."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from gitclaw_compress.archive import ArchiveWriter, Repository
from gitclaw_compress.compress import (
    CompressSettings,
    ObjectId,
    compress_lines,
    git_blob_id,
    git_blob_id_sha256,
    scan,
    settle,
)
from gitclaw_compress.config import Config
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.fileio import AtomicFile, clean_stale_temps
from gitclaw_compress.formats import detect_file
from gitclaw_compress.remote import fetch_archive, fetch_command
from gitclaw_compress.restore import MissingObjectError, read_marker, restore_data
from gitclaw_compress.session import (
    LineCounts,
    RawLine,
    iter_lines,
    parse_entry,
)


@dataclass
class FileReport:
    path: str
    status: str  # compressed | unchanged | would-compress | below-threshold | disabled
    bytes_before: int
    bytes_after: int
    lines: int = 0
    turns: int = 0
    kept_turns: int = 0
    format: str = ""  # the format's name, once the file was recognized
    lines_compressed: int = 0
    objects: int = 0
    object_bytes: int = 0
    counts: LineCounts = field(default_factory=LineCounts)
    archive_commit: str | None = None
    warnings: list[str] = field(default_factory=list)
    budget: dict[str, Any] | None = None  # what a budget policy decided (prune.strategy, target)

    def as_json(self) -> dict[str, Any]:
        fields = asdict(self)
        del fields["counts"]
        return {**fields, **self.counts.as_json()}


@dataclass
class _Pending:
    output: AtomicFile
    stat: os.stat_result
    report: FileReport
    ref: str


def _stat_key(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


@contextlib.contextmanager
def _open_lines(path: Path) -> Iterator[Iterator[RawLine]]:
    with open(path, "rb") as handle:
        yield iter_lines(handle)


class IntactLines:
    """Which lines of the file exist byte for byte in HEAD's version, to record that commit.

    pi only appends, so HEAD's blob is usually a byte prefix of the file: then every complete
    line in that prefix is intact there, found by hashing the prefix as a git blob instead of
    reading HEAD's copy. Otherwise lines are compared one by one.
    """

    def __init__(self, repo: Repository, path: Path, rel: str) -> None:
        self.commit = repo.rev_parse("HEAD")
        self._prefix_lines = 0
        self._digests: dict[int, bytes] = {}
        if self.commit is None:
            return
        info = repo.object_info(f"{self.commit}:{rel}")
        if info is None:
            return
        oid, size = info
        prefix_lines = _blob_prefix_lines(path, size, oid)
        if prefix_lines is not None:
            self._prefix_lines = prefix_lines
            return
        blob = repo.reader.get(oid)
        if blob is not None:
            self._digests = {
                number: hashlib.blake2b(data, digest_size=16).digest()
                for number, data in enumerate(blob.split(b"\n"), start=1)
            }

    def commit_for(self, line: RawLine) -> str | None:
        if line.number <= self._prefix_lines:
            return self.commit
        digest = self._digests.get(line.number)
        if digest is not None and digest == hashlib.blake2b(line.data, digest_size=16).digest():
            return self.commit
        return None


def _blob_prefix_lines(path: Path, size: int, oid: str) -> int | None:
    """Complete lines in the first `size` bytes of the file if they hash to blob `oid`."""
    digest = (
        hashlib.sha1(b"blob %d\0" % size) if len(oid) == 40 else hashlib.sha256(b"blob %d\0" % size)
    )
    newlines = 0
    remaining = size
    with open(path, "rb") as handle:
        while remaining:
            chunk = handle.read(min(remaining, 1 << 20))
            if not chunk:
                return None
            digest.update(chunk)
            newlines += chunk.count(b"\n")
            remaining -= len(chunk)
    return newlines if digest.hexdigest() == oid else None


def blob_id_for(repo: Repository) -> ObjectId:
    """How this repository names a blob: SHA-1 or SHA-256, by its object format."""
    return git_blob_id_sha256 if repo.object_format() == "sha256" else git_blob_id


class Compression:
    """One `compress` run over several files: all archive writes land before any rename."""

    def __init__(self, repo: Repository, *, dry_run: bool = False) -> None:
        self.repo = repo
        self.dry_run = dry_run
        self._writers: dict[str, ArchiveWriter] = {}
        self._pending: list[_Pending] = []
        self._stack = contextlib.ExitStack()
        self._claimed: set[str] = set()
        self.object_id = blob_id_for(repo)

    def __enter__(self) -> Compression:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            self._abort()
        self._stack.close()

    def _abort(self) -> None:
        for writer in self._writers.values():
            writer.abort()
        for pending in self._pending:
            pending.output.discard()
        self._pending.clear()

    def claim(self, path: Path) -> str:
        """Check that `path` is a file in the repository and lock it for this run.

        Claim every file before the first `add`, so that a bad path or a file locked by
        another run stops the whole run before anything is written.
        """
        rel = self.repo.relative(path)
        if rel in self._claimed:
            return rel
        if not path.is_file():
            raise GitClawError(f"{rel}: no such session file; nothing was changed")
        self._stack.enter_context(self.repo.lock(rel, rel))
        self._claimed.add(rel)
        return rel

    def add(
        self,
        path: Path,
        config: Config,
        *,
        keep_turns: int | None = None,
        force: bool = False,
        settings: CompressSettings | None = None,
    ) -> FileReport:
        """Compress one file (written by `finish`). `settings` replace the config's."""
        rel = self.claim(path)
        clean_stale_temps(path)
        stat = path.stat()
        report = FileReport(rel, "unchanged", stat.st_size, stat.st_size)
        if not config["session.enabled"]:
            report.status = "disabled"
            return report
        fmt = detect_file(path, rel)
        report.format = fmt.name
        if not force and stat.st_size < config["session.sizeThresholdKB"] * 1024:
            report.status = "below-threshold"
            return report
        if settings is None:
            settings = config.compress_settings(keep_turns)
        with _open_lines(path) as lines:
            plan = scan(lines, settings, fmt)
        if plan.needs_settling:
            with _open_lines(path) as lines:
                plan = settle(plan, lines, settings, session_ref=rel)
        if plan.budget is not None:
            report.budget = plan.budget.as_json()
        counts = plan.counts
        report.lines, report.turns, report.kept_turns = counts.lines, plan.turns, plan.kept_turns
        report.counts = counts
        if counts.malformed:
            where = ", ".join(str(number) for number in counts.malformed_at)
            more = ", …" if counts.malformed > len(counts.malformed_at) else ""
            report.warnings.append(
                f"{rel}: {counts.malformed} line(s) that are not JSON objects passed through "
                f"untouched (line {where}{more})"
            )
        if not plan.touches_anything:
            return report
        intact = IntactLines(self.repo, path, rel)
        ref = config["archive.ref"]
        writer = self._writers.get(ref)
        if writer is None:
            writer = self._writers[ref] = ArchiveWriter(self.repo, ref)
        output = None if self.dry_run else AtomicFile(path)
        size_after = 0
        try:
            with _open_lines(path) as lines:
                for result in compress_lines(
                    lines,
                    plan,
                    settings,
                    session_ref=rel,
                    object_id=self.object_id,
                    intact_commit=intact.commit_for,
                ):
                    encoded = result.line.encode()
                    size_after += len(encoded)
                    if output is not None:
                        output.handle.write(encoded)
                    if result.changed:
                        report.lines_compressed += 1
                        for payload in result.payloads:
                            report.objects += 1
                            report.object_bytes += len(payload.data)
                            if not self.dry_run:
                                writer.add(payload.oid, payload.data)
            if output is not None:
                output.seal()
        except BaseException:
            if output is not None:
                output.discard()
            raise
        report.bytes_after = size_after
        if report.lines_compressed == 0:
            if output is not None:
                output.discard()
            report.bytes_after = stat.st_size
            return report
        if output is None:
            report.status = "would-compress"
            return report
        report.status = "compressed"
        self._pending.append(_Pending(output, stat, report, ref))
        return report

    def finish(self) -> None:
        """Make the archive durable, then replace each file atomically."""
        for ref, writer in self._writers.items():
            files = sorted({p.report.path for p in self._pending if p.ref == ref})
            if not files:
                writer.abort()
                continue
            commit = writer.commit("gitclaw-compress: " + ", ".join(files))
            for pending in self._pending:
                if pending.ref == ref:
                    pending.report.archive_commit = commit
        for pending in self._pending:
            if _stat_key(pending.output.target.stat()) != _stat_key(pending.stat):
                raise GitClawError(
                    f"{pending.report.path}: changed while it was being compressed; run again"
                )
        for pending in self._pending:
            pending.output.replace()
        self._pending.clear()


def _commit_line_source(
    repo: Repository, rel: str
) -> Callable[[int], Callable[[str], bytes | None]]:
    cache: dict[str, list[bytes] | None] = {}

    def for_line(number: int) -> Callable[[str], bytes | None]:
        def from_commit(commit: str) -> bytes | None:
            if commit not in cache:
                blob = repo.reader.get(f"{commit}:{rel}")
                cache[commit] = blob.split(b"\n") if blob is not None else None
            lines = cache[commit]
            if lines is None or number > len(lines):
                return None
            return lines[number - 1]

        return from_commit

    return for_line


class ArchiveAccess:
    """Where archived payloads come from: this clone first (the archive ref's objects, then
    the commits where a line was intact), then, once per run, the archive ref fetched from
    the remote (`archive.autoFetch`, `archive.remote`)."""

    def __init__(
        self,
        repo: Repository,
        ref: str,
        *,
        remote: str = "origin",
        auto_fetch: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.repo = repo
        self.ref = ref
        self.remote = remote
        self.auto_fetch = auto_fetch
        self.notify = notify
        self.fetched = False  # a fetch was tried in this run
        self.fetch_error: str | None = None
        self._archived: set[str] | None = None

    @classmethod
    def from_config(
        cls,
        repo: Repository,
        config: Config,
        *,
        fetch: bool = True,
        notify: Callable[[str], None] | None = None,
    ) -> ArchiveAccess:
        return cls(
            repo,
            config["archive.ref"],
            remote=config["archive.remote"],
            auto_fetch=fetch and config["archive.autoFetch"],
            notify=notify,
        )

    def fetch_once(self) -> bool:
        """Fetch the archive ref from the remote, once, when allowed; whether it worked."""
        if self.fetched or not self.auto_fetch or not self.repo.has_remote(self.remote):
            return False
        self.fetched = True
        if self.notify is not None:
            self.notify(f"fetching {self.ref} from {self.remote} (archive.autoFetch)")
        try:
            fetch_archive(self.repo, self.ref, self.remote)
        except GitClawError as error:
            self.fetch_error = str(error)
            return False
        self._archived = None
        return True

    def archived(self) -> set[str]:
        """Every payload id reachable from the archive ref."""
        if self._archived is None:
            self._archived = self.repo.archive_oids(self.ref)
        return self._archived

    def hint(self) -> str:
        if self.fetch_error is not None:
            return f"fetching it failed: {self.fetch_error}"
        if not self.repo.has_remote(self.remote):
            return (
                f"this clone has no remote {self.remote!r}; add the repository it came from "
                f"with `git remote add {self.remote} URL`, then run: "
                f"{fetch_command(self.ref, self.remote)}"
            )
        return f"get the archive with: {fetch_command(self.ref, self.remote)}"

    def restore(
        self, data: bytes, where: str, from_commit: Callable[[str], bytes | None] | None
    ) -> bytes:
        """The original bytes of one line, fetching the archive once if a payload is missing."""
        try:
            return restore_data(data, where, self.repo.reader.get, from_commit)
        except MissingObjectError as error:
            missing = error
        if self.fetch_once():
            try:
                return restore_data(data, where, self.repo.reader.get, from_commit)
            except MissingObjectError as error:
                missing = error
        if self.fetched and self.fetch_error is None:
            raise GitClawError(
                f"{missing}, nor on {self.remote}'s {self.ref}; the archive was not pushed "
                "from the clone that compressed this line"
            )
        raise GitClawError(f"{missing}; {self.hint()}")


def restored_lines(
    repo: Repository, path: Path, ref: str, access: ArchiveAccess | None = None
) -> Iterator[RawLine]:
    """The original lines of a (possibly compressed) session file."""
    rel = repo.relative(path)
    from_commit = _commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    with _open_lines(path) as lines:
        for line in lines:
            data = access.restore(line.data, f"{rel}:{line.number}", from_commit(line.number))
            yield line if data is line.data else RawLine(line.number, data, line.newline)


def restore_file(
    repo: Repository,
    path: Path,
    ref: str,
    output: Path | None,
    access: ArchiveAccess | None = None,
) -> int:
    """Write the original file to `output` (in place when None); returns the bytes written."""
    target = output if output is not None else path
    rel = repo.relative(path)
    with repo.lock(rel, rel):
        atomic = AtomicFile(target, mode_from=path if output is not None else None)
        try:
            written = restore_to_stream(repo, path, ref, atomic.handle, access)
            atomic.seal()
            atomic.replace()
        except BaseException:
            atomic.discard()
            raise
    return written


def restore_to_stream(
    repo: Repository,
    path: Path,
    ref: str,
    sink: IO[bytes],
    access: ArchiveAccess | None = None,
) -> int:
    written = 0
    for line in restored_lines(repo, path, ref, access):
        encoded = line.encode()
        written += len(encoded)
        sink.write(encoded)
    return written


@dataclass
class VerifyReport:
    path: str
    compressed_lines: int = 0
    objects: int = 0
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def verify_file(
    repo: Repository,
    path: Path,
    ref: str,
    archived: set[str] | None = None,
    access: ArchiveAccess | None = None,
) -> VerifyReport:
    """Check that every stub resolves, every hash matches, and every object is on the ref.

    With an `access` that may fetch, a payload missing from the local archive ref makes it
    fetch the archive from the remote once, then check again.
    """
    rel = repo.relative(path)
    report = VerifyReport(rel)
    from_commit = _commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)

    def on_ref(oid: str) -> bool:
        known = archived if archived is not None else access.archived()
        if oid in known:
            return True
        if archived is None and access.fetch_once():
            return oid in access.archived()
        return False

    try:
        detect_file(path, rel)
    except GitClawError as error:
        report.problems.append(str(error))
    with _open_lines(path) as lines:
        for line in lines:
            where = f"{rel}:{line.number}"
            try:
                marker = read_marker(line.data, where)
                if marker is None:
                    continue
                report.compressed_lines += 1
                for _, oid in marker.parts:
                    report.objects += 1
                    if not on_ref(oid):
                        report.problems.append(
                            f"{where}: object {oid} is not reachable from {ref} "
                            "(git gc would lose it and git push would not send it); "
                            f"{access.hint()}"
                        )
                access.restore(line.data, where, from_commit(line.number))
            except GitClawError as error:
                report.problems.append(str(error))
    return report


def find_entry(
    repo: Repository, path: Path, entry_id: str, ref: str, access: ArchiveAccess | None = None
) -> bytes:
    """The original line of the entry with this id, or of line N for `L<N>` (restored from the
    archive if needed)."""
    rel = repo.relative(path)
    from_commit = _commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    fmt = detect_file(path, rel)
    number = _line_ref(entry_id)
    needle = entry_id.encode()
    with _open_lines(path) as lines:
        for line in lines:
            if number is not None:
                if line.number != number:
                    continue
            elif needle not in line.data:
                continue
            else:
                entry = parse_entry(line.data)
                if entry is None or fmt.entry_id(entry) != entry_id:
                    continue
            return access.restore(line.data, f"{rel}:{line.number}", from_commit(line.number))
    if number is not None:
        raise GitClawError(f"{rel}: no line {number}")
    raise GitClawError(f"{rel}: no entry with id {entry_id!r}")


def _line_ref(ref: str) -> int | None:
    """N for a line reference "L<N>", the form stubs use for lines without an id."""
    if ref.startswith("L") and ref[1:].isdigit() and int(ref[1:]) > 0:
        return int(ref[1:])
    return None
