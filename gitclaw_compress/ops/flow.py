"""The commit flow: choose the sessions, compress them, stage them, push the archive.

Shared by `compress`, `step` and the GitHub Action, so that all three behave the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitclaw_compress.config import Config, load_config
from gitclaw_compress.errors import EXIT_USAGE, GitClawError
from gitclaw_compress.ops.discovery import Discovery, all_sessions, discover, sessions_under
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.ops.unchanged import Answers, UnchangedCache
from gitclaw_compress.progress import SILENT, Progress
from gitclaw_compress.secrets.held import HELD, WOULD_HOLD, SecretsHeld
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.units import human_bytes, plural, size_change

if TYPE_CHECKING:
    from gitclaw_compress.secrets.parallel import ParallelGuard
    from gitclaw_compress.store.remote import PushResult
    from gitclaw_compress.summary.stage import StageOutcome


@dataclass
class FlowResult:
    reports: list[FileReport] = field(default_factory=list)
    discovery: Discovery | None = None
    staged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    push: PushResult | None = None
    summaries: list[StageOutcome] = field(default_factory=list)  # the opt-in summary stage
    # sessions left untouched for a secret the baseline does not accept: path, ids, advice
    held: list[dict[str, Any]] = field(default_factory=list)
    ref: str = "refs/gitclaw/archive"
    remote: str = "origin"

    @property
    def compressed(self) -> list[FileReport]:
        return [r for r in self.reports if r.status in ("compressed", "would-compress")]

    def by_format(self) -> dict[str, dict[str, int]]:
        """Sessions and compressed sessions per format name, in the registry's order."""
        from gitclaw_compress.formats.base import TITLES

        counts: dict[str, dict[str, int]] = {}
        done = {id(report) for report in self.compressed}
        for name in [*TITLES, ""]:
            reports = [r for r in self.reports if r.format == name]
            if reports:
                compressed = sum(1 for r in reports if id(r) in done)
                counts[name or "unknown"] = {"sessions": len(reports), "compressed": compressed}
        return counts

    def format_breakdown(self) -> str:
        """ "pi 1 of 1, Claude Code 2 of 3": compressed of sessions, per format."""
        from gitclaw_compress.formats.base import format_title

        return ", ".join(
            f"{format_title(name)} {counts['compressed']} of {counts['sessions']}"
            for name, counts in self.by_format().items()
        )

    def format_counts(self, key: str) -> str:
        """ "2 pi, 1 Claude Code" for `key` "sessions" or "compressed"."""
        from gitclaw_compress.formats.base import format_title

        return ", ".join(
            f"{counts[key]} {format_title(name)}"
            for name, counts in self.by_format().items()
            if counts[key]
        )

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"files": [report.as_json() for report in self.reports]}
        if self.discovery is not None:
            document["selected"] = {
                "reason": self.discovery.reason,
                "detail": self.discovery.detail,
            }
        document["formats"] = self.by_format()
        document["staged"] = self.staged
        document["archive"] = {
            "ref": self.ref,
            "remote": self.remote,
            "pushed": self.push.pushed if self.push else False,
            "push_reason": self.push.reason if self.push else None,
            "merged": self.push.merged if self.push else False,
            "tip": self.push.tip if self.push else None,
        }
        document["warnings"] = self.warnings
        document["held"] = self.held
        if self.summaries:
            document["summaries"] = [outcome.as_json() for outcome in self.summaries]
        return document

    @property
    def summarized(self) -> list[str]:
        """Files the summary stage appended a compaction entry to."""
        return [
            o.path
            for o in self.summaries
            if o.report is not None and o.report.status == "summarized"
        ]


def _is_session(path: Path, known: UnchangedCache) -> bool:
    if known.is_session(path):  # unchanged since a run recognized it: no format to load
        return True
    try:
        from gitclaw_compress.formats import detect_file

        detect_file(path, str(path))
    except (GitClawError, OSError):
        return False
    return True


def expand_folder(path: Path) -> list[Path]:
    """A folder given as PATH stands for the sessions under it; a file for itself."""
    return sessions_under(path) if path.is_dir() else [path]


