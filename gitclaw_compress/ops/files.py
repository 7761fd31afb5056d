"""File-level operations: the pure core plus the git archive, with locks and atomic writes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from gitclaw_compress.config import Config
from gitclaw_compress.core.compressor import (
    CompressSettings,
    ObjectId,
    compress_lines,
    git_blob_id,
    git_blob_id_sha256,
    scan,
    settle,
)
from gitclaw_compress.core.lines import (
    MARKER_BYTES,
    READ_BUFFER,
    LineBatch,
    RawLine,
    has_marker,
    iter_lines,
    lines_from_bytes,
    parse_entry,
)
from gitclaw_compress.core.marker import MissingObjectError, read_marker, restore_data
from gitclaw_compress.errors import GitClawError, shell_line
from gitclaw_compress.formats import detect_file
from gitclaw_compress.formats.base import Unsupported
from gitclaw_compress.ops.report import FileReport as FileReport
from gitclaw_compress.store.archive import (
    ArchiveWriter,
    BlobLinePool,
    FileRecord,
    GitFailureError,
    Repository,
)
from gitclaw_compress.store.fileio import (
    AtomicFile,
    FileInUseError,
    clean_stale_temps,
    disk_error,
    is_special,
    signals_deferred,
)
from gitclaw_compress.store.remote import fetch_archive, fetch_command


@dataclass
class _Pending:
    output: AtomicFile
    stat: os.stat_result
    report: FileReport
    ref: str


def has_compressed_line(path: Path) -> bool:
    """Whether any line carries a marker (one scan in large chunks, not line by line)."""
    with open(path, "rb") as handle:
        return has_marker(handle)


def header_key(header: bytes) -> str:
    """The key of a session's records in the archive: line 1 never changes."""
    return hashlib.sha256(header).hexdigest()


@contextlib.contextmanager
def _open_lines(path: Path) -> Iterator[Iterator[RawLine]]:
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        yield iter_lines(handle)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so temp files are removed and the message is true."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _BlobLines:
    """Which lines of the file one git blob (a version of the session) holds byte for byte at
    the same line number; worked out on the first question only.

    pi only appends, so the blob is usually a byte prefix of the file: then every complete
    line in that prefix is intact there, found by hashing the prefix as a git blob instead of
    reading the blob. Otherwise lines are compared one by one.
    """

    def __init__(self, repo: Repository, path: Path, oid: str, size: int) -> None:
        self.oid = oid
        self._repo, self._path, self._size = repo, path, size
        self._prefix_lines: int | None = None
        self._digests: dict[int, bytes] = {}

    def _load(self) -> int:
        if self._prefix_lines is None:
            prefix_lines = _blob_prefix_lines(self._path, self._size, self.oid)
            self._prefix_lines = prefix_lines or 0
            if prefix_lines is None:
                blob = self._repo.reader.get(self.oid)
                if blob is not None:
                    self._digests = {
                        number: hashlib.blake2b(data, digest_size=16).digest()
                        for number, data in enumerate(blob.split(b"\n"), start=1)
                    }
        return self._prefix_lines

    def holds(self, line: RawLine) -> bool:
        if line.number <= self._load():
            return True
        digest = self._digests.get(line.number)
        return digest is not None and digest == hashlib.blake2b(line.data, digest_size=16).digest()


