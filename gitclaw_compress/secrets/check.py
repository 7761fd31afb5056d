"""The scan as a use case: the session files and the archive objects a push would send,
against the baseline; `SecretsFound` stops `step`, `compress` and the hooks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitclaw_compress.config import Config
from gitclaw_compress.core.payload_form import text_to_scan
from gitclaw_compress.errors import EXIT_PROBLEMS, GitClawError, shell_line
from gitclaw_compress.progress import SILENT, Progress, file_size, running
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


def _accept_command(ids: Iterable[str], files: Sequence[str] = ()) -> str:
    words = ["gitclaw-compress", "scan", *files]
    for finding_id in ids:
        words += ["--accept", finding_id]
    return f"`{shell_line(*words)}`"


def a_compressed_session(repo: Repository, globs: list[str]) -> str | None:
    """A session file of the work tree that holds compressed lines: `redact` of any one
    rewrites every archive object, so the advice for an archive finding can name a real one."""
    specs = [f":(glob){pattern}" for pattern in globs]
    out = repo.git(
        "grep", "-l", "--untracked", "-F", "-e", '"gitclawCompress"', "--", *specs, check=False
    )
    names = out.decode("utf-8", "replace").splitlines()
    return names[0] if names else None


def fix_advice(
    found: Sequence[Finding], session: str | None = None, *, accept_names_files: bool = False
) -> str:
    """What to run, naming the real files and ids: `redact` where it can remove a secret,
    `scan --accept` for the rest; a secret found only inside signed thinking or reasoning
    (sealed) is one `redact` leaves in place, so accepting it is the way on.
    `accept_names_files`: `scan FILE --accept ID` (an agent's store, whose commands are run
    from anywhere: `scan` with no path takes the folder it runs in)."""
    files = sorted({f.file for f in found if not f.object}) if accept_names_files else []
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
        elif session is not None:  # only in the archive: redacting any session rewrites it
            redact = (
                f"`{shell_line('gitclaw-compress', 'redact', session, '--all')}` (or the same "
                "for any other compressed session: each rewrites every archive object)"
            )
        else:
            redact = (
                "`gitclaw-compress redact` of any compressed session with `--all` (each "
                "rewrites every archive object)"
            )
        accept = _accept_command(open_ids, files)
        advice.append(f"remove them with {redact}, or accept them with {accept}")
    if sealed_ids:
        advice.append(
            f"{'id' if len(sealed_ids) == 1 else 'ids'} {', '.join(sealed_ids)}: only "
            "inside signed thinking or reasoning (sealed), which "
            f"`redact` leaves in place: accept with {_accept_command(sealed_ids, files)} and run "
            "again; docs/secrets.md says what `redact` does with sealed blocks per format"
        )
    return "; ".join(advice)


class SecretsFound(GitClawError):
    """Unaccepted findings: the run stops before it changes or sends anything (exit 1), or,
    `written`, right after it wrote them (found only in lines the run itself wrote)."""

    def __init__(
        self, result: ScanResult, what: str, *, written: bool = False, session: str | None = None
    ) -> None:
        found = result.open
        distinct = sorted({f.id for f in found})  # one secret found in several places: one id
        ids = ", ".join(distinct)
        done = "do not commit" if written else "nothing was changed"
        advice = fix_advice(found, session)
        super().__init__(
            f"{len(distinct)} secret(s) found in {what} (ids {ids}); {done}; {advice}",
            exit_code=EXIT_PROBLEMS,
        )
        self.result = result
        self.details = [f.text() for f in found]


def held_sessions(
    found: Sequence[Finding], *, accept_names_files: bool = False
) -> list[dict[str, Any]]:
    """Per session file with open findings: its path, ids, the commands to go on, and the
    findings masked (text and JSON)."""
    by_file: dict[str, list[Finding]] = {}
    for finding in found:
        by_file.setdefault(finding.file, []).append(finding)
    return [
        {
            "path": name,
            "ids": sorted({f.id for f in findings}),
            "advice": fix_advice(findings, accept_names_files=accept_names_files),
            "found": [f.text() for f in findings],
            "findings": [f.as_json() for f in findings],
        }
        for name, findings in sorted(by_file.items())
    ]


def baseline_for(repo: Repository, config: Config) -> Baseline:
    return Baseline(repo.config_root / config["scan.baseline"])


def scan_sessions(
    repo: Repository,
    paths: Sequence[Path],
    result: ScanResult,
    accepted: frozenset[str] = frozenset(),
    progress: Progress = SILENT,
    *,
    save: bool = True,
    listing: bool = False,
) -> None:
    """Scan the lines of each file not recorded clean before (all of them the first time),
    then record the clean ones: a line holding a finding is scanned on every run. A run that
    saved a record also drops the records of sessions that are gone (it cost a scan already;
    a run with nothing new saves nothing and prunes nothing). `save` False (a dry run)
    records nothing. `listing` (the `scan` command, which lists accepted findings too): the
    settled lines are scanned again, so that its findings are those of the content, not of
    what an earlier run recorded."""
    from gitclaw_compress.secrets.cleanlines import prune

    with running(progress, "scanning", paths, repo.relative, file_size) as announced:
        saved = _scan_each(repo, announced, result, accepted, save, listing)
    if saved:  # the engine loaded for new lines: pruning costs nothing next to that
        prune(repo.git_dir, repo.root)


def _scan_each(
    repo: Repository,
    paths: Iterable[Path],
    result: ScanResult,
    accepted: frozenset[str],
    save: bool = True,
    listing: bool = False,
) -> bool:
    """Scan each session; whether a record of new clean lines was saved."""
    from gitclaw_compress.secrets.cleanlines import CleanLines, read_session

    saved = False
    for path in paths:
        name = repo.relative(path)
        result.files += 1
        record = CleanLines.load(repo.git_dir, name, accepted)
        with read_session(path, name, record, rescan=record.settled if listing else {}) as session:
            # Named as the commands take it from anywhere (a store's session: its full path).
            found = scan_lines(
                session.new(), session.format, repo.session_ref(name), repeats=session.repeats
            )
        result.findings.extend(found)
        # Read through: the record's clean lines are not asked again, and their set (as
        # large as the file's lines) goes before the new record is built.
        record.digests.clear()
        on_line: dict[int, set[str]] = {}
        for finding in found:
            on_line.setdefault(finding.line, set()).add(finding.hash)
        clean = [d for number, d in enumerate(session.digests, 1) if number not in on_line]
        # A line whose findings are all accepted is settled: not scanned again while the
        # baseline accepts them (settled lines seen before stay so, while they hold).
        settled = {d: h for d, h in record.settled.items() if h <= accepted}
        settled.update(
            (session.digests[number - 1], frozenset(hashes))
            for number, hashes in on_line.items()
            if hashes <= accepted
        )
        clean = [d for d in clean if d not in settled]
        # The stat vouches for the whole file: only when no line holds an open finding.
        whole = all(hashes <= accepted for hashes in on_line.values())
        stat = session.stat if whole and session.stat.trusted else None
        same_stat = record.stat is None if stat is None else stat.same_file(record.stat)
        changed = settled != record.settled
        if not save:
            continue
        if session.new_lines or record.sniff != session.sniff or not same_stat or changed:
            record.save(repo.git_dir, repo.root, name, session.sniff, clean, stat, settled)
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
    from gitclaw_compress.secrets.engine import scan_key

    cache_file = repo.git_dir / "gitclaw-compress" / CLEAN_CACHE
    rows = cache_file.read_text().split("\n") if cache_file.exists() else []
    # Scanned clean under other rules (an older version, another engine): scan them again.
    key = f"# {scan_key()}"
    fresh = not rows or rows[0] != key
    clean = set() if fresh else {row for row in rows[1:] if row}
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
            found = scan_blob(text_to_scan(data), oid, session)
            result.findings.extend(found)
            if not found:
                newly_clean.append(oid)
    if newly_clean:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with open(cache_file, "w" if fresh else "a") as handle:
            handle.write((f"{key}\n" if fresh else "") + "".join(f"{o}\n" for o in newly_clean))


def run_scan(
    repo: Repository,
    config: Config,
    paths: Iterable[Path],
    *,
    archive: bool,
    progress: Progress = SILENT,
    listing: bool = False,
) -> ScanResult:
    result = ScanResult()
    baseline = baseline_for(repo, config)
    scan_sessions(repo, list(paths), result, frozenset(baseline.entries), progress, listing=listing)
    if archive:
        scan_archive(repo, config["archive.ref"], result, progress)
    result.accepted = {f.hash for f in result.findings if baseline.accepts(f)}
    return result


def settle(
    result: ScanResult, config: Config, warn: list[str], *, accept_names_files: bool = False
) -> None:
    """Open findings in session files: `SecretsHeld` (the run holds those sessions) when
    `scan.block` is on; with it off, a warning each."""
    if not result.open:
        return
    if config["scan.block"]:
        from gitclaw_compress.secrets.held import SecretsHeld

        found = result.open
        distinct = sorted({f.id for f in found})  # one secret found in several places: one id
        ids = ", ".join(distinct)
        raise SecretsHeld(
            held_sessions(found, accept_names_files=accept_names_files),
            f"{len(distinct)} secret(s) found in session files (ids {ids}); nothing was changed; "
            f"{fix_advice(found, accept_names_files=accept_names_files)}",
            [f.text() for f in found],
        )
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
        raise SecretsFound(
            result, what, session=a_compressed_session(repo, config["sessions.globs"])
        )
    return [f"secret in {what}: {f.text()}" for f in result.open]