def select(
    repo: Repository,
    config: Config,
    paths: tuple[Path, ...] | list[Path],
    *,
    take_all: bool = False,
    issue: int | None = None,
    warnings: list[str],
    known: UnchangedCache | None = None,
) -> tuple[list[Path], Discovery | None]:
    """The files to work on: the paths given, every session (`--all`), or discovery.
    `known` answers for the sessions a run already recognized."""
    if paths:
        if take_all or issue is not None:
            raise GitClawError(
                "give session paths, or --all, or --issue N, not several", exit_code=EXIT_USAGE
            )
        folders = [str(path) for path in paths if path.is_dir()]
        if not folders:
            return list(paths), None
        expanded = [one for path in paths for one in expand_folder(path)]
        return expanded, Discovery(expanded, "folder", f"sessions under {', '.join(folders)}")
    if take_all and issue is not None:
        raise GitClawError("give --all or --issue N, not both", exit_code=EXIT_USAGE)
    if take_all:
        found = Discovery(all_sessions(repo, config), "all", "every session file")
    else:
        found = discover(repo, config, issue=issue, warnings=warnings)
    known = known if known is not None else UnchangedCache(repo.git_dir)
    return recognized(repo, found.paths, known, warnings), found


def recognized(
    repo: Repository, paths: list[Path], known: UnchangedCache, warnings: list[str]
) -> list[Path]:
    """The paths that are sessions of a supported format; a warning for each other one."""
    chosen = []
    for path in paths:
        if _is_session(path, known):
            chosen.append(path)
        else:
            from gitclaw_compress.formats import supported

            warnings.append(
                f"{repo.relative(path)}: not a session transcript of a supported format "
                f"({supported()}); skipped"
            )
    return chosen


def compress_paths(
    repo: Repository,
    paths: list[Path],
    configs: dict[Path, Config],
    cache: UnchangedCache,
    *,
    keep_turns: int | None = None,
    force: bool = False,
    dry_run: bool = False,
    progress: Progress = SILENT,
    before_writing: Callable[[list[FileReport]], None] | None = None,
) -> list[FileReport]:
    """Compress files of one repository (each with its config in `configs`) in one run;
    nothing is written if any of them fails. `cache` answers for files a run found nothing
    to do in. `before_writing`, given the reports of the files read, may stop the run
    (raise) before anything is written."""
    if not paths:
        return []
    answers = Answers() if force or dry_run else cache.answered(repo, paths, configs, keep_turns)
    reports = dict(answers.reports)  # force and dry run always take the full path
    work = [path for path in paths if path not in reports]
    if work:
        from gitclaw_compress.ops.compress import compress_files  # the core, only with work

        done = compress_files(
            repo,
            work,
            configs,
            keep_turns=keep_turns,
            force=force,
            dry_run=dry_run,
            progress=progress,
            before_writing=before_writing,
        )
        reports.update(done)
        if not dry_run:
            cache.keep(answers, done)
    return [reports[path] for path in paths]


def stage(repo: Repository, reports: list[FileReport], also: list[str] | None = None) -> list[str]:
    """`git add` the files this run rewrote (and only those): compressed, or ``also``
    (summarized)."""
    files = [report.path for report in reports if report.status == "compressed"]
    files += [path for path in also or [] if path not in files]
    if files:
        repo.git("add", "--", *files)
    return files


def run_flow(
    repo: Repository,
    paths: tuple[Path, ...] | list[Path] = (),
    *,
    config_path: Path | None = None,
    take_all: bool = False,
    issue: int | None = None,
    keep_turns: int | None = None,
    force: bool = False,
    dry_run: bool = False,
    do_stage: bool = False,
    do_push: bool = False,
    remote: str | None = None,
    progress: Progress = SILENT,
    deep: bool = False,
    caller_pushes: bool = False,
    scan_first: bool = False,
) -> FlowResult:
    """Select, compress, then (optionally) stage and push the archive ref. `caller_pushes`:
    the caller pushes the archive afterwards (the GitHub Action). `scan_first`: the scan's
    verdict before any compression (not beside it): a held session is never compressed, not
    even to a temp file, and the others only once (a background pass, where CPU counts and
    wall time does not).

    The stages, each called once and in this order (see `_Run`): find the sessions, check
    and compress them (the secret scan beside or, with `scan_first`, before), record what
    was written as scanned, report, summarize, stage, send."""
    run = _Run.open(repo, config_path, remote, pushes=do_push or caller_pushes)
    with run.scanning():
        chosen = run.find(
            paths,
            config_path,
            take_all=take_all,
            issue=issue,
            deep=deep,
            dry_run=dry_run,
            progress=progress,
        )
        run.compress(
            chosen,
            keep_turns=keep_turns,
            force=force,
            dry_run=dry_run,
            progress=progress,
            scan_first=scan_first,
        )
        run.record()
    run.report(dry_run=dry_run)
    if not dry_run:
        run.summarize()
        if do_stage:
            run.stage()
        if do_push:
            run.send()
    return run.result