class IntactLines:
    """Which lines of the file exist byte for byte in HEAD's version (to record that commit)
    or in HEAD's or the staged blob of the file (for a v2 marker to reference)."""

    def __init__(self, repo: Repository, path: Path, rel: str) -> None:
        self.commit = repo.rev_parse("HEAD")
        self._head: _BlobLines | None = None
        self._staged: _BlobLines | None = None
        head = repo.object_info(f"{self.commit}:{rel}") if self.commit is not None else None
        if head is not None:
            self._head = _BlobLines(repo, path, *head)
        staged = repo.object_info(f":{rel}")
        if staged is not None and (head is None or staged[0] != head[0]):
            self._staged = _BlobLines(repo, path, *staged)

    def commit_for(self, line: RawLine) -> str | None:
        if self._head is not None and self._head.holds(line):
            return self.commit
        return None

    def blob_for(self, line: RawLine) -> str | None:
        """HEAD's blob when it holds the line, else the staged blob when that does."""
        for version in (self._head, self._staged):
            if version is not None and version.holds(line):
                return version.oid
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
        self._stack.enter_context(terminate_as_interrupt())
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if error is not None:
                self._abort()
        finally:
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
        rel = self.repo.relative(self.real_path(path))
        if rel in self._claimed:
            return rel
        if not path.is_file():
            raise GitClawError(f"{rel}: no such session file; nothing was changed")
        self._stack.enter_context(self.repo.lock(rel, rel))
        self._claimed.add(rel)
        return rel

    def real_path(self, path: Path) -> Path:
        """The file to rewrite: a symlink's target when it lies in the repository, so that
        the link stays a link and the stubs name the file that was compressed."""
        if not path.is_symlink():
            return path
        target = path.resolve()
        try:
            target.relative_to(self.repo.root)
        except ValueError:
            raise GitClawError(
                f"{path}: a symlink to {target}, outside the git repository; nothing was changed"
            ) from None
        return target

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
        path = self.real_path(path)
        clean_stale_temps(path, self.repo.git_dir)
        stat = path.stat()
        report = FileReport(rel, "unchanged", stat.st_size, stat.st_size)
        if not config["session.enabled"]:
            report.status = "disabled"
            return report
        fmt = detect_file(path, rel)
        report.format = fmt.name
        _refuse_damaged_markers(path, rel)
        if not force and stat.st_size < config["session.sizeThresholdKB"] * 1024:
            report.status = "below-threshold"
            return report
        if settings is None:
            settings = config.compress_settings(keep_turns)
        try:  # a budget policy reads the conversation, which a format may not offer
            with _open_lines(path) as lines:
                plan = scan(lines, settings, fmt)
        except Unsupported as error:
            raise error.at(rel) from None
        if plan.needs_settling:
            with _open_lines(path) as lines:
                plan = settle(plan, lines, settings, session_ref=rel)
        if plan.budget is not None:
            report.budget = plan.budget.as_json()
        self._warn_too_deep(plan, rel, report)
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
        output = None if self.dry_run else AtomicFile(path, git_dir=self.repo.git_dir)
        digest = hashlib.sha256()
        header = b""

        def sink(chunk: bytes) -> None:
            digest.update(chunk)
            if output is not None:
                output.write(chunk)

        batch = LineBatch(sink)
        try:
            with _open_lines(path) as lines:
                for result in compress_lines(
                    lines,
                    plan,
                    settings,
                    session_ref=rel,
                    object_id=self.object_id,
                    intact_commit=intact.commit_for,
                    intact_blob=intact.blob_for,
                ):
                    batch.add(result.line)
                    if result.line.number == 1:
                        header = result.line.data
                    if result.changed:
                        report.lines_compressed += 1
                        if result.reference is not None and not self.dry_run:
                            writer.reference(result.reference, path.name)
                        for payload in result.payloads:
                            report.objects += 1
                            report.object_bytes += len(payload.data)
                            if not self.dry_run:
                                writer.add(payload.oid, payload.data)
            batch.flush()
            if output is not None:
                output.seal()
        except OSError as error:
            if output is not None:
                output.discard()
            raise disk_error(error, path, "reading") from None
        except BaseException:
            if output is not None:
                output.discard()
            raise
        self._warn_too_deep(plan, rel, report)
        size_after = batch.size
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
        writer.record(header_key(header), FileRecord(digest.hexdigest(), size_after, counts.lines))
        self._pending.append(_Pending(output, stat, report, ref))
        return report

    @staticmethod
    def _warn_too_deep(plan: Any, rel: str, report: FileReport) -> None:
        too_deep = getattr(plan, "too_deep", None)
        if not too_deep:
            return
        where = ", ".join(str(number) for number in sorted(set(too_deep))[:5])
        warning = f"{rel}: line(s) {where} nested too deeply to handle passed through untouched"
        if warning not in report.warnings:
            report.warnings.append(warning)

    def finish(self) -> None:
        """Make the archive durable, then replace each file atomically.

        A file that another process holds open for writing, or that changed since it was
        read, is left as it was (status "in-use", with a warning): an agent that is still
        running must not block a commit, and must not lose what it appends.
        """
        for ref, writer in self._writers.items():
            files = sorted({p.report.path for p in self._pending if p.ref == ref})
            if not files:
                writer.abort()
                continue
            commit = writer.commit("gitclaw-compress: " + ", ".join(files))
            for pending in self._pending:
                if pending.ref == ref:
                    pending.report.archive_commit = commit
        replaced: list[str] = []
        try:
            while self._pending:
                pending = self._pending[0]
                with signals_deferred():  # the rename and its bookkeeping happen together
                    try:
                        pending.output.replace(pending.report.path, pending.stat)
                        replaced.append(pending.report.path)
                    except FileInUseError as busy:
                        pending.output.discard()
                        report = pending.report
                        report.status = "in-use"
                        report.bytes_after = report.bytes_before
                        report.warnings.append(str(busy))
                    self._pending.pop(0)
        except KeyboardInterrupt:
            if replaced:
                left = [pending.report.path for pending in self._pending]
                raise GitClawError(
                    f"interrupted after compressing {', '.join(replaced)}"
                    + (f"; {', '.join(left)} not changed" if left else "")
                    + "; every file is either the old one or the new one",
                    exit_code=130,
                ) from None
            raise


