"""`compress` of several files: the pure core plus the git archive, with locks and atomic writes."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitclaw_compress import interrupts
from gitclaw_compress.config import Config
from gitclaw_compress.core.compressor import (
    CompressSettings,
    ObjectId,
    Payload,
    compress_lines,
    git_blob_id,
    git_blob_id_sha256,
    scan,
    settle,
)
from gitclaw_compress.core.lines import LineBatch, RawLine, parse_entry
from gitclaw_compress.core.plan import SessionPlan
from gitclaw_compress.errors import GitClawError, shell_line
from gitclaw_compress.formats import Format, detect_file
from gitclaw_compress.formats.base import Unsupported
from gitclaw_compress.ops.check import check_file, marker_problems
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.progress import SILENT, Progress, file_size, running
from gitclaw_compress.store.access import ArchiveAccess, line_originals
from gitclaw_compress.store.archive import ArchiveWriter
from gitclaw_compress.store.archive_layout import FileRecord, header_key, line_digest
from gitclaw_compress.store.fileio import (
    AtomicFile,
    FileInUseError,
    clean_stale_temps,
    disk_error,
    signals_deferred,
)
from gitclaw_compress.store.intact import IntactLines, only_in_archive
from gitclaw_compress.store.repository import Repository
from gitclaw_compress.store.session_lines import has_compressed_line, open_lines
from gitclaw_compress.tokens.estimate import TokenEstimator, get_estimator
from gitclaw_compress.units import plural

interrupts.checkpoint("loading")  # the core is imported only when there is work


@dataclass
class _Pending:
    output: AtomicFile
    stat: os.stat_result
    report: FileReport
    ref: str


@dataclass
class _Rewritten:
    """What pass 2 over one file wrote: its size and sha256, each line's `line_digest`
    (for the record), its first line, the objects no commit of the branch holds, and what
    the archive takes if the run goes on."""

    size: int = 0
    digest: str = ""
    # Each line's `line_digest`, for the record: 4 bytes a line, not a bytes object each
    # (45 bytes a line, the one thing pass 2 held in proportion to the file).
    written: bytearray = field(default_factory=bytearray)
    header: bytes = b""
    archive_only: set[str] = field(default_factory=set)
    payloads: list[Payload] = field(default_factory=list)
    references: set[str] = field(default_factory=set)  # the blobs v3 markers name: one or two


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


def blob_id_for(repo: Repository) -> ObjectId:
    """How this repository names a blob: SHA-1 or SHA-256, by its object format."""
    return git_blob_id_sha256 if repo.object_format() == "sha256" else git_blob_id


def budget_estimator(settings: CompressSettings) -> TokenEstimator | None:
    """The estimator the core is handed for a budget policy (the one the settings name); none
    without a policy, so that an estimator not installed is asked for only when it counts."""
    return get_estimator(settings.budget.estimator) if settings.budget.active else None


def settled_plan(
    repo: Repository,
    path: Path,
    rel: str,
    fmt: Format,
    settings: CompressSettings,
    intact: IntactLines | None = None,
) -> SessionPlan:
    """Pass 1's plan of the file, settled where it needs to be: measured with the markers
    pass 2 writes (those that name a committed or staged version, where one holds the line)."""
    with open_lines(path) as lines:
        plan = scan(lines, settings, fmt, budget_estimator(settings))
    if plan.needs_settling:
        intact = intact or IntactLines(repo, path, rel)
        with open_lines(path) as lines:
            plan = settle(plan, lines, settings, **_pass_two(repo, rel, intact))
    return plan


def _pass_two(repo: Repository, rel: str, intact: IntactLines) -> dict[str, Any]:
    """What pass 2 (and settling) gets from the repository: one set for every caller."""
    return {
        "session_ref": repo.session_ref(rel),
        "object_id": blob_id_for(repo),
        "intact_commit": intact.commit_for,
        "intact_blob": intact.blob_for,
    }


def written_lines(
    repo: Repository,
    path: Path,
    rel: str,
    fmt: Format,
    settings: CompressSettings,
    intact: IntactLines | None = None,
) -> tuple[SessionPlan, list[RawLine]]:
    """The plan and the lines `compress` writes for this file with these settings, written
    nowhere: what `stats` shows as 'after', and a dry run's deep comparison measures. One
    code path with the run (`Compression.add`), so that the figures are the run's."""
    intact = intact or IntactLines(repo, path, rel)
    plan = settled_plan(repo, path, rel, fmt, settings, intact)
    with open_lines(path) as lines:
        after = [
            result.line
            for result in compress_lines(lines, plan, settings, **_pass_two(repo, rel, intact))
        ]
    return plan, after