@dataclass
class _Sessions:
    """The sessions a run found, each with its config, and what the later stages read of
    those configs: read once, where they are loaded."""

    chosen: list[Path] = field(default_factory=list)
    configs: dict[Path, Config] = field(default_factory=dict)
    local_only: dict[Path, bool] = field(default_factory=dict)  # by resolved path
    summarized: list[Path] = field(default_factory=list)  # summary.enabled: the summary stage's

    @classmethod
    def load(
        cls, chosen: list[Path], config_root: Path, config_path: Path | None, *, deep: bool
    ) -> _Sessions:
        """Each chosen session's config (`deep` applied), loaded once here."""
        configs = {
            path: load_config(path, config_root, config_path).with_deep(deep) for path in chosen
        }
        return cls.of(chosen, configs)

    @classmethod
    def of(cls, chosen: list[Path], configs: dict[Path, Config]) -> _Sessions:
        local_only = {path.resolve(): c["archive.localOnly"] for path, c in configs.items()}
        summarized = [path for path in chosen if configs[path]["summary.enabled"]]
        return cls(chosen, configs, local_only, summarized)


@dataclass
class _Run:
    """What the stages of one `run_flow` share: the repository, its root config, the result
    they fill in, and (once found) each session's config and the secret scan beside them.
    Each stage reads what the earlier ones found from here, and enters each module it needs
    once: what it reads of the repository and the configs is read where they are opened."""

    repo: Repository
    root_config: Config
    result: FlowResult
    pushes: bool  # the run pushes the archive, or its caller does
    config_root: Path
    cache: UnchangedCache
    found: _Sessions = field(default_factory=_Sessions)
    secrets: ParallelGuard | None = None

    @classmethod
    def open(
        cls, repo: Repository, config_path: Path | None, remote: str | None, *, pushes: bool
    ) -> _Run:
        config_root, git_dir = repo.config_root, repo.git_dir
        cache = UnchangedCache(git_dir)
        root_config = load_config(None, config_root, config_path)
        result = FlowResult(
            ref=root_config["archive.ref"], remote=remote or root_config["archive.remote"]
        )
        return cls(repo, root_config, result, pushes, config_root, cache)

    @contextlib.contextmanager
    def scanning(self) -> Iterator[None]:
        """The secret scan `find` starts runs beside the stages inside this block, and is
        cancelled when they end (it has answered by then, or the run failed)."""
        try:
            yield
        finally:
            if self.secrets is not None:
                self.secrets.cancel()

    def _guard(self) -> ParallelGuard:
        assert self.secrets is not None, "the stages run after `find`"
        return self.secrets

    def find(
        self,
        paths: tuple[Path, ...] | list[Path],
        config_path: Path | None,
        *,
        take_all: bool,
        issue: int | None,
        deep: bool,
        dry_run: bool,
        progress: Progress,
    ) -> list[Path]:
        """The sessions to compress, each with its config; then the secret scan starts on
        them, in a thread beside the compression (only where a session has lines not scanned
        clean before): a finding holds its session before any write. A dry run scans too, so
        that it says which sessions the run would hold; in an agent's store too, since what
        compress drops would be committed to the store's archive."""
        chosen, self.result.discovery = select(
            self.repo,
            self.root_config,
            paths,
            take_all=take_all,
            issue=issue,
            warnings=self.result.warnings,
            known=self.cache,
        )
        self.found = _Sessions.load(chosen, self.config_root, config_path, deep=deep)
        from gitclaw_compress.secrets.parallel import ParallelGuard

        self.secrets = ParallelGuard(
            self.repo, self.root_config, enabled=True, dry_run=dry_run, progress=progress
        )
        self.secrets.start(chosen)  # as soon as the sessions are known: the rules load meanwhile
        return chosen

    def compress(
        self,
        chosen: list[Path],
        *,
        keep_turns: int | None,
        force: bool,
        dry_run: bool,
        progress: Progress,
        scan_first: bool,
    ) -> None:
        """Check and compress: the scan's verdict comes before anything is written (before
        anything is compressed with `scan_first`); a session it holds is reported held and
        the others are compressed."""
        secrets = self._guard()

        def compress(paths: list[Path]) -> list[FileReport]:
            return compress_paths(
                self.repo,
                paths,
                self.found.configs,
                self.cache,
                keep_turns=keep_turns,
                force=force,
                dry_run=dry_run,
                progress=progress,
                before_writing=self._before_writing,
            )

        try:
            if scan_first:
                secrets.wait(self.result.warnings)
            self.result.reports = compress(chosen)
            secrets.wait(self.result.warnings)  # when nothing was to be written, it answers here
        except SecretsHeld as held:
            # Nothing was written. The sessions without an open finding were scanned and
            # recorded clean: compress them (again, unless `scan_first`), alone (no scan
            # waits this time).
            self.result.held = held.sessions
            self.result.reports = _compress_unheld(self.repo, chosen, held, compress, dry_run)

    def _before_writing(self, reports: list[FileReport]) -> None:
        self._guard().wait(self.result.warnings)
        from gitclaw_compress.ops.sending import in_ci, refuse_in_ci

        if in_ci():  # a runner that is thrown away: an error, before any write
            refuse_in_ci(self._unsent(reports))

    def _unsent(self, reports: list[FileReport]) -> str | None:
        return _unsent_line(self.repo, reports, self.found, self.result, pushes=self.pushes)

    def record(self) -> None:
        """The lines it wrote, scanned for next time."""
        written = [self.repo.root / r.path for r in self.result.reports if r.status == "compressed"]
        self._guard().record(written, self.result.warnings)

    def report(self, *, dry_run: bool) -> None:
        """Each session's warnings, then the line for an archive nothing sends."""
        for report in self.result.reports:
            self.result.warnings.extend(report.warnings)
        if not dry_run and (line := self._unsent(self.result.reports)) is not None:
            self.result.warnings.append(line)

    def summarize(self) -> None:
        _summarize(self.repo, self.found, self.result)

    def stage(self) -> None:
        self.result.staged = stage(self.repo, self.result.reports, self.result.summarized)

    def send(self) -> None:
        _send(self.repo, self.root_config, self.result)