def _refuse_damaged_markers(path: Path, rel: str) -> None:
    """A line that names the marker key but cannot be read: compressing over it would
    record the damage as the truth, so stop here."""
    problems = _marker_problems(path, rel)
    if problems:
        raise GitClawError(
            f"{problems[0]}; run `{shell_line('gitclaw-compress', 'verify', rel)}`; "
            "nothing was changed"
        )


def _commit_line_source(
    repo: Repository, rel: str
) -> Callable[[int], Callable[[str], bytes | None]]:
    """For line `number`, the line at that number in a commit's version of the file; each
    version is read forward once (lines are restored in order), never held whole."""
    versions: dict[str, str | None] = {}  # commit -> the file's blob there
    lines = BlobLinePool(repo.root)

    def for_line(number: int) -> Callable[[str], bytes | None]:
        def from_commit(commit: str) -> bytes | None:
            if commit not in versions:
                info = repo.object_info(f"{commit}:{rel}")
                versions[commit] = info[0] if info is not None else None
            oid = versions[commit]
            return None if oid is None else lines.line(oid, number)

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
        self.missing: set[str] = set()  # payloads not in the object store, for verify
        self.notes: list[str] = []  # lines restored from their commit, and why, for verify
        # The intact blobs v2 markers read lines from, each read forward: a file's v2 lines
        # come in order, mostly in runs per blob, so each is read once.
        self._intact = BlobLinePool(repo.root)

    def _get(self, oid: str) -> bytes | None:
        data = self.repo.reader.get(oid)
        if data is None:
            self.missing.add(oid)
        return data

    def _blob_line(self, oid: str, number: int) -> bytes | None:
        """Line `number` of an intact blob (None if it is missing, empty past its end)."""
        data = self._intact.line(oid, number)
        if data is None:
            self.missing.add(oid)
        return data

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
                f"with `{shell_line('git', 'remote', 'add', self.remote, 'URL')}`, then run: "
                f"{fetch_command(self.ref, self.remote)}"
            )
        return f"get the archive with: {fetch_command(self.ref, self.remote)}"

    def restore(
        self, data: bytes, where: str, from_commit: Callable[[str], bytes | None] | None
    ) -> bytes:
        """The original bytes of one line, fetching the archive once if a payload is missing."""
        try:
            return self._restore(data, where, from_commit)
        except GitFailureError as error:
            if str(error).startswith(where):
                raise
            raise GitFailureError(f"{where}: {error}") from None

    def _restore(
        self, data: bytes, where: str, from_commit: Callable[[str], bytes | None] | None
    ) -> bytes:
        try:
            return restore_data(data, where, self._get, from_commit, self.notes, self._blob_line)
        except MissingObjectError as error:
            missing = error
        if self.fetch_once():
            self.missing.clear()
            try:
                return restore_data(
                    data, where, self._get, from_commit, self.notes, self._blob_line
                )
            except MissingObjectError as error:
                missing = error
        if self.fetched and self.fetch_error is None:
            raise GitClawError(
                f"{missing}, nor on {self.remote}'s {self.ref}; the archive was not pushed "
                "from the clone that compressed this line"
            )
        raise GitClawError(f"{missing}; {self.hint()}")