def compress_files(
    repo: Repository,
    paths: list[Path],
    configs: Mapping[Path, Config],
    *,
    keep_turns: int | None,
    force: bool,
    dry_run: bool,
    progress: Progress,
    before_writing: Callable[[list[FileReport]], None] | None = None,
) -> dict[Path, FileReport]:
    """One run over `paths` (each with its config): every path checked and locked before
    the first is read, nothing written if any fails. `before_writing`, given the reports of
    the files read, may stop the run (raise) before anything is written."""
    reports: dict[Path, FileReport] = {}
    with Compression(repo, dry_run=dry_run, progress=progress) as run:
        for path in paths:
            run.claim(path)
        verb = "checking" if dry_run else "compressing"  # a dry run writes nothing
        with running(progress, verb, paths, repo.relative, file_size) as announced:
            for path in announced:
                reports[path] = run.add(path, configs[path], keep_turns=keep_turns, force=force)
        if before_writing is not None:
            before_writing([reports[path] for path in paths])
        run.finish()
    return reports


class Compression:
    """One `compress` run over several files: all archive writes land before any rename."""

    def __init__(
        self, repo: Repository, *, dry_run: bool = False, progress: Progress = SILENT
    ) -> None:
        self.repo = repo
        self.dry_run = dry_run
        self.progress = progress  # told the bytes of each file as they are read
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
        rel = self.repo.relative(real_path(self.repo, path))
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
        path = real_path(self.repo, path)
        clean_stale_temps(path, self.repo.git_dir)
        stat = path.stat()
        report = FileReport(rel, "unchanged", stat.st_size, stat.st_size)
        fmt = _worth_reading(self.repo, path, rel, config, report, force=force)
        if fmt is None:
            return report
        if settings is None:
            settings = config.compress_settings(keep_turns)
        if settings.budget.active:  # it measures the context as `status` does
            originals = line_originals(self.repo, rel, config["archive.ref"])
            settings = dataclasses.replace(
                settings, budget=dataclasses.replace(settings.budget, originals=originals)
            )
        plan = _planned(self.repo, path, rel, fmt, settings, report, dry_run=self.dry_run)
        if not plan.touches_anything:
            return report
        ref = config["archive.ref"]
        writer = self._writers.get(ref)
        if writer is None:
            writer = self._writers[ref] = ArchiveWriter(self.repo, ref)
        output = (
            None
            if self.dry_run
            else AtomicFile(path, git_dir=self.repo.git_dir, doing="compressing")
        )
        lines_of = functools.partial(told, self.progress)
        done = _rewrite(
            self.repo, lines_of, path, rel, plan, settings, output, report, dry_run=self.dry_run
        )
        _warn_too_deep(plan, rel, report)
        if not _worth_writing(done, report, config, force=force):
            if output is not None:
                output.discard()
            return report
        report.archive_only = len(done.archive_only)
        for reference in sorted(done.references):
            writer.reference(reference, path.name)
        for payload in done.payloads:
            writer.add(payload.oid, payload.data)
        if output is None:
            report.status = "would-compress"
            return report
        report.status = "compressed"
        record = FileRecord(done.digest, done.size, plan.counts.lines)
        writer.record(header_key(done.header), record, bytes(done.written))
        self._pending.append(_Pending(output, stat, report, ref))
        return report

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
        interrupts.checkpoint("archived")
        replaced: list[str] = []
        try:
            while self._pending:
                with signals_deferred():  # the rename and its bookkeeping happen together
                    if _replace(self.repo, self._pending[0]):
                        replaced.append(self.repo.session_ref(self._pending[0].report.path))
                    self._pending.pop(0)
            interrupts.checkpoint("compressed")
        except KeyboardInterrupt:
            if replaced:
                raise interrupted_after(
                    replaced, [self.repo.session_ref(p.report.path) for p in self._pending]
                ) from None
            raise


TOLD_BYTES = 64 * 1024


def told(progress: Progress, lines: Iterable[RawLine]) -> Iterator[RawLine]:
    """The lines, told to `progress` as they are read: TOLD_BYTES or more at a time, not a
    call per line (a file of many MB takes seconds; a line is microseconds)."""
    advance, count = progress.advance, 0
    for line in lines:
        count += len(line.data) + line.newline
        if count >= TOLD_BYTES:
            advance(count)
            count = 0
        yield line
    if count:
        advance(count)


def real_path(repo: Repository, path: Path) -> Path:
    """The file to rewrite: a symlink's target when it lies in the repository, so that
    the link stays a link and the stubs name the file that was compressed."""
    if not path.is_symlink():
        return path
    target = path.resolve()
    try:
        target.relative_to(repo.root)
    except ValueError:
        raise GitClawError(
            f"{path}: a symlink to {target}, outside the git repository; nothing was changed"
        ) from None
    return target


