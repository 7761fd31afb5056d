"""The scan as a use case: the session files and the archive objects a push would send,
against the baseline; `SecretsFound` stops `step`, `compress` and the hooks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitclaw_compress.config import Config
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError, shell_line
from gitclaw_compress.ops.progress import SILENT, Progress, file_size, running
from gitclaw_compress.secrets.baseline import Baseline
from gitclaw_compress.secrets.findings import Finding
from gitclaw_compress.secrets.scan import scan_blob, scan_lines
from gitclaw_compress.store.archive import Repository

CLEAN_CACHE = "secrets-clean"  # archive objects scanned with no finding, by id


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    accepted: set[str] = field(default_factory=set)  # hashes the baseline accepts
    files: int = 0
    objects: int = 0

    @property
    def open(self) -> list[Finding]:
        return [f for f in self.findings if f.hash not in self.accepted]

    def lines(self) -> list[str]:
        return [f.text(f.hash in self.accepted) for f in self.findings]


NAMED_FILES = 3  # redact commands in the one error line; the finding lines name every file


def _accept_command(ids: Iterable[str]) -> str:
    words = ["gitclaw-compress", "scan"]
    for finding_id in ids:
        words += ["--accept", finding_id]
    return f"`{shell_line(*words)}`"


def fix_advice(found: Sequence[Finding]) -> str:
    """What to run, naming the real files and ids: `redact` where it can remove a secret,
    `scan --accept` for the rest; a secret found only inside signed thinking or reasoning
    (sealed) is one `redact` leaves in place, so accepting it is the way on."""
    plain = {f.hash for f in found if not f.sealed}  # redact replaces these everywhere
    sealed_ids = sorted({f.id for f in found if f.hash not in plain})
    open_ids = sorted({f.id for f in found if f.hash in plain})
    sessions = sorted({f.file for f in found if f.hash in plain and not f.object})
    advice = []
    if open_ids:
        if sessions:
            shown = sessions[:NAMED_FILES]
            redact = ", ".join(
                f"`{shell_line('gitclaw-compress', 'redact', name, '--all')}`" for name in shown
            )
            if len(sessions) > len(shown):
                redact += f" (and the same for {len(sessions) - len(shown)} more files above)"
        else:  # only in the archive: redacting any session rewrites every archive object
            redact = "`gitclaw-compress redact SESSION --all` (any compressed session)"
        advice.append(f"remove them with {redact}, or accept them with {_accept_command(open_ids)}")
    if sealed_ids:
        advice.append(
            f"{'id' if len(sealed_ids) == 1 else 'ids'} {', '.join(sealed_ids)}: only "
            "inside signed thinking or reasoning (sealed), which "
            f"`redact` leaves in place: accept with {_accept_command(sealed_ids)} and run "
            "again; docs/secrets.md says what `redact` does with sealed blocks per format"
        )
    return "; ".join(advice)


class SecretsFound(GitClawError):
    """Unaccepted findings: the run stops before it changes or sends anything (exit 1), or,
    `written`, right after it wrote them (found only in lines the run itself wrote)."""

    def __init__(self, result: ScanResult, what: str, *, written: bool = False) -> None:
        found = result.open
        ids = ", ".join(sorted({f.id for f in found}))
        done = "do not commit" if written else "nothing was changed"
        super().__init__(
            f"{len(found)} secret(s) found in {what} (ids {ids}); {done}; {fix_advice(found)}",
            exit_code=EXIT_PROBLEMS,
        )
        self.result = result
        self.details = [f.text() for f in found]


def baseline_for(repo: Repository, config: Config) -> Baseline:
    return Baseline(repo.config_root / config["scan.baseline"])


def scan_sessions(
    repo: Repository, paths: Sequence[Path], result: ScanResult, progress: Progress = SILENT
) -> None:
    """Scan the lines of each file not recorded clean before (all of them the first time),
    then record the clean ones: a line holding a finding is scanned on every run. A run that
    saved a record also drops the records of sessions that are gone (it cost a scan already;
    a run with nothing new saves nothing and prunes nothing)."""
    from gitclaw_compress.secrets.cleanlines import prune

    with running(progress, "scanning", paths, repo.relative, file_size) as announced:
        saved = _scan_each(repo, announced, result)
    if saved:  # the engine loaded for new lines: pruning costs nothing next to that
        prune(repo.git_dir, repo.root)


def _scan_each(repo: Repository, paths: Iterable[Path], result: ScanResult) -> bool:
    """Scan each session; whether a record of new clean lines was saved."""
    from gitclaw_compress.secrets.cleanlines import CleanLines, read_session

    saved = False
    for path in paths:
        name = repo.relative(path)
        result.files += 1
        record = CleanLines.load(repo.git_dir, name)
        with read_session(path, name, record) as session:
            found = scan_lines(session.new(), session.format, name)
        result.findings.extend(found)
        unclean = {finding.line for finding in found}
        clean = [d for number, d in session.digests.items() if number not in unclean]
        # The stat vouches for the whole file: only when no line holds a finding.
        stat = session.stat if not found and session.stat.trusted else None
        same_stat = record.stat is None if stat is None else stat.same_file(record.stat)
        if session.new_lines or record.sniff != session.sniff or not same_stat:
            record.save(repo.git_dir, repo.root, name, session.sniff, clean, stat)
            saved = saved or bool(session.new_lines)
    return saved


def archive_objects(repo: Repository, ref: str) -> list[tuple[str, bool]]:
    """(oid, is a session version) of every payload and intact version that any commit of
    the archive ref holds: what a push of the ref can send."""
    if repo.rev_parse(ref) is None:
        return []
    out = repo.git("rev-list", "--objects", ref).decode("utf-8", "replace")
    objects = []
    for row in out.splitlines():
        oid, _, path = row.partition(" ")
        if path.startswith("blobs/") and path.count("/") == 2:
            objects.append((oid, False))
        elif path.startswith("intact/") and path.count("/") == 3:
            objects.append((oid, True))
    return objects


def scan_archive(
    repo: Repository, ref: str, result: ScanResult, progress: Progress = SILENT
) -> None:
    cache_file = repo.git_dir / "gitclaw-compress" / CLEAN_CACHE
    clean = set(cache_file.read_text().split()) if cache_file.exists() else set()
    newly_clean = []
    objects = archive_objects(repo, ref)
    todo = [one for one in objects if one[0] not in clean]
    result.objects += len(objects)
    with running(
        progress, "scanning", todo, lambda one: one[0][:12], unit="archive object"
    ) as announced:
        for oid, session in announced:
            data = repo.reader.get(oid)
            if data is None:
                continue  # verify reports a missing object; nothing here to send
            found = scan_blob(data, oid, session)
            result.findings.extend(found)
            if not found:
                newly_clean.append(oid)
    if newly_clean:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with open(cache_file, "a") as handle:
            handle.write("".join(f"{oid}\n" for oid in newly_clean))


def run_scan(
    repo: Repository,
    config: Config,
    paths: Iterable[Path],
    *,
    archive: bool,
    progress: Progress = SILENT,
) -> ScanResult:
    result = ScanResult()
    scan_sessions(repo, list(paths), result, progress)
    if archive:
        scan_archive(repo, config["archive.ref"], result, progress)
    baseline = baseline_for(repo, config)
    result.accepted = {f.hash for f in result.findings if baseline.accepts(f)}
    return result


def settle(result: ScanResult, config: Config, warn: list[str]) -> None:
    if not result.open:
        return
    if config["scan.block"]:
        raise SecretsFound(result, "session files")
    warn.extend(f"secret: {f.text()}" for f in result.open)


def guard(repo: Repository, config: Config, paths: Sequence[Path], warn: list[str]) -> None:
    """The check inside `compress` and `step`: raise SecretsFound when a session holds an
    unaccepted finding and `scan.block` is on; with it off, each finding is a warning."""
    if config["scan.enabled"] and paths:
        settle(run_scan(repo, config, paths, archive=False), config, warn)


def guard_push(repo: Repository, config: Config) -> list[str]:
    """The check before the archive ref is sent (push, the pre-push hook, `step --push`, the
    Action): raise SecretsFound when an archive object holds an unaccepted finding and
    `scan.block` is on; with it off, return a warning for each (masked, never the secret)."""
    if not config["scan.enabled"]:
        return []
    result = ScanResult()
    scan_archive(repo, config["archive.ref"], result)
    baseline = baseline_for(repo, config)
    result.accepted = {f.hash for f in result.findings if baseline.accepts(f)}
    what = f"archive objects that {config['archive.ref']} would send"
    if result.open and config["scan.block"]:
        raise SecretsFound(result, what)
    return [f"secret in {what}: {f.text()}" for f in result.open]