@dataclass
class FileCheck:
    """The whole-file check: the file against what compress recorded when it wrote it.

    Each compress run records, in the archive, the sha256, size and line count of the file
    it wrote (FileRecord, keyed by the header line). The file passes when its first `size`
    bytes hash to one of those records: every line compress wrote is then exactly as it
    wrote it, whatever changed inside it; lines after that prefix were appended since, and
    each compressed line among them is still checked by its own marker. When no record
    matches, a staged or committed version that matches one is the reference: each line of
    the file must be that version's line or its restored original, and a line that is
    neither is damaged and is restored from the reference instead.
    """

    status: str  # matched | unrecorded | repaired | damaged
    records: int = 0
    reference: str | None = None  # where a repair takes its lines from
    replacements: dict[int, bytes] = field(default_factory=dict)  # line -> line to restore
    problems: list[str] = field(default_factory=list)


def _matching_record(chunks: Iterator[bytes], records: list[FileRecord]) -> FileRecord | None:
    """The longest record whose size and sha256 match a prefix of the streamed bytes."""
    wanted = sorted(records, key=lambda record: record.size)
    digest = hashlib.sha256()
    position = 0
    found = None
    index = 0
    for chunk in chunks:
        while index < len(wanted) and wanted[index].size <= position + len(chunk):
            record = wanted[index]
            probe = digest.copy()
            probe.update(chunk[: record.size - position])
            if probe.hexdigest() == record.sha256:
                found = record
            index += 1
        digest.update(chunk)
        position += len(chunk)
        if index == len(wanted):
            break
    while index < len(wanted):  # records longer than the file never match
        if wanted[index].size == position and digest.hexdigest() == wanted[index].sha256:
            found = wanted[index]
        index += 1
    return found


def _file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            yield chunk


def check_file(
    repo: Repository, path: Path, ref: str, access: ArchiveAccess | None = None
) -> FileCheck:
    """Check the whole file against the records of the archive (see FileCheck)."""
    rel = repo.relative(path)
    with _open_lines(path) as lines:
        first = next(lines, None)
    if first is None:
        return FileCheck("unrecorded")
    records = repo.file_records(ref, header_key(first.data))
    if not records:
        return FileCheck("unrecorded")
    matched = _matching_record(_file_chunks(path), records)
    if matched is not None and matched.size == max(record.size for record in records):
        return FileCheck("matched", len(records))
    # A later version that compress wrote may be staged or committed: compare with it, so
    # that damage to what only that version covers is found too.
    access = access if access is not None else ArchiveAccess(repo, ref)
    for name, label in ((f":{rel}", "the staged version"), (f"HEAD:{rel}", "HEAD")):
        blob = repo.reader.get(name)
        if blob is None:
            continue
        record = _matching_record(iter([blob]), records)
        if record is not None and (matched is None or record.size > matched.size):
            reference = blob[: record.size]
            verified = matched.lines if matched is not None else 0
            return _repair_from(repo, path, rel, reference, label, access, verified)
    if matched is not None:
        return FileCheck("matched", len(records))
    if not has_compressed_line(path):  # restored in place, or never compressed under this header
        return FileCheck("unrecorded", len(records))
    return FileCheck(
        "damaged",
        len(records),
        problems=[
            *_marker_problems(path, rel),
            f"{rel}: the file differs from every version gitclaw-compress wrote "
            f"({len(records)} recorded on {ref}) and no staged or committed version matches "
            "one; a compressed line was altered",
        ],
    )


def _marker_problems(path: Path, rel: str) -> list[str]:
    """The lines whose marker cannot be read, named first when a file is damaged."""
    problems: list[str] = []
    if not has_compressed_line(path):  # a file compressed for the first time: one fast scan
        return problems
    with _open_lines(path) as lines:
        for line in lines:
            if MARKER_BYTES in line.data:
                try:
                    read_marker(line.data, f"{rel}:{line.number}")
                except GitClawError as error:
                    problems.append(str(error))
    return problems