def _worth_writing(done: _Rewritten, report: FileReport, config: Config, *, force: bool) -> bool:
    """Whether the run writes what pass 2 made: it compressed a line, and (without `force`)
    the gain is not too small; if not, `report` says the file is left as it was."""
    size = report.bytes_before
    report.bytes_after = done.size
    small = None if force else config.gain_too_small(size, done.size)
    if report.lines_compressed and small is None:
        return True
    report.bytes_after = size
    if report.lines_compressed:
        report.reason, report.lines_compressed, report.objects = small or "", 0, 0
        report.object_bytes = 0
    return False


def _replace(repo: Repository, pending: _Pending) -> bool:
    """Rename the new file over the old one; False (status "in-use", with a warning) when
    its agent holds it open for writing, or it changed since it was read."""
    try:
        if repo.keeps_times:  # an agent lists its sessions by mtime
            times = (pending.stat.st_atime_ns, pending.stat.st_mtime_ns)
            os.utime(pending.output.temp, ns=times)
        # Named as stubs name it: a store's session by its full path (a run over several
        # stores must say which one an interrupt left).
        name = repo.session_ref(pending.report.path)
        if repo.live_agent_may_hold(pending.output.target):
            raise FileInUseError(
                f"{name}: its agent is running and this machine cannot tell which files it "
                "holds open; nothing was changed"
            )
        pending.output.replace(name, pending.stat)
    except FileInUseError as busy:
        pending.output.discard()
        report = pending.report
        report.status = "in-use"
        report.bytes_after = report.bytes_before
        report.warnings.append(str(busy))
        return False
    return True


def _worth_reading(
    repo: Repository, path: Path, rel: str, config: Config, report: FileReport, *, force: bool
) -> Format | None:
    """The file's format, or None (and why in `report`) when it is not to be compressed:
    disabled, no conversation in it, or under the size threshold. Damaged markers are
    refused here, before anything reads the file for its plan."""
    if not config["session.enabled"]:
        report.status = "disabled"
        return None
    fmt = detect_file(path, rel)
    report.format = fmt.name
    _refuse_damaged_markers(repo, path, rel, config["archive.ref"])
    size = report.bytes_before
    if size <= SMALL_FILE and (kinds := _without_conversation(path, fmt)):
        report.reason = f"no conversation (only {', '.join(kinds)} lines)"
        return None
    if not force and size < config["session.sizeThresholdKB"] * 1024:
        report.status = "below-threshold"
        return None
    return fmt


def _planned(
    repo: Repository,
    path: Path,
    rel: str,
    fmt: Format,
    settings: CompressSettings,
    report: FileReport,
    *,
    dry_run: bool,
) -> SessionPlan:
    """Pass 1 (settled), and what it found in `report`."""
    try:  # a budget policy reads the conversation, which a format may not offer
        plan = settled_plan(repo, path, rel, fmt, settings)
    except Unsupported as error:
        raise error.at(rel) from None
    if plan.budget is not None:
        report.budget = plan.budget.as_json()
    _warn_too_deep(plan, rel, report)
    counts = plan.counts
    report.lines, report.turns, report.kept_turns = counts.lines, plan.turns, plan.kept_turns
    report.counts = counts
    report.preserved_thinking = plan.preserved_thinking
    if counts.malformed:
        where = ", ".join(str(number) for number in counts.malformed_at)
        more = ", …" if counts.malformed > len(counts.malformed_at) else ""
        report.warnings.append(
            f"{rel}: {counts.malformed} line(s) that are not JSON objects passed through "
            f"untouched (line {where}{more})"
        )
    if dry_run and not settings.deep:
        lines_of = IntactLines(repo, path, rel)
        report.deep_bytes_after = _deep_size(repo, path, rel, fmt, settings, lines_of)
    return plan