def _summarize(repo: Repository, found: _Sessions, result: FlowResult) -> None:
    """The opt-in summary stage, outside compression's locks."""
    if found.summarized:
        from gitclaw_compress.summary.stage import summary_stage  # the LLM client, only here

        result.summaries = summary_stage(repo, found.summarized, found.configs.__getitem__)
        result.warnings.extend(o.warning for o in result.summaries if o.warning)


def _send(repo: Repository, root_config: Config, result: FlowResult) -> None:
    """Push the archive ref, never with an object that holds a secret (a warning each if
    unblocked)."""
    from gitclaw_compress.secrets.check import guard_push
    from gitclaw_compress.store.remote import push_archive

    try:
        result.warnings.extend(guard_push(repo, root_config))
        result.push = push_archive(repo, result.ref, result.remote)
    except GitClawError as error:
        raise _push_failed_after_changes(result, error) from error


def _not_held(repo: Repository, chosen: list[Path], held: SecretsHeld) -> list[Path]:
    """The sessions without an open finding (findings name them by their session ref)."""
    names = {entry["path"] for entry in held.sessions}
    return [path for path in chosen if repo.session_ref(repo.relative(path)) not in names]


def _compress_unheld(
    repo: Repository,
    chosen: list[Path],
    held: SecretsHeld,
    compress: Callable[[list[Path]], list[FileReport]],
    dry_run: bool,
) -> list[FileReport]:
    """Each session's report after the scan held some: the ones without an open finding
    compressed, the others reported held, in the order they were chosen."""
    rest = _not_held(repo, chosen, held)
    done = dict(zip(rest, compress(rest), strict=True))
    return [
        done[path] if path in done else _held_report(repo, path, dry_run=dry_run) for path in chosen
    ]


def _unsent_line(
    repo: Repository,
    reports: list[FileReport],
    found: _Sessions,
    result: FlowResult,
    *,
    pushes: bool,
) -> str | None:
    """The line for an archive that nothing sends (see ops/sending.py): about the sessions
    this run left originals of that only the archive keeps (a line whose original a commit
    of the branch holds restores from that commit anywhere)."""
    compressed = [r for r in reports if r.status == "compressed" and r.archive_only]
    if not compressed:
        return None
    from gitclaw_compress.ops.sending import unsent_archive

    wrote = {(repo.root / r.path).resolve() for r in compressed}
    return unsent_archive(
        repo,
        len(compressed),
        local_only=all(local for path, local in found.local_only.items() if path in wrote),
        ref=result.ref,
        remote=result.remote,
        pushes=pushes,
    )