def _repair_from(
    repo: Repository,
    path: Path,
    rel: str,
    reference: bytes,
    label: str,
    access: ArchiveAccess,
    verified_lines: int,
) -> FileCheck:
    """Compare the file line by line with a version compress wrote (see FileCheck).

    The first `verified_lines` are covered by an older record that the file matches (it is
    an older version that compress wrote, maybe with lines appended). Any other line passes
    when it is the reference's line, or, without a marker, the reference line's original
    (restored in place, or appended to an older version). Any other line is damaged, and
    the reference's line replaces it.
    """
    check = FileCheck("repaired", reference=label)
    from_commit = _commit_line_source(repo, rel)
    expected = lines_from_bytes(reference)
    with _open_lines(path) as lines:
        current = list(lines)

    def original(data: bytes, number: int) -> bytes | None:
        try:
            return access.restore(data, f"{rel}:{number}", from_commit(number))
        except GitFailureError:
            raise
        except GitClawError:
            return None

    for want, have in zip(expected, current, strict=False):
        if have.data == want.data and have.newline == want.newline:
            continue
        if want.number <= verified_lines:
            continue  # the record that the file matches covers this line
        # A plain line may be the original (restored in place, or an older version);
        # a line with a marker that is not the reference's was altered.
        plain = MARKER_BYTES not in have.data and have.newline == want.newline
        if plain and have.data == original(want.data, want.number):
            continue
        check.replacements[want.number] = want.data
        check.problems.append(
            f"{rel}:{want.number}: the line differs from what gitclaw-compress wrote; "
            f"{label} holds it intact"
        )
    if len(current) < len(expected) and (check.replacements or not verified_lines):
        check.status = "damaged"
        check.problems.append(
            f"{rel}: {len(current)} lines, but gitclaw-compress wrote {len(expected)}; "
            "lines were cut or joined"
        )
    elif check.replacements and any(
        parse_entry(line.data) is None for line in current[len(expected) :]
    ):
        # A line after the recorded ones that is not JSON may be a piece of a split line.
        check.status = "damaged"
        check.problems.append(
            f"{rel}: lines after line {len(expected)} are not all JSON objects; a damaged "
            "line may have been split, so nothing is restored from history"
        )
    elif not check.replacements:
        check.status = "matched"
    if check.status == "repaired":
        check.problems = [f"{problem} (restore takes it from there)" for problem in check.problems]
    elif check.status == "damaged":
        # The cause first (restore refuses with it), and the fix that is true here.
        where = () if label == "the staged version" else ("HEAD",)
        fix = shell_line("git", "checkout", *where, "--", rel)
        cause = check.problems.pop()
        check.problems.insert(
            0, f"{cause}; {label} is intact: `{fix}` brings it back (losing lines added since)"
        )
    return check


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
    from_commit = _commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    check = check if check is not None else check_file(repo, path, ref, access)
    if check.status == "damaged":
        raise GitClawError(f"{check.problems[0]}; nothing was restored")
    replacements = check.replacements
    with _open_lines(path) as lines:
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
        atomic = AtomicFile(target, mode_from=path if output is not None else None, git_dir=git_dir)
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


@dataclass
class VerifyReport:
    path: str
    compressed_lines: int = 0
    objects: int = 0
    problems: list[str] = field(default_factory=list)
    whole_file: str = "unrecorded"  # matched | unrecorded | repaired | damaged (FileCheck)
    leftovers: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def verify_file(
    repo: Repository,
    path: Path,
    ref: str,
    archived: set[str] | None = None,
    access: ArchiveAccess | None = None,
) -> VerifyReport:
    """Check the whole file, that every stub resolves, every hash matches, and every object
    is in the object store and on the ref.

    With an `access` that may fetch, a payload missing from the local archive ref makes it
    fetch the archive from the remote once, then check again.
    """
    rel = repo.relative(path)
    report = VerifyReport(rel)
    from_commit = _commit_line_source(repo, rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    check = check_file(repo, path, ref, access)
    report.whole_file = check.status
    report.problems.extend(check.problems)
    report.leftovers = [str(leftover) for leftover in repo.leftovers()]

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
            data = check.replacements.get(line.number, line.data)
            try:
                marker = read_marker(data, where)
                if marker is None:
                    continue
                report.compressed_lines += 1
                for oid in marker.oids:
                    report.objects += 1
                    if not on_ref(oid):
                        report.problems.append(
                            f"{where}: object {oid} is not reachable from {ref} "
                            "(git gc would lose it and git push would not send it); "
                            f"{access.hint()}"
                        )
                del access.notes[:]
                access.restore(data, where, from_commit(line.number))
                report.problems.extend(access.notes)
                for oid in marker.oids:
                    if oid in access.missing:
                        report.problems.append(
                            f"{where}: archived object {oid} is missing from the object "
                            "store (the line still restores from the commit where it is "
                            "intact); run `git fsck`, then `gitclaw-compress fetch`"
                        )
            except GitFailureError:
                raise  # git itself failed: verify could not do its job (exit 3)
            except GitClawError as error:
                report.problems.append(str(error))
    report.problems = list(dict.fromkeys(report.problems))  # a damaged line is named once
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