def _rewrite(
    repo: Repository,
    lines_of: Callable[[Iterable[RawLine]], Iterator[RawLine]],
    path: Path,
    rel: str,
    plan: SessionPlan,
    settings: CompressSettings,
    output: AtomicFile | None,
    report: FileReport,
    *,
    dry_run: bool,
) -> _Rewritten:
    """Pass 2 over the file into `output` (none in a dry run), counted in `report`; the
    payloads and references are archived once the gain is known to be worth it. `lines_of`
    wraps the lines as they are read (the run's progress). Not split: its loop runs once per
    line of the file with what it fills bound to locals, and the sink and cleanup share them."""
    intact = IntactLines(repo, path, rel)
    done = _Rewritten()
    digest = hashlib.sha256()

    def sink(chunk: bytes) -> None:
        digest.update(chunk)
        if output is not None:
            output.write(chunk)

    batch = LineBatch(sink)
    written, archive_only = done.written, done.archive_only
    payloads, references = done.payloads, done.references
    add, digest_of = batch.add, line_digest
    head_blob = intact.head_blob

    def in_head(oid: str) -> bool:
        return oid == head_blob

    try:
        with open_lines(path) as lines:
            for result in compress_lines(
                lines_of(lines), plan, settings, **_pass_two(repo, rel, intact)
            ):
                line = result.line
                add(line)
                written += digest_of(line.data, line.newline)
                if line.number == 1:
                    done.header = line.data
                if result.payloads or result.reference is not None:  # `result.changed`
                    report.lines_compressed += 1
                    archive_only |= only_in_archive(
                        (payload.oid for payload in result.payloads), result.reference, in_head
                    )
                    if result.reference is not None and not dry_run:
                        references.add(result.reference)
                    for payload in result.payloads:
                        report.objects += 1
                        report.object_bytes += len(payload.data)
                        if not dry_run:
                            payloads.append(payload)
        batch.flush()
        if output is not None:
            output.seal()
    except BaseException as error:
        if output is not None:
            output.discard()
        if isinstance(error, OSError):
            raise disk_error(error, path, "reading") from None
        raise
    done.size, done.digest = batch.size, digest.hexdigest()
    return done


def _deep_size(
    repo: Repository,
    path: Path,
    rel: str,
    fmt: Format,
    settings: CompressSettings,
    intact: IntactLines,
) -> int:
    """The file's size after a deep run with these settings (a dry run's comparison)."""
    deep = dataclasses.replace(settings, deep=True)
    _, lines = written_lines(repo, path, rel, fmt, deep, intact)
    return sum(len(line.encode()) for line in lines)


def _warn_too_deep(plan: SessionPlan, rel: str, report: FileReport) -> None:
    too_deep = plan.too_deep
    if not too_deep:
        return
    where = ", ".join(str(number) for number in sorted(set(too_deep))[:5])
    warning = f"{rel}: line(s) {where} nested too deeply to handle passed through untouched"
    if warning not in report.warnings:
        report.warnings.append(warning)


def interrupted_after(replaced: list[str], left: list[str]) -> GitClawError:
    """The error of a run stopped between renames: one file is named in the line; more are
    listed one per line above it (a run over hundreds of sessions would not fit in one)."""
    same = "; every file is either the old one or the new one"
    if len(replaced) == 1 and len(left) <= 1:
        not_changed = f"; {left[0]} not changed" if left else ""
        return GitClawError(
            f"interrupted after compressing {replaced[0]}{not_changed}{same}", exit_code=130
        )
    not_changed = f"; {plural(len(left), 'other session')} not changed" if left else ""
    return GitClawError(
        f"interrupted after compressing {plural(len(replaced), 'session')} (listed above)"
        f"{not_changed}{same}",
        exit_code=130,
        details=[f"compressed {path}" for path in replaced]
        + [f"not changed {path}" for path in left],
    )


SMALL_FILE = 64 * 1024  # a file without a conversation is small: larger ones are not read twice


def _without_conversation(path: Path, fmt: Format) -> list[str]:
    """The line types of a file with no turn in it (a Claude Code file that holds only its
    `teleported-from` line, a header alone); empty when it has a turn."""
    kinds: set[str] = set()
    with open_lines(path) as lines:
        for line in lines:
            entry = parse_entry(line.data)
            if entry is None:
                continue
            if fmt.is_turn_start(entry):
                return []
            kinds.add(str(entry.get("type")))
    return sorted(kinds)


def _refuse_damaged_markers(repo: Repository, path: Path, rel: str, ref: str) -> None:
    """A line that names the marker key but cannot be read, or a marker that compress did
    not write where it stands (the whole-file check): compressing over it would record it
    as the truth, and restore would then write what the marker names instead of the line."""
    if not has_compressed_line(path):  # one scan of a file compressed for the first time
        return
    problems = marker_problems(path, rel)
    if problems:
        raise GitClawError(
            f"{problems[0]}; run `{shell_line('gitclaw-compress', 'verify', rel)}`; "
            "nothing was changed"
        )
    check = check_file(repo, path, ref, ArchiveAccess(repo, ref))
    if check.stray:
        where = f"{rel}:{check.stray[0]}:"
        problem = next(text for text in check.problems if text.startswith(where))
        raise GitClawError(
            f"{problem}; remove or fix the line (if another clone compressed it, run "
            "`gitclaw-compress fetch` first); nothing was changed"
        )
    if check.status == "damaged":  # compressing over it would record the damage as the truth
        raise GitClawError(
            f"{check.problems[0]}; run `{shell_line('gitclaw-compress', 'verify', rel)}`; "
            "nothing was changed"
        )