def _push_failed_after_changes(result: FlowResult, error: GitClawError) -> GitClawError:
    """The push failed, but the sessions were already rewritten (or staged): say so, since a
    bare push error would let the user believe that nothing was changed."""
    done = []
    if result.compressed:
        done.append(f"compressed {plural(len(result.compressed), 'session')}")
    if result.summarized:
        done.append(f"summarized {plural(len(result.summarized), 'session')}")
    if result.staged:
        done.append(f"staged {plural(len(result.staged), 'file')}")
    if not done:
        return error
    reason = str(error).replace("; nothing was changed", "")  # true of the push alone
    return PushFailedError(
        f"{' and '.join(done)} ({result.ref} holds what they dropped), but it was not pushed: "
        f"{reason}; once that is fixed, run `gitclaw-compress push`",
        exit_code=error.exit_code,
        details=getattr(error, "details", []),
    )


class PushFailedError(GitClawError):
    """The push of `step --push` failed after the run had changed files."""

    def __init__(self, message: str, *, exit_code: int, details: list[str]) -> None:
        super().__init__(message, exit_code=exit_code)
        self.details = details  # each secret finding, masked, printed before the error


def summary_line(result: FlowResult) -> str:
    """The one line of stats that `step` prints."""
    reports = result.reports
    how = f" ({result.discovery.detail})" if result.discovery is not None else ""
    if not reports:
        detail = result.discovery.detail if result.discovery is not None else "none given"
        return f"gitclaw-compress: no session to compress ({detail})"
    count = f"{len(reports)} session{'s' if len(reports) != 1 else ''}{how}"
    done = result.compressed
    if not done:
        reasons: dict[str, int] = {}
        for report in reports:
            reasons[report.status] = reasons.get(report.status, 0) + 1
        why = ", ".join(f"{n} {status}" for status, n in sorted(reasons.items()))
        line = (
            f"gitclaw-compress: {count}: nothing to compress ({why}), by format: "
            f"{result.format_counts('sessions')}"
        )
        if result.summarized:  # the summary stage still appended to some
            line += f", {len(result.summarized)} summarized"
            if result.staged:
                line += f", {len(result.staged)} staged"
        return line + _pushed(result)
    before = sum(r.bytes_before for r in reports)
    after = sum(r.bytes_after for r in reports)
    objects = sum(r.objects for r in done)
    dry = any(r.status == "would-compress" for r in done)
    verb, archived = ("would compress", "to write to") if dry else ("compressed", "on")
    line = (
        f"gitclaw-compress: {count}: {len(done)} {verb}, {human_bytes(before)} -> "
        f"{human_bytes(after)} ({size_change(before, after)}), by format: "
        f"{result.format_breakdown()}, "
        f"{plural(objects, 'new archive object')} {archived} {result.ref}"
    )
    if result.summarized:
        line += f", {len(result.summarized)} summarized"
    if result.staged:
        line += f", {len(result.staged)} staged"
    if result.push is not None:
        line += _pushed(result)
    elif not any(r.status == "would-compress" for r in done):
        line += "; push it with: gitclaw-compress push"
    return line


def _pushed(result: FlowResult) -> str:
    """What `--push` did, for the end of the line ("" without `--push`)."""
    if result.push is None:
        return ""
    if result.push.pushed:
        merged = " (merged with the remote's archive)" if result.push.merged else ""
        return f"; pushed to {result.remote}{merged}"
    if result.push.reason == "up-to-date":
        return f"; {result.remote} has it already"
    if result.push.reason == "no-local-archive":
        return f"; no {result.ref} in this clone, nothing to push"
    return ""


def _held_report(repo: Repository, path: Path, *, dry_run: bool = False) -> FileReport:
    """The report of a session held for a secret: untouched, its size, its format."""
    from gitclaw_compress.formats import detect_file

    size = path.stat().st_size
    rel = repo.relative(path)
    try:
        name = detect_file(path, rel).name
    except GitClawError:
        name = ""
    return FileReport(rel, WOULD_HOLD if dry_run else HELD, size, size, format=name)
